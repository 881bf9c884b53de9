/*
 * lttng_tp.h - the LTTng-UST tracepoint provider of the reader tests:
 * one event per family of lttng's ctf_* field macros, so that a trace
 * recorded with it exercises what an LTTng-UST trace can hold (integers
 * of every size and signedness, hex and network byte order, floats,
 * strings, enums with ranges, arrays and sequences of integers and text).
 */
#undef TRACEPOINT_PROVIDER
#define TRACEPOINT_PROVIDER rtrtest

#undef TRACEPOINT_INCLUDE
#define TRACEPOINT_INCLUDE "./lttng_tp.h"

#if !defined(RTRTEST_LTTNG_TP_H) || defined(TRACEPOINT_HEADER_MULTI_READ)
#define RTRTEST_LTTNG_TP_H

#include <stdint.h>
#include <lttng/tracepoint.h>

TRACEPOINT_ENUM(rtrtest, color,
	TP_ENUM_VALUES(
		ctf_enum_value("red", 0)
		ctf_enum_value("green", 1)
		ctf_enum_range("many", 10, 19)
		ctf_enum_auto("next")))

TRACEPOINT_EVENT(rtrtest, ints,
	TP_ARGS(int64_t, v),
	TP_FIELDS(ctf_integer(int8_t, i8, v)
		  ctf_integer(uint8_t, u8, v)
		  ctf_integer(int16_t, i16, v * 3)
		  ctf_integer(uint16_t, u16, v * 5)
		  ctf_integer(int32_t, i32, -v * 1000)
		  ctf_integer(uint32_t, u32, v * 100000)
		  ctf_integer(int64_t, i64, -v * 1000000007)
		  ctf_integer(uint64_t, u64, (uint64_t)v << 40)
		  ctf_integer_hex(uint32_t, hex, 0xdead0000u + (uint32_t)v)
		  ctf_integer_network(uint32_t, net, 0x01020304u + (uint32_t)v)
		  ctf_integer_network_hex(int16_t, neth, -(int16_t)v)))

TRACEPOINT_EVENT(rtrtest, floats,
	TP_ARGS(double, d),
	TP_FIELDS(ctf_float(float, f, (float)d)
		  ctf_float(double, d, d * 1e10)))

TRACEPOINT_EVENT(rtrtest, text,
	TP_ARGS(const char *, s, unsigned int, n),
	TP_FIELDS(ctf_string(s, s)
		  ctf_array_text(char, arr, s, 4)
		  ctf_sequence_text(char, seq, s, unsigned int, n)))

TRACEPOINT_EVENT(rtrtest, arrays,
	TP_ARGS(const int32_t *, a, const uint16_t *, q, unsigned int, n),
	TP_FIELDS(ctf_array(int32_t, a3, a, 3)
		  ctf_array_hex(int32_t, a3h, a, 3)
		  ctf_sequence(uint16_t, q, q, unsigned int, n)
		  ctf_sequence_hex(uint8_t, qb, q, unsigned int, n)
		  ctf_integer(int, after, (int)n)))

TRACEPOINT_EVENT(rtrtest, enums,
	TP_ARGS(int, c),
	TP_FIELDS(ctf_enum(rtrtest, color, int, col, c)
		  ctf_enum(rtrtest, color, uint8_t, small, c)))

#endif /* RTRTEST_LTTNG_TP_H */

#include <lttng/tracepoint-event.h>
