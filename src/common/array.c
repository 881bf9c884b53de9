/*
 * array.c - growable arrays (see array.h).
 */
#include "array.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int rt_array_grow(void *arrp, size_t *cap, size_t need, size_t elem, size_t first, bool zero)
{
	if (need <= *cap)
		return 0;
	/* need > *cap: at least one doubling of a non-empty array. */
	size_t n = *cap ? *cap : (first ? first : 1);
	while (n < need) {
		if (n > SIZE_MAX / 2)
			return -ENOMEM;
		n *= 2;
	}
	if (elem && n > SIZE_MAX / elem)
		return -ENOMEM;
	char *a = realloc(*(void **)arrp, n * elem);
	if (!a)
		return -ENOMEM;
	if (zero)
		memset(a + *cap * elem, 0, (n - *cap) * elem);
	*(void **)arrp = a;
	*cap = n;
	return 0;
}
