/*
 * clock.c - choice and calibration of the trace clock (see clock.h).
 */
#define _GNU_SOURCE
#include "clock.h"

#include <stdio.h>
#include <string.h>

RT_HIDDEN bool rt_clock_is_tsc;

/* A (tsc, monotonic ns, realtime ns) triple taken as one instant. */
struct rt_clock_sample {
	uint64_t tsc;
	uint64_t mono;
	uint64_t real;
};

static struct rt_clock_sample rt_clock_start;

uint64_t rt_clock_read_ordered(void)
{
	if (!rt_clock_tsc())
		return rt_clock_monotonic_ns();
#if defined(__x86_64__) || defined(__i386__)
	/* lfence: the rdtsc below waits for every earlier load. */
	__asm__ __volatile__("lfence" ::: "memory");
#endif
	return rt_rdtsc();
}

static uint64_t ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000ULL + (uint64_t)ts->tv_nsec;
}

/* Best of several tries: the monotonic read bracketed by the two closest
 * TSC reads; realtime read right after. */
static void rt_clock_sample(struct rt_clock_sample *s)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 16; i++) {
		struct timespec m, r;
		uint64_t t0 = rt_clock_read_ordered();
		clock_gettime(CLOCK_MONOTONIC, &m);
		uint64_t t1 = rt_clock_read_ordered();
		clock_gettime(CLOCK_REALTIME, &r);
		struct timespec m2;
		clock_gettime(CLOCK_MONOTONIC, &m2);
		if (t1 - t0 < best) {
			best = t1 - t0;
			s->tsc = t0 + (t1 - t0) / 2;
			s->mono = ts_ns(&m);
			/* realtime at the instant of `m`: shift by the time
			 * between the two monotonic reads, halved. */
			s->real = ts_ns(&r) - (ts_ns(&m2) - ts_ns(&m)) / 2;
		}
	}
}

static bool file_has_word(const char *path, const char *word, bool exact_line)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	char line[4096];
	bool found = false;
	while (!found && fgets(line, sizeof(line), f)) {
		if (exact_line) {
			line[strcspn(line, "\n")] = '\0';
			found = strcmp(line, word) == 0;
		} else if (strncmp(line, "flags", 5) == 0) {
			char *p = line;
			size_t n = strlen(word);
			while ((p = strstr(p, word)) != NULL) {
				if ((p[-1] == ' ' || p[-1] == '\t') &&
				    (p[n] == ' ' || p[n] == '\n' || p[n] == '\0')) {
					found = true;
					break;
				}
				p += n;
			}
			break; /* the first CPU's flags are enough */
		}
	}
	fclose(f);
	return found;
}

int rt_clock_init(bool force_monotonic)
{
	bool tsc = false;
#if defined(__x86_64__) || defined(__i386__)
	tsc = !force_monotonic &&
	      file_has_word("/sys/devices/system/clocksource/clocksource0/current_clocksource",
			    "tsc", true) &&
	      file_has_word("/proc/cpuinfo", "constant_tsc", false) &&
	      file_has_word("/proc/cpuinfo", "nonstop_tsc", false);
#else
	(void)force_monotonic;
#endif
	rt_clock_adopt(tsc);
	rt_clock_sample(&rt_clock_start);
	return 0;
}

void rt_clock_adopt(bool tsc)
{
	/* Relaxed: what orders it before the events that depend on it is
	 * said at rt_clock_tsc. */
	__atomic_store_n(&rt_clock_is_tsc, tsc, __ATOMIC_RELAXED);
}

void rt_clock_describe(struct rt_clock_desc *d, bool final)
{
	const struct rt_clock_sample *s0 = &rt_clock_start;
	struct rt_clock_sample s1;
	uint64_t freq = 1000000000ULL;
	bool tsc = rt_clock_tsc();

	if (tsc) {
		rt_clock_sample(&s1);
		if (final && s1.mono - s0->mono < 20000000ULL) {
			struct timespec w = { 0, (long)(20000000ULL - (s1.mono - s0->mono)) };
			nanosleep(&w, NULL);
			rt_clock_sample(&s1);
		}
		if (s1.mono - s0->mono < 1000000ULL) {
			struct timespec w = { 0, 2000000 };
			nanosleep(&w, NULL);
			rt_clock_sample(&s1);
		}
		unsigned __int128 num = (unsigned __int128)(s1.tsc - s0->tsc) * 1000000000ULL;
		freq = (uint64_t)(num / (s1.mono - s0->mono));
		d->name = "tsc";
		d->description = "TSC, calibrated against CLOCK_MONOTONIC";
		d->precision = freq / 1000000; /* about a microsecond over the run */
	} else {
		rt_clock_sample(&s1);
		d->name = "monotonic";
		d->description = "CLOCK_MONOTONIC";
		d->precision = 1;
	}
	/* Epoch offset in ticks: realtime(s0) * freq - clock(s0). */
	uint64_t clk0 = tsc ? s0->tsc : s0->mono;
	__int128 real_ticks = (__int128)s0->real * (__int128)freq / 1000000000LL;
	__int128 off = real_ticks - (__int128)clk0;
	__int128 off_s = off / (__int128)freq;
	__int128 rem = off - off_s * (__int128)freq;
	if (rem < 0) {
		rem += freq;
		off_s -= 1;
	}
	d->freq = freq;
	d->offset_s = (int64_t)off_s;
	d->offset = (uint64_t)rem;
}
