/*
 * ctxthreads.c - events with contexts (vpid, vtid, procname, prio) from
 * several threads that rename themselves half-way, for
 * tests/integration/test_record.py: the library records an event of
 * fixed-size fields in a buffer with such contexts in one rseq section,
 * its contexts copied from a per-thread cache (src/lib/ctx_section.h),
 * which a rename must refresh.
 *
 * Each of T threads names itself "w<i>" (pthread_setname_np), records N
 * events ctx:a (i, seq), N events ctx:b (eight int32 fields: i, seq,
 * then seq + k for k = 2..7) and N events ctx:odd (an int32 and a uint8_t: 5 bytes, not a
 * multiple of 4, the library's other path), renames itself "renamed<i>"
 * after N / 2, then records its thread id as ctx:tid. N events of each
 * kind per thread, seq = 0..N-1.
 *
 * usage: ctxthreads T N
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <ringtrace/ringtrace.h>

static int n_events;

static void *worker(void *arg)
{
	int32_t i = (int32_t)(intptr_t)arg;
	char name[16];
	snprintf(name, sizeof(name), "w%d", (int)i);
	pthread_setname_np(pthread_self(), name);
	for (int32_t seq = 0; seq < n_events; seq++) {
		if (seq == n_events / 2) {
			snprintf(name, sizeof(name), "renamed%d", (int)i);
			pthread_setname_np(pthread_self(), name);
		}
		rt_event(ctx, a, thread, i, seq, seq);
		rt_event(ctx, b, b0, i, b1, seq, b2, seq + 2, b3, seq + 3, b4, seq + 4,
			 b5, seq + 5, b6, seq + 6, b7, seq + 7);
		rt_event(ctx, odd, seq, seq, small, (uint8_t)(seq & 0xff));
	}
	rt_event(ctx, tid, thread, i, tid, (int32_t)gettid());
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: ctxthreads T N\n");
		return 2;
	}
	int t = atoi(argv[1]);
	n_events = atoi(argv[2]);
	if (t < 1 || t > 64 || n_events < 2) {
		fprintf(stderr, "ctxthreads: bad arguments\n");
		return 2;
	}
	pthread_t th[64];
	for (int i = 0; i < t; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i) != 0) {
			fprintf(stderr, "ctxthreads: pthread_create failed\n");
			return 1;
		}
	for (int i = 0; i < t; i++)
		pthread_join(th[i], NULL);
	return 0;
}
