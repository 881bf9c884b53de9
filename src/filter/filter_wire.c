/*
 * filter_wire.c - a compiled program as bytes, to hand it to another
 * process of this machine (filter.h, rtf_save and rtf_load), and back,
 * checked as untrusted input. Integers in host byte order, unaligned:
 *
 *    0  u32  magic RTF_WIRE_MAGIC ("RTF1")
 *    4  u32  flags (RTF_LOCAL_ERRORS; no other bit)
 *    8  u32  nr_code C (1..RTF_MAX_INSNS)
 *   12  u32  nr_consts K (<= C)
 *   16  u32  nr_refs R (<= RTF_MAX_REFS)
 *   20  u32  max_stack (1..RTF_MAX_STACK)
 *   24  C x { u8 op (enum rtf_op), u8[3] 0, u32 arg }
 *       K x { u8 type (RTF_INT, RTF_UINT, RTF_DOUBLE, RTF_STRING),
 *             u8 escaped (0 or 1; strings only), u16 0, u32 length L
 *             (strings: <= RTF_WIRE_STR_MAX; else 0), u64 value (the
 *             integer's or the double's bits; strings 0), L bytes }
 *       R x { u8 scope (enum rtf_scope), u8 length N (1..255), N bytes
 *             (no NUL) }
 * and nothing after. rtf_load checks every field, every operand index,
 * and the stack discipline of filter_internal.h (each AND/OR jumps
 * forward to just past its own AND_END/OR_END with the values held
 * there, no instruction pops what is not there, at most max_stack
 * values, one left at the end), so that rtf_eval on a loaded program
 * never reads outside its stack, constants or references.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter_internal.h"

#define RTF_WIRE_HEADER 24
#define RTF_WIRE_INSN 8
#define RTF_WIRE_CONST 16

struct wbuf {
	char *p;
	size_t len;
};

static void put(struct wbuf *b, const void *v, size_t n)
{
	memcpy(b->p + b->len, v, n);
	b->len += n;
}

static void put_u32(struct wbuf *b, uint32_t v)
{
	put(b, &v, 4);
}

int rtf_save(const struct rtf_program *p, void **out, size_t *len)
{
	size_t n = RTF_WIRE_HEADER + (size_t)p->nr_code * RTF_WIRE_INSN;
	for (uint32_t i = 0; i < p->nr_consts; i++)
		n += RTF_WIRE_CONST + (p->consts[i].type == RTF_STRING ? p->consts[i].s.len : 0);
	for (uint32_t i = 0; i < p->nr_refs; i++)
		n += 2 + strlen(p->refs[i].name);
	struct wbuf b = { .p = malloc(n) };
	*out = NULL;
	if (!b.p)
		return -ENOMEM;
	put_u32(&b, RTF_WIRE_MAGIC);
	put_u32(&b, p->flags);
	put_u32(&b, p->nr_code);
	put_u32(&b, p->nr_consts);
	put_u32(&b, p->nr_refs);
	put_u32(&b, p->max_stack);
	for (uint32_t i = 0; i < p->nr_code; i++) {
		uint8_t head[4] = { p->code[i].op, 0, 0, 0 };
		put(&b, head, 4);
		put_u32(&b, p->code[i].arg);
	}
	for (uint32_t i = 0; i < p->nr_consts; i++) {
		const struct rtf_value *v = &p->consts[i];
		bool str = v->type == RTF_STRING;
		uint8_t head[4] = { (uint8_t)v->type, str && v->escaped, 0, 0 };
		uint64_t bits = 0;
		if (v->type == RTF_DOUBLE)
			memcpy(&bits, &v->d, 8);
		else if (!str)
			bits = v->u;
		put(&b, head, 4);
		put_u32(&b, str ? (uint32_t)v->s.len : 0);
		put(&b, &bits, 8);
		if (str)
			put(&b, v->s.p, v->s.len);
	}
	for (uint32_t i = 0; i < p->nr_refs; i++) {
		size_t k = strlen(p->refs[i].name);
		uint8_t head[2] = { (uint8_t)p->refs[i].scope, (uint8_t)k };
		put(&b, head, 2);
		put(&b, p->refs[i].name, k);
	}
	*out = b.p;
	*len = b.len;
	return 0;
}

struct rbuf {
	const char *p;
	size_t len, at;
	char *err;
	size_t errlen;
};

static int bad(struct rbuf *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int bad(struct rbuf *r, const char *fmt, ...)
{
	char prefix[64];
	va_list ap;
	snprintf(prefix, sizeof(prefix), "filter program, byte %zu: ", r->at);
	va_start(ap, fmt);
	rtf_verr(r->err, r->errlen, prefix, fmt, ap);
	va_end(ap);
	return -EPROTO;
}

static bool take(struct rbuf *r, void *v, size_t n)
{
	if (r->len - r->at < n)
		return false;
	memcpy(v, r->p + r->at, n);
	r->at += n;
	return true;
}

/* The stack discipline (see the top of the file). */
static int verify(struct rbuf *r, const struct rtf_program *p)
{
	/* want[t]: the values held when a jump lands on t (0: no jump yet) */
	uint32_t *want = calloc((size_t)p->nr_code + 1, sizeof(*want)), depth = 0;
	int ret = 0;
	if (!want)
		return -ENOMEM;
	for (uint32_t pc = 0; pc < p->nr_code && !ret; pc++) {
		const struct rtf_insn *in = &p->code[pc];
		if (want[pc] && want[pc] != depth) {
			ret = bad(r, "instruction %u: a jump lands with another stack", pc);
			break;
		}
		switch ((enum rtf_op)in->op) {
		case RTF_OP_CONST:
			if (in->arg >= p->nr_consts)
				ret = bad(r, "instruction %u: constant %u of %u", pc, in->arg,
					  p->nr_consts);
			break;
		case RTF_OP_REF:
			if (in->arg >= p->nr_refs)
				ret = bad(r, "instruction %u: reference %u of %u", pc, in->arg,
					  p->nr_refs);
			break;
		case RTF_OP_AND:
		case RTF_OP_OR: {
			uint32_t t = in->arg;
			enum rtf_op end = in->op == RTF_OP_AND ? RTF_OP_AND_END : RTF_OP_OR_END;
			if (t <= pc + 1 || t > p->nr_code || p->code[t - 1].op != end) {
				ret = bad(r, "instruction %u: jump to %u", pc, t);
				break;
			}
			/* lands past its END holding what it holds now */
			if (want[t] && want[t] != depth) {
				ret = bad(r, "instruction %u: jumps land with other stacks", pc);
				break;
			}
			want[t] = depth;
			break;
		}
		default:
			if (in->op > RTF_OP_OR_END)
				ret = bad(r, "instruction %u: unknown operation %u", pc, in->op);
			break;
		}
		uint32_t pops, pushes;
		rtf_op_stack((enum rtf_op)in->op, &pops, &pushes);
		if (ret)
			break;
		if (depth < pops) {
			ret = bad(r, "instruction %u: pops a value the stack does not hold", pc);
			break;
		}
		depth = depth - pops + pushes;
		if (depth > p->max_stack) {
			ret = bad(r, "instruction %u: more than max_stack values", pc);
			break;
		}
	}
	/* A jump to the end lands at nr_code. */
	if (!ret && want[p->nr_code] && want[p->nr_code] != depth)
		ret = bad(r, "a jump to the end lands with another stack");
	if (!ret && depth != 1)
		ret = bad(r, "the program leaves %u values", depth);
	free(want);
	return ret;
}

int rtf_load(const void *buf, size_t len, struct rtf_program **out, char *err, size_t errlen)
{
	struct rbuf r = { .p = buf, .len = len, .err = err, .errlen = errlen };
	uint32_t h[6];
	int ret;
	*out = NULL;
	if (!take(&r, h, sizeof(h)))
		return bad(&r, "truncated header");
	if (h[0] != RTF_WIRE_MAGIC || (h[1] & ~RTF_LOCAL_ERRORS) || !h[2] || h[2] > RTF_MAX_INSNS ||
	    h[3] > h[2] || h[4] > RTF_MAX_REFS || !h[5] || h[5] > RTF_MAX_STACK)
		return bad(&r, "bad header");
	struct rtf_program *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->flags = h[1];
	p->max_stack = h[5];
	p->code = calloc(h[2], sizeof(*p->code));
	p->consts = calloc(h[3] + 1, sizeof(*p->consts));
	p->refs = calloc(h[4] + 1, sizeof(*p->refs));
	ret = -ENOMEM;
	if (!p->code || !p->consts || !p->refs)
		goto fail;
	for (p->nr_code = 0; p->nr_code < h[2]; p->nr_code++) {
		uint8_t head[4];
		uint32_t arg;
		if (!take(&r, head, 4) || !take(&r, &arg, 4)) {
			ret = bad(&r, "truncated instructions");
			goto fail;
		}
		if (head[1] || head[2] || head[3]) {
			ret = bad(&r, "reserved bytes not 0");
			goto fail;
		}
		p->code[p->nr_code] = (struct rtf_insn){ .op = head[0], .arg = arg };
	}
	for (; p->nr_consts < h[3]; p->nr_consts++) {
		uint8_t head[4];
		uint32_t slen;
		uint64_t bits;
		if (!take(&r, head, 4) || !take(&r, &slen, 4) || !take(&r, &bits, 8)) {
			ret = bad(&r, "truncated constants");
			goto fail;
		}
		struct rtf_value *v = &p->consts[p->nr_consts];
		bool str = head[0] == RTF_STRING;
		if (head[0] < RTF_INT || head[0] > RTF_STRING || head[1] > (uint8_t)str || head[2] ||
		    head[3] || (!str && slen) || (str && (bits || slen > RTF_WIRE_STR_MAX)) ||
		    r.len - r.at < slen) {
			ret = bad(&r, "bad constant");
			goto fail;
		}
		v->type = (enum rtf_type)head[0];
		if (str) {
			char *s = malloc(slen + 1);
			if (!s) {
				ret = -ENOMEM;
				goto fail;
			}
			take(&r, s, slen);
			s[slen] = '\0';
			v->s.p = s;
			v->s.len = slen;
			v->escaped = head[1];
			v->glob = rtf_has_star(v);
		} else if (v->type == RTF_DOUBLE) {
			memcpy(&v->d, &bits, 8);
		} else {
			v->u = bits;
			if (v->type == RTF_UINT && bits <= INT64_MAX)
				v->type = RTF_INT;	/* RTF_UINT is above INT64_MAX only */
		}
	}
	for (; p->nr_refs < h[4]; p->nr_refs++) {
		uint8_t head[2];
		if (!take(&r, head, 2) || head[0] > RTF_SCOPE_VAR || !head[1] ||
		    r.len - r.at < head[1]) {
			ret = bad(&r, "bad reference");
			goto fail;
		}
		char *name = malloc((size_t)head[1] + 1);
		if (!name) {
			ret = -ENOMEM;
			goto fail;
		}
		take(&r, name, head[1]);
		name[head[1]] = '\0';
		p->refs[p->nr_refs] = (struct rtf_ref){ .scope = head[0], .name = name };
		if (strlen(name) != head[1]) {
			ret = bad(&r, "NUL in a reference");
			p->nr_refs++;
			goto fail;
		}
	}
	if (r.at != r.len) {
		ret = bad(&r, "%zu bytes after the program", r.len - r.at);
		goto fail;
	}
	if ((ret = verify(&r, p)) < 0)
		goto fail;
	*out = p;
	return 0;
fail:
	if (ret == -ENOMEM)
		snprintf(err, errlen, "filter program: out of memory");
	rtf_free(p);
	return ret;
}
