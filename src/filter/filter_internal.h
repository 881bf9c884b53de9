/*
 * filter_internal.h - the compiled form shared by the files of src/filter
 * (filter_parse.c writes it, filter_eval.c runs it, filter_ftrace.c
 * translates it). Same concurrency contract as filter.h.
 *
 * A program is the expression in postfix order: operands push a value,
 * operators pop theirs and push the result. `a && b` is
 *   [a] AND L  [b] AND_END  L:
 * where AND pops a and, when a is false, pushes 0 and jumps to L (the
 * instruction after AND_END); AND_END turns b into 0 or 1. `||` is the
 * same with OR/OR_END, jumping when a is true (pushing 1). Every path
 * through a program leaves one value; max_stack is the most it holds.
 */
#ifndef RINGTRACE_FILTER_INTERNAL_H
#define RINGTRACE_FILTER_INTERNAL_H

#include <stdarg.h>

#include "filter.h"

enum rtf_op {
	RTF_OP_CONST,	/* push consts[arg] */
	RTF_OP_REF,	/* push the value of refs[arg] */
	RTF_OP_NEG,
	RTF_OP_PLUS,
	RTF_OP_NOT,
	RTF_OP_BNOT,
	RTF_OP_SHL,
	RTF_OP_SHR,
	RTF_OP_BAND,
	RTF_OP_BXOR,
	RTF_OP_BOR,
	RTF_OP_LT,
	RTF_OP_LE,
	RTF_OP_GT,
	RTF_OP_GE,
	RTF_OP_EQ,
	RTF_OP_NE,
	RTF_OP_MATCH,	/* =~: shell pattern on the right */
	RTF_OP_NOMATCH,	/* !~ */
	RTF_OP_AND,	/* arg: jump target */
	RTF_OP_OR,	/* arg: jump target */
	RTF_OP_AND_END,
	RTF_OP_OR_END,
};

/* What an instruction takes off the stack and puts on it: CONST and REF
 * push one; unary operators and the ENDs replace the top; AND and OR pop
 * their left side (a jump lands past its END holding what it held);
 * binary operators replace two by one. The compiler counts the depth
 * with it and the loader checks a program's stack discipline with it. */
static inline void rtf_op_stack(enum rtf_op op, uint32_t *pops, uint32_t *pushes)
{
	switch (op) {
	case RTF_OP_CONST:
	case RTF_OP_REF:
		*pops = 0, *pushes = 1;
		break;
	case RTF_OP_NEG:
	case RTF_OP_PLUS:
	case RTF_OP_NOT:
	case RTF_OP_BNOT:
	case RTF_OP_AND_END:
	case RTF_OP_OR_END:
		*pops = 1, *pushes = 1;
		break;
	case RTF_OP_AND:
	case RTF_OP_OR:
		*pops = 1, *pushes = 0;
		break;
	default:
		*pops = 2, *pushes = 1;
		break;
	}
}

struct rtf_insn {
	uint8_t op;	/* enum rtf_op */
	uint32_t arg;
};

struct rtf_program {
	struct rtf_insn *code;
	uint32_t nr_code, cap_code;
	struct rtf_value *consts;	/* strings: escaped, each p malloc'ed */
	uint32_t nr_consts, cap_consts;
	struct rtf_ref *refs;		/* each name malloc'ed */
	uint32_t nr_refs, cap_refs;
	uint32_t max_stack;
	unsigned flags;			/* RTF_LOCAL_ERRORS */
};

/* The next byte of s (a literal when `escaped`: '\' quotes the next
 * byte) at *i, which moves past it; *quoted says whether it was quoted. */
static inline unsigned char rtf_next_byte(const char *s, size_t len, bool escaped, size_t *i,
					  bool *quoted)
{
	*quoted = false;
	if (escaped && s[*i] == '\\' && *i + 1 < len) {
		*quoted = true;
		(*i)++;
	}
	return (unsigned char)s[(*i)++];
}

/* Write `prefix` then fmt's message into err (NUL-terminated, truncated
 * to errlen): every error message of src/filter. */
void rtf_verr(char *err, size_t errlen, const char *prefix, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));

/* Whether the literal string v holds a `*` not quoted by '\'. */
bool rtf_has_star(const struct rtf_value *v);

#endif /* RINGTRACE_FILTER_INTERNAL_H */
