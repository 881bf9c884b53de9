/*
 * filter_eval.c - running a compiled filter (filter_internal.h) on one
 * event: the refs are fetched first (so that a missing field fails the
 * whole expression wherever it is, as in LTTng), then the instructions
 * run on a stack of the program's max_stack values (at most
 * RTF_MAX_STACK: the compiler and the loader checked it), held with the
 * refs' values in RTF_SMALL_VALUES of each on rtf_eval's own stack, or
 * in a larger frame for a program that needs more. No allocation, no
 * recursion, no system call.
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
				if (k == pn)
					return true;	/* a last `*` takes the rest */
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

/* Comparison `op` (LT .. NE) on c, what num_cmp or str_cmp gave: 0 or 1. */
static int order(enum rtf_op op, int c)
{
	switch (op) {
	case RTF_OP_EQ: return c == 0;
	case RTF_OP_NE: return c != 0;
	case RTF_OP_LT: return c == -1;
	case RTF_OP_LE: return c == -1 || c == 0;
	case RTF_OP_GT: return c == 1;
	default: return c == 1 || c == 0;	/* RTF_OP_GE */
	}
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
	if (a->type == RTF_STRING && b->type == RTF_STRING) {
		if (op == RTF_OP_EQ || op == RTF_OP_NE) {
			bool ga = a->glob && !b->escaped, gb = b->glob && !a->escaped;
			if (ga || gb)
				return (ga ? glob(a, b, false) : glob(b, a, false)) == (op == RTF_OP_EQ);
		}
		return order(op, str_cmp(a, b));
	}
	if (is_num(a) && is_num(b))
		return order(op, num_cmp(a, b));
	return -1;
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

/* A fetched value as the evaluation takes it: not a literal, and
 * RTF_UINT only above INT64_MAX (num_cmp relies on it). */
static void normalize(struct rtf_value *v)
{
	v->escaped = false;
	v->glob = false;
	if (v->type == RTF_UINT && v->u <= INT64_MAX)
		*v = (struct rtf_value){ .type = RTF_INT, .i = (int64_t)v->u, .label = v->label };
}

/* The comparison at code[pc] (REF CONST OP or CONST REF OP) into *c. */
static bool clause_at(const struct rtf_program *p, uint32_t pc, struct rtf_clause *c)
{
	if (pc + 3 > p->nr_code || p->code[pc + 2].op < RTF_OP_LT ||
	    p->code[pc + 2].op > RTF_OP_NOMATCH)
		return false;
	const struct rtf_insn *a = &p->code[pc], *b = &p->code[pc + 1];
	if (a->op == RTF_OP_REF && b->op == RTF_OP_CONST)
		*c = (struct rtf_clause){ a->arg, p->code[pc + 2].op, true, &p->consts[b->arg] };
	else if (a->op == RTF_OP_CONST && b->op == RTF_OP_REF)
		*c = (struct rtf_clause){ b->arg, p->code[pc + 2].op, false, &p->consts[a->arg] };
	else
		return false;
	return true;
}

/* The compiler writes `a && b && c` as
 *   [a] AND L1 [b] AND_END L1: AND L2 [c] AND_END L2:
 * (each AND jumps just past its AND_END), `||` likewise. */
bool rtf_simple(const struct rtf_program *p, struct rtf_simple *s)
{
	memset(s, 0, sizeof(*s));
	s->nr_refs = p->nr_refs;
	s->local = p->flags & RTF_LOCAL_ERRORS;
	/* (A loaded program may list refs it does not use: at most one
	 * per clause here, so that callers can size their values.) */
	if (p->nr_refs > RTF_SIMPLE_MAX || !clause_at(p, 0, &s->c[0]))
		return false;
	s->n = 1;
	uint32_t pc = 3;
	while (pc < p->nr_code) {
		const struct rtf_insn *in = &p->code[pc];
		bool any = in->op == RTF_OP_OR;
		if ((in->op != RTF_OP_AND && !any) || (s->n > 1 && any != s->any) ||
		    s->n == RTF_SIMPLE_MAX || in->arg != pc + 5 || pc + 5 > p->nr_code ||
		    p->code[pc + 4].op != (any ? RTF_OP_OR_END : RTF_OP_AND_END) ||
		    !clause_at(p, pc + 1, &s->c[s->n]))
			return false;
		s->any = any;
		s->n++;
		pc += 5;
	}
	return true;
}

/* One clause on value v: 1, 0, or -1 when it errs (v missing, or values
 * that do not compare). */
static int clause_eval(const struct rtf_clause *c, const struct rtf_value *v)
{
	if (v->type == RTF_NONE)
		return -1;
	struct rtf_value x;
	if (is_int(v) && is_int(c->k) && c->op <= RTF_OP_NE) {
		/* Two integers (the commonest case): what compare does for
		 * them. v is read member by member, not copied whole: the
		 * caller has just stored them, and a 16-byte load of 4- and
		 * 8-byte stores waits for them to reach the cache. */
		x.type = v->type == RTF_UINT && v->u > INT64_MAX ? RTF_UINT : RTF_INT;
		x.u = v->u;
		const struct rtf_value *a = c->ref_left ? &x : c->k, *b = c->ref_left ? c->k : &x;
		return order((enum rtf_op)c->op, num_cmp(a, b));
	}
	x = *v;
	normalize(&x);
	const struct rtf_value *a = c->ref_left ? &x : c->k, *b = c->ref_left ? c->k : &x;
	return compare((enum rtf_op)c->op, a, b);
}

bool rtf_simple_eval(const struct rtf_simple *s, const struct rtf_value *v)
{
	/* As rtf_eval: a missing ref fails the whole expression first. */
	for (uint32_t i = 0; i < s->nr_refs && !s->local; i++)
		if (v[i].type == RTF_NONE)
			return false;
	for (uint32_t i = 0; i < s->n; i++) {
		int r = clause_eval(&s->c[i], &v[s->c[i].ref]);
		if (r < 0) {
			if (!s->local)
				return false;
			r = 0;	/* local errors: that comparison is false */
		}
		if (r == s->any)
			return s->any;
	}
	return !s->any;
}

/* r set to the integer i, member by member (see rtf_simple_eval); r. */
static const struct rtf_value *put_int(struct rtf_value *r, int64_t i)
{
	r->type = RTF_INT;
	r->escaped = false;
	r->glob = false;
	r->label = NULL;
	r->i = i;
	return r;
}

/* Binary operator op on a and b, into r (or &none): what the stack
 * then holds. An operand in error (local errors) makes a comparison
 * false and a bitwise operator an error. */
static const struct rtf_value *binary(enum rtf_op op, const struct rtf_value *a,
				      const struct rtf_value *b, struct rtf_value *r, bool local)
{
	if (a->type == RTF_NONE || b->type == RTF_NONE)
		return op >= RTF_OP_LT ? put_int(r, 0) : &none;
	if (op >= RTF_OP_LT) {
		int c = compare(op, a, b);
		return c < 0 && !local ? &none : put_int(r, c > 0);
	}
	*r = bitwise(op, a, b);
	return r;
}

/*
 * The stack holds pointers: to a constant, to a fetched ref, or to the
 * result of the instruction that left it there (res[] at the same depth).
 * No value is copied whole on the way (32 bytes each, and a load of a
 * value whose members were just stored waits for them).
 */
/* Values (and stack slots) on rtf_eval's own stack: a program with more
 * refs or a deeper stack runs in eval_large's frame. */
#define RTF_SMALL_VALUES 16

/* Run p with room for its nr_refs values in refs and its max_stack in
 * res and st. */
static inline __attribute__((always_inline)) bool run(const struct rtf_program *p,
						    rtf_fetch_fn fetch, void *arg,
						    struct rtf_value *refs, struct rtf_value *res,
						    const struct rtf_value **st)
{
	bool local = p->flags & RTF_LOCAL_ERRORS;
	for (uint32_t i = 0; i < p->nr_refs; i++) {
		struct rtf_value *v = &refs[i];
		v->type = RTF_NONE;
		v->label = NULL;
		if (fetch(arg, i, v) < 0 || v->type == RTF_NONE) {
			if (!local)
				return false;
			v->type = RTF_NONE;
			v->label = NULL;
			continue;
		}
		normalize(v);
	}
	uint32_t sp = 0;
	for (uint32_t pc = 0; pc < p->nr_code; pc++) {
		const struct rtf_insn *in = &p->code[pc];
		const struct rtf_value *top = sp ? st[sp - 1] : NULL;
		struct rtf_value *r = sp ? &res[sp - 1] : NULL;
		switch ((enum rtf_op)in->op) {
		case RTF_OP_CONST:
			st[sp++] = &p->consts[in->arg];
			continue;
		case RTF_OP_REF:
			/* REF CONST COMPARE (`seq > 100`) in one step: no jump
			 * lands inside (jumps land past an END). */
			if (pc + 2 < p->nr_code && in[1].op == RTF_OP_CONST &&
			    in[2].op >= RTF_OP_LT && in[2].op <= RTF_OP_NOMATCH) {
				top = binary((enum rtf_op)in[2].op, &refs[in->arg],
					     &p->consts[in[1].arg], &res[sp], local);
				st[sp++] = top;
				pc += 2;
				break;
			}
			st[sp++] = &refs[in->arg];
			continue;
		case RTF_OP_NOT:
		case RTF_OP_BNOT:
		case RTF_OP_PLUS:
		case RTF_OP_NEG:
			if (top->type == RTF_NONE && in->op != RTF_OP_NOT)
				continue;	/* an error goes on (local errors) */
			if (in->op == RTF_OP_NOT)
				top = put_int(r, !truth(top));
			else
				*r = unary((enum rtf_op)in->op, top), top = r;
			st[sp - 1] = top;
			break;
		case RTF_OP_AND:
		case RTF_OP_OR: {
			bool t = truth(top);
			if (t == (in->op == RTF_OP_OR)) {
				st[sp - 1] = put_int(r, t);
				pc = in->arg - 1;
			} else {
				sp--;
			}
			continue;
		}
		case RTF_OP_AND_END:
		case RTF_OP_OR_END:
			st[sp - 1] = put_int(r, truth(top));
			continue;
		default:
			top = binary((enum rtf_op)in->op, st[sp - 2], top, &res[sp - 2], local);
			st[--sp - 1] = top;
			break;
		}
		if (top->type == RTF_NONE && !local)
			return false;
	}
	return sp == 1 && truth(st[0]);
}

/* A program up to the limits (compile and rtf_load bound nr_refs by
 * RTF_MAX_REFS and max_stack by RTF_MAX_STACK), in a frame of its own
 * that the common case does not pay for. */
static __attribute__((noinline)) bool eval_large(const struct rtf_program *p, rtf_fetch_fn fetch,
						 void *arg)
{
	struct rtf_value refs[RTF_MAX_REFS], res[RTF_MAX_STACK];
	const struct rtf_value *st[RTF_MAX_STACK];
	return run(p, fetch, arg, refs, res, st);
}

bool rtf_eval(const struct rtf_program *p, rtf_fetch_fn fetch, void *arg)
{
	/* Sized by the program, not by the maxima: most filters need a
	 * few values, and may run on a small (signal) stack. */
	if (p->nr_refs > RTF_SMALL_VALUES || p->max_stack > RTF_SMALL_VALUES)
		return eval_large(p, fetch, arg);
	struct rtf_value refs[RTF_SMALL_VALUES], res[RTF_SMALL_VALUES];
	const struct rtf_value *st[RTF_SMALL_VALUES];
	return run(p, fetch, arg, refs, res, st);
}
