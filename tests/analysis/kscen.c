/*
 * kscen.c - programs with a known culprit for `ringtrace explain`'s
 * recorded scenarios (test_explain.py): each records app:req_begin /
 * app:req_end around the requests of a thread named "victim" and prints
 * "victim TID" and "culprit PID TID NAME" on stdout.
 *
 *   kscen cpu DIR   victim and a process "hog" (2 threads, nice -20) pinned
 *                   to the same CPU; each request is 2 ms of computing
 * The victim of pipe and io runs real-time (SCHED_FIFO), so that the load
 * of the machine does not make waiting for a CPU its slowest part.
 *
 *   kscen pipe DIR  victim reads a pipe that thread "filler" writes 300 ms
 *                   after each request begins
 *   kscen io DIR    victim appends 4 KiB and fdatasyncs per request
 *                   while process "syncer" writes 32 MiB and fsyncs, over
 *                   and over, in DIR
 *
 * Exit status 0, or 1 with a message on stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ringtrace/ringtrace.h>

#define REQUESTS 4

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/* Compute for ms of CPU time (thread CPU clock). */
static void compute(long ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	int64_t end = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + ms * 1000000L;
	volatile uint64_t x = 1;
	for (;;) {
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005ull + 1;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
		if ((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec >= end)
			return;
	}
}

static void *spin(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "hog");
	for (;;)
		compute(1000);
	return NULL;
}

static pid_t start_child(const char *name, void (*fn)(void *), void *arg)
{
	pid_t pid = fork();
	if (pid == 0) {
		prctl(PR_SET_NAME, name);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		fn(arg);
		_exit(0);
	}
	return pid;
}

/* Nice -20, and with autogroup scheduling (where nice counts only inside a
 * session's group, and each group gets its share) a session and group of
 * its own at nice -20: it wins CPU 0 against the rest of a loaded machine. */
static void hog_main(void *arg)
{
	int ready = *(int *)arg;
	pthread_t th;
	if (pin(0) < 0 || setpriority(PRIO_PROCESS, 0, -20) < 0)
		_exit(1);
	if (setsid() >= 0) {
		int fd = open("/proc/self/autogroup", O_WRONLY);
		if (fd >= 0) {
			if (write(fd, "-20", 3) != 3)
				_exit(1);
			close(fd);
		}
	}
	if (pthread_create(&th, NULL, spin, NULL) || write(ready, "r", 1) != 1)
		_exit(1);
	spin(NULL);
}

static int scen_cpu(void)
{
	int ready[2];
	char c;
	if (pipe(ready) < 0)
		return 1;
	pid_t hog = start_child("hog", hog_main, &ready[1]);
	/* the hog has its priority and both threads before any request */
	if (hog < 0 || pin(0) < 0 || read(ready[0], &c, 1) != 1)
		return 1;
	int32_t tid = (int32_t)gettid();
	for (uint32_t i = 0; i < REQUESTS; i++) {
		rt_event(app, req_begin, tid, tid, iter, i);
		compute(2);
		rt_event(app, req_end, tid, tid, iter, i);
	}
	kill(hog, SIGKILL);
	waitpid(hog, NULL, 0);
	printf("victim %d\nculprit %d %d hog\n", tid, hog, hog);
	return 0;
}

/* The victim real-time (SCHED_FIFO 1; after the other threads started:
 * they do not inherit it): waiting for a CPU under load, whatever the
 * other processes' nice or autogroup, does not hide what it waits for. It
 * sleeps most of the time. */
static int victim_first(void)
{
	struct sched_param p = { .sched_priority = 1 };
	return sched_setscheduler(0, SCHED_FIFO, &p);
}

static int pipe_fd[2], go[2];
static int32_t filler_tid;
static volatile int stop;

static void *filler(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "filler");
	filler_tid = (int32_t)gettid();
	char c;
	/* one byte 300 ms after each request's go */
	while (read(go[0], &c, 1) == 1) {
		sleep_ms(300);
		if (write(pipe_fd[1], &c, 1) != 1)
			return NULL;
	}
	return NULL;
}

static int scen_pipe(void)
{
	if (pipe(pipe_fd) < 0 || pipe(go) < 0)
		return 1;
	pthread_t th;
	if (pthread_create(&th, NULL, filler, NULL) || victim_first() < 0)
		return 1;
	int32_t tid = (int32_t)gettid();
	for (uint32_t i = 0; i < REQUESTS; i++) {
		rt_event(app, req_begin, tid, tid, iter, i);
		char c = 'x';
		if (write(go[1], &c, 1) != 1 || read(pipe_fd[0], &c, 1) != 1)
			return 1;
		rt_event(app, req_end, tid, tid, iter, i);
		sleep_ms(5);
	}
	close(go[1]);
	pthread_join(th, NULL);
	printf("victim %d\nculprit %d %d filler\n", tid, (int)getpid(), filler_tid);
	return 0;
}

struct syncer_arg {
	const char *dir;
	int ready;		/* written to after the first round */
};

static void syncer_main(void *arg)
{
	const struct syncer_arg *a = arg;
	const char *dir = a->dir;
	char path[4096];
	snprintf(path, sizeof(path), "%s/syncer.dat", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		_exit(1);
	static char buf[1 << 20];
	memset(buf, 's', sizeof(buf));
	for (unsigned round = 0;; round++) {
		/* new blocks each round: the journal's commits wait for them */
		if (ftruncate(fd, 0) < 0 || lseek(fd, 0, SEEK_SET) < 0)
			_exit(1);
		for (int i = 0; i < 32; i++) {
			buf[0] = (char)round;	/* new data each round */
			if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
				_exit(1);
		}
		fsync(fd);
		if (round == 0 && write(a->ready, "r", 1) != 1)
			_exit(1);
	}
}

static int scen_io(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/victim.dat", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
	if (fd < 0)
		return 1;
	int ready[2];
	char c;
	if (pipe(ready) < 0)
		return 1;
	struct syncer_arg a = { .dir = dir, .ready = ready[1] };
	pid_t syncer = start_child("syncer", syncer_main, &a);
	/* the syncer has written and synced a round before any request */
	if (syncer < 0 || victim_first() < 0 || read(ready[0], &c, 1) != 1)
		return 1;
	int32_t tid = (int32_t)gettid();
	static char buf[4096];
	memset(buf, 'v', sizeof(buf));
	int64_t end = now_ns() + 1500000000;	/* 1.5 s of requests */
	for (uint32_t i = 0; now_ns() < end; i++) {
		rt_event(app, req_begin, tid, tid, iter, i);
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) || fdatasync(fd) < 0)
			return 1;
		rt_event(app, req_end, tid, tid, iter, i);
		sleep_ms(2);
	}
	kill(syncer, SIGKILL);
	waitpid(syncer, NULL, 0);
	close(fd);
	printf("victim %d\nculprit %d %d syncer\n", tid, syncer, syncer);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: kscen cpu|pipe|io DIR\n");
		return 1;
	}
	prctl(PR_SET_NAME, "victim");
	setvbuf(stdout, NULL, _IOLBF, 0);
	int ret = 1;
	if (!strcmp(argv[1], "cpu"))
		ret = scen_cpu();
	else if (!strcmp(argv[1], "pipe"))
		ret = scen_pipe();
	else if (!strcmp(argv[1], "io"))
		ret = scen_io(argv[2]);
	if (ret)
		fprintf(stderr, "kscen %s: %s\n", argv[1], strerror(errno));
	return ret;
}
