/*
 * app_proto.h - the binary messages between traced programs (libringtrace)
 * and ringtraced: frame types 16..63 of proto.h, their payloads byte by
 * byte, and a bounds-checked encoder/decoder used by both ends.
 *
 * All integers are in host byte order (both ends run on one machine),
 * unaligned in the payload (read and written with memcpy). A string is
 *   u8 length L (1..APP_STR_MAX), then L bytes, no NUL.
 * An event description ("event record"):
 *    0  u32  index: the program's own number for the event class (its
 *            registry id; unique within the program, < APP_MAX_EVENTS)
 *    4  i32  loglevel (enum rt_loglevel, 0..14)
 *    8  str  provider (a C identifier)
 *       str  name (a C identifier)
 *       u8   nr_fields F (<= RT_MAX_FIELDS)
 *       F x { u8 type (enum rt_field_type), str field name (identifier) }
 * An event list: u32 count N (<= APP_MAX_EVENTS), then N event records.
 *
 * Messages (program -> daemon unless marked):
 *
 * RTP_APP_REGISTER (the connection's first frame)
 *    0  u32  pid
 *    4  u32  uid (the daemon trusts SO_PEERCRED, this is informative)
 *    8  u32  abi (RT_ABI_VERSION)
 *   12  u8   pointer size in bytes (8)
 *   13  u8   clocks the program can read: bit 0 tsc, bit 1 monotonic
 *   14  u16  reserved, 0
 *   16  char[16] procname, NUL-padded (at least one NUL)
 *   32  event list (every event class registered so far)
 *
 * RTP_APP_REGISTER_REPLY (daemon -> program; frame status 0 or -errno)
 *    0  u32  clock (enum app_clock) the program must timestamp with
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
 *   20  u32  nr_contexts C (<= APP_MAX_CONTEXTS)
 *   24  u64  size of the mapping in bytes
 *   32  u8[16] trace uuid (written in each packet header)
 *   48  C x u8 contexts (enum rtd_context), in the event context's order
 *
 * RTP_APP_ENABLE (daemon -> program): the complete set of the program's
 * events written to one buffer set, replacing the previous one (N = 0:
 * none).
 *    0  u64  key (of a CHANNEL received before)
 *    8  u32  N (<= APP_MAX_EVENTS)
 *   12  u32  reserved, 0
 *   16  N x { u32 index (the program's), u32 event id (in the trace) }
 *
 * RTP_APP_DISABLE_SESSION (daemon -> program): stop writing to every
 * buffer set of the session (the mappings stay until the program exits).
 *    0  u64  session id
 *
 * RTP_APP_EVENTS_REPLY (daemon -> program; frame status 0 or -errno,
 * empty): sent after the ENABLE messages an EVENTS message caused, so the
 * program knows its new events are set up.
 *
 * RTP_APP_SYNC (daemon -> program): u64 cookie. The program answers
 * RTP_APP_SYNC_REPLY (program -> daemon) with the same u64 once it has
 * applied every message received before, so a daemon command (start,
 * stop, rule change) returns only when the programs follow it.
 *
 * RTP_APP_GOODBYE: the program exits; empty. The daemon drains what it
 * wrote. A program that dies without it is treated alike when its socket
 * closes.
 *
 * Concurrency: the functions below work on their arguments only.
 * Untrusted input: every app_get_* checks the remaining length first and
 * the decoder checks identifiers, types and counts; a failed check makes
 * the whole message invalid (-EPROTO).
 */
#ifndef RINGTRACE_APP_PROTO_H
#define RINGTRACE_APP_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ringtrace/ringtrace_pp.h>
#include <ringtrace/ringtrace_types.h>

enum app_msg_type {
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
};

enum app_clock {
	APP_CLOCK_TSC = 0,
	APP_CLOCK_MONOTONIC = 1,
};

#define APP_STR_MAX 255
#define APP_MAX_EVENTS 65536
#define APP_MAX_CONTEXTS 16
#define APP_REGISTER_FIXED 32
#define APP_CHANNEL_FIXED 48
#define APP_ENABLE_FIXED 16
#define APP_PROCNAME_LEN 16

/* A payload being written; err is sticky (-ENOMEM, -E2BIG, -EINVAL). */
struct app_buf {
	char *data;
	uint32_t len;
	uint32_t cap;
	int err;
};

void app_put(struct app_buf *b, const void *p, size_t n);
void app_put_u8(struct app_buf *b, uint8_t v);
void app_put_u16(struct app_buf *b, uint16_t v);
void app_put_u32(struct app_buf *b, uint32_t v);
void app_put_u64(struct app_buf *b, uint64_t v);
/* A string of 1..APP_STR_MAX bytes (else err = -EINVAL). */
void app_put_str(struct app_buf *b, const char *s);
void app_buf_free(struct app_buf *b);

/* One event description to encode. */
struct app_event_out {
	uint32_t index;
	int32_t loglevel;
	const char *provider;
	const char *name;
	uint32_t nr_fields;
	const struct rt_field_desc *fields;
};
void app_put_event(struct app_buf *b, const struct app_event_out *e);

/* A payload being read. */
struct app_cursor {
	const char *p;
	uint32_t len;
	uint32_t pos;
};

/* Each returns 0 or -EPROTO when the payload is too short. */
int app_get(struct app_cursor *c, void *out, size_t n);
int app_get_u8(struct app_cursor *c, uint8_t *v);
int app_get_u32(struct app_cursor *c, uint32_t *v);
int app_get_u64(struct app_cursor *c, uint64_t *v);

/* A decoded event description. Strings are NUL-terminated copies inside
 * the struct. */
struct app_event_in {
	uint32_t index;
	int32_t loglevel;
	char provider[APP_STR_MAX + 1];
	char name[APP_STR_MAX + 1];
	uint32_t nr_fields;
	struct {
		uint8_t type;
		char name[APP_STR_MAX + 1];
	} fields[RT_MAX_FIELDS];
};
/* Decode and validate one event record. 0 or -EPROTO. */
int app_get_event(struct app_cursor *c, struct app_event_in *e);

/* A C identifier (as the registry requires). */
bool app_identifier_ok(const char *s);

#endif /* RINGTRACE_APP_PROTO_H */
