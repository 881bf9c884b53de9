/*
 * ctl_conn.c - connections to the daemon's socket, until their first
 * frame says what they are: a control request (answered here, then the
 * connection is closed once the reply was taken) or a program's RTP_APP_*
 * frame (handed to the data plane with dp_app_connected).
 *
 * Nothing here blocks the main loop: every connection is a struct
 * rtd_conn (ctl_io.c) with its own buffers. One that does not deliver a
 * whole first frame within CONN_DEADLINE_MS, or does not take its reply
 * within REPLY_TIMEOUT_MS, is closed. A request may be CTL_REQUEST_MAX
 * bytes long; a program's first frame (RTP_APP_REGISTER, nothing else),
 * RTP_MAX_PAYLOAD.
 *
 * Peer check: SO_PEERCRED at accept; a uid other than the daemon's euid
 * or root gets an error reply and is closed.
 *
 * Out of descriptors (EMFILE, ENFILE): the daemon keeps one spare
 * descriptor; it closes it to accept the waiting connection, tells it
 * the daemon is out of descriptors, closes it and takes the spare again,
 * so the backlog empties instead of making poll return at once forever.
 * Logged once until a connection is accepted again. When even that
 * fails, the listening socket is not watched for LISTEN_PAUSE_MS.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../proto/app_proto.h"
#include "ctl.h"
#include "../common/warn.h"

#define CONN_DEADLINE_MS 5000
#define REPLY_TIMEOUT_MS 2000
#define CTL_REQUEST_MAX (1u << 20)
#define LISTEN_PAUSE_MS 100

static int conn_check(uint16_t type, uint32_t length)
{
	if (type == RTP_CTL_REQUEST)
		return length > CTL_REQUEST_MAX ? -EMSGSIZE : 0;
	if (type == RTP_APP_REGISTER)
		return 0;	/* RTP_MAX_PAYLOAD at most, checked by the reader */
	return -EBADMSG;
}

static int conn_frame(struct rtd_conn *c, struct rtp_msg *m, int *fds, unsigned nfds);
static void conn_bad_frame(struct rtd_conn *c, int why);
static void conn_closed(struct rtd_conn *c, int why);

static const struct rtd_conn_ops conn_ops = {
	.check = conn_check,
	.frame = conn_frame,
	.bad_frame = conn_bad_frame,
	.closed = conn_closed,
};

/* Queue an error reply and close once it is taken. */
static void reply_error(struct rtd_conn *c, int status, const char *msg)
{
	struct rtp_kv kv = { 0 };
	rtp_kv_add(&kv, "error", msg);
	if (!kv.err)
		rtd_conn_send(c, RTP_CTL_REPLY, status, kv.data, kv.len, -1);
	rtp_kv_free(&kv);
	rtd_conn_close(c);
}

static void answer_request(struct rtd_conn *c, const struct rtp_msg *m)
{
	char err[CTL_ERRLEN] = "";
	struct rtp_kv reply = { 0 };
	struct ctl_req req = { .p = m->payload, .len = m->length,
			       .uid = rtd_conn_peer(c)->uid };
	int ret;
	if (rtp_kv_validate(m->payload, m->length) < 0) {
		snprintf(err, sizeof(err), "malformed request: the payload is not key=value entries");
		ret = -EPROTO;
	} else if (!strcmp(ctl_get(&req, "cmd") ?: "", "notifications")) {
		/* The connection stays open: it is the subscriber's. */
		ret = ctl_notify_subscribe(c, &req, err, sizeof(err));
		if (ret == 0)
			return;
	} else {
		ret = ctl_handle(&req, &reply, err, sizeof(err));
	}
	if (ret < 0) {
		rtp_kv_free(&reply);
		reply_error(c, ret, err[0] ? err : strerror(-ret));
		return;
	}
	rtd_conn_send(c, RTP_CTL_REPLY, 0, reply.data, reply.len, -1);
	rtp_kv_free(&reply);
	rtd_conn_close(c);
}

/* The first frame: answer it or hand the connection over. */
static int conn_frame(struct rtd_conn *c, struct rtp_msg *m, int *fds, unsigned nfds)
{
	if (m->type == RTP_CTL_REQUEST) {
		/* Control requests carry no descriptors: drop any before
		 * answering, so the client sees them closed once answered. */
		for (unsigned i = 0; i < nfds; i++)
			close(fds[i]);
		answer_request(c, m);
		return 0;
	}
	dp_app_connected(c, m, fds, nfds);
	return 0;
}

/* A first frame the reader refused: tell the peer why, then close. */
static void conn_bad_frame(struct rtd_conn *c, int why)
{
	char msg[128];
	if (why == -EMSGSIZE)
		snprintf(msg, sizeof(msg), "malformed request: frame too large for its type "
			 "(a request takes %u KiB at most)", CTL_REQUEST_MAX >> 10);
	else if (why == -ENOBUFS)
		snprintf(msg, sizeof(msg), "ringtraced is busy: the pending input of all "
			 "connections reached %u MiB; retry later", RTD_IO_INPUT_MAX >> 20);
	else
		snprintf(msg, sizeof(msg), "malformed request: %s",
			 why == -EPROTONOSUPPORT ? "unsupported protocol version" :
			 why == -EBADMSG ? "unexpected frame type" : "bad frame magic");
	reply_error(c, why == -ENOBUFS ? why : -EPROTO, msg);
}

/* Connections before their first frame have nothing to forget. */
static void conn_closed(struct rtd_conn *c, int why)
{
	(void)c;
	(void)why;
}

static int fd_spare = -1;	/* the reserve descriptor (/dev/null) */
static bool fd_short_logged;

static void spare_take(void)
{
	if (fd_spare < 0)
		fd_spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/* Out of descriptors with a connection waiting: use the spare to take it
 * and tell it why it is closed at once. */
static void refuse_for_fds(int lfd, int err)
{
	if (!fd_short_logged) {
		rt_warn("out of file descriptors (%s): new connections are "
			"refused until some close", strerror(err));
		fd_short_logged = true;
	}
	if (fd_spare < 0) {
		rtd_loop_pause(lfd, LISTEN_PAUSE_MS);
		return;
	}
	close(fd_spare);
	fd_spare = -1;
	int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd >= 0) {
		static const char msg[] = "error=ringtraced is out of file descriptors; retry later";
		struct rtp_header h = {
			.magic = RTP_MAGIC, .version = RTP_VERSION, .type = RTP_CTL_REPLY,
			.length = sizeof(msg), .status = -EMFILE,
		};
		struct iovec iov[2] = {
			{ .iov_base = &h, .iov_len = sizeof(h) },
			{ .iov_base = (void *)(uintptr_t)msg, .iov_len = sizeof(msg) },
		};
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
		/* One try: a fresh socket's buffer takes this much. */
		ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		(void)n;
		close(fd);
	}
	spare_take();
	if (fd < 0 || fd_spare < 0)
		rtd_loop_pause(lfd, LISTEN_PAUSE_MS);
}

void ctl_conn_accept(int lfd, short revents, void *arg)
{
	(void)revents;
	(void)arg;
	spare_take();
	int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno == EMFILE || errno == ENFILE)
			refuse_for_fds(lfd, errno);
		else if (errno == ENOBUFS || errno == ENOMEM)
			rtd_loop_pause(lfd, LISTEN_PAUSE_MS);	/* retried later, no spinning */
		return;
	}
	fd_short_logged = false;
	struct ucred peer;
	socklen_t len = sizeof(peer);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) < 0) {
		close(fd);
		return;
	}
	struct rtd_conn *c = rtd_conn_new(fd, &peer, &conn_ops, NULL, CONN_DEADLINE_MS,
					  REPLY_TIMEOUT_MS);
	if (!c)
		return;
	if (peer.uid != geteuid() && peer.uid != 0) {
		char msg[160];
		snprintf(msg, sizeof(msg), "permission denied: this ringtraced serves uid %u only "
			 "(and root), not uid %u", (unsigned)geteuid(), (unsigned)peer.uid);
		reply_error(c, -EACCES, msg);
	}
}

void ctl_conn_close_all(void)
{
	rtd_conn_close_all(&conn_ops);
}
