/*
 * view_filter.c - the --filter expression language:
 *
 *   expr    := and ( "||" and )*
 *   and     := unary ( "&&" unary )*
 *   unary   := "!" unary | "(" expr ")" | operand [ OP operand ]
 *   OP      := "==" | "!=" | "<" | "<=" | ">" | ">=" | "=~" | "!~"
 *   operand := NAME | "$payload." NAME | "$ctx." NAME
 *            | "$name" | "$cpu" | "$ts" | "$trace"
 *            | INTEGER | REAL | "string" | 'string' | true | false
 *
 * An operand alone is true when it is a number other than 0 or a
 * non-empty string. NAME is a payload field, else a context field. =~ and
 * !~ match a string against a shell glob (fnmatch: * ? [...]). Integers
 * compare exactly (signed against unsigned too), a real against an
 * integer as doubles, strings byte-wise; an enum is its integer, or its
 * label when compared with a string. A comparison with a field the
 * event does not have, or between a string and a number, is false (and
 * its "!" is true).
 *
 * The parser and the walks over the tree recurse once per "!" or "(",
 * which the parser bounds (VIEW_FILTER_MAX_DEPTH, an error past it), never
 * per "&&" or "||": a chain of them is a right-leaning list (a && (b && c))
 * that every walk follows in a loop, so no expression that fits on a
 * command line can exhaust the stack.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "../common/array.h"
#include "view.h"

enum node_kind { N_OR, N_AND, N_NOT, N_CMP, N_TRUTH };
enum operand_kind { O_FIELD, O_NAME, O_CPU, O_TS, O_TRACE, O_LITERAL };
enum cmp_op { OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_GLOB, OP_NOGLOB };
enum val_kind { V_NONE, V_INT, V_UINT, V_DBL, V_STR };

struct fval {
	enum val_kind k;
	int64_t i;
	uint64_t u;
	double d;
	const char *s;	/* NUL-terminated only if `terminated` */
	size_t len;
	bool terminated;
	const char *label;	/* enums: their label, NULL if none */
};

struct operand {
	enum operand_kind kind;
	enum view_scope scope;	/* O_FIELD */
	char *name;		/* O_FIELD; owned */
	int32_t *index;		/* O_FIELD: per class, -2 = not looked up yet; owned */
	struct fval lit;	/* O_LITERAL; lit.s owned */
};

struct node {
	enum node_kind kind;
	struct node *a, *b;	/* owned: N_OR, N_AND (a, b), N_NOT (a) */
	enum cmp_op op;
	struct operand l, r;	/* N_CMP (l, r), N_TRUTH (l) */
};

struct view_filter {
	struct node *root;			/* owned */
	const struct view_class *classes;	/* borrowed, from view_filter_bind */
	size_t nr_classes;
	char *scratch;		/* owned: a NUL-terminated copy for fnmatch */
	size_t scratch_cap;
};

struct parser {
	const char *src, *p;
	char *err;
	size_t errlen;
	int failed;
	unsigned depth;		/* "!" and "(" open around ps->p */
	struct view_filter *f;
};

static void fail(struct parser *ps, const char *at, const char *what)
{
	if (ps->failed)
		return;
	ps->failed = -EINVAL;
	snprintf(ps->err, ps->errlen, "filter: column %zu: %s", (size_t)(at - ps->src) + 1,
		 what);
}

static void skip_space(struct parser *ps)
{
	while (isspace((unsigned char)*ps->p))
		ps->p++;
}

static bool accept(struct parser *ps, const char *tok)
{
	skip_space(ps);
	size_t n = strlen(tok);
	if (strncmp(ps->p, tok, n))
		return false;
	ps->p += n;
	return true;
}

static void *zalloc(struct parser *ps, size_t n)
{
	void *x = calloc(1, n);
	if (!x && !ps->failed) {
		ps->failed = -ENOMEM;
		snprintf(ps->err, ps->errlen, "filter: out of memory");
	}
	return x;
}

static size_t ident_len(const char *p)
{
	size_t n = 0;
	if (!isalpha((unsigned char)p[0]) && p[0] != '_')
		return 0;
	while (isalnum((unsigned char)p[n]) || p[n] == '_')
		n++;
	return n;
}

static void parse_string(struct parser *ps, struct operand *o)
{
	char q = *ps->p++;
	const char *start = ps->p - 1;
	char *s = zalloc(ps, strlen(ps->p) + 1);
	size_t n = 0;
	if (!s)
		return;
	for (;;) {
		char c = *ps->p++;
		if (!c) {
			free(s);
			fail(ps, start, "unterminated string");
			return;
		}
		if (c == q)
			break;
		if (c == '\\') {
			c = *ps->p++;
			switch (c) {
			case 'n': c = '\n'; break;
			case 't': c = '\t'; break;
			case 'r': c = '\r'; break;
			case '\\': case '"': case '\'': break;
			default:
				free(s);
				fail(ps, ps->p - 2, "unknown escape in string");
				return;
			}
		}
		s[n++] = c;
	}
	o->kind = O_LITERAL;
	o->lit.k = V_STR;
	o->lit.s = s;
	o->lit.len = n;
	o->lit.terminated = true;
}

static void parse_number(struct parser *ps, struct operand *o)
{
	const char *start = ps->p;
	char *end;
	errno = 0;
	o->kind = O_LITERAL;
	size_t span = strspn(start, "+-0123456789abcdefABCDEFxX.");
	bool real = !(start[0] == '0' && (start[1] == 'x' || start[1] == 'X') ) &&
		    (memchr(start, '.', span) || memchr(start, 'e', span) ||
		     memchr(start, 'E', span));
	if (real) {
		o->lit.k = V_DBL;
		o->lit.d = strtod(start, &end);
	} else if (start[0] == '-') {
		o->lit.k = V_INT;
		o->lit.i = strtoll(start, &end, 0);
	} else {
		uint64_t u = strtoull(start, &end, 0);
		if (u <= INT64_MAX) {
			o->lit.k = V_INT;
			o->lit.i = (int64_t)u;
		} else {
			o->lit.k = V_UINT;
			o->lit.u = u;
		}
	}
	if (end == start || errno == ERANGE || isalnum((unsigned char)*end) || *end == '_') {
		fail(ps, start, errno == ERANGE ? "number out of range" : "malformed number");
		return;
	}
	ps->p = end;
}

static void parse_operand(struct parser *ps, struct operand *o)
{
	skip_space(ps);
	const char *at = ps->p;
	char c = *at;
	if (c == '"' || c == '\'') {
		parse_string(ps, o);
		return;
	}
	if (isdigit((unsigned char)c) || ((c == '-' || c == '.') && (isdigit((unsigned char)at[1]) || at[1] == '.'))) {
		parse_number(ps, o);
		return;
	}
	o->scope = VIEW_SCOPE_ANY;
	if (c == '$') {
		static const struct {
			const char *word;
			enum operand_kind kind;
		} specials[] = { { "name", O_NAME }, { "cpu", O_CPU }, { "ts", O_TS },
				 { "trace", O_TRACE } };
		const char *w = at + 1;
		size_t n = ident_len(w);
		if (n && w[n] == '.') {
			if (n == 7 && !strncmp(w, "payload", 7))
				o->scope = VIEW_SCOPE_PAYLOAD;
			else if ((n == 3 && !strncmp(w, "ctx", 3)) ||
				 (n == 7 && !strncmp(w, "context", 7)))
				o->scope = VIEW_SCOPE_CONTEXT;
			else {
				fail(ps, at, "unknown scope (use $payload. or $ctx.)");
				return;
			}
			ps->p = w + n + 1;
		} else {
			for (size_t i = 0; i < sizeof(specials) / sizeof(specials[0]); i++) {
				if (strlen(specials[i].word) == n && !strncmp(w, specials[i].word, n)) {
					o->kind = specials[i].kind;
					ps->p = w + n;
					return;
				}
			}
			fail(ps, at, "unknown variable (use $name, $cpu, $ts, $trace, $payload.F or $ctx.F)");
			return;
		}
	}
	size_t n = ident_len(ps->p);
	if (!n) {
		fail(ps, ps->p, *ps->p ? "expected a field name, a number or a string"
				       : "unexpected end of the expression");
		return;
	}
	if (o->scope == VIEW_SCOPE_ANY && (n == 4 || n == 5) &&
	    (!strncmp(ps->p, "true", n) || !strncmp(ps->p, "false", n))) {
		o->kind = O_LITERAL;
		o->lit.k = V_INT;
		o->lit.i = n == 4;
		ps->p += n;
		return;
	}
	o->kind = O_FIELD;
	o->name = zalloc(ps, n + 1);
	if (o->name)
		memcpy(o->name, ps->p, n);
	ps->p += n;
}

static struct node *parse_or(struct parser *ps);

static struct node *new_node(struct parser *ps, enum node_kind k, struct node *a,
			     struct node *b)
{
	struct node *x = zalloc(ps, sizeof(*x));
	if (x) {
		x->kind = k;
		x->a = a;
		x->b = b;
	}
	return x;
}

static void free_operand(struct operand *o)
{
	free(o->name);
	free(o->index);
	if (o->kind == O_LITERAL && o->lit.k == V_STR)
		free((char *)(uintptr_t)o->lit.s);
}

/* Recurses into a (one level of "!" or "("), loops along b (a chain). */
static void free_node(struct node *x)
{
	while (x) {
		struct node *next = x->b;
		free_node(x->a);
		free_operand(&x->l);
		free_operand(&x->r);
		free(x);
		x = next;
	}
}

/* Enter one more "!" or "(" at ps->p: false (and the error) past
 * VIEW_FILTER_MAX_DEPTH. */
static bool nest(struct parser *ps)
{
	if (++ps->depth <= VIEW_FILTER_MAX_DEPTH)
		return true;
	if (!ps->failed) {
		ps->failed = -EINVAL;
		snprintf(ps->err, ps->errlen, "filter nests deeper than %d (column %zu)",
			 VIEW_FILTER_MAX_DEPTH, (size_t)(ps->p - ps->src) + 1);
	}
	return false;
}

static struct node *parse_unary(struct parser *ps)
{
	if (ps->failed)
		return NULL;
	skip_space(ps);
	if (*ps->p == '!' && ps->p[1] != '=' && ps->p[1] != '~') {
		if (!nest(ps))
			return NULL;
		ps->p++;
		struct node *x = new_node(ps, N_NOT, parse_unary(ps), NULL);
		ps->depth--;
		return x;
	}
	if (*ps->p == '(') {
		if (!nest(ps))
			return NULL;
		const char *open = ps->p++;
		struct node *x = parse_or(ps);
		if (!ps->failed && !accept(ps, ")"))
			fail(ps, *ps->p ? ps->p : open, *ps->p ? "expected ')'" : "unclosed '('");
		ps->depth--;
		return x;
	}
	struct node *x = new_node(ps, N_TRUTH, NULL, NULL);
	if (!x)
		return NULL;
	parse_operand(ps, &x->l);
	if (ps->failed)
		return x;
	static const struct {
		const char *tok;
		enum cmp_op op;
	} ops[] = { { "==", OP_EQ }, { "!=", OP_NE }, { "<=", OP_LE }, { ">=", OP_GE },
		    { "=~", OP_GLOB }, { "!~", OP_NOGLOB }, { "<", OP_LT }, { ">", OP_GT } };
	skip_space(ps);
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		if (accept(ps, ops[i].tok)) {
			x->kind = N_CMP;
			x->op = ops[i].op;
			const char *at = ps->p;
			parse_operand(ps, &x->r);
			if (!ps->failed && (x->op == OP_GLOB || x->op == OP_NOGLOB) &&
			    !(x->r.kind == O_LITERAL && x->r.lit.k == V_STR))
				fail(ps, at, "=~ and !~ take a string pattern on the right");
			return x;
		}
	}
	if (*ps->p == '=')
		fail(ps, ps->p, "'=' is not an operator (use ==)");
	return x;
}

/* x1 OP x2 OP x3 ... as N(x1, N(x2, x3)): evaluated in the same order,
 * walked in a loop. */
static struct node *parse_chain(struct parser *ps, const char *op, enum node_kind kind,
				struct node *(*operand)(struct parser *))
{
	struct node *x = operand(ps);
	struct node **last = &x;
	while (!ps->failed && accept(ps, op)) {
		struct node *n = new_node(ps, kind, *last, NULL);
		if (!n)
			break;
		*last = n;
		n->b = operand(ps);
		last = &n->b;
	}
	return x;
}

static struct node *parse_and(struct parser *ps)
{
	return parse_chain(ps, "&&", N_AND, parse_unary);
}

static struct node *parse_or(struct parser *ps)
{
	return parse_chain(ps, "||", N_OR, parse_and);
}

int view_filter_parse(const char *expr, struct view_filter **out, char *err, size_t errlen)
{
	struct parser ps = { .src = expr, .p = expr, .err = err, .errlen = errlen };
	*out = NULL;
	struct view_filter *f = zalloc(&ps, sizeof(*f));
	if (!f)
		return ps.failed;
	f->root = parse_or(&ps);
	skip_space(&ps);
	if (!ps.failed && *ps.p)
		fail(&ps, ps.p, "unexpected text (missing && or ||?)");
	if (ps.failed) {
		view_filter_free(f);
		return ps.failed;
	}
	*out = f;
	return 0;
}

/* Recurses into a, loops along b (as free_node). */
static int bind_node(struct node *x, size_t nr)
{
	for (; x; x = x->b) {
		struct operand *ops[2] = { &x->l, &x->r };
		for (int i = 0; i < 2; i++) {
			if (ops[i]->kind != O_FIELD || !ops[i]->name)
				continue;
			free(ops[i]->index);
			ops[i]->index = malloc((nr ? nr : 1) * sizeof(int32_t));
			if (!ops[i]->index)
				return -ENOMEM;
			for (size_t c = 0; c < nr; c++)
				ops[i]->index[c] = -2;
		}
		int r = bind_node(x->a, nr);
		if (r)
			return r;
	}
	return 0;
}

int view_filter_bind(struct view_filter *f, const struct view_class *classes, size_t nr)
{
	f->classes = classes;
	f->nr_classes = nr;
	return bind_node(f->root, nr);
}

void view_filter_free(struct view_filter *f)
{
	if (!f)
		return;
	free_node(f->root);
	free(f->scratch);
	free(f);
}

static struct fval eval_operand(struct operand *o, const struct view_event *e)
{
	struct fval v = { .k = V_NONE };
	switch (o->kind) {
	case O_LITERAL:
		return o->lit;
	case O_NAME:
		v.k = V_STR;
		v.s = e->ev->cls->name;
		v.len = strlen(v.s);
		v.terminated = true;
		return v;
	case O_CPU:
		if (e->ev->cpu != UINT32_MAX) {
			v.k = V_INT;
			v.i = e->ev->cpu;
		}
		return v;
	case O_TS:
		v.k = V_INT;
		v.i = e->ev->ns;
		return v;
	case O_TRACE:
		v.k = V_INT;
		v.i = e->source;
		return v;
	case O_FIELD:
		break;
	}
	int32_t *slot = &o->index[e->gclass];
	if (*slot == -2)
		*slot = view_field_index(e->ev, o->scope, o->name);
	struct rtr_value rv;
	if (*slot < 0 || view_field_value(e->ev, *slot, &rv) < 0)
		return v;
	switch (rv.type) {
	case RTR_INT: v.k = V_INT; v.i = rv.i; break;
	case RTR_UINT: v.k = V_UINT; v.u = rv.u; break;
	case RTR_FLOAT:
	case RTR_DOUBLE: v.k = V_DBL; v.d = rv.d; break;
	case RTR_BOOL: v.k = V_INT; v.i = rv.b; break;
	case RTR_STRING: v.k = V_STR; v.s = rv.s.p; v.len = rv.s.len; break;
	case RTR_ENUM:	/* its integer; its label against a string */
		v.k = rv.is_signed ? V_INT : V_UINT;
		v.i = rv.i;
		v.u = rv.u;
		v.label = rv.label;
		break;
	default: break;
	}
	return v;
}

/* -1, 0, 1, or 2 when unordered (NaN). a and b are numbers. */
static int num_cmp(struct fval a, struct fval b)
{
	if (a.k == V_DBL || b.k == V_DBL) {
		double x = a.k == V_DBL ? a.d : a.k == V_INT ? (double)a.i : (double)a.u;
		double y = b.k == V_DBL ? b.d : b.k == V_INT ? (double)b.i : (double)b.u;
		return x < y ? -1 : x > y ? 1 : x == y ? 0 : 2;
	}
	if (a.k == V_INT && b.k == V_INT)
		return a.i < b.i ? -1 : a.i > b.i;
	if (a.k == V_UINT && b.k == V_UINT)
		return a.u < b.u ? -1 : a.u > b.u;
	if (a.k == V_INT) {	/* b unsigned */
		if (a.i < 0)
			return -1;
		return (uint64_t)a.i < b.u ? -1 : (uint64_t)a.i > b.u;
	}
	if (b.i < 0)		/* a unsigned, b signed */
		return 1;
	return a.u < (uint64_t)b.i ? -1 : a.u > (uint64_t)b.i;
}

static bool eval_cmp(struct view_filter *f, struct node *x, const struct view_event *e)
{
	struct fval a = eval_operand(&x->l, e), b = eval_operand(&x->r, e);
	struct fval *labelled[2] = { &a, &b };
	for (int i = 0; i < 2; i++) {
		struct fval *v = labelled[i], *other = labelled[1 - i];
		if (v->label && other->k == V_STR) {
			v->k = V_STR;
			v->s = v->label;
			v->len = strlen(v->label);
			v->terminated = true;
		}
	}
	if (a.k == V_NONE || b.k == V_NONE || (a.k == V_STR) != (b.k == V_STR))
		return false;
	if (x->op == OP_GLOB || x->op == OP_NOGLOB) {
		const char *subject = a.s;
		if (!a.terminated) {	/* text arrays are not NUL-terminated */
			if (RT_ARRAY_GROW(f->scratch, f->scratch_cap, a.len + 1, 64) < 0)
				return false;
			memcpy(f->scratch, a.s, a.len);
			f->scratch[a.len] = '\0';
			subject = f->scratch;
		}
		return (fnmatch(b.s, subject, 0) == 0) == (x->op == OP_GLOB);
	}
	int c;
	if (a.k == V_STR) {
		size_t n = a.len < b.len ? a.len : b.len;
		c = memcmp(a.s, b.s, n);
		if (!c)
			c = a.len < b.len ? -1 : a.len > b.len;
		else
			c = c < 0 ? -1 : 1;
	} else {
		c = num_cmp(a, b);
	}
	switch (x->op) {
	case OP_EQ: return c == 0;
	case OP_NE: return c != 0;
	case OP_LT: return c == -1;
	case OP_LE: return c == -1 || c == 0;
	case OP_GT: return c == 1;
	case OP_GE: return c == 1 || c == 0;
	default: return false;
	}
}

/* Recurses into a, loops along a chain's b (see parse_chain). */
static bool eval(struct view_filter *f, struct node *x, const struct view_event *e)
{
	for (;;) {
		switch (x->kind) {
		case N_OR:
			if (eval(f, x->a, e))
				return true;
			x = x->b;
			continue;
		case N_AND:
			if (!eval(f, x->a, e))
				return false;
			x = x->b;
			continue;
		case N_NOT: return !eval(f, x->a, e);
		case N_CMP: return eval_cmp(f, x, e);
		case N_TRUTH: {
			struct fval v = eval_operand(&x->l, e);
			switch (v.k) {
			case V_INT: return v.i != 0;
			case V_UINT: return v.u != 0;
			case V_DBL: return v.d != 0;
			case V_STR: return v.len != 0;
			default: return false;
			}
		}
		}
		return false;
	}
}

bool view_filter_match(struct view_filter *f, const struct view_event *e)
{
	return eval(f, f->root, e);
}
