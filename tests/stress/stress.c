/*
 * stress.c - producer for the stress test: THREADS threads each record
 * EVENTS events (stress_common.h: alternately through the library and by
 * the call site itself) as fast as they can while a per-thread timer signal
 * interrupts them every INTERVAL_US microseconds and its handler records
 * an event too (so probes nest inside probes on the same thread). Threads
 * are free to migrate between CPUs; half of them start pinned to each
 * CPU and are unpinned halfway, to force migrations.
 *
 * usage: stress THREADS EVENTS INTERVAL_US
 * Prints, on stdout, one line per thread: "thread T events N signals S".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ringtrace/ringtrace.h>

#include "stress_common.h"

struct worker {
	uint32_t index;
	uint64_t events;
	uint64_t signals;	/* written by the handler of this thread only */
	pthread_t thread;
};

static __thread struct worker *self;
static long interval_us;
static int nr_cpus;

static void emit(uint32_t thread, uint64_t seq)
{
	if (stress_is_fixed(seq)) {
		rt_event(stress, fixed, thread, thread, seq, seq, sum,
			 stress_fixed_sum(thread, seq));
		return;
	}
	uint8_t buf[STRESS_MAX_PAYLOAD];
	uint32_t len = stress_payload_len(thread, seq);
	stress_payload(thread, seq, buf, len);
	uint64_t sum = stress_sum(thread, seq, buf, len);
	rt_event(stress, ev, thread, thread, seq, seq, sum, sum, data, rt_bytes(buf, len));
}

static void on_timer(int sig)
{
	(void)sig;
	int saved = errno;
	if (self) {
		emit(STRESS_SIG_THREAD_BASE + self->index, self->signals);
		self->signals++;
	}
	errno = saved;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	self = w;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(w->index % (uint32_t)nr_cpus, &set);
	sched_setaffinity(0, sizeof(set), &set);

	timer_t timer;
	struct sigevent sev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGRTMIN };
	sev._sigev_un._tid = gettid();
	if (timer_create(CLOCK_MONOTONIC, &sev, &timer) < 0) {
		perror("timer_create");
		exit(2);
	}
	struct itimerspec its = {
		.it_interval = { 0, interval_us * 1000 },
		.it_value = { 0, interval_us * 1000 },
	};
	timer_settime(timer, 0, &its, NULL);

	for (uint64_t seq = 0; seq < w->events; seq++) {
		if (seq == w->events / 2) {
			for (int c = 0; c < nr_cpus; c++)
				CPU_SET(c, &set);
			sched_setaffinity(0, sizeof(set), &set);
		}
		emit(w->index, seq);
	}
	/* Block the signal before the timer goes, so no handler runs after
	 * the count is printed. */
	sigset_t block;
	sigemptyset(&block);
	sigaddset(&block, SIGRTMIN);
	pthread_sigmask(SIG_BLOCK, &block, NULL);
	timer_delete(timer);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: stress THREADS EVENTS INTERVAL_US\n");
		return 2;
	}
	int threads = atoi(argv[1]);
	uint64_t events = strtoull(argv[2], NULL, 10);
	interval_us = atol(argv[3]);
	if (threads < 1 || threads > 64 || interval_us < 1 || interval_us > 999999) {
		fprintf(stderr, "stress: bad arguments\n");
		return 2;
	}
	nr_cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (nr_cpus < 1)
		nr_cpus = 1;

	struct sigaction sa = { .sa_handler = on_timer, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGRTMIN, &sa, NULL);

	struct worker *w = calloc((size_t)threads, sizeof(*w));
	for (int i = 0; i < threads; i++) {
		w[i].index = (uint32_t)i;
		w[i].events = events;
		pthread_create(&w[i].thread, NULL, worker_main, &w[i]);
	}
	for (int i = 0; i < threads; i++)
		pthread_join(w[i].thread, NULL);
	for (int i = 0; i < threads; i++)
		printf("thread %u events %llu signals %llu\n", w[i].index,
		       (unsigned long long)w[i].events, (unsigned long long)w[i].signals);
	free(w);
	return 0;
}
