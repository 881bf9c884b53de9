/*
 * micro_base.c - the reference points of the micro benchmark (bench.h
 * method): the empty measurement, the naive lower bound of Gebai & Dagenais 2018
 * ("LW-UST": a clock read and a 16-byte record stored into a per-thread
 * array, no reentrancy, no thread safety, no way to read it), the same
 * bound built for the other shapes of event (strings, byte sequences,
 * contexts: lw_str16 ... lw_ctx), printf to a buffered FILE, and ftrace's
 * trace_marker.
 *
 * trace_marker: the file to write is named by RTBENCH_MARKER (run.sh uses
 * a private ftrace instance); the case fails without it.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
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

/*
 * The bound of the other shapes (the "bound built for the
 * shape"): the TSC and the event's bytes appended to a 1 MiB per-thread
 * byte array, wrapping: a 4-byte id, the 8-byte TSC, then the fields as
 * the tracers record them: a string sized with strlen and copied with
 * its NUL; a 4-byte length and the bytes; the 4-byte payload, the
 * thread's id and its name (cached per thread, sized with strlen).
 * The same strings and bytes as micro_rt.c records.
 */
#define LW_BYTES (1u << 20)
#define LW_HDR 12
static __thread char *lw_bytes;
static __thread uint32_t lw_boff;
static __thread int32_t lw_tid;
static __thread char lw_name[16];
static uint8_t blob32[32], blob256[256];
static char str16[16], str64[64], str256[256];

static int lw_bytes_init(void)
{
	void *p;
	if (posix_memalign(&p, 64, LW_BYTES))
		return -1;
	memset(p, 0, LW_BYTES);
	lw_bytes = p;
	lw_tid = (int32_t)gettid();
	if (prctl(PR_GET_NAME, lw_name, 0, 0, 0) < 0)
		strcpy(lw_name, "unknown");
	return 0;
}

/* Room for n bytes after the header; the header written. */
static inline __attribute__((always_inline)) char *lw_slot(size_t n)
{
	if (lw_boff + LW_HDR + n > LW_BYTES)
		lw_boff = 0;
	char *p = lw_bytes + lw_boff;
	uint32_t id = 1;
	uint64_t ts = bench_rdtsc();
	memcpy(p, &id, sizeof(id));
	memcpy(p + 4, &ts, sizeof(ts));
	lw_boff += (uint32_t)(LW_HDR + n);
	return p + LW_HDR;
}

static inline __attribute__((always_inline)) void lw_str(const char *s)
{
	size_t n = strlen(s) + 1;
	memcpy(lw_slot(n), s, n);
}

static inline __attribute__((always_inline)) void lw_seq(const void *b, uint32_t len)
{
	char *p = lw_slot(sizeof(len) + len);
	memcpy(p, &len, sizeof(len));
	memcpy(p + sizeof(len), b, len);
}

static inline __attribute__((always_inline)) void lw_ctx(int32_t v)
{
	size_t n = strlen(lw_name) + 1;
	char *p = lw_slot(2 * sizeof(int32_t) + n);
	memcpy(p, &lw_tid, sizeof(lw_tid));
	memcpy(p + sizeof(lw_tid), lw_name, n);
	memcpy(p + sizeof(lw_tid) + n, &v, sizeof(v));
}

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
BENCH_DEFINE(lw_str16, lw_str(str16))
BENCH_DEFINE(lw_str64, lw_str(str64))
BENCH_DEFINE(lw_str256, lw_str(str256))
BENCH_DEFINE(lw_p32, lw_seq(blob32, sizeof(blob32)))
BENCH_DEFINE(lw_seq256, lw_seq(blob256, sizeof(blob256)))
BENCH_DEFINE(lw_ctx, lw_ctx(v))
BENCH_DEFINE(printf, fprintf(out, "%d\n", v))
BENCH_DEFINE(marker, if (write(marker_fd, &v, sizeof(v)) < 0) marker_errors++)

static const struct bench_case cases[] = {
	BENCH_CASE(empty, NULL, "nothing: the loop, or the measurement itself"),
	BENCH_CASE(lw_tsc, lw_init, "lower bound: rdtsc + 16-byte store (LW-UST)"),
	BENCH_CASE(lw_clock, lw_init,
		   "lower bound: clock_gettime(CLOCK_MONOTONIC) + 16-byte store"),
	BENCH_CASE(lw_str16, lw_bytes_init, "bound: rdtsc + strlen + copy of a 16-byte string"),
	BENCH_CASE(lw_str64, lw_bytes_init, "bound: rdtsc + strlen + copy of a 64-byte string"),
	BENCH_CASE(lw_str256, lw_bytes_init, "bound: rdtsc + strlen + copy of a 256-byte string"),
	BENCH_CASE(lw_p32, lw_bytes_init, "bound: rdtsc + length + copy of 32 bytes"),
	BENCH_CASE(lw_seq256, lw_bytes_init, "bound: rdtsc + length + copy of 256 bytes"),
	BENCH_CASE(lw_ctx, lw_bytes_init,
		   "bound: rdtsc + vtid + procname (cached, strlen + copy) + 4 bytes"),
	BENCH_CASE(printf, NULL, "fprintf(\"%d\\n\") to a buffered FILE on /dev/null"),
	BENCH_CASE(marker, marker_init,
		   "write(2) of 4 bytes to trace_marker ($RTBENCH_MARKER)"),
};

int main(int argc, char **argv)
{
	memset(blob32, 0xa5, sizeof(blob32));
	memset(blob256, 0xa5, sizeof(blob256));
	memset(str16, 'x', sizeof(str16) - 1);
	memset(str64, 'x', sizeof(str64) - 1);
	memset(str256, 'x', sizeof(str256) - 1);
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
