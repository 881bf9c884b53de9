/*
 * ctf_packet.c - fill the packet header/context of a sub-buffer (layout in
 * ctf_packet.h). Called by the producers that open and close the packet,
 * so only plain stores: async-signal-safe, no lock. Opening and closing
 * write disjoint fields and may run in either order.
 */
#include "ctf_packet.h"

#include <string.h>

#define CTF_HIDDEN __attribute__((visibility("hidden")))

CTF_HIDDEN void ctf_packet_begin(void *stream_info, uint32_t cpu, void *subbuf,
				 uint64_t tsc, uint64_t seq)
{
	const struct ctf_stream_info *si = stream_info;
	struct ctf_packet_header *h = subbuf;
	/* The opening fields only: the packet may already have been closed
	 * by a writer that ran while this one was interrupted (see
	 * struct rb_client), and its closing fields must stay. */
	uint32_t v32 = CTF_MAGIC;
	memcpy(&h->magic, &v32, 4);
	memcpy(h->uuid, si->uuid, sizeof(h->uuid));
	memcpy(&h->stream_id, &si->stream_id, 4);
	uint64_t v64 = cpu;
	memcpy(&h->stream_instance_id, &v64, 8);
	memcpy(&h->timestamp_begin, &tsc, 8);
	memcpy(&h->packet_seq_num, &seq, 8);
	memcpy(&h->cpu_id, &cpu, 4);
}

CTF_HIDDEN void ctf_packet_end(void *stream_info, uint32_t cpu, void *subbuf,
			       uint64_t tsc, uint64_t used, uint64_t lost)
{
	const struct ctf_stream_info *si = stream_info;
	struct ctf_packet_header *h = subbuf;
	(void)cpu;
	uint64_t v;
	v = tsc;
	memcpy(&h->timestamp_end, &v, 8);
	v = used * 8;
	memcpy(&h->content_size, &v, 8);
	v = si->subbuf_size * 8;
	memcpy(&h->packet_size, &v, 8);
	memcpy(&h->events_discarded, &lost, 8);
}
