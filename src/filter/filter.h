/*
 * filter.h - LTTng's filter expression language (lttng-event-rule(7),
 * "Event payload and context filter condition"), compiled once into a flat
 * program and evaluated per event without allocation. docs/filters.md
 * describes the language for users.
 *
 *   expr    := expr "||" expr | expr "&&" expr | expr EQ expr | expr REL expr
 *            | expr "|" expr | expr "^" expr | expr "&" expr
 *            | expr ("<<" | ">>") expr | ("!" | "~" | "-" | "+") expr
 *            | "(" expr ")" | operand
 *   EQ      := "==" | "!=" | "=~" | "!~"          REL := "<" | "<=" | ">" | ">="
 *   operand := NAME | "$ctx." NAME | "$app." PROVIDER ":" NAME
 *            | "$payload." NAME | "$" VAR | INTEGER | REAL | STRING
 *            | "true" | "false"
 *
 * Precedence is LTTng's, loosest first: ||, &&, == != =~ !~, < <= > >=,
 * |, ^, &, << >>, unary (so `2 & 2 == 2` is true, unlike in C). Integers
 * are 64-bit (decimal, 0x hex, 0 octal); a bitwise operator works on their
 * unsigned bits and gives a signed result; a shift by less than 0 or more
 * than 63 is an error. Integers compare exactly by value (signed against
 * unsigned too), with a REAL as doubles. Strings compare byte-wise;
 * `==`/`!=` with a string literal holding an unescaped `*` is a glob
 * (`*` matches anything, `\*` is a star). `=~` and `!~` (an extension)
 * match against a shell pattern (* ? [...]) on the right. In a string
 * literal `\X` is X for \ " ' * ? [ and \n \t \r are what they are in C.
 * Extensions over LTTng: '...' strings, true/false, $payload.NAME, `$VAR`
 * (the caller's list of variables), =~ and !~, an enum compared with a
 * string compares its label.
 *
 * A NAME, $ctx.NAME, $app.P:N, $payload.NAME or $VAR is a reference
 * ("ref"): the program lists its distinct refs (rtf_nr_refs, rtf_ref);
 * the caller says how to read each for an event (rtf_fetch_fn).
 *
 * Errors, missing fields (LTTng's rule): an event that lacks a field the
 * expression names anywhere, a comparison between a string and a number,
 * a bitwise operator on a string or a real, a bad shift: the whole
 * expression is false for that event. With RTF_LOCAL_ERRORS (what `view`
 * uses) the comparison, or truth test, where it happens is false instead,
 * so that `!(f < 0)` holds for an event without f.
 *
 * Limits: RTF_MAX_DEPTH nested "(" or unary operators, RTF_MAX_STACK
 * values evaluated at once, RTF_MAX_REFS distinct references,
 * RTF_MAX_INSNS instructions. The parser recurses once per "(" or unary
 * operator (bounded), the evaluation not at all.
 *
 * Errors: negative errno. Parse errors are -EINVAL with a message
 * "filter:1:COLUMN: what" in the caller's buffer (column of the offending
 * byte, from 1).
 *
 * Concurrency: a compiled program is immutable; any number of threads may
 * evaluate it at once. rtf_eval takes no lock, makes no system call,
 * allocates nothing, does not recurse and is async-signal-safe when the
 * caller's fetch function is. Its stack (gcc -O2, x86-64): 1,280 bytes
 * for a program with at most 16 refs and 16 values pending (most
 * filters), 4,720 bytes more for a larger one (up to RTF_MAX_REFS and
 * RTF_MAX_STACK), and up to 232 bytes for what it calls, besides the
 * fetch function. Compiling, translating and freeing
 * allocate and are for one thread at a time per program.
 */
#ifndef RINGTRACE_FILTER_H
#define RINGTRACE_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RTF_MAX_DEPTH 256
#define RTF_MAX_STACK 64
#define RTF_MAX_REFS 64
#define RTF_MAX_INSNS (1u << 20)

/* Where a reference reads. */
enum rtf_scope {
	RTF_SCOPE_FIELD,	/* NAME: a payload field (LTTng's meaning) */
	RTF_SCOPE_PAYLOAD,	/* $payload.NAME: a payload field, explicitly */
	RTF_SCOPE_CTX,		/* $ctx.NAME: a context field */
	RTF_SCOPE_APP,		/* $app.PROVIDER:NAME: an application context */
	RTF_SCOPE_VAR,		/* $NAME: one of the caller's variables */
};

struct rtf_ref {
	enum rtf_scope scope;
	const char *name;	/* NUL-terminated; "PROVIDER:NAME" for $app */
};

/* A value as the fetch function gives it. */
enum rtf_type {
	RTF_NONE,	/* internal: missing or an error */
	RTF_INT,
	RTF_UINT,
	RTF_DOUBLE,
	RTF_STRING,
};

struct rtf_value {
	enum rtf_type type;
	bool escaped;		/* internal: a literal, where '\' quotes the next byte */
	bool glob;		/* internal: a literal holding a `*` it does not quote */
	const char *label;	/* an enum's label (NUL-terminated), or NULL */
	union {
		int64_t i;
		uint64_t u;
		double d;
		struct {
			const char *p;	/* need not be NUL-terminated */
			size_t len;
		} s;
	};
};

/* Read ref number `ref` (0 .. rtf_nr_refs - 1) of the event `arg` points
 * at into *v: 0, or negative when the event has no such field. Called once
 * per ref and evaluation, before the expression runs. */
typedef int (*rtf_fetch_fn)(void *arg, uint32_t ref, struct rtf_value *v);

#define RTF_LOCAL_ERRORS 1u	/* see "Errors, missing fields" above */

struct rtf_options {
	unsigned flags;			/* RTF_LOCAL_ERRORS */
	const char *const *vars;	/* the $VAR names allowed, NULL-terminated; NULL: none */
};

struct rtf_program;

/*
 * Compile `expr` (NUL-terminated) with `opt` (NULL: LTTng's language, no
 * $VAR). Returns 0 and *out, -EINVAL with "filter:1:COLUMN: what" in err,
 * or -ENOMEM.
 */
int rtf_compile(const char *expr, const struct rtf_options *opt, struct rtf_program **out,
		char *err, size_t errlen);
void rtf_free(struct rtf_program *p);

uint32_t rtf_nr_refs(const struct rtf_program *p);
/* Its instructions: at most what one evaluation runs. */
uint32_t rtf_nr_insns(const struct rtf_program *p);
const struct rtf_ref *rtf_ref(const struct rtf_program *p, uint32_t i);

/* Whether the event that fetch(arg, ...) reads passes the filter. */
bool rtf_eval(const struct rtf_program *p, rtf_fetch_fn fetch, void *arg);

/*
 * The commonest filters, comparisons of a reference with a constant
 * (`seq > 100`, `"req*" == name`), alone or joined by && only or by ||
 * only (`a > 1 && b < 5 && c != 0`), without the interpreter: rtf_simple
 * says whether p is exactly that and fills *s (valid while p is);
 * rtf_simple_eval(s, v) is then what rtf_eval(p, ...) gives for an event
 * whose ref i reads v[i] (values as the fetch function gives them,
 * RTF_NONE: missing; s->nr_refs <= RTF_SIMPLE_MAX of them). Same semantics (a missing ref
 * anywhere, or an error met, makes the whole expression false but with
 * RTF_LOCAL_ERRORS), same concurrency contract as rtf_eval.
 */
#define RTF_SIMPLE_MAX 8
struct rtf_simple {
	uint32_t n;			/* clauses, 1..RTF_SIMPLE_MAX */
	uint32_t nr_refs;		/* rtf_nr_refs(p) */
	bool any;			/* joined by || (else by &&) */
	bool local;			/* RTF_LOCAL_ERRORS */
	struct rtf_clause {
		uint32_t ref;
		uint8_t op;		/* internal (filter_internal.h) */
		bool ref_left;		/* REF OP CONST, else CONST OP REF */
		const struct rtf_value *k;	/* the constant, in p */
	} c[RTF_SIMPLE_MAX];
};
bool rtf_simple(const struct rtf_program *p, struct rtf_simple *s);
bool rtf_simple_eval(const struct rtf_simple *s, const struct rtf_value *v);

/*
 * A compiled program as bytes for another process of this machine (the
 * layout is in filter_wire.c), and back. rtf_save: 0 and *buf
 * (malloc'ed), *len, or -ENOMEM. rtf_load checks the bytes as untrusted
 * input (every field, every index, the stack discipline, so that rtf_eval
 * on the result stays in bounds): 0 and *out, -EPROTO with a message in
 * err, or -ENOMEM.
 */
#define RTF_WIRE_MAGIC 0x31465452u	/* "RTF1" */
#define RTF_WIRE_STR_MAX 65536
int rtf_save(const struct rtf_program *p, void **buf, size_t *len);
int rtf_load(const void *buf, size_t len, struct rtf_program **out, char *err, size_t errlen);

/*
 * Translation into ftrace's filter syntax (events/SYSTEM/EVENT/filter),
 * for one event. ftrace compares a field with a constant: FIELD OP INT,
 * FIELD ==|!= STRING, a glob (FIELD ~ "g*"), FIELD & INT, combined with
 * && || ! and parentheses; a constant compared with a field the trace
 * rebases is rebased back (FIELD OP INT + offset; FIELD & MASK on such a
 * field cannot be expressed). $ctx.tid is common_pid, $ctx.procname comm,
 * $ctx.cpu_id cpu; other contexts, $app, $VAR, reals, field against
 * field, shifts, ^ and | cannot be expressed.
 */
enum rtf_ftrace_kind {
	RTF_FTRACE_ANY,		/* type not known (checking a rule before its events) */
	RTF_FTRACE_INT,
	RTF_FTRACE_STRING,
};

/* What ftrace calls a payload field and how it holds it. */
struct rtf_ftrace_field {
	const char *name;		/* valid until the translation returns */
	enum rtf_ftrace_kind kind;
	int64_t offset;			/* ftrace's value is the trace's + offset
					 * (0 unless the trace rebases the field,
					 * as LTTng's priorities are the kernel's
					 * minus 100) */
};

/* Payload field `name` (NAME or $payload.NAME) of the event: 0 with *out
 * filled (offset is 0 on entry), or -ENOENT when the event has no such
 * field. */
typedef int (*rtf_ftrace_field_fn)(void *arg, const char *name, struct rtf_ftrace_field *out);

/*
 * Returns 0 and *out (malloc'ed text), 1 when the event lacks a field the
 * expression names (the expression is false for it; *out NULL), -EINVAL
 * with a message (what ftrace cannot express, or a string compared with
 * an integer field) in err, or -ENOMEM.
 */
int rtf_to_ftrace(const struct rtf_program *p, rtf_ftrace_field_fn field, void *arg,
		  char **out, char *err, size_t errlen);

#endif /* RINGTRACE_FILTER_H */
