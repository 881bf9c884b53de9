/*
 * reader.c - stream files of a ringtrace CTF trace (see reader.h): mapping,
 * packet headers (checked once at open), event headers with the CTF 1.8
 * clock update rule, payload length from the per-class plans built by
 * reader_metadata.c, and the merge of all streams by timestamp.
 *
 * Bounds: every read is checked against the packet's content end (events)
 * or the file size (packet headers) before it is made; offsets only move
 * forward by at least one header, so every loop ends.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctf_packet.h"
#include "reader_internal.h"

#define METADATA_MAX (16u << 20)
#define COMPACT_MASK ((1ull << CTF_COMPACT_TSC_BITS) - 1)
#define NO_FIELD UINT32_MAX

struct stream {
	const uint8_t *map;	/* NULL for an empty file */
	size_t size;
	/* Reading position. */
	size_t pkt_off;		/* current packet */
	size_t pkt_end;		/* next packet */
	size_t content_end;
	size_t pos;		/* next event */
	uint64_t clock;
	uint32_t cpu;
	const struct rtr_stream_class *sc;
	struct rtr_event ev;	/* the next event, while in the heap */
};

struct rtr_trace {
	struct rtr_meta meta;
	struct stream *streams;
	struct rtr_stream_stats *stats;	/* parallel to streams */
	size_t nr_streams;
	struct rtr_gap *gaps;
	size_t nr_gaps, gaps_cap;
	uint32_t *heap;			/* stream indexes, by next event */
	uint64_t ns_mul;		/* floor(1e9 * 2^64 / freq) when freq > 1e9 */
	size_t heap_len;
	int started;
	int err_code;			/* sticky */
	char err[1024];
};

/* The decoded packet header and context. */
struct pkt {
	uint32_t stream_id;
	uint32_t cpu;
	uint64_t ts_begin, ts_end;
	uint64_t content_size, packet_size;	/* bits */
	uint64_t seq, discarded;
	size_t content_bytes, packet_bytes;
	const struct rtr_stream_class *sc;
};

static inline uint16_t ld16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, sizeof(v));
	return le16toh(v);
}

static inline uint32_t ld32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static inline uint64_t ld64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static inline uint64_t ld_uint(const uint8_t *p, unsigned size)
{
	switch (size) {
	case 1:
		return p[0];
	case 2:
		return ld16(p);
	case 4:
		return ld32(p);
	default:
		return ld64(p);
	}
}

__attribute__((format(printf, 3, 4)))
static int set_err(struct rtr_trace *t, int code, const char *fmt, ...)
{
	if (t->err_code)
		return t->err_code;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->err, sizeof(t->err), fmt, ap);
	va_end(ap);
	t->err_code = code;
	return code;
}

#define NS_PER_S 1000000000u

/* offset_s * 1e9 + floor((offset + ticks) * 1e9 / freq), exactly. */
static int64_t ticks_to_ns(const struct rtr_trace *t, uint64_t ticks)
{
	const struct rtr_meta *m = &t->meta;
	const uint64_t NS = NS_PER_S;
	__int128 base = (__int128)m->offset_s * (__int128)NS;
	__int128 ns;
	uint64_t x = m->offset + ticks;
	if (m->freq == NS) {
		ns = base + (__int128)m->offset + ticks;
	} else if (x >= ticks && t->ns_mul) {
		/* x * ns_mul / 2^64 is at most 1 below the quotient (ns_mul
		 * is short of 1e9 * 2^64 / freq by less than 1, and x < 2^64):
		 * one check makes it exact, with no division. */
		uint64_t q = (uint64_t)(((unsigned __int128)x * t->ns_mul) >> 64);
		if ((unsigned __int128)(q + 1) * m->freq <= (unsigned __int128)x * NS)
			q++;
		ns = base + q;
	} else if (x >= ticks && m->freq <= UINT64_MAX / NS) {
		/* Exact with two 64-bit divisions: r * NS < freq * NS fits. */
		uint64_t q = x / m->freq, r = x % m->freq;
		ns = base + (__int128)q * NS + r * NS / m->freq;
	} else {
		unsigned __int128 y = ((unsigned __int128)m->offset + ticks) * NS;
		ns = base + (__int128)(y / m->freq);
	}
	if (ns > INT64_MAX)
		return INT64_MAX;
	if (ns < INT64_MIN)
		return INT64_MIN;
	return (int64_t)ns;
}

/* ------------------------------------------------------------------ */
/* Packets                                                              */

static const struct rtr_stream_class *find_stream_class(const struct rtr_meta *m, uint32_t id)
{
	for (size_t k = 0; k < m->nr_streams; k++)
		if (m->streams[k].id == id)
			return &m->streams[k];
	return NULL;
}

/* Decode and check the packet header at `off` of stream `si`. */
static int read_packet(struct rtr_trace *t, uint32_t si, size_t off, struct pkt *p)
{
	const struct stream *s = &t->streams[si];
	const char *path = t->stats[si].path;
	const size_t H = CTF_PACKET_HEADER_SIZE;
	size_t left = s->size - off;
	if (left < H)
		return set_err(t, -EINVAL,
			       "%s: byte offset %zu: truncated packet header (%zu bytes left, a header is %zu)",
			       path, off, left, H);
	const uint8_t *h = s->map + off;
#define FIELD(f) (h + offsetof(struct ctf_packet_header, f))
	uint32_t magic = ld32(FIELD(magic));
	if (magic != CTF_MAGIC)
		return set_err(t, -EINVAL,
			       "%s: byte offset %zu: bad packet magic 0x%08" PRIx32 " (expected 0x%08x)",
			       path, off, magic, CTF_MAGIC);
	if (t->meta.has_uuid && memcmp(FIELD(uuid), t->meta.uuid, 16))
		return set_err(t, -EINVAL,
			       "%s: byte offset %zu: the packet's trace UUID is not the metadata's (a stream file of another trace?)",
			       path, off + offsetof(struct ctf_packet_header, uuid));
	p->stream_id = ld32(FIELD(stream_id));
	p->ts_begin = ld64(FIELD(timestamp_begin));
	p->ts_end = ld64(FIELD(timestamp_end));
	p->content_size = ld64(FIELD(content_size));
	p->packet_size = ld64(FIELD(packet_size));
	p->seq = ld64(FIELD(packet_seq_num));
	p->discarded = ld64(FIELD(events_discarded));
	p->cpu = ld32(FIELD(cpu_id));
#undef FIELD
	p->sc = find_stream_class(&t->meta, p->stream_id);
	if (!p->sc)
		return set_err(t, -EINVAL, "%s: byte offset %zu: stream id %" PRIu32 " is not in the metadata",
			       path, off + offsetof(struct ctf_packet_header, stream_id), p->stream_id);
	if (p->packet_size % 8)
		return set_err(t, -EINVAL,
			       "%s: byte offset %zu: packet_size %" PRIu64 " bits is not a whole number of bytes",
			       path, off, p->packet_size);
	if (p->packet_size < H * 8)
		return set_err(t, -EINVAL,
			       "%s: byte offset %zu: packet_size %" PRIu64 " bits is smaller than the packet header (%zu bits)",
			       path, off, p->packet_size, H * 8);
	if (p->packet_size / 8 > left)
		return set_err(t, -EINVAL,
			       "%s: byte offset %zu: packet_size %" PRIu64 " bytes goes past the end of the file (%zu bytes left)",
			       path, off, p->packet_size / 8, left);
	if (p->content_size > p->packet_size)
		return set_err(t, -EINVAL,
			       "%s: byte offset %zu: content_size %" PRIu64 " bits is larger than packet_size %" PRIu64 " bits",
			       path, off, p->content_size, p->packet_size);
	if (p->content_size < H * 8)
		return set_err(t, -EINVAL,
			       "%s: byte offset %zu: content_size %" PRIu64 " bits is smaller than the packet header (%zu bits)",
			       path, off, p->content_size, H * 8);
	p->packet_bytes = (size_t)(p->packet_size / 8);
	p->content_bytes = (size_t)(p->content_size / 8);
	return 0;
}

static int add_gap(struct rtr_trace *t, uint32_t si, uint64_t before, uint64_t after,
		   uint64_t lost)
{
	if (t->nr_gaps == t->gaps_cap) {
		size_t cap = t->gaps_cap ? t->gaps_cap * 2 : 16;
		struct rtr_gap *g = realloc(t->gaps, cap * sizeof(*g));
		if (!g)
			return set_err(t, -ENOMEM, "out of memory");
		t->gaps = g;
		t->gaps_cap = cap;
	}
	t->gaps[t->nr_gaps++] = (struct rtr_gap){ si, before, after, lost };
	t->stats[si].packets_lost += lost;
	return 0;
}

/* Check every packet header of stream `si`; count packets, discarded
 * events and packet_seq_num gaps. */
static int index_stream(struct rtr_trace *t, uint32_t si)
{
	const struct stream *s = &t->streams[si];
	struct rtr_stream_stats *st = &t->stats[si];
	uint64_t prev_seq = 0, prev_end = 0;
	for (size_t off = 0; off < s->size;) {
		struct pkt p = { 0 };
		if (read_packet(t, si, off, &p) < 0)
			return t->err_code;
		int ret = 0;
		if (st->packets == 0) {
			st->cpu = p.cpu;
			if (p.seq > 0)
				ret = add_gap(t, si, 0, p.ts_begin, p.seq);
		} else if (p.seq > prev_seq + 1 && prev_seq != UINT64_MAX) {
			ret = add_gap(t, si, prev_end, p.ts_begin, p.seq - prev_seq - 1);
		}
		if (ret < 0)
			return ret;
		st->packets++;
		st->events_discarded = p.discarded;
		prev_seq = p.seq;
		prev_end = p.ts_end;
		off += p.packet_bytes;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Events                                                               */

/*
 * Walk fields [0, upto) of a payload of `avail` bytes, leaving sequence
 * lengths in lenv. Returns NO_FIELD with the end offset in *off, or the
 * index of the first field that does not fit (its offset in *off).
 */
static uint32_t walk(const struct rtr_class_plan *cp, const uint8_t *p, size_t avail,
		     uint32_t upto, size_t *off, uint64_t *lenv)
{
	size_t o = 0;
	for (uint32_t k = 0; k < upto; k++) {
		const struct rtr_field_plan *fp = &cp->plan[k];
		size_t left = avail - o;
		switch (fp->op) {
		case RTR_OP_FIXED:
			if (fp->size > left)
				goto bad;
			if (fp->len_slot >= 0)
				lenv[fp->len_slot] = ld_uint(p + o, fp->size);
			o += fp->size;
			break;
		case RTR_OP_STRING: {
			const uint8_t *z = memchr(p + o, 0, left);
			if (!z)
				goto bad;
			o = (size_t)(z - p) + 1;
			break;
		}
		case RTR_OP_SEQ:
			if (lenv[fp->len_from] > left)
				goto bad;
			o += (size_t)lenv[fp->len_from];
			break;
		default: /* RTR_OP_ARRAY */
			if (fp->count > left)
				goto bad;
			o += (size_t)fp->count;
			break;
		}
		continue;
bad:
		*off = o;
		return k;
	}
	*off = o;
	return NO_FIELD;
}

/* Explain why field k of an event does not fit in its packet. */
static int payload_error(struct rtr_trace *t, uint32_t si, size_t ev_off,
			 const struct rtr_event_class *cls, const uint8_t *payload,
			 size_t avail, uint32_t k, size_t foff, const uint64_t *lenv)
{
	const struct rtr_class_plan *cp = rtr_plan_of(cls);
	const struct rtr_field_plan *fp = &cp->plan[k];
	const char *path = t->stats[si].path;
	const char *fname = cls->fields[k].name;
	const struct stream *s = &t->streams[si];
	size_t at = (size_t)(payload - s->map) + foff;
	size_t left = avail - foff;
	switch (fp->op) {
	case RTR_OP_STRING:
		return set_err(t, -EINVAL,
			       "%s: byte offset %zu: event '%s' (at byte offset %zu): string '%s' has no NUL before the end of the packet content (byte offset %zu)",
			       path, at, cls->name, ev_off, fname, s->content_end);
	case RTR_OP_SEQ:
		return set_err(t, -EINVAL,
			       "%s: byte offset %zu: event '%s' (at byte offset %zu): sequence '%s' of %" PRIu64 " bytes goes past the end of the packet content (%zu bytes left)",
			       path, at, cls->name, ev_off, fname, lenv[fp->len_from], left);
	default:
		return set_err(t, -EINVAL,
			       "%s: byte offset %zu: event '%s' (at byte offset %zu): field '%s' goes past the end of the packet content (%zu bytes left)",
			       path, at, cls->name, ev_off, fname, left);
	}
}

/* Decode the next event of stream si into its `ev`: 1, 0 at the end of
 * the stream, or a negative error. */
static int stream_advance(struct rtr_trace *t, uint32_t si)
{
	struct stream *s = &t->streams[si];
	while (s->pos >= s->content_end) {
		if (s->pkt_end >= s->size)
			return 0;
		struct pkt p = { 0 };
		if (read_packet(t, si, s->pkt_end, &p) < 0)
			return t->err_code;
		s->pkt_off = s->pkt_end;
		s->pkt_end = s->pkt_off + p.packet_bytes;
		s->content_end = s->pkt_off + p.content_bytes;
		s->pos = s->pkt_off + CTF_PACKET_HEADER_SIZE;
		s->clock = p.ts_begin;
		s->cpu = p.cpu;
		s->sc = p.sc;
	}

	const uint8_t *e = s->map + s->pos;
	size_t left = s->content_end - s->pos;
	uint32_t id;
	size_t hlen;
	if ((e[0] & 31u) == CTF_EXTENDED_ID) {
		if (left < CTF_EVENT_HEADER_EXTENDED)
			return set_err(t, -EINVAL,
				       "%s: byte offset %zu: truncated extended event header (%zu bytes left in the packet content)",
				       t->stats[si].path, s->pos, left);
		id = ld32(e + 1);
		s->clock = ld64(e + 5);
		hlen = CTF_EVENT_HEADER_EXTENDED;
	} else {
		if (left < CTF_EVENT_HEADER_COMPACT)
			return set_err(t, -EINVAL,
				       "%s: byte offset %zu: truncated compact event header (%zu bytes left in the packet content)",
				       t->stats[si].path, s->pos, left);
		uint32_t h = ld32(e);
		uint64_t v = h >> 5, c = s->clock;
		id = h & 31u;
		/* CTF 1.8: the low bits of the clock; it wrapped if smaller. */
		if (v >= (c & COMPACT_MASK))
			c = (c & ~COMPACT_MASK) | v;
		else
			c = ((c & ~COMPACT_MASK) + (1ull << CTF_COMPACT_TSC_BITS)) | v;
		s->clock = c;
		hlen = CTF_EVENT_HEADER_COMPACT;
	}
	const struct rtr_event_class *cls = rtr_meta_find_class(s->sc, id);
	if (!cls)
		return set_err(t, -EINVAL,
			       "%s: byte offset %zu: unknown event id %" PRIu32 " (stream class %" PRIu32 ")",
			       t->stats[si].path, s->pos, id, s->sc->id);
	const struct rtr_class_plan *cp = rtr_plan_of(cls);
	const uint8_t *payload = e + hlen;
	size_t avail = left - hlen, len;
	if (cp->all_fixed) {
		len = cp->fixed_len;
		if (len > avail)
			return set_err(t, -EINVAL,
				       "%s: byte offset %zu: event '%s' of %zu payload bytes goes past the end of the packet content (%zu bytes left)",
				       t->stats[si].path, s->pos, cls->name, len, avail);
	} else {
		uint64_t lenv[RTR_MAX_LEN_SLOTS];
		uint32_t bad = walk(cp, payload, avail, cp->nr_fields, &len, lenv);
		if (bad != NO_FIELD)
			return payload_error(t, si, s->pos, cls, payload, avail, bad, len, lenv);
	}
	s->ev = (struct rtr_event){
		.ticks = s->clock,
		.ns = ticks_to_ns(t, s->clock),
		.cpu = s->cpu,
		.stream = si,
		.cls = cls,
		.payload = payload,
		.payload_len = len,
	};
	s->pos += hlen + len;
	return 1;
}

/* ------------------------------------------------------------------ */
/* Merge                                                                */

static inline int heap_less(const struct rtr_trace *t, uint32_t a, uint32_t b)
{
	uint64_t x = t->streams[a].ev.ticks, y = t->streams[b].ev.ticks;
	return x != y ? x < y : a < b;
}

static void heap_down(struct rtr_trace *t, size_t i)
{
	uint32_t *h = t->heap;
	size_t n = t->heap_len;
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		if (l < n && heap_less(t, h[l], h[m]))
			m = l;
		if (l + 1 < n && heap_less(t, h[l + 1], h[m]))
			m = l + 1;
		if (m == i)
			return;
		uint32_t x = h[i];
		h[i] = h[m];
		h[m] = x;
		i = m;
	}
}

static void heap_push(struct rtr_trace *t, uint32_t si)
{
	uint32_t *h = t->heap;
	size_t i = t->heap_len++;
	h[i] = si;
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!heap_less(t, h[i], h[parent]))
			return;
		uint32_t x = h[i];
		h[i] = h[parent];
		h[parent] = x;
		i = parent;
	}
}

int rtr_next(struct rtr_trace *t, struct rtr_event *ev)
{
	if (!t || !ev)
		return -EINVAL;
	if (t->err_code)
		return t->err_code;
	if (!t->started) {
		t->started = 1;
		for (uint32_t i = 0; i < t->nr_streams; i++) {
			int r = stream_advance(t, i);
			if (r < 0)
				return r;
			if (r > 0)
				heap_push(t, i);
		}
	} else if (t->heap_len) {
		/* The stream of the event returned last is still on top. */
		int r = stream_advance(t, t->heap[0]);
		if (r < 0)
			return r;
		if (r == 0)
			t->heap[0] = t->heap[--t->heap_len];
		heap_down(t, 0);
	}
	if (!t->heap_len)
		return 0;
	uint32_t top = t->heap[0];
	*ev = t->streams[top].ev;
	t->stats[top].events++;
	return 1;
}

/* ------------------------------------------------------------------ */
/* Fields                                                               */

int rtr_field(const struct rtr_event *ev, uint32_t index, struct rtr_value *v)
{
	if (!ev || !ev->cls || !v || (!ev->payload && ev->payload_len))
		return -EINVAL;
	const struct rtr_class_plan *cp = rtr_plan_of(ev->cls);
	if (index >= cp->nr_fields)
		return -EINVAL;
	const struct rtr_field_plan *fp = &cp->plan[index];
	const uint8_t *pl = ev->payload;
	size_t plen = ev->payload_len, off;
	uint64_t seqlen = 0;
	if (fp->static_off >= 0) {
		off = (size_t)fp->static_off;
		if (fp->op == RTR_OP_SEQ) {
			const struct rtr_field_plan *lp = &cp->plan[fp->len_field];
			if ((size_t)lp->static_off + lp->size > plen)
				return -EINVAL;
			seqlen = ld_uint(pl + lp->static_off, lp->size);
		}
	} else {
		uint64_t lenv[RTR_MAX_LEN_SLOTS];
		if (walk(cp, pl, plen, index, &off, lenv) != NO_FIELD)
			return -EINVAL;
		if (fp->op == RTR_OP_SEQ)
			seqlen = lenv[fp->len_from];
	}
	if (off > plen)
		return -EINVAL;
	const uint8_t *p = pl + off;
	size_t left = plen - off;
	enum rtr_type type = cp->fields[index].type;
	v->type = type;
	switch (fp->op) {
	case RTR_OP_FIXED: {
		if (fp->size > left)
			return -EINVAL;
		uint64_t u = ld_uint(p, fp->size);
		switch (type) {
		case RTR_INT:
			switch (fp->size) {
			case 1: v->i = (int8_t)u; break;
			case 2: v->i = (int16_t)u; break;
			case 4: v->i = (int32_t)u; break;
			default: v->i = (int64_t)u; break;
			}
			break;
		case RTR_FLOAT: {
			uint32_t w = (uint32_t)u;
			float f;
			memcpy(&f, &w, sizeof(f));
			v->d = f;
			break;
		}
		case RTR_DOUBLE:
			memcpy(&v->d, &u, sizeof(v->d));
			break;
		case RTR_BOOL:
			v->b = u != 0;
			break;
		default:
			v->u = u;
			break;
		}
		return 0;
	}
	case RTR_OP_STRING: {
		const uint8_t *z = memchr(p, 0, left);
		if (!z)
			return -EINVAL;
		v->s.p = (const char *)p;
		v->s.len = (size_t)(z - p);
		return 0;
	}
	case RTR_OP_SEQ:
	case RTR_OP_ARRAY: {
		uint64_t n = fp->op == RTR_OP_SEQ ? seqlen : fp->count;
		if (n > left)
			return -EINVAL;
		v->bytes.p = p;
		v->bytes.len = (size_t)n;
		return 0;
	}
	}
	return -EINVAL;
}

int rtr_field_by_name(const struct rtr_event *ev, const char *name, struct rtr_value *v)
{
	if (!ev || !ev->cls || !name)
		return -EINVAL;
	const struct rtr_event_class *c = ev->cls;
	for (uint32_t k = 0; k < c->nr_fields; k++)
		if (!strcmp(c->fields[k].name, name))
			return rtr_field(ev, k, v);
	return -ENOENT;
}

/* ------------------------------------------------------------------ */
/* Opening                                                              */

/* Sort key of a stream file name: `<prefix>_<number>` sorts by prefix,
 * then numerically; other names by name after them. */
static int name_cmp(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	const char *ux = strrchr(x, '_'), *uy = strrchr(y, '_');
	if (ux && (!ux[1] || strspn(ux + 1, "0123456789") != strlen(ux + 1)))
		ux = NULL;
	if (uy && (!uy[1] || strspn(uy + 1, "0123456789") != strlen(uy + 1)))
		uy = NULL;
	size_t lx = ux ? (size_t)(ux - x) : strlen(x), ly = uy ? (size_t)(uy - y) : strlen(y);
	int c = memcmp(x, y, lx < ly ? lx : ly);
	if (c)
		return c;
	if (lx != ly)
		return lx < ly ? -1 : 1;
	if (!ux != !uy)
		return ux ? -1 : 1;
	if (ux) {
		const char *nx = ux + 1 + strspn(ux + 1, "0"), *ny = uy + 1 + strspn(uy + 1, "0");
		size_t dx = strlen(nx), dy = strlen(ny);
		if (dx != dy)
			return dx < dy ? -1 : 1;
		c = strcmp(nx, ny);
		if (c)
			return c;
	}
	return strcmp(x, y);
}

static int load_metadata(struct rtr_trace *t, const char *dir, int dfd, bool dir_empty)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/metadata", dir);
	int fd = openat(dfd, "metadata", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (e == ENOENT && dir_empty)
			return set_err(t, -ENOENT, "%s: empty directory, not a trace", dir);
		if (e == ENOENT)
			return set_err(t, -ENOENT, "%s: no metadata file (not a CTF trace directory)", path);
		return set_err(t, -e, "%s: %s", path, strerror(e));
	}
	struct stat st;
	char *buf = NULL;
	int ret = 0;
	if (fstat(fd, &st) < 0) {
		ret = set_err(t, -errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = set_err(t, -EINVAL, "%s: not a regular file", path);
		goto out;
	}
	if ((uint64_t)st.st_size > METADATA_MAX) {
		ret = set_err(t, -EFBIG, "%s: %lld bytes, too large for metadata", path,
			      (long long)st.st_size);
		goto out;
	}
	size_t size = (size_t)st.st_size, got = 0;
	buf = malloc(size + 1);
	if (!buf) {
		ret = set_err(t, -ENOMEM, "%s: out of memory", path);
		goto out;
	}
	while (got < size) {
		ssize_t n = read(fd, buf + got, size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = set_err(t, -errno, "%s: byte offset %zu: %s", path, got, strerror(errno));
			goto out;
		}
		if (n == 0)
			break; /* shrank meanwhile: parse what is there */
		got += (size_t)n;
	}
	buf[got] = '\0';
	if (got == 0) {
		ret = set_err(t, -EINVAL, "%s: empty metadata file", path);
		goto out;
	}
	ret = rtr_meta_parse(path, buf, got, &t->meta, t->err, sizeof(t->err));
	if (ret < 0)
		t->err_code = ret;
out:
	free(buf);
	close(fd);
	return ret;
}

/* The stream files: regular files but `metadata` and hidden ones, in
 * name order. */
static int list_streams(struct rtr_trace *t, const char *dir, DIR *d, char ***names,
			size_t *count, bool *empty)
{
	char **v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	*empty = true;
	errno = 0;
	while ((de = readdir(d)) != NULL) {
		const char *name = de->d_name;
		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		*empty = false;
		if (name[0] == '.' || !strcmp(name, "metadata"))
			continue;
		struct stat st;
		if (fstatat(dirfd(d), name, &st, 0) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 16;
			char **nv = realloc(v, nc * sizeof(*nv));
			if (!nv)
				goto nomem;
			v = nv;
			cap = nc;
		}
		if (!(v[n] = strdup(name)))
			goto nomem;
		n++;
		errno = 0;
	}
	if (errno) {
		int e = errno;
		for (size_t k = 0; k < n; k++)
			free(v[k]);
		free(v);
		return set_err(t, -e, "%s: %s", dir, strerror(e));
	}
	if (n)
		qsort(v, n, sizeof(*v), name_cmp);
	*names = v;
	*count = n;
	return 0;
nomem:
	for (size_t k = 0; k < n; k++)
		free(v[k]);
	free(v);
	return set_err(t, -ENOMEM, "%s: out of memory", dir);
}

static int map_stream(struct rtr_trace *t, int dfd, const char *name, uint32_t si)
{
	struct stream *s = &t->streams[si];
	const char *path = t->stats[si].path;
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return set_err(t, -errno, "%s: %s", path, strerror(errno));
	struct stat st;
	int ret = 0;
	if (fstat(fd, &st) < 0) {
		ret = set_err(t, -errno, "%s: %s", path, strerror(errno));
	} else if ((uint64_t)st.st_size > SIZE_MAX / 2) {
		ret = set_err(t, -EFBIG, "%s: file too large", path);
	} else if (st.st_size > 0) {
		void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED) {
			ret = set_err(t, -errno, "%s: cannot map: %s", path, strerror(errno));
		} else {
			s->map = m;
			s->size = (size_t)st.st_size;
		}
	}
	t->stats[si].bytes = (uint64_t)st.st_size;
	/* The CPU from the name until the first packet says it. */
	const char *u = strrchr(name, '_');
	if (u && u[1] && strspn(u + 1, "0123456789") == strlen(u + 1) && strlen(u + 1) < 10)
		t->stats[si].cpu = (uint32_t)strtoul(u + 1, NULL, 10);
	close(fd);
	return ret;
}

int rtr_open(const char *dir, struct rtr_trace **out, char *err, size_t errlen)
{
	if (out)
		*out = NULL;
	if (!dir || !out) {
		if (err && errlen)
			snprintf(err, errlen, "rtr_open: invalid argument");
		return -EINVAL;
	}
	struct rtr_trace *t = calloc(1, sizeof(*t));
	if (!t) {
		if (err && errlen)
			snprintf(err, errlen, "%s: out of memory", dir);
		return -ENOMEM;
	}
	char **names = NULL;
	size_t nnames = 0;
	bool empty = true;
	int ret;
	DIR *d = opendir(dir);
	if (!d) {
		ret = set_err(t, -errno, "%s: cannot open the trace directory: %s", dir, strerror(errno));
		goto fail;
	}
	ret = list_streams(t, dir, d, &names, &nnames, &empty);
	if (ret < 0)
		goto fail;
	ret = load_metadata(t, dir, dirfd(d), empty);
	if (ret < 0)
		goto fail;
	if (t->meta.freq > NS_PER_S)
		t->ns_mul = (uint64_t)(((unsigned __int128)NS_PER_S << 64) / t->meta.freq);

	t->streams = calloc(nnames ? nnames : 1, sizeof(*t->streams));
	t->stats = calloc(nnames ? nnames : 1, sizeof(*t->stats));
	t->heap = calloc(nnames ? nnames : 1, sizeof(*t->heap));
	if (!t->streams || !t->stats || !t->heap) {
		ret = set_err(t, -ENOMEM, "%s: out of memory", dir);
		goto fail;
	}
	for (size_t k = 0; k < nnames; k++) {
		size_t len = strlen(dir) + strlen(names[k]) + 2;
		char *path = malloc(len);
		if (!path) {
			ret = set_err(t, -ENOMEM, "%s: out of memory", dir);
			goto fail;
		}
		snprintf(path, len, "%s/%s", dir, names[k]);
		t->stats[k].path = path;
		t->nr_streams++;
		ret = map_stream(t, dirfd(d), names[k], (uint32_t)k);
		if (ret < 0)
			goto fail;
	}
	for (uint32_t k = 0; k < t->nr_streams; k++) {
		ret = index_stream(t, k);
		if (ret < 0)
			goto fail;
	}
	for (size_t k = 0; k < nnames; k++)
		free(names[k]);
	free(names);
	closedir(d);
	*out = t;
	return 0;
fail:
	if (err && errlen)
		snprintf(err, errlen, "%s", t->err);
	for (size_t k = 0; k < nnames; k++)
		free(names[k]);
	free(names);
	if (d)
		closedir(d);
	rtr_close(t);
	return ret;
}

void rtr_close(struct rtr_trace *t)
{
	if (!t)
		return;
	for (size_t k = 0; k < t->nr_streams; k++) {
		if (t->streams[k].map)
			munmap((void *)(uintptr_t)t->streams[k].map, t->streams[k].size);
		free((void *)(uintptr_t)t->stats[k].path);
	}
	free(t->streams);
	free(t->stats);
	free(t->heap);
	free(t->gaps);
	rtr_meta_free(&t->meta);
	free(t);
}

const char *rtr_error(const struct rtr_trace *t)
{
	return t ? t->err : "no trace";
}

size_t rtr_event_classes(const struct rtr_trace *t, const struct rtr_event_class **out)
{
	*out = t ? t->meta.classes : NULL;
	return t ? t->meta.nr_classes : 0;
}

size_t rtr_streams(const struct rtr_trace *t, const struct rtr_stream_stats **out)
{
	*out = t ? t->stats : NULL;
	return t ? t->nr_streams : 0;
}

size_t rtr_gaps(const struct rtr_trace *t, const struct rtr_gap **out)
{
	*out = t ? t->gaps : NULL;
	return t ? t->nr_gaps : 0;
}

uint64_t rtr_clock_freq(const struct rtr_trace *t)
{
	return t ? t->meta.freq : 0;
}

int64_t rtr_ticks_to_ns(const struct rtr_trace *t, uint64_t ticks)
{
	if (!t)
		return 0;
	return ticks_to_ns(t, ticks);
}
