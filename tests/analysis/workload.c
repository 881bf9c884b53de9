/*
 * workload.c - a traced program of known structure for the analysis tests:
 *   workload N
 * 3 worker threads each record N pairs app:work_begin/app:work_end (fields
 * tid, iter) around a sleep of 200 us, with an app:tick (tid, iter, label)
 * inside each pair. Worker 1's iteration N/2 sleeps 30 ms instead: the
 * outlier. Then the main thread records one app:work_end without a begin
 * and one app:work_begin without an end (one unmatched of each), and prints
 * "outlier TID" and "workers TID TID TID".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <ringtrace/ringtrace.h>

#define WORKERS 3
#define SHORT_NS 200000L
#define LONG_NS 30000000L

static unsigned n_iter;
static int32_t tids[WORKERS];

static void sleep_ns(long ns)
{
	struct timespec ts = { ns / 1000000000L, ns % 1000000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
}

static void *worker(void *arg)
{
	int idx = (int)(intptr_t)arg;
	int32_t tid = (int32_t)gettid();
	tids[idx] = tid;
	for (uint32_t i = 0; i < n_iter; i++) {
		rt_event(app, work_begin, tid, tid, iter, i);
		rt_event(app, tick, tid, tid, iter, i, label, "a \"quoted\" <label>");
		sleep_ns(idx == 1 && i == n_iter / 2 ? LONG_NS : SHORT_NS);
		rt_event(app, work_end, tid, tid, iter, i);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	n_iter = (unsigned)strtoul(argv[1], NULL, 10);
	pthread_t th[WORKERS];
	for (int i = 0; i < WORKERS; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i))
			return 1;
	for (int i = 0; i < WORKERS; i++)
		pthread_join(th[i], NULL);
	int32_t tid = (int32_t)gettid();
	rt_event(app, work_end, tid, tid, iter, (uint32_t)9999);
	rt_event(app, work_begin, tid, tid, iter, (uint32_t)9999);
	printf("outlier %d\nworkers %d %d %d\n", tids[1], tids[0], tids[1], tids[2]);
	return 0;
}
