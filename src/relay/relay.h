/*
 * relay.h - ringtrace-relayd: receives the traces that session daemons
 * stream over the network (src/net's protocol), stores them as
 * lttng-relayd does, and keeps for each stream what a live server needs
 * to serve it (LTTng's live protocol, live_*.c): its packets and one
 * index entry per packet.
 *
 * Storage (docs/relay.md): OUTPUT/HOST/SESSION-YYYYMMDD-HHMMSS/PATH/ with
 *   PATH/metadata                    the trace's TSDL, as sent
 *   PATH/CHANNEL_CPU                 a stream's packets, whole, in order
 *   PATH/index/CHANNEL_CPU.idx       LTTng's CTF index (v1.1, big-endian):
 *       header  0 u32 magic 0xC1F1DCC1, 4 u32 major 1, 8 u32 minor 1,
 *              12 u32 entry size 72
 *       entry   0 offset (bytes), 8 packet_size (bits), 16 content_size
 *              (bits), 24 timestamp_begin, 32 timestamp_end, 40
 *              events_discarded, 48 stream_id (CTF stream class), 56
 *              stream_instance_id, 64 packet_seq_num, each u64
 * PATH is the trace's path in its session as the daemon has it
 * ("ust/uid/0/64-bit", "kernel"); HOST is the name the connection
 * authenticated with (net.h): a daemon writes only under its own host's
 * directory. Every name from the network is checked (rnet_check_name,
 * rnet_check_path) before it becomes a path, and directories and files
 * are created with fs_util.h's rules (no planted link followed). A
 * session that reconnects (the daemon lost the relay, or the relay
 * restarted) finds its directory by (host, name, creation time) and its
 * streams by (path, channel, cpu): packets are appended to the same
 * files, and the index is read back (a file longer than its index, cut
 * mid-packet by a crash, is cut back to the last indexed packet).
 *
 * The table: every session and stream since the relay started, kept
 * until it exits (never freed while it runs, so that a pointer taken
 * under relay_lock stays valid; their number is bounded by
 * RELAY_SESSIONS_MAX and RELAY_STREAMS_MAX).
 *
 * Concurrency contract:
 *  - relay_lock guards the lists (relay_sessions, each session's
 *    streams) and the session fields marked [L]; take it to walk them or
 *    to find by id. Never hold it while waiting for a socket.
 *  - Each stream's `lock` guards the fields marked [S]: its files, its
 *    size and its index. Lock order: relay_lock, then a stream's lock.
 *  - Immutable once the entry is in its list: fields without a mark.
 *  - Packet bytes are written to the stream file before their index
 *    entry is published (both under the stream's lock), so whoever sees
 *    entry N (relay_stream_index) can read its bytes (relay_stream_read)
 *    without the lock: a stream file only grows.
 *  - Each connection has its own thread (control, data, and live
 *    viewers); a control connection owns its sessions (connected).
 *
 * Errors: negative errno.
 */
#ifndef RINGTRACE_RELAY_H
#define RINGTRACE_RELAY_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../net/net.h"

#define RELAY_SESSIONS_MAX 4096u
#define RELAY_STREAMS_MAX 65536u	/* all sessions together */
#define RELAY_CONNS_MAX 512u		/* connections served at once */
#define RELAY_METADATA_FILE_MAX (256u << 20)	/* one trace's metadata file */

/* One packet of a stream, as the CTF index holds it (host byte order). */
struct relay_index {
	uint64_t offset;		/* in the stream file, bytes */
	uint64_t packet_size;		/* bits */
	uint64_t content_size;		/* bits */
	uint64_t ts_begin, ts_end;	/* the packet's clock values */
	uint64_t events_discarded;	/* cumulative, as the packet says */
	uint64_t stream_id;		/* CTF stream class */
	uint64_t stream_instance_id;
	uint64_t packet_seq_num;
};
#define RELAY_INDEX_MAGIC 0xC1F1DCC1u
#define RELAY_INDEX_HEADER_SIZE 16u
#define RELAY_INDEX_ENTRY_SIZE 72u

struct relay_session;

struct relay_stream {
	uint64_t id;			/* relay-wide, from 1, never reused */
	struct relay_session *session;
	char path[RNET_PATH_MAX + 1];	/* the trace's path in its session */
	char channel[RNET_NAME_MAX + 1];	/* "channel0"; "metadata" */
	uint32_t cpu;
	bool metadata;			/* the trace's metadata: bytes, no index */
	uint64_t trace_id;		/* the same for the streams of one PATH */

	pthread_mutex_t lock;
	int data_fd;			/* [S] the stream file (or metadata) */
	int index_fd;			/* [S] -1 for metadata */
	uint64_t size;			/* [S] bytes of whole packets (metadata:
					 * bytes) */
	struct relay_index *index;	/* [S] nr_index entries */
	uint64_t nr_index, cap_index;	/* [S] */
	bool closed;			/* [S] the sender closed it, or the
					 * session ended */
	uint64_t packets_lost;		/* [S] packet_seq_num gaps seen */
	uint64_t beacon;		/* [S] the last RNET_BEACON's clock value
					 * (no event before it but in packets
					 * indexed), 0: none */
	uint64_t beacon_class;		/* [S] and its CTF stream class */
	struct relay_stream *next;	/* [L] in its session, creation order */
};

struct relay_session {
	uint64_t id;			/* relay-wide, from 1, never reused */
	char host[RNET_HOST_MAX + 1];
	char name[RNET_NAME_MAX + 1];
	uint64_t created;		/* the daemon's creation time, Unix s */
	char dir[PATH_MAX];		/* OUTPUT/HOST/NAME-YYYYMMDD-HHMMSS */
	uint32_t live_delay_us;		/* [L] 0: not a live session */
	bool snapshot;			/* [L] a snapshot session */
	bool connected;			/* [L] a control connection has it */
	uint64_t nr_streams;		/* [L] */
	uint64_t generation;		/* [L] +1 per stream added or closed */
	uint32_t live_viewers;		/* [L] live viewers attached to it */
	/* The sender's clock against the relay's (CLOCK exchanges):
	 * relay = sender + offset, within +- error. error 0: unknown. */
	int64_t clock_offset_ns;	/* [L] */
	uint64_t clock_error_ns;	/* [L] */
	struct relay_stream *streams;	/* [L] */
	struct relay_session *next;	/* [L] creation order */
};

extern pthread_mutex_t relay_lock;
extern struct relay_session *relay_sessions;

/* The relay's settings (main.c), constant once serving. */
struct relay_config {
	char output[PATH_MAX];		/* -o; default ~/ringtrace-traces */
	/* Where each port listens: --listen ADDR for all three (default
	 * 127.0.0.1), or -C/-D/-L tcp://ADDR:PORT for one. */
	char ctrl_addr[256], data_addr[256], live_addr[256];
	int ctrl_port, data_port, live_port;	/* 5342, 5343, 5344 */
	struct rnet_secret secret;		/* RINGTRACE_RELAY_SECRET's */
	/* The live port serves LTTng's viewers, which know no secret: it
	 * listens on loopback, or --live-open said so. */
	bool live_plain;
};
extern struct relay_config relay_cfg;

/* ---- the table (store.c) ---- */

/* The session (host, name, created): found, or made with its directory
 * (created when missing). `live_delay_us` and `snapshot` are set from the
 * request. Caller holds no lock. Returns 0 and *out, or -EINVAL (a bad
 * name), -ENOSPC (RELAY_SESSIONS_MAX), -errno of the directory, with a
 * message in err. */
int relay_session_open(const char *host, const char *name, uint64_t created,
		       uint32_t live_delay_us, bool snapshot, struct relay_session **out,
		       char *err, size_t errlen);
/* The session's control connection went away (or closed it): its
 * streams are closed (live viewers see them end). */
void relay_session_end(struct relay_session *s);
/* The stream (path, channel, cpu) of session s: found (reopened when it
 * was closed) or made with its files. Returns 0 and *out, or -EINVAL,
 * -ENOSPC, -errno, with a message in err. */
int relay_stream_open(struct relay_session *s, const char *path, const char *channel,
		      uint32_t cpu, bool metadata, struct relay_stream **out, char *err,
		      size_t errlen);
/* Free every session and stream, closing their files (not their
 * directories); ids start again from 1. Only when no connection is
 * served (the fuzzing harnesses reset the table between inputs). */
void relay_table_free(void);
/* Find by id (relay_lock held). NULL when there is none. */
struct relay_session *relay_session_find(uint64_t id);
struct relay_stream *relay_stream_find(uint64_t id);

/* Append one packet (`len` bytes whose index entry is *ix; ix->offset is
 * set here) to a data stream. Returns 0, -EINVAL (no bytes, or sizes
 * that do not match len), -errno of the writes (nothing of it stays in
 * the files). */
int relay_stream_append(struct relay_stream *st, struct relay_index *ix, const void *data,
			uint64_t len);
/* Write metadata bytes at `offset` of a metadata stream (a resend after a
 * reconnect rewrites what is there): at most at its end (no hole: a
 * sender cannot make a sparse file of any size), the file at most
 * RELAY_METADATA_FILE_MAX bytes. 0, -EINVAL (not a metadata stream, an
 * offset past the end), -EFBIG, -errno of the write. */
int relay_metadata_write(struct relay_stream *st, uint64_t offset, const void *data,
			 uint64_t len);
void relay_stream_close(struct relay_stream *st);
/* Session rotation (RNET_ARCHIVE_CHUNK): move the ended trace chunk
 * `chunk` of s (a directory in s->dir; "" for the first chunk, s->dir's
 * own ust/ and kernel/) to s->dir/archives/`name`, as lttng-relayd lays
 * out a rotated session. Both names are checked (rnet_check_name). 0,
 * -EINVAL, -errno of the moves, with a message in err. */
int relay_chunk_archive(struct relay_session *s, const char *chunk, const char *name,
			char *err, size_t errlen);

/* ---- reading (for live_*.c) ---- */

/* Entry n of the stream's index: 0, -EAGAIN (not there yet), -ENODATA
 * (not there and the stream is closed). Takes the stream's lock. */
int relay_stream_index(struct relay_stream *st, uint64_t n, struct relay_index *out);
/* The stream's bytes now (metadata: its length). Takes the lock. */
uint64_t relay_stream_size(struct relay_stream *st);
/* Read len bytes at off of the stream file (bytes an index entry or
 * relay_stream_size announced). Returns the bytes read or -errno. */
ssize_t relay_stream_read(struct relay_stream *st, uint64_t off, void *buf, size_t len);

/* ---- connections (conn_ctrl.c, conn_data.c) ---- */

/* Serve one connection that passed the handshake, on its own thread,
 * until it closes: role RNET_ROLE_CTRL or RNET_ROLE_DATA, `host` the
 * name it authenticated with. */
void relay_serve_ctrl(int fd, const char *host);
void relay_serve_data(int fd, const char *host);
/* A live port connection (live_server.c): LTTng's live protocol, after
 * ringtrace's handshake (role RNET_ROLE_VIEWER) or, when
 * relay_cfg.live_plain, without. Returns when it closes. */
void relay_serve_live(int fd);

/* ---- cluster requests (cluster.c, docs/relay.md) ---- */

#define RELAY_CLUSTER_REQS 64u		/* requests remembered for answers */
#define RELAY_CLUSTER_HOSTS 64u		/* hosts asked by one request */
#define RELAY_CLUSTER_MIN_MS 1000u	/* between two requests of a session
					 * name, and before a remembered one
					 * is forgotten */
/* Serve a control connection that asked (RNET_CLUSTER_LISTEN) for the
 * cluster requests of session s (one of its host, checked by the
 * caller) until it closes: it is sent the requests of every session
 * named as s is, and answers each with RNET_CLUSTER_DONE. Returns why it
 * ended (negative errno). */
int relay_cluster_listen(int fd, const char *host, const struct relay_session *s);
/* A trigger of host `origin`, in its session s, fired at fired_ns (the
 * relay's clock): every connection listening to a session named as s is
 * asked for a snapshot (the origin's included); the relay logs each
 * request and, once every host asked answered, how long after the
 * trigger each snapshot was stored. Returns 0 with the request's *id and
 * the hosts *asked, or -EBUSY (RELAY_CLUSTER_MIN_MS), -ENOMEM, with a
 * message in err. */
int relay_cluster_request(const char *origin, const struct relay_session *s, uint64_t fired_ns,
			  uint64_t *id, uint32_t *asked, char *err, size_t errlen);

/* Log one line to stderr with the time and "ringtrace-relayd: ". */
void relay_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* RINGTRACE_RELAY_H */
