/*
 * lttng_tp.h - the LTTng-UST tracepoint provider of the benchmark, written
 * by hand (no lttng-gen-tp): the same events as the ringtrace programs
 * record, with the same payloads. lttng_tp.c instantiates the probes.
 */
#undef TRACEPOINT_PROVIDER
#define TRACEPOINT_PROVIDER rtbench

#undef TRACEPOINT_INCLUDE
#define TRACEPOINT_INCLUDE "./lttng_tp.h"

#if !defined(RTBENCH_LTTNG_TP_H) || defined(TRACEPOINT_HEADER_MULTI_READ)
#define RTBENCH_LTTNG_TP_H

#include <stdint.h>
#include <lttng/tracepoint.h>

/* Micro benchmark: a 4-byte integer (Gebai & Dagenais 2018's payload). */
TRACEPOINT_EVENT(rtbench, p4,
	TP_ARGS(int32_t, v),
	TP_FIELDS(ctf_integer(int32_t, v, v)))

/* 32 bytes as a byte sequence with a 32-bit length (as rt_bytes). */
TRACEPOINT_EVENT(rtbench, p32,
	TP_ARGS(const uint8_t *, buf, uint32_t, len),
	TP_FIELDS(ctf_sequence(uint8_t, data, buf, uint32_t, len)))

/* 256 bytes, the same way. */
TRACEPOINT_EVENT(rtbench, seq256,
	TP_ARGS(const uint8_t *, buf, uint32_t, len),
	TP_FIELDS(ctf_sequence(uint8_t, data, buf, uint32_t, len)))

/* Strings of 16, 64 and 256 bytes (15, 63, 255 characters and the NUL). */
TRACEPOINT_EVENT(rtbench, str16,
	TP_ARGS(const char *, s),
	TP_FIELDS(ctf_string(s, s)))

TRACEPOINT_EVENT(rtbench, str64,
	TP_ARGS(const char *, s),
	TP_FIELDS(ctf_string(s, s)))

TRACEPOINT_EVENT(rtbench, str256,
	TP_ARGS(const char *, s),
	TP_FIELDS(ctf_string(s, s)))

/* Eight 4-byte integer fields. */
TRACEPOINT_EVENT(rtbench, f8,
	TP_ARGS(int32_t, a, int32_t, b, int32_t, c, int32_t, d,
		int32_t, e, int32_t, f, int32_t, g, int32_t, h),
	TP_FIELDS(ctf_integer(int32_t, a, a) ctf_integer(int32_t, b, b)
		  ctf_integer(int32_t, c, c) ctf_integer(int32_t, d, d)
		  ctf_integer(int32_t, e, e) ctf_integer(int32_t, f, f)
		  ctf_integer(int32_t, g, g) ctf_integer(int32_t, h, h)))

/* Macro benchmark: one work item = begin, a few syscalls, end. */
TRACEPOINT_EVENT(rtbench, work_begin,
	TP_ARGS(uint32_t, id, uint32_t, size),
	TP_FIELDS(ctf_integer(uint32_t, id, id) ctf_integer(uint32_t, size, size)))

TRACEPOINT_EVENT(rtbench, syscall_done,
	TP_ARGS(int32_t, nr, int64_t, ret),
	TP_FIELDS(ctf_integer(int32_t, nr, nr) ctf_integer(int64_t, ret, ret)))

TRACEPOINT_EVENT(rtbench, work_end,
	TP_ARGS(uint32_t, id, uint64_t, hash),
	TP_FIELDS(ctf_integer(uint32_t, id, id) ctf_integer_hex(uint64_t, hash, hash)))

#endif /* RTBENCH_LTTNG_TP_H */

#include <lttng/tracepoint-event.h>
