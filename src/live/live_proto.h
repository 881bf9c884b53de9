/*
 * live_proto.h - the LTTng live (viewer) protocol's frames: LTTng's relay
 * daemon serves traces being recorded to viewers (babeltrace2's lttng-live
 * source, `ringtrace view --live`) over TCP, port 5344 by default.
 *
 * A viewer sends a command header, then the command's payload; the relay
 * answers each command with one reply (some followed by a list or by
 * data) or closes the connection. Every integer is big-endian, every
 * structure packed; strings are fixed-size NUL-padded fields. Protocol
 * version 2.4 (babeltrace2 speaks it; newer relays answer in the older
 * version when asked so).
 *
 * Layouts, byte by byte (offset size field):
 *   command header (16)   0 8 data_size (payload bytes that follow)
 *                         8 4 cmd (LV_CMD_*)   12 4 cmd_version (0)
 *   CONNECT (20, both ways)  0 8 viewer_session_id   8 4 major
 *                         12 4 minor   16 4 type (1: command connection)
 *   LIST_SESSIONS reply   0 4 count, then count x session (339):
 *                         0 8 id   8 4 live_timer (us)   12 4 clients
 *                         16 4 streams   20 64 hostname   84 255 name
 *   CREATE_SESSION reply  0 4 status (1 OK, 2 ERR)
 *   ATTACH_SESSION (20)   0 8 session_id   8 8 offset (0)   16 4 seek
 *                         (1 beginning, 2 last)
 *   ATTACH / GET_NEW_STREAMS reply   0 4 status   4 4 count, then
 *                         count x stream (4371): 0 8 id   8 8 ctf_trace_id
 *                         16 4 metadata_flag   20 4096 path_name
 *                         4116 255 channel_name
 *   GET_NEXT_INDEX (8), GET_METADATA (8), GET_NEW_STREAMS (8),
 *   DETACH_SESSION (8)    0 8 stream id or session id
 *   GET_NEXT_INDEX reply (64)   0 8 offset   8 8 packet_size (bits)
 *                         16 8 content_size (bits)   24 8 timestamp_begin
 *                         32 8 timestamp_end   40 8 events_discarded
 *                         48 8 stream_id (class)   56 4 status   60 4 flags
 *   GET_PACKET (20)       0 8 stream id   8 8 offset   16 4 len (bytes)
 *   GET_PACKET reply (12) 0 4 status   4 4 len   8 4 flags, then len bytes
 *   GET_METADATA reply (12)   0 8 len   8 4 status, then len bytes
 *   DETACH_SESSION reply  0 4 status
 *
 * Every decoder takes the bytes received and their count and checks the
 * count; strings are copied NUL-terminated with control characters
 * replaced by '?'. Pure functions over the caller's buffers (no I/O, no
 * allocation): callable from any thread, and the fuzzing harnesses'
 * entry points.
 */
#ifndef RINGTRACE_LIVE_PROTO_H
#define RINGTRACE_LIVE_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define LV_DEFAULT_PORT 5344
#define LV_MAJOR 2
#define LV_MINOR 4

enum lv_cmd {
	LV_CMD_CONNECT = 1,
	LV_CMD_LIST_SESSIONS = 2,
	LV_CMD_ATTACH_SESSION = 3,
	LV_CMD_GET_NEXT_INDEX = 4,
	LV_CMD_GET_PACKET = 5,
	LV_CMD_GET_METADATA = 6,
	LV_CMD_GET_NEW_STREAMS = 7,
	LV_CMD_CREATE_SESSION = 8,
	LV_CMD_DETACH_SESSION = 9,
};

#define LV_CLIENT_COMMAND 1
#define LV_SEEK_BEGINNING 1
#define LV_SEEK_LAST 2

/* Flags of index and packet replies. */
#define LV_FLAG_NEW_METADATA 1u
#define LV_FLAG_NEW_STREAM 2u

enum { LV_ATTACH_OK = 1, LV_ATTACH_ALREADY, LV_ATTACH_UNK, LV_ATTACH_NOT_LIVE,
       LV_ATTACH_SEEK_ERR, LV_ATTACH_NO_SESSION };
enum { LV_INDEX_OK = 1, LV_INDEX_RETRY, LV_INDEX_HUP, LV_INDEX_ERR, LV_INDEX_INACTIVE,
       LV_INDEX_EOF };
enum { LV_PACKET_OK = 1, LV_PACKET_RETRY, LV_PACKET_ERR, LV_PACKET_EOF };
enum { LV_METADATA_OK = 1, LV_METADATA_NO_NEW, LV_METADATA_ERR };
enum { LV_NEW_STREAMS_OK = 1, LV_NEW_STREAMS_NO_NEW, LV_NEW_STREAMS_ERR,
       LV_NEW_STREAMS_HUP };
enum { LV_CREATE_OK = 1, LV_CREATE_ERR };
enum { LV_DETACH_OK = 1, LV_DETACH_UNK, LV_DETACH_ERR };

#define LV_HDR_SIZE 16
#define LV_CONNECT_SIZE 20
#define LV_SESSION_SIZE 339
#define LV_STREAM_SIZE 4371
#define LV_ATTACH_SIZE 20
#define LV_ID_SIZE 8
#define LV_INDEX_SIZE 64
#define LV_GET_PACKET_SIZE 20
#define LV_PACKET_REPLY_SIZE 12
#define LV_METADATA_REPLY_SIZE 12
#define LV_STATUS_SIZE 4
#define LV_STREAMS_REPLY_SIZE 8

#define LV_HOST_MAX 64
#define LV_NAME_MAX 255
#define LV_PATH_MAX 4096

struct lv_hdr {
	uint64_t data_size;
	uint32_t cmd, version;
};

struct lv_connect {
	uint64_t viewer_session_id;
	uint32_t major, minor, type;
};

struct lv_session {
	uint64_t id;
	uint32_t live_timer, clients, streams;
	char hostname[LV_HOST_MAX + 1];
	char name[LV_NAME_MAX + 1];
};

struct lv_attach {
	uint64_t session_id, offset;
	uint32_t seek;
};

struct lv_stream {
	uint64_t id, ctf_trace_id;
	uint32_t metadata_flag;
	char path[LV_PATH_MAX + 1];
	char channel[LV_NAME_MAX + 1];
};

struct lv_index {
	uint64_t offset, packet_size, content_size, ts_begin, ts_end, discarded, stream_class;
	uint32_t status, flags;
};

struct lv_get_packet {
	uint64_t stream_id, offset;
	uint32_t len;
};

/* GET_PACKET reply: status, len, flags; GET_METADATA reply: len, status
 * (flags 0); ATTACH / GET_NEW_STREAMS reply: status, count in len. */
struct lv_reply {
	uint64_t len;
	uint32_t status, flags;
};

/* Encoders write the fixed layout at buf (room for its size) and return
 * the size written. Decoders return 0, or -EINVAL when `len` is not the
 * layout's size. */
size_t lv_put_hdr(uint8_t *buf, const struct lv_hdr *h);
int lv_get_hdr(const uint8_t *buf, size_t len, struct lv_hdr *h);
size_t lv_put_connect(uint8_t *buf, const struct lv_connect *c);
int lv_get_connect(const uint8_t *buf, size_t len, struct lv_connect *c);
size_t lv_put_session(uint8_t *buf, const struct lv_session *s);
int lv_get_session(const uint8_t *buf, size_t len, struct lv_session *s);
size_t lv_put_attach(uint8_t *buf, const struct lv_attach *a);
int lv_get_attach(const uint8_t *buf, size_t len, struct lv_attach *a);
size_t lv_put_stream(uint8_t *buf, const struct lv_stream *s);
int lv_get_stream(const uint8_t *buf, size_t len, struct lv_stream *s);
size_t lv_put_index(uint8_t *buf, const struct lv_index *x);
int lv_get_index(const uint8_t *buf, size_t len, struct lv_index *x);
size_t lv_put_get_packet(uint8_t *buf, const struct lv_get_packet *g);
int lv_get_get_packet(const uint8_t *buf, size_t len, struct lv_get_packet *g);
/* 8-byte id payloads and 4-byte status replies. */
size_t lv_put_u64(uint8_t *buf, uint64_t v);
int lv_get_u64(const uint8_t *buf, size_t len, uint64_t *v);
size_t lv_put_u32(uint8_t *buf, uint32_t v);
int lv_get_u32(const uint8_t *buf, size_t len, uint32_t *v);
/* The three reply heads (struct lv_reply). */
size_t lv_put_packet_reply(uint8_t *buf, const struct lv_reply *r);
int lv_get_packet_reply(const uint8_t *buf, size_t len, struct lv_reply *r);
size_t lv_put_metadata_reply(uint8_t *buf, const struct lv_reply *r);
int lv_get_metadata_reply(const uint8_t *buf, size_t len, struct lv_reply *r);
size_t lv_put_streams_reply(uint8_t *buf, const struct lv_reply *r);
int lv_get_streams_reply(const uint8_t *buf, size_t len, struct lv_reply *r);

/* A viewer URL: net[4]://HOST[:PORT][/host/TARGET_HOST/SESSION]. HOST is
 * a name or an IPv4 address, or [IPv6] with net6://. */
struct lv_url {
	char host[256];
	uint16_t port;		/* LV_DEFAULT_PORT when not given */
	int family;		/* AF_INET, AF_INET6 or AF_UNSPEC (net://) */
	char target[LV_HOST_MAX + 1];	/* "" when no session named */
	char session[LV_NAME_MAX + 1];
};

/* 0, or -EINVAL with what is wrong in err. */
int lv_url_parse(const char *s, struct lv_url *u, char *err, size_t errlen);

#endif /* RINGTRACE_LIVE_PROTO_H */
