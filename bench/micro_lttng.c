/*
 * micro_lttng.c - per-event cost of an LTTng-UST tracepoint (bench.h
 * method), with the same payloads as micro_rt.c. The session (overwrite
 * or discard mode, buffer sizes) is set up by run.sh with its own session
 * daemon; without one the tracepoints are disabled.
 *
 * _LGPL_SOURCE inlines LTTng's RCU read-side, its fastest configuration
 * (Gebai & Dagenais 2018, section VII-B).
 */
#define _GNU_SOURCE
#define _LGPL_SOURCE
#include <string.h>

#include <lttng/tracef.h>

#include "lttng_tp.h"

#include "bench.h"

static uint8_t blob[32];
static uint8_t blob256[256];
static char str16[16], str64[64], str256[256];

BENCH_DEFINE(p4, tracepoint(rtbench, p4, v))
BENCH_DEFINE(p32, tracepoint(rtbench, p32, blob, (uint32_t)sizeof(blob)))
BENCH_DEFINE(str16, tracepoint(rtbench, str16, str16))
BENCH_DEFINE(str64, tracepoint(rtbench, str64, str64))
BENCH_DEFINE(str256, tracepoint(rtbench, str256, str256))
BENCH_DEFINE(seq256, tracepoint(rtbench, seq256, blob256, (uint32_t)sizeof(blob256)))
BENCH_DEFINE(f8, tracepoint(rtbench, f8, v, v, v, v, v, v, v, v))
/* LTTng's printf-style event: vasprintf at each call, the text recorded
 * (lttng_ust_tracef:event). */
BENCH_DEFINE(printf1, tracef("value %d", v))

static const struct bench_case cases[] = {
	BENCH_CASE(p4, NULL, "one int32_t field (4 bytes)"),
	BENCH_CASE(p32, NULL, "a 32-byte sequence (uint32_t length)"),
	BENCH_CASE(str16, NULL, "a 16-byte string (15 characters + NUL)"),
	BENCH_CASE(str64, NULL, "a 64-byte string (63 characters + NUL)"),
	BENCH_CASE(str256, NULL, "a 256-byte string (255 characters + NUL)"),
	BENCH_CASE(seq256, NULL, "a 256-byte sequence (uint32_t length)"),
	BENCH_CASE(f8, NULL, "eight int32_t fields"),
	BENCH_CASE(printf1, NULL, "tracef(\"value %d\", v): formatted at each call"),
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
