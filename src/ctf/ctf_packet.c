/*
 * ctf_packet.c - fill the packet header/context of a sub-buffer (layout in
 * ctf_packet.h). Called by the producer that switches sub-buffers, so only
 * plain stores: async-signal-safe, no lock.
 */
#include "ctf_packet.h"

#include <string.h>

#define CTF_HIDDEN __attribute__((visibility("hidden")))

CTF_HIDDEN void ctf_packet_begin(void *stream_info, uint32_t cpu, void *subbuf,
				 uint64_t tsc, uint64_t seq)
{
	const struct ctf_stream_info *si = stream_info;
	struct ctf_packet_header h = {
		.magic = CTF_MAGIC,
		.stream_id = si->stream_id,
		.stream_instance_id = cpu,
		.timestamp_begin = tsc,
		.timestamp_end = tsc,
		.content_size = (uint64_t)CTF_PACKET_HEADER_SIZE * 8,
		.packet_size = si->subbuf_size * 8,
		.packet_seq_num = seq,
		.events_discarded = 0,
		.cpu_id = cpu,
	};
	memcpy(h.uuid, si->uuid, sizeof(h.uuid));
	memcpy(subbuf, &h, sizeof(h));
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
