/*
 * bench.h - the measurement harness shared by the benchmark programs
 * (Gebai & Dagenais 2018, section VI, adapted to user space).
 *
 * A program defines its cases with BENCH_DEFINE(id, STATEMENT): the
 * statement (one tracepoint call, with `v` an int32_t that changes at every
 * call) is inlined into two loops:
 *  - batch: `n` calls back to back; the harness divides the thread's CPU
 *    time by n;
 *  - latency: Algorithm 1 of Gebai & Dagenais 2018 without the PMU reads: the TSC is read
 *    (serialized) before and after each call and the difference stored.
 *    The same loop with an empty statement measures the cost of the
 *    measurement itself, whose median is subtracted from every sample.
 * bench_main() parses the command line, runs the case in N pinned threads
 * after a warm-up that fills the tracer's buffers (steady state), and
 * prints one CSV line per thread. See bench_usage() in harness.c.
 */
#ifndef RTBENCH_BENCH_H
#define RTBENCH_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Plain TSC read (what a tracer's fast path does). */
static inline uint64_t bench_rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/* Start of a measured interval: earlier instructions have completed
 * (lfence), and later ones start after the read (lfence). */
static inline uint64_t bench_tsc_begin(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("lfence\n\trdtsc\n\tlfence"
			     : "=a"(lo), "=d"(hi)
			     :
			     : "memory");
	return ((uint64_t)hi << 32) | lo;
}

/* End of a measured interval: rdtscp waits for the measured instructions
 * to execute; lfence keeps what follows from starting before it. */
static inline uint64_t bench_tsc_end(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtscp\n\tlfence"
			     : "=a"(lo), "=d"(hi)
			     :
			     : "rcx", "memory");
	return ((uint64_t)hi << 32) | lo;
}

static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static inline uint64_t bench_thread_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Keeps a value alive without generating code. */
#define BENCH_USE(x) __asm__ __volatile__("" : : "r"(x))

/* A case: its two loops and an optional per-thread setup (run by each
 * measuring thread, after pinning, before the warm-up): returns 0, > 0 if
 * the case cannot run on this machine (the program exits with
 * BENCH_EXIT_UNAVAILABLE), < 0 on failure (exit status 1). */
#define BENCH_EXIT_UNAVAILABLE 3
struct bench_case {
	const char *name;
	void (*batch)(uint64_t n);
	void (*lat)(int64_t *ticks, size_t n);
	int (*thread_init)(void);
	const char *help;
};

#define BENCH_DEFINE(id, STMT)                                                 \
	__attribute__((unused)) static void id##_batch(uint64_t n_)            \
	{                                                                      \
		for (uint64_t i_ = 0; i_ < n_; i_++) {                         \
			int32_t v = (int32_t)i_;                               \
			STMT;                                                  \
			(void)v;                                               \
		}                                                              \
	}                                                                      \
	__attribute__((unused)) static void id##_lat(int64_t *t_, size_t n_)   \
	{                                                                      \
		for (size_t i_ = 0; i_ < n_; i_++) {                           \
			int32_t v = (int32_t)i_;                               \
			uint64_t a_ = bench_tsc_begin();                       \
			STMT;                                                  \
			uint64_t b_ = bench_tsc_end();                         \
			(void)v;                                               \
			t_[i_] = (int64_t)(b_ - a_);                           \
		}                                                              \
	}

#define BENCH_CASE(id, init, help) { #id, id##_batch, id##_lat, init, help }

/* Runs the program: parses argv, runs the case named by --case among
 * `cases`, prints results. Returns the exit status. */
int bench_main(int argc, char **argv, const struct bench_case *cases,
	       size_t nr_cases);

#endif /* RTBENCH_BENCH_H */
