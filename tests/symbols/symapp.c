/*
 * symapp.c - a program whose events' ip contexts tests/symbols checks:
 * main_work (in the executable) and lib_work (in LIB, loaded with
 * dlopen after tracing started) each record one event, and a thread
 * named "sym-worker" records one. It writes to SIDE, one per line,
 *   main_work ADDR / lib_work ADDR   the functions' addresses (dlsym for
 *                                    lib_work)
 *   worker TID                       the named thread's id
 * then, with "wait", prints "ready" and waits until its standard input
 * closes (a snapshot is taken meanwhile), the worker still running.
 *
 * usage: symapp LIB SIDE [wait]
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <ringtrace/ringtrace.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int worker_tid, done;

__attribute__((noinline)) void main_work(int n);
__attribute__((noinline)) void main_work(int n)
{
	rt_event(symapp, main_work, n, n);
	__asm__ volatile("" ::: "memory");	/* not a tail call */
}

static void *worker(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "sym-worker");
	rt_event(symapp, in_worker, x, 1);
	pthread_mutex_lock(&lock);
	worker_tid = gettid();
	pthread_cond_broadcast(&cond);
	while (!done)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	FILE *side = fopen(argv[2], "w");
	if (!side)
		return 1;
	pthread_t th;
	if (pthread_create(&th, NULL, worker, NULL))
		return 1;
	pthread_mutex_lock(&lock);
	while (!worker_tid)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	main_work(1);
	void *h = dlopen(argv[1], RTLD_NOW);
	void (*lib_work)(int) = h ? (void (*)(int))dlsym(h, "lib_work") : NULL;
	if (!lib_work) {
		fprintf(stderr, "symapp: %s\n", dlerror());
		return 1;
	}
	lib_work(2);
	fprintf(side, "main_work %p\nlib_work %p\nworker %d\n", (void *)main_work,
		(void *)lib_work, worker_tid);
	fclose(side);
	if (argc > 3 && !strcmp(argv[3], "wait")) {
		printf("ready\n");
		fflush(stdout);
		char buf[64];
		while (read(0, buf, sizeof(buf)) > 0)
			;
	}
	pthread_mutex_lock(&lock);
	done = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	pthread_join(th, NULL);
	return 0;
}
