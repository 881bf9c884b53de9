/*
 * consumer_packet.c - checking a packet before it goes into a trace.
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

#include "../ringbuffer/ringbuffer_api.h"
#include "consumer_internal.h"

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
		[RT_TYPE_POINTER] = sizeof(void *),
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

static uint32_t context_type(enum rtd_context c)
{
	switch (c) {
	case RTD_CTX_VPID: case RTD_CTX_VTID: case RTD_CTX_PRIO:
		return RT_TYPE_S32;
	case RTD_CTX_CPU_ID:
		return RT_TYPE_U32;
	case RTD_CTX_IP:
		return RT_TYPE_U64;
	default:
		return RT_TYPE_STRING;
	}
}

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

/* The time of a compact header's low bits after `cur` (CTF's rule for an
 * N-bit timestamp field: a smaller value means the low bits wrapped). */
static uint64_t compact_time(uint64_t cur, uint32_t low)
{
	const uint64_t mask = (1ull << CTF_COMPACT_TSC_BITS) - 1;
	uint64_t t = (cur & ~mask) | low;
	return t < cur ? t + mask + 1 : t;
}

/* Walk the events of p..end (caller holds t->lock): every one must decode
 * with the set's contexts and event classes, and its time must be at
 * least the previous one's and at most `ts_end`. Returns the number of
 * events, or -EBADMSG. */
static int64_t walk_events(struct cons_bufset *cb, const char *p, const char *end,
			   uint64_t ts_begin, uint64_t ts_end)
{
	const struct rtd_channel *ch = cb->b->channel;
	uint64_t now = ts_begin;
	int64_t n = 0;
	refresh_classes(cb);
	while (p < end) {
		uint32_t id = (uint8_t)*p & 31u;
		uint64_t sz;
		if (id == CTF_EXTENDED_ID) {
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
		for (uint32_t c = 0; c < ch->nr_contexts; c++) {
			if (!(sz = field_size(context_type(ch->contexts[c]), p, end)))
				return -EBADMSG;
			p += sz;
		}
		const struct dp_event_class *ec = find_class(cb, id);
		if (!ec)
			return -EBADMSG;
		for (uint32_t f = 0; f < ec->nr_fields; f++) {
			if (!(sz = field_size(ec->fields[f].type, p, end)))
				return -EBADMSG;
			p += sz;
		}
		n++;
	}
	return n;
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
	if (h->events_discarded > __atomic_load_n(&rb_cpu(&cb->b->rb, cpu)->events_lost,
						  __ATOMIC_RELAXED))
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
	pthread_mutex_lock(&cb->t->lock);
	int64_t n = walk_events(cb, copy + CTF_PACKET_HEADER_SIZE, copy + used,
				h.timestamp_begin, h.timestamp_end);
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
