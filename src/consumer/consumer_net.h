/*
 * consumer_net.h - the consumer's network sink: a session's traces
 * streamed to ringtrace-relayd (src/net's protocol, docs/relay.md)
 * instead of written to stream files. Linked only by the daemon
 * (rt_consumer_net): libringtrace never talks to a relay.
 *
 * One struct cons_net per session: its control and data connections,
 * authenticated with the relay's secret, and the relay's session. One
 * struct cons_net_trace per trace directory of the session (PATH on the
 * relay: "ust/uid/0/64-bit"): its metadata stream. One struct
 * cons_net_sink per channel of a trace: a struct cons_sink whose streams
 * are relay streams.
 *
 * The traced program never waits for the relay: the consumer thread
 * sends with deadlines (RNET_SEND_MS), and while the relay is away
 * (refused, reset, too slow) the consumer keeps reading the buffers and
 * counts each packet it could not send as lost, exactly as a full disk
 * does for stream files: in the trace (the next packet sent on the
 * stream is preceded by a header-only packet with the last lost
 * packet's sequence number, and every later packet's events_discarded
 * includes the lost events) and in the channel's statistics. A new
 * connection is tried at most once per RNET_RETRY_MS; once made, the
 * relay session is opened again (same name and creation time: the same
 * directory), streams are added again and the metadata is sent again
 * whole, and streaming goes on in the same files.
 *
 * Concurrency: struct cons_net has its own lock, taken by every call
 * below (the session's consumer threads share it). A cons_net_trace and
 * its sinks are used by their trace's consumer (its io_lock).
 */
#ifndef RINGTRACE_CONSUMER_NET_H
#define RINGTRACE_CONSUMER_NET_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "../net/net.h"
#include "consumer.h"

#define RNET_SEND_MS 1000
#define RNET_CONNECT_MS 2000
#define RNET_RETRY_MS 1000

struct cons_net {
	pthread_mutex_t lock;
	char relay[256];		/* host name or address */
	int ctrl_port, data_port;
	char host[RNET_HOST_MAX + 1];	/* ours (rnet_hostname) */
	char session[RNET_NAME_MAX + 1];
	uint64_t created;		/* the session's creation, Unix s */
	uint32_t live_delay_us;		/* 0: not live */
	struct rnet_secret key;
	int ctrl, data;			/* -1 while not connected */
	uint64_t relay_session;		/* its id on the relay, while connected */
	uint64_t epoch;			/* connections made so far */
	uint64_t retry_ns;		/* no new attempt before (monotonic) */
	/* The last connection's clock estimate (NTP's four timestamps):
	 * relay = ours + offset, within +- error (half the round trip). */
	int64_t clock_offset_ns;
	uint64_t clock_error_ns;
	char last_error[256];		/* why the last attempt failed */
	/* Streams whose packets in flight at a rotation the relay was not
	 * asked about yet (the relay was away): their chunk is not archived
	 * before (cons_net_archive refuses). */
	uint32_t unconfirmed;
};

/*
 * Load the secret (rnet_secret_load, not created here), find our host
 * name, and connect now: control and data connections authenticated, the
 * relay's session opened. Returns 0, or -EACCES ("authentication failed:
 * ..."), -ECONNREFUSED and others (the relay cannot be reached), -EINVAL
 * (our host name), with a message in err; then nothing is left open.
 */
int cons_net_open(struct cons_net *n, const char *relay, int ctrl_port, int data_port,
		  const char *session, uint64_t created, uint32_t live_delay_us, char *err,
		  size_t errlen);
/* Return once the relay has stored every packet sent so far (a SYNC on
 * the data connection, answered after them; at most RNET_SYNC_MS).
 * 0, -ENOTCONN, -errno (the connection is then closed). */
#define RNET_SYNC_MS 10000
int cons_net_sync(struct cons_net *n);
/* Send a complete trace directory written here (a snapshot: `local`
 * holds traces, each a directory with `metadata` and CHANNEL_CPU stream
 * files of whole packets) to the relay, as `prefix`/REL in the session
 * (prefix: one name, e.g. "snapshot-1-20261125-101500"), and return once
 * the relay has stored it. Connects again first if needed (not waiting
 * for RNET_RETRY_MS: the caller asked now). 0 or -errno with a message in
 * err. */
int cons_net_upload(struct cons_net *n, const char *local, const char *prefix, char *err,
		    size_t errlen);
/* Close the relay's session (its streams end) and the connections. */
void cons_net_close(struct cons_net *n);
/* Whether the connections are up now. */
bool cons_net_connected(struct cons_net *n);

/* ---- cluster requests (net_cluster.c, docs/relay.md) ---- */

/* A new connection that listens to this session's cluster requests
 * (RNET_CLUSTER_LISTEN): the session connected again first if it is
 * not. Returns the socket (non-blocking; the caller reads each
 * RNET_CLUSTER_SNAPSHOT from it and answers RNET_CLUSTER_DONE), or
 * -errno with a message in err. */
int cons_net_cluster_listen(struct cons_net *n, char *err, size_t errlen);
/* Ask the relay for a cluster snapshot of this session's name, fired at
 * fired_ns (our CLOCK_REALTIME, put on the relay's clock with the
 * connection's estimate). 0 with the request's *id and the *asked hosts,
 * or the relay's refusal (-EBUSY: rate limit) or -errno of the
 * connection, with a message in err. */
int cons_net_cluster_trigger(struct cons_net *n, uint64_t fired_ns, uint64_t *id,
			     uint32_t *asked, char *err, size_t errlen);

/* The network sink's own helpers, for net_cluster.c (lock held where
 * said): an authenticated connection of `role` to the control port; a
 * request answered by REPLY (0 with its values, the relay's negative
 * status, -errno of the connection; message in err); connected now
 * (lock held); the connection given up after an error (lock held). */
int cons_net_dial(struct cons_net *n, uint32_t role, char *err, size_t errlen);
int cons_net_request(int fd, uint16_t type, const struct rnet_wr *w, uint64_t *value,
		     uint64_t *value2, char *err, size_t errlen);
int cons_net_connect_locked(struct cons_net *n, char *err, size_t errlen);
void cons_net_disconnect_locked(struct cons_net *n);

struct cons_net_sink;
struct cons_net_trace {
	struct cons_net *net;
	char path[RNET_PATH_MAX + 1];
	uint64_t meta_id, meta_epoch;	/* the metadata stream, of that epoch */
	struct cons_metadata_state meta;	/* what the relay has, this epoch */
	uint64_t meta_bytes;
	/* Its channels' sinks (cons_net_sink_init adds, _free removes):
	 * their streams are added to the relay before the metadata stream,
	 * which the relay's live port takes for "the trace's streams are
	 * all there" (LTTng's relay publishes them together): a live viewer
	 * never learns of one stream of a trace long after the others, and
	 * so never gets events older than those it already showed. */
	struct cons_net_sink **sinks;
	size_t nr_sinks, cap_sinks;
	/* cons_net_trace_open's: the local directory whose relay path is
	 * "" (a session's output), so that a rotation's next chunk (the
	 * sink's rotate) maps to its path on the relay. "": none. */
	char root[320];
	bool chunk_stored;	/* the last rotation found the chunk stored */
	char ended[RNET_PATH_MAX + 1];	/* the path before the last rotation */
};
/* path: the trace's directory in its session (checked: rnet_check_path).
 * 0 or -EINVAL. */
int cons_net_trace_init(struct cons_net_trace *nt, struct cons_net *n, const char *path);
/* The relay path of the local trace directory `dir` under `root`: dir
 * past root and a '/', every byte a relay refuses in a name made '_' (a
 * program's name in a per-pid directory may hold any). 0, -EINVAL (not
 * under root, or not a path the relay takes), -ENAMETOOLONG. */
int cons_net_relay_path(const char *root, const char *dir, char *out, size_t len);
/* cons_net_trace_init with the relay path of `dir` under `root`, which
 * the trace keeps for its rotations. Same errors. */
int cons_net_trace_open(struct cons_net_trace *nt, struct cons_net *n, const char *root,
			const char *dir);
/* Session rotation: move the ended chunk `chunk` (its directory's name
 * in the relay's session, "" for the first chunk) to archives/`name`
 * there (RNET_ARCHIVE_CHUNK), once every trace of the session rotated
 * (their sinks' rotate waited until the relay stored the chunk). Connects
 * again first if needed. 0 and the archive's path in the relay's output
 * in `where`, or -errno with a message in err (-EAGAIN: packets in flight
 * when the relay went away at a rotation are not confirmed yet; the
 * chunk stays where it is). */
int cons_net_archive(struct cons_net *n, const char *chunk, const char *name, char *where,
		     size_t wlen, char *err, size_t errlen);
/* The metadata before a packet (consumer.h's cons_metadata_fn):
 * connected (or connecting again, at most once per RNET_RETRY_MS), the
 * streams of the trace's sinks then its metadata stream added, and what
 * the relay does not have of the metadata sent. 0, or -ENOTCONN /
 * -errno of the connection. */
int cons_net_metadata(struct cons_net_trace *nt, const struct cons_trace_desc *t,
		      const struct cons_channel_desc *const *chans, size_t nr);

struct cons_net_stream {
	uint64_t id, epoch;		/* on the relay, added in that epoch */
	uint64_t lost_events;		/* of packets not sent (cumulative) */
	uint64_t lost_packets;
	/* Of those, sent but found not stored by the relay at the next
	 * connection (the consumer counted them written): relaxed atomic,
	 * read by cons_net_sink_unstored from any thread. */
	uint64_t unstored_events;
	bool tomb;			/* a header-only packet is due */
	struct ctf_packet_header tomb_hdr;
	/* The relay path of the ended chunk whose packets in flight (the
	 * stream's ring) the relay has not confirmed yet: a rotation found
	 * the relay away. At the next connection the stream is added again
	 * there, what the relay lacks counted lost (in that chunk: a
	 * header-only packet ends its stream, events_discarded raised by
	 * them), and it is closed. "": none. */
	char unconfirmed[RNET_PATH_MAX + 1];
	/* At that rotation: the newest packet's header (sent or lost; its
	 * own events_discarded) and lost_events. */
	struct ctf_packet_header ended_hdr;
	uint64_t ended_lost;
};
struct cons_net_sink {
	struct cons_net_trace *nt;
	const struct cons_channel_desc *ch;
	uint32_t nr;
	struct cons_net_stream *s;	/* [nr] */
};
/* The sink of channel ch's nr streams in trace nt (which keeps a
 * pointer to ns until cons_net_sink_free). 0 or -ENOMEM. */
int cons_net_sink_init(struct cons_net_sink *ns, struct cons_net_trace *nt,
		       const struct cons_channel_desc *ch, uint32_t nr);
void cons_net_sink_free(struct cons_net_sink *ns);
void cons_net_sink(struct cons_sink *s, struct cons_net_sink *ns);
/* Tell the relay that `stream` has no event before clock value `ts`
 * but in the packets sent (RNET_BEACON, with the channel's CTF stream
 * class: a live session's idle stream).
 * Connected and the stream added first, like a packet; nothing is sent
 * while the relay is away. 0, -ENOTCONN, -errno of the connection. */
int cons_net_sink_beacon(struct cons_net_sink *ns, uint32_t stream, uint64_t ts);
/* Events of packets that were sent but that the relay did not store (it
 * went away with them): lost, and not in the consumer's count of
 * unwritten events. Any thread. */
uint64_t cons_net_sink_unstored(const struct cons_net_sink *ns);

#endif /* RINGTRACE_CONSUMER_NET_H */
