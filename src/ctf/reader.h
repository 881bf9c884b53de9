/*
 * reader.h - read back the CTF 1.8 traces that ringtrace writes.
 *
 *   struct rtr_trace *t;
 *   char err[512];
 *   if (rtr_open("/tmp/trace", &t, err, sizeof(err)) < 0)
 *           fprintf(stderr, "%s\n", err);
 *   struct rtr_event ev;
 *   int r;
 *   while ((r = rtr_next(t, &ev)) > 0) {
 *           struct rtr_value v;
 *           if (rtr_field_by_name(&ev, "status", &v) == 0) ...
 *   }
 *   if (r < 0)
 *           fprintf(stderr, "%s\n", rtr_error(t));
 *   rtr_close(t);
 *
 * A trace directory holds `metadata` (TSDL text) and one stream file per
 * channel and CPU (`<channel>_<cpu>`); hidden files and sub-directories are
 * ignored. rtr_open parses the metadata, maps every stream file read-only
 * and checks every packet header (so packet-level damage is reported by
 * rtr_open); rtr_next then merges the events of all stream files in
 * timestamp order (ties: lower stream index first), decoding only what is
 * needed to find each event's end. Field values are decoded on demand by
 * rtr_field / rtr_field_by_name.
 *
 * Only what ringtrace writes is supported: little-endian, the packet
 * header/context and event header of ctf_packet.h, byte-aligned payload
 * fields of the types of enum rtr_type. Anything else is rejected by
 * rtr_open with a message (-EINVAL: malformed, -ENOTSUP: valid CTF this
 * reader cannot decode).
 *
 * Every error message names the file and the byte offset (and the line for
 * the metadata). Errors are sticky: after rtr_next returned < 0, it returns
 * the same value again.
 *
 * Lifetime: the event classes, field classes, stream statistics and every
 * pointer in an rtr_event or rtr_value (payload, strings, bytes) stay valid
 * until rtr_close. A trace is not thread-safe; use one per thread.
 */
#ifndef RINGTRACE_CTF_READER_H
#define RINGTRACE_CTF_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rtr_trace; /* opaque */

enum rtr_type {
	RTR_INT,	/* signed integer: value.i */
	RTR_UINT,	/* unsigned integer (also pointers, base 16): value.u */
	RTR_FLOAT,	/* 32-bit IEEE 754, widened: value.d */
	RTR_DOUBLE,	/* 64-bit IEEE 754: value.d */
	RTR_BOOL,	/* enum { "false" = 0, "true" = 1 }: value.b */
	RTR_STRING,	/* NUL-terminated UTF-8: value.s (len excludes the NUL) */
	RTR_BYTES,	/* byte sequence or array: value.bytes */
};

/*
 * One payload field. `name` is the metadata's name without its leading
 * underscore: `_status` is "status", and the length of a byte sequence
 * `_head`, declared `__head_length`, is its own RTR_UINT field
 * "_head_length" just before "head" (babeltrace2 shows the same names).
 * `bits`: storage size of integers, floats and bools; 8 for RTR_BYTES (the
 * element size), 0 for RTR_STRING. `base`: 2, 8, 10 or 16 for integers and
 * for the elements of RTR_BYTES, 10 for the other types.
 */
struct rtr_field_class {
	const char *name;
	enum rtr_type type;
	unsigned bits;
	int base;
};

/* One event class; `loglevel` is -1 when the metadata gives none. */
struct rtr_event_class {
	uint32_t id;
	uint32_t stream_id;
	const char *name;	/* "provider:event" */
	int loglevel;
	uint32_t nr_fields;
	const struct rtr_field_class *fields;
};

struct rtr_value {
	enum rtr_type type;
	union {
		int64_t i;
		uint64_t u;
		double d;
		bool b;
		struct {
			const char *p;	/* NUL-terminated */
			size_t len;
		} s;
		struct {
			const uint8_t *p;
			size_t len;
		} bytes;
	};
};

struct rtr_event {
	uint64_t ticks;		/* clock value (cycles of the trace clock) */
	int64_t ns;		/* since the epoch: rtr_ticks_to_ns(ticks) */
	uint32_t cpu;		/* cpu_id of the packet */
	uint32_t stream;	/* index of the stream file (rtr_streams) */
	const struct rtr_event_class *cls;
	const uint8_t *payload;	/* the fields, packed */
	size_t payload_len;
};

/* Per stream file. packets, events_discarded, packets_lost and bytes are
 * known when rtr_open returns; events counts the events rtr_next returned. */
struct rtr_stream_stats {
	const char *path;
	uint32_t cpu;		/* cpu_id of the first packet (else from the
				 * file name's _<cpu> suffix, else 0) */
	uint64_t packets;
	uint64_t events;
	uint64_t events_discarded;	/* the last packet's counter (it is
					 * cumulative): the stream's total */
	uint64_t packets_lost;	/* from packet_seq_num gaps */
	uint64_t bytes;		/* file size */
};

/*
 * A packet_seq_num gap: `packets_lost` packets are missing between the
 * packet that ended at `ticks_before` (its timestamp_end) and the one that
 * begins at `ticks_after` (its timestamp_begin). A stream whose first
 * packet has packet_seq_num N > 0 lost its N first packets (flight-recorder
 * mode): that gap has ticks_before 0.
 */
struct rtr_gap {
	uint32_t stream;
	uint64_t ticks_before;
	uint64_t ticks_after;
	uint64_t packets_lost;
};

/* Open the trace directory `dir`. Returns 0 and *out, or -errno with
 * *out = NULL and a message in err (if err is not NULL). */
int rtr_open(const char *dir, struct rtr_trace **out, char *err, size_t errlen);
void rtr_close(struct rtr_trace *t);

/* The next event in timestamp order: 1 (event in *ev), 0 (end of the
 * trace) or -errno (rtr_error says what and where). Never allocates. */
int rtr_next(struct rtr_trace *t, struct rtr_event *ev);
/* The last error message, "" if none. */
const char *rtr_error(const struct rtr_trace *t);

/* Decode field `index` of an event returned by rtr_next. 0 or -EINVAL
 * (no such field, or an event that does not come from rtr_next). */
int rtr_field(const struct rtr_event *ev, uint32_t index, struct rtr_value *v);
/* Same, by name (see struct rtr_field_class); -ENOENT if no such field. */
int rtr_field_by_name(const struct rtr_event *ev, const char *name,
		      struct rtr_value *v);

/* Every event class, sorted by stream_id then id. */
size_t rtr_event_classes(const struct rtr_trace *t,
			 const struct rtr_event_class **out);
/* Statistics per stream file, in stream index order (complete once
 * rtr_next returned 0). */
size_t rtr_streams(const struct rtr_trace *t, const struct rtr_stream_stats **out);
/* Every packet_seq_num gap, by stream then position. */
size_t rtr_gaps(const struct rtr_trace *t, const struct rtr_gap **out);

uint64_t rtr_clock_freq(const struct rtr_trace *t);
/* offset_s * 1e9 + (offset + ticks) * 1e9 / freq, exact (saturates at the
 * int64_t range). */
int64_t rtr_ticks_to_ns(const struct rtr_trace *t, uint64_t ticks);

#ifdef __cplusplus
}
#endif

#endif /* RINGTRACE_CTF_READER_H */
