/*
 * reader_decode.c - decode stream files through the metadata's decode
 * nodes: packets (header and context: magic, uuid, stream class, sizes,
 * timestamps, counters), events (header with N-bit partial timestamps,
 * contexts, payload) and, on demand, field values (the rtr_value API).
 *
 * Walking a scope lays its fields out as records (reader_stream.h), one
 * per field instance, children of a compound in consecutive records; a
 * scope of static size with nothing the reader needs inside (no role, no
 * length or tag referenced later) is skipped with one addition and only
 * walked if a value is asked for. Arrays of fixed-size scalars get no
 * per-element record. Event headers of the usual shapes (struct
 * rtr_hdr_fast, reader_fast.c) are decoded with direct loads at
 * precomputed offsets instead; anything unusual goes to the walk. Every
 * read is bounds-checked against the packet's content end; errors name
 * the file and the byte offset.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../common/array.h"
#include "reader_stream.h"

#define MAX_RECS (1u << 26)	/* per scope instance */
#define CTF_MAGIC_VALUE 0xC1FC1FC1u

static inline uint64_t align_up(uint64_t bit, uint32_t align)
{
	return (bit + align - 1) & ~(uint64_t)(align - 1);
}

static const char *scope_desc(int scope)
{
	static const char *const names[] = {
		"packet header", "packet context", "event header",
		"stream event context", "context", "payload",
	};
	return names[scope];
}

/* ------------------------------------------------------------------ */
/* Walking                                                              */

struct walk {
	struct rtr_cursor *c;
	int scope;
	uint64_t end;		/* bits: content end (or file end) */
	int depth;
	bool rec;		/* lay out records (else only find the end,
				 * apply roles and fill slots) */
};

/* "event 'name' at byte offset N: " for errors in event scopes. */
static const char *event_desc(const struct walk *w, char *buf, size_t len)
{
	const struct rtr_cursor *c = w->c;
	buf[0] = '\0';
	if (w->scope >= RTR_SCOPE_EVENT_CONTEXT)
		snprintf(buf, len, "event '%s' at byte offset %" PRIu64 ": ",
			 c->m->classes[c->cls].name, c->ev_start / 8);
	return buf;
}

__attribute__((noinline))
static int field_past_end(struct walk *w, const struct rtr_node *n, uint64_t bit)
{
	char ev[300];
	return rtr_set_error(w->c->set, -EINVAL,
			     "%s: byte offset %" PRIu64 ": %s%s field '%s' goes past the end of the packet content (at byte %" PRIu64 ")",
			     w->c->path, bit / 8, event_desc(w, ev, sizeof(ev)),
			     scope_desc(w->scope), n->decl_name, w->end / 8);
}

__attribute__((noinline))
static int reserve_slow(struct walk *w, uint64_t count, size_t *first);

static inline int reserve(struct walk *w, uint64_t count, size_t *first)
{
	struct rtr_recbuf *rb = &w->c->recs[w->scope];
	if (count <= rb->cap - rb->n) {
		*first = rb->n;
		rb->n += count;
		return 0;
	}
	return reserve_slow(w, count, first);
}

static int reserve_slow(struct walk *w, uint64_t count, size_t *first)
{
	struct rtr_recbuf *rb = &w->c->recs[w->scope];
	if (count > MAX_RECS || rb->n + count > MAX_RECS)
		return rtr_set_error(w->c->set, -EINVAL, "%s: too many fields in one %s",
				     w->c->path, scope_desc(w->scope));
	if (RT_ARRAY_GROW(rb->r, rb->cap, rb->n + count, 64) < 0)
		return rtr_set_error(w->c->set, -ENOMEM, "out of memory");
	*first = rb->n;
	rb->n += count;
	return 0;
}

static void apply_role(struct rtr_cursor *c, const struct rtr_node *n, uint64_t v, uint64_t bit)
{
	struct rtr_pkt *p = &c->pkt;
	p->have |= 1u << n->role;
	switch (n->role) {
	case RR_MAGIC: p->magic = v; break;
	case RR_STREAM_ID: p->stream_id = v; break;
	case RR_TS_BEGIN: p->ts_begin = v; break;
	case RR_TS_END: p->ts_end = v; break;
	case RR_CONTENT_SIZE: p->content_size = v; break;
	case RR_PACKET_SIZE: p->packet_size = v; break;
	case RR_SEQ_NUM: p->seq = v; break;
	case RR_DISCARDED: p->discarded = v; break;
	case RR_CPU_ID: p->cpu = v; break;
	case RR_UUID: p->uuid_bit = bit; break;
	case RR_EVENT_ID: c->ev_id = v; break;
	case RR_CLOCK:
		c->clock = clock_update(c->clock, v, n->size);
		break;
	default: break;
	}
}

static int walk_node(struct walk *w, const struct rtr_node *n, uint64_t *bitp, size_t rec);

/* The first NUL of p[0..n), or NULL: the strings of events (names,
 * contexts such as procname) mostly end within 16 bytes, found in two
 * 8-byte words (the lowest byte of a word that is 0 sets the lowest
 * bit of `z`: a borrow only moves upwards) before memchr's set-up. */
static inline const uint8_t *find_nul(const uint8_t *p, size_t n)
{
	const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
	size_t i = 0;
	for (; i < 16 && n - i >= 8; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		w = le64toh(w);
		uint64_t z = (w - ones) & ~w & highs;
		if (z)
			return p + i + ((unsigned)__builtin_ctzll(z) >> 3);
	}
	return i < n ? memchr(p + i, 0, n - i) : NULL;
}

/* A scalar (integer, enum, float) without record: the common case of the
 * scan, kept out of walk_node's recursion. */
/* The slot and role of scalar n at `bit` (inside the content), if any. */
static inline void note_scalar(struct rtr_cursor *c, const struct rtr_node *n, uint64_t bit)
{
	if (n->role || n->slot >= 0) {
		uint64_t v = read_bits(c->map, bit, n->size, n->be);
		if (n->is_signed)
			v = (uint64_t)sign_extend(v, n->size);
		if (n->slot >= 0)
			c->slots[n->slot] = v;
		if (n->role)
			apply_role(c, n, v, bit);
	}
}

static inline int scan_scalar(struct walk *w, const struct rtr_node *n, uint64_t *bitp)
{
	uint64_t bit = align_up(*bitp, n->align);
	if (bit > w->end || n->size > w->end - bit)
		return field_past_end(w, n, bit);
	note_scalar(w->c, n, bit);
	*bitp = bit + n->size;
	return 0;
}

/* A scalar with its record `rec`: walk_node's case of scalars (the same
 * checks and errors), inline in the walk of a structure's members. */
static inline int rec_scalar(struct walk *w, const struct rtr_node *n, uint64_t *bitp,
			     size_t rec)
{
	uint64_t bit = align_up(*bitp, n->align);
	if (bit > w->end)
		return field_past_end(w, n, *bitp);
	if (n->size > w->end - bit)
		return field_past_end(w, n, bit);
	struct rtr_rec *r = &w->c->recs[w->scope].r[rec];
	r->n = n;
	r->bit = bit;
	r->first = 0;
	r->count = 0;
	note_scalar(w->c, n, bit);
	*bitp = bit + n->size;
	return 0;
}

/* The option variant n selects (its tag's value), or -1. */
static inline int32_t variant_option(const struct walk *w, const struct rtr_node *n)
{
	return variant_pick(n, w->c->slots[n->ref_slot]);
}

__attribute__((noinline))
static int no_option(const struct walk *w, const struct rtr_node *n, uint64_t bit)
{
	return rtr_set_error(w->c->set, -EINVAL,
			     "%s: byte offset %" PRIu64 ": variant '%s': tag value %" PRId64 " selects no option",
			     w->c->path, bit / 8, n->decl_name, (int64_t)w->c->slots[n->ref_slot]);
}

/* Scan (no records) a structure of scalars, e.g. an event header's
 * compact or extended form. */
static inline int scan_flat(struct walk *w, const struct rtr_node *st, uint64_t *bitp)
{
	*bitp = align_up(*bitp, st->align);
	if (*bitp > w->end)
		return field_past_end(w, st, *bitp);
	for (uint32_t k = 0; k < st->nr_children; k++)
		if (scan_scalar(w, st->children[k], bitp) < 0)
			return -EINVAL;
	return 0;
}

static int walk_variant(struct walk *w, const struct rtr_node *n, uint64_t *bitp, size_t rec)
{
	int32_t opt = variant_option(w, n);
	if (opt < 0)
		return no_option(w, n, *bitp);
	size_t first = 0;
	if (w->rec) {
		if (reserve(w, 1, &first) < 0)
			return -EINVAL;
		struct rtr_rec *r = &w->c->recs[w->scope].r[rec];
		r->first = first;
		r->count = 1;
	}
	return walk_node(w, n->children[opt], bitp, first);
}

static int walk_array(struct walk *w, const struct rtr_node *n, uint64_t *bitp, size_t rec)
{
	uint64_t len = n->kind == RN_ARRAY ? n->length : w->c->slots[n->ref_slot];
	const struct rtr_node *e = n->children[0];
	uint64_t bit = *bitp;
	struct rtr_recbuf *rb = &w->c->recs[w->scope];
	if (n->elem_fixed) {
		uint64_t left = w->end - bit;
		if (len && (n->stride > left / len + 1 ||
			    n->stride * (len - 1) + e->size > left))
			goto too_long;
		if (w->rec) {
			rb->r[rec].first = UINT64_MAX;
			rb->r[rec].count = len;
		}
		*bitp = len ? bit + n->stride * (len - 1) + e->size : bit;
		return 0;
	}
	/* Every element takes at least one bit, but empty structures. */
	if (len > w->end - bit && e->static_bits != 0)
		goto too_long;
	if (e->static_bits == 0 && len > MAX_RECS)
		goto too_long;
	if (!w->rec && e->plain && len) {
		/* Elements of static size with nothing inside to note. */
		uint64_t stride = align_up((uint64_t)e->static_bits, e->align);
		uint64_t left = w->end - bit;
		if (stride && (len - 1 > left / stride ||
			       stride * (len - 1) + (uint64_t)e->static_bits > left))
			goto too_long;
		*bitp = bit + stride * (len - 1) + (uint64_t)e->static_bits;
		return 0;
	}
	size_t first = 0;
	if (w->rec) {
		if (reserve(w, len, &first) < 0)
			return -EINVAL;
		rb = &w->c->recs[w->scope];
		rb->r[rec].first = first;
		rb->r[rec].count = len;
	}
	for (uint64_t k = 0; k < len; k++)
		if (walk_node(w, e, bitp, w->rec ? first + k : 0) < 0)
			return -EINVAL;
	return 0;
too_long:
	return rtr_set_error(w->c->set, -EINVAL,
			     "%s: byte offset %" PRIu64 ": %s '%s' of %" PRIu64 " elements goes past the end of the packet content (%" PRIu64 " bytes left)",
			     w->c->path, bit / 8, n->kind == RN_SEQ ? "sequence" : "array",
			     n->decl_name, len, (w->end - bit) / 8);
}

static int walk_node(struct walk *w, const struct rtr_node *n, uint64_t *bitp, size_t rec)
{
	struct rtr_cursor *c = w->c;
	uint64_t bit = align_up(*bitp, n->align);
	if (bit > w->end)
		return field_past_end(w, n, *bitp);
	struct rtr_rec *r = NULL;
	if (w->rec) {
		r = &c->recs[w->scope].r[rec];
		r->n = n;
		r->bit = bit;
		r->first = 0;
		r->count = 0;
	}
	int ret = 0;
	switch (n->kind) {
	case RN_INT:
	case RN_ENUM:
	case RN_FLOAT:
		if (n->size > w->end - bit)
			return field_past_end(w, n, bit);
		note_scalar(c, n, bit);
		*bitp = bit + n->size;
		return 0;
	case RN_STRING: {
		uint64_t from = bit / 8, to = w->end / 8;
		const uint8_t *z = from < to ? find_nul(c->map + from, to - from) : NULL;
		if (!z)
			return rtr_set_error(c->set, -EINVAL,
					     "%s: byte offset %" PRIu64 ": string '%s' has no NUL before the end of the packet content",
					     c->path, from, n->decl_name);
		if (r)
			r->first = (uint64_t)(z - (c->map + from));
		*bitp = (uint64_t)(z - c->map + 1) * 8;
		return 0;
	}
	case RN_STRUCT: {
		if (++w->depth > 64)
			return rtr_set_error(c->set, -EINVAL, "%s: fields nested too deep", c->path);
		size_t first = 0;
		if (w->rec) {
			if (reserve(w, n->nr_children, &first) < 0)
				return -EINVAL;
			r = &c->recs[w->scope].r[rec];
			r->first = first;
			r->count = n->nr_children;
		}
		*bitp = bit;
		for (uint32_t k = 0; k < n->nr_children && ret == 0; k++) {
			const struct rtr_node *ch = n->children[k];
			if (ch->kind <= RN_FLOAT) {
				ret = w->rec ? rec_scalar(w, ch, bitp, first + k)
					     : scan_scalar(w, ch, bitp);
			} else if (!w->rec && ch->kind == RN_VARIANT) {
				int32_t opt = variant_option(w, ch);
				if (opt < 0)
					ret = no_option(w, ch, *bitp);
				else if (ch->children[opt]->kind == RN_STRUCT &&
					 ch->children[opt]->flat)
					ret = scan_flat(w, ch->children[opt], bitp);
				else
					ret = walk_node(w, ch->children[opt], bitp, 0);
			} else
				ret = walk_node(w, ch, bitp, w->rec ? first + k : 0);
		}
		w->depth--;
		return ret;
	}
	case RN_VARIANT:
		*bitp = bit;
		if (++w->depth > 64)
			return rtr_set_error(c->set, -EINVAL, "%s: fields nested too deep", c->path);
		ret = walk_variant(w, n, bitp, rec);
		w->depth--;
		return ret;
	default:
		*bitp = bit;
		if (n->role)
			apply_role(c, n, 0, bit);
		if (++w->depth > 64)
			return rtr_set_error(c->set, -EINVAL, "%s: fields nested too deep", c->path);
		ret = walk_array(w, n, bitp, rec);
		w->depth--;
		return ret;
	}
}

/* Walk scope `scope` (root n, NULL: absent) from *bitp: with records
 * when `rec`, else only to find its end (with one addition when its size
 * is static and nothing in it matters to the reader). Walking again the
 * same bytes is harmless: roles and slots get the same values. */
__attribute__((noinline))
static int walk_scope_nodes(struct rtr_cursor *c, int scope, const struct rtr_node *n,
			    uint64_t *bitp, uint64_t end, bool rec);

/* Scope root n (rtr_node.strs: plain scalars and strings, e.g. the vpid,
 * vtid and procname context `record` adds) at rb->start laid out in one
 * loop, the records walk_node would write (the structure's, then one per
 * member: a string's with its length in `first`): true and *bitp past
 * it, or false when its records do not fit yet or a member does not fit
 * the content (the walk then grows them or names the field). */
__attribute__((noinline))
static bool rec_strs(const struct rtr_cursor *c, struct rtr_recbuf *rb,
			    const struct rtr_node *n, uint64_t *bitp, uint64_t end)
{
	uint64_t bit = rb->start;
	if (rb->cap < (size_t)n->nr_children + 1 || bit > end)
		return false;
	struct rtr_rec *r = rb->r;
	r[0] = (struct rtr_rec){ .n = n, .bit = bit, .first = 1, .count = n->nr_children };
	for (uint32_t k = 0; k < n->nr_children; k++) {
		const struct rtr_node *ch = n->children[k];
		bit = align_up(bit, ch->align);
		if (bit > end)
			return false;
		uint64_t len = 0, next;
		if (ch->kind == RN_STRING) {
			uint64_t from = bit / 8, to = end / 8;
			const uint8_t *z = from < to ? find_nul(c->map + from, to - from) : NULL;
			if (!z)
				return false;
			len = (uint64_t)(z - (c->map + from));
			next = (uint64_t)(z - c->map + 1) * 8;
		} else {
			if ((uint64_t)ch->static_bits > end - bit)
				return false;
			next = bit + (uint64_t)ch->static_bits;
		}
		r[k + 1] = (struct rtr_rec){ .n = ch, .bit = bit, .first = len, .count = 0 };
		bit = next;
	}
	rb->n = (size_t)n->nr_children + 1;
	rb->state = RS_EXPANDED;
	*bitp = rb->end = bit;
	return true;
}

static inline int walk_scope(struct rtr_cursor *c, int scope, const struct rtr_node *n,
			     uint64_t *bitp, uint64_t end, bool rec)
{
	struct rtr_recbuf *rb = &c->recs[scope];
	rb->n = 0;
	rb->root = n;
	if (!n) {
		rb->state = RS_ABSENT;
		rb->start = rb->end = *bitp;
		return 0;
	}
	uint64_t bit = align_up(*bitp, n->align);
	rb->start = bit;
	/* A scope that does not fit is walked to name the field that does not. */
	if (!rec && n->plain && bit <= end && (uint64_t)n->static_bits <= end - bit) {
		rb->state = RS_SKIPPED;
		*bitp = rb->end = bit + (uint64_t)n->static_bits;
		return 0;
	}
	if (rec && n->strs && rec_strs(c, rb, n, bitp, end))
		return 0;
	return walk_scope_nodes(c, scope, n, bitp, end, rec);
}

/* walk_scope's walk of the nodes (rb->n, root and start already set). */
static int walk_scope_nodes(struct rtr_cursor *c, int scope, const struct rtr_node *n,
			    uint64_t *bitp, uint64_t end, bool rec)
{
	struct rtr_recbuf *rb = &c->recs[scope];
	uint64_t bit = rb->start;
	struct walk w = { c, scope, end, 0, rec };
	size_t first = 0;
	if ((rec && reserve(&w, 1, &first) < 0) || walk_node(&w, n, &bit, first) < 0)
		return -EINVAL;
	rb->state = rec ? RS_EXPANDED : RS_SKIPPED;
	*bitp = rb->end = bit;
	return 0;
}

int rtr_cursor_expand(struct rtr_cursor *c, int scope)
{
	struct rtr_recbuf *rb = &c->recs[scope];
	if (rb->state != RS_SKIPPED)
		return 0;
	uint64_t bit = rb->start;
	return walk_scope(c, scope, rb->root, &bit, rb->end, true);
}

/* ------------------------------------------------------------------ */
/* Packets and events                                                   */

#define HAVE(p, role) ((p)->have & (1u << (role)))

/* Once a directory set's cursor is this far past the pages of its
 * stream file it read last, they leave its mapping (MADV_DONTNEED on the
 * file's read-only mapping: the page cache keeps them, and whatever
 * still points there, such as a string value, reads the same bytes
 * again), so that reading a trace holds a bounded part of it in memory
 * however large it is. */
#define DROP_BEHIND (32ull << 20)

static void drop_behind(struct rtr_cursor *c, uint64_t off)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), upto = off & ~(page - 1);
	if (upto < c->dropped) {
		c->dropped = upto;	/* read again from an earlier packet */
		return;
	}
	if (upto - c->dropped < DROP_BEHIND || c->set->live_ops)
		return;
	/* Advice only: on failure the pages stay, nothing else changes. */
	(void)madvise((void *)(uintptr_t)(c->map + c->dropped), (size_t)(upto - c->dropped),
		      MADV_DONTNEED);
	c->dropped = upto;
}

int rtr_cursor_packet(struct rtr_cursor *c, uint64_t off)
{
	const struct rtr_meta *m = c->m;
	struct rtr_pkt *p = &c->pkt;
	drop_behind(c, off);
	memset(p, 0, sizeof(*p));
	p->off = off;
	uint64_t fend = c->size * 8, bit = off * 8;
	if (walk_scope(c, RTR_SCOPE_PACKET_HEADER, m->packet_header, &bit, fend, false) < 0)
		return -EINVAL;
	if (HAVE(p, RR_MAGIC) && p->magic != CTF_MAGIC_VALUE)
		return rtr_set_error(c->set, -EINVAL,
				     "%s: byte offset %" PRIu64 ": bad packet magic 0x%08" PRIx64 " (expected 0x%08x)",
				     c->path, off, p->magic, CTF_MAGIC_VALUE);
	if (HAVE(p, RR_UUID) && m->has_uuid && memcmp(c->map + p->uuid_bit / 8, m->uuid, 16))
		return rtr_set_error(c->set, -EINVAL,
				     "%s: byte offset %" PRIu64 ": the packet's trace UUID is not the metadata's (a stream file of another trace?)",
				     c->path, p->uuid_bit / 8);
	p->sc = NULL;
	for (size_t k = 0; k < m->nr_streams; k++)
		if (m->streams[k].id == p->stream_id)
			p->sc = &m->streams[k];
	if (!p->sc)
		return rtr_set_error(c->set, -EINVAL,
				     "%s: byte offset %" PRIu64 ": stream id %" PRIu64 " is not in the metadata",
				     c->path, off, p->stream_id);
	if (walk_scope(c, RTR_SCOPE_PACKET_CONTEXT, p->sc->packet_context, &bit, fend, false) < 0)
		return -EINVAL;
	uint64_t left = fend - off * 8, hdr = bit - off * 8;
	uint64_t psize = HAVE(p, RR_PACKET_SIZE) ? p->packet_size : left;
	uint64_t csize = HAVE(p, RR_CONTENT_SIZE) ? p->content_size : psize;
	const char *why = NULL;
	if (psize % 8)
		why = "packet_size %" PRIu64 " bits is not a whole number of bytes";
	else if (psize > left)
		why = "packet_size %" PRIu64 " bits goes past the end of the file";
	else if (psize < hdr)
		why = "packet_size %" PRIu64 " bits is smaller than the packet header";
	else if (csize > psize)
		why = "content_size %" PRIu64 " bits is larger than packet_size";
	else if (csize < hdr)
		why = "content_size %" PRIu64 " bits is smaller than the packet header";
	if (why) {
		char msg[160];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
		snprintf(msg, sizeof(msg), why, strstr(why, "content") == why ? csize : psize);
#pragma GCC diagnostic pop
		return rtr_set_error(c->set, -EINVAL,
				     "%s: byte offset %" PRIu64 ": %s (%" PRIu64 " bytes left in the file, header and context %" PRIu64 " bits)",
				     c->path, off, msg, left / 8, hdr);
	}
	p->packet_end = off * 8 + psize;
	p->content_end = off * 8 + csize;
	if (!psize) /* cannot happen (hdr > 0 or left > 0), but never loop */
		p->packet_end = fend;
	c->pos = bit;
	c->clock = HAVE(p, RR_TS_BEGIN) ? p->ts_begin : c->clock;
	return 0;
}

static inline bool dynamic(const struct rtr_node *n)
{
	return n && n->static_bits < 0;
}

__attribute__((noinline))
static int unknown_id(struct rtr_cursor *c, uint64_t at)
{
	return rtr_set_error(c->set, -EINVAL,
			     "%s: byte offset %" PRIu64 ": unknown event id %" PRIu64 " for stream class %" PRIu64,
			     c->path, at / 8, c->ev_id, c->pkt.sc->id);
}

/* Field f of a header whose first byte is b, with one 64-bit load (the
 * form's span is inside the file). */
static inline uint64_t header_field(const uint8_t *b, const struct rtr_hdr_field *f)
{
	uint64_t w;
	memcpy(&w, b + (f->off >> 3), 8);
	unsigned sh = f->off & 7;
	uint64_t v = f->be ? (be64toh(w) << sh) >> (64 - f->size) : (le64toh(w) >> sh) & f->mask;
	return f->is_signed ? (uint64_t)sign_extend(v, f->size) : v;
}

/* What a header field's value means to the cursor. */
static inline void header_apply(struct rtr_cursor *c, const struct rtr_hdr_field *f, uint64_t v)
{
	if (f->slot >= 0)
		c->slots[f->slot] = v;
	if (f->role == RR_EVENT_ID)
		c->ev_id = v;
	else if (f->role == RR_CLOCK)
		c->clock = clock_update(c->clock, v, f->size);
}

/* The event header at *bitp through its fast path: true when decoded
 * (*bitp then past it), false when it does not fit, is too close to the
 * end of the file for whole-word loads or its tag selects no option: the
 * general walk then decodes it or names the error (walking the same
 * bytes again is harmless, see walk_scope). `rec`: set the scope's
 * record buffer as walk_scope would (rtr_cursor_count needs none). */
__attribute__((always_inline))
static inline bool fast_header(struct rtr_cursor *c, const struct rtr_stream_class *sc,
			       uint64_t *bitp, uint64_t end, bool rec)
{
	const struct rtr_hdr_fast *fh = sc->fast_header;
	const struct rtr_hdr_form *fm = &fh->prefix;
	uint64_t bit = align_up(*bitp, fh->align);
	if (!fh->word || bit > end || fm->bits > end - bit || c->size - (bit >> 3) < fh->span)
		return false;
	const uint8_t *b = c->map + (bit >> 3);
	/* The header's size straight from the tag's value when it can (the
	 * next event's position waits for it, not the fields). */
	uint64_t bits = fm->bits;
	if (fh->variant) {
		uint64_t tag = c->slots[fh->variant->ref_slot];
		if (fh->tag >= 0) {
			tag = header_field(b, &fm->f[fh->tag]);
			header_apply(c, &fm->f[fh->tag], tag);
		}
		int32_t opt;
		if (tag < fh->nr_pick) {
			opt = fh->pick[tag];
			bits = fh->pick_bits[tag];
		} else {
			opt = variant_pick(fh->variant, tag);
			bits = opt < 0 ? 0 : fh->opts[opt].bits;
		}
		if (opt < 0 || bits > end - bit)
			return false;
		fm = &fh->opts[opt];
	}
	for (uint32_t k = 0; k < fm->nr; k++)
		header_apply(c, &fm->f[k], header_field(b, &fm->f[k]));
	*bitp = bit + bits;
	if (rec) {
		struct rtr_recbuf *rb = &c->recs[RTR_SCOPE_EVENT_HEADER];
		rb->n = 0;
		rb->root = sc->event_header;
		rb->state = RS_SKIPPED;
		rb->start = bit;
		rb->end = *bitp;
	}
	return true;
}

static inline bool skip_strs(const struct rtr_cursor *c, const struct rtr_node *n,
			     uint64_t *bitp, uint64_t end);

/* A context scope (root n, NULL: absent) from *bitp: one of scalars and
 * strings (rtr_node.strs, such as the vpid, vtid and procname contexts)
 * is stepped over without records, left for rtr_cursor_expand to lay out
 * when a field is asked for (a viewer that caches the contexts' text by
 * their bytes rarely asks); the others as walk_scope lays them out. */
__attribute__((always_inline))
static inline int context_scope(struct rtr_cursor *c, int scope, const struct rtr_node *n,
				uint64_t *bitp, uint64_t end)
{
	if (n && !n->plain && n->strs) {
		uint64_t start = align_up(*bitp, n->align);
		struct rtr_recbuf *prev = &c->recs[scope];
		/* The bytes of this scope of the previous event, in the same
		 * packet (a live set's previous packet is freed), begin the
		 * same: then it ends as far from its start (both starts are
		 * aligned as its members: the same padding). */
		if (prev->root == n && prev->state != RS_ABSENT && !c->set->live_ops &&
		    prev->start >= c->pkt.off * 8 && prev->start < start && !(start % 8) &&
		    !(prev->start % 8)) {
			uint64_t bits = prev->end - prev->start;
			if (start <= end && bits <= end - start &&
			    !memcmp(c->map + start / 8, c->map + prev->start / 8, (bits + 7) / 8)) {
				prev->n = 0;
				prev->state = RS_SKIPPED;
				prev->start = start;
				*bitp = prev->end = start + bits;
				return 0;
			}
		}
		if (skip_strs(c, n, bitp, end)) {
			struct rtr_recbuf *rb = &c->recs[scope];
			rb->n = 0;
			rb->root = n;
			rb->state = RS_SKIPPED;
			rb->start = start;
			rb->end = *bitp;
			return 0;
		}
	}
	return walk_scope(c, scope, n, bitp, end, dynamic(n));
}

int rtr_cursor_next(struct rtr_cursor *c)
{
	if (!c->map)
		return 0;
	/* The next packet with an event: content ends at the first bit
	 * where no event header fits (padding is shorter than a header). */
	while (c->pos >= c->pkt.content_end ||
	       (c->pkt.sc->event_header && c->pkt.content_end - c->pos < 8)) {
		uint64_t next = c->pkt.packet_end / 8;
		if (next >= c->size)
			return 0;
		if (rtr_cursor_packet(c, next) < 0)
			return -EINVAL;
	}
	const struct rtr_stream_class *sc = c->pkt.sc;
	const struct rtr_meta *m = c->m;
	uint64_t end = c->pkt.content_end, at = c->pos, bit = at;
	c->ev_id = 0;
	/* Headers are only scanned (their values are rarely asked for);
	 * payloads and contexts of dynamic size get their records at once
	 * (readers usually want them, and that spares a second walk), but
	 * contexts of scalars and strings (context_scope). */
	if ((!sc->fast_header || !fast_header(c, sc, &bit, end, true)) &&
	    walk_scope(c, RTR_SCOPE_EVENT_HEADER, sc->event_header, &bit, end, false) < 0)
		return -EINVAL;
	if (context_scope(c, RTR_SCOPE_STREAM_EVENT_CONTEXT, sc->event_context, &bit, end) < 0)
		return -EINVAL;
	uint32_t k = rtr_meta_find_class(m, sc, c->ev_id);
	if (k == UINT32_MAX)
		return unknown_id(c, at);
	const struct rtr_class_nodes *cn = &m->class_nodes[k];
	c->cls = k;
	c->ev_start = at;
	if (context_scope(c, RTR_SCOPE_EVENT_CONTEXT, cn->context, &bit, end) < 0)
		return -EINVAL;
	uint64_t pl = bit;
	if (walk_scope(c, RTR_SCOPE_PAYLOAD, cn->payload, &bit, end, dynamic(cn->payload)) < 0)
		return -EINVAL;
	pl = c->recs[RTR_SCOPE_PAYLOAD].start;
	if (bit == at)
		return rtr_set_error(c->set, -EINVAL,
				     "%s: byte offset %" PRIu64 ": an event of 0 bits (no event header, empty payload)",
				     c->path, at / 8);
	c->pos = bit;
	c->cls = k;
	struct rtr_event *ev = &c->ev;
	ev->ticks = c->clock;
	ev->ns = rtr_meta_ns_fast(m, c->clock);
	ev->cpu = HAVE(&c->pkt, RR_CPU_ID) ? (uint32_t)c->pkt.cpu : UINT32_MAX;
	ev->stream = c->stream;
	ev->trace = c->trace;
	ev->payload = c->map + pl / 8;
	ev->payload_len = (size_t)((bit - pl + 7) / 8);
	ev->priv_ = c;
	c->ns = ev->ns;
	return 1;
}

/* Scope n (rtr_node.strs: plain scalars and strings) stepped over in one
 * loop, as walk_node would walk it without records: true and *bitp past
 * it, or false when something does not fit (walk_scope then names it). */
__attribute__((always_inline))
static inline bool skip_strs(const struct rtr_cursor *c, const struct rtr_node *n,
			     uint64_t *bitp, uint64_t end)
{
	uint64_t bit = align_up(*bitp, n->align);
	if (bit > end)
		return false;
	if (n->nr_runs) {
		/* Whole bytes: runs of scalars, each string's NUL between. */
		uint64_t p = bit / 8, e = end / 8;
		for (uint32_t i = 0;; i++) {
			if (n->runs[i] > e - p)
				return false;
			p += n->runs[i];
			if (i + 1 == n->nr_runs)
				break;
			const uint8_t *z = p < e ? find_nul(c->map + p, e - p) : NULL;
			if (!z)
				return false;
			p = (uint64_t)(z - c->map) + 1;
		}
		*bitp = p * 8;
		return true;
	}
	for (uint32_t k = 0; k < n->nr_children; k++) {
		const struct rtr_node *ch = n->children[k];
		bit = align_up(bit, ch->align);
		if (bit > end)
			return false;
		if (ch->kind == RN_STRING) {
			uint64_t from = bit / 8, to = end / 8;
			const uint8_t *z = from < to ? find_nul(c->map + from, to - from) : NULL;
			if (!z)
				return false;
			bit = (uint64_t)(z - c->map + 1) * 8;
		} else {
			if ((uint64_t)ch->static_bits > end - bit)
				return false;
			bit += (uint64_t)ch->static_bits;
		}
	}
	*bitp = bit;
	return true;
}

/* Scope n walked to its end for rtr_cursor_count (no record buffer
 * set: the count needs none): 0 or -EINVAL. */
__attribute__((always_inline))
static inline int count_scope(struct rtr_cursor *c, int scope, const struct rtr_node *n,
			      uint64_t *bitp, uint64_t end)
{
	if (!n)
		return 0;
	if (n->plain) {
		uint64_t bit = align_up(*bitp, n->align);
		if (bit <= end && (uint64_t)n->static_bits <= end - bit) {
			*bitp = bit + (uint64_t)n->static_bits;
			return 0;
		}
	} else if (n->strs && skip_strs(c, n, bitp, end)) {
		return 0;
	}
	return walk_scope(c, scope, n, bitp, end, false);
}

int rtr_cursor_count(struct rtr_cursor *c, uint64_t stop, uint64_t *per_class,
		     struct rtr_cursor_count *out)
{
	const struct rtr_meta *m = c->m;
	uint64_t n = 0, first = 0, prev = 0;
	uint32_t cpu = UINT32_MAX, pcpu = UINT32_MAX;
	if (!c->map)
		goto done;
	pcpu = HAVE(&c->pkt, RR_CPU_ID) ? (uint32_t)c->pkt.cpu : UINT32_MAX;
	/* The position and the packet's bounds in registers: each event's
	 * end is the next one's start, the loop's chain of dependences. */
	uint64_t pos = c->pos, end = c->pkt.content_end;
	const struct rtr_stream_class *sc = c->pkt.sc;
	for (;;) {
		/* As rtr_cursor_next: the next packet holding an event. */
		if (pos >= end || (sc->event_header && end - pos < 8)) {
			uint64_t next = c->pkt.packet_end / 8;
			if (next >= c->size || next >= stop)
				break;
			c->pos = pos;
			if (rtr_cursor_packet(c, next) < 0)
				return -EAGAIN;
			pcpu = HAVE(&c->pkt, RR_CPU_ID) ? (uint32_t)c->pkt.cpu : UINT32_MAX;
			pos = c->pos;
			end = c->pkt.content_end;
			sc = c->pkt.sc;
			continue;
		}
		uint64_t at = pos, bit = at;
		c->ev_id = 0;
		/* As rtr_cursor_next, but every scope only walked to its end
		 * (plain ones stepped over), without records. */
		if ((!sc->fast_header || !fast_header(c, sc, &bit, end, false)) &&
		    walk_scope(c, RTR_SCOPE_EVENT_HEADER, sc->event_header, &bit, end, false) < 0)
			return -EAGAIN;
		if (count_scope(c, RTR_SCOPE_STREAM_EVENT_CONTEXT, sc->event_context, &bit, end) < 0)
			return -EAGAIN;
		uint32_t k = rtr_meta_find_class(m, sc, c->ev_id);
		if (k == UINT32_MAX)
			return -EAGAIN;
		const struct rtr_class_nodes *cn = &m->class_nodes[k];
		if (count_scope(c, RTR_SCOPE_EVENT_CONTEXT, cn->context, &bit, end) < 0 ||
		    count_scope(c, RTR_SCOPE_PAYLOAD, cn->payload, &bit, end) < 0 || bit == at)
			return -EAGAIN;
		pos = bit;
		if (n == 0) {
			first = c->clock;
			cpu = pcpu;
		} else if (c->clock < prev || pcpu != cpu) {
			return -EAGAIN;
		}
		prev = c->clock;
		per_class[k]++;
		n++;
	}
	c->pos = pos;
done:
	out->events = n;
	out->first_ticks = first;
	out->last_ticks = prev;
	out->cpu = cpu;
	return 0;
}

void rtr_cursor_free(struct rtr_cursor *c)
{
	free(c->pkt_offs);
	c->pkt_offs = NULL;
	for (int s = 0; s < RTR_NR_SCOPES; s++)
		free(c->recs[s].r);
	free(c->slots);
}
