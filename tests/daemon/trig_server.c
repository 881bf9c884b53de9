/*
 * trig_server.c - the server of the user event-rule-matches tests
 * (test_user_triggers.py) and of bench/trigger_latency.sh: 4 worker
 * threads named "worker-0".."worker-3" serve requests 0..N-1 (request i
 * by worker i % 4), each recorded as
 *   server:request_begin { id }                       (fixed-size fields)
 *   server:request_end { id, dur_us, path = "/item/ID" }  (with a string)
 * where dur_us is the request's measured duration. Request SLOW (one in
 * N, given) sleeps 30 ms; the others take a few microseconds, and each
 * worker rests 1 ms after every 64 requests (a server under a steady
 * load, about 250 requests per millisecond, not a flood that would
 * overwrite a flight recorder's buffers within the slow request).
 *
 *   trig_server N SLOW
 * Prints "slow ID WORKER_TID EVENT_REALTIME_NS" (the time request_end of
 * the slow request was recorded) and "done N" at the end.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <ringtrace/ringtrace.h>

#define WORKERS 4

static uint64_t nr_requests, slow_id;
static uint64_t slow_tid, slow_time_ns;

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void serve(uint64_t id)
{
	char path[32];
	snprintf(path, sizeof(path), "/item/%llu", (unsigned long long)id);
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	rt_event(server, request_begin, id, id);
	if (id == slow_id) {
		struct timespec ts = { 0, 30 * 1000000L };
		nanosleep(&ts, NULL);
	}
	uint64_t dur_us = (now_ns(CLOCK_MONOTONIC) - t0) / 1000;
	const char *p = path;
	if (id == slow_id) {
		slow_tid = (uint64_t)gettid();
		slow_time_ns = now_ns(CLOCK_REALTIME);
	}
	rt_event(server, request_end, id, id, dur_us, dur_us, path, p);
}

static void *worker(void *arg)
{
	uint64_t w = (uint64_t)(uintptr_t)arg;
	char name[16];
	snprintf(name, sizeof(name), "worker-%llu", (unsigned long long)w);
	pthread_setname_np(pthread_self(), name);
	uint64_t n = 0;
	for (uint64_t id = w; id < nr_requests; id += WORKERS) {
		serve(id);
		if (++n % 64 == 0) {
			struct timespec ts = { 0, 1000000L };
			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: trig_server N SLOW\n");
		return 2;
	}
	nr_requests = strtoull(argv[1], NULL, 10);
	slow_id = strtoull(argv[2], NULL, 10);
	pthread_t th[WORKERS];
	for (uintptr_t w = 0; w < WORKERS; w++)
		pthread_create(&th[w], NULL, worker, (void *)w);
	for (int w = 0; w < WORKERS; w++)
		pthread_join(th[w], NULL);
	if (slow_id < nr_requests)
		printf("slow %llu %llu %llu\n", (unsigned long long)slow_id,
		       (unsigned long long)slow_tid, (unsigned long long)slow_time_ns);
	printf("done %llu\n", (unsigned long long)nr_requests);
	return 0;
}
