/*
 * context.c - the context table (see context.h).
 */
#include "context.h"

#include <errno.h>
#include <string.h>

_Static_assert(sizeof(void *) == RT_CTX_SIZE_IP, "the ip context is a 64-bit pointer");

static const struct {
	const char *name;
	uint32_t type;		/* enum rt_field_type */
	uint32_t size;		/* bytes in a record, 0: a string */
} contexts[RT_CTX_COUNT] = {
#define RT_CONTEXT__ROW(id, n, t, s) [RT_CTX_##id] = { .name = n, .type = t, .size = s },
	RT_CONTEXT_TABLE(RT_CONTEXT__ROW)
#undef RT_CONTEXT__ROW
};

/* " vpid vtid ...", then past its first space. */
#define RT_CONTEXT__NAME(id, n, t, s) " " n
const char *const rt_context_names = RT_CONTEXT_TABLE(RT_CONTEXT__NAME) + 1;
#undef RT_CONTEXT__NAME

const char *rt_context_name(unsigned ctx)
{
	return ctx < RT_CTX_COUNT ? contexts[ctx].name : NULL;
}

uint32_t rt_context_type(unsigned ctx)
{
	return ctx < RT_CTX_COUNT ? contexts[ctx].type : 0;
}

uint32_t rt_context_size(unsigned ctx)
{
	return ctx < RT_CTX_COUNT ? contexts[ctx].size : 0;
}

int rt_context_by_name(const char *name)
{
	for (unsigned i = 0; i < RT_CTX_COUNT; i++)
		if (!strcmp(contexts[i].name, name))
			return (int)i;
	return -EINVAL;
}
