/*
 * common.c - what each helper library has of its own (preload.h): its
 * reentrancy mark, and libringtrace's mapping, whose calls it does not
 * record (hidden: helpers loaded together keep theirs apart).
 */
#include <stdlib.h>

#include "../common/loaded_objects.h"
#include "preload.h"

__thread int rt_preload_nesting __attribute__((tls_model("initial-exec"), visibility("hidden")));
uintptr_t rt_preload_tracer_lo, rt_preload_tracer_hi;

/* Before the helper's other constructors (rt_event's registration). */
__attribute__((constructor(101))) static void find_tracer(void)
{
	struct rt_loaded_list l;
	if (rt_loaded_objects(&l, (uintptr_t)&rt__record) == 0 && l.nr == 1) {
		__atomic_store_n(&rt_preload_tracer_lo, l.v[0].baddr, __ATOMIC_RELAXED);
		__atomic_store_n(&rt_preload_tracer_hi, l.v[0].baddr + l.v[0].memsz,
				 __ATOMIC_RELAXED);
	}
	free(l.v);
}
