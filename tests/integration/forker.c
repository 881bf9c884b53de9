/*
 * forker.c - a program that forks, for the fork tests.
 *
 *   forker N M [PROG ARGS...]
 *       records forker:begin(n = N, m = M), forks N children; child k
 *       records forker:child_begin(k), M x forker:work(k, i, v = k * 1000000
 *       + i), forker:child_end(k) and calls exit(0). The parent records
 *       forker:forked(k) after each fork, waits for every child and
 *       records forker:end(n). With PROG, one more child (k = N) execs
 *       PROG ARGS right after the fork without recording anything.
 *       4 + N * (M + 2) events of this program in all (108 for 2 50).
 *   forker leaf K M
 *       what an exec'd child runs: M x forker:leaf(k = K, i).
 *   forker stress K
 *       a thread registers an empty range of events in a loop (what a
 *       library's constructor does), so the library's registry lock is
 *       often held, while the main thread forks K children one after the
 *       other; each child records forker:work and calls exit(0) (the
 *       library's destructors take that lock). A fork handler that
 *       leaves a lock held hangs a child. (Not dlopen/dlclose in the
 *       loop: glibc's own exit-handler lock is not reset after fork.)
 *       Prints "done I" once child I was waited for, so that a test
 *       tells a hang (no child ends) from a slow machine.
 *
 * Exit status: 0, or 1 when a child failed or was killed.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ringtrace/ringtrace.h>

/* Set by the main thread to stop registerer: relaxed, a request only
 * (pthread_join orders what follows). */
static int stop_loading;

static void *registerer(void *arg)
{
	static struct rt_event_desc *const none[1];
	(void)arg;
	while (!__atomic_load_n(&stop_loading, __ATOMIC_RELAXED)) {
		rt__register(none, none);
		rt__unregister(none, none);
	}
	return NULL;
}

static int wait_child(pid_t pid)
{
	int st;
	while (waitpid(pid, &st, 0) < 0)
		;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

static int stress(int k)
{
	pthread_t th;
	if (pthread_create(&th, NULL, registerer, NULL))
		return 1;
	int bad = 0;
	for (int i = 0; i < k && !bad; i++) {
		pid_t pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			rt_event(forker, work, k, (int32_t)i, i, 0, v, (int64_t)i);
			exit(0);
		}
		bad = wait_child(pid);
		/* Flushed before the next fork: a child never inherits
		 * buffered lines to write again at its exit. */
		printf("done %d\n", i);
		fflush(stdout);
	}
	__atomic_store_n(&stop_loading, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	return bad;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "leaf")) {
		int32_t k = atoi(argv[2]), m = atoi(argv[3]);
		for (int32_t i = 0; i < m; i++)
			rt_event(forker, leaf, k, k, i, i);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "stress"))
		return stress(atoi(argv[2]));
	if (argc < 3)
		return 2;
	int32_t n = atoi(argv[1]), m = atoi(argv[2]);
	char **prog = argc > 3 ? argv + 3 : NULL;
	if (n < 0 || n > 64)
		return 2;
	pid_t pids[65];
	rt_event(forker, begin, n, n, m, m);
	for (int32_t k = 0; k < n + (prog != NULL); k++) {
		fflush(NULL);
		pid_t pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0 && k == n) {
			execv(prog[0], prog);
			perror("execv");
			_exit(127);
		}
		if (pid == 0) {
			rt_event(forker, child_begin, k, k);
			for (int32_t i = 0; i < m; i++)
				rt_event(forker, work, k, k, i, i, v, (int64_t)k * 1000000 + i);
			rt_event(forker, child_end, k, k);
			exit(0);
		}
		pids[k] = pid;
		rt_event(forker, forked, k, k);
	}
	int bad = 0;
	for (int32_t k = 0; k < n + (prog != NULL); k++)
		bad |= wait_child(pids[k]);
	rt_event(forker, end, n, n);
	return bad;
}
