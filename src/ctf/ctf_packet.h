/*
 * ctf_packet.h - the CTF 1.8 packet header and context that open every
 * sub-buffer, and the event header, as ringtrace writes them.
 *
 * Packet (one per sub-buffer), little-endian, byte by byte:
 *    0  u32      magic 0xC1FC1FC1
 *    4  u8[16]   trace UUID
 *   20  u32      stream_id (the channel's stream class)
 *   24  u64      stream_instance_id (the CPU)
 *   -- packet context --
 *   32  u64      timestamp_begin (clock ticks, the first event's time)
 *   40  u64      timestamp_end   (clock ticks, when the packet closed)
 *   48  u64      content_size    (bits used, header included)
 *   56  u64      packet_size     (bits; the consumer trims it to the
 *                                 content, rounded up to 8 bytes, before
 *                                 writing the packet out)
 *   64  u64      packet_seq_num  (sub-buffer number since the start; a gap
 *                                 means packets were overwritten)
 *   72  u64      events_discarded (cumulative lost events of this stream)
 *   80  u32      cpu_id
 *   84  events
 *
 * Event header, byte-aligned (TSDL: align(8) bits):
 *   compact   4 bytes: u32 = id (5 bits, 0..30) | timestamp low 27 bits << 5
 *   extended 13 bytes: u8 31, u32 id, u64 full timestamp
 * The compact form is used when the id fits and the time since the
 * previous event of the stream (or the packet's timestamp_begin) fits in
 * 27 bits; the reader reconstructs the full time from the low bits.
 * Payload fields follow, packed, in declaration order.
 */
#ifndef RINGTRACE_CTF_PACKET_H
#define RINGTRACE_CTF_PACKET_H

#include <stdint.h>

#include <ringtrace/internal/fast.h>

#define CTF_MAGIC 0xC1FC1FC1u
#define CTF_PACKET_HEADER_SIZE 84u
/* The compact header's encoding is ABI: call sites write it
 * (ringtrace/internal/fast.h, RT__COMPACT_HEADER). */
#define CTF_COMPACT_ID_MAX RT__COMPACT_ID_MAX
#define CTF_EXTENDED_ID 31u
#define CTF_COMPACT_TSC_BITS RT__COMPACT_TSC_BITS
#define CTF_EVENT_HEADER_COMPACT RT__COMPACT_HEADER_SIZE
#define CTF_EVENT_HEADER_EXTENDED 13u

struct ctf_packet_header {
	uint32_t magic;
	uint8_t uuid[16];
	uint32_t stream_id;
	uint64_t stream_instance_id;
	uint64_t timestamp_begin;
	uint64_t timestamp_end;
	uint64_t content_size;
	uint64_t packet_size;
	uint64_t packet_seq_num;
	uint64_t events_discarded;
	uint32_t cpu_id;
} __attribute__((packed));

_Static_assert(sizeof(struct ctf_packet_header) == CTF_PACKET_HEADER_SIZE,
	       "packet header layout");

/* What the packet callbacks need to know about the stream class. */
struct ctf_stream_info {
	uint8_t uuid[16];
	uint32_t stream_id;
	uint64_t subbuf_size;
};

/* Ring-buffer client callbacks (async-signal-safe, plain stores). */
void ctf_packet_begin(void *stream_info, uint32_t cpu, void *subbuf,
		      uint64_t tsc, uint64_t seq);
void ctf_packet_end(void *stream_info, uint32_t cpu, void *subbuf,
		    uint64_t tsc, uint64_t used, uint64_t lost);

/* Header size for an event id: compact form possible, full timestamp. */
static inline uint16_t ctf_event_header_size(uint32_t id, int full_tsc)
{
	return (id <= CTF_COMPACT_ID_MAX && !full_tsc) ? CTF_EVENT_HEADER_COMPACT
						       : CTF_EVENT_HEADER_EXTENDED;
}

/* Write an event header at `p`; returns the bytes written. */
static inline uint32_t ctf_write_event_header(char *p, uint32_t id,
					      uint64_t tsc, int full_tsc)
{
	if (__builtin_expect(id <= CTF_COMPACT_ID_MAX && !full_tsc, 1)) {
		uint32_t h = RT__COMPACT_HEADER(id, tsc);
		__builtin_memcpy(p, &h, 4);
		return CTF_EVENT_HEADER_COMPACT;
	}
	p[0] = (char)CTF_EXTENDED_ID;
	__builtin_memcpy(p + 1, &id, 4);
	__builtin_memcpy(p + 5, &tsc, 8);
	return CTF_EVENT_HEADER_EXTENDED;
}

#endif /* RINGTRACE_CTF_PACKET_H */
