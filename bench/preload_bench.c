/*
 * preload_bench.c - per-call cost of what the LD_PRELOAD helpers wrap
 * (bench.h method), in a program linked with neither tracer: run.sh runs
 * it bare, with ringtrace's helpers and with LTTng-UST's (LD_PRELOAD).
 *
 *   malloc  malloc(64 + v % 8) then free: two wrapped calls, two events
 *   mutex   pthread_mutex_lock then unlock, uncontended: two wrapped
 *           calls, three events (lock_req, lock_acq, unlock)
 *   func    a call of an empty function built with -finstrument-functions
 *           (preload_func.c): two events (entry, exit)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>

#include "bench.h"

int preload_bench_func(int32_t v);

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;

static inline void alloc_free(int32_t v)
{
	void *p = malloc(64 + (size_t)(v & 7));
	BENCH_USE(p);
	free(p);
}

static inline void lock_unlock(void)
{
	pthread_mutex_lock(&mutex);
	pthread_mutex_unlock(&mutex);
}

BENCH_DEFINE(malloc, alloc_free(v))
BENCH_DEFINE(mutex, lock_unlock())
BENCH_DEFINE(func, BENCH_USE(preload_bench_func(v)))

static const struct bench_case cases[] = {
	BENCH_CASE(malloc, NULL, "malloc(64..71) + free"),
	BENCH_CASE(mutex, NULL, "pthread_mutex_lock + unlock, uncontended"),
	BENCH_CASE(func, NULL, "a call of an instrumented empty function"),
};

int main(int argc, char **argv)
{
	return bench_main(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
