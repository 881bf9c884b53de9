/*
 * pl_mutex - a contended mutex, for the pthread helper's test
 * (test_preload.py); not linked with libringtrace. Thread A locks the
 * mutex and lets B try: B's trylock fails (EBUSY), then B locks, and waits
 * until A unlocks (A sleeps 20 ms after B's trylock). Prints:
 *
 *   mutex PTR
 *   tid A TID / tid B TID
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int held, tried;	/* atomics: A holds m, B's trylock ran */
static int tid_a, tid_b;

static void wait_for(int *flag)
{
	while (!__atomic_load_n(flag, __ATOMIC_ACQUIRE))
		sched_yield();
}

static void *thread_b(void *arg)
{
	(void)arg;
	tid_b = gettid();
	wait_for(&held);
	int busy = pthread_mutex_trylock(&m);
	__atomic_store_n(&tried, 1, __ATOMIC_RELEASE);
	if (busy == 0)
		return NULL;	/* the test finds no EBUSY and fails */
	pthread_mutex_lock(&m);
	pthread_mutex_unlock(&m);
	return NULL;
}

int main(void)
{
	pthread_t b;
	tid_a = gettid();
	pthread_mutex_lock(&m);
	if (pthread_create(&b, NULL, thread_b, NULL))
		return 1;
	__atomic_store_n(&held, 1, __ATOMIC_RELEASE);
	wait_for(&tried);
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	pthread_mutex_unlock(&m);
	pthread_join(b, NULL);
	printf("mutex %p\ntid A %d\ntid B %d\n", (void *)&m, tid_a, tid_b);
	return 0;
}
