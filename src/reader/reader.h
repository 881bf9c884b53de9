/*
 * reader.h - read CTF 1.8 traces: those ringtrace writes and those of
 * LTTng (UST and kernel), one or many at once, merged by time.
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
 * A trace is a directory holding `metadata` (TSDL, plain text or
 * packetized) and stream files (every regular, non-hidden file but
 * `metadata`). rtr_open(dir) opens every trace found under `dir`
 * recursively (each directory holding a `metadata` file is one trace, as
 * LTTng's `ust/uid/1000/64-bit/` layout needs); rtr_open_many does the same
 * for several directories. Trace index = order found (directories sorted
 * by name, depth first); stream index = position in rtr_streams, across
 * all traces. rtr_open parses every metadata into decode plans, maps every
 * stream file read-only and walks every packet's header and context (so
 * packet-level damage is reported by rtr_open); rtr_next then merges the
 * events of all streams of all traces by time in ns since the epoch (ties:
 * lower trace index, then lower stream index first), decoding only what is
 * needed to find each event's end. Field values are decoded on demand.
 *
 * Errors: -EINVAL malformed input, -ENOTSUP valid CTF this reader cannot
 * decode (integers over 64 bits, floats other than 32/64-bit IEEE 754).
 *
 * Every error message names the file and the byte offset (and the line for
 * the metadata). Errors are sticky: after rtr_next returned < 0, it returns
 * the same value again.
 *
 * Lifetime: the event classes, field classes, stream statistics and the
 * data pointers in an rtr_value (strings, bytes) stay valid until
 * rtr_close. An rtr_event (and the rtr_values obtained from it) can be
 * queried only until the next rtr_next call on the same trace: values are
 * decoded lazily from the reader's per-stream state. A trace is not
 * thread-safe; use one per thread.
 */
#ifndef RINGTRACE_CTF_READER_H
#define RINGTRACE_CTF_READER_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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
	RTR_BYTES,	/* byte sequence or array: value.bytes (only the
			 * byte sequences ringtrace writes; other traces'
			 * integer arrays are RTR_ARRAY) */
	RTR_ENUM,	/* integer (value.i or value.u per is_signed) and
			 * its label (NULL when no mapping matches) */
	RTR_STRUCT,	/* rtr_value_count members, rtr_value_child */
	RTR_ARRAY,	/* array or sequence: rtr_value_count elements */
};
/* Variants never appear: a variant's value is its selected option's. A
 * text array/sequence (8-bit integers, encoding UTF8/ASCII) is an
 * RTR_STRING whose value.s.len stops at the first NUL; value.s.p is then
 * NOT NUL-terminated: always use value.s.len. */

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

/* One event class; `loglevel` is -1 when the metadata gives none.
 * `fields`: the payload's top-level fields. */
struct rtr_event_class {
	uint32_t id;
	uint32_t stream_id;
	const char *name;	/* "provider:event" */
	int loglevel;
	uint32_t nr_fields;
	const struct rtr_field_class *fields;
	uint32_t trace;		/* index of the trace it belongs to */
	const char *emf_uri;	/* model.emf.uri, NULL if none */
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
	const char *label;	/* RTR_ENUM: the first matching label or NULL */
	bool is_signed;		/* RTR_INT and RTR_ENUM */
	uint8_t base;		/* integers, enums: 2, 8, 10 or 16; else 10 */
	unsigned bits;		/* integers, enums, floats: storage size */
	/* Private (rtr_value_count / rtr_value_child): do not touch. */
	const void *priv_node_;
	const void *priv_cur_;
	uint64_t priv_bit_;
	uint32_t priv_rec_;
};

struct rtr_event {
	uint64_t ticks;		/* clock value (cycles of the trace clock) */
	int64_t ns;		/* since the epoch: rtr_trace_ticks_to_ns */
	uint32_t cpu;		/* cpu_id of the packet, UINT32_MAX if unknown */
	uint32_t stream;	/* index of the stream file (rtr_streams) */
	const struct rtr_event_class *cls;
	const uint8_t *payload;	/* first byte of the payload */
	size_t payload_len;	/* bytes, rounded up */
	uint32_t trace;		/* index of the trace (rtr_trace_path) */
	const void *priv_;	/* private: the stream cursor */
};

/* The field scopes of an event, outermost first. */
enum rtr_scope {
	RTR_SCOPE_PACKET_HEADER,
	RTR_SCOPE_PACKET_CONTEXT,
	RTR_SCOPE_EVENT_HEADER,
	RTR_SCOPE_STREAM_EVENT_CONTEXT,
	RTR_SCOPE_EVENT_CONTEXT,
	RTR_SCOPE_PAYLOAD,
	RTR_NR_SCOPES
};

/* Per stream file. packets, events_discarded, packets_lost and bytes are
 * known when rtr_open returns; events counts the events rtr_next returned. */
struct rtr_stream_stats {
	const char *path;
	uint32_t trace;		/* index of its trace */
	uint64_t stream_class;	/* stream_id of its packets */
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
	/* The packet ending at ticks_after counts this many more discarded
	 * events than the previous one (babeltrace2's "discarded events"
	 * message); a gap can report lost packets, discarded events or both. */
	uint64_t events_discarded;
};

/* One `env` entry of a trace's metadata. */
struct rtr_env {
	const char *key;
	bool is_string;
	const char *s;		/* the value as text (integers too) */
	int64_t i;		/* integers */
};

/* Open every trace under `dir` (see above). Returns 0 and *out, or -errno
 * with *out = NULL and a message in err (if err is not NULL): -ENOENT no
 * trace found, -EINVAL malformed, -ENOTSUP unsupported, -ENOMEM. */
int rtr_open(const char *dir, struct rtr_trace **out, char *err, size_t errlen);
/* Same for `n` directories, merged into one trace set. */
int rtr_open_many(const char *const *dirs, size_t n, struct rtr_trace **out,
		  char *err, size_t errlen);
void rtr_close(struct rtr_trace *t);

/* The next event in timestamp order: 1 (event in *ev), 0 (end of the
 * trace) or -errno (rtr_error says what and where). Never allocates. */
int rtr_next(struct rtr_trace *t, struct rtr_event *ev);
/* The last error message, "" if none. */
const char *rtr_error(const struct rtr_trace *t);

/*
 * Count every event of a directory set as rtr_next would return them,
 * without merging them by time and without decoding what need not be
 * (a header through its fast path, contexts and payloads only walked to
 * their end, plain ones stepped over), in chunks of whole packets
 * counted by as many threads as there are CPUs: per_class[k] += the
 * events of class k (rtr_event_classes' order), stream_cpu[s] (when not
 * NULL) = the cpu of stream s's events (rtr_event.cpu; UINT32_MAX when
 * unknown or when it has none), the streams' `events` statistics, and
 * *res. Only on a set rtr_next has not read from yet; after it, rtr_next
 * returns 0 (every event was counted).
 *
 * Returns 0, or -EAGAIN when the counts would not be rtr_next's: a
 * stream whose clock goes back or whose packets carry different CPUs (so
 * rtr_next's order, hence its first and last events, or its cpu per
 * event would differ), or damaged data (rtr_next names the error where
 * its order meets it); nothing is counted then and the set is as it was:
 * read it with rtr_next. -EINVAL: a live set, or one already read from;
 * -ENOMEM (nothing counted either).
 */
struct rtr_count_result {
	uint64_t events;
	int64_t first_ns, last_ns;	/* of rtr_next's first and last events */
};
int rtr_count(struct rtr_trace *t, uint64_t *per_class, uint32_t *stream_cpu,
	      struct rtr_count_result *res);

/* Decode field `index` of the payload of the event rtr_next returned last.
 * 0 or -EINVAL (no such field, or an event that does not come from
 * rtr_next), -EINVAL also for a damaged payload (rtr_error says where). */
int rtr_field(const struct rtr_event *ev, uint32_t index, struct rtr_value *v);
/* Payload fields first, first + 1, ... into v[0..n) in one call (what
 * rtr_field gives for each, cheaper than as many calls): the number
 * written (n, or fewer when the payload has fewer fields), or -EINVAL
 * (as rtr_field: not the current event, or a damaged payload). */
int rtr_fields(const struct rtr_event *ev, uint32_t first, struct rtr_value *v, uint32_t n);

/*
 * The message of an rt_printf event: `fmt` (its payload field "fmt", an
 * enum whose one label is the format) with printf's conversions applied
 * to args[0..nargs) (the fields after it), into out (at most len - 1
 * bytes and a NUL, cut there). Never fails: an argument whose type does
 * not match its conversion is written as its own type (a number, a
 * string), a missing one as "<missing>", %n writes nothing, widths and
 * precisions are capped at 1024. Returns the length written.
 */
size_t rtr_printf(const char *fmt, const struct rtr_value *args, size_t nargs, char *out,
		  size_t len);
/* Same, by name (see struct rtr_field_class); -ENOENT if no such field. */
int rtr_field_by_name(const struct rtr_event *ev, const char *name,
		      struct rtr_value *v);

/* Number of top-level fields of scope `s` of `ev` (0 when the scope is
 * absent), and field `i` of it: 0, -EINVAL (bad index or damaged data). */
uint32_t rtr_scope_count(const struct rtr_event *ev, enum rtr_scope s);
int rtr_scope_field(const struct rtr_event *ev, enum rtr_scope s, uint32_t i,
		    struct rtr_value *v, const char **name);
/*
 * The bytes scope `s` of `ev` spans, when its fields' values are decoded
 * from them alone: a structure of static size (no variant, no sequence)
 * or of scalars and strings, beginning on a byte (its members' padding
 * is then the same wherever it lies). Two events of one class whose scope
 * has the same bytes have the same values there (a per-class cache of
 * their text can be keyed on them). *p and *len: from its first byte to
 * the one holding its last bit (*len 0 when the scope is absent). 0,
 * -ENOTSUP (another shape: decode the fields), -EINVAL (as rtr_field).
 */
int rtr_scope_bytes(const struct rtr_event *ev, enum rtr_scope s, const uint8_t **p,
		    size_t *len);
/*
 * A payload integer every event of its class holds at the same place: a
 * byte-aligned 8, 16, 32 or 64-bit integer of a payload of static layout
 * (rtr_payload_ints). rtr_fixed_int reads it from an event's payload.
 */
struct rtr_int_place {
	uint32_t off;		/* bytes from rtr_event.payload */
	uint8_t bytes;		/* 1, 2, 4 or 8 */
	bool be;		/* big-endian */
	bool is_signed;
	uint8_t base;		/* 2, 8, 10 or 16 */
};

static inline uint64_t rtr_fixed_int(const uint8_t *payload, const struct rtr_int_place *f)
{
	const uint8_t *b = payload + f->off;
	uint64_t v;
	uint32_t v32;
	uint16_t v16;
	switch (f->bytes) {
	case 1:
		v = b[0];
		return f->is_signed ? (uint64_t)(int64_t)(int8_t)v : v;
	case 2:
		memcpy(&v16, b, 2);
		v16 = f->be ? be16toh(v16) : le16toh(v16);
		return f->is_signed ? (uint64_t)(int64_t)(int16_t)v16 : v16;
	case 4:
		memcpy(&v32, b, 4);
		v32 = f->be ? be32toh(v32) : le32toh(v32);
		return f->is_signed ? (uint64_t)(int64_t)(int32_t)v32 : v32;
	default:
		memcpy(&v, b, 8);
		return f->be ? be64toh(v) : le64toh(v);
	}
}

/* The places of the first n payload fields of ev's class when each is a
 * plain integer (not an enum nor a boolean) at a fixed byte offset from
 * the payload's first byte in every event of the class (the payload's
 * layout is static and begins on a byte): 0 and places[0..n), else
 * -ENOTSUP (decode the fields with rtr_fields); -EINVAL as rtr_field. */
int rtr_payload_ints(const struct rtr_event *ev, struct rtr_int_place *places, uint32_t n);
/* RTR_STRUCT: members, RTR_ARRAY: elements; 0 for other types. */
uint32_t rtr_value_count(const struct rtr_value *v);
/* Member or element `i` of an RTR_STRUCT / RTR_ARRAY value; *name (if
 * name is not NULL) is the member's name, NULL for array elements.
 * 0 or -EINVAL. */
int rtr_value_child(const struct rtr_value *v, uint32_t i, struct rtr_value *child,
		    const char **name);

/* Traces of the set: count, directory, env entries (and one by key,
 * NULL if absent), clock. */
uint32_t rtr_trace_count(const struct rtr_trace *t);
const char *rtr_trace_path(const struct rtr_trace *t, uint32_t trace);
size_t rtr_trace_env(const struct rtr_trace *t, uint32_t trace, const struct rtr_env **out);
const struct rtr_env *rtr_trace_env_get(const struct rtr_trace *t, uint32_t trace,
					const char *key);
uint64_t rtr_trace_clock_freq(const struct rtr_trace *t, uint32_t trace);
int64_t rtr_trace_ticks_to_ns(const struct rtr_trace *t, uint32_t trace, uint64_t ticks);

/* Every event class of every trace, sorted by trace, stream_id, id. */
size_t rtr_event_classes(const struct rtr_trace *t,
			 const struct rtr_event_class **out);
/* Statistics per stream file, in stream index order (complete once
 * rtr_next returned 0). */
size_t rtr_streams(const struct rtr_trace *t, const struct rtr_stream_stats **out);
/* Every gap (lost packets, discarded events), by stream then position. */
size_t rtr_gaps(const struct rtr_trace *t, const struct rtr_gap **out);

/* The first trace's clock (rtr_trace_clock_freq(t, 0) ...). */
uint64_t rtr_clock_freq(const struct rtr_trace *t);
/* Like babeltrace2: offset_s * 1e9 + floor(offset * 1e9 / freq) +
 * floor(ticks * 1e9 / freq), after moving offset's whole seconds into
 * offset_s (saturates at the int64_t range). */
int64_t rtr_ticks_to_ns(const struct rtr_trace *t, uint64_t ticks);

/*
 * Live sets: traces fed packet by packet while they are being recorded
 * (src/live's viewer fills one from a relay daemon). The set starts
 * empty; traces, their metadata and their streams are added as they
 * appear, and rtr_next merges by time as for directories, asking
 * ops->pull for more whenever a stream has no event left:
 *
 *   pull(arg, t, stream, &ticks) blocks until it can answer for `stream`:
 *     RTR_LIVE_PACKET  it gave the stream its next packet (rtr_live_packet)
 *     RTR_LIVE_QUIET   the stream has nothing before clock value *ticks
 *                      (its trace's clock); it is asked again once every
 *                      other stream's next event is later, so a pull
 *                      answers QUIET again only when *ticks has advanced
 *                      (or after waiting a while)
 *     RTR_LIVE_ENDED   the stream has ended
 *     -errno           failure; rtr_live_fail says why (else a generic
 *                      message); rtr_next then returns it (sticky)
 *   with stream == RTR_LIVE_NONE when no stream has anything to read: it
 *   returns RTR_LIVE_PACKET once it added streams, RTR_LIVE_ENDED at the
 *   end of everything (rtr_next then returns 0).
 *
 * pull may add traces, metadata and streams (rtr_live_add_trace,
 * rtr_live_metadata, rtr_live_add_stream); a stream's packets can be
 * decoded once its trace has metadata. Metadata replaced by a longer one
 * (new event classes) keeps the old classes valid until rtr_close; the
 * list rtr_event_classes gives grows (call it again after rtr_next: its
 * pointer may change). Merging is exact among the streams known when an
 * event is returned; a stream added later can hold earlier events.
 * Only rtr_next (through pull) may call the rtr_live_* feeders after the
 * first rtr_next.
 */
#define RTR_LIVE_NONE UINT32_MAX
enum rtr_live_answer { RTR_LIVE_PACKET = 1, RTR_LIVE_QUIET, RTR_LIVE_ENDED };

struct rtr_live_ops {
	int (*pull)(void *arg, struct rtr_trace *t, uint32_t stream, uint64_t *ticks);
};

/* An empty live set: 0 or -ENOMEM. */
int rtr_live_open(const struct rtr_live_ops *ops, void *arg, struct rtr_trace **out);
/* A trace named `name` (rtr_trace_path), no metadata yet: its index in
 * *trace. 0 or -ENOMEM. */
int rtr_live_add_trace(struct rtr_trace *t, const char *name, uint32_t *trace);
/* The whole metadata of the trace so far (text or packetized, as in a
 * `metadata` file), replacing what it had: 0, or -EINVAL / -ENOTSUP /
 * -ENOMEM (sticky: rtr_error says what). */
int rtr_live_metadata(struct rtr_trace *t, uint32_t trace, const void *data, size_t len);
/* A stream `name` of the trace: its index in *stream; pulled before the
 * next event. 0 or -EINVAL (no such trace) / -ENOMEM. */
int rtr_live_add_stream(struct rtr_trace *t, uint32_t trace, const char *name,
			uint32_t *stream);
/* The stream's next packet (whole, padding included), copied: 0, or
 * -EINVAL (damaged packet, no metadata; sticky) / -ENOMEM. */
int rtr_live_packet(struct rtr_trace *t, uint32_t stream, const void *data, size_t len);
/* Record why a pull fails (printf-like); returns code. */
__attribute__((format(printf, 3, 4)))
int rtr_live_fail(struct rtr_trace *t, int code, const char *fmt, ...);

#ifdef __cplusplus
}
#endif

#endif /* RINGTRACE_CTF_READER_H */
