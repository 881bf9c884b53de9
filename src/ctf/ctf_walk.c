/*
 * ctf_walk.c - walking a packet's events, appending whole packets
 * (ctf_walk.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/fs_util.h"
#include "ctf_walk.h"

/* Bytes taken by a NUL-terminated string at p (end excluded), or 0. */
static uint64_t string_size(const char *p, const char *end)
{
	const char *nul = memchr(p, '\0', (size_t)(end - p));
	return nul ? (uint64_t)(nul - p) + 1 : 0;
}

/* Size of one field at p, or 0 if it does not fit before end. */
static uint64_t field_size(uint32_t type, const char *p, const char *end)
{
	static const uint8_t fixed[] = {
		[RT_TYPE_S8] = 1, [RT_TYPE_U8] = 1, [RT_TYPE_S16] = 2,
		[RT_TYPE_U16] = 2, [RT_TYPE_S32] = 4, [RT_TYPE_U32] = 4,
		[RT_TYPE_S64] = 8, [RT_TYPE_U64] = 8, [RT_TYPE_FLOAT] = 4,
		[RT_TYPE_DOUBLE] = 8, [RT_TYPE_BOOL] = 1,
		[RT_TYPE_POINTER] = sizeof(void *), [RT_TYPE_FORMAT] = 1,
	};
	uint64_t room = (uint64_t)(end - p);
	if (type == RT_TYPE_STRING)
		return string_size(p, end);
	if (type == RT_TYPE_BYTES) {
		uint32_t len;
		if (room < 4)
			return 0;
		memcpy(&len, p, 4);
		return room - 4 >= len ? 4 + (uint64_t)len : 0;
	}
	if (type >= sizeof(fixed) || !fixed[type] || fixed[type] > room)
		return 0;
	return fixed[type];
}

/* The time of a compact header's low bits after `cur` (CTF's rule for an
 * N-bit timestamp field: a smaller value means the low bits wrapped). */
static uint64_t compact_time(uint64_t cur, uint32_t low)
{
	const uint64_t mask = (1ull << CTF_COMPACT_TSC_BITS) - 1;
	uint64_t t = (cur & ~mask) | low;
	return t < cur ? t + mask + 1 : t;
}

/* Step over `nr` fields of `types` (or of fields[].type); false if one
 * does not fit. */
static bool skip_fields(const char **pp, const char *end, const uint32_t *types,
			const struct rt_field_desc *fields, uint32_t nr)
{
	for (uint32_t i = 0; i < nr; i++) {
		uint64_t sz = field_size(types ? types[i] : fields[i].type, *pp, end);
		if (!sz)
			return false;
		*pp += sz;
	}
	return true;
}

/* Bytes taken by `nr` fields of `types` (or of fields[].type) when each
 * has a fixed size (its field_size with room for all), else -1: those
 * fields are stepped over one by one. */
static int64_t fixed_size(const uint32_t *types, const struct rt_field_desc *fields, uint32_t nr)
{
	static const char room[16];
	int64_t sum = 0;
	for (uint32_t i = 0; i < nr; i++) {
		uint32_t type = types ? types[i] : fields[i].type;
		if (type == RT_TYPE_STRING || type == RT_TYPE_BYTES)
			return -1;
		uint64_t sz = field_size(type, room, room + sizeof(room));
		if (!sz)
			return -1; /* an unknown type: field_size refuses it */
		sum += (int64_t)sz;
	}
	return sum;
}

/* The classes a walk met, by id modulo CLASS_SLOTS (one walk: what fn
 * says of an id does not change while the caller holds its lock). */
#define CLASS_SLOTS 32u
struct class_slot {
	uint32_t id;
	uint32_t nr;
	const struct rt_field_desc *fields;
	int64_t fixed;			/* fixed_size of the fields */
};

int64_t ctf_walk_events(const char *p, const char *end, const uint32_t *ctx_types,
			uint32_t nr_ctx, ctf_class_fn fn, void *arg, uint64_t ts_begin,
			uint64_t ts_end, uint64_t *last_ts)
{
	struct class_slot slots[CLASS_SLOTS];
	uint32_t known = 0;		/* bit i: slots[i] holds a class */
	const int64_t ctx_fixed = fixed_size(ctx_types, NULL, nr_ctx);
	uint64_t now = ts_begin;
	int64_t n = 0;
	/* The last event's compact id when the whole event has a fixed size
	 * (UINT32_MAX: not so), and that size: in a run of such events (the
	 * usual packet), the next event's place is known before its header
	 * is read, and the loop is no longer a chain of loads. */
	uint32_t run_id = UINT32_MAX;
	int64_t stride = 0;
	while (p < end) {
		if (run_id != UINT32_MAX && end - p >= stride) {
			uint32_t h;
			memcpy(&h, p, 4);
			if ((h & 31u) == run_id) {
				now = compact_time(now, h >> 5);
				if (now > ts_end)
					return -EBADMSG;
				p += stride;
				n++;
				continue;
			}
		}
		uint32_t id = (uint8_t)*p & 31u;
		const bool compact = id != CTF_EXTENDED_ID;
		if (!compact) {
			uint64_t ts;
			if (end - p < CTF_EVENT_HEADER_EXTENDED)
				return -EBADMSG;
			memcpy(&id, p + 1, 4);
			memcpy(&ts, p + 5, 8);
			if (ts < now)
				return -EBADMSG;
			now = ts;
			p += CTF_EVENT_HEADER_EXTENDED;
		} else {
			uint32_t h;
			if (end - p < CTF_EVENT_HEADER_COMPACT)
				return -EBADMSG;
			memcpy(&h, p, 4);
			now = compact_time(now, h >> 5);
			p += CTF_EVENT_HEADER_COMPACT;
		}
		if (now > ts_end)
			return -EBADMSG;
		/* The contexts: all in one step when they are all of a fixed
		 * size (the usual case), or one by one. */
		if (ctx_fixed >= 0) {
			if (end - p < ctx_fixed)
				return -EBADMSG;
			p += ctx_fixed;
		} else if (!skip_fields(&p, end, ctx_types, NULL, nr_ctx)) {
			return -EBADMSG;
		}
		/* The payload: its class asked once per walk, then stepped
		 * over the same way. */
		struct class_slot *c = &slots[id % CLASS_SLOTS];
		if (!(known >> (id % CLASS_SLOTS) & 1u) || c->id != id) {
			if (!fn(arg, id, &c->fields, &c->nr))
				return -EBADMSG;
			c->id = id;
			c->fixed = fixed_size(NULL, c->fields, c->nr);
			known |= 1u << (id % CLASS_SLOTS);
		}
		if (c->fixed >= 0) {
			if (end - p < c->fixed)
				return -EBADMSG;
			p += c->fixed;
		} else if (!skip_fields(&p, end, NULL, c->fields, c->nr)) {
			return -EBADMSG;
		}
		n++;
		run_id = compact && ctx_fixed >= 0 && c->fixed >= 0 ? id : UINT32_MAX;
		stride = CTF_EVENT_HEADER_COMPACT + ctx_fixed + c->fixed;
	}
	if (last_ts)
		*last_ts = now;
	return n;
}

/* Cut the file back to its whole packets. 0 or -errno. */
static int cut_torn(struct ctf_out *o, int fd)
{
	if (!o->torn)
		return 0;
	if (ftruncate(fd, (off_t)o->size) < 0 || lseek(fd, (off_t)o->size, SEEK_SET) < 0)
		return -errno;
	o->torn = false;
	return 0;
}

/* Write len bytes at the end of the whole packets; on failure the file
 * is cut back (or marked torn). */
static int put(struct ctf_out *o, int fd, const char *p, uint64_t len)
{
	int ret = cut_torn(o, fd);
	if (ret < 0)
		return ret;
	ret = rt_write_all(fd, p, len);
	if (ret < 0) {
		o->torn = true;
		cut_torn(o, fd);
		return ret;
	}
	o->size += len;
	return 0;
}

int ctf_stream_cut_torn(int fd, uint64_t *cut)
{
	struct stat st;
	*cut = 0;
	if (fstat(fd, &st) < 0)
		return -errno;
	uint64_t size = (uint64_t)st.st_size, off = 0;
	while (off < size) {
		struct ctf_packet_header h;
		ssize_t n = size - off < sizeof(h) ? 0 : pread(fd, &h, sizeof(h), (off_t)off);
		if (n < 0)
			return -errno;
		if ((size_t)n < sizeof(h) || h.magic != CTF_MAGIC || h.packet_size % 8 ||
		    h.packet_size < 8u * CTF_PACKET_HEADER_SIZE ||
		    h.packet_size / 8 > size - off)
			break;
		off += h.packet_size / 8;
	}
	if (off < size && ftruncate(fd, (off_t)off) < 0)
		return -errno;
	*cut = size - off;
	return 0;
}

void ctf_tomb_packet(const struct ctf_packet_header *last, uint64_t lost_events, char *out)
{
	struct ctf_packet_header h = *last;
	memset(out, 0, CTF_TOMB_SIZE);
	h.content_size = CTF_PACKET_HEADER_SIZE * 8;
	h.packet_size = CTF_TOMB_SIZE * 8;
	h.events_discarded += lost_events;
	memcpy(out, &h, sizeof(h));
}

int ctf_out_settle(struct ctf_out *o, int fd)
{
	if (!o->tomb)
		return 0;
	char buf[CTF_TOMB_SIZE];
	ctf_tomb_packet(&o->tomb_hdr, o->lost_events, buf);
	int ret = put(o, fd, buf, sizeof(buf));
	if (!ret)
		o->tomb = false;
	return ret;
}

int ctf_out_append(struct ctf_out *o, int fd, char *pkt, uint64_t len, uint64_t events)
{
	struct ctf_packet_header h;
	memcpy(&h, pkt, sizeof(h));
	int ret = ctf_out_settle(o, fd);
	if (!ret) {
		uint64_t d = h.events_discarded + o->lost_events;
		memcpy(pkt + offsetof(struct ctf_packet_header, events_discarded), &d, 8);
		ret = put(o, fd, pkt, len);
		memcpy(pkt, &h, sizeof(h));
	}
	if (ret < 0)
		ctf_out_lose(o, pkt, events);
	return ret;
}

void ctf_out_lose(struct ctf_out *o, const char *pkt, uint64_t events)
{
	/* Its place is taken by a header-only packet next time: the newest
	 * such packet carries all that was lost. */
	memcpy(&o->tomb_hdr, pkt, sizeof(o->tomb_hdr));
	o->lost_events += events;
	o->lost_packets++;
	o->tomb = true;
}
