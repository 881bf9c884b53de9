/*
 * strparts.c - events with strings and byte sequences of every length,
 * for tests/integration/test_record.py (Strings): recorded by the
 * library in one rseq section (src/lib/parts_section.h) when the event
 * goes to one buffer without contexts, by its general path otherwise;
 * the trace is the same either way.
 *
 * T threads each record N rounds; round i of thread t records
 *   strs:s  (t u16, i u32, s string of LENS[i % NL] characters, tail u8)
 *   strs:q  (t, i, q bytes of LENS[(i + 1) % NL] bytes, tail u32)
 *   strs:m  (t, i, a string, b bytes, c string, d u64), lengths
 *           LENS[(i + 2) % NL], LENS[(i + 3) % NL], LENS[(i + 5) % NL]
 * with the characters and bytes functions of (t, i, position) that the
 * test recomputes (chr, byte below). Each thread moves between CPUs
 * every 16 rounds (migration between events, and within one when the
 * kernel moves it), and a signal thread sends it SIGUSR1 all along: the
 * handler records strs:sig (t u16, k u32 its count, s string of
 * LENS[k % NL] characters) in the middle of the thread's events. At the
 * end each thread records strs:done (t, signals handled), and the main
 * thread records strs:big (k u32, s string) for each LEN: k = 0, 1, ...,
 * s LEN times 'A' + k (the test passes lengths around and past what a
 * sub-buffer takes).
 *
 * strs:changed (changed_after_sizing below) is recorded first, then by
 * each thread every 100 rounds.
 *
 * usage: strparts T N [LEN...]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ringtrace/ringtrace.h>

#ifdef STRPARTS_NO_AVX2
/* strparts_sse, linked with the library's test copy: its copies for the
 * CPUs without AVX2 (src/lib/test_hook.h). */
__attribute__((visibility("default"))) const int rt__test_no_avx2 = 1;
#endif

static const uint32_t LENS[] = { 0,  1,  2,  3,  4,  5,  7,   8,   9,   15,  16,  17,
				 23, 24, 31, 32, 33, 47, 48,  63,  64,  65,  95,  96,
				 97, 127, 128, 129, 191, 255, 256, 257, 300, 511, 1000 };
#define NL (sizeof(LENS) / sizeof(LENS[0]))
#define MAXLEN 1000

static char chr(uint32_t t, uint32_t i, uint32_t j)
{
	return (char)('a' + (t * 7 + i * 3 + j) % 26);
}

static uint8_t byte(uint32_t t, uint32_t i, uint32_t j)
{
	return (uint8_t)(t * 31 + i * 5 + j * 3);
}

static void fill_str(char *s, uint32_t t, uint32_t i, uint32_t len)
{
	for (uint32_t j = 0; j < len; j++)
		s[j] = chr(t, i, j);
	s[len] = '\0';
}

static void fill_bytes(uint8_t *b, uint32_t t, uint32_t i, uint32_t len)
{
	for (uint32_t j = 0; j < len; j++)
		b[j] = byte(t, i, j);
}

static int nthreads, nrounds;
static pthread_t threads[64];
static volatile sig_atomic_t stop_signals;
static int ncpus;
/* The workers wait here once done, the main thread too: no signal goes
 * to a thread that has exited. */
static pthread_barrier_t finished;

/* Per thread: its number and the signals its handler took. */
static __thread int self = -1;
static __thread volatile uint32_t nsig;

static void on_usr1(int sig)
{
	(void)sig;
	if (self < 0)
		return;
	char s[MAXLEN + 1];
	uint32_t k = nsig;
	fill_str(s, (uint32_t)self + 1000, k, LENS[k % NL]);
	rt_event(strs, sig, t, (uint16_t)self, k, k, s, (const char *)s);
	nsig = k + 1;
}

/* What rt_event does for an event of a sequence, a string and an int,
 * written out by hand so that the string can be shorter than the size
 * the call site computed (as if another thread had changed it in
 * between), one event for each way the section copies (1 to 3 bytes, 4
 * to 7, 8 to 15, 16 to 31, 32 and more), each after a 200-byte sequence
 * (the widest copy), and longer for one: the trace has each padded with
 * '#' to its size (an early NUL must not end the field), the grown one
 * cut, NULL as "(null)", and the int after it intact (its variant). */
static void changed_after_sizing(void)
{
	static const struct rt_field_desc fields[] = {
		{ "q200", RT_TYPE_BYTES }, { "s", RT_TYPE_STRING }, { "k", RT_TYPE_S32 }, { NULL, 0 }
	};
	static struct rt_event_desc ev = { 0, RT_ABI_VERSION, "strs", "changed", RT_LOGLEVEL_INFO,
					   3, fields, __FILE__, __LINE__, NULL, NULL };
	static struct rt_event_desc *const list[] = { &ev };
	static char x100[101];
	static uint8_t q200[200];
	/* Registered once (the first call: main, before the threads). */
	static int registered;
	if (!registered) {
		memset(x100, 'x', 100);
		for (int j = 0; j < 200; j++)
			q200[j] = (uint8_t)(j + 1);
		rt__register(list, list + 1);
		registered = 1;
	}
	/* The string and the size the call site computed for it. */
	const struct {
		const char *s;
		uint32_t size;
	} v[] = { { "abcdef", 4 },	   { "ab", 4 },	  { "ab", 6 },	 { "abcdefghi", 13 },
		  { "vwxyz", 20 },	   { "0123456789", 50 }, { x100, 301 }, { NULL, 7 } };
	struct rt_bytes q = rt_bytes(q200, sizeof(q200));
	for (int32_t k = 0; k < (int32_t)(sizeof(v) / sizeof(v[0])); k++) {
		const char *str = v[k].s;
		const struct rt_part parts[] = { { &q, 4 + 200, RT_PART_BYTES },
						 { &str, v[k].size, RT_PART_STRING },
						 { &k, 4, RT_PART_FIXED } };
		if (__atomic_load_n(&ev.enabled, __ATOMIC_RELAXED))
			rt__record_parts(&ev, parts, 3);
	}
}

static void *worker(void *arg)
{
	self = (int)(intptr_t)arg;
	const uint32_t t = (uint32_t)self;
	char s[MAXLEN + 1], a[MAXLEN + 1], c[MAXLEN + 1];
	uint8_t q[MAXLEN], b[MAXLEN];
	for (uint32_t i = 0; i < (uint32_t)nrounds; i++) {
		if (ncpus > 1 && i % 16 == 0) {
			cpu_set_t set;
			CPU_ZERO(&set);
			CPU_SET((int)((i / 16 + t) % (uint32_t)ncpus), &set);
			pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
		}
		uint32_t ls = LENS[i % NL], lq = LENS[(i + 1) % NL];
		fill_str(s, t, i, ls);
		rt_event(strs, s, t, (uint16_t)t, i, i, s, (const char *)s, tail, (uint8_t)(i ^ 0x5a));
		fill_bytes(q, t, i, lq);
		rt_event(strs, q, t, (uint16_t)t, i, i, q, rt_bytes(q, lq), tail, i * 2654435761u);
		fill_str(a, t, i, LENS[(i + 2) % NL]);
		fill_bytes(b, t, i + 1, LENS[(i + 3) % NL]);
		fill_str(c, t, i + 2, LENS[(i + 5) % NL]);
		rt_event(strs, m, t, (uint16_t)t, i, i, a, (const char *)a,
			 b, rt_bytes(b, LENS[(i + 3) % NL]), c, (const char *)c, d,
			 (uint64_t)i << 33 | t);
		if (i % 100 == 99)
			changed_after_sizing();
	}
	/* No handler may run once the count is taken. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	rt_event(strs, done, t, (uint16_t)t, signals, (uint32_t)nsig);
	pthread_barrier_wait(&finished);
	return NULL;
}

static void *signaller(void *arg)
{
	(void)arg;
	while (!stop_signals) {
		for (int t = 0; t < nthreads; t++)
			pthread_kill(threads[t], SIGUSR1);
		usleep(50);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: strparts T N [LEN...]\n");
		return 2;
	}
	nthreads = atoi(argv[1]);
	nrounds = atoi(argv[2]);
	if (nthreads < 1 || nthreads > 64 || nrounds < 0) {
		fprintf(stderr, "strparts: bad arguments\n");
		return 2;
	}
	ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	changed_after_sizing();
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	pthread_barrier_init(&finished, NULL, (unsigned)nthreads + 1);
	/* The signals are for the workers: the main thread blocks them, and
	 * so do the threads it creates but the workers, which unblock. */
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	for (int t = 0; t < nthreads; t++) {
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		int rc = pthread_create(&threads[t], NULL, worker, (void *)(intptr_t)t);
		pthread_sigmask(SIG_BLOCK, &set, NULL);
		if (rc != 0) {
			fprintf(stderr, "strparts: pthread_create failed\n");
			return 1;
		}
	}
	pthread_t sigth;
	if (pthread_create(&sigth, NULL, signaller, NULL) != 0) {
		fprintf(stderr, "strparts: pthread_create failed\n");
		return 1;
	}
	pthread_barrier_wait(&finished);
	stop_signals = 1;
	pthread_join(sigth, NULL);
	for (int t = 0; t < nthreads; t++)
		pthread_join(threads[t], NULL);
	for (int k = 3; k < argc; k++) {
		long len = atol(argv[k]);
		char *s = len >= 0 ? malloc((size_t)len + 1) : NULL;
		if (!s)
			return 1;
		memset(s, 'A' + (k - 3) % 26, (size_t)len);
		s[len] = '\0';
		rt_event(strs, big, k, (uint32_t)(k - 3), s, (const char *)s);
		free(s);
	}
	printf("done\n");
	return 0;
}
