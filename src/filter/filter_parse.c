/*
 * filter_parse.c - the filter language (filter.h) parsed by precedence
 * climbing straight into the postfix program (filter_internal.h).
 *
 * parse_expr(min) parses a unary operand, then every binary operator of
 * precedence min or more to its right, its right-hand side by
 * parse_expr(precedence + 1): a chain of operators is a loop, and the
 * recursion grows only with "(" and unary operators, which `nest` bounds
 * (RTF_MAX_DEPTH), by at most three calls each.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/array.h"
#include "filter_internal.h"

struct parser {
	const char *src, *p;
	char *err;
	size_t errlen;
	int failed;
	unsigned depth;		/* "(" and unary operators open around p */
	uint32_t stack;		/* values the program holds at this point */
	const struct rtf_options *opt;
	struct rtf_program *prog;
};

static void fail_at(struct parser *ps, const char *at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fail_at(struct parser *ps, const char *at, const char *fmt, ...)
{
	if (ps->failed)
		return;
	ps->failed = -EINVAL;
	char prefix[48];
	snprintf(prefix, sizeof(prefix), "filter:1:%zu: ", (size_t)(at - ps->src) + 1);
	va_list ap;
	va_start(ap, fmt);
	rtf_verr(ps->err, ps->errlen, prefix, fmt, ap);
	va_end(ap);
}

void rtf_verr(char *err, size_t errlen, const char *prefix, const char *fmt, va_list ap)
{
	int n = snprintf(err, errlen, "%s", prefix);
	if (n >= 0 && (size_t)n < errlen)
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
}

static void nomem(struct parser *ps)
{
	if (ps->failed)
		return;
	ps->failed = -ENOMEM;
	snprintf(ps->err, ps->errlen, "filter: out of memory");
}

static void skip_space(struct parser *ps)
{
	while (isspace((unsigned char)*ps->p))
		ps->p++;
}

/* Append an instruction: its index, or UINT32_MAX on failure. */
static uint32_t emit(struct parser *ps, enum rtf_op op, uint32_t arg)
{
	struct rtf_program *p = ps->prog;
	if (ps->failed)
		return UINT32_MAX;
	if (p->nr_code >= RTF_MAX_INSNS) {
		fail_at(ps, ps->p, "expression too long (more than %u instructions)",
			RTF_MAX_INSNS);
		return UINT32_MAX;
	}
	if (RT_ARRAY_GROW(p->code, p->cap_code, p->nr_code + 1, 64) < 0) {
		nomem(ps);
		return UINT32_MAX;
	}
	uint32_t pops, pushes;
	rtf_op_stack(op, &pops, &pushes);
	ps->stack = ps->stack - pops + pushes;
	if (ps->stack > RTF_MAX_STACK) {
		fail_at(ps, ps->p, "expression too complex (more than %d values pending at once)",
			RTF_MAX_STACK);
		return UINT32_MAX;
	}
	if (ps->stack > p->max_stack)
		p->max_stack = ps->stack;
	p->code[p->nr_code] = (struct rtf_insn){ .op = (uint8_t)op, .arg = arg };
	return p->nr_code++;
}

static void emit_const(struct parser *ps, const struct rtf_value *v)
{
	struct rtf_program *p = ps->prog;
	if (ps->failed)
		return;
	if (RT_ARRAY_GROW(p->consts, p->cap_consts, p->nr_consts + 1, 8) < 0) {
		nomem(ps);
		return;
	}
	p->consts[p->nr_consts] = *v;
	emit(ps, RTF_OP_CONST, p->nr_consts++);
}

static void emit_ref(struct parser *ps, const char *at, enum rtf_scope scope,
		     const char *name, size_t len)
{
	struct rtf_program *p = ps->prog;
	uint32_t i;
	if (len > 255) {
		fail_at(ps, at, "name longer than 255 bytes");
		return;
	}
	for (i = 0; i < p->nr_refs; i++)
		if (p->refs[i].scope == scope && strlen(p->refs[i].name) == len &&
		    !memcmp(p->refs[i].name, name, len))
			break;
	if (i == p->nr_refs) {
		if (p->nr_refs >= RTF_MAX_REFS) {
			fail_at(ps, at, "more than %d different fields", RTF_MAX_REFS);
			return;
		}
		if (RT_ARRAY_GROW(p->refs, p->cap_refs, p->nr_refs + 1, 8) < 0) {
			nomem(ps);
			return;
		}
		char *copy = strndup(name, len);
		if (!copy) {
			nomem(ps);
			return;
		}
		p->refs[p->nr_refs++] = (struct rtf_ref){ .scope = scope, .name = copy };
	}
	emit(ps, RTF_OP_REF, i);
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

/* A string literal, kept escaped: \X stays \X for the bytes that glob
 * matching gives a meaning to (\ * ? [ ]) and becomes X for the others
 * and the quotes; \n \t \r become their bytes. */
static void parse_string(struct parser *ps)
{
	const char *start = ps->p;
	char q = *ps->p++;
	size_t cap = 0;
	for (const char *s = ps->p; *s && *s != q; s++)
		cap += (*s == '\\' && s[1]) ? (s++, 2) : 1;
	char *out = malloc(cap + 1);
	size_t n = 0;
	if (!out) {
		nomem(ps);
		return;
	}
	for (;;) {
		char c = *ps->p;
		if (!c || (c == '\\' && !ps->p[1])) {
			free(out);
			fail_at(ps, start, "unterminated string");
			return;
		}
		ps->p++;
		if (c == q)
			break;
		if (c == '\\') {
			const char *at = ps->p - 1;
			c = *ps->p++;
			switch (c) {
			case 'n': c = '\n'; break;
			case 't': c = '\t'; break;
			case 'r': c = '\r'; break;
			case '"': case '\'': break;
			case '\\': case '*': case '?': case '[': case ']':
				out[n++] = '\\';
				break;
			default:
				free(out);
				fail_at(ps, at, "unknown escape in string (\\\\ \\\" \\' \\* \\? \\[ \\] "
					"\\n \\t \\r)");
				return;
			}
		}
		out[n++] = c;
	}
	out[n] = '\0';
	if (n > RTF_WIRE_STR_MAX) {
		free(out);
		fail_at(ps, start, "string longer than %d bytes", RTF_WIRE_STR_MAX);
		return;
	}
	struct rtf_value v = { .type = RTF_STRING, .escaped = true, .s = { out, n } };
	v.glob = rtf_has_star(&v);
	struct rtf_program *p = ps->prog;
	uint32_t before = p->nr_consts;
	emit_const(ps, &v);
	if (p->nr_consts == before)
		free(out);
}

static void parse_number(struct parser *ps)
{
	const char *start = ps->p;
	char *end;
	struct rtf_value v = { .type = RTF_INT };
	bool hex = start[0] == '0' && (start[1] == 'x' || start[1] == 'X');
	size_t span = strspn(start, "0123456789abcdefABCDEFxX.+-");
	/* A sign belongs to the number only right after an exponent's e. */
	for (size_t i = 1; i < span; i++)
		if ((start[i] == '+' || start[i] == '-') &&
		    (hex || (start[i - 1] != 'e' && start[i - 1] != 'E'))) {
			span = i;
			break;
		}
	bool real = !hex && (memchr(start, '.', span) || memchr(start, 'e', span) ||
			     memchr(start, 'E', span));
	errno = 0;
	if (real) {
		v.type = RTF_DOUBLE;
		v.d = strtod(start, &end);
	} else {
		v.u = strtoull(start, &end, 0);
		if (v.u > INT64_MAX)
			v.type = RTF_UINT;
	}
	if (end == start || errno == ERANGE || isalnum((unsigned char)*end) || *end == '_' ||
	    *end == '.') {
		fail_at(ps, start, errno == ERANGE ? "number out of range" : "malformed number");
		return;
	}
	ps->p = end;
	emit_const(ps, &v);
}

static bool is_var(const struct rtf_options *opt, const char *name, size_t n)
{
	for (const char *const *v = opt->vars; v && *v; v++)
		if (strlen(*v) == n && !memcmp(*v, name, n))
			return true;
	return false;
}

/* $ctx.NAME, $app.PROVIDER:NAME, $payload.NAME, $VAR; ps->p at '$'. */
static void parse_dollar(struct parser *ps)
{
	const char *at = ps->p, *w = at + 1;
	size_t n = ident_len(w);
	if (n && w[n] == '.') {
		const char *name = w + n + 1;
		size_t len = ident_len(name);
		enum rtf_scope scope;
		if ((n == 3 && !strncmp(w, "ctx", 3)) || (n == 7 && !strncmp(w, "context", 7))) {
			scope = RTF_SCOPE_CTX;
		} else if (n == 7 && !strncmp(w, "payload", 7)) {
			scope = RTF_SCOPE_PAYLOAD;
		} else if (n == 3 && !strncmp(w, "app", 3)) {
			scope = RTF_SCOPE_APP;
			if (len && name[len] == ':' && ident_len(name + len + 1))
				len += 1 + ident_len(name + len + 1);
			else {
				fail_at(ps, name, "expected PROVIDER:NAME after $app.");
				return;
			}
		} else {
			fail_at(ps, at, "unknown scope (use $ctx.NAME, $app.PROVIDER:NAME or "
				"$payload.NAME)");
			return;
		}
		if (!len) {
			fail_at(ps, name, "expected a field name");
			return;
		}
		ps->p = name + len;
		emit_ref(ps, at, scope, name, len);
		return;
	}
	if (n && is_var(ps->opt, w, n)) {
		ps->p = w + n;
		emit_ref(ps, at, RTF_SCOPE_VAR, w, n);
		return;
	}
	if (!ps->opt->vars || !*ps->opt->vars) {
		fail_at(ps, at, "unknown variable (use $ctx.NAME or $app.PROVIDER:NAME)");
		return;
	}
	char list[256] = "";
	size_t used = 0;
	for (const char *const *v = ps->opt->vars; *v && used < sizeof(list); v++) {
		int k = snprintf(list + used, sizeof(list) - used, "$%s, ", *v);
		if (k < 0)
			break;
		used += (size_t)k;
	}
	fail_at(ps, at, "unknown variable (use %s$ctx.NAME or $payload.NAME)", list);
}

static void parse_operand(struct parser *ps)
{
	skip_space(ps);
	const char *at = ps->p;
	char c = *at;
	if (c == '"' || c == '\'') {
		parse_string(ps);
		return;
	}
	if (isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)at[1]))) {
		parse_number(ps);
		return;
	}
	if (c == '$') {
		parse_dollar(ps);
		return;
	}
	size_t n = ident_len(at);
	if (!n) {
		fail_at(ps, at, c ? "expected a field name, a number or a string"
				  : "unexpected end of the expression");
		return;
	}
	ps->p = at + n;
	if ((n == 4 && !strncmp(at, "true", 4)) || (n == 5 && !strncmp(at, "false", 5))) {
		struct rtf_value v = { .type = RTF_INT, .i = n == 4 };
		emit_const(ps, &v);
		return;
	}
	if (*ps->p == '[' || (*ps->p == '.' && ident_len(ps->p + 1))) {
		fail_at(ps, ps->p, "fields inside structures and arrays are not supported");
		return;
	}
	emit_ref(ps, at, RTF_SCOPE_FIELD, at, n);
}

/* Enter one more "(" or unary operator at ps->p: false (and the error)
 * past RTF_MAX_DEPTH. */
static bool nest(struct parser *ps)
{
	if (++ps->depth <= RTF_MAX_DEPTH)
		return true;
	fail_at(ps, ps->p, "nests deeper than %d", RTF_MAX_DEPTH);
	return false;
}

static void parse_expr(struct parser *ps, int min);

static void parse_unary(struct parser *ps)
{
	if (ps->failed)
		return;
	skip_space(ps);
	static const struct {
		char c;
		enum rtf_op op;
	} unary[] = { { '!', RTF_OP_NOT }, { '~', RTF_OP_BNOT }, { '-', RTF_OP_NEG },
		      { '+', RTF_OP_PLUS } };
	for (size_t i = 0; i < sizeof(unary) / sizeof(unary[0]); i++) {
		if (*ps->p != unary[i].c)
			continue;
		if (unary[i].c == '!' && ps->p[1] == '=') {
			fail_at(ps, ps->p, "expected a field name, a number or a string");
			return;
		}
		if (!nest(ps))
			return;
		ps->p++;
		parse_unary(ps);
		emit(ps, unary[i].op, 0);
		ps->depth--;
		return;
	}
	if (*ps->p == '(') {
		if (!nest(ps))
			return;
		const char *open = ps->p++;
		parse_expr(ps, 1);
		skip_space(ps);
		if (!ps->failed && *ps->p != ')')
			fail_at(ps, *ps->p ? ps->p : open, *ps->p ? "expected ')'" : "unclosed '('");
		if (!ps->failed)
			ps->p++;
		ps->depth--;
		return;
	}
	parse_operand(ps);
}

struct binop {
	const char *tok;
	int prec;
	enum rtf_op op;
};

/* Longer tokens first, so that "<<" is not read as "<". */
static const struct binop binops[] = {
	{ "||", 1, RTF_OP_OR },	   { "&&", 2, RTF_OP_AND },   { "==", 3, RTF_OP_EQ },
	{ "!=", 3, RTF_OP_NE },	   { "=~", 3, RTF_OP_MATCH }, { "!~", 3, RTF_OP_NOMATCH },
	{ "<<", 8, RTF_OP_SHL },   { ">>", 8, RTF_OP_SHR },   { "<=", 4, RTF_OP_LE },
	{ ">=", 4, RTF_OP_GE },	   { "<", 4, RTF_OP_LT },     { ">", 4, RTF_OP_GT },
	{ "|", 5, RTF_OP_BOR },	   { "^", 6, RTF_OP_BXOR },   { "&", 7, RTF_OP_BAND },
};

static const struct binop *peek_binop(struct parser *ps)
{
	skip_space(ps);
	for (size_t i = 0; i < sizeof(binops) / sizeof(binops[0]); i++)
		if (!strncmp(ps->p, binops[i].tok, strlen(binops[i].tok)))
			return &binops[i];
	return NULL;
}

static void parse_expr(struct parser *ps, int min)
{
	parse_unary(ps);
	struct rtf_program *p = ps->prog;
	while (!ps->failed) {
		const struct binop *b = peek_binop(ps);
		if (!b) {
			if (*ps->p == '=')
				fail_at(ps, ps->p, "'=' is not an operator (use ==)");
			return;
		}
		if (b->prec < min)
			return;
		ps->p += strlen(b->tok);
		bool logic = b->op == RTF_OP_AND || b->op == RTF_OP_OR;
		uint32_t jump = logic ? emit(ps, b->op, 0) : 0;
		uint32_t rhs = p->nr_code;
		const char *at = ps->p;
		parse_expr(ps, b->prec + 1);
		if (ps->failed)
			return;
		if ((b->op == RTF_OP_MATCH || b->op == RTF_OP_NOMATCH) &&
		    !(p->nr_code == rhs + 1 && p->code[rhs].op == RTF_OP_CONST &&
		      p->consts[p->code[rhs].arg].type == RTF_STRING)) {
			skip_space(ps);
			while (isspace((unsigned char)*at))
				at++;
			fail_at(ps, at, "=~ and !~ take a string pattern on the right");
			return;
		}
		if (logic) {
			emit(ps, b->op == RTF_OP_AND ? RTF_OP_AND_END : RTF_OP_OR_END, 0);
			if (!ps->failed)
				p->code[jump].arg = p->nr_code;
		} else {
			emit(ps, b->op, 0);
		}
	}
}

void rtf_free(struct rtf_program *p)
{
	if (!p)
		return;
	for (uint32_t i = 0; i < p->nr_consts; i++)
		if (p->consts[i].type == RTF_STRING)
			free((char *)(uintptr_t)p->consts[i].s.p);
	for (uint32_t i = 0; i < p->nr_refs; i++)
		free((char *)(uintptr_t)p->refs[i].name);
	free(p->consts);
	free(p->refs);
	free(p->code);
	free(p);
}

int rtf_compile(const char *expr, const struct rtf_options *opt, struct rtf_program **out,
		char *err, size_t errlen)
{
	static const struct rtf_options lttng = { 0 };
	struct parser ps = { .src = expr, .p = expr, .err = err, .errlen = errlen,
			     .opt = opt ? opt : &lttng };
	*out = NULL;
	ps.prog = calloc(1, sizeof(*ps.prog));
	if (!ps.prog) {
		nomem(&ps);
		return ps.failed;
	}
	ps.prog->flags = ps.opt->flags;
	skip_space(&ps);
	if (!*ps.p)
		fail_at(&ps, ps.p, "empty expression");
	parse_expr(&ps, 1);
	if (!ps.failed)
		skip_space(&ps);
	if (!ps.failed && *ps.p)
		fail_at(&ps, ps.p, *ps.p == ')' ? "unmatched ')'"
					       : "unexpected text (missing && or ||?)");
	if (ps.failed) {
		rtf_free(ps.prog);
		return ps.failed;
	}
	*out = ps.prog;
	return 0;
}

uint32_t rtf_nr_refs(const struct rtf_program *p)
{
	return p->nr_refs;
}

uint32_t rtf_nr_insns(const struct rtf_program *p)
{
	return p->nr_code;
}

const struct rtf_ref *rtf_ref(const struct rtf_program *p, uint32_t i)
{
	return i < p->nr_refs ? &p->refs[i] : NULL;
}

bool rtf_has_star(const struct rtf_value *v)
{
	bool quoted;
	for (size_t i = 0; i < v->s.len;)
		if (rtf_next_byte(v->s.p, v->s.len, v->escaped, &i, &quoted) == '*' && !quoted)
			return true;
	return false;
}
