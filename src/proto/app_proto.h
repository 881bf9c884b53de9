/*
 * app_proto.h - the binary messages between traced programs (libringtrace)
 * and ringtraced: frame types 16..63 of proto.h, their payloads byte by
 * byte, and one encoder and one bounds-checked decoder per message, used
 * by both ends (no payload is written or read anywhere else).
 *
 * All integers are in host byte order (both ends run on one machine),
 * unaligned in the payload (read and written with memcpy). A string is
 *   u8 length L (1..RTP_APP_STR_MAX), then L bytes, no NUL.
 * An event description ("event record", RTP_APP_EVENT_MIN_SIZE bytes at
 * least):
 *    0  u32  index: the program's own number for the event class (its
 *            registry id; unique within the program, < RTP_APP_MAX_EVENTS)
 *    4  i32  loglevel (enum rt_loglevel, 0..14)
 *    8  str  provider (a C identifier)
 *       str  name (a C identifier)
 *       u8   nr_fields F (<= RT_MAX_FIELDS)
 *       F x { u8 type (enum rt_field_type), str field name (identifier) }
 * An event list: u32 count N (<= RTP_APP_MAX_EVENTS), then N event records.
 *
 * Messages (program -> daemon unless marked):
 *
 * RTP_APP_REGISTER (the connection's first frame)
 *    0  u32  pid
 *    4  u32  uid (the daemon trusts SO_PEERCRED, this is informative)
 *    8  u32  abi (RT_ABI_VERSION)
 *   12  u8   pointer size in bytes (8)
 *   13  u8   clocks the program can read: bit 0 tsc, bit 1 monotonic
 *            (RTP_APP_CAN_TSC, RTP_APP_CAN_MONOTONIC)
 *   14  u16  reserved, 0
 *   16  char[16] procname, NUL-padded (at least one NUL)
 *   32  event list (every event class registered so far)
 *
 * RTP_APP_REGISTER_REPLY (daemon -> program; frame status 0 or -errno;
 * with status 0:)
 *    0  u32  clock (enum rtp_app_clock) the program must timestamp with
 *    4  u32  reserved, 0
 *
 * RTP_APP_EVENTS: event classes registered later (dlopen): an event list.
 *
 * RTP_APP_CHANNEL (daemon -> program, exactly one descriptor: the memfd
 * of a buffer set, mapped shared read-write by the program)
 *    0  u64  key: the daemon's number for this buffer set (unique per
 *            connection, not 0)
 *    8  u64  session id
 *   16  u32  channel id (CTF stream id)
 *   20  u32  nr_contexts C (<= RTP_APP_MAX_CONTEXTS)
 *   24  u64  size of the mapping in bytes
 *   32  u8[16] trace uuid (written in each packet header)
 *   48  u32  account: the writers' account the program announces and
 *            commits on in this buffer set (1..the set's nr_accts,
 *            ringbuffer.h; 0: none, the CPUs' own words), its own among
 *            the programs that share the set, so that the daemon can void
 *            what it left outstanding if it dies in an event
 *   52  C x u8 contexts (enum rt_context, context.h), in the event context's order
 *
 * RTP_APP_ENABLE (daemon -> program): the complete set of the program's
 * events written to one buffer set, with their filters, replacing the
 * previous one (N = 0: none).
 *    0  u64  key (of a CHANNEL received before)
 *    8  u32  N (<= RTP_APP_MAX_EVENTS)
 *   12  u32  F: filters (<= RTP_APP_ENABLE_MAX_FILTERS)
 *   16  N x { u32 index (the program's, < RTP_APP_MAX_EVENTS),
 *             u32 event id (in the trace, <= RTP_APP_EVENT_ID_MAX) }
 *       only when F > 0:
 *       F x { u32 length L (1..RTP_APP_FILTER_MAX), L bytes: a compiled
 *             filter (src/filter's rtf_save; the program loads it with
 *             rtf_load, as untrusted input) }
 *       u32  U: uses
 *       U x { u32 entry (< N), u32 filter (< F) }, strictly sorted by
 *             (entry, filter): none repeats another, an entry has at
 *             most F
 * An entry that no use names is written unfiltered; one that some do is
 * written when one of its filters passes (the rules of the buffer set's
 * channel that match the event, each with its filter: OR).
 *
 * RTP_APP_DISABLE_SESSION (daemon -> program): stop writing to every
 * buffer set of the session (the program unmaps them once no thread of
 * it is still inside an event that loaded them: src/lib/epoch.h).
 *    0  u64  session id
 *
 * RTP_APP_EVENTS_REPLY (daemon -> program; frame status 0 or -errno,
 * empty): sent after the ENABLE messages an EVENTS message caused, so the
 * program knows its new events are set up.
 *
 * RTP_APP_SYNC (daemon -> program):
 *    0  u64  cookie
 * The program answers RTP_APP_SYNC_REPLY (program -> daemon), the same
 * layout with the same cookie, once it has applied every message
 * received before, so a daemon command (start, stop, rule change) returns
 * only when the programs follow it.
 *
 * RTP_APP_STATEDUMP (daemon -> program): SYNC's layout (u64 cookie).
 * The program emits its state dump (threads, loaded objects:
 * src/lib/statedump.c) into its buffers, then answers SYNC_REPLY with the
 * cookie; the daemon asks before a snapshot and waits a bounded time.
 *
 * RTP_APP_TRIGGERS (daemon -> program): the complete set of trigger rules
 * the program evaluates (event-rule-matches conditions on its events,
 * docs/triggers.md), replacing the previous set (N = 0: none). The
 * connection's first TRIGGERS carries exactly one descriptor, the memfd
 * of the program's notification ring (trig_ring.h: its layout); later
 * ones carry none.
 *    0  u32  N (<= RTP_APP_MAX_TRIGGERS)
 *    4  u32  reserved, 0
 *    8  N trigger records:
 *        0  u64  token (not 0): what the ring's slots name the trigger by
 *        8  u32  E (<= RTP_APP_MAX_EVENTS): events the rule matches
 *       12  u32  F (<= RTP_APP_FILTER_MAX): filter bytes, 0: no filter
 *       16  u32  C (<= RTP_APP_MAX_CAPTURES): captures
 *       20  u32  reserved, 0
 *       24  E x u32 event index (the program's, < RTP_APP_MAX_EVENTS)
 *           F bytes: the compiled filter (src/filter's rtf_save; the
 *           program loads it with rtf_load, as untrusted input)
 *           C x str: what to capture, in order: a payload field's name
 *           or $ctx.NAME (a context, context.h's names)
 *
 * RTP_APP_GOODBYE: the program exits; empty. The daemon drains what it
 * wrote. A program that dies without it is treated alike when its socket
 * closes.
 *
 * Reserved fields are written 0 and ignored when read.
 *
 * Encoders: a message of fixed size is written into the caller's array
 * of RTP_APP_*_SIZE bytes; the others are appended to a struct
 * rtp_app_buf, whose error is sticky (check b.err once at the end).
 * Encoders refuse (-EINVAL) what does not fit the layout and, but for
 * the event records' values (see rtp_app_event_encode), what the decoders
 * would refuse.
 *
 * Decoders read from a struct rtp_app_cursor over the frame's payload
 * (input from another process: untrusted). Each checks every length
 * before reading, every count against what is left, and every value
 * against its range; a failed check makes the whole message invalid
 * (-EPROTO) and leaves the output unspecified. A decoder of a whole
 * message also requires the payload to end where the message does; the
 * event lists (REGISTER after its fixed part, EVENTS) are decoded record
 * by record, then closed with rtp_app_end.
 *
 * Concurrency: the functions below work on their arguments only.
 */
#ifndef RINGTRACE_APP_PROTO_H
#define RINGTRACE_APP_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ringtrace/ringtrace_pp.h>
#include <ringtrace/ringtrace_types.h>

enum rtp_app_type {
	RTP_APP_REGISTER = 16,
	RTP_APP_REGISTER_REPLY = 17,
	RTP_APP_EVENTS = 18,
	RTP_APP_CHANNEL = 19,
	RTP_APP_ENABLE = 20,
	RTP_APP_DISABLE_SESSION = 21,
	RTP_APP_GOODBYE = 22,
	RTP_APP_EVENTS_REPLY = 23,
	RTP_APP_SYNC = 24,
	RTP_APP_SYNC_REPLY = 25,
	RTP_APP_STATEDUMP = 26,
	RTP_APP_TRIGGERS = 28,
};

enum rtp_app_clock {
	RTP_APP_CLOCK_TSC = 0,
	RTP_APP_CLOCK_MONOTONIC = 1,
};

/* REGISTER's clocks bits. */
#define RTP_APP_CAN_TSC 1u
#define RTP_APP_CAN_MONOTONIC 2u

#define RTP_APP_STR_MAX 255
#define RTP_APP_MAX_EVENTS 65536
#define RTP_APP_MAX_CONTEXTS 16
#define RTP_APP_PROCNAME_LEN 16
#define RTP_APP_EVENT_ID_MAX (UINT32_MAX - 2)
/* index, loglevel, two 1-byte strings, nr_fields */
#define RTP_APP_EVENT_MIN_SIZE 13
/* The fixed parts, and the messages of fixed size. */
#define RTP_APP_REGISTER_FIXED 32
#define RTP_APP_CHANNEL_FIXED 52
#define RTP_APP_ENABLE_FIXED 16
#define RTP_APP_ENABLE_ENTRY_SIZE 8
#define RTP_APP_ENABLE_USE_SIZE 8
#define RTP_APP_ENABLE_MAX_FILTERS 256
#define RTP_APP_FILTER_MAX (256u << 10)
#define RTP_APP_REGISTER_REPLY_SIZE 8
#define RTP_APP_DISABLE_SESSION_SIZE 8
#define RTP_APP_SYNC_SIZE 8
#define RTP_APP_MAX_TRIGGERS 1024
#define RTP_APP_MAX_CAPTURES 64
#define RTP_APP_TRIGGERS_FIXED 8
#define RTP_APP_TRIGGER_FIXED 24

/* A payload being written; err is sticky (-ENOMEM, -E2BIG past
 * RTP_MAX_PAYLOAD, -EINVAL for a value the decoder would refuse). Start
 * from { 0 }; free with rtp_app_buf_free. */
struct rtp_app_buf {
	char *data;
	uint32_t len;
	uint32_t cap;
	int err;
};
void rtp_app_buf_free(struct rtp_app_buf *b);

/* A payload being read: p[pos .. len). */
struct rtp_app_cursor {
	const char *p;
	uint32_t len;
	uint32_t pos;
};
static inline struct rtp_app_cursor rtp_app_cursor(const void *p, uint32_t len)
{
	return (struct rtp_app_cursor){ (const char *)p, len, 0 };
}
/* 0 if the cursor is at the end of the payload, else -EPROTO. */
int rtp_app_end(const struct rtp_app_cursor *c);

/* A C identifier (as the registry requires of names). */
bool rtp_app_identifier_ok(const char *s);
/* An rt_printf format as the registry keeps it (the name of an
 * RT_TYPE_FORMAT field, decoded): 1..RT_PRINTF_FORMAT_MAX bytes, none a
 * control character but tab and newline. */
bool rtp_app_format_ok(const char *s);

/* --- event lists (REGISTER, EVENTS) ---------------------------------- */

/* One event description to encode. */
struct rtp_app_event_out {
	uint32_t index;
	int32_t loglevel;
	const char *provider;
	const char *name;
	uint32_t nr_fields;
	const struct rt_field_desc *fields;
};
/* The list's count (n <= RTP_APP_MAX_EVENTS, else -EINVAL), then exactly
 * n records with rtp_app_event_encode. The record's layout is checked
 * (strings of 1..RTP_APP_STR_MAX bytes, at most RT_MAX_FIELDS fields, else
 * -EINVAL); its values are written as given (the registry checks the
 * names; a log level out of range is the daemon's to refuse). */
void rtp_app_event_list_encode(struct rtp_app_buf *b, uint32_t n);
void rtp_app_event_encode(struct rtp_app_buf *b, const struct rtp_app_event_out *e);

/* A decoded event description. Strings are NUL-terminated copies inside
 * the struct. */
struct rtp_app_event_in {
	uint32_t index;
	int32_t loglevel;
	char provider[RTP_APP_STR_MAX + 1];
	char name[RTP_APP_STR_MAX + 1];
	uint32_t nr_fields;
	struct {
		uint8_t type;
		char name[RTP_APP_STR_MAX + 1];
	} fields[RT_MAX_FIELDS];
};
/* The list's count, checked against the bytes left (n records take
 * n * RTP_APP_EVENT_MIN_SIZE at least: else -EPROTO) and then against
 * RTP_APP_MAX_EVENTS (else -E2BIG, *n set: the records may be whole, the
 * list is over the limit, which the daemon reports as such). 0, -EPROTO
 * or -E2BIG. */
int rtp_app_event_list_decode(struct rtp_app_cursor *c, uint32_t *n);
/* One event record, validated (index, loglevel, identifiers, field
 * count and types). 0 or -EPROTO. */
int rtp_app_event_decode(struct rtp_app_cursor *c, struct rtp_app_event_in *e);

/* --- REGISTER, REGISTER_REPLY ---------------------------------------- */

struct rtp_app_register {
	uint32_t pid;
	uint32_t uid;
	uint32_t abi;
	uint8_t ptr_size;
	uint8_t clocks;			/* RTP_APP_CAN_* */
	/* Encoding takes up to RTP_APP_PROCNAME_LEN - 1 bytes before a NUL;
	 * decoding gives a NUL-terminated, NUL-padded name. */
	char procname[RTP_APP_PROCNAME_LEN];
};
/* The fixed part; the event list follows (rtp_app_event_list_encode). */
void rtp_app_register_encode(struct rtp_app_buf *b, const struct rtp_app_register *r);
/* The fixed part, leaving the cursor at the event list. What the values
 * mean (abi, ptr_size, clocks) is the daemon's to judge. 0 or -EPROTO
 * (too short, procname without a NUL). */
int rtp_app_register_decode(struct rtp_app_cursor *c, struct rtp_app_register *r);

void rtp_app_register_reply_encode(uint8_t out[static RTP_APP_REGISTER_REPLY_SIZE],
				   enum rtp_app_clock clock);
/* 0 or -EPROTO (length, clock not an enum rtp_app_clock). */
int rtp_app_register_reply_decode(struct rtp_app_cursor *c, enum rtp_app_clock *clock);

/* --- CHANNEL, ENABLE, DISABLE_SESSION -------------------------------- */

struct rtp_app_channel {
	uint64_t key;			/* not 0 */
	uint64_t session_id;
	uint32_t channel_id;
	uint32_t nr_contexts;		/* <= RTP_APP_MAX_CONTEXTS */
	uint64_t map_size;
	uint8_t uuid[16];
	uint32_t account;		/* 0: none */
	uint8_t contexts[RTP_APP_MAX_CONTEXTS];	/* enum rt_context, context.h */
};
void rtp_app_channel_encode(struct rtp_app_buf *b, const struct rtp_app_channel *m);
/* 0 or -EPROTO (length, key 0, too many contexts). Whether each context
 * is one the program knows is the program's to judge. */
int rtp_app_channel_decode(struct rtp_app_cursor *c, struct rtp_app_channel *m);

/* ENABLE is built entry by entry: begin (on an empty buffer), add each
 * (index < RTP_APP_MAX_EVENTS, id <= RTP_APP_EVENT_ID_MAX, at most
 * RTP_APP_MAX_EVENTS of them, else -EINVAL), finish (writes N; no
 * filter) or finish_filtered (writes N and the filters and their uses:
 * counts, lengths and numbers as the decoder requires, else -EINVAL). */
void rtp_app_enable_begin(struct rtp_app_buf *b, uint64_t key);
void rtp_app_enable_add(struct rtp_app_buf *b, uint32_t index, uint32_t id);
void rtp_app_enable_finish(struct rtp_app_buf *b);
struct rtp_app_filter {
	const void *p;
	uint32_t len;
};
struct rtp_app_enable_use {
	uint32_t entry;			/* its number among the entries added */
	uint32_t filter;		/* its number in `filters` */
};
void rtp_app_enable_finish_filtered(struct rtp_app_buf *b, const struct rtp_app_filter *filters,
				    uint32_t nr_filters, const struct rtp_app_enable_use *uses,
				    uint32_t nr_uses);

/* A decoded ENABLE: its entries, filters and uses stay in the payload
 * (valid while it is). */
struct rtp_app_enable {
	uint64_t key;
	uint32_t n;
	const char *entries;
	uint32_t nr_filters;
	struct rtp_app_filter filters[RTP_APP_ENABLE_MAX_FILTERS];
	uint32_t nr_uses;
	const char *uses;
};
/* 0 or -EPROTO (a length, N, F, U, an entry, a filter's length or a
 * use out of range; uses not strictly sorted; bytes left over). What the filters' bytes say is
 * rtf_load's to check. */
int rtp_app_enable_decode(struct rtp_app_cursor *c, struct rtp_app_enable *m);
/* Entry i < m->n of a decoded ENABLE (already checked). */
void rtp_app_enable_entry(const struct rtp_app_enable *m, uint32_t i, uint32_t *index,
			  uint32_t *id);
/* Use i < m->nr_uses of a decoded ENABLE (already checked). */
struct rtp_app_enable_use rtp_app_enable_use_at(const struct rtp_app_enable *m, uint32_t i);

void rtp_app_disable_session_encode(uint8_t out[static RTP_APP_DISABLE_SESSION_SIZE],
				    uint64_t session_id);
/* 0 or -EPROTO (length). */
int rtp_app_disable_session_decode(struct rtp_app_cursor *c, uint64_t *session_id);

/* --- TRIGGERS ---------------------------------------------------------- */

/* One trigger record to encode (every value as the decoder requires,
 * else -EINVAL). */
struct rtp_app_trigger_out {
	uint64_t token;
	const uint32_t *events;
	uint32_t nr_events;
	const void *filter;		/* NULL when filter_len is 0 */
	uint32_t filter_len;
	const char *const *captures;	/* 1..RTP_APP_STR_MAX bytes each */
	uint32_t nr_captures;
};
/* The count (n <= RTP_APP_MAX_TRIGGERS), then exactly n records. */
void rtp_app_triggers_encode(struct rtp_app_buf *b, uint32_t n);
void rtp_app_trigger_encode(struct rtp_app_buf *b, const struct rtp_app_trigger_out *t);

/* A decoded trigger record: the event indices and the filter stay in
 * the payload (valid while it is); captures are NUL-terminated copies. */
struct rtp_app_trigger_in {
	uint64_t token;
	uint32_t nr_events;
	const char *events;		/* read with rtp_app_trigger_event */
	uint32_t filter_len;
	const void *filter;
	uint32_t nr_captures;
	char captures[RTP_APP_MAX_CAPTURES][RTP_APP_STR_MAX + 1];
};
/* The count: 0 or -EPROTO (too short, reserved not 0 is accepted, N past
 * RTP_APP_MAX_TRIGGERS or more than the bytes left could hold). */
int rtp_app_triggers_decode(struct rtp_app_cursor *c, uint32_t *n);
/* One record, every count and index checked: 0 or -EPROTO. After the
 * last, rtp_app_end. */
int rtp_app_trigger_decode(struct rtp_app_cursor *c, struct rtp_app_trigger_in *t);
/* Event index i < t->nr_events of a decoded record (already checked). */
uint32_t rtp_app_trigger_event(const struct rtp_app_trigger_in *t, uint32_t i);

/* --- SYNC, SYNC_REPLY and STATEDUMP (one layout); GOODBYE, EVENTS_REPLY */

void rtp_app_sync_encode(uint8_t out[static RTP_APP_SYNC_SIZE], uint64_t cookie);
/* 0 or -EPROTO (length). */
int rtp_app_sync_decode(struct rtp_app_cursor *c, uint64_t *cookie);

/* GOODBYE and EVENTS_REPLY carry nothing: they are sent with an empty
 * payload and decoded with rtp_app_end (0, or -EPROTO if not empty). */

#endif /* RINGTRACE_APP_PROTO_H */
