/*
 * filter_ftrace.c - a compiled filter as ftrace's filter text for one
 * event (filter.h, rtf_to_ftrace). The postfix program is walked with a
 * stack of text fragments in place of values (the AND/OR jumps are
 * ignored: AND_END and OR_END join their two sides); no recursion.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter_internal.h"

enum frag_kind {
	F_CONST,	/* a literal: c */
	F_INT,		/* an integer folded from a literal: neg, mag */
	F_FIELD,	/* text: the ftrace field name */
	F_BITAND,	/* text: "FIELD & N" */
	F_PRED,		/* text: a condition */
};

struct frag {
	enum frag_kind kind;
	char *text;			/* owned */
	const struct rtf_value *c;	/* F_CONST: the program's */
	bool neg;			/* F_INT: -mag */
	uint64_t mag;
	enum rtf_ftrace_kind fkind;	/* F_FIELD */
	int64_t offset;			/* F_FIELD: ftrace's value - the trace's */
};

struct tr {
	struct frag st[RTF_MAX_STACK];
	uint32_t sp;
	char *err;
	size_t errlen;
};

static int no(struct tr *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int no(struct tr *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	rtf_verr(t->err, t->errlen, "ftrace cannot express this filter: ", fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int push_text(struct tr *t, enum frag_kind kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int push_text(struct tr *t, enum frag_kind kind, const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0) {
		snprintf(t->err, t->errlen, "out of memory");
		return -ENOMEM;
	}
	t->st[t->sp++] = (struct frag){ .kind = kind, .text = s };
	return 0;
}

static void drop(struct frag *f)
{
	free(f->text);
	f->text = NULL;
}

/* Replace the top n fragments by one of `kind` with the text fmt makes
 * (its arguments may be the fragments' texts). */
static int replace(struct tr *t, uint32_t n, enum frag_kind kind, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int replace(struct tr *t, uint32_t n, enum frag_kind kind, const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	int r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0) {
		snprintf(t->err, t->errlen, "out of memory");
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++)
		drop(&t->st[--t->sp]);
	t->st[t->sp++] = (struct frag){ .kind = kind, .text = s };
	return 0;
}

/* An integer fragment (a literal, or one folded with unary - and +):
 * true and its sign and magnitude. */
static bool int_of(const struct frag *f, bool *neg, uint64_t *mag)
{
	if (f->kind == F_INT) {
		*neg = f->neg;
		*mag = f->mag;
		return true;
	}
	if (f->kind != F_CONST || (f->c->type != RTF_INT && f->c->type != RTF_UINT))
		return false;
	*neg = f->c->type == RTF_INT && f->c->i < 0;
	*mag = f->c->type == RTF_UINT ? f->c->u : *neg ? 0 - (uint64_t)f->c->i : (uint64_t)f->c->i;
	return true;
}

static void int_text(char *buf, size_t len, bool neg, uint64_t mag)
{
	snprintf(buf, len, "%s%llu", neg && mag ? "-" : "", (unsigned long long)mag);
}

/* The constant neg/mag + offset as text: 0, or -ERANGE when the sum
 * leaves the 64-bit range ftrace compares in. */
static int int_text_offset(char *buf, size_t len, bool neg, uint64_t mag, int64_t offset)
{
	__int128 v = neg ? -(__int128)mag : (__int128)mag;
	v += offset;
	if (v < INT64_MIN || v > (__int128)UINT64_MAX)
		return -ERANGE;
	int_text(buf, len, v < 0, v < 0 ? (uint64_t)-v : (uint64_t)v);
	return 0;
}

/* A fragment as a condition: its text (owned by f). */
static int pred_of(struct tr *t, struct frag *f, const char **text)
{
	switch (f->kind) {
	case F_PRED:
	case F_BITAND:
		*text = f->text;
		return 0;
	case F_FIELD: {
		char *s;
		int n = f->fkind == RTF_FTRACE_STRING
				? asprintf(&s, "%s != \"\"", f->text)
				: asprintf(&s, "%s != %lld", f->text, (long long)f->offset);
		if (n < 0) {
			snprintf(t->err, t->errlen, "out of memory");
			return -ENOMEM;
		}
		free(f->text);
		f->text = s;
		f->kind = F_PRED;
		*text = s;
		return 0;
	}
	default:
		return no(t, "a constant where a condition is expected");
	}
}

/* The string literal v as ftrace's quoted text: a glob (`glob`: * ? [...]
 * as ftrace's glob_match has them, the others bracketed) or exact. */
static int quote(struct tr *t, const struct rtf_value *v, bool glob, bool shell, char **out)
{
	size_t n = 0;
	char *s = malloc(v->s.len * 3 + 3);
	if (!s) {
		snprintf(t->err, t->errlen, "out of memory");
		return -ENOMEM;
	}
	bool dq = false, sq = false, quoted;
	for (size_t i = 0; i < v->s.len;) {
		size_t at = i;
		unsigned char c = rtf_next_byte(v->s.p, v->s.len, v->escaped, &i, &quoted);
		dq |= c == '"';
		sq |= c == '\'';
		bool special = c == '*' || (shell && (c == '?' || c == '['));
		if (glob && special && !quoted) {
			if (shell && c == '[') {	/* a set: copied as is up to its ']' */
				const char *close = i + 1 < v->s.len ?
					memchr(v->s.p + i + 1, ']', v->s.len - i - 1) : NULL;
				if (!close || memchr(v->s.p + at, '\\', (size_t)(close - v->s.p) - at)) {
					free(s);
					return no(t, "a '[' set it cannot read in a pattern");
				}
				size_t k = (size_t)(close - (v->s.p + at)) + 1;
				memcpy(s + n, v->s.p + at, k);
				n += k;
				i = at + k;
				continue;
			}
			s[n++] = (char)c;
		} else if (glob && (c == '*' || c == '?' || c == '[')) {
			s[n++] = '[';
			s[n++] = (char)c;
			s[n++] = ']';
		} else if (glob && c == '\\') {
			free(s);
			return no(t, "a backslash in a pattern");
		} else if (glob && n == 0 && c >= '0' && c <= '9') {
			/* ftrace reads a pattern that starts with a digit as an
			 * index, which matches no string: a set of one byte. */
			s[n++] = '[';
			s[n++] = (char)c;
			s[n++] = ']';
		} else {
			s[n++] = (char)c;
		}
	}
	s[n] = '\0';
	if (dq && sq) {
		free(s);
		return no(t, "a string with both quote characters");
	}
	char q = dq ? '\'' : '"';
	int r = asprintf(out, "%c%s%c", q, s, q);
	free(s);
	if (r < 0) {
		snprintf(t->err, t->errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

static const char *op_text(enum rtf_op op)
{
	switch (op) {
	case RTF_OP_LT: return "<";
	case RTF_OP_LE: return "<=";
	case RTF_OP_GT: return ">";
	case RTF_OP_GE: return ">=";
	case RTF_OP_EQ: return "==";
	case RTF_OP_NE: return "!=";
	case RTF_OP_SHL: return "<<";
	case RTF_OP_SHR: return ">>";
	case RTF_OP_BXOR: return "^";
	case RTF_OP_BOR: return "|";
	case RTF_OP_BNOT: return "~";
	default: return "?";
	}
}

/* The comparison a OP b of a field and a constant, pushed as F_PRED. */
static int comparison(struct tr *t, enum rtf_op op, struct frag *a, struct frag *b)
{
	static const enum rtf_op flipped[] = {
		[RTF_OP_LT] = RTF_OP_GT, [RTF_OP_LE] = RTF_OP_GE, [RTF_OP_GT] = RTF_OP_LT,
		[RTF_OP_GE] = RTF_OP_LE, [RTF_OP_EQ] = RTF_OP_EQ, [RTF_OP_NE] = RTF_OP_NE,
	};
	bool neg;
	uint64_t mag;
	char num[32];
	if (a->kind != F_FIELD && a->kind != F_BITAND &&
	    (b->kind == F_FIELD || b->kind == F_BITAND) &&
	    op != RTF_OP_MATCH && op != RTF_OP_NOMATCH) {
		struct frag *x = a;
		a = b;
		b = x;
		op = flipped[op];
	}
	if (a->kind == F_BITAND) {
		if (!int_of(b, &neg, &mag) || mag != 0 || (op != RTF_OP_EQ && op != RTF_OP_NE))
			return no(t, "'&' only tested against 0 (FIELD & MASK, or == 0, != 0)");
		return op == RTF_OP_NE ? push_text(t, F_PRED, "%s", a->text)
				       : push_text(t, F_PRED, "!(%s)", a->text);
	}
	if (a->kind != F_FIELD || b->kind == F_FIELD || b->kind == F_BITAND)
		return no(t, "a comparison must be between a field and a constant");
	if (b->kind == F_CONST && b->c->type == RTF_DOUBLE)
		return no(t, "ftrace compares integers and strings, not reals");
	if (b->kind == F_CONST && b->c->type == RTF_STRING) {
		if (a->fkind == RTF_FTRACE_INT) {
			snprintf(t->err, t->errlen, "field %s is an integer: it cannot be compared "
				 "with a string", a->text);
			return -EINVAL;
		}
		bool shell = op == RTF_OP_MATCH || op == RTF_OP_NOMATCH;
		if (!shell && op != RTF_OP_EQ && op != RTF_OP_NE)
			return no(t, "strings compare only with == and != (or =~ and !~)");
		bool glob = shell || b->c->glob;
		char *q;
		int r = quote(t, b->c, glob, shell, &q);
		if (r < 0)
			return r;
		bool eq = op == RTF_OP_EQ || op == RTF_OP_MATCH;
		if (glob && q[1] == '!')
			/* ftrace reads a pattern's leading '!' as "does not
			 * match" and its globs have no escape: any first byte
			 * and the rest, and not a first byte other than '!'. */
			r = push_text(t, F_PRED, "%s(%s ~ %c?%s) && !(%s ~ %c[!!]%s)%s", eq ? "" : "!(",
				      a->text, q[0], q + 2, a->text, q[0], q + 2, eq ? "" : ")");
		else if (glob)
			r = eq ? push_text(t, F_PRED, "%s ~ %s", a->text, q)
			       : push_text(t, F_PRED, "!(%s ~ %s)", a->text, q);
		else
			r = push_text(t, F_PRED, "%s %s %s", a->text, eq ? "==" : "!=", q);
		free(q);
		return r;
	}
	if (!int_of(b, &neg, &mag))
		return no(t, "a comparison must be between a field and a constant");
	if (a->fkind == RTF_FTRACE_STRING) {
		snprintf(t->err, t->errlen, "field %s is a string: it cannot be compared with "
			 "an integer", a->text);
		return -EINVAL;
	}
	if (int_text_offset(num, sizeof(num), neg, mag, a->offset) < 0)
		return no(t, "the constant compared with %s is out of range", a->text);
	return push_text(t, F_PRED, "%s %s %s", a->text, op_text(op), num);
}

/* The contexts ftrace filters know. ftrace looks an event's own fields
 * up before its generic ones, and many events have a payload field
 * `comm` or `cpu` (signal_generate's comm is the signal's target): the
 * current thread's name and CPU are the generic `COMM` and `CPU`, which
 * no field shadows. */
static const struct {
	const char *lttng, *ftrace;
	enum rtf_ftrace_kind kind;
} contexts[] = {
	{ "tid", "common_pid", RTF_FTRACE_INT },
	{ "procname", "COMM", RTF_FTRACE_STRING },
	{ "cpu_id", "CPU", RTF_FTRACE_INT },
};

/* The ftrace names of the program's refs: 0, 1 (one is missing from the
 * event) or -EINVAL. */
static int map_refs(struct tr *t, const struct rtf_program *p, rtf_ftrace_field_fn field,
		    void *arg, struct rtf_ftrace_field *fields)
{
	int missing = 0;
	for (uint32_t i = 0; i < p->nr_refs; i++) {
		const struct rtf_ref *r = &p->refs[i];
		switch (r->scope) {
		case RTF_SCOPE_FIELD:
		case RTF_SCOPE_PAYLOAD:
			fields[i] = (struct rtf_ftrace_field){ .offset = 0 };
			if (field(arg, r->name, &fields[i]) < 0)
				missing = 1;
			break;
		case RTF_SCOPE_CTX: {
			size_t k;
			for (k = 0; k < sizeof(contexts) / sizeof(contexts[0]); k++)
				if (!strcmp(contexts[k].lttng, r->name))
					break;
			if (k == sizeof(contexts) / sizeof(contexts[0]))
				return no(t, "ftrace has no context $ctx.%s (it has $ctx.tid, "
					  "$ctx.procname, $ctx.cpu_id)", r->name);
			fields[i] = (struct rtf_ftrace_field){ .name = contexts[k].ftrace,
							      .kind = contexts[k].kind };
			break;
		}
		case RTF_SCOPE_APP:
			return no(t, "$app.%s is an application's context", r->name);
		default:
			return no(t, "$%s is not a kernel event's field", r->name);
		}
	}
	return missing;
}

int rtf_to_ftrace(const struct rtf_program *p, rtf_ftrace_field_fn field, void *arg,
		  char **out, char *err, size_t errlen)
{
	struct tr t = { .err = err, .errlen = errlen };
	struct rtf_ftrace_field fields[RTF_MAX_REFS];
	*out = NULL;
	int ret = map_refs(&t, p, field, arg, fields);
	if (ret)
		return ret;
	for (uint32_t pc = 0; pc < p->nr_code && !ret; pc++) {
		const struct rtf_insn *in = &p->code[pc];
		struct frag *top = t.sp ? &t.st[t.sp - 1] : NULL;
		bool neg;
		uint64_t mag;
		const char *a, *b;
		switch ((enum rtf_op)in->op) {
		case RTF_OP_CONST:
			t.st[t.sp++] = (struct frag){ .kind = F_CONST, .c = &p->consts[in->arg] };
			break;
		case RTF_OP_REF:
			ret = push_text(&t, F_FIELD, "%s", fields[in->arg].name);
			if (!ret) {
				t.st[t.sp - 1].fkind = fields[in->arg].kind;
				t.st[t.sp - 1].offset = fields[in->arg].offset;
			}
			break;
		case RTF_OP_NEG:
		case RTF_OP_PLUS:
			if (!int_of(top, &neg, &mag)) {
				ret = no(&t, "unary - and + apply to integer constants only");
				break;
			}
			if (in->op == RTF_OP_NEG)
				neg = !neg;
			*top = (struct frag){ .kind = F_INT, .neg = neg, .mag = mag };
			break;
		case RTF_OP_NOT:
			if (!(ret = pred_of(&t, top, &a)))
				ret = replace(&t, 1, F_PRED, "!(%s)", a);
			break;
		case RTF_OP_AND:
		case RTF_OP_OR:
			break;
		case RTF_OP_AND_END:
		case RTF_OP_OR_END:
			if (!(ret = pred_of(&t, &t.st[t.sp - 2], &a)) && !(ret = pred_of(&t, top, &b)))
				ret = replace(&t, 2, F_PRED, "(%s) %s (%s)", a,
					      in->op == RTF_OP_AND_END ? "&&" : "||", b);
			break;
		case RTF_OP_BAND: {
			struct frag *f = &t.st[t.sp - 2], *m = top;
			if (f->kind != F_FIELD) {
				f = top;
				m = &t.st[t.sp - 2];
			}
			if (f->kind != F_FIELD || f->fkind == RTF_FTRACE_STRING ||
			    !int_of(m, &neg, &mag)) {
				ret = no(&t, "'&' only between an integer field and a constant");
				break;
			}
			if (f->offset) {
				ret = no(&t, "'&' on %s, which the trace rebases by %lld", f->text,
					 (long long)-f->offset);
				break;
			}
			char num[32];
			int_text(num, sizeof(num), neg, mag);
			ret = replace(&t, 2, F_BITAND, "%s & %s", f->text, num);
			break;
		}
		case RTF_OP_LT:
		case RTF_OP_LE:
		case RTF_OP_GT:
		case RTF_OP_GE:
		case RTF_OP_EQ:
		case RTF_OP_NE:
		case RTF_OP_MATCH:
		case RTF_OP_NOMATCH: {
			struct frag l = t.st[t.sp - 2], r = *top;
			t.sp -= 2;
			ret = comparison(&t, (enum rtf_op)in->op, &l, &r);
			drop(&l);
			drop(&r);
			break;
		}
		default:	/* ~ << >> ^ | */
			ret = no(&t, "ftrace has no '%s' operator", op_text((enum rtf_op)in->op));
			break;
		}
	}
	const char *text;
	if (!ret && !(ret = pred_of(&t, &t.st[0], &text))) {
		*out = t.st[0].text;
		t.st[0].text = NULL;
	}
	for (uint32_t i = 0; i < t.sp; i++)
		drop(&t.st[i]);
	return ret;
}
