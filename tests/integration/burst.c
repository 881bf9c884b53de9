/*
 * burst.c - one thread on one CPU records N events of 16 payload bytes
 * as fast as it can, then behaves as told:
 *   burst N return         return from main (status 0)
 *   burst N status S       exit(S)
 *   burst N exit-thread    exit(3) from a second thread while the main
 *                          thread keeps tracing (status 3)
 *   burst N sigint|sigterm the program kills itself with the signal
 *   burst N threads        prints how many threads the process has
 *   burst N _exit          _exit(0): no atexit handler runs
 *   burst N abort          abort(): killed by SIGABRT
 *   burst N pause          prints "recorded" and waits to be killed
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ringtrace/ringtrace.h>

static volatile int keep_going = 1;

static void *exiter(void *arg)
{
	(void)arg;
	exit(3);
}

static int count_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	uint64_t n = strtoull(argv[1], NULL, 10);
	const char *how = argv[2];
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	sched_setaffinity(0, sizeof(one), &one);

	for (uint64_t seq = 0; seq < n; seq++)
		rt_event(burst, ev, seq, seq, check, seq * 7 + 1);
	rt_event(burst, done, count, n);

	if (!strcmp(how, "_exit"))
		_exit(0);
	if (!strcmp(how, "abort"))
		abort();
	if (!strcmp(how, "status"))
		exit(argc > 3 ? atoi(argv[3]) : 0);
	if (!strcmp(how, "exit-thread")) {
		pthread_t t;
		pthread_create(&t, NULL, exiter, NULL);
		for (uint64_t i = 0; keep_going; i++)
			rt_event(burst, after, i, i);
	}
	if (!strcmp(how, "sigint"))
		kill(getpid(), SIGINT);
	if (!strcmp(how, "sigterm"))
		kill(getpid(), SIGTERM);
	if (!strcmp(how, "sigint") || !strcmp(how, "sigterm"))
		for (;;)
			pause();
	if (!strcmp(how, "pause")) {
		printf("recorded\n");
		fflush(stdout);
		for (;;)
			pause();
	}
	if (!strcmp(how, "threads"))
		printf("threads %d\n", count_threads());
	return 0;
}
