/*
 * proto.h - the wire format between ringtraced, the `ringtrace` command
 * and traced programs (libringtrace): length-prefixed, versioned frames on
 * a Unix stream socket, with file descriptors passed alongside
 * (SCM_RIGHTS), plus the key=value payload of control requests and the
 * socket's location.
 *
 * Frame header (16 bytes, host byte order: both ends are on one machine):
 *    0  u32  magic RTP_MAGIC ("RTP1" in memory order)
 *    4  u16  version RTP_VERSION
 *    6  u16  type (enum rtp_type)
 *    8  u32  payload length in bytes (at most RTP_MAX_PAYLOAD)
 *   12  i32  status: 0 in requests; 0 or a negative errno in replies
 * followed by `length` bytes of payload.
 *
 * Control payload (types RTP_CTL_*): a sequence of NUL-terminated
 * "key=value" entries; keys are 1-63 characters of [a-z0-9_-]; a key may
 * repeat (lists keep their order). A request carries "cmd=NAME" first.
 * Every reply to a failed request carries "error=MESSAGE".
 *
 * App payloads (types RTP_APP_*) are binary and described in app_proto.h.
 *
 * Concurrency: every function here works on its arguments only; one
 * thread per socket at a time.
 *
 * Untrusted input: rtp_recv checks the magic, version, type range and
 * length before reading the payload, and closes surplus descriptors;
 * rtp_kv_validate checks a control payload before any rtp_kv_* lookup.
 */
#ifndef RINGTRACE_PROTO_H
#define RINGTRACE_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RTP_MAGIC 0x31505452u	/* "RTP1" */
#define RTP_VERSION 1
#define RTP_HEADER_SIZE 16
#define RTP_MAX_PAYLOAD (4u << 20)
#define RTP_MAX_FDS 64
#define RTP_KEY_MAX 63

enum rtp_type {
	/* the command <-> the daemon */
	RTP_CTL_REQUEST = 1,
	RTP_CTL_REPLY = 2,
	/* the daemon -> a subscriber of `ringtrace notifications`: a fired
	 * trigger, key=value entries (docs/triggers.md) */
	RTP_CTL_NOTIFICATION = 3,
	/* traced programs <-> the daemon: 16..63, see app_proto.h */
	RTP_APP_FIRST = 16,
	RTP_APP_LAST = 63,
};

struct rtp_header {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t length;
	int32_t status;
};
_Static_assert(sizeof(struct rtp_header) == RTP_HEADER_SIZE, "frame header");

/* A received frame. `payload` is malloc'ed (NULL when length is 0) and
 * NUL-terminated one byte past `length`; free it with rtp_msg_free. */
struct rtp_msg {
	uint16_t type;
	int32_t status;
	uint32_t length;
	char *payload;
};

/*
 * rtp_send: write one frame (and `nfds` descriptors with its first byte).
 * Waits at most `timeout_ms` in all (-1: no limit) for the socket to take
 * it; never raises SIGPIPE. Returns 0 or -ETIMEDOUT, -EPIPE/-ECONNRESET
 * (peer gone), -EINVAL (bad arguments), -errno.
 */
int rtp_send(int fd, uint16_t type, int32_t status, const void *payload,
	     uint32_t length, const int *fds, unsigned nfds, int timeout_ms);

/*
 * rtp_recv: read one frame, waiting at most `timeout_ms` in all (-1: no
 * limit). Descriptors that came with it are stored in fds[0..*nfds) (close
 * on exec); beyond `maxfds` they are closed. Returns 0, or -ETIMEDOUT,
 * -ECONNRESET (peer closed, also mid-frame), -EPROTO (bad magic, version,
 * type or length: the stream cannot be trusted any more), -ENOMEM, -errno.
 * On error *nfds is 0 and no descriptor is left open.
 */
int rtp_recv(int fd, struct rtp_msg *m, int *fds, unsigned maxfds,
	     unsigned *nfds, int timeout_ms);
void rtp_msg_free(struct rtp_msg *m);

/*
 * An incremental frame reader for non-blocking sockets (the daemon's
 * loop): each rtp_reader_read takes what the socket has, never a byte past
 * the end of the current frame (what follows belongs to the next frame,
 * or to whoever takes the socket over), and returns a frame once it is
 * whole. The payload buffer grows as bytes arrive (by doubling from
 * RTP_READER_CHUNK, never past the announced length), so memory follows
 * what the peer really sent; `cap` is its size now.
 */
#define RTP_READER_CHUNK 65536u
struct rtp_reader {
	unsigned char hdr[RTP_HEADER_SIZE];
	uint32_t have;		/* header + payload bytes received */
	uint32_t length;	/* payload length, once the header is in */
	char *payload;
	uint32_t cap;		/* bytes allocated at payload */
	int fds[RTP_MAX_FDS];	/* descriptors received with this frame */
	unsigned nfds;
};

/* What the reader's owner accepts: check(type, length, arg) once a
 * header is in (0, or the negative errno rtp_reader_read returns, e.g.
 * -EBADMSG for a type it does not take, -EMSGSIZE for a frame too large
 * for its type); grow(delta, arg) before the payload buffer grows by
 * delta bytes (0, or a negative errno, e.g. -ENOBUFS past a memory cap). */
struct rtp_reader_limits {
	int (*check)(uint16_t type, uint32_t length, void *arg);
	int (*grow)(size_t delta, void *arg);
	void *arg;
};

/*
 * Read from non-blocking `fd` into r. Returns 1 with a whole frame in *m
 * (the payload is the caller's: rtp_msg_free) and its descriptors in
 * fds[0..*nfds) (the caller's), r ready for the next frame; 0 when the
 * socket has nothing more for now; or -ECONNRESET (peer closed, also
 * mid-frame), -EPROTO (bad magic), -EPROTONOSUPPORT (version), -EBADMSG
 * (type), -EMSGSIZE (length past RTP_MAX_PAYLOAD), an error of the
 * limits, -ENOMEM, -errno. After an error, call rtp_reader_reset.
 */
int rtp_reader_read(int fd, struct rtp_reader *r, const struct rtp_reader_limits *lim,
		    struct rtp_msg *m, int *fds, unsigned *nfds);
/* Forget the partial frame: free its payload, close its descriptors. */
void rtp_reader_reset(struct rtp_reader *r);

/* --- control payloads ------------------------------------------------ */

/* A growing key=value payload; err is sticky (-ENOMEM, -EINVAL for a bad
 * key, -E2BIG past RTP_MAX_PAYLOAD). */
struct rtp_kv {
	char *data;
	uint32_t len;
	uint32_t cap;
	int err;
};

void rtp_kv_add(struct rtp_kv *kv, const char *key, const char *value);
void rtp_kv_addf(struct rtp_kv *kv, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void rtp_kv_free(struct rtp_kv *kv);

/* 0 if `p[0..len)` is a well-formed control payload, else -EPROTO. */
int rtp_kv_validate(const char *p, uint32_t len);
/*
 * Iterate over a validated payload: start with *pos = 0; returns true and
 * sets key (not NUL-terminated, length *keylen) and value (NUL-terminated)
 * for each entry.
 */
bool rtp_kv_next(const char *p, uint32_t len, uint32_t *pos, const char **key,
		 size_t *keylen, const char **value);
/* The value of the first entry with `key`, or NULL. */
const char *rtp_kv_get(const char *p, uint32_t len, const char *key);

/* --- where the daemon listens, and whom the ends trust (rundir.c) -- */

/*
 * The run directory of this user's daemon: $RINGTRACE_RUNDIR when set
 * (tests run private daemons this way); for root /run/ringtrace; else
 * $XDG_RUNTIME_DIR/ringtrace, else /tmp/ringtrace-UID. The control socket
 * is RUNDIR/ringtraced.sock. Returns 0 or -ENAMETOOLONG.
 */
int rtp_rundir(char *buf, size_t len);
int rtp_socket_path(char *buf, size_t len);

/*
 * Open the run directory (creating it, mode 0700, with `create`) and
 * check it: a real directory (not a symbolic link) owned by us, with no
 * permission for group or others, under directories owned by us or root
 * (fs_util.h's rt_dir_open). Another user who created it first could
 * otherwise serve its own socket there. Returns a directory fd, or
 * -ENOENT (missing, without `create`: err is empty), -EPERM, -ELOOP,
 * -ENOTDIR (unsafe: err says what is wrong with which directory),
 * -errno of its creation.
 */
int rtp_rundir_open(bool create, char *err, size_t errlen);

/*
 * The other end of a connected Unix socket must run as our effective uid
 * or as root (SO_PEERCRED): the daemon checks its clients this way, and
 * clients (the command, traced programs) check the daemon. Returns 0 or
 * -EPERM (another uid: err names it), -errno.
 */
int rtp_peer_check(int fd, char *err, size_t errlen);

/*
 * Connect to the daemon's socket without blocking for more than
 * `timeout_ms`, after checking the run directory (rtp_rundir_open) and
 * then the daemon's uid (rtp_peer_check). Returns a connected
 * close-on-exec socket, or -ENOENT / -ECONNREFUSED (no daemon),
 * -ETIMEDOUT, -EACCES, -errno; -EPERM, -ELOOP or -ENOTDIR when the run
 * directory or the daemon is not to be trusted, with a message in err
 * (err is empty for the other errors).
 */
int rtp_connect(int timeout_ms, char *err, size_t errlen);

#endif /* RINGTRACE_PROTO_H */
