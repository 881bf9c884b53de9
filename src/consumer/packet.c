/*
 * packet.c - checking a packet before it goes into a trace.
 *
 * A sub-buffer is shared memory that every program of the buffer set maps
 * writable: a broken (or hostile) program of the same user can write
 * anything into it at any time, including while the consumer reads it. So
 * the consumer copies the packet into private memory first and checks the
 * copy against what it knows itself (the trace's uuid, the channel's
 * stream id, the CPU, the sequence number of the sub-buffer it took, the
 * previous packet of the stream, the trace's event classes). A packet that
 * fails is dropped and counted (packets_corrupt): the stream then has a
 * packet_seq_num gap, which readers report as discarded packets, and every
 * other packet, of every program, stays readable.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../ctf/ctf_walk.h"
#include "../common/config_parse.h"
#include "../ringbuffer/ringbuffer.h"
#include "consumer_internal.h"

/* Rebuild the set's id table if the trace's classes changed. */
static void refresh_classes(struct cons_bufset *cb)
{
	const struct dp_trace *t = cb->t;
	uint32_t chan = cb->b->channel->id;
	if (cb->class_valid && cb->class_gen == t->generation)
		return;
	uint32_t len = 0;
	for (uint32_t i = 0; i < t->nr_events; i++)
		if (t->events[i].channel_id == chan && t->events[i].id < CONS_CLASS_TABLE_MAX &&
		    t->events[i].id >= len)
			len = t->events[i].id + 1;
	const struct dp_event_class **tab = calloc(len ? len : 1, sizeof(*tab));
	if (!tab)
		return; /* keep the old table: unknown ids are searched */
	for (uint32_t i = 0; i < t->nr_events; i++)
		if (t->events[i].channel_id == chan && t->events[i].id < len)
			tab[t->events[i].id] = &t->events[i];
	free(cb->class_by_id);
	cb->class_by_id = tab;
	cb->class_by_id_len = len;
	cb->class_gen = t->generation;
	cb->class_valid = true;
}

static const struct dp_event_class *find_class(const struct cons_bufset *cb, uint32_t id)
{
	if (id < cb->class_by_id_len && cb->class_by_id[id])
		return cb->class_by_id[id];
	const struct dp_trace *t = cb->t;
	for (uint32_t i = 0; i < t->nr_events; i++)
		if (t->events[i].channel_id == cb->b->channel->id && t->events[i].id == id)
			return &t->events[i];
	return NULL;
}

/* ctf_class_fn over the set's classes (caller holds t->lock). */
static bool class_fields(void *arg, uint32_t id, const struct rt_field_desc **fields,
			 uint32_t *nr)
{
	const struct dp_event_class *ec = find_class(arg, id);
	if (!ec)
		return false;
	*fields = ec->fields;
	*nr = ec->nr_fields;
	return true;
}

/* The header fields the consumer knows, and the sizes. */
static bool header_ok(const struct cons_bufset *cb, uint32_t cpu,
		      const struct cons_packet_prev *prev, const struct ctf_packet_header *h,
		      uint64_t size, uint64_t seq)
{
	const struct ctf_stream_info *si = &cb->b->stream;
	if (h->magic != CTF_MAGIC || memcmp(h->uuid, si->uuid, sizeof(h->uuid)) ||
	    h->stream_id != si->stream_id || h->stream_instance_id != cpu || h->cpu_id != cpu)
		return false;
	/* content_size is in bits; every packet holds its header. */
	if (h->content_size % 8 || h->content_size / 8 < CTF_PACKET_HEADER_SIZE ||
	    h->content_size / 8 > size)
		return false;
	if (h->packet_seq_num != seq || h->timestamp_begin > h->timestamp_end)
		return false;
	/* The CPU's lost count only grows, and the packet's was read from it
	 * when the packet closed. */
	struct rb_stats st;
	rb_get_stats(&cb->b->rb, cpu, &st);
	if (h->events_discarded > st.events_lost)
		return false;
	return !prev->valid ||
	       (h->packet_seq_num > prev->seq && h->timestamp_begin >= prev->ts_end &&
		h->events_discarded >= prev->discarded);
}

int cons_packet_check(struct cons_bufset *cb, uint32_t cpu, struct cons_packet_prev *prev,
		      const char *shared, char *copy, uint64_t size, uint64_t seq,
		      uint64_t *len, uint64_t *events)
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
	if (!header_ok(cb, cpu, prev, &h, size, seq))
		return -EBADMSG;
	const struct rtd_channel *ch = cb->b->channel;
	uint32_t ctx[RT_CTX_COUNT];
	for (uint32_t c = 0; c < ch->nr_contexts && c < RT_CTX_COUNT; c++)
		ctx[c] = rt_context_type(ch->contexts[c]);
	pthread_mutex_lock(&cb->t->lock);
	refresh_classes(cb);
	int64_t n = ctf_walk_events(copy + CTF_PACKET_HEADER_SIZE, copy + used, ctx,
				    ch->nr_contexts < RT_CTX_COUNT ? ch->nr_contexts
								    : RT_CTX_COUNT,
				    class_fields, cb, h.timestamp_begin, h.timestamp_end);
	pthread_mutex_unlock(&cb->t->lock);
	if (n < 0)
		return -EBADMSG;
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
