/*
 * threads.c - named threads, for the thread-identity tests:
 *   threads N
 * The main thread names itself "rt-main" and records app:setup, whose
 * field `pid` (1) is not its pid. Two workers name themselves "worker-0"
 * and "worker-1" before their first event; each records N rounds of
 *   app:begin, app:entry, app:exit, app:start, app:stop, app:io_begin,
 *   app:io_end, app:end
 * (field pid = 1000 + worker: not the process either), sleeping 100 us
 * between app:start and app:stop; worker 1's last round sleeps 20 ms
 * there instead: the outlier of every pair around it. A third thread
 * names itself "late-a", records app:tick (n 0), is renamed "late-b" by
 * the main thread (pthread_setname_np on another thread), then records
 * app:tick (n 1). Prints "pid PID", "main TID", "workers TID TID",
 * "late TID".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <ringtrace/ringtrace.h>

#define WORKERS 2
#define SHORT_NS 100000L
#define LONG_NS 20000000L

static unsigned n_iter;
static int32_t tids[WORKERS], late_tid;
static sem_t late_named, late_renamed;

static void sleep_ns(long ns)
{
	struct timespec ts = { ns / 1000000000L, ns % 1000000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
}

static void *worker(void *arg)
{
	int idx = (int)(intptr_t)arg;
	char name[16];
	snprintf(name, sizeof(name), "worker-%d", idx);
	pthread_setname_np(pthread_self(), name);
	tids[idx] = (int32_t)gettid();
	int32_t pid = 1000 + idx;
	for (uint32_t i = 0; i < n_iter; i++) {
		rt_event(app, begin, pid, pid, iter, i);
		rt_event(app, entry, iter, i);
		rt_event(app, exit, iter, i);
		rt_event(app, start, iter, i);
		sleep_ns(idx == 1 && i == n_iter - 1 ? LONG_NS : SHORT_NS);
		rt_event(app, stop, iter, i);
		rt_event(app, io_begin, iter, i);
		rt_event(app, io_end, iter, i);
		rt_event(app, end, pid, pid, iter, i);
	}
	return NULL;
}

static void *late(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "late-a");
	late_tid = (int32_t)gettid();
	rt_event(app, tick, n, (uint32_t)0);
	sem_post(&late_named);
	while (sem_wait(&late_renamed) != 0)
		;
	rt_event(app, tick, n, (uint32_t)1);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	n_iter = (unsigned)strtoul(argv[1], NULL, 10);
	pthread_setname_np(pthread_self(), "rt-main");
	rt_event(app, setup, pid, (int32_t)1);
	sem_init(&late_named, 0, 0);
	sem_init(&late_renamed, 0, 0);
	pthread_t th[WORKERS], lt;
	for (int i = 0; i < WORKERS; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i))
			return 1;
	if (pthread_create(&lt, NULL, late, NULL))
		return 1;
	while (sem_wait(&late_named) != 0)
		;
	pthread_setname_np(lt, "late-b");
	sem_post(&late_renamed);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(th[i], NULL);
	pthread_join(lt, NULL);
	printf("pid %d\nmain %d\nworkers %d %d\nlate %d\n", (int)getpid(), (int)gettid(),
	       tids[0], tids[1], late_tid);
	return 0;
}
