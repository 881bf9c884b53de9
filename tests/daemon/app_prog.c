/*
 * app_prog.c - an instrumented program the app tests drive line by line
 * on stdin (each command answers one line on stdout when done):
 *   emit N TAG     N events app:tick { seq = 0..N-1, tag = TAG, value = 3*seq }
 *   warn N         N events app:warn (log level WARNING) { seq }
 *   blob N         N events app:blob { seq = 0..N-1, data = seq % 6 bytes,
 *                  byte j being (seq + 3 * j) & 0xff }
 *   fork N TAG     fork; the child waits (up to 10 s) until it registered
 *                  again (its registration runs in the background and
 *                  ends with the start of the "rt-listener" thread),
 *                  emits N app:tick with TAG, exits; the parent waits for
 *                  it ("ok STATUS")
 *   threads T N [P]  T threads each emit N app:tick { seq = 0..N-1, tag =
 *                  "PK" for thread K (P: "t" by default), value = 3*seq }
 *                  at the same time, pausing 5 ms after every 1000 events
 *   storm T        starts T threads (at most 16) that emit all the time
 *                  (5 and 5 events, then 1 ms of sleep), in turn, app:tick { seq, tag = "wK" for thread K,
 *                  value = 3*seq } (a string: the library's path) and
 *                  app:warn { seq } (fixed size: the call site's own),
 *                  and a thread that sends SIGUSR1 to one of them every
 *                  millisecond, whose handler emits app:tick with tag
 *                  "sig"; answers "ok" once they run
 *   calm           stops the storm ("ok EVENTS SIGNAL_EVENTS")
 *   exec           execs itself (the new image says "ready PID" again)
 *   spin MS        app:tick with tag "spin" for MS milliseconds ("ok COUNT")
 *   sigstack S N   N app:tick { seq = 0..N-1, tag = "sig", value = 3*seq },
 *                  each from a SIGUSR1 handler on an alternate signal stack
 *                  of S bytes with an inaccessible page below it ("ok N";
 *                  a deeper stack is a SIGSEGV)
 *   closefds       closes descriptors 3 to 1023 (the library's too), as
 *                  daemons and sandboxes do
 *   pair           creates a socketpair (it gets the lowest free numbers)
 *                  and sends 64 bytes from its second end, left unread
 *   pairtest       reads those 64 bytes at the first end, then sends 64
 *                  bytes each way and reads them back ("ok intact", or
 *                  "ok broken" when a descriptor of the pair was closed or
 *                  its data read by someone else); then sends the next 64
 *                  bytes to be left unread
 *   exit           exit(0)
 * At start it prints "ready PID".
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
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

static volatile sig_atomic_t sig_seq;

static void on_usr1(int sig)
{
	(void)sig;
	rt_event(app, tick, seq, (uint64_t)sig_seq, tag, "sig", value, (int32_t)(3 * sig_seq));
	sig_seq++;
}

/* The sigstack command: the events emitted, or -1. */
static long on_sigstack(size_t size, uint64_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, page + size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	if (m == MAP_FAILED)
		return -1;
	stack_t ss = { .ss_sp = m + page, .ss_size = size }, off = { .ss_flags = SS_DISABLE };
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_ONSTACK }, old;
	long done = -1;
	if (mprotect(m, page, PROT_NONE) < 0 || sigaltstack(&ss, NULL) < 0)
		goto out;
	if (sigaction(SIGUSR1, &sa, &old) == 0) {
		sig_seq = 0;
		for (uint64_t i = 0; i < n; i++)
			raise(SIGUSR1);
		done = sig_seq;
		sigaction(SIGUSR1, &old, NULL);
	}
	sigaltstack(&off, NULL);
out:
	munmap(m, page + size);
	return done;
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

static void run_threads(unsigned t, uint64_t n, const char *prefix)
{
	struct worker w[64];
	if (t > 64)
		t = 64;
	for (unsigned i = 0; i < t; i++) {
		w[i].n = n;
		snprintf(w[i].tag, sizeof(w[i].tag), "%.8s%u", prefix, i);
		pthread_create(&w[i].th, NULL, work, &w[i]);
	}
	for (unsigned i = 0; i < t; i++)
		pthread_join(w[i].th, NULL);
}

/* The storm: its threads, and how many events they emitted. */
#define STORM_MAX 16
static pthread_t storm_th[STORM_MAX], storm_sig_th;
static unsigned storm_n;
static int storm_stop;
static uint64_t storm_events, storm_sig_events;

static void on_storm_sig(int sig)
{
	(void)sig;
	uint64_t k = __atomic_fetch_add(&storm_sig_events, 1, __ATOMIC_RELAXED);
	rt_event(app, tick, seq, k, tag, "sig", value, (int32_t)(3 * k));
}

static void *storm_work(void *arg)
{
	char tag[16];
	snprintf(tag, sizeof(tag), "w%u", (unsigned)(uintptr_t)arg);
	uint64_t i = 0;
	while (!__atomic_load_n(&storm_stop, __ATOMIC_RELAXED)) {
		rt_event(app, tick, seq, i, tag, tag, value, (int32_t)(3 * i));
		rt_event_loglevel(RT_LOGLEVEL_WARNING, app, warn, seq, i);
		/* About 10,000 events a second each: a trace read back in
		 * a few seconds. */
		if (++i % 5 == 0)
			usleep(1000);
	}
	__atomic_fetch_add(&storm_events, 2 * i, __ATOMIC_RELAXED);
	return NULL;
}

static void *storm_signals(void *arg)
{
	(void)arg;
	for (unsigned k = 0; !__atomic_load_n(&storm_stop, __ATOMIC_RELAXED); k++) {
		pthread_kill(storm_th[k % storm_n], SIGUSR1);
		usleep(1000);
	}
	return NULL;
}

static int storm_start(unsigned t)
{
	struct sigaction sa = { .sa_handler = on_storm_sig, .sa_flags = SA_RESTART };
	if (t == 0 || t > STORM_MAX || storm_n || sigaction(SIGUSR1, &sa, NULL) < 0)
		return -1;
	storm_stop = 0;
	storm_events = storm_sig_events = 0;
	for (storm_n = 0; storm_n < t; storm_n++)
		if (pthread_create(&storm_th[storm_n], NULL, storm_work,
				   (void *)(uintptr_t)storm_n) != 0)
			break;
	if (storm_n == 0 || pthread_create(&storm_sig_th, NULL, storm_signals, NULL) != 0)
		return -1;
	return 0;
}

static void storm_end(void)
{
	__atomic_store_n(&storm_stop, 1, __ATOMIC_RELAXED);
	pthread_join(storm_sig_th, NULL);
	for (unsigned i = 0; i < storm_n; i++)
		pthread_join(storm_th[i], NULL);
	storm_n = 0;
}

static int pair[2] = { -1, -1 };

static void pair_bytes(int from, char out[64])
{
	for (int i = 0; i < 64; i++)
		out[i] = (char)(from * 64 + i);
}

static int pair_send(int from)
{
	char out[64];
	pair_bytes(from, out);
	return write(from, out, 64) == 64 ? 0 : -1;
}

/* Read the 64 bytes `from` sent at `to`, within 2 s. */
static int pair_receive(int from, int to)
{
	char out[64], in[64];
	pair_bytes(from, out);
	size_t got = 0;
	while (got < sizeof(in)) {
		struct pollfd p = { .fd = to, .events = POLLIN };
		if (poll(&p, 1, 2000) != 1 || (p.revents & POLLNVAL))
			return -1;
		ssize_t n = read(to, in + got, sizeof(in) - got);
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return memcmp(in, out, sizeof(in)) ? -1 : 0;
}

/* Send 64 bytes from one end, read them at the other within 2 s. */
static int pair_one_way(int from, int to)
{
	return pair_send(from) < 0 ? -1 : pair_receive(from, to);
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
		} else if (sscanf(line, "blob %llu", &n) == 1) {
			for (uint64_t i = 0; i < n; i++) {
				uint8_t data[6];
				for (unsigned j = 0; j < sizeof(data); j++)
					data[j] = (uint8_t)((i + 3 * j) & 0xff);
				rt_event(app, blob, seq, i, data, rt_bytes(data, (size_t)(i % 6)));
			}
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
		} else if (sscanf(line, "sigstack %u %llu", &nt, &n) == 2) {
			printf("ok %ld\n", on_sigstack(nt, n));
		} else if (sscanf(line, "threads %u %llu", &nt, &n) == 2) {
			char prefix[9] = "t";
			if (sscanf(line, "threads %*u %*u %8s", prefix) != 1)
				strcpy(prefix, "t");
			run_threads(nt, n, prefix);
			printf("ok\n");
		} else if (sscanf(line, "storm %u", &nt) == 1) {
			printf(storm_start(nt) == 0 ? "ok\n" : "storm failed\n");
		} else if (!strncmp(line, "calm", 4)) {
			storm_end();
			printf("ok %llu %llu\n", (unsigned long long)storm_events,
			       (unsigned long long)storm_sig_events);
		} else if (!strncmp(line, "exec", 4)) {
			fflush(stdout);
			execl("/proc/self/exe", "app_prog", (char *)NULL);
			printf("exec failed\n");
		} else if (!strncmp(line, "closefds", 8)) {
			for (int fd = 3; fd < 1024; fd++)
				close(fd);
			printf("ok\n");
		} else if (!strncmp(line, "pairtest", 8)) {
			bool ok = pair_receive(pair[1], pair[0]) == 0 &&
				  pair_one_way(pair[0], pair[1]) == 0 &&
				  pair_one_way(pair[1], pair[0]) == 0 &&
				  pair_send(pair[1]) == 0;
			printf("ok %s\n", ok ? "intact" : "broken");
		} else if (!strncmp(line, "pair", 4)) {
			if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) < 0 ||
			    pair_send(pair[1]) < 0)
				printf("socketpair failed\n");
			else
				printf("ok %d %d\n", pair[0], pair[1]);
		} else if (!strncmp(line, "exit", 4)) {
			exit(0);
		} else {
			printf("unknown command\n");
		}
	}
	return 0;
}
