/*
 * micro_rt.c - per-event cost of a ringtrace tracepoint (bench.h method).
 * Whether it records, and how (rseq or SMP atomics, overwrite or discard,
 * buffer sizes, contexts), comes from the RINGTRACE_* environment set by
 * run.sh; without RINGTRACE_OUTPUT the call sites are disabled.
 */
#define _GNU_SOURCE
#include <string.h>

#include <ringtrace/ringtrace.h>

#include "bench.h"

static uint8_t blob[32];
static uint8_t blob256[256];
/* 15, 63 and 255 characters, filled at run time. */
static char str16[16], str64[64], str256[256];

BENCH_DEFINE(p4, rt_event(rtbench, p4, v, v))
BENCH_DEFINE(p32, rt_event(rtbench, p32, data, rt_bytes(blob, sizeof(blob))))
BENCH_DEFINE(str16, rt_event(rtbench, str16, s, (const char *)str16))
BENCH_DEFINE(str64, rt_event(rtbench, str64, s, (const char *)str64))
BENCH_DEFINE(str256, rt_event(rtbench, str256, s, (const char *)str256))
BENCH_DEFINE(seq256, rt_event(rtbench, seq256, data, rt_bytes(blob256, sizeof(blob256))))
BENCH_DEFINE(f8, rt_event(rtbench, f8, a, v, b, v, c, v, d, v, e, v, f, v,
			  g, v, h, v))
/* printf-style: the message formatted at read time (against p4, the same
 * int32_t as rt_event, and LTTng's tracef, which formats at run time). */
BENCH_DEFINE(printf1, rt_printf(rtbench, printf1, "value %d", v))

static const struct bench_case cases[] = {
	BENCH_CASE(p4, NULL, "one int32_t field (4 bytes)"),
	BENCH_CASE(p32, NULL, "a 32-byte sequence (rt_bytes)"),
	BENCH_CASE(str16, NULL, "a 16-byte string (15 characters + NUL)"),
	BENCH_CASE(str64, NULL, "a 64-byte string (63 characters + NUL)"),
	BENCH_CASE(str256, NULL, "a 256-byte string (255 characters + NUL)"),
	BENCH_CASE(seq256, NULL, "a 256-byte sequence (rt_bytes)"),
	BENCH_CASE(f8, NULL, "eight int32_t fields"),
	BENCH_CASE(printf1, NULL, "rt_printf(\"value %d\", v): formatted when read"),
};

int main(int argc, char **argv)
{
	memset(blob, 0xa5, sizeof(blob));
	memset(blob256, 0xa5, sizeof(blob256));
	memset(str16, 'x', sizeof(str16) - 1);
	memset(str64, 'x', sizeof(str64) - 1);
	memset(str256, 'x', sizeof(str256) - 1);
	return bench_main(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
