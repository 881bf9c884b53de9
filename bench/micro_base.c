/*
 * micro_base.c - the reference points of the micro benchmark (bench.h
 * method): the empty measurement, the naive lower bound of Gebai & Dagenais 2018
 * ("LW-UST": a clock read and a 16-byte record stored into a per-thread
 * array, no reentrancy, no thread safety, no way to read it), printf to a
 * buffered FILE, and ftrace's trace_marker.
 *
 * trace_marker: the file to write is named by RTBENCH_MARKER (run.sh uses
 * a private ftrace instance); the case fails without it.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

/* LW-UST: what an event costs when nothing but the clock and a store is
 * done. 16-byte records in a 1 MiB per-thread array (the size of one
 * CPU's ringtrace buffer), allocated and touched before measuring. */
struct lw_rec {
	uint32_t id;
	int32_t payload;
	uint64_t ts;
};
#define LW_ENTRIES (1u << 16)
static __thread struct lw_rec *lw_buf;
static __thread uint32_t lw_pos;

static int lw_init(void)
{
	void *p;
	if (posix_memalign(&p, 64, LW_ENTRIES * sizeof(struct lw_rec)))
		return -1;
	memset(p, 0, LW_ENTRIES * sizeof(struct lw_rec));
	lw_buf = p;
	return 0;
}

#define LW_RECORD(clk)                                                         \
	do {                                                                   \
		struct lw_rec *r_ = &lw_buf[lw_pos++ & (LW_ENTRIES - 1)];      \
		r_->id = 1;                                                    \
		r_->payload = v;                                               \
		r_->ts = (clk);                                                \
	} while (0)

static FILE *out;
static int marker_fd = -1;
static unsigned long marker_errors;

static int marker_init(void)
{
	return marker_fd >= 0 ? 0 : 1;
}

BENCH_DEFINE(empty, BENCH_USE(v))
BENCH_DEFINE(lw_tsc, LW_RECORD(bench_rdtsc()))
BENCH_DEFINE(lw_clock, LW_RECORD(bench_now_ns()))
BENCH_DEFINE(printf, fprintf(out, "%d\n", v))
BENCH_DEFINE(marker, if (write(marker_fd, &v, sizeof(v)) < 0) marker_errors++)

static const struct bench_case cases[] = {
	BENCH_CASE(empty, NULL, "nothing: the loop, or the measurement itself"),
	BENCH_CASE(lw_tsc, lw_init, "lower bound: rdtsc + 16-byte store (LW-UST)"),
	BENCH_CASE(lw_clock, lw_init,
		   "lower bound: clock_gettime(CLOCK_MONOTONIC) + 16-byte store"),
	BENCH_CASE(printf, NULL, "fprintf(\"%d\\n\") to a buffered FILE on /dev/null"),
	BENCH_CASE(marker, marker_init,
		   "write(2) of 4 bytes to trace_marker ($RTBENCH_MARKER)"),
};

int main(int argc, char **argv)
{
	out = fopen("/dev/null", "w");
	if (!out || setvbuf(out, NULL, _IOFBF, 65536) != 0) {
		perror("/dev/null");
		return 1;
	}
	const char *m = getenv("RTBENCH_MARKER");
	if (m && *m && (marker_fd = open(m, O_WRONLY | O_CLOEXEC)) < 0)
		perror(m);
	int ret = bench_main(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
	if (marker_errors)
		fprintf(stderr, "trace_marker: %lu writes failed\n", marker_errors);
	fclose(out);
	return ret;
}
