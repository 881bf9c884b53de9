/*
 * app_prog.c - an instrumented program the app tests drive line by line
 * on stdin (each command answers one line on stdout when done):
 *   emit N TAG     N events app:tick { seq = 0..N-1, tag = TAG, value = 3*seq }
 *   warn N         N events app:warn (log level WARNING) { seq }
 *   fork N TAG     fork; the child waits (up to 10 s) until it registered
 *                  again (its registration runs in the background and
 *                  ends with the start of the "rt-listener" thread),
 *                  emits N app:tick with TAG, exits; the parent waits for
 *                  it ("ok STATUS")
 *   threads T N    T threads each emit N app:tick { seq = 0..N-1, tag =
 *                  "tK" for thread K, value = 3*seq } at the same time,
 *                  pausing 5 ms after every 1000 events
 *   exec           execs itself (the new image says "ready PID" again)
 *   spin MS        app:tick with tag "spin" for MS milliseconds ("ok COUNT")
 *   exit           exit(0)
 * At start it prints "ready PID".
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ringtrace/ringtrace.h>

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Whether this process has a thread named `name`. */
static int has_thread(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int found = 0;
	while (d && !found && (e = readdir(d))) {
		char path[300], comm[32] = "";
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (f && fgets(comm, sizeof(comm), f))
			found = !strncmp(comm, name, strlen(name));
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return found;
}

static void emit(uint64_t n, const char *tag)
{
	for (uint64_t i = 0; i < n; i++)
		rt_event(app, tick, seq, i, tag, tag, value, (int32_t)(3 * i));
}

struct worker {
	pthread_t th;
	uint64_t n;
	char tag[16];
};

static void *work(void *arg)
{
	struct worker *w = arg;
	for (uint64_t i = 0; i < w->n; i++) {
		rt_event(app, tick, seq, i, tag, w->tag, value, (int32_t)(3 * i));
		if (i % 1000 == 999)
			usleep(5000);
	}
	return NULL;
}

static void run_threads(unsigned t, uint64_t n)
{
	struct worker w[64];
	if (t > 64)
		t = 64;
	for (unsigned i = 0; i < t; i++) {
		w[i].n = n;
		snprintf(w[i].tag, sizeof(w[i].tag), "t%u", i);
		pthread_create(&w[i].th, NULL, work, &w[i]);
	}
	for (unsigned i = 0; i < t; i++)
		pthread_join(w[i].th, NULL);
}

int main(void)
{
	char line[256], tag[64];
	unsigned long long n;
	unsigned nt;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		if (sscanf(line, "emit %llu %63s", &n, tag) == 2) {
			emit(n, tag);
			printf("ok\n");
		} else if (sscanf(line, "warn %llu", &n) == 1) {
			for (uint64_t i = 0; i < n; i++)
				rt_event_loglevel(RT_LOGLEVEL_WARNING, app, warn, seq, i);
			printf("ok\n");
		} else if (sscanf(line, "fork %llu %63s", &n, tag) == 2) {
			fflush(stdout);
			pid_t pid = fork();
			if (pid == 0) {
				for (int i = 0; i < 1000 && !has_thread("rt-listener"); i++)
					usleep(10000);
				emit(n, tag);
				exit(0);
			}
			int st = -1;
			if (pid > 0)
				waitpid(pid, &st, 0);
			printf("ok %d\n", st);
		} else if (sscanf(line, "spin %llu", &n) == 1) {
			uint64_t end = now_ms() + n, count = 0;
			while (now_ms() < end) {
				for (int i = 0; i < 100; i++, count++)
					rt_event(app, tick, seq, count, tag, "spin",
						 value, (int32_t)count);
			}
			printf("ok %llu\n", (unsigned long long)count);
		} else if (sscanf(line, "threads %u %llu", &nt, &n) == 2) {
			run_threads(nt, n);
			printf("ok\n");
		} else if (!strncmp(line, "exec", 4)) {
			fflush(stdout);
			execl("/proc/self/exe", "app_prog", (char *)NULL);
			printf("exec failed\n");
		} else if (!strncmp(line, "exit", 4)) {
			exit(0);
		} else {
			printf("unknown command\n");
		}
	}
	return 0;
}
