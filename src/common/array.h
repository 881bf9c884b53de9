/*
 * array.h - growable arrays: one way to make room in an array that grows
 * by appending or by index, instead of a realloc loop per array.
 *
 *   struct item *v = NULL; size_t nr = 0, cap = 0;
 *   if (RT_ARRAY_GROW(v, cap, nr + 1, 64) < 0) return -ENOMEM;
 *   v[nr++] = x;
 *
 * The capacity at least doubles (from `first` when the array is empty),
 * so appending n elements costs O(n) in all. The _ZEROED form zeroes the
 * new elements (arrays indexed by key). On failure the array and its
 * capacity are as they were.
 *
 * Concurrency: none; the caller owns the array (or holds its lock).
 */
#ifndef RINGTRACE_COMMON_ARRAY_H
#define RINGTRACE_COMMON_ARRAY_H

#include <stdbool.h>
#include <stddef.h>

/* Make *(T **)arrp, with *cap elements of elem bytes allocated, hold at
 * least `need`; new ones zeroed when `zero`. Returns 0, or -ENOMEM (out
 * of memory, or a size past SIZE_MAX) with nothing changed. */
int rt_array_grow(void *arrp, size_t *cap, size_t need, size_t elem, size_t first, bool zero);

/* The same for an array `arr` (any pointer lvalue) whose capacity `cap`
 * is an integer lvalue of any unsigned type. */
#define RT_ARRAY_GROW_(arr, cap, need, first, zero)                                          \
	({                                                                                   \
		size_t rt_cap_ = (cap), rt_need_ = (need);                                   \
		int rt_ret_ = 0;                                                             \
		if (rt_need_ > rt_cap_) { /* the call only when it has work */             \
			rt_ret_ = rt_array_grow(&(arr), &rt_cap_, rt_need_, sizeof(*(arr)),   \
						(first), (zero));                            \
			if (!rt_ret_)                                                        \
				(cap) = (__typeof__(cap))rt_cap_;                            \
		}                                                                            \
		rt_ret_;                                                                     \
	})
#define RT_ARRAY_GROW(arr, cap, need, first) RT_ARRAY_GROW_(arr, cap, need, first, false)
#define RT_ARRAY_GROW_ZEROED(arr, cap, need, first) RT_ARRAY_GROW_(arr, cap, need, first, true)

#endif /* RINGTRACE_COMMON_ARRAY_H */
