/*
 * debug_dir.c - the root of separate debug files (debug_dir.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "debug_dir.h"

static const char *usable(void)
{
	const char *v = getenv(RT_DEBUG_DIR_ENV);
	return v && v[0] == '/' && !strchr(v, ':') ? v : NULL;
}

const char *rt_debug_dir(void)
{
	const char *v = usable();
	return v ? v : RT_DEBUG_DIR_DEFAULT;
}

int rt_debug_dir_check(void)
{
	return getenv(RT_DEBUG_DIR_ENV) && !usable() ? -EINVAL : 0;
}
