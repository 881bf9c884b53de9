/*
 * packet.c - the one packet trim and check (consumer.h).
 *
 * Every packet is trimmed to its content before it goes out: packet_size
 * becomes the content rounded up to 8 bytes, and the padding, which holds
 * stale bytes of an earlier pass, is zeroed so that traces are
 * deterministic.
 *
 * A source other programs can write (the daemon reads shared memory that
 * every program of the buffer set maps writable: a broken or hostile
 * program of the same user can write anything at any time, including
 * while the consumer reads it) is checked too: the packet is copied into
 * private memory first and the copy checked against what the consumer
 * knows itself (the trace's uuid, the channel's stream id, the stream,
 * the sequence number of the unit it took, the previous packet of the
 * stream, the trace's event classes). A packet that fails is dropped and
 * counted (packets_corrupt): the stream then has a packet_seq_num gap,
 * which readers report as discarded packets, and every other packet, of
 * every program, stays readable.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../common/context.h"
#include "../ctf/ctf_packet.h"
#include "consumer.h"

struct class_arg {
	const struct cons_classes *cl;
	uint32_t stream_id;
};

/* ctf_class_fn over the trace's classes (their lock held). */
static bool class_fields(void *arg, uint32_t id, const struct rt_field_desc **fields,
			 uint32_t *nr)
{
	const struct class_arg *a = arg;
	return a->cl->fields(a->cl->arg, a->stream_id, id, fields, nr);
}

/* Events from `data` + header to `end` (*last: the last one's time,
 * may be NULL), -1 if they do not decode. */
static int64_t walk_last(const struct cons_channel *c, const char *data, const char *end,
			 const struct ctf_packet_header *h, uint64_t *last)
{
	const struct cons_channel_desc *ch = c->desc;
	const struct cons_classes *cl = &c->trace->classes;
	struct rt_field_desc fields[CONS_MAX_CONTEXTS];
	uint32_t ctx[CONS_MAX_CONTEXTS];
	uint32_t nc = cons_channel_contexts(ch, fields);
	for (uint32_t i = 0; i < nc; i++)
		ctx[i] = fields[i].type;
	struct class_arg a = { .cl = cl, .stream_id = ch->stream_id };
	cl->lock(cl->arg);
	int64_t n = ctf_walk_events(data + CTF_PACKET_HEADER_SIZE, end, ctx, nc, class_fields,
				    &a, h->timestamp_begin, h->timestamp_end, last);
	cl->unlock(cl->arg);
	return n;
}

static int64_t walk(const struct cons_channel *c, const char *data, const char *end,
		    const struct ctf_packet_header *h)
{
	return walk_last(c, data, end, h, NULL);
}

int cons_packet_last_time(const struct cons_channel *c, const char *data, uint64_t used,
			  uint64_t *ts)
{
	struct ctf_packet_header h;
	if (used < CTF_PACKET_HEADER_SIZE)
		return -EBADMSG;
	memcpy(&h, data, sizeof(h));
	h.timestamp_end = UINT64_MAX;
	return walk_last(c, data, data + used, &h, ts) < 0 ? -EBADMSG : 0;
}

uint64_t cons_packet_events(const struct cons_channel *c, const char *data, uint64_t size)
{
	struct ctf_packet_header h;
	memcpy(&h, data, sizeof(h));
	uint64_t used = h.content_size / 8;
	if (used < CTF_PACKET_HEADER_SIZE || used > size)
		return 0;
	int64_t n = walk(c, data, data + used, &h);
	return n > 0 ? (uint64_t)n : 0;
}

/* The header fields the consumer knows, and the sizes. */
static bool header_ok(const struct cons_channel *c, uint32_t stream,
		      const struct cons_packet_prev *prev, const struct ctf_packet_header *h,
		      uint64_t size, uint64_t seq)
{
	if (h->magic != CTF_MAGIC || memcmp(h->uuid, c->trace->uuid, sizeof(h->uuid)) ||
	    h->stream_id != c->desc->stream_id || h->stream_instance_id != stream ||
	    h->cpu_id != stream)
		return false;
	/* content_size is in bits; every packet holds its header. */
	if (h->content_size % 8 || h->content_size / 8 < CTF_PACKET_HEADER_SIZE ||
	    h->content_size / 8 > size)
		return false;
	if (h->packet_seq_num != seq || h->timestamp_begin > h->timestamp_end)
		return false;
	/* The stream's lost count only grows, and the packet's was read from
	 * it when the packet closed. */
	if (c->src.ops->counts) {
		struct cons_counts cnt;
		c->src.ops->counts(c->src.arg, stream, &cnt);
		if (h->events_discarded > cnt.events_lost)
			return false;
	}
	return !prev->valid ||
	       (h->packet_seq_num > prev->seq && h->timestamp_begin >= prev->ts_end &&
		h->events_discarded >= prev->discarded);
}

int cons_packet_trim(const struct cons_channel *c, uint32_t stream,
		     struct cons_packet_prev *prev, const char *shared, char *copy,
		     uint64_t size, uint64_t seq, uint64_t *len, uint64_t *events)
{
	struct ctf_packet_header h;
	if (size < CTF_PACKET_HEADER_SIZE)
		return -EBADMSG;
	/* The header first, to learn how much to copy; everything is then
	 * checked on the copy, which no program can change any more. */
	if (copy != shared)
		memcpy(copy, shared, CTF_PACKET_HEADER_SIZE);
	memcpy(&h, copy, sizeof(h));
	if (h.content_size / 8 > size || h.content_size / 8 < CTF_PACKET_HEADER_SIZE)
		return -EBADMSG;
	uint64_t used = h.content_size / 8;
	uint64_t bytes = (used + 7) & ~7ULL;
	if (bytes > size)
		bytes = size;
	if (copy != shared)
		memcpy(copy + CTF_PACKET_HEADER_SIZE, shared + CTF_PACKET_HEADER_SIZE,
		       used - CTF_PACKET_HEADER_SIZE);
	int64_t n = 0;
	if (c->untrusted) {
		if (!header_ok(c, stream, prev, &h, size, seq))
			return -EBADMSG;
		n = walk(c, copy, copy + used, &h);
		if (n < 0)
			return -EBADMSG;
	}
	/* The padding up to the 8-byte boundary: zeroed, so traces are
	 * deterministic; packet_size: the bytes written. */
	memset(copy + used, 0, bytes - used);
	uint64_t packet_bits = bytes * 8;
	memcpy(copy + offsetof(struct ctf_packet_header, packet_size), &packet_bits, 8);
	*prev = (struct cons_packet_prev){
		.valid = true, .seq = h.packet_seq_num, .ts_end = h.timestamp_end,
		.discarded = h.events_discarded,
	};
	*len = bytes;
	*events = (uint64_t)n;
	return 0;
}
