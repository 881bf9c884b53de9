/*
 * app_pause.c - a program that holds one of its writers at a point of
 * the library's event path (src/lib/test_hook.h: it links with the
 * tests' copy of the library, which has the hold points), driven line by
 * line on stdin; each command answers one line on stdout when done:
 *   cpu N          run on CPU N only (this thread and the threads it
 *                  starts from then on)
 *   emit N FROM    N events pause:ev { seq = FROM.., pad } from this
 *                  thread
 *   hold SEQ AT    a second thread records pause:ev { seq = SEQ }, held
 *                  at AT: "before" (its buffer looked up, nothing
 *                  reserved) or "reserved" (its slot reserved, nothing
 *                  written); "ok" once it is held there, an error line
 *                  if it is not within 60 s
 *   release        lets it go on; "ok" once its call returned
 *   exit           exit(0)
 * At start it prints "ready PID". pause:ev has a string field: with a
 * context in the session it takes the library's general path, where the
 * hold points are.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ringtrace/ringtrace.h>

#include "../../src/lib/test_hook.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static bool held, released;
static int hold_at;
static __thread bool holder;
static const char pad[] = "0123456789abcdef0123456789abcdef0123456789abcdef";

/* The tests' library calls this at each hold point (exported: the build
 * hides symbols by default). */
__attribute__((visibility("default"))) void rt__test_hook(int point);
void rt__test_hook(int point)
{
	if (!holder || point != hold_at)
		return;
	pthread_mutex_lock(&lock);
	held = true;
	pthread_cond_broadcast(&cond);
	while (!released)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
}

static void *hold_thread(void *arg)
{
	uint64_t seq = (uint64_t)(uintptr_t)arg;
	holder = true;
	rt_event(pause, ev, seq, seq, pad, pad);
	return NULL;
}

int main(void)
{
	char line[256], at[32];
	unsigned long long n, from;
	pthread_t t;
	bool started = false;
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		if (sscanf(line, "cpu %llu", &n) == 1) {
			cpu_set_t one;
			CPU_ZERO(&one);
			CPU_SET((int)n, &one);
			if (sched_setaffinity(0, sizeof(one), &one) < 0) {
				printf("error cpu %llu\n", n);
				fflush(stdout);
				continue;
			}
			printf("ok\n");
		} else if (sscanf(line, "emit %llu %llu", &n, &from) == 2) {
			for (uint64_t seq = from; seq < from + n; seq++)
				rt_event(pause, ev, seq, seq, pad, pad);
			printf("ok\n");
		} else if (sscanf(line, "hold %llu %31s", &n, at) == 2 && !started) {
			hold_at = !strcmp(at, "reserved") ? RT_TEST_RESERVED : RT_TEST_BEFORE_RESERVE;
			pthread_create(&t, NULL, hold_thread, (void *)(uintptr_t)n);
			started = true;
			/* Bounded: an event that no longer takes the path of
			 * the hold points fails the test instead of hanging it. */
			struct timespec until;
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += 60;
			int r = 0;
			pthread_mutex_lock(&lock);
			while (!held && r == 0)
				r = pthread_cond_timedwait(&cond, &lock, &until);
			bool ok = held;
			pthread_mutex_unlock(&lock);
			printf(ok ? "ok\n" : "error: the writer never reached the hold point\n");
		} else if (!strcmp(line, "release\n") && started) {
			pthread_mutex_lock(&lock);
			released = true;
			pthread_cond_broadcast(&cond);
			pthread_mutex_unlock(&lock);
			pthread_join(t, NULL);
			printf("ok\n");
		} else if (!strcmp(line, "exit\n")) {
			return 0;
		} else {
			printf("error %s", line);
		}
		fflush(stdout);
	}
	return 0;
}
