/*
 * ctf_walk.h - reading back the packets ringtrace writes (ctf_packet.h)
 * without the trace's metadata: walking a packet's events with the event
 * classes the writer knows, and appending packets to a stream file so that
 * it always ends on a whole packet and accounts for those it could not
 * take.
 *
 * Concurrency: no state of its own; a struct ctf_out belongs to one
 * stream and its caller serialises its use.
 */
#ifndef RINGTRACE_CTF_WALK_H
#define RINGTRACE_CTF_WALK_H

#include <stdbool.h>
#include <stdint.h>

#include <ringtrace/ringtrace_types.h>

#include "ctf_packet.h"

/* The fields of event `id`, or false when the trace has no such event. */
typedef bool (*ctf_class_fn)(void *arg, uint32_t id, const struct rt_field_desc **fields,
			     uint32_t *nr_fields);

/*
 * Walk the events between p and end (a packet's content after its header,
 * in memory no one else writes): each event's header, then `nr_ctx`
 * context fields of the types in ctx_types (rt_field_type values), then
 * the payload of its class. Every event must decode, the last one ending
 * exactly at `end`, and its time (compact headers' low bits extended as
 * CTF says) must be at least the previous event's (ts_begin for the first)
 * and at most ts_end. *last_ts (unless NULL) receives the last event's
 * time (ts_begin when there is none) when all decode. Returns the number
 * of events or -EBADMSG. `fn` is asked about an id once per walk (again
 * only when another id took its place in the walk's 32-entry cache): its
 * answer must not change during the walk. Contexts and classes whose
 * fields all have a fixed size are stepped over in one step, and a run of
 * such events of one compact id without looking their id up.
 */
int64_t ctf_walk_events(const char *p, const char *end, const uint32_t *ctx_types,
			uint32_t nr_ctx, ctf_class_fn fn, void *arg, uint64_t ts_begin,
			uint64_t ts_end, uint64_t *last_ts);

/*
 * A stream file being appended to. A packet that cannot be written (disk
 * full, I/O error) is cut off the file again (truncated back to the last
 * whole packet; retried before the next write when that truncate fails
 * too), its events are added to `lost_events`, and the next write first
 * puts a header-only packet in its place (same packet_seq_num and times,
 * events_discarded counting them), so readers see how many events are
 * missing. Every packet written after carries lost_events in its
 * events_discarded.
 */
struct ctf_out {
	uint64_t size;			/* bytes of whole packets in the file */
	uint64_t lost_events;		/* of packets not written (cumulative) */
	uint64_t lost_packets;
	bool torn;			/* bytes past `size` still to cut off */
	bool tomb;			/* tomb_hdr is due before the next packet */
	struct ctf_packet_header tomb_hdr;
};

/*
 * Cut a stream file that its writer left in the middle of a packet (a
 * process that died while its consumer wrote) back to its last whole
 * packet, so that readers take the rest. Walks the packet headers from
 * the start: a packet is whole when its header is there with the magic
 * and its packet_size (at least the header, whole bytes) fits in the
 * file. *cut is the number of bytes removed (0 when the file ends on a
 * whole packet). Returns 0 or -errno of the reads and the truncation.
 */
int ctf_stream_cut_torn(int fd, uint64_t *cut);

/* The header-only packet that stands for lost packets: `last`'s header
 * (the newest lost packet: its packet_seq_num and times) with no event,
 * events_discarded raised by lost_events, padded to 8 bytes like every
 * packet, into out[CTF_TOMB_SIZE]. */
#define CTF_TOMB_SIZE ((CTF_PACKET_HEADER_SIZE + 7) & ~7u)
void ctf_tomb_packet(const struct ctf_packet_header *last, uint64_t lost_events, char *out);

/* Append the trimmed packet `pkt` (len bytes, `events` events; its
 * events_discarded is raised by lost_events here) to fd, whose file holds
 * o->size bytes. Returns 0, or -errno (the packet is accounted as lost). */
int ctf_out_append(struct ctf_out *o, int fd, char *pkt, uint64_t len, uint64_t events);
/* Account for the packet `pkt` (`events` events) as not written. */
void ctf_out_lose(struct ctf_out *o, const char *pkt, uint64_t events);
/* Write the header-only packet that is due, if any. 0 or -errno. */
int ctf_out_settle(struct ctf_out *o, int fd);

#endif /* RINGTRACE_CTF_WALK_H */
