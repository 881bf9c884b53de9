/* fuzz_util.c - fuzz_fail (fuzz.h). */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz.h"

void fuzz_fail(const char *file, int line, const char *cond)
{
	fprintf(stderr, "%s:%d: harness check failed: %s\n", file, line, cond);
	abort();
}
