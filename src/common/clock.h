/*
 * clock.h - the trace clock.
 *
 * The TSC (rdtsc) when the kernel's clocksource is "tsc" and the CPU has
 * constant and nonstop TSC; CLOCK_MONOTONIC (in nanoseconds) otherwise or
 * when RINGTRACE_CLOCK=monotonic. The TSC is calibrated against
 * CLOCK_MONOTONIC at start and refined over the whole trace at the end;
 * the CTF clock class gets the frequency and the offset to the Unix epoch.
 *
 * Concurrency: rt_clock_read* may be called from anywhere at any time
 * (async-signal-safe, no system call with the TSC). rt_clock_init runs
 * once before any event is enabled; rt_clock_describe from the consumer.
 * In daemon mode the daemon's registration reply names its clock and the
 * listener thread adopts it (rt_clock_adopt) while program threads read
 * it: the choice is one atomic byte, see rt_clock_tsc.
 */
#ifndef RINGTRACE_CLOCK_H
#define RINGTRACE_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <ringtrace/internal/fast.h>

#define RT_HIDDEN __attribute__((visibility("hidden")))

/* The clock in use: set by rt_clock_init and rt_clock_adopt, read on
 * every event. Only through rt_clock_tsc and those two. */
extern RT_HIDDEN bool rt_clock_is_tsc;

/* Whether the clock is the TSC. Relaxed: the value only has to be the one
 * a daemon chose for the events written into that daemon's buffers, and
 * those buffers reach a thread through the release/acquire publication
 * of the enabled targets (daemon_targets.c), which the listener makes
 * after rt_clock_adopt. A plain load on x86, as before. */
static inline bool rt_clock_tsc(void)
{
	return __atomic_load_n(&rt_clock_is_tsc, __ATOMIC_RELAXED);
}

static inline uint64_t rt_clock_monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The TSC (the one call sites read, ringtrace/internal/fast.h), or
 * CLOCK_MONOTONIC where there is none. */
static inline uint64_t rt_rdtsc(void)
{
#if RT__HAVE_TSC
	return rt__rdtsc();
#else
	return rt_clock_monotonic_ns();
#endif
}

/* The fast-path clock, read inside the reservation loop. */
static inline uint64_t rt_clock_read(void)
{
	if (__builtin_expect(rt_clock_tsc(), 1))
		return rt_rdtsc();
	return rt_clock_monotonic_ns();
}

/* The clock for the SMP-atomic path and flushes: the TSC read cannot move
 * before earlier loads (lfence), so a slot's timestamp is never older
 * than the write_count value it was computed from. */
RT_HIDDEN uint64_t rt_clock_read_ordered(void);

/* What the CTF clock class says. */
struct rt_clock_desc {
	const char *name;		/* "tsc" or "monotonic" */
	const char *description;
	uint64_t freq;			/* ticks per second */
	int64_t offset_s;		/* epoch offset: seconds ... */
	uint64_t offset;		/* ... plus ticks (< freq) */
	uint64_t precision;		/* ticks */
};

/* Choose the clock. `force_monotonic` from the environment. Returns 0. */
RT_HIDDEN int rt_clock_init(bool force_monotonic);
/* Use the clock a daemon chose (its registration reply): the TSC or
 * CLOCK_MONOTONIC. The daemon client's listener, before it publishes
 * the targets of that daemon's buffers. */
RT_HIDDEN void rt_clock_adopt(bool tsc);
/* Current best description; `final` refines the TSC frequency over the
 * whole run (waits up to 20 ms so the baseline is long enough). */
RT_HIDDEN void rt_clock_describe(struct rt_clock_desc *d, bool final);

#endif /* RINGTRACE_CLOCK_H */
