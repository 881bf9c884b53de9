/*
 * pthread_wrapper.c - libringtrace-pthread-wrapper.so: events around the
 * program's mutex operations (LTTng-UST's liblttng-ust-pthread-wrapper
 * events, plus the caller and the time waited):
 *
 *   lttng_ust_pthread:pthread_mutex_lock_req  mutex (pointer), caller:
 *                                             before waiting
 *   lttng_ust_pthread:pthread_mutex_lock_acq  mutex, status (s32), caller,
 *                                             wait_ns (u64): acquired (or
 *                                             failed: status), after
 *                                             wait_ns nanoseconds
 *   lttng_ust_pthread:pthread_mutex_trylock   mutex, status, caller
 *   lttng_ust_pthread:pthread_mutex_unlock    mutex, status, caller
 *
 * wait_ns is measured with CLOCK_MONOTONIC (the vDSO: no system call)
 * from just before the real pthread_mutex_lock to just after it; the
 * clock is read only when lock_req was recorded, so a program not traced
 * pays nothing for it, and a lock_acq whose lock_req was not recorded
 * says 0.
 *
 * Only the program's calls through the dynamic linker are seen: the C
 * library's internal locks are not (as with LTTng's).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "preload.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

RT_PRELOAD_API int pthread_mutex_lock(pthread_mutex_t *mutex)
{
	void *caller = RT_PRELOAD_CALLER();
	RT_PRELOAD_REAL(pthread_mutex_lock);
	if (!rt_preload_begin(caller))
		return fn(mutex);
	bool traced = false;
	/* `traced` is set only if the event is recorded (rt_event evaluates
	 * the values of enabled events only). */
	rt_event(lttng_ust_pthread, pthread_mutex_lock_req, mutex, (void *)mutex, caller,
		 (traced = true, caller));
	uint64_t start = traced ? now_ns() : 0;
	int status = fn(mutex);
	uint64_t waited = start ? now_ns() - start : 0;
	rt_event(lttng_ust_pthread, pthread_mutex_lock_acq, mutex, (void *)mutex, status, status,
		 caller, caller, wait_ns, waited);
	rt_preload_end();
	return status;
}

RT_PRELOAD_API int pthread_mutex_trylock(pthread_mutex_t *mutex)
{
	void *caller = RT_PRELOAD_CALLER();
	RT_PRELOAD_REAL(pthread_mutex_trylock);
	int status = fn(mutex);
	if (rt_preload_begin(caller)) {
		rt_event(lttng_ust_pthread, pthread_mutex_trylock, mutex, (void *)mutex, status,
			 status, caller, caller);
		rt_preload_end();
	}
	return status;
}

RT_PRELOAD_API int pthread_mutex_unlock(pthread_mutex_t *mutex)
{
	void *caller = RT_PRELOAD_CALLER();
	RT_PRELOAD_REAL(pthread_mutex_unlock);
	int status = fn(mutex);
	if (rt_preload_begin(caller)) {
		rt_event(lttng_ust_pthread, pthread_mutex_unlock, mutex, (void *)mutex, status,
			 status, caller, caller);
		rt_preload_end();
	}
	return status;
}
