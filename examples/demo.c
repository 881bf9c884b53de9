/*
 * demo.c - a small instrumented program: a few threads "serve requests"
 * and record what they do with one-line tracepoints.
 *
 *   ringtrace record -- ./demo [requests]
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ringtrace/ringtrace.h>

struct request {
	uint32_t id;
	const char *path;
	size_t bytes;
};

static const char *const paths[] = { "/", "/index.html", "/api/users", "/api/orders",
				     "/static/app.js" };

static uint64_t checksum(const unsigned char *p, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

struct worker {
	int index;
	int requests;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	unsigned char body[256];
	char name[16];
	/* The thread's name is recorded with its events (`ringtrace record`'s
	 * procname context) and shown by view, analyze, export and report. */
	snprintf(name, sizeof(name), "worker-%d", w->index);
	pthread_setname_np(pthread_self(), name);
	for (int i = 0; i < w->requests; i++) {
		struct request req = {
			.id = (uint32_t)(w->index * 100000 + i),
			.path = paths[(unsigned)i % 5],
			.bytes = 64 + (size_t)(i % 4) * 48,
		};
		rt_event(http, request_start, id, req.id, path, req.path, worker, w->index);
		memset(body, (int)(i & 0xff), req.bytes);
		uint64_t sum = checksum(body, req.bytes);
		bool cached = (i % 3) == 0;
		int status = (i % 17 == 16) ? 404 : 200;
		double ms = (double)req.bytes / 64.0;
		rt_event(http, request_done, id, req.id, status, status, bytes, req.bytes,
			 cached, cached, latency_ms, ms, sum, sum,
			 head, rt_bytes(body, 8));
		if (status != 200)
			rt_event_loglevel(RT_LOGLEVEL_WARNING, http, not_found, id, req.id,
					  path, req.path);
		usleep(100);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int requests = argc > 1 ? atoi(argv[1]) : 200;
	enum { NR_WORKERS = 3 };
	pthread_t t[NR_WORKERS];
	struct worker w[NR_WORKERS];

	rt_event(demo, start, workers, NR_WORKERS, requests, requests, argv0, argv[0]);
	for (int i = 0; i < NR_WORKERS; i++) {
		w[i] = (struct worker){ .index = i, .requests = requests };
		pthread_create(&t[i], NULL, worker_main, &w[i]);
	}
	for (int i = 0; i < NR_WORKERS; i++)
		pthread_join(t[i], NULL);
	rt_event(demo, stop, served, NR_WORKERS * requests);
	printf("served %d requests\n", NR_WORKERS * requests);
	return 0;
}
