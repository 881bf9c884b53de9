/*
 * thread_name.c - pthread_setname_np, interposed: libringtrace defines it
 * (programs linked with the library reach this definition before libc's),
 * calls libc's, then increments rt_thread_name_gen so that every thread
 * reads its name again at its next event recording the procname context
 * (probe.c caches it per thread: the name can be set from another thread,
 * which cannot touch that cache). A program that loads libringtrace with
 * dlopen, or sets names with prctl(PR_SET_NAME), keeps each thread's name
 * as its first such event saw it (LTTng-UST's rule).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>

#include "rt_internal.h"

RT_HIDDEN uint32_t rt_thread_name_gen;

typedef int (*setname_fn)(pthread_t, const char *);

RT_API int pthread_setname_np(pthread_t thread, const char *name)
{
	/* Relaxed: any thread storing it stores the same value. */
	static setname_fn next;
	setname_fn fn = __atomic_load_n(&next, __ATOMIC_RELAXED);
	if (!fn) {
		fn = (setname_fn)dlsym(RTLD_NEXT, "pthread_setname_np");
		if (!fn)
			return ENOSYS;
		__atomic_store_n(&next, fn, __ATOMIC_RELAXED);
	}
	int ret = fn(thread, name);
	/* Release: the new name is set before a thread sees the new
	 * generation (pairs with the acquire load in probe.c). */
	if (ret == 0)
		__atomic_fetch_add(&rt_thread_name_gen, 1, __ATOMIC_RELEASE);
	/* A thread naming itself says so in the trace (another thread's
	 * tid is not known here: the next state dump names it). */
	if (ret == 0 && pthread_equal(thread, pthread_self()))
		rt_statedump_thread_named(name);
	return ret;
}
