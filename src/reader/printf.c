/*
 * printf.c - rt_printf's message formatted at read time (reader.h,
 * rtr_printf): printf's conversions applied to the event's recorded
 * arguments, bounded and safe whatever the trace holds (a format and
 * arguments that do not agree, too few arguments, huge widths).
 */
#include <stdio.h>
#include <string.h>

#include "reader.h"

/* Widths and precisions beyond this are taken as this. */
#define MAX_WIDTH 1024

struct out {
	char *p;
	size_t len, n;	/* capacity (with the NUL), used */
};

static void put(struct out *o, const char *s, size_t n)
{
	size_t room = o->len - 1 - o->n;
	if (n > room)
		n = room;
	memcpy(o->p + o->n, s, n);
	o->n += n;
	o->p[o->n] = '\0';
}

/* The value as a signed 64-bit integer (a float truncated, a string 0). */
static long long as_signed(const struct rtr_value *v)
{
	switch (v->type) {
	case RTR_INT:
		return (long long)v->i;
	case RTR_UINT:
	case RTR_ENUM:
		/* As C reads an unsigned value of that width as signed. */
		if (v->type == RTR_ENUM && v->is_signed)
			return (long long)v->i;
		if (v->bits > 0 && v->bits < 64 && (v->u >> (v->bits - 1)) & 1)
			return (long long)(v->u | (~0ull << v->bits));
		return (long long)v->u;
	case RTR_BOOL:
		return v->b;
	case RTR_FLOAT:
	case RTR_DOUBLE:
		return v->d >= -9.2e18 && v->d <= 9.2e18 ? (long long)v->d : 0;
	default:
		return 0;
	}
}

/* The value as C's unsigned conversions see it: a negative integer of
 * `bits` bits is its two's complement in that width. */
static unsigned long long as_unsigned(const struct rtr_value *v)
{
	if (v->type == RTR_UINT || (v->type == RTR_ENUM && !v->is_signed))
		return v->u;
	unsigned long long u = (unsigned long long)as_signed(v);
	return v->bits > 0 && v->bits < 64 ? u & ~(~0ull << v->bits) : u;
}

static double as_double(const struct rtr_value *v)
{
	if (v->type == RTR_FLOAT || v->type == RTR_DOUBLE)
		return v->d;
	return v->type == RTR_UINT ? (double)v->u : (double)as_signed(v);
}

/* The formats below are built from the trace's format (flags, then
 * this file's width, precision and conversion): not literals, by design. */
#pragma GCC diagnostic ignored "-Wformat-nonliteral"

/* One conversion: spec is "%" flags [width] [.prec] (no length), conv its
 * letter, v its argument (NULL: missing). */
static void convert(struct out *o, const char *spec, char conv, int width, int prec,
		    const struct rtr_value *v)
{
	char f[48], buf[MAX_WIDTH * 2 + 128];
	int n = -1;
	if (!v) {
		put(o, "<missing>", 9);
		return;
	}
	if (conv == 's' || v->type == RTR_STRING || v->type == RTR_BYTES) {
		if (v->type == RTR_STRING) {
			size_t len = v->s.len;
			if (prec >= 0 && (size_t)prec < len)
				len = (size_t)prec;
			/* Left or right padding to width, the text itself unbounded
			 * by buf: put it directly. */
			size_t pad = width > 0 && (size_t)width > len ? (size_t)width - len : 0;
			bool left = strchr(spec, '-') != NULL;
			for (size_t i = 0; !left && i < pad; i++)
				put(o, " ", 1);
			put(o, v->s.p, len);
			for (size_t i = 0; left && i < pad; i++)
				put(o, " ", 1);
			return;
		}
		if (v->type == RTR_BYTES) {
			put(o, "<bytes>", 7);
			return;
		}
		conv = v->type == RTR_FLOAT || v->type == RTR_DOUBLE ? 'g'
		       : v->type == RTR_INT ? 'd' : 'u';
	}
	switch (conv) {
	case 'd':
	case 'i':
		snprintf(f, sizeof(f), "%s*.*lld", spec);
		n = snprintf(buf, sizeof(buf), f, width, prec, as_signed(v));
		break;
	case 'o':
	case 'u':
	case 'x':
	case 'X':
		snprintf(f, sizeof(f), "%s*.*ll%c", spec, conv);
		n = snprintf(buf, sizeof(buf), f, width, prec, as_unsigned(v));
		break;
	case 'c':
		snprintf(f, sizeof(f), "%s*c", spec);
		n = snprintf(buf, sizeof(buf), f, width, (int)(unsigned char)as_signed(v));
		break;
	case 'p': {
		char addr[32];
		unsigned long long u = as_unsigned(v);
		if (u)
			snprintf(addr, sizeof(addr), "0x%llx", u);
		else
			snprintf(addr, sizeof(addr), "(nil)");
		snprintf(f, sizeof(f), "%s*s", strchr(spec, '-') ? "%-" : "%");
		n = snprintf(buf, sizeof(buf), f, width, addr);
		break;
	}
	default:	/* f F e E g G a A */
		snprintf(f, sizeof(f), "%s*.*%c", spec, conv);
		n = snprintf(buf, sizeof(buf), f, width, prec, as_double(v));
		break;
	}
	if (n > 0)
		put(o, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/* A width or precision: digits (capped at MAX_WIDTH), or '*' taking the
 * next argument. */
static int number(const char **pp, const struct rtr_value *args, size_t nargs, size_t *next)
{
	const char *p = *pp;
	long v = 0;
	if (*p == '*') {
		*pp = p + 1;
		v = *next < nargs ? (long)as_signed(&args[(*next)++]) : 0;
	} else {
		for (; *p >= '0' && *p <= '9'; p++)
			v = v < MAX_WIDTH ? v * 10 + (*p - '0') : MAX_WIDTH;
		*pp = p;
	}
	return v > MAX_WIDTH ? MAX_WIDTH : v < -MAX_WIDTH ? -MAX_WIDTH : (int)v;
}

size_t rtr_printf(const char *fmt, const struct rtr_value *args, size_t nargs, char *out,
		  size_t len)
{
	struct out o = { out, len, 0 };
	size_t next = 0;
	if (!len)
		return 0;
	out[0] = '\0';
	for (const char *p = fmt; *p;) {
		const char *pct = strchr(p, '%');
		if (!pct) {
			put(&o, p, strlen(p));
			break;
		}
		put(&o, p, (size_t)(pct - p));
		p = pct + 1;
		if (*p == '%') {
			put(&o, "%", 1);
			p++;
			continue;
		}
		char spec[16] = "%";
		size_t sn = 1;
		for (; *p && strchr("-+ #0", *p); p++)
			if (sn < sizeof(spec) - 1)
				spec[sn++] = *p;
		spec[sn] = '\0';
		int width = 0, prec = -1;
		if (*p == '*' || (*p >= '0' && *p <= '9'))
			width = number(&p, args, nargs, &next);
		if (width < 0) {	/* a negative '*' width: left-justified */
			width = -width;
			if (sn < sizeof(spec) - 1) {
				spec[sn++] = '-';
				spec[sn] = '\0';
			}
		}
		if (*p == '.') {
			p++;
			prec = number(&p, args, nargs, &next);
			if (prec < 0)
				prec = -1;
		}
		while (*p && strchr("hlLqjzt", *p))
			p++;
		char conv = *p;
		if (conv == 'n') {	/* writes nothing; its argument is skipped */
			p++;
			next++;
			continue;
		}
		if (!conv || !strchr("diouxXcsfFeEgGaAp", conv)) {
			/* Not a conversion: written as it is. */
			put(&o, pct, (size_t)(p - pct) + (conv ? 1 : 0));
			p += conv ? 1 : 0;
			continue;
		}
		p++;
		convert(&o, spec, conv, width, prec, next < nargs ? &args[next] : NULL);
		next++;
	}
	return o.n;
}
