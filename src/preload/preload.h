/*
 * preload.h - what the LD_PRELOAD helpers share (docs/preload.md). Each
 * helper is a shared library of its own, loaded into a program that
 * need not be linked with libringtrace (the helper is, so loading it
 * loads the library, which records as it would for an instrumented
 * program):
 *
 *   libringtrace-libc-wrapper.so     malloc, calloc, realloc, free,
 *                                    memalign, posix_memalign,
 *                                    aligned_alloc (libc_wrapper.c)
 *   libringtrace-pthread-wrapper.so  pthread_mutex_lock, _trylock,
 *                                    _unlock (pthread_wrapper.c)
 *   libringtrace-dl.so               dlopen, dlclose (dl.c)
 *   libringtrace-cyg-profile.so      function entry and exit of code
 *                                    built with -finstrument-functions
 *                                    (cyg_profile.c)
 *
 * The events are LTTng-UST's helpers' (same providers, names and fields,
 * so tools that read LTTng's read these), with a `caller` field (the
 * return address: who called malloc, or locked) and, for the mutex
 * acquisition, the time waited.
 *
 * Not recorded: the tracer's own calls (from libringtrace, and anything
 * its own threads do: src/lib/tracer_thread.h), and a wrapped function called while
 * this thread records one of this helper's events (if the recording path
 * ever allocated or locked). rt_preload_begin(caller) says whether an
 * event may be recorded now and, if so, marks the thread until
 * rt_preload_end(). The mark is thread-local, initial-exec (no allocation,
 * no lock on first use: a preloaded library's TLS is static).
 */
#ifndef RINGTRACE_PRELOAD_H
#define RINGTRACE_PRELOAD_H

#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include <ringtrace/ringtrace.h>

#include "../lib/tracer_thread.h"

#define RT_PRELOAD_API __attribute__((visibility("default")))

extern __thread int rt_preload_nesting
	__attribute__((tls_model("initial-exec"), visibility("hidden")));
/* libringtrace's mapping [lo, hi), set by the helper's first constructor
 * (common.c), before its events are registered; 0, 0 until then. */
extern uintptr_t rt_preload_tracer_lo, rt_preload_tracer_hi
	__attribute__((visibility("hidden")));

static inline bool rt_preload_begin(const void *caller)
{
	/* Relaxed: constant once the helper's constructor ran, which was
	 * before any of its events could be enabled. */
	uintptr_t lo = __atomic_load_n(&rt_preload_tracer_lo, __ATOMIC_RELAXED);
	uintptr_t hi = __atomic_load_n(&rt_preload_tracer_hi, __ATOMIC_RELAXED);
	if ((uintptr_t)caller - lo < hi - lo || rt__tracer_thread)
		return false;
	if (rt_preload_nesting)
		return false;
	rt_preload_nesting = 1;
	return true;
}

static inline void rt_preload_end(void)
{
	rt_preload_nesting = 0;
}

/* The caller of the wrapped function: the return address of the
 * wrapper's frame (the wrappers are never inlined into a caller: they
 * are reached through the PLT). */
#define RT_PRELOAD_CALLER() __builtin_extract_return_addr(__builtin_return_address(0))

/* Declares `fn`, the real `name` (the next definition after ours in
 * the lookup order), found with dlsym on first use; relaxed: threads
 * racing store the same value. No C library behind us: abort. (The libc
 * wrapper has its own: dlsym may allocate.) */
#define RT_PRELOAD_REAL(name)                                                  \
	static __typeof__(name) *real_##name;                                  \
	__typeof__(name) *fn = __atomic_load_n(&real_##name, __ATOMIC_RELAXED); \
	if (__builtin_expect(!fn, 0)) {                                        \
		fn = (__typeof__(name) *)dlsym(RTLD_NEXT, #name);              \
		if (!fn)                                                       \
			abort();                                               \
		__atomic_store_n(&real_##name, fn, __ATOMIC_RELAXED);          \
	}

#endif /* RINGTRACE_PRELOAD_H */
