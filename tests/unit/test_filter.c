/*
 * test_filter.c - the filter language (src/filter/filter.h).
 *
 * Random expressions over every operator, written with all their
 * parentheses and with only those precedence needs, are compiled and run
 * on random events; each result is checked against an evaluation of the
 * same tree written here, independently of src/filter (128-bit integers
 * for exact comparisons, fnmatch for globs), in both error modes
 * (LTTng's: a missing field or an error fails the whole expression;
 * RTF_LOCAL_ERRORS: only its comparison). Then LTTng's precedence
 * examples, syntax errors with their columns, the limits, and the
 * translation into ftrace's filter text.
 *
 * The library's fetch path (src/lib/filter_fetch.c, compiled into this
 * test) runs every random program too, bound to an event class with the
 * same fields, on the event as rt__record_parts and (for expressions
 * without strings) rt__record give it; then every field type and
 * context it reads, checked by value.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter/filter.h"
#include "lib/daemon_client.h"
#include "lib/filter_fetch.h"
#include "unit.h"

/* ---- the reference ---- */

enum t_kind { T_INT, T_DBL, T_STR, T_FIELD, T_UN, T_BIN };
enum t_val { V_ERR, V_INT, V_DBL, V_STR };

struct tnode {
	enum t_kind kind;
	int64_t i;		/* T_INT: 64 bits; uns: as unsigned */
	bool uns;
	double d;
	char src[64];		/* T_STR: the text between the quotes; T_FIELD: name */
	const char *op;		/* T_UN, T_BIN */
	struct tnode *a, *b;
};

struct tval {
	enum t_val k;
	__int128 i;
	double d;
	char s[64];		/* V_STR: the bytes */
	const char *lit;	/* V_STR from a literal: its source text */
};

struct event {
	int64_t i[3];
	uint64_t u0;
	double d0;
	char s[2][16];
	size_t slen[2];
};

static unsigned long long rng = 88172645463325252ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static unsigned pick(unsigned n)
{
	return (unsigned)(rnd() % n);
}

static const struct {
	const char *op;
	int prec;
} bin_ops[] = {
	{ "||", 1 }, { "&&", 2 }, { "==", 3 }, { "!=", 3 }, { "=~", 3 }, { "!~", 3 },
	{ "<", 4 },  { "<=", 4 }, { ">", 4 },  { ">=", 4 }, { "|", 5 },  { "^", 6 },
	{ "&", 7 },  { "<<", 8 }, { ">>", 8 },
};

static int prec_of(const struct tnode *n)
{
	if (n->kind != T_BIN)
		return 10;
	for (size_t i = 0; i < sizeof(bin_ops) / sizeof(bin_ops[0]); i++)
		if (!strcmp(bin_ops[i].op, n->op))
			return bin_ops[i].prec;
	abort();
}

static const int64_t edge_ints[] = { 0, 1, 2, 3, 7, 63, 64, 100, -1, -2, INT64_MAX, INT64_MIN,
				     0xff7, 0x240, 1000 };

/* A pattern of tokens: a b * \* ? [ab] [!a] */
static void rand_literal(char *out, size_t cap)
{
	static const char *const tok[] = { "a", "b", "a", "b", "*", "\\*", "?", "[ab]", "[!a]" };
	size_t n = 0, len = pick(5);
	out[0] = '\0';
	for (size_t k = 0; k < len; k++) {
		const char *t = tok[pick(sizeof(tok) / sizeof(tok[0]))];
		if (n + strlen(t) + 1 >= cap)
			break;
		strcpy(out + n, t);
		n += strlen(t);
	}
}

static struct tnode *leaf(void)
{
	struct tnode *n = calloc(1, sizeof(*n));
	static const char *const fields[] = { "i0", "i1", "i2", "u0", "d0", "s0", "s1", "m" };
	switch (pick(4)) {
	case 0:
		n->kind = T_INT;
		if (pick(3)) {
			n->i = edge_ints[pick(sizeof(edge_ints) / sizeof(edge_ints[0]))];
			if (n->i < 0)	/* literals are not negative: written as -(x) */
				n->i = pick(2) ? 5 : 17;
		} else {
			n->i = (int64_t)rnd();
			n->uns = n->i < 0;
		}
		break;
	case 1:
		n->kind = T_DBL;
		n->d = pick(2) ? (double)pick(200) / 4 : (double)(rnd() >> 11) / 1e6;
		break;
	case 2:
		n->kind = T_STR;
		rand_literal(n->src, sizeof(n->src));
		break;
	default:
		n->kind = T_FIELD;
		strcpy(n->src, fields[pick(sizeof(fields) / sizeof(fields[0]) - !pick(4))]);
		break;
	}
	return n;
}

static struct tnode *gen(int depth)
{
	if (depth <= 0 || !pick(4))
		return leaf();
	struct tnode *n = calloc(1, sizeof(*n));
	if (!pick(5)) {
		static const char *const un[] = { "!", "~", "-", "+" };
		n->kind = T_UN;
		n->op = un[pick(4)];
		n->a = gen(depth - 1);
		return n;
	}
	n->kind = T_BIN;
	n->op = bin_ops[pick(sizeof(bin_ops) / sizeof(bin_ops[0]))].op;
	n->a = gen(depth - 1);
	if (!strcmp(n->op, "=~") || !strcmp(n->op, "!~")) {
		n->b = calloc(1, sizeof(*n->b));
		n->b->kind = T_STR;
		rand_literal(n->b->src, sizeof(n->b->src));
	} else {
		n->b = gen(depth - 1);
	}
	return n;
}

static void free_tree(struct tnode *n)
{
	if (!n)
		return;
	free_tree(n->a);
	free_tree(n->b);
	free(n);
}

static void put(char **p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(char **p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	*p += vsprintf(*p, fmt, ap);
	va_end(ap);
}

/* all: every subexpression in parentheses; else only where precedence
 * and (left) associativity need them. */
static void render(const struct tnode *n, char **p, bool all)
{
	switch (n->kind) {
	case T_INT:
		if (pick(2))
			put(p, "%llu", (unsigned long long)n->i);
		else
			put(p, "0x%llx", (unsigned long long)n->i);
		return;
	case T_DBL:
	{
		char num[40];
		snprintf(num, sizeof(num), "%.17g", n->d);
		put(p, "%s%s", num, strpbrk(num, ".e") ? "" : ".0");	/* a real */
		return;
	}
	case T_STR:
		put(p, "\"%s\"", n->src);
		return;
	case T_FIELD:
		put(p, "%s", n->src);
		return;
	case T_UN: {
		bool par = all || n->a->kind == T_BIN;
		put(p, "%s%s", n->op, par ? "(" : " ");
		render(n->a, p, all);
		put(p, "%s", par ? ")" : "");
		return;
	}
	case T_BIN: {
		int pr = prec_of(n);
		bool pa = all || prec_of(n->a) < pr, pb = all || prec_of(n->b) <= pr;
		put(p, "%s", pa ? "(" : "");
		render(n->a, p, all);
		put(p, "%s %s %s", pa ? ")" : "", n->op, pb ? "(" : "");
		render(n->b, p, all);
		put(p, "%s", pb ? ")" : "");
		return;
	}
	}
}

static bool uses_missing(const struct tnode *n)
{
	return n && ((n->kind == T_FIELD && !strcmp(n->src, "m")) || uses_missing(n->a) ||
		     uses_missing(n->b));
}

static bool ttruth(const struct tval *v)
{
	switch (v->k) {
	case V_INT: return v->i != 0;
	case V_DBL: return v->d != 0;
	case V_STR: return v->s[0] != '\0';
	default: return false;
	}
}

static struct tval tint(__int128 i)
{
	struct tval v = { .k = V_INT, .i = i };
	return v;
}

/* The bytes a literal stands for: its escapes removed. */
static void unescape(const char *src, char *out)
{
	for (; *src; src++) {
		if (*src == '\\' && src[1])
			src++;
		*out++ = *src;
	}
	*out = '\0';
}

/* A literal as an `==` glob: only * is special; as fnmatch's pattern. */
static void star_pattern(const char *src, char *out)
{
	for (; *src; src++) {
		if (*src == '\\' && src[1]) {
			*out++ = *src++;
			*out++ = *src;
		} else if (*src == '?' || *src == '[' || *src == ']') {
			*out++ = '\\';
			*out++ = *src;
		} else {
			*out++ = *src;
		}
	}
	*out = '\0';
}

static bool has_star(const char *src)
{
	for (; *src; src++) {
		if (*src == '\\' && src[1])
			src++;
		else if (*src == '*')
			return true;
	}
	return false;
}

static uint64_t tbits(const struct tval *v)
{
	return (uint64_t)v->i;
}

static struct tval err_val(bool *failed, bool local)
{
	struct tval v = { .k = V_ERR };
	if (!local)
		*failed = true;
	return v;
}

static struct tval teval(const struct tnode *n, const struct event *e, bool local, bool *failed)
{
	struct tval v = { 0 };
	if (*failed)
		return v;
	switch (n->kind) {
	case T_INT:
		return tint(n->uns ? (__int128)(uint64_t)n->i : n->i);
	case T_DBL:
		v.k = V_DBL;
		v.d = n->d;
		return v;
	case T_STR:
		v.k = V_STR;
		unescape(n->src, v.s);
		v.lit = n->src;
		return v;
	case T_FIELD:
		if (n->src[0] == 'i')
			return tint(e->i[n->src[1] - '0']);
		if (!strcmp(n->src, "u0"))
			return tint(e->u0);
		if (!strcmp(n->src, "d0")) {
			v.k = V_DBL;
			v.d = e->d0;
			return v;
		}
		if (n->src[0] == 's') {
			v.k = V_STR;
			memcpy(v.s, e->s[n->src[1] - '0'], e->slen[n->src[1] - '0']);
			v.s[e->slen[n->src[1] - '0']] = '\0';
			return v;
		}
		return err_val(failed, local);
	case T_UN: {
		struct tval a = teval(n->a, e, local, failed);
		if (*failed)
			return v;
		if (!strcmp(n->op, "!"))
			return tint(!ttruth(&a));
		if (a.k == V_ERR)
			return a;
		if (!strcmp(n->op, "~"))
			return a.k == V_INT ? tint((int64_t)~tbits(&a)) : err_val(failed, local);
		if (a.k == V_STR)
			return err_val(failed, local);
		if (!strcmp(n->op, "+"))
			return a;
		if (a.k == V_DBL) {
			a.d = -a.d;
			return a;
		}
		return tint((int64_t)(0 - tbits(&a)));
	}
	case T_BIN:
		break;
	}
	const char *op = n->op;
	struct tval a = teval(n->a, e, local, failed);
	if (*failed)
		return v;
	if (!strcmp(op, "&&") || !strcmp(op, "||")) {
		bool and = op[0] == '&';
		if (ttruth(&a) != and)
			return tint(!and);
		struct tval b = teval(n->b, e, local, failed);
		return tint(ttruth(&b));
	}
	struct tval b = teval(n->b, e, local, failed);
	if (*failed)
		return v;
	int prec = prec_of(n);
	if (prec >= 5) {	/* bitwise */
		if (a.k != V_INT || b.k != V_INT)
			return err_val(failed, local);
		uint64_t x = tbits(&a), y = tbits(&b);
		if (op[0] == '<' || op[0] == '>') {
			if (b.i < 0 || b.i > 63)
				return err_val(failed, local);
			return tint((int64_t)(op[0] == '<' ? x << y : x >> y));
		}
		return tint((int64_t)(op[0] == '&' ? x & y : op[0] == '^' ? x ^ y : x | y));
	}
	/* comparisons */
	if (a.k == V_ERR || b.k == V_ERR)
		return tint(0);
	if (!strcmp(op, "=~") || !strcmp(op, "!~")) {
		if (a.k != V_STR)
			return local ? tint(0) : err_val(failed, false);
		bool m = fnmatch(b.lit, a.s, 0) == 0;
		return tint(m == (op[0] == '='));
	}
	int c;
	if (a.k == V_STR && b.k == V_STR) {
		bool ga = a.lit && !b.lit && has_star(a.lit), gb = b.lit && !a.lit && has_star(b.lit);
		if ((ga || gb) && (!strcmp(op, "==") || !strcmp(op, "!="))) {
			char pat[160];
			star_pattern(ga ? a.lit : b.lit, pat);
			bool m = fnmatch(pat, ga ? b.s : a.s, 0) == 0;
			return tint(m == (op[0] == '='));
		}
		c = strcmp(a.s, b.s);
		c = c < 0 ? -1 : c > 0;
	} else if (a.k != V_STR && b.k != V_STR) {
		if (a.k == V_DBL || b.k == V_DBL) {
			double x = a.k == V_DBL ? a.d : (double)a.i, y = b.k == V_DBL ? b.d : (double)b.i;
			if (!strcmp(op, "==")) return tint(x == y);
			if (!strcmp(op, "!=")) return tint(x != y);
			if (!strcmp(op, "<")) return tint(x < y);
			if (!strcmp(op, "<=")) return tint(x <= y);
			if (!strcmp(op, ">")) return tint(x > y);
			return tint(x >= y);
		}
		c = a.i < b.i ? -1 : a.i > b.i;
	} else {
		return local ? tint(0) : err_val(failed, false);
	}
	if (!strcmp(op, "==")) return tint(c == 0);
	if (!strcmp(op, "!=")) return tint(c != 0);
	if (!strcmp(op, "<")) return tint(c < 0);
	if (!strcmp(op, "<=")) return tint(c <= 0);
	if (!strcmp(op, ">")) return tint(c > 0);
	return tint(c >= 0);
}

static bool reference(const struct tnode *n, const struct event *e, bool local)
{
	bool failed = false;
	if (!local && uses_missing(n))
		return false;
	struct tval v = teval(n, e, local, &failed);
	return !failed && ttruth(&v);
}

/* ---- the fetch function ---- */

struct fetch_ctx {
	const struct rtf_program *p;
	const struct event *e;
	char garbage[2][32];	/* strings not NUL-terminated */
};

static int fetch(void *arg, uint32_t ref, struct rtf_value *v)
{
	struct fetch_ctx *c = arg;
	const char *name = rtf_ref(c->p, ref)->name;
	if (name[0] == 'i') {
		v->type = RTF_INT;
		v->i = c->e->i[name[1] - '0'];
	} else if (!strcmp(name, "u0")) {
		v->type = RTF_UINT;
		v->u = c->e->u0;
	} else if (!strcmp(name, "d0")) {
		v->type = RTF_DOUBLE;
		v->d = c->e->d0;
	} else if (name[0] == 's') {
		int k = name[1] - '0';
		memcpy(c->garbage[k], c->e->s[k], c->e->slen[k]);
		memset(c->garbage[k] + c->e->slen[k], 'a', sizeof(c->garbage[k]) - c->e->slen[k]);
		v->type = RTF_STRING;
		v->s.p = c->garbage[k];
		v->s.len = c->e->slen[k];
	} else {
		return -ENOENT;
	}
	return 0;
}

static void rand_event(struct event *e)
{
	static const char *const strs[] = { "", "a", "b", "ab", "ba", "abab", "a*b", "aab",
					    "?", "[ab]", "bbb", "a]" };
	for (int k = 0; k < 3; k++)
		e->i[k] = pick(2) ? edge_ints[pick(sizeof(edge_ints) / sizeof(edge_ints[0]))]
				  : (int64_t)rnd();
	e->u0 = pick(2) ? rnd() : pick(100);
	static const double ds[] = { 0, 1, -1, 2.5, 1e300, -0.0 };
	e->d0 = pick(2) ? ds[pick(6)] : (pick(8) ? (double)(int64_t)rnd() / 1e3 : NAN);
	for (int k = 0; k < 2; k++) {
		strcpy(e->s[k], strs[pick(sizeof(strs) / sizeof(strs[0]))]);
		e->slen[k] = strlen(e->s[k]);
	}
}

/* ---- the library's fetch path (filter_fetch.h) ---- */

/* What the probe's caches give this test's thread. */
int32_t rt_dc_pid;
char rt_dc_procname[RTP_APP_PROCNAME_LEN + 1];
uint32_t rt_dc_procname_size;
char rt_dc_hostname[RTP_APP_STR_MAX + 1] = "filterhost";
uint32_t rt_dc_hostname_size = sizeof("filterhost");

/* What <ringtrace/ringtrace.h> (through rt_internal.h) registers this
 * test's (no) events with: the library is not linked here. */
void rt__register(struct rt_event_desc *const *begin, struct rt_event_desc *const *end)
{
	(void)begin;
	(void)end;
}

void rt__unregister(struct rt_event_desc *const *begin, struct rt_event_desc *const *end)
{
	(void)begin;
	(void)end;
}

void rt_probe_thread_ids(int32_t *pid, int32_t *tid, int32_t *prio)
{
	*pid = 4242;
	*tid = -4343;
	*prio = 20;
}

uint32_t rt_probe_thread_name(char name[RT_THREAD_NAME_LEN])
{
	snprintf(name, RT_THREAD_NAME_LEN, "worker-1");
	return (uint32_t)strlen(name);
}

/* The random events' class: i0 i1 i2 (s64), u0 (u64), d0 (double), s0
 * s1 (strings); "m" is no field of it. */
static struct rt_field_desc rand_fields[] = {
	{ "i0", RT_TYPE_S64 }, { "i1", RT_TYPE_S64 }, { "i2", RT_TYPE_S64 },
	{ "u0", RT_TYPE_U64 }, { "d0", RT_TYPE_DOUBLE }, { "s0", RT_TYPE_STRING },
	{ "s1", RT_TYPE_STRING },
};
static char *rand_names[] = { "i0", "i1", "i2", "u0", "d0", "s0", "s1" };
static struct rt_event_class rand_class = {
	.provider = "t", .name = "rand", .nr_fields = 7,
	.fields = rand_fields, .field_names = rand_names,
};

static bool uses_string_name(const char *name)
{
	return name[0] == 's';
}

static bool uses_string(const struct tnode *n)
{
	return n && ((n->kind == T_FIELD && uses_string_name(n->src)) || uses_string(n->a) ||
		     uses_string(n->b));
}

/* Event e through the fetch path: as parts (the strings followed by
 * bytes that are no NUL, as a string that grew since its call site
 * sized it), or flat (the fixed-size fields only). */
static bool lib_eval(const struct rt_filter *f, const struct event *e, bool flat)
{
	char buf[2][32];
	const char *sp[2];
	for (int k = 0; k < 2; k++) {
		memcpy(buf[k], e->s[k], e->slen[k]);
		memset(buf[k] + e->slen[k], 'b', sizeof(buf[k]) - e->slen[k]);
		sp[k] = buf[k];
	}
	struct rt_part parts[7] = {
		{ &e->i[0], 8, RT_PART_FIXED }, { &e->i[1], 8, RT_PART_FIXED },
		{ &e->i[2], 8, RT_PART_FIXED }, { &e->u0, 8, RT_PART_FIXED },
		{ &e->d0, 8, RT_PART_FIXED },
		{ &sp[0], (uint32_t)e->slen[0] + 1, RT_PART_STRING },
		{ &sp[1], (uint32_t)e->slen[1] + 1, RT_PART_STRING },
	};
	char payload[40];
	memcpy(payload, e->i, 24);
	memcpy(payload + 24, &e->u0, 8);
	memcpy(payload + 32, &e->d0, 8);
	struct rt_filter_event ev = { .parts = parts, .nr = 7 };
	if (flat)
		ev = (struct rt_filter_event){ .flat = payload, .size = sizeof(payload) };
	return rt_filter_pass(f, &ev);
}

static void test_random(void)
{
	unit_case = "random";
	static char text[1 << 16];
	char err[256];
	unsigned trues = 0, total = 0;
	for (int round = 0; round < 30000; round++) {
		struct tnode *t = gen(1 + (int)pick(5));
		for (int all = 0; all < 2; all++) {
			char *p = text;
			render(t, &p, all);
			for (int local = 0; local < 2; local++) {
				struct rtf_options opt = { .flags = local ? RTF_LOCAL_ERRORS : 0 };
				struct rtf_program *prog;
				int r = rtf_compile(text, &opt, &prog, err, sizeof(err));
				if (!CHECK(r == 0, "%s: %s", text, err))
					continue;
				/* The same program saved and loaded back (filter_wire.c). */
				void *bytes;
				size_t nbytes;
				struct rtf_program *back = NULL;
				CHECK(rtf_save(prog, &bytes, &nbytes) == 0, "save");
				CHECK(rtf_load(bytes, nbytes, &back, err, sizeof(err)) == 0,
				      "%s: load: %s", text, err);
				free(bytes);
				struct rt_filter *bound = NULL;
				if (back)
					CHECK(rt_filter_bind(&rand_class, back, &bound) == 0, "bind");
				for (int k = 0; k < 4; k++) {
					struct event e;
					rand_event(&e);
					struct fetch_ctx c = { .p = prog, .e = &e };
					bool want = reference(t, &e, local);
					bool got = rtf_eval(prog, fetch, &c);
					if (back) {
						struct fetch_ctx cb = { .p = back, .e = &e };
						CHECK(rtf_eval(back, fetch, &cb) == got, "%s: loaded",
						      text);
					}
					if (bound) {
						CHECK(lib_eval(bound, &e, false) == want,
						      "%s (%s): library, parts", text,
						      local ? "local" : "lttng");
						if (!uses_string(t))
							CHECK(lib_eval(bound, &e, true) == want,
							      "%s (%s): library, flat", text,
							      local ? "local" : "lttng");
					}
					total++;
					trues += want;
					CHECK(got == want,
					      "%s (%s): got %d, want %d; i=%lld,%lld,%lld u0=%llu "
					      "d0=%g s0='%s' s1='%s'", text, local ? "local" : "lttng",
					      got, want, (long long)e.i[0], (long long)e.i[1],
					      (long long)e.i[2], (unsigned long long)e.u0, e.d0, e.s[0],
					      e.s[1]);
				}
				free(bound);
				rtf_free(back);
				rtf_free(prog);
			}
		}
		free_tree(t);
	}
	/* Both outcomes are well represented. */
	CHECK(trues > total / 10 && trues < total * 9 / 10, "%u true of %u", trues, total);
}

/* ---- fixed cases ---- */

struct fixed_event {
	int64_t msg_id, size, flag, eax_reg;
	const char *name;
	int64_t seq;
};

static const struct fixed_event fe = { 23, 4096, 0, 0x240, "request_42", 5 };

static int fixed_fetch(void *arg, uint32_t ref, struct rtf_value *v)
{
	const struct rtf_program *p = arg;
	const struct rtf_ref *r = rtf_ref(p, ref);
	const char *n = r->name;
	if (r->scope == RTF_SCOPE_CTX) {
		if (!strcmp(n, "procname")) {
			v->type = RTF_STRING;
			v->s.p = "lttng-sessiond";
			v->s.len = 14;
			return 0;
		}
		if (!strcmp(n, "cpu_id")) {
			v->type = RTF_INT;
			v->i = 2;
			return 0;
		}
		return -ENOENT;
	}
	if (r->scope == RTF_SCOPE_VAR && !strcmp(n, "cpu")) {
		v->type = RTF_UINT;
		v->u = 3;
		return 0;
	}
	if (r->scope == RTF_SCOPE_APP && !strcmp(n, "my_provider:my_context")) {
		v->type = RTF_DOUBLE;
		v->d = 17.34e9;
		return 0;
	}
	if (!strcmp(n, "state")) {	/* an enum */
		v->type = RTF_INT;
		v->i = 2;
		v->label = "RUNNING";
		return 0;
	}
	static const struct {
		const char *name;
		const int64_t *v;
	} ints[] = { { "msg_id", &fe.msg_id }, { "size", &fe.size }, { "flag", &fe.flag },
		     { "eax_reg", &fe.eax_reg }, { "seq", &fe.seq } };
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
		if (!strcmp(ints[i].name, n)) {
			v->type = RTF_INT;
			v->i = *ints[i].v;
			return 0;
		}
	if (!strcmp(n, "name") || !strcmp(n, "filename")) {
		v->type = RTF_STRING;
		v->s.p = fe.name;
		v->s.len = strlen(fe.name);
		return 0;
	}
	return -ENOENT;
}

static int run(const char *expr, unsigned flags)
{
	static const char *const vars[] = { "cpu", NULL };
	struct rtf_options opt = { .flags = flags, .vars = vars };
	struct rtf_program *p;
	char err[256];
	if (rtf_compile(expr, &opt, &p, err, sizeof(err)) < 0) {
		CHECK(0, "%s: %s", expr, err);
		return -1;
	}
	int r = rtf_eval(p, fixed_fetch, p);
	rtf_free(p);
	return r;
}

static void test_fixed(void)
{
	unit_case = "fixed";
	static const struct {
		const char *expr;
		int want;
	} cases[] = {
		/* lttng-event-rule(7)'s examples and its precedence note */
		{ "2 & 2 == 2", 1 },
		{ "msg_id == 23 && size >= 2048", 1 },
		{ "$ctx.procname == \"lttng*\" && (!flag || poel < 34)", 0 },	/* poel missing */
		{ "$ctx.procname == \"lttng*\" && (!flag || seq < 34)", 1 },
		{ "$app.my_provider:my_context == 17.34e9 || seq >= 14", 1 },
		{ "$ctx.cpu_id == 2 && filename != \"*.log\"", 1 },
		{ "eax_reg & 0xff7 == 0x240 && seq >> 1 <= 0x1234", 1 },
		{ "name == \"req*\"", 1 },
		{ "name == \"request*\"", 1 },
		{ "name == \"*_42\"", 1 },
		{ "name == \"req\"", 0 },
		{ "name == \"request_42\"", 1 },
		{ "name != \"x*\"", 1 },
		{ "name == \"re\\*\"", 0 },
		{ "name =~ \"re?uest_[0-9]*\"", 1 },
		{ "name !~ \"*_4[!2]\"", 1 },
		{ "1 << 64 == 0 || 1", 0 },	/* a bad shift fails the whole expression */
		{ "1 << 63 < 0", 1 },
		{ "~0 == -1", 1 },
		{ "-0x8000000000000000 < 0 && -(-0x8000000000000000) < 0", 1 },
		{ "18446744073709551615 > 0", 1 },
		{ "0x8000000000000000 > 9223372036854775807", 1 },
		{ "name == 3 || 1", 0 },	/* a string against a number */
		{ "1 || name == 3", 1 },	/* not reached */
		{ "(1 < 2) == 1 && (3 < 2) == 0 && 1 < 2 < 3", 1 },
		{ "!missing", 0 },
		{ "!(missing == 1)", 0 },
		{ "1 || missing", 0 },		/* LTTng: named anywhere */
		{ "state == \"RUNNING\" && state == 2 && state != \"DEAD\"", 1 },
		{ "$cpu == 3 && $cpu > 2.5", 1 },
		{ "017 == 15 && 0x1f == 31 && .5 < 1 && 1e3 == 1000 && 2.5e-1 == 0.25", 1 },
		{ "true && !false", 1 },
		{ "'single' == \"single\"", 1 },
		{ "name", 1 },
		{ "+size == 4096 && -size == -4096", 1 },
		{ "-1 >> 63 == 1", 1 },
		{ "5 ^ 3 == 6 && (5 | 3) == 7", 1 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		CHECK(run(cases[i].expr, 0) == cases[i].want, "%s: want %d", cases[i].expr,
		      cases[i].want);
	/* Local errors: the comparison is false, its "!" true. */
	CHECK(run("!missing", RTF_LOCAL_ERRORS) == 1, "!missing local");
	CHECK(run("!(missing == 1)", RTF_LOCAL_ERRORS) == 1, "!(missing == 1) local");
	CHECK(run("1 || missing", RTF_LOCAL_ERRORS) == 1, "1 || missing local");
	CHECK(run("missing == 1 || msg_id == 23", RTF_LOCAL_ERRORS) == 1, "or local");
	CHECK(run("name == 3", RTF_LOCAL_ERRORS) == 0, "mismatch local");
	CHECK(run("!(name == 3)", RTF_LOCAL_ERRORS) == 1, "!mismatch local");
}

static void test_errors(void)
{
	unit_case = "errors";
	static const struct {
		const char *expr, *msg;
	} cases[] = {
		{ "", "filter:1:1: empty expression" },
		{ "   ", "filter:1:4: empty expression" },
		{ "u8 > > 3", "filter:1:6: expected a field name, a number or a string" },
		{ "(u8 > 3", "filter:1:1: unclosed '('" },
		{ "(u8 > 3 x", "filter:1:9: expected ')'" },
		{ "u8 > 3)", "filter:1:7: unmatched ')'" },
		{ "u8 = 3", "filter:1:4: '=' is not an operator (use ==)" },
		{ "a == 1 b", "filter:1:8: unexpected text" },
		{ "a == ", "filter:1:6: unexpected end of the expression" },
		{ "a =~ b", "filter:1:6: =~ and !~ take a string pattern on the right" },
		{ "a == \"abc", "filter:1:6: unterminated string" },
		{ "a == \"a\\qb\"", "filter:1:8: unknown escape" },
		{ "12ab == 3", "filter:1:1: malformed number" },
		{ "1.2.3 == 3", "filter:1:1: malformed number" },
		{ "99999999999999999999 == 1", "filter:1:1: number out of range" },
		{ "$foo == 1", "filter:1:1: unknown variable" },
		{ "$ctx. == 1", "filter:1:6: expected a field name" },
		{ "$app.x == 1", "filter:1:6: expected PROVIDER:NAME" },
		{ "$bad.x == 1", "filter:1:1: unknown scope" },
		{ "a.b == 1", "filter:1:2: fields inside structures" },
		{ "a[3] == 1", "filter:1:2: fields inside structures" },
		{ "a !== 1", "filter:1:5: expected a field name" },
		{ "a == 1 && && b", "filter:1:11: expected a field name" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rtf_program *p = NULL;
		char err[256] = "";
		int r = rtf_compile(cases[i].expr, NULL, &p, err, sizeof(err));
		CHECK(r == -EINVAL && !p, "%s compiled", cases[i].expr);
		CHECK(!strncmp(err, cases[i].msg, strlen(cases[i].msg)), "'%s': got '%s', want '%s'",
		      cases[i].expr, err, cases[i].msg);
	}
}

static void test_limits(void)
{
	unit_case = "limits";
	char err[256];
	struct rtf_program *p;
	size_t n = 300000;
	char *s = malloc(n * 12 + 16), *q;
	/* As deep as allowed, and one more. */
	for (int extra = 0; extra < 2; extra++) {
		int d = RTF_MAX_DEPTH + extra;
		q = s;
		for (int i = 0; i < d; i++)
			*q++ = i % 2 ? '(' : '!';
		q += sprintf(q, "seq == 5");
		for (int i = 0; i < d; i++)
			if (i % 2)
				*q++ = ')';
		*q = '\0';
		int r = rtf_compile(s, NULL, &p, err, sizeof(err));
		if (!extra) {
			CHECK(r == 0, "depth %d: %s", d, err);
			if (!r) {
				CHECK(rtf_eval(p, fixed_fetch, p) == 1, "depth %d", d);
				rtf_free(p);
			}
		} else {
			char want[64];
			snprintf(want, sizeof(want), "filter:1:%d: nests deeper than %d", d,
				 RTF_MAX_DEPTH);
			CHECK(r == -EINVAL && !strcmp(err, want), "%s", err);
		}
	}
	/* A long || chain runs in a loop (a 2-value stack). */
	q = s;
	for (size_t i = 0; i < 100000; i++)
		q += sprintf(q, "%sseq == %zu", i ? " || " : "", 100000 - i);
	CHECK(rtf_compile(s, NULL, &p, err, sizeof(err)) == 0, "long chain: %s", err);
	CHECK(rtf_eval(p, fixed_fetch, p) == 1, "long chain");
	rtf_free(p);
	/* Values pending at once are bounded. */
	q = s;
	for (int i = 0; i < RTF_MAX_STACK + 1; i++)
		q += sprintf(q, "seq == (");
	q += sprintf(q, "1");
	for (int i = 0; i < RTF_MAX_STACK + 1; i++)
		*q++ = ')';
	*q = '\0';
	CHECK(rtf_compile(s, NULL, &p, err, sizeof(err)) == -EINVAL && strstr(err, "too complex"),
	      "stack: %s", err);
	/* Distinct fields are bounded. */
	q = s;
	for (int i = 0; i <= RTF_MAX_REFS; i++)
		q += sprintf(q, "%sf%d == 1", i ? " && " : "", i);
	CHECK(rtf_compile(s, NULL, &p, err, sizeof(err)) == -EINVAL &&
	      strstr(err, "different fields"), "refs: %s", err);
	/* Names and strings fit the wire format (filter_wire.c). */
	memset(s, 'f', 256);
	strcpy(s + 256, " == 1");
	CHECK(rtf_compile(s, NULL, &p, err, sizeof(err)) == -EINVAL &&
	      !strcmp(err, "filter:1:1: name longer than 255 bytes"), "name: %s", err);
	s[0] = '"';
	memset(s + 1, 'x', RTF_WIRE_STR_MAX + 1);
	strcpy(s + RTF_WIRE_STR_MAX + 2, "\" == f");
	CHECK(rtf_compile(s, NULL, &p, err, sizeof(err)) == -EINVAL &&
	      strstr(err, "filter:1:1: string longer than"), "string: %s", err);
	strcpy(s + RTF_WIRE_STR_MAX + 1, "\" == f");	/* one byte shorter */
	p = NULL;
	CHECK(rtf_compile(s, NULL, &p, err, sizeof(err)) == 0, "longest string: %s", err);
	rtf_free(p);
	free(s);
}

/* Random text: compiled or refused with a column, never a crash; what
 * compiles evaluates. */
static void test_garbage(void)
{
	unit_case = "garbage";
	static const char alpha[] = "ab01x.$ctx\"'\\*?[]()!~-+<>=&|^ \t";
	char text[48], err[256];
	unsigned ok = 0;
	for (int round = 0; round < 200000; round++) {
		size_t n = pick(sizeof(text) - 1);
		for (size_t i = 0; i < n; i++)
			text[i] = alpha[pick(sizeof(alpha) - 1)];
		text[n] = '\0';
		struct rtf_program *p;
		int r = rtf_compile(text, NULL, &p, err, sizeof(err));
		if (r == 0) {
			ok++;
			rtf_eval(p, fixed_fetch, p);
			rtf_free(p);
		} else {
			CHECK(r == -EINVAL && !strncmp(err, "filter:1:", 9), "'%s': %d %s", text, r, err);
		}
	}
	CHECK(ok > 100, "%u compiled", ok);
}

/* ---- the wire format, written here from its documented layout ---- */

struct wire {
	unsigned char b[512];
	size_t n;
};

static void w_bytes(struct wire *w, const void *p, size_t n)
{
	memcpy(w->b + w->n, p, n);
	w->n += n;
}

static void w_u32(struct wire *w, uint32_t v)
{
	w_bytes(w, &v, 4);
}

static void w_header(struct wire *w, uint32_t code, uint32_t consts, uint32_t refs,
		     uint32_t stack)
{
	w->n = 0;
	w_u32(w, 0x31465452u);
	w_u32(w, 0);
	w_u32(w, code);
	w_u32(w, consts);
	w_u32(w, refs);
	w_u32(w, stack);
}

static void w_insn(struct wire *w, uint8_t op, uint32_t arg)
{
	uint8_t h[4] = { op, 0, 0, 0 };
	w_bytes(w, h, 4);
	w_u32(w, arg);
}

static void w_int(struct wire *w, int64_t v)
{
	uint8_t h[4] = { 1 /* RTF_INT */, 0, 0, 0 };
	w_bytes(w, h, 4);
	w_u32(w, 0);
	w_bytes(w, &v, 8);
}

static void w_ref(struct wire *w, const char *name)
{
	uint8_t h[2] = { 0 /* RTF_SCOPE_FIELD */, (uint8_t)strlen(name) };
	w_bytes(w, h, 2);
	w_bytes(w, name, strlen(name));
}

/* Operation numbers as filter_internal.h has them. */
enum { W_CONST = 0, W_REF = 1, W_NOT = 4, W_EQ = 15, W_AND = 19, W_AND_END = 21 };

static int w_load(const struct wire *w, bool *result)
{
	struct rtf_program *p;
	char err[256];
	int r = rtf_load(w->b, w->n, &p, err, sizeof(err));
	if (r == 0) {
		*result = rtf_eval(p, fixed_fetch, p);
		rtf_free(p);
	}
	return r;
}

static void test_wire(void)
{
	unit_case = "wire";
	struct wire w;
	bool res = false;
	/* seq == 5 && !(msg_id == 24), by hand: loads and runs. */
	w_header(&w, 9, 2, 2, 2);
	w_insn(&w, W_REF, 0);
	w_insn(&w, W_CONST, 0);
	w_insn(&w, W_EQ, 0);
	w_insn(&w, W_AND, 9);
	w_insn(&w, W_REF, 1);
	w_insn(&w, W_CONST, 1);
	w_insn(&w, W_EQ, 0);
	w_insn(&w, W_NOT, 0);
	w_insn(&w, W_AND_END, 0);
	w_int(&w, 5);
	w_int(&w, 24);
	w_ref(&w, "seq");
	w_ref(&w, "msg_id");
	CHECK(w_load(&w, &res) == 0 && res, "by hand");
	struct wire good = w;
	/* Each damage is refused. */
	w.b[0] ^= 1;
	CHECK(w_load(&w, &res) == -EPROTO, "magic");
	w = good;
	w.n--;
	CHECK(w_load(&w, &res) == -EPROTO, "truncated");
	w = good;
	w.b[w.n++] = 0;
	CHECK(w_load(&w, &res) == -EPROTO, "trailing byte");
	w = good;
	memcpy(w.b + 24 + 3 * 8 + 4, &(uint32_t){ 3 }, 4);	/* AND jumps backward */
	CHECK(w_load(&w, &res) == -EPROTO, "backward jump");
	w = good;
	memcpy(w.b + 24 + 3 * 8 + 4, &(uint32_t){ 8 }, 4);	/* not past its AND_END */
	CHECK(w_load(&w, &res) == -EPROTO, "jump inside");
	w = good;
	memcpy(w.b + 24 + 8 + 4, &(uint32_t){ 2 }, 4);		/* constant 2 of 2 */
	CHECK(w_load(&w, &res) == -EPROTO, "constant index");
	w = good;
	memcpy(w.b + 24 + 4, &(uint32_t){ 2 }, 4);		/* reference 2 of 2 */
	CHECK(w_load(&w, &res) == -EPROTO, "reference index");
	w = good;
	memcpy(w.b + 20, &(uint32_t){ 1 }, 4);			/* max_stack 1 */
	CHECK(w_load(&w, &res) == -EPROTO, "max_stack");
	w = good;
	w.b[24] = 99;						/* unknown operation */
	CHECK(w_load(&w, &res) == -EPROTO, "operation");
	w = good;
	w.b[24 + 2 * 8] = W_CONST;	/* EQ -> CONST: two values left, then AND on 3 */
	CHECK(w_load(&w, &res) == -EPROTO, "stack left");
	/* An operator with nothing to pop. */
	w_header(&w, 1, 0, 0, 1);
	w_insn(&w, W_EQ, 0);
	CHECK(w_load(&w, &res) == -EPROTO, "underflow");
	/* Random damage to compiled programs: refused, or loaded and run
	 * (inside its bounds: the sanitizer builds check that). */
	static const char *const exprs[] = {
		"seq == 5 && name == \"req*\" || !(msg_id < 3) && size & 0xff == 0",
		"$ctx.procname =~ \"lt[a-z]*\" || -seq << 2 >= 0x10 && ~flag != 0.5",
	};
	unsigned loaded = 0;
	for (size_t e = 0; e < sizeof(exprs) / sizeof(exprs[0]); e++) {
		struct rtf_program *p;
		char err[256];
		void *bytes;
		size_t n;
		if (!CHECK(rtf_compile(exprs[e], NULL, &p, err, sizeof(err)) == 0, "%s", err))
			continue;
		CHECK(rtf_save(p, &bytes, &n) == 0, "save");
		rtf_free(p);
		unsigned char *copy = malloc(n);
		for (int round = 0; round < 20000; round++) {
			size_t len = n;
			memcpy(copy, bytes, n);
			if (pick(4) == 0)
				len = pick((unsigned)n);
			for (unsigned k = 1 + pick(3); k; k--)
				copy[pick((unsigned)n)] ^= (unsigned char)(1u << pick(8));
			struct rtf_program *q;
			int r = rtf_load(copy, len, &q, err, sizeof(err));
			CHECK(r == 0 || r == -EPROTO, "load: %d", r);
			if (r == 0) {
				loaded++;
				rtf_eval(q, fixed_fetch, q);
				rtf_free(q);
			}
		}
		free(copy);
		free(bytes);
	}
	CHECK(loaded > 0, "some damaged programs still load (constants)");
}

/* ---- ftrace ---- */

static int ft_field(void *arg, const char *name, struct rtf_ftrace_field *out)
{
	(void)arg;
	static const struct {
		const char *lttng, *ftrace;
		enum rtf_ftrace_kind kind;
		int64_t offset;
	} f[] = {
		{ "prev_tid", "prev_pid", RTF_FTRACE_INT, 0 },
		{ "next_tid", "next_pid", RTF_FTRACE_INT, 0 },
		{ "prev_comm", "prev_comm", RTF_FTRACE_STRING, 0 },
		{ "prev_state", "prev_state", RTF_FTRACE_INT, 0 },
		{ "prev_prio", "prev_prio", RTF_FTRACE_INT, 100 },
	};
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (!strcmp(f[i].lttng, name)) {
			*out = (struct rtf_ftrace_field){ .name = f[i].ftrace, .kind = f[i].kind,
							  .offset = f[i].offset };
			return 0;
		}
	return -ENOENT;
}

static void test_ftrace(void)
{
	unit_case = "ftrace";
	static const struct {
		const char *expr, *want;	/* want NULL: missing (1); "E:..." an error */
	} cases[] = {
		{ "prev_tid == 1", "prev_pid == 1" },
		/* A rebased field: the constant is rebased back. */
		{ "prev_prio == 20", "prev_prio == 120" },
		{ "-101 < prev_prio", "prev_prio > -1" },
		{ "prev_prio", "prev_prio != 100" },
		{ "prev_prio == 18446744073709551615", "E:out of range" },
		{ "prev_prio & 1", "E:rebases" },
		{ "5 < prev_tid", "prev_pid > 5" },
		{ "prev_tid > -1 && !(next_tid == 2)", "(prev_pid > -1) && (!(next_pid == 2))" },
		{ "prev_tid == 1 || next_tid != 2 && prev_tid",
		  "(prev_pid == 1) || ((next_pid != 2) && (prev_pid != 0))" },
		{ "$ctx.tid == 7 && $ctx.procname == \"bash\" && $ctx.cpu_id >= 1",
		  "((common_pid == 7) && (COMM == \"bash\")) && (CPU >= 1)" },
		{ "prev_comm == \"ba*\"", "prev_comm ~ \"ba*\"" },
		{ "prev_comm != \"*a\\*?\"", "!(prev_comm ~ \"*a[*][?]\")" },
		{ "prev_comm == \"a?[b\"", "prev_comm == \"a?[b\"" },
		{ "prev_comm =~ \"k[0-9]?\"", "prev_comm ~ \"k[0-9]?\"" },
		{ "prev_comm !~ \"k*\"", "!(prev_comm ~ \"k*\")" },
		{ "prev_comm == \"1sle*\"", "prev_comm ~ \"[1]sle*\"" },
		{ "prev_comm =~ \"7\"", "prev_comm ~ \"[7]\"" },
		{ "prev_comm == \"a1*\"", "prev_comm ~ \"a1*\"" },
		{ "prev_comm == \"1x\"", "prev_comm == \"1x\"" },
		{ "prev_comm == \"!zzz*\"",
		  "(prev_comm ~ \"?zzz*\") && !(prev_comm ~ \"[!!]zzz*\")" },
		{ "prev_comm != '!\"*'",
		  "!((prev_comm ~ '?\"*') && !(prev_comm ~ '[!!]\"*'))" },
		{ "prev_comm == \"!1*\"",
		  "(prev_comm ~ \"?1*\") && !(prev_comm ~ \"[!!]1*\")" },
		{ "prev_comm == 'say \"hi\"'", "prev_comm == 'say \"hi\"'" },
		{ "prev_state & 3", "prev_state & 3" },
		{ "prev_state & 0x4 == 0", "!(prev_state & 4)" },
		{ "0 != (prev_state & 2)", "prev_state & 2" },
		{ "prev_tid == 18446744073709551615", "prev_pid == 18446744073709551615" },
		{ "prev_tid == -(-3)", "prev_pid == 3" },
		{ "no_such == 1", NULL },
		{ "prev_tid == 1 || no_such == 1", NULL },
		{ "prev_tid == 1.5", "E:reals" },
		{ "prev_tid == next_tid", "E:between a field and a constant" },
		{ "prev_tid << 2 == 4", "E:'<<'" },
		{ "prev_tid ^ 1", "E:'^'" },
		{ "prev_state & 3 == 3", "E:'&' only tested against 0" },
		{ "prev_comm == 3", "E:field prev_comm is a string" },
		{ "prev_tid == \"x\"", "E:field prev_pid is an integer" },
		{ "prev_comm < \"x\"", "E:strings compare only" },
		{ "1 == 1", "E:between a field and a constant" },
		{ "1", "E:a constant where a condition" },
		{ "$ctx.prio == 1", "E:no context $ctx.prio" },
		{ "$app.a:b == 1", "E:application's context" },
		{ "prev_comm == \"a\\\\*\"", "E:backslash" },
		{ "prev_comm == 'a\"b\\'c'", "E:both quote" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rtf_program *p;
		char err[256] = "", *out = (char *)"unset";
		if (!CHECK(rtf_compile(cases[i].expr, NULL, &p, err, sizeof(err)) == 0, "%s: %s",
			   cases[i].expr, err))
			continue;
		int r = rtf_to_ftrace(p, ft_field, NULL, &out, err, sizeof(err));
		const char *w = cases[i].want;
		if (!w)
			CHECK(r == 1 && !out, "%s: %d", cases[i].expr, r);
		else if (!strncmp(w, "E:", 2))
			CHECK(r == -EINVAL && !out && strstr(err, w + 2), "%s: %d '%s'",
			      cases[i].expr, r, err);
		else
			CHECK(r == 0 && out && !strcmp(out, w), "%s: %d '%s' want '%s'",
			      cases[i].expr, r, r == 0 ? out : err, w);
		if (r == 0)
			free(out);
		rtf_free(p);
	}
}

/* One comparison of a field with a constant takes rtf_simple's path in
 * the library (no interpreter): the same result as rtf_eval, for every
 * comparison operator, both operand orders, each field kind against
 * integers (edge values, unsigned past INT64_MAX), reals and strings
 * (globs too), on random events. */
static void test_simple(void)
{
	unit_case = "simple comparisons";
	static const char *const ops[] = { "<", "<=", ">", ">=", "==", "!=", "=~", "!~" };
	static const char *const fields[] = { "i0", "u0", "d0", "s0", "m" };
	static const char *const consts[] = { "0", "1", "3", "100", "9223372036854775807",
					      "9223372036854775808", "18446744073709551615",
					      "0.5", "1e300", "\"ab\"", "\"a*\"", "\"\"", "\"[ab]?\"" };
	char text[1024], err[256];
	unsigned simple = 0;
	for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++)
		for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++)
			for (size_t k = 0; k < sizeof(consts) / sizeof(consts[0]); k++)
				for (int order = 0; order < 2; order++) {
					/* =~ takes a string pattern, on the right */
					if (o >= 6 && (order || consts[k][0] != '"'))
						continue;
					snprintf(text, sizeof(text), "%s %s %s",
						 order ? consts[k] : fields[f], ops[o],
						 order ? fields[f] : consts[k]);
					struct rtf_program *prog;
					if (!CHECK(rtf_compile(text, NULL, &prog, err, sizeof(err)) == 0,
						   "%s: %s", text, err))
						continue;
					struct rt_filter *b;
					CHECK(rt_filter_bind(&rand_class, prog, &b) == 0, "bind");
					simple += b->simple;
					CHECK(b->simple, "%s: not simple", text);
					for (int n = 0; n < 16; n++) {
						struct event e;
						rand_event(&e);
						if (n < 3)
							e.u0 = n == 0 ? UINT64_MAX : n == 1 ? (uint64_t)INT64_MAX + 1
												  : (uint64_t)INT64_MAX;
						struct fetch_ctx c = { .p = prog, .e = &e };
						bool want = rtf_eval(prog, fetch, &c);
						CHECK(lib_eval(b, &e, false) == want, "%s: parts", text);
						if (!uses_string_name(fields[f]))
							CHECK(lib_eval(b, &e, true) == want, "%s: flat", text);
					}
					free(b);
					rtf_free(prog);
				}
	CHECK(simple > 500, "%u simple programs", simple);
	/* Chains of 2 to RTF_SIMPLE_MAX such comparisons, all && or all ||,
	 * missing fields and type errors among them, in both error modes. */
	static const char *const cmp[] = { "<", "<=", ">", ">=", "==", "!=" };
	static const char *const lits[] = { "0", "3", "100", "9223372036854775808", "0.5",
					    "\"ab\"", "\"a*\"" };
	for (int round = 0; round < 4000; round++) {
		unsigned n = 2 + pick(RTF_SIMPLE_MAX - 1);
		bool any = pick(2), local = pick(2);
		char *w = text;
		for (unsigned i = 0; i < n; i++)
			w += sprintf(w, "%s%s %s %s", i ? (any ? " || " : " && ") : "",
				     fields[pick(5)], cmp[pick(6)], lits[pick(7)]);
		struct rtf_options opt = { .flags = local ? RTF_LOCAL_ERRORS : 0 };
		struct rtf_program *prog;
		if (!CHECK(rtf_compile(text, &opt, &prog, err, sizeof(err)) == 0, "%s: %s", text,
			   err))
			continue;
		struct rt_filter *b;
		CHECK(rt_filter_bind(&rand_class, prog, &b) == 0, "bind");
		CHECK(b->simple, "%s: not simple", text);
		for (int k = 0; k < 8; k++) {
			struct event e;
			rand_event(&e);
			struct fetch_ctx c = { .p = prog, .e = &e };
			CHECK(lib_eval(b, &e, false) == rtf_eval(prog, fetch, &c), "%s (%s)", text,
			      local ? "local" : "lttng");
		}
		free(b);
		rtf_free(prog);
	}
	/* Not simple: two comparisons, a negated constant, a ref on both
	 * sides, an unused ref a hostile program could list. */
	static const char *const not_simple[] = { "i0 > 1 && i0 < 5 || u0 == 1", "i0 > -1",
						  "i0 == i1", "!(i0 == 1)", "i0",
						  "i0 > 1 && (i1 < 5 && u0 == 1)",
						  "a==1&&b==1&&c==1&&d==1&&e==1&&f==1&&g==1&&h==1&&i==1" };
	for (size_t i = 0; i < sizeof(not_simple) / sizeof(not_simple[0]); i++) {
		struct rtf_program *prog;
		struct rtf_simple sm;
		if (CHECK(rtf_compile(not_simple[i], NULL, &prog, err, sizeof(err)) == 0, "%s",
			  err))
			CHECK(!rtf_simple(prog, &sm), "%s: simple", not_simple[i]);
		rtf_free(prog);
	}
}

/* One expression on one event of class c through the fetch path. */
static bool lib_run(const struct rt_event_class *c, const char *expr,
		    const struct rt_filter_event *ev)
{
	char err[256];
	struct rtf_program *prog, *back = NULL;
	struct rt_filter *f = NULL;
	void *bytes;
	size_t n;
	bool r = false;
	if (!CHECK(rtf_compile(expr, NULL, &prog, err, sizeof(err)) == 0, "%s: %s", expr, err))
		return false;
	/* As a daemon sends it: saved, loaded. */
	if (CHECK(rtf_save(prog, &bytes, &n) == 0, "save") &&
	    CHECK(rtf_load(bytes, n, &back, err, sizeof(err)) == 0, "load: %s", err) &&
	    CHECK(rt_filter_bind(c, back, &f) == 0, "bind"))
		r = rt_filter_pass(f, ev);
	free(f);
	rtf_free(back);
	rtf_free(prog);
	free(bytes);
	return r;
}

static void test_fetch_types(void)
{
	unit_case = "fetch types";
	static struct rt_field_desc fd[] = {
		{ "a", RT_TYPE_S8 }, { "b", RT_TYPE_U8 }, { "c", RT_TYPE_S16 },
		{ "d", RT_TYPE_U16 }, { "e", RT_TYPE_S32 }, { "f", RT_TYPE_U32 },
		{ "g", RT_TYPE_FLOAT }, { "h", RT_TYPE_BOOL }, { "p", RT_TYPE_POINTER },
		{ "q", RT_TYPE_U64 }, { "x", RT_TYPE_DOUBLE },
	};
	static char *names[] = { "a", "b", "c", "d", "e", "f", "g", "h", "p", "q", "x" };
	struct rt_event_class fixed = { .nr_fields = 11,
					.fields = fd,
					.field_names = names };
	int8_t a = -5;
	uint8_t b = 200;
	int16_t c = -30000;
	uint16_t d = 60000;
	int32_t e = -2000000000;
	uint32_t f = 4000000000u;
	float g = 2.5f;
	_Bool h = 1;
	void *ptr = (void *)0x1000;
	uint64_t q = UINT64_MAX;
	double x = -0.25;
	char flat[64], *w = flat;
#define PUT(v) (memcpy(w, &(v), sizeof(v)), w += sizeof(v))
	PUT(a), PUT(b), PUT(c), PUT(d), PUT(e), PUT(f), PUT(g), PUT(h), PUT(ptr), PUT(q), PUT(x);
#undef PUT
	struct rt_part parts[11] = {
		{ &a, 1, 0 }, { &b, 1, 0 }, { &c, 2, 0 }, { &d, 2, 0 }, { &e, 4, 0 },
		{ &f, 4, 0 }, { &g, 4, 0 }, { &h, 1, 0 }, { &ptr, 8, 0 }, { &q, 8, 0 },
		{ &x, 8, 0 },
	};
	struct rt_filter_event evs[2] = {
		{ .flat = flat, .size = (uint64_t)(w - flat), .ip = 0x1234 },
		{ .parts = parts, .nr = 11, .ip = 0x1234 },
	};
	static const char *const yes[] = {
		"a == -5", "b == 200", "c == -30000", "d == 60000", "e == -2000000000",
		"f == 4000000000", "g == 2.5", "h == 1", "h == \"true\"", "h != \"false\"",
		"p == 0x1000", "q == 0xffffffffffffffff", "q > 5", "x < 0 && x > -1",
		"$payload.a < b", "$ctx.vpid == 4242", "$ctx.vtid == -4343", "$ctx.prio == 20",
		"$ctx.procname == \"worker-*\"", "$ctx.procname == \"worker-1\"",
		"$ctx.hostname == \"filterhost\"", "$ctx.cpu_id >= 0 && $ctx.cpu_id < 65536",
		"$ctx.ip == 0x1234",
	};
	/* A missing field, context or $app anywhere: false (LTTng). */
	static const char *const no[] = {
		"a == 5", "nosuch == 0", "!(nosuch == 0)", "a == -5 || nosuch == 0",
		"$ctx.nosuch == 0 || 1", "$app.p:n == 1 || 1", "!$payload.zz",
		"$ctx.procname == 1 || 0",
	};
	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
			CHECK(lib_run(&fixed, yes[i], &evs[k]), "%s (%s): false", yes[i],
			      k ? "parts" : "flat");
		for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
			CHECK(!lib_run(&fixed, no[i], &evs[k]), "%s (%s): true", no[i],
			      k ? "parts" : "flat");
	}
	/* A flat payload shorter than the class says, a part of the wrong
	 * size or kind: the field is missing, nothing read past them. */
	struct rt_filter_event shortev = { .flat = flat, .size = 10 };
	CHECK(lib_run(&fixed, "a == -5", &shortev), "short: a");
	CHECK(!lib_run(&fixed, "x < 0", &shortev), "short: x");
	struct rt_part bad[11];
	memcpy(bad, parts, sizeof(parts));
	bad[4].size = 8;
	bad[5].kind = RT_PART_STRING;
	struct rt_filter_event badev = { .parts = bad, .nr = 3 };
	CHECK(!lib_run(&fixed, "e == -2000000000", &badev), "bad size");
	badev.nr = 11;
	CHECK(!lib_run(&fixed, "e == -2000000000", &badev), "bad size");
	CHECK(!lib_run(&fixed, "f == 4000000000", &badev), "bad kind");
	CHECK(lib_run(&fixed, "d == 60000", &badev), "good part");

	/* Strings and byte sequences (rt__record_parts). */
	static struct rt_field_desc sd[] = {
		{ "n", RT_TYPE_STRING }, { "raw", RT_TYPE_BYTES }, { "k", RT_TYPE_S32 },
	};
	static char *snames[] = { "n", "raw", "k" };
	struct rt_event_class strs = { .nr_fields = 3, .fields = sd,
				       .field_names = snames };
	const char *n = "req42";
	struct rt_bytes raw = { "\x01\x02", 2 };
	int32_t kv = 7;
	struct rt_part sp[3] = {
		{ &n, 6, RT_PART_STRING }, { &raw, 6, RT_PART_BYTES }, { &kv, 4, 0 },
	};
	struct rt_filter_event sev = { .parts = sp, .nr = 3 };
	CHECK(lib_run(&strs, "n == \"req*\" && k == 7", &sev), "string glob");
	CHECK(lib_run(&strs, "n == \"req42\" && n != \"req4\" && n > \"req\"", &sev), "string");
	CHECK(!lib_run(&strs, "raw == 1 || k == 7", &sev), "a byte sequence is missing");
	CHECK(!lib_run(&strs, "n == 1 || k == 7", &sev), "string against a number");
	/* A string that shrank since its call site sized it: the bytes up
	 * to its NUL (the trace pads the rest); NULL is "(null)". */
	const char *shrunk = "req";
	sp[0].ptr = &shrunk;
	CHECK(lib_run(&strs, "n == \"req\"", &sev), "shrunk string");
	const char *grown = "req42-and-more";
	sp[0].ptr = &grown;
	CHECK(lib_run(&strs, "n == \"req42\"", &sev), "grown string: cut at its size");
	const char *null = NULL;
	sp[0].ptr = &null;
	sp[0].size = 7;
	CHECK(lib_run(&strs, "n == \"(null)\"", &sev), "NULL string");
	/* A flat payload reaches no field after a string. */
	int32_t k7 = 7;
	struct rt_filter_event sflat = { .flat = (const char *)&k7, .size = 4 };
	CHECK(!lib_run(&strs, "k == 7", &sflat), "flat past a string");
}

int main(void)
{
	test_fixed();
	test_errors();
	test_limits();
	test_garbage();
	test_wire();
	test_ftrace();
	test_fetch_types();
	test_simple();
	test_random();
	return unit_finish();
}
