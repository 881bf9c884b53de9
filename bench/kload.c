/*
 * kload.c - the workloads of the kernel-domain benchmark (bench/kernel.sh,
 * docs/performance.md): a program that makes the kernel emit events, run
 * alone or under a kernel tracer (ringtrace record -k, trace-cmd record,
 * strace -c, perf trace), which it does not know about. It is linked with
 * libringtrace and emits one event at its start and one at its end, so
 * that `ringtrace record` has a user-space trace to write; nothing else of
 * it is traced in user space.
 *
 *   kload syscall MS
 *       syscall(SYS_getppid) in a loop for MS ms, in chunks of calls
 *       of about 0.2 ms, each timed with CLOCK_MONOTONIC (wall time: a
 *       tracer's work in another process, strace's, counts); prints
 *       KSYS,CALLS,NS_PER_CALL,CPU_NS with the median chunk's ns per
 *       call and this process's own CPU time.
 *   kload pingpong MS PAIRS RATE
 *       PAIRS pairs of threads pass a byte back and forth over two pipes
 *       for MS ms (each round trip: two write(2), two read(2), the
 *       wake-ups and context switches they cause); RATE round trips per
 *       second per pair (0: as fast as they can; paced in 1 ms steps with
 *       clock_nanosleep). Prints
 *       KLOAD,ROUND_TRIPS,ELAPSED_NS,CPU_NS with this process's own CPU
 *       time (getrusage RUSAGE_SELF: the workload's, not the tracer's).
 *
 * Exit status 0, or 2 on bad arguments, 1 when a call fails.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <ringtrace/ringtrace.h>

/* Chunks of calls short enough that most run within one time slice
 * of the scheduler, even on a loaded machine: the median chunk is then
 * a call's cost, not a share of the CPU. */
#define CHUNK_NS 200000u
#define MAX_PAIRS 64

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* This process's CPU time, all threads, user and system. */
static uint64_t self_cpu_ns(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000u +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int run_syscall(uint64_t ms)
{
	/* Calibrate: how many calls fill one chunk of CHUNK_NS. */
	uint64_t calls = 1000, t0 = now_ns();
	for (uint64_t i = 0; i < calls; i++)
		syscall(SYS_getppid);
	uint64_t dt = now_ns() - t0;
	uint64_t per_chunk = dt ? calls * CHUNK_NS / dt : calls;
	if (per_chunk < 1)
		per_chunk = 1;
	size_t max = (size_t)(ms * 1000000u / CHUNK_NS) + 1, n = 0;
	double *ns = malloc(max * sizeof(*ns));
	if (!ns) {
		fprintf(stderr, "kload: out of memory\n");
		return 1;
	}
	uint64_t end = now_ns() + ms * 1000000u;
	for (t0 = now_ns(); n < max && t0 < end; n++) {
		for (uint64_t i = 0; i < per_chunk; i++)
			syscall(SYS_getppid);
		uint64_t t1 = now_ns();
		ns[n] = (double)(t1 - t0) / (double)per_chunk;
		calls += per_chunk;
		t0 = t1;
	}
	qsort(ns, n, sizeof(ns[0]), cmp_double);
	printf("KSYS,%llu,%.1f,%llu\n", (unsigned long long)calls, ns[n / 2],
	       (unsigned long long)self_cpu_ns());
	free(ns);
	return 0;
}

struct pair {
	int ping[2], pong[2];
	uint64_t end_ns, rate;
	uint64_t trips;
	int failed;
	pthread_t a, b;
};

/* The echoing side: reads a byte on ping, writes it back on pong, until
 * ping's write end is closed. */
static void *echo(void *arg)
{
	struct pair *p = arg;
	char c;
	for (;;) {
		ssize_t n = read(p->ping[0], &c, 1);
		if (n == 0)
			return NULL;
		if (n != 1 || write(p->pong[1], &c, 1) != 1) {
			p->failed = 1;
			return NULL;
		}
	}
}

static void *drive(void *arg)
{
	struct pair *p = arg;
	uint64_t start = now_ns(), step = 0;
	char c = 'x';
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (now_ns() < p->end_ns) {
		uint64_t batch = p->rate ? p->rate / 1000 : 256;
		if (!batch)
			batch = 1;
		for (uint64_t i = 0; i < batch; i++) {
			if (write(p->ping[1], &c, 1) != 1 || read(p->pong[0], &c, 1) != 1) {
				p->failed = 1;
				goto out;
			}
			p->trips++;
		}
		if (p->rate) {
			step++;
			uint64_t due = start + step * 1000000u;
			next.tv_sec = (time_t)(due / 1000000000u);
			next.tv_nsec = (long)(due % 1000000000u);
			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
				;
		}
	}
out:
	close(p->ping[1]);
	return NULL;
}

static int run_pingpong(uint64_t ms, int pairs, uint64_t rate)
{
	static struct pair p[MAX_PAIRS];
	uint64_t t0 = now_ns();
	for (int i = 0; i < pairs; i++) {
		if (pipe(p[i].ping) < 0 || pipe(p[i].pong) < 0) {
			perror("kload: pipe");
			return 1;
		}
		p[i].end_ns = t0 + ms * 1000000u;
		p[i].rate = rate;
		if (pthread_create(&p[i].b, NULL, echo, &p[i]) ||
		    pthread_create(&p[i].a, NULL, drive, &p[i])) {
			fprintf(stderr, "kload: cannot start threads\n");
			return 1;
		}
	}
	uint64_t trips = 0;
	int failed = 0;
	for (int i = 0; i < pairs; i++) {
		pthread_join(p[i].a, NULL);
		pthread_join(p[i].b, NULL);
		trips += p[i].trips;
		failed |= p[i].failed;
	}
	uint64_t elapsed = now_ns() - t0, cpu = self_cpu_ns();
	if (failed) {
		fprintf(stderr, "kload: a pipe read or write failed\n");
		return 1;
	}
	printf("KLOAD,%llu,%llu,%llu\n", (unsigned long long)trips,
	       (unsigned long long)elapsed, (unsigned long long)cpu);
	return 0;
}

static int number(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v > max)
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t ms, pairs = 0, rate = 0;
	int ret;
	if (argc == 3 && !strcmp(argv[1], "syscall") && !number(argv[2], 3600000, &ms) && ms) {
		rt_event(kload, start, mode, (int32_t)0);
		ret = run_syscall(ms);
	} else if (argc == 5 && !strcmp(argv[1], "pingpong") && !number(argv[2], 3600000, &ms) &&
		   ms && !number(argv[3], MAX_PAIRS, &pairs) && pairs &&
		   !number(argv[4], 100000000, &rate)) {
		rt_event(kload, start, mode, (int32_t)1);
		ret = run_pingpong(ms, (int)pairs, rate);
	} else {
		fprintf(stderr, "usage: kload syscall MS | kload pingpong MS PAIRS RATE\n");
		return 2;
	}
	rt_event(kload, stop, status, (int32_t)ret);
	return ret;
}
