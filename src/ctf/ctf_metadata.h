/*
 * ctf_metadata.h - generate the CTF 1.8 metadata (TSDL) of a ringtrace
 * trace: trace, env, clock, one stream class per channel (packet context,
 * compact/extended event header) and one event class per registered event.
 *
 * Concurrency: pure functions of their arguments; the caller keeps the
 * event list stable while building.
 */
#ifndef RINGTRACE_CTF_METADATA_H
#define RINGTRACE_CTF_METADATA_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include <ringtrace/ringtrace_types.h>

/* The payload field of an rt_printf event that carries its format
 * (RT_TYPE_FORMAT): `enum : uint8_t { "FORMAT" = 0 } _fmt;`, recorded 0,
 * then the arguments as arg1, arg2, ... Readers format the message from
 * the label (`ringtrace view`'s msg). */
#define CTF_PRINTF_FORMAT_FIELD "fmt"

/* A growable string; `data` is NUL-terminated. */
struct ctf_buf {
	char *data;
	size_t len;
	size_t cap;
	int err;		/* -ENOMEM after a failed growth */
};

void ctf_buf_printf(struct ctf_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void ctf_buf_free(struct ctf_buf *b);

struct ctf_clock_info {
	const char *name;
	const char *description;
	uint64_t freq;
	int64_t offset_s;
	uint64_t offset;
	uint64_t precision;
	/* The clock's own uuid (has_uuid), so that traces written with one
	 * clock (a daemon's) can be merged by readers; else the trace's. */
	bool has_uuid;
	uint8_t uuid[16];
};

struct ctf_stream_class {
	uint32_t id;
	const char *name;	/* channel name, recorded as a comment */
	/* Stream event context (0 fields: none): written after each event
	 * header, before the payload, packed and byte-aligned like payload
	 * fields, in this order. Names get the leading underscore too. */
	uint32_t nr_contexts;
	const struct rt_field_desc *contexts;
};

struct ctf_event_class {
	uint32_t id;
	uint32_t stream_id;
	const char *provider;	/* "provider:name"; NULL: the name alone (kernel) */
	const char *name;
	int32_t loglevel;	/* < 0: none (kernel events have none) */
	uint32_t nr_fields;
	const struct rt_field_desc *fields;
};

struct ctf_trace_info {
	uint8_t uuid[16];
	const char *domain;	/* env.domain: NULL is "ust"; "kernel" */
	const char *hostname;
	const char *procname;	/* NULL: no procname/vpid in env (a trace
				 * shared by several programs) */
	int64_t vpid;
	const char *trace_name;
	const char *tracer_version;
	struct ctf_clock_info clock;
	/* A trace streamed to a relay: the clock's offset was corrected by
	 * relay_offset_ns to the relay's clock, an estimate within
	 * +- relay_error_ns (env relay_clock_offset_ns and
	 * relay_clock_error_ns), so that the traces of several hosts merge
	 * on one wall clock. */
	bool relay_clock;
	int64_t relay_offset_ns;
	uint64_t relay_error_ns;
};

/* Add `ns` nanoseconds (any sign) to a clock's offset (offset_s seconds
 * plus offset cycles at freq), keeping 0 <= offset < freq. */
void ctf_clock_shift(struct ctf_clock_info *c, int64_t ns);

/* Append the whole metadata to `out`. Returns 0 or -ENOMEM, -EINVAL (a
 * field type unknown to this version). */
int ctf_metadata_build(struct ctf_buf *out, const struct ctf_trace_info *t,
		       const struct ctf_stream_class *streams, size_t nr_streams,
		       const struct ctf_event_class *events, size_t nr_events);

/* Append the stream classes' declarations only (what ctf_metadata_build
 * writes after the trace, env and clock blocks): a trace whose stream
 * classes come from several writers is one header plus each writer's
 * streams and events. Returns 0 or -ENOMEM, -EINVAL. */
int ctf_metadata_streams(struct ctf_buf *out, const struct ctf_stream_class *streams,
			 size_t nr_streams);

/* Append the event classes' declarations only: what a trace's metadata
 * built by ctf_metadata_build gets when classes are added later (TSDL
 * allows declarations in any order once their stream is declared).
 * Returns 0 or -ENOMEM, -EINVAL. */
int ctf_metadata_events(struct ctf_buf *out, const struct ctf_event_class *events,
			size_t nr_events);

/* A random (version 4) UUID for a trace or a clock: getrandom, or when
 * that fails the monotonic clock and the pid. */
void ctf_uuid_generate(uint8_t uuid[16]);

/* "xxxxxxxx-xxxx-..." (37 bytes with the NUL). */
void ctf_uuid_format(const uint8_t uuid[16], char out[37]);

#endif /* RINGTRACE_CTF_METADATA_H */
