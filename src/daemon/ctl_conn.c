/*
 * ctl_conn.c - connections to the daemon's socket, until their first
 * frame says what they are: a control request (answered here, then the
 * connection is closed) or a program's RTP_APP_* frame (handed to the
 * data plane with dp_app_connected).
 *
 * Nothing here blocks the main loop: sockets are non-blocking, each
 * connection buffers its partial frame, and one that does not deliver a
 * whole frame within CONN_DEADLINE_MS is closed. Replies are sent with a
 * bounded wait (REPLY_TIMEOUT_MS) for a client that does not read.
 *
 * Peer check: SO_PEERCRED at accept; a uid other than the daemon's euid
 * or root gets an error reply and is closed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"

#define CONN_DEADLINE_MS 5000
#define REPLY_TIMEOUT_MS 2000

/* A connection waiting for its first frame. Owner: the list below; freed
 * when answered, handed over or closed. */
struct conn {
	int fd;
	struct ucred peer;
	unsigned char hdr[RTP_HEADER_SIZE];
	uint32_t have;		/* bytes of header + payload received */
	uint32_t length;	/* payload length, once the header is in */
	char *payload;		/* length + 1 bytes, once the header is in */
	int fds[RTP_MAX_FDS];	/* descriptors received so far */
	unsigned nfds;
	int64_t deadline_ms;
	struct conn *next;
};

static struct conn *conns;

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void conn_unlink(struct conn *c)
{
	for (struct conn **pp = &conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			return;
		}
	}
}

/* Forget c; close its socket unless it was handed over (keep_fd). */
static void conn_free(struct conn *c, bool keep_fd)
{
	conn_unlink(c);
	rtd_loop_remove(c->fd);
	if (!keep_fd) {
		close(c->fd);
		for (unsigned i = 0; i < c->nfds; i++)
			close(c->fds[i]);
	}
	free(c->payload);
	free(c);
}

static void send_error(int fd, int status, const char *msg)
{
	struct rtp_kv kv = { 0 };
	rtp_kv_add(&kv, "error", msg);
	if (!kv.err)
		rtp_send(fd, RTP_CTL_REPLY, status, kv.data, kv.len, NULL, 0, REPLY_TIMEOUT_MS);
	rtp_kv_free(&kv);
}

static void answer_request(struct conn *c)
{
	char err[CTL_ERRLEN] = "";
	struct rtp_kv reply = { 0 };
	struct ctl_req req = { .p = c->payload, .len = c->length };
	int ret;
	if (rtp_kv_validate(c->payload, c->length) < 0) {
		snprintf(err, sizeof(err), "malformed request: the payload is not key=value entries");
		ret = -EPROTO;
	} else {
		ret = ctl_handle(&req, &reply, err, sizeof(err));
	}
	if (ret < 0) {
		rtp_kv_free(&reply);
		send_error(c->fd, ret, err[0] ? err : strerror(-ret));
	} else {
		rtp_send(c->fd, RTP_CTL_REPLY, 0, reply.data, reply.len, NULL, 0, REPLY_TIMEOUT_MS);
		rtp_kv_free(&reply);
	}
}

/* The header is complete: check it and make room for the payload. Returns
 * false when the stream cannot be trusted (answered and to be closed). */
static bool header_ok(struct conn *c)
{
	struct rtp_header h;
	memcpy(&h, c->hdr, sizeof(h));
	const char *why = NULL;
	if (h.magic != RTP_MAGIC)
		why = "bad frame magic";
	else if (h.version != RTP_VERSION)
		why = "unsupported protocol version";
	else if (h.length > RTP_MAX_PAYLOAD)
		why = "frame too large";
	else if (h.type != RTP_CTL_REQUEST && (h.type < RTP_APP_FIRST || h.type > RTP_APP_LAST))
		why = "unexpected frame type";
	if (why) {
		char msg[96];
		snprintf(msg, sizeof(msg), "malformed request: %s", why);
		send_error(c->fd, -EPROTO, msg);
		return false;
	}
	c->length = h.length;
	c->payload = malloc((size_t)h.length + 1);
	if (!c->payload) {
		send_error(c->fd, -ENOMEM, "out of memory");
		return false;
	}
	return true;
}

/* A whole frame is in: answer it or hand the connection over. */
static void frame_done(struct conn *c)
{
	struct rtp_header h;
	memcpy(&h, c->hdr, sizeof(h));
	c->payload[c->length] = '\0';
	if (h.type == RTP_CTL_REQUEST) {
		/* Control requests carry no descriptors: drop any before
		 * answering, so the client sees them closed once answered. */
		for (unsigned i = 0; i < c->nfds; i++)
			close(c->fds[i]);
		c->nfds = 0;
		answer_request(c);
		conn_free(c, false);
		return;
	}
	struct rtp_msg m = {
		.type = h.type, .status = h.status, .length = c->length, .payload = c->payload,
	};
	int fd = c->fd;
	struct ucred peer = c->peer;
	int fds[RTP_MAX_FDS];
	unsigned nfds = c->nfds;
	memcpy(fds, c->fds, sizeof(int) * nfds);
	c->payload = NULL;
	conn_free(c, true);
	dp_app_connected(fd, &peer, &m, fds, nfds);
	rtp_msg_free(&m);
}

static void conn_readable(int fd, short revents, void *arg)
{
	(void)fd;
	(void)revents;
	struct conn *c = arg;
	for (;;) {
		bool in_header = c->have < RTP_HEADER_SIZE;
		size_t want = in_header ? RTP_HEADER_SIZE - c->have
					: (size_t)c->length - (c->have - RTP_HEADER_SIZE);
		if (!in_header && want == 0) {
			frame_done(c);
			return;
		}
		/* Read no more than this frame: later bytes belong to whoever
		 * takes the connection over. */
		union {
			char buf[CMSG_SPACE(sizeof(int) * RTP_MAX_FDS)];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = {
			.iov_base = in_header ? (void *)(c->hdr + c->have)
					      : (void *)(c->payload + (c->have - RTP_HEADER_SIZE)),
			.iov_len = want,
		};
		struct msghdr mh = {
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
		};
		ssize_t n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			conn_free(c, false);
			return;
		}
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
				continue;
			size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t i = 0; i < k; i++) {
				int f;
				memcpy(&f, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
				if (c->nfds < RTP_MAX_FDS)
					c->fds[c->nfds++] = f;
				else
					close(f);
			}
		}
		c->have += (uint32_t)n;
		if (in_header && c->have == RTP_HEADER_SIZE && !header_ok(c)) {
			conn_free(c, false);
			return;
		}
	}
}

void ctl_conn_accept(int lfd, short revents, void *arg)
{
	(void)revents;
	(void)arg;
	int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	struct ucred peer;
	socklen_t len = sizeof(peer);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) < 0) {
		close(fd);
		return;
	}
	if (peer.uid != geteuid() && peer.uid != 0) {
		char msg[160];
		snprintf(msg, sizeof(msg), "permission denied: this ringtraced serves uid %u only "
			 "(and root), not uid %u", (unsigned)geteuid(), (unsigned)peer.uid);
		send_error(fd, -EACCES, msg);
		close(fd);
		return;
	}
	struct conn *c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	c->fd = fd;
	c->peer = peer;
	c->deadline_ms = now_ms() + CONN_DEADLINE_MS;
	if (rtd_loop_add(fd, conn_readable, c) < 0) {
		close(fd);
		free(c);
		return;
	}
	c->next = conns;
	conns = c;
}

int ctl_conn_expire(void)
{
	int64_t now = now_ms(), next = -1;
	struct conn *c = conns;
	while (c) {
		struct conn *n = c->next;
		if (c->deadline_ms <= now) {
			conn_free(c, false);
		} else if (next < 0 || c->deadline_ms - now < next) {
			next = c->deadline_ms - now;
		}
		c = n;
	}
	return (int)next;
}

void ctl_conn_close_all(void)
{
	while (conns)
		conn_free(conns, false);
}
