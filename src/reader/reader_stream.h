/*
 * reader_stream.h - internal to rt_reader: the cursor over one stream
 * file (reader_decode.c decodes packets and events through it, reader.c
 * merges the cursors of every stream of every trace).
 *
 * A cursor is owned by its trace set and used by one thread at a time
 * (the set's contract). Records describe the fields of the current packet
 * (packet header and context) and of the current event (the four event
 * scopes): they are rewritten when the cursor moves on.
 */
#ifndef RINGTRACE_CTF_READER_STREAM_H
#define RINGTRACE_CTF_READER_STREAM_H

#include <endian.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "reader_internal.h"

/* One decoded field instance. */
struct rtr_rec {
	const struct rtr_node *n;
	uint64_t bit;		/* absolute bit offset in the stream file */
	uint64_t first;		/* structs, arrays of records, variants: first
				 * child record; strings: length in bytes */
	uint64_t count;		/* structs, arrays, sequences: children */
};

struct rtr_recbuf {
	struct rtr_rec *r;	/* malloc'ed, grows, reused */
	size_t n, cap;
	const struct rtr_cursor *cur;	/* back pointer (value API) */
	uint8_t state;		/* RS_* */
	uint64_t start;		/* the scope's first bit (aligned) */
	uint64_t end;		/* bit after its last field */
	const struct rtr_node *root;
};

enum { RS_ABSENT, RS_SKIPPED, RS_EXPANDED };

/* What the roles of a packet header and context gave. */
struct rtr_pkt {
	uint32_t have;		/* 1 << RR_x for each role found */
	uint64_t magic, stream_id, ts_begin, ts_end;
	uint64_t content_size, packet_size, seq, discarded, cpu;
	uint64_t uuid_bit;
	uint64_t off;		/* byte offset of the packet in the file */
	uint64_t content_end, packet_end;	/* bits, absolute */
	const struct rtr_stream_class *sc;
};

struct rtr_cursor {
	struct rtr_trace *set;		/* for error messages */
	const struct rtr_meta *m;
	uint32_t trace, stream;
	const char *path;
	const uint8_t *map;		/* NULL when empty */
	uint64_t size;			/* bytes */
	struct rtr_pkt pkt;		/* current packet */
	uint64_t pos;			/* bit offset of the next event */
	uint64_t clock;
	uint64_t ev_id;
	uint64_t *slots;		/* m->nr_slots values */
	struct rtr_recbuf recs[RTR_NR_SCOPES];
	uint32_t cls;			/* index in m->classes */
	uint64_t ev_start;		/* bit offset of the current event */
	uint32_t cls_base;		/* index of m->classes[0] in the set's list */
	int64_t ns;			/* heap key of the current event */
	struct rtr_event ev;		/* the current event */
	size_t nr_slots;		/* allocated in slots */
	struct {			/* the packet accounted last */
		uint64_t prev_seq, prev_end, prev_disc;
	} acct;
	/* Live sets (reader_live.c): map is this malloc'ed copy of the
	 * stream's current packet. */
	uint8_t live_state;		/* RTR_LS_* */
	/* Directory sets: the file's pages before `dropped` (bytes) were
	 * dropped from the mapping (rtr_cursor_packet); the byte offset of
	 * every packet (rtr_open's walk of them). */
	uint64_t dropped;
	uint64_t *pkt_offs;
	size_t nr_pkts, pkts_cap;
};

/* ------------------------------------------------------------------ */
/* Bits: `size` bits at bit offset `bit` (CTF order: little-endian fields
 * fill bytes from their least significant bit, big-endian ones from their
 * most significant bit). The caller checked the bounds. */

static inline uint64_t read_bits(const uint8_t *map, uint64_t bit, unsigned size, bool be)
{
	const uint8_t *b = map + (bit >> 3);
	unsigned sh = (unsigned)(bit & 7);
	if (!sh) {
		uint16_t v16;
		uint32_t v32;
		uint64_t v64;
		switch (size) {
		case 8:
			return b[0];
		case 16:
			memcpy(&v16, b, 2);
			return be ? be16toh(v16) : le16toh(v16);
		case 32:
			memcpy(&v32, b, 4);
			return be ? be32toh(v32) : le32toh(v32);
		case 64:
			memcpy(&v64, b, 8);
			return be ? be64toh(v64) : le64toh(v64);
		default:
			break;
		}
	}
	unsigned nbytes = (sh + size + 7) / 8;
	if (nbytes <= 8) { /* within one 64-bit word */
		uint64_t w = 0;
		if (be) {
			for (unsigned i = 0; i < nbytes; i++)
				w = (w << 8) | b[i];
			w >>= nbytes * 8 - sh - size;
		} else {
			for (unsigned i = nbytes; i-- > 0;)
				w = (w << 8) | b[i];
			w >>= sh;
		}
		return size == 64 ? w : w & ((1ull << size) - 1);
	}
	unsigned __int128 v = 0;
	if (be) {
		for (unsigned i = 0; i < nbytes; i++)
			v = (v << 8) | b[i];
		v >>= nbytes * 8 - sh - size;
	} else {
		for (unsigned i = nbytes; i-- > 0;)
			v = (v << 8) | b[i];
		v >>= sh;
	}
	return size == 64 ? (uint64_t)v : (uint64_t)v & ((1ull << size) - 1);
}

/* read_bits when `avail` bytes can be read from bit's byte on: with
 * one 64-bit load when the field is within it. */
static inline uint64_t read_bits_word(const uint8_t *map, uint64_t avail, uint64_t bit,
				      unsigned size, bool be)
{
	unsigned sh = (unsigned)(bit & 7);
	if (avail < 8 || sh + size > 64)
		return read_bits(map, bit, size, be);
	uint64_t w;
	memcpy(&w, map + (bit >> 3), 8);
	if (be)
		return (be64toh(w) << sh) >> (64 - size);
	w = le64toh(w) >> sh;
	return size == 64 ? w : w & ((1ull << size) - 1);
}

static inline int64_t sign_extend(uint64_t v, unsigned size)
{
	if (size == 64)
		return (int64_t)v;
	uint64_t m = 1ull << (size - 1);
	return (int64_t)((v ^ m) - m);
}

/* The clock after a timestamp field of `size` bits read as v: its low
 * bits; a smaller value than the clock's low bits means they wrapped once. */
static inline uint64_t clock_update(uint64_t clock, uint64_t v, unsigned size)
{
	if (size >= 64)
		return v;
	uint64_t mask = (1ull << size) - 1;
	if (v < (clock & mask))
		clock += mask + 1;
	return (clock & ~mask) | v;
}

/* The option variant n selects for tag value `tag`, or -1. */
static inline int32_t variant_pick(const struct rtr_node *n, uint64_t tag)
{
	for (uint32_t k = 0; k < n->nr_maps; k++) {
		const struct rtr_enum_map *mp = &n->maps[k];
		if ((int64_t)tag >= mp->lo && (int64_t)tag <= mp->hi)
			return mp->option;
	}
	return -1;
}

/* One trace of a set. */
struct rtr_tr {
	char *path;			/* its directory (malloc'ed) */
	struct rtr_meta meta;
	uint32_t first_stream, nr_streams;
	uint32_t cls_base;		/* index of meta.classes[0] in the set's list */
};

/* The trace set (the public struct rtr_trace). */
struct rtr_trace {
	struct rtr_tr *traces;
	uint32_t nr_traces, traces_cap;
	struct rtr_cursor *cur;		/* one per stream file */
	struct rtr_stream_stats *stats;	/* parallel to cur */
	size_t nr_streams, streams_cap;
	struct rtr_gap *gaps;
	size_t nr_gaps, gaps_cap;
	struct rtr_event_class *classes;	/* every trace's, in trace order */
	size_t nr_classes;
	uint32_t *heap;			/* cursors with an event, by (ns, index) */
	size_t heap_len;
	int started;
	int64_t pending;		/* cursor to advance first, -1 if none */
	int err_code;			/* sticky */
	char err[1024];
	/* Live sets (reader_live.c); NULL ops for directory sets. */
	const struct rtr_live_ops *live_ops;
	void *live_arg;
	uint32_t *need;			/* streams to pull before the next event */
	size_t nr_need, need_cap;
	struct rtr_live_old *old;	/* replaced metadata and class lists,
					 * kept until rtr_close */
};

/* Find every trace under each dir, load metadata and map stream files
 * (reader_open.c). 0 or -errno with t->err set. */
int rtr_set_load(struct rtr_trace *t, const char *const *dirs, size_t n);

/* Building a set (reader_open.c, also used by reader_live.c). */
/* A new stream `name` in directory `dir` of trace ti, no data yet: its
 * index, or -errno (t->err set). Cursors may move. */
int rtr_stream_new(struct rtr_trace *t, uint32_t ti, const char *dir, const char *name);
/* Point the cursor at its trace's metadata (slots sized for it): 0 or
 * -ENOMEM. */
int rtr_cursor_bind(struct rtr_trace *t, struct rtr_cursor *c);
/* t->classes from every trace's metadata (traces' cls_base set). The
 * previous list is freed. 0 or -ENOMEM. */
int rtr_classes_build(struct rtr_trace *t);
/* Parse the metadata buf[0..len) (text or packetized; buf[len] writable,
 * changed in place) into m: 0 or -errno with t->err set. */
int rtr_meta_load(struct rtr_trace *t, struct rtr_meta *m, const char *path, char *buf,
		  size_t len);
/* Statistics and gaps of the packet c stands at (c->pkt). 0 or -ENOMEM. */
int rtr_packet_account(struct rtr_trace *t, struct rtr_cursor *c);

/* The merge heap (reader.c): add stream si, restore the order from i. */
void rtr_heap_push(struct rtr_trace *t, uint32_t si);
void rtr_heap_down(struct rtr_trace *t, size_t i);
/* Move cursor c to its next event (c->ev.cls set): 1, 0 (no more), -errno. */
int rtr_cursor_step(struct rtr_trace *t, struct rtr_cursor *c);

/* Live sets: the next event (rtr_next of a live set). */
int rtr_live_next(struct rtr_trace *t, struct rtr_event *ev);
void rtr_live_free(struct rtr_trace *t);

/* Error reporting of the set (reader.c). Returns code. */
__attribute__((format(printf, 3, 4)))
int rtr_set_error(struct rtr_trace *s, int code, const char *fmt, ...);
__attribute__((format(printf, 3, 0)))
int rtr_set_verror(struct rtr_trace *s, int code, const char *fmt, va_list ap);

/* Decode the packet header and context at byte `off`: 0 or -errno. */
int rtr_cursor_packet(struct rtr_cursor *c, uint64_t off);
/* The next event into c->ev: 1, 0 (end of the stream) or -errno. */
int rtr_cursor_next(struct rtr_cursor *c);
/* What rtr_cursor_count found in a stream. */
struct rtr_cursor_count {
	uint64_t events;
	uint64_t first_ticks, last_ticks;	/* when events > 0 */
	uint32_t cpu;			/* every event's rtr_event.cpu */
};
/* Count the events of the stream from where c stands to the packet at
 * byte `stop` (or the end of the file), each in per_class[k] for its
 * class m->classes[k], as rtr_cursor_next would find them (but without
 * records: every scope only walked to its end, plain ones stepped over;
 * an event rtr_cursor_next would refuse only for holding more than
 * MAX_RECS fields is counted). 0, or -EAGAIN when the stream cannot be
 * counted so (an error, which rtr_cursor_next would name; a clock that
 * goes back, or packets of different CPUs: rtr_next's order or its
 * events' cpu would differ from what the counts say); the cursor is then
 * anywhere. */
int rtr_cursor_count(struct rtr_cursor *c, uint64_t stop, uint64_t *per_class,
		     struct rtr_cursor_count *out);
/* Walk a scope skipped because of its static size (nothing there has
 * side effects): 0 or -errno. */
int rtr_cursor_expand(struct rtr_cursor *c, int scope);
void rtr_cursor_free(struct rtr_cursor *c);
/* Clock value -> ns since the epoch with the cursor's trace clock;
 * rtr_meta_clock_init prepares it once the clock is known. */
int64_t rtr_meta_ns(const struct rtr_meta *m, uint64_t ticks);
void rtr_meta_clock_init(struct rtr_meta *m);

#define NS_PER_S 1000000000u

/*
 * cycles * 1e9 / freq, computed as babeltrace2 computes it (in double
 * precision, truncated) so that both give the same nanosecond for every
 * event: the exact quotient differs from it by one now and then once the
 * clock value needs more than 53 bits of precision. Monotonic in
 * `cycles`, as every step rounds monotonically.
 */
static inline unsigned __int128 cycles_to_ns(const struct rtr_meta *m, uint64_t cycles)
{
	if (m->freq == NS_PER_S)
		return cycles;
	double ns = (1e9 * (double)cycles) / (double)m->freq;
	return ns >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)ns;
}

/* rtr_meta_ns with the common case inline: no saturation needed. */
static inline int64_t rtr_meta_ns_fast(const struct rtr_meta *m, uint64_t ticks)
{
	unsigned __int128 q = cycles_to_ns(m, ticks);
	int64_t ns;
	if (m->ns_base64 && q <= INT64_MAX &&
	    !__builtin_add_overflow((int64_t)m->ns_base, (int64_t)q, &ns))
		return ns;
	return rtr_meta_ns(m, ticks);
}

#endif /* RINGTRACE_CTF_READER_STREAM_H */
