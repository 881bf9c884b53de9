/*
 * net.h - the network protocol between ringtrace's daemons, the relay
 * daemon (ringtrace-relayd) and ringtrace's own live viewers: framing,
 * the encoding of every message, the per-relay secret and the mutual
 * challenge-response that opens every connection. One place for all of
 * it: the consumer's network sink (src/consumer), the relay (src/relay)
 * and the viewers include this header; it includes only src/common and
 * src/proto (for the run directory).
 *
 * Framing (network byte order, docs/relay.md):
 *    0  u32  magic RNET_MAGIC ("RTN1")
 *    4  u16  type (enum rnet_type)
 *    6  u16  flags, 0
 *    8  u32  payload length (at most the type's limit, rnet_type_max)
 *   12  payload
 * Payload fields are u16/u32/u64 in network byte order, byte strings as
 * fixed arrays, text as a u16 length then that many bytes (no NUL; a NUL
 * inside is refused). The decoders (rnet_frame_decode, struct rnet_rd)
 * are pure functions over a buffer: they never read past it and report
 * any malformed input, so they can be fuzzed alone.
 *
 * Handshake (every connection, any port), key K = the relay's secret:
 *   C -> R  HELLO      version u32, role u32, nonce_c[32], host text
 *   R -> C  CHALLENGE  nonce_r[32], mac_r[32]
 *   C -> R  AUTH       mac_c[32]
 *   R -> C  AUTH_OK    (or AUTH_FAIL, then the relay closes)
 * mac_X = HMAC-SHA256(K, "ringtrace-relay-1" | X | role | host | nonce_c |
 * nonce_r), X the byte 'R' or 'C' (so that neither side's answer can be
 * reflected as the other's). Both nonces are fresh random bytes of each
 * connection: a recorded AUTH does not answer another connection's
 * nonce_r (replay), a recorded CHALLENGE does not answer another
 * nonce_c (a fake relay). The client checks mac_r before it sends
 * anything that depends on the secret. MACs are compared in constant
 * time. The host name is authenticated with the role: it is the one
 * directory the connection may write under.
 *
 * Concurrency: no shared state; any thread. Errors are negative errno.
 */
#ifndef RINGTRACE_NET_H
#define RINGTRACE_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RNET_MAGIC 0x52544e31u		/* "RTN1" */
#define RNET_VERSION 1u
#define RNET_HEADER_SIZE 12u
#define RNET_NONCE_SIZE 32u
#define RNET_MAC_SIZE 32u
#define RNET_SECRET_SIZE 32u
#define RNET_HOST_MAX 63u		/* a host name's bytes */
#define RNET_NAME_MAX 63u		/* session and channel names */
#define RNET_PATH_MAX 255u		/* a trace's path in its session */
#define RNET_MSG_MAX 255u		/* an error message */
#define RNET_PACKET_MAX (64u << 20)	/* a CTF packet's bytes */
#define RNET_METADATA_MAX (4u << 20)	/* one METADATA frame's bytes */

/* Default ports (LTTng's). */
#define RNET_CTRL_PORT 5342
#define RNET_DATA_PORT 5343
#define RNET_LIVE_PORT 5344

enum rnet_role {
	RNET_ROLE_CTRL = 1,		/* a daemon's control connection */
	RNET_ROLE_DATA = 2,		/* a daemon's data connection */
	RNET_ROLE_VIEWER = 3,		/* ringtrace's live viewer */
};

enum rnet_type {
	/* handshake */
	RNET_HELLO = 1,
	RNET_CHALLENGE = 2,
	RNET_AUTH = 3,
	RNET_AUTH_OK = 4,
	RNET_AUTH_FAIL = 5,
	/* control connection, daemon -> relay; each answered by REPLY
	 * unless said otherwise */
	RNET_CREATE_SESSION = 16,
	RNET_ADD_STREAM = 17,
	RNET_METADATA = 18,		/* no reply */
	RNET_CLOSE_STREAM = 19,		/* no reply */
	RNET_CLOSE_SESSION = 20,
	RNET_CLOCK = 21,		/* NTP-style exchange, CLOCK_REPLY */
	/* Cluster requests (docs/relay.md), on control connections:
	 * CLUSTER_LISTEN: u64 session id, a connected session of this
	 * host; REPLY, then the connection carries only that session's
	 * CLUSTER_SNAPSHOT (relay -> daemon) and CLUSTER_DONE (daemon ->
	 * relay, no reply). CLUSTER_TRIGGER: u64 session id (one this
	 * connection created), u64 the firing time on the relay's clock
	 * (ns since the epoch), u64 the sender's sequence number (greater
	 * than its last); REPLY: value the request's id, value2 the hosts
	 * asked; -EBUSY past the rate limit. */
	RNET_CLUSTER_LISTEN = 22,
	RNET_CLUSTER_TRIGGER = 23,
	RNET_ARCHIVE_CHUNK = 30,	/* u64 session, str chunk, str name:
					 * the ended trace chunk moved to
					 * archives/NAME; REPLY (its message:
					 * the archive's path in the relay's
					 * output) */
	/* status u32 (0 or a negative errno), value u64, value2 u64,
	 * message text; AUTH_FAIL has the same fields */
	RNET_REPLY = 24,
	RNET_CLOCK_REPLY = 25,
	RNET_CLUSTER_SNAPSHOT = 26,	/* struct rnet_cluster_req */
	RNET_CLUSTER_DONE = 27,		/* u64 request id, u32 status (0 or a
					 * negative errno), message text */
	/* data connection, daemon -> relay */
	RNET_DATA_ATTACH = 32,		/* answered by REPLY */
	RNET_PACKET = 33,		/* no reply */
	RNET_BEACON = 34,		/* no reply: u64 stream id, u64 clock
					 * value T, u64 CTF stream class: the
					 * stream has no event before T but in
					 * packets sent (an idle stream of a
					 * live session, each live period), so
					 * live viewers need not wait for it */
	RNET_DATA_SYNC = 35,		/* REPLY once every packet before it is
					 * stored */
	RNET_TYPE_LAST = 63,
};

/* The most payload bytes a frame of `type` may announce (0: unknown type). */
uint32_t rnet_type_max(uint16_t type);

struct rnet_hdr {
	uint16_t type;
	uint16_t flags;
	uint32_t length;
};

/* Decode a frame header from buf[0 .. RNET_HEADER_SIZE). Returns 0,
 * -EPROTO (bad magic or flags), -EBADMSG (unknown type), -EMSGSIZE
 * (longer than the type allows). */
int rnet_frame_decode(const void *buf, size_t len, struct rnet_hdr *h);
void rnet_frame_encode(void *buf, uint16_t type, uint32_t length);

/* ---- payload encoding ---- */

/* A growing payload; err sticky (-ENOMEM, -E2BIG past 1 << 30). */
struct rnet_wr {
	uint8_t *p;
	size_t len, cap;
	int err;
};
void rnet_put_u16(struct rnet_wr *w, uint16_t v);
void rnet_put_u32(struct rnet_wr *w, uint32_t v);
void rnet_put_u64(struct rnet_wr *w, uint64_t v);
void rnet_put_bytes(struct rnet_wr *w, const void *p, size_t n);
/* Text of at most 65535 bytes (longer: err -ENAMETOOLONG). */
void rnet_put_str(struct rnet_wr *w, const char *s);
void rnet_wr_free(struct rnet_wr *w);

/* A payload being read: err becomes -EBADMSG at the first field that
 * does not fit, is malformed, or (rnet_rd_end) when bytes are left. */
struct rnet_rd {
	const uint8_t *p;
	size_t len, off;
	int err;
};
uint16_t rnet_get_u16(struct rnet_rd *r);
uint32_t rnet_get_u32(struct rnet_rd *r);
uint64_t rnet_get_u64(struct rnet_rd *r);
void rnet_get_bytes(struct rnet_rd *r, void *out, size_t n);
/* Text of at most `max` bytes, without NUL, into out[max + 1]
 * (NUL-terminated). */
void rnet_get_str(struct rnet_rd *r, char *out, size_t max);
/* A pointer to the next n bytes (NULL when they are not there). */
const void *rnet_get_ref(struct rnet_rd *r, size_t n);
/* 0 when every byte was read and every field fit, else -EBADMSG. */
int rnet_rd_end(struct rnet_rd *r);
/* Text from a peer made safe to print on a terminal, in place: every byte
 * outside printable ASCII (0x20 to 0x7e: control bytes, escapes) becomes
 * '?'. Returns s. */
char *rnet_shown(char *s);

/* ---- cluster requests ---- */

/* What the relay asks of every host with a session named `session`
 * (RNET_CLUSTER_SNAPSHOT): a snapshot, stored as `name` (one path
 * component, "cluster-ID-YYYYMMDD-HHMMSS") in that session's directory.
 * Payload: u64 id, u64 fired_ns, text session, text origin, text name. */
struct rnet_cluster_req {
	uint64_t id;			/* the relay's, from 1 */
	uint64_t fired_ns;		/* the trigger's firing, relay's clock */
	char session[RNET_NAME_MAX + 1];
	char origin[RNET_HOST_MAX + 1];	/* the host whose trigger fired */
	char name[RNET_NAME_MAX + 1];
};
void rnet_cluster_req_encode(struct rnet_wr *w, const struct rnet_cluster_req *q);
/* 0, or -EBADMSG (malformed, or a name that rnet_check_name refuses). */
int rnet_cluster_req_decode(const void *p, size_t len, struct rnet_cluster_req *q);
/* A daemon's listening connection: its next request (RNET_CLUSTER_SNAPSHOT)
 * read within timeout_ms and decoded into *q. 0, or the connection's
 * error (rnet_recv's; -EBADMSG: another frame, or a malformed request):
 * the connection is then unusable. */
int rnet_cluster_recv(int fd, int timeout_ms, struct rnet_cluster_req *q);
/* Whether request q may be taken by `session`, whose connection took
 * `last_id` last: 0, -EINVAL (another session's), -EALREADY (an id not
 * above the last: replayed), with a message in err. */
int rnet_cluster_check(const struct rnet_cluster_req *q, const char *session, uint64_t last_id,
		       char *err, size_t errlen);
/* Answer request `id` (RNET_CLUSTER_DONE): status 0 or a negative errno,
 * msg (cut at RNET_MSG_MAX bytes). 0 or rnet_send's errors. */
int rnet_cluster_done(int fd, uint64_t id, int status, const char *msg, int timeout_ms);

/* ---- names that become paths ---- */

/* A host, session or channel name that may be one path component: 1 to
 * `max` bytes of [A-Za-z0-9._+-] ('+': a trace chunk's UTC offset), not
 * starting with '.' (so neither "." nor ".." nor a hidden file). 0 or
 * -EINVAL. */
int rnet_check_name(const char *s, size_t max);
/* A trace's path inside its session ("ust/uid/0/64-bit", "kernel"):
 * components checked as rnet_check_name, separated by single '/', none
 * empty, at most RNET_PATH_MAX bytes. 0 or -EINVAL. */
int rnet_check_path(const char *s);

/* ---- the secret (auth.c) ---- */

struct rnet_secret {
	uint8_t key[RNET_SECRET_SIZE];
};

/* The secret file: $RINGTRACE_RELAY_SECRET when set, else
 * RUNDIR/relay.secret (proto.h's run directory). 0 or -ENAMETOOLONG. */
int rnet_secret_path(char *buf, size_t len);
/*
 * Read the secret file: a regular file (not a symbolic link), owned by
 * us, with no permission for group or others, holding 64 hexadecimal
 * digits (and an optional newline). With `create`, a missing file is
 * created first (mode 0600, a new file linked into place: never through
 * a planted link, never half-written), in a directory that is created
 * (0700) when missing. Returns 0, or -ENOENT (missing, without create),
 * -EPERM (owner or mode), -EINVAL (content), -errno, with a message
 * naming the file in err.
 */
int rnet_secret_load(struct rnet_secret *k, bool create, char *err, size_t errlen);

/* ---- connections (sock.c) ---- */

/* Parse "HOST" or "HOST:PORT" ("[V6]:PORT" for IPv6; PORT 0 to 65535)
 * with default port `def`: host into host[hostlen], *port. 0 or
 * -EINVAL. */
int rnet_parse_hostport(const char *s, int def, char *host, size_t hostlen, int *port);
/* A relay's URL as `ringtrace create --set-url` takes it (LTTng's):
 * net://HOST[:CTRL[:DATA]] (also net4://, net6://, and [V6] for an IPv6
 * address), the ports defaulting to RNET_CTRL_PORT and RNET_DATA_PORT;
 * with `one_port` (--ctrl-url, --data-url) tcp://HOST[:PORT] or
 * net://HOST[:PORT] into *ctrl. Host into host[hostlen]. 0 or -EINVAL. */
int rnet_parse_url(const char *url, bool one_port, char *host, size_t hostlen, int *ctrl,
		   int *data);
/* Listen on addr:port (TCP, SO_REUSEADDR, close-on-exec). Returns the
 * socket or -errno (message in err). */
int rnet_listen(const char *addr, int port, char *err, size_t errlen);
/* The port a listening socket is bound to (after port 0: the one the
 * kernel chose), or -errno. */
int rnet_local_port(int fd);
/* Connect to host:port within timeout_ms; the socket is non-blocking,
 * close-on-exec, TCP_NODELAY. Returns it or -errno (message in err). */
int rnet_connect(const char *host, int port, int timeout_ms, char *err, size_t errlen);
/* Write one frame (header then payload) within timeout_ms (-1: no
 * limit) on a non-blocking socket; never SIGPIPE. 0, -ETIMEDOUT (the
 * frame may be partly sent: the stream is then unusable), -EPIPE,
 * -ECONNRESET, -errno. */
int rnet_send(int fd, uint16_t type, const void *payload, uint32_t len, int timeout_ms);
/* The same with the payload in two parts (a packet's fields then its
 * bytes). */
int rnet_send2(int fd, uint16_t type, const void *a, uint32_t alen, const void *b,
	       uint32_t blen, int timeout_ms);
/* Read one frame within timeout_ms (-1: no limit): *h and its payload
 * (malloc'ed, NULL when empty) in *payload. The payload's buffer grows as
 * its bytes arrive, from RNET_RECV_FIRST bytes, doubling: what a peer
 * announces (up to its type's limit) is never allocated before it sent
 * half of it. Returns 0, -ETIMEDOUT, -ECONNRESET (closed, also
 * mid-frame), rnet_frame_decode's errors, -ENOMEM, -errno. */
#define RNET_RECV_FIRST (64u << 10)
int rnet_recv(int fd, struct rnet_hdr *h, uint8_t **payload, int timeout_ms);
/* Raw bytes, for protocols framed otherwise (LTTng's live protocol on the
 * live port): write a[0..alen) then b[0..blen), or read exactly len
 * bytes, within timeout_ms (-1: no limit); never SIGPIPE. 0, -ETIMEDOUT,
 * -ECONNRESET (closed, also midway), -errno. */
int rnet_write_all(int fd, const void *a, size_t alen, const void *b, size_t blen,
		   int timeout_ms);
int rnet_read_all(int fd, void *buf, size_t len, int timeout_ms);

/* ---- the handshake (auth.c) ---- */

#define RNET_HANDSHAKE_MS 5000

/* This machine's name for the relay: $RINGTRACE_HOSTNAME when set, else
 * gethostname(). Checked with rnet_check_name. 0 or -EINVAL (message). */
int rnet_hostname(char *buf, size_t len, char *err, size_t errlen);

/* The client's side on a connected socket. Returns 0, -EACCES
 * ("authentication failed: ..." in err: the relay does not know our
 * secret, or refused ours), -EPROTO (not a ringtrace relay), -errno of
 * the connection. */
int rnet_client_handshake(int fd, const struct rnet_secret *k, uint32_t role,
			  const char *host, int timeout_ms, char *err, size_t errlen);
/* The relay's side: *role and host[RNET_HOST_MAX + 1] of an
 * authenticated peer. Returns 0, -EACCES (wrong MAC: AUTH_FAIL was sent),
 * -EINVAL (bad role or host name: AUTH_FAIL sent), -EPROTO, -errno. */
int rnet_server_handshake(int fd, const struct rnet_secret *k, uint32_t *role, char *host,
			  int timeout_ms, char *err, size_t errlen);

/* The MAC of one side (exposed for the tests that replay handshakes). */
void rnet_mac(const struct rnet_secret *k, char side, uint32_t role, const char *host,
	      const uint8_t *nonce_c, const uint8_t *nonce_r, uint8_t *out);

/* Wall-clock (CLOCK_REALTIME) nanoseconds. */
uint64_t rnet_realtime_ns(void);

#endif /* RINGTRACE_NET_H */
