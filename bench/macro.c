/*
 * macro.c - a small multi-threaded program doing real work, instrumented
 * at a realistic event rate (Desnoyers & Dagenais 2012, Tables 2-5: the workload's time
 * with tracing off, in flight-recorder mode and to disk).
 *
 * Each thread processes work items: copy 64 KiB, hash 16 KiB of it, make
 * three system calls (getppid, a 512-byte write to /dev/null, a 512-byte
 * read from /dev/zero). Five events per item: work_begin, one per system
 * call, work_end; about 0.5 million events per second per thread.
 *
 * Built three times: MACRO_BACKEND 0 (no instrumentation at all), 1
 * (ringtrace: recording or not depends on the environment), 2 (LTTng-UST).
 *
 *   macro --threads N --items N [--cpus LIST] [--tracer T] [--rep R]
 * prints  M,tracer,threads,rep,items_per_thread,events,elapsed_ns,checksum
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if MACRO_BACKEND == 1
#include <ringtrace/ringtrace.h>
#define EV_BEGIN(i, n) rt_event(rtbench, work_begin, id, i, size, n)
#define EV_SYSCALL(sysno, r) rt_event(rtbench, syscall_done, nr, sysno, ret, r)
#define EV_END(i, h) rt_event(rtbench, work_end, id, i, hash, h)
#define NR_EVENTS 5
#elif MACRO_BACKEND == 2
#define _LGPL_SOURCE
#include "lttng_tp.h"
#define EV_BEGIN(i, n) tracepoint(rtbench, work_begin, i, n)
#define EV_SYSCALL(sysno, r) tracepoint(rtbench, syscall_done, sysno, r)
#define EV_END(i, h) tracepoint(rtbench, work_end, i, h)
#define NR_EVENTS 5
#else
#define EV_BEGIN(i, n) ((void)(i), (void)(n))
#define EV_SYSCALL(sysno, r) ((void)(sysno), (void)(r))
#define EV_END(i, h) ((void)(i), (void)(h))
#define NR_EVENTS 0
#endif

#define COPY_BYTES (32 * 1024)
#define HASH_BYTES (8 * 1024)
#define IO_BYTES 512

struct worker {
	pthread_t th;
	unsigned idx;
	int cpu;
	uint64_t items;
	uint64_t checksum;
	uint64_t t0, t1;	/* this thread's work, CLOCK_MONOTONIC ns */
};

static int devnull_fd, zero_fd;
static pthread_barrier_t barrier;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* 64-bit multiply-xorshift over 8-byte words. */
static uint64_t hash_words(const uint64_t *w, size_t n, uint64_t h)
{
	for (size_t i = 0; i < n; i++) {
		h ^= w[i];
		h *= 0x9e3779b97f4a7c15ULL;
		h ^= h >> 29;
	}
	return h;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	if (w->cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(w->cpu, &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	uint64_t *src = aligned_alloc(64, COPY_BYTES);
	uint64_t *dst = aligned_alloc(64, COPY_BYTES);
	if (!src || !dst) {
		fprintf(stderr, "macro: out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < COPY_BYTES / 8; i++)
		src[i] = i * 0x2545f4914f6cdd1dULL + w->idx;
	memset(dst, 0, COPY_BYTES);

	uint64_t h = w->idx;
	pthread_barrier_wait(&barrier);
	w->t0 = now_ns();
	for (uint64_t it = 0; it < w->items; it++) {
		uint32_t id = (uint32_t)(it * 64 + w->idx);
		EV_BEGIN(id, (uint32_t)COPY_BYTES);
		src[it % (COPY_BYTES / 8)] ^= h;
		memcpy(dst, src, COPY_BYTES);
		h = hash_words(dst + (it % 4) * (HASH_BYTES / 8), HASH_BYTES / 8, h);
		int64_t r = (int64_t)getppid();
		EV_SYSCALL((int32_t)SYS_getppid, r);
		r = (int64_t)write(devnull_fd, dst, IO_BYTES);
		EV_SYSCALL((int32_t)SYS_write, r);
		r = (int64_t)read(zero_fd, dst, IO_BYTES);
		EV_SYSCALL((int32_t)SYS_read, r);
		EV_END(id, h);
	}
	w->t1 = now_ns();
	w->checksum = h;
	free(src);
	free(dst);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned threads = 2, rep = 0;
	uint64_t items = 10000;
	const char *tracer = "-", *cpu_list = NULL;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--threads"))
			threads = (unsigned)strtoul(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--items"))
			items = strtoull(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--cpus"))
			cpu_list = argv[i + 1];
		else if (!strcmp(argv[i], "--tracer"))
			tracer = argv[i + 1];
		else if (!strcmp(argv[i], "--rep"))
			rep = (unsigned)strtoul(argv[i + 1], NULL, 10);
		else
			break;
	}
	if (argc % 2 != 1 || threads == 0 || threads > 256 || items == 0) {
		fprintf(stderr, "usage: %s [--threads N] [--items N] [--cpus LIST] "
				"[--tracer T] [--rep R]\n", argv[0]);
		return 2;
	}
	int cpus[256], nr_cpus = 0;
	for (const char *p = cpu_list; p && *p && nr_cpus < 256;) {
		char *end;
		cpus[nr_cpus++] = (int)strtol(p, &end, 10);
		p = *end ? end + 1 : end;
	}
	devnull_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	zero_fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	if (devnull_fd < 0 || zero_fd < 0) {
		perror("open");
		return 1;
	}
	struct worker *w = calloc(threads, sizeof(*w));
	if (!w)
		return 1;
	pthread_barrier_init(&barrier, NULL, threads + 1);
	for (unsigned i = 0; i < threads; i++) {
		w[i].idx = i;
		w[i].items = items;
		w[i].cpu = nr_cpus ? cpus[i % (unsigned)nr_cpus] : -1;
		if (pthread_create(&w[i].th, NULL, worker_main, &w[i]) != 0) {
			perror("pthread_create");
			return 1;
		}
	}
	/* The time of the work: from the first thread's start to the last
	 * thread's end (the main thread may not run while they do). */
	pthread_barrier_wait(&barrier);
	uint64_t sum = 0, t0 = UINT64_MAX, t1 = 0;
	for (unsigned i = 0; i < threads; i++) {
		pthread_join(w[i].th, NULL);
		sum ^= w[i].checksum;
		t0 = w[i].t0 < t0 ? w[i].t0 : t0;
		t1 = w[i].t1 > t1 ? w[i].t1 : t1;
	}
	printf("M,%s,%u,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%016" PRIx64 "\n",
	       tracer, threads, rep, items, (uint64_t)NR_EVENTS * items * threads,
	       t1 - t0, sum);
	fflush(stdout);
	free(w);
	return 0;
}
