/*
 * filter_eval.c - running a compiled filter (filter_internal.h) on one
 * event: the refs are fetched first (so that a missing field fails the
 * whole expression wherever it is, as in LTTng), then the instructions
 * run on a fixed stack of RTF_MAX_STACK values (the compiler checked the
 * program's max_stack against it). No allocation, no recursion, no
 * system call.
 */
#include <string.h>

#include "filter_internal.h"

static struct rtf_value int_value(int64_t i)
{
	return (struct rtf_value){ .type = RTF_INT, .i = i };
}

static const struct rtf_value none = { .type = RTF_NONE };

static bool is_int(const struct rtf_value *v)
{
	return v->type == RTF_INT || v->type == RTF_UINT;
}

static bool is_num(const struct rtf_value *v)
{
	return is_int(v) || v->type == RTF_DOUBLE;
}

static bool truth(const struct rtf_value *v)
{
	switch (v->type) {
	case RTF_INT: return v->i != 0;
	case RTF_UINT: return v->u != 0;
	case RTF_DOUBLE: return v->d != 0;
	case RTF_STRING: return v->s.len != 0;
	default: return false;
	}
}

static double as_double(const struct rtf_value *v)
{
	return v->type == RTF_DOUBLE ? v->d : v->type == RTF_INT ? (double)v->i : (double)v->u;
}

/* -1, 0, 1, or 2 when unordered (NaN). */
static int num_cmp(const struct rtf_value *a, const struct rtf_value *b)
{
	if (a->type == RTF_DOUBLE || b->type == RTF_DOUBLE) {
		double x = as_double(a), y = as_double(b);
		return x < y ? -1 : x > y ? 1 : x == y ? 0 : 2;
	}
	/* RTF_UINT holds only values above INT64_MAX (rtf_eval's fetch and
	 * the parser see to it). */
	if (a->type == RTF_UINT || b->type == RTF_UINT) {
		if (a->type != b->type)
			return a->type == RTF_UINT ? 1 : -1;
		return a->u < b->u ? -1 : a->u > b->u;
	}
	return a->i < b->i ? -1 : a->i > b->i;
}

static int str_cmp(const struct rtf_value *a, const struct rtf_value *b)
{
	size_t i = 0, j = 0;
	bool qa, qb;
	while (i < a->s.len && j < b->s.len) {
		unsigned char x = rtf_next_byte(a->s.p, a->s.len, a->escaped, &i, &qa);
		unsigned char y = rtf_next_byte(b->s.p, b->s.len, b->escaped, &j, &qb);
		if (x != y)
			return x < y ? -1 : 1;
	}
	return i < a->s.len ? 1 : j < b->s.len ? -1 : 0;
}

/* A bracket expression of a shell pattern at pat[*k] ('[' already read):
 * whether c is in it, *k past its ']'; false and *k unchanged when the
 * bracket does not close (then '[' is an ordinary byte). */
static bool bracket(const struct rtf_value *pat, size_t *k, unsigned char c, bool *closed)
{
	const char *p = pat->s.p;
	size_t n = pat->s.len, i = *k;
	bool neg = false, in = false, quoted, first = true;
	*closed = false;
	if (i < n && (p[i] == '!' || p[i] == '^')) {
		neg = true;
		i++;
	}
	while (i < n) {
		if (p[i] == ']' && !first) {
			*closed = true;
			*k = i + 1;
			return in != neg;
		}
		first = false;
		unsigned char lo = rtf_next_byte(p, n, pat->escaped, &i, &quoted), hi = lo;
		if (i + 1 < n && p[i] == '-' && p[i + 1] != ']') {
			i++;
			hi = rtf_next_byte(p, n, pat->escaped, &i, &quoted);
		}
		if (lo <= c && c <= hi)
			in = true;
	}
	return false;
}

/*
 * Whether the string s matches the pattern pat: `*` any bytes; with
 * `shell` also `?` one byte and [...] a set; '\' quotes the next byte of
 * an escaped pattern. One backtracking point (the last `*`): O(len(pat) *
 * len(s)) at worst, no recursion.
 */
static bool glob(const struct rtf_value *pat, const struct rtf_value *s, bool shell)
{
	size_t pi = 0, si = 0, star_p = SIZE_MAX, star_s = 0;
	const char *p = pat->s.p;
	size_t pn = pat->s.len, sn = s->s.len;
	bool quoted;
	while (si < sn) {
		if (pi < pn) {
			size_t k = pi;
			unsigned char pc = rtf_next_byte(p, pn, pat->escaped, &k, &quoted);
			if (pc == '*' && !quoted) {
				star_p = k;
				star_s = si;
				pi = k;
				continue;
			}
			size_t sk = si;
			unsigned char c = rtf_next_byte(s->s.p, sn, s->escaped, &sk, &quoted);
			bool ok, closed = false;
			if (shell && pc == '?' && p[pi] == '?')
				ok = true;
			else if (shell && pc == '[' && p[pi] == '[') {
				ok = bracket(pat, &k, c, &closed);
				if (!closed)
					ok = c == '[';
			} else
				ok = c == pc;
			if (ok) {
				pi = k;
				si = sk;
				continue;
			}
		}
		if (star_p == SIZE_MAX)
			return false;
		pi = star_p;
		rtf_next_byte(s->s.p, sn, s->escaped, &star_s, &quoted);
		si = star_s;
	}
	while (pi < pn && p[pi] == '*')
		pi++;
	return pi == pn;
}

/* The comparison `op` of a and b: 0 or 1, or -1 when they do not compare
 * (a string and a number). */
static int compare(enum rtf_op op, const struct rtf_value *a, const struct rtf_value *b)
{
	/* An enum against a string: its label. */
	struct rtf_value la, lb;
	if (a->label && b->type == RTF_STRING) {
		la = (struct rtf_value){ .type = RTF_STRING, .s = { a->label, strlen(a->label) } };
		a = &la;
	}
	if (b->label && a->type == RTF_STRING) {
		lb = (struct rtf_value){ .type = RTF_STRING, .s = { b->label, strlen(b->label) } };
		b = &lb;
	}
	if (op == RTF_OP_MATCH || op == RTF_OP_NOMATCH) {
		if (a->type != RTF_STRING)
			return -1;
		return glob(b, a, true) == (op == RTF_OP_MATCH);
	}
	int c;
	if (a->type == RTF_STRING && b->type == RTF_STRING) {
		if (op == RTF_OP_EQ || op == RTF_OP_NE) {
			bool ga = a->glob && !b->escaped, gb = b->glob && !a->escaped;
			if (ga || gb)
				return (ga ? glob(a, b, false) : glob(b, a, false)) == (op == RTF_OP_EQ);
		}
		c = str_cmp(a, b);
	} else if (is_num(a) && is_num(b)) {
		c = num_cmp(a, b);
	} else {
		return -1;
	}
	switch (op) {
	case RTF_OP_EQ: return c == 0;
	case RTF_OP_NE: return c != 0;
	case RTF_OP_LT: return c == -1;
	case RTF_OP_LE: return c == -1 || c == 0;
	case RTF_OP_GT: return c == 1;
	default: return c == 1 || c == 0;	/* RTF_OP_GE */
	}
}

static uint64_t bits(const struct rtf_value *v)
{
	return v->type == RTF_INT ? (uint64_t)v->i : v->u;
}

/* A bitwise operator on integers: its result as a signed integer, or
 * RTF_NONE (not two integers, or a shift outside 0..63). */
static struct rtf_value bitwise(enum rtf_op op, const struct rtf_value *a,
				const struct rtf_value *b)
{
	if (!is_int(a) || !is_int(b))
		return none;
	uint64_t x = bits(a), y = bits(b);
	if ((op == RTF_OP_SHL || op == RTF_OP_SHR) && (b->type == RTF_UINT || b->i < 0 || b->i > 63))
		return none;
	switch (op) {
	case RTF_OP_SHL: return int_value((int64_t)(x << y));
	case RTF_OP_SHR: return int_value((int64_t)(x >> y));
	case RTF_OP_BAND: return int_value((int64_t)(x & y));
	case RTF_OP_BXOR: return int_value((int64_t)(x ^ y));
	default: return int_value((int64_t)(x | y));	/* RTF_OP_BOR */
	}
}

static struct rtf_value unary(enum rtf_op op, const struct rtf_value *a)
{
	switch (op) {
	case RTF_OP_NOT:
		return int_value(!truth(a));
	case RTF_OP_BNOT:
		return is_int(a) ? int_value((int64_t)~bits(a)) : none;
	case RTF_OP_PLUS:
		return is_num(a) ? *a : none;
	default:		/* RTF_OP_NEG */
		if (a->type == RTF_DOUBLE)
			return (struct rtf_value){ .type = RTF_DOUBLE, .d = -a->d };
		return is_int(a) ? int_value((int64_t)(0 - bits(a))) : none;
	}
}

bool rtf_eval(const struct rtf_program *p, rtf_fetch_fn fetch, void *arg)
{
	struct rtf_value refs[RTF_MAX_REFS], st[RTF_MAX_STACK];
	bool local = p->flags & RTF_LOCAL_ERRORS;
	for (uint32_t i = 0; i < p->nr_refs; i++) {
		struct rtf_value *v = &refs[i];
		*v = none;
		if (fetch(arg, i, v) < 0 || v->type == RTF_NONE) {
			if (!local)
				return false;
			*v = none;
			continue;
		}
		v->escaped = false;
		v->glob = false;
		if (v->type == RTF_UINT && v->u <= INT64_MAX)
			*v = (struct rtf_value){ .type = RTF_INT, .i = (int64_t)v->u,
						 .label = v->label };
	}
	uint32_t sp = 0;
	for (uint32_t pc = 0; pc < p->nr_code; pc++) {
		const struct rtf_insn *in = &p->code[pc];
		struct rtf_value *top = sp ? &st[sp - 1] : NULL;
		switch ((enum rtf_op)in->op) {
		case RTF_OP_CONST:
			st[sp++] = p->consts[in->arg];
			continue;
		case RTF_OP_REF:
			st[sp++] = refs[in->arg];
			continue;
		case RTF_OP_NOT:
		case RTF_OP_BNOT:
		case RTF_OP_PLUS:
		case RTF_OP_NEG:
			if (top->type == RTF_NONE && in->op != RTF_OP_NOT)
				continue;	/* an error goes on (local errors) */
			*top = unary((enum rtf_op)in->op, top);
			break;
		case RTF_OP_AND:
		case RTF_OP_OR: {
			bool t = truth(top);
			if (t == (in->op == RTF_OP_OR)) {
				*top = int_value(t);
				pc = in->arg - 1;
			} else {
				sp--;
			}
			continue;
		}
		case RTF_OP_AND_END:
		case RTF_OP_OR_END:
			*top = int_value(truth(top));
			continue;
		default: {
			struct rtf_value *a = &st[sp - 2], *b = top;
			sp--;
			if (a->type == RTF_NONE || b->type == RTF_NONE) {
				/* local errors: a comparison with an error is false */
				if (in->op >= RTF_OP_LT)
					*a = int_value(0);
				else
					*a = none;
				continue;
			}
			top = a;
			if (in->op >= RTF_OP_LT) {
				int r = compare((enum rtf_op)in->op, a, b);
				*a = r < 0 && !local ? none : int_value(r > 0);
			} else {
				*a = bitwise((enum rtf_op)in->op, a, b);
			}
			break;
		}
		}
		if (top->type == RTF_NONE && !local)
			return false;
	}
	return sp == 1 && truth(&st[0]);
}
