/*
 * ctl_io.c - the daemon's connections (rtd.h's struct rtd_conn): each has
 * its own input buffer (a partial frame, rtp_reader) and output queue,
 * its own deadlines, and a share of the daemon-wide memory limits, so
 * that a peer that stalls, trickles or stops reading costs memory within
 * those limits and never time on the loop. One poll round for the loop
 * and for rtd_conn_pump (ctl_io_round).
 *
 * A connection that fails (peer gone, bad frame, deadline, limit) has its
 * socket closed at once (the peer sees it) and is marked dead; the loop
 * reaps the dead ones after each round: their owners' ops->closed run
 * then, so that no owner is freed while a callback of the same round
 * still uses it. Main thread only; rtd_lock held by every function but
 * ctl_io_round, which takes it as told.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"

/* Frames one connection may deliver in one round before the others get
 * their turn (poll reports it again). */
#define FRAMES_PER_ROUND 64

/* A queued message: header and payload, written from `off` on; `fd` goes
 * with its first byte. */
struct out_msg {
	struct out_msg *next;
	int fd;			/* -1: none; else ours, closed once sent */
	uint32_t len;
	uint32_t off;
	char data[];
};

struct rtd_conn {
	int fd;			/* -1 once dead */
	struct ucred peer;
	const struct rtd_conn_ops *ops;
	void *owner;
	struct rtp_reader in;
	size_t in_mem;		/* of in_total */
	int64_t in_deadline;	/* -1: none */
	int in_ms;		/* for a frame, from its first byte */
	int out_ms;
	struct out_msg *out_head, *out_tail;
	size_t out_mem;		/* of out_total */
	int64_t out_deadline;	/* -1: nothing queued */
	bool closing;		/* rtd_conn_close: reads no more */
	int close_why;		/* ops->closed's why once the output is taken */
	bool dead;		/* to be reaped */
	bool notify;		/* call ops->closed when reaped */
	int why;
	struct rtd_conn *next;
};

static struct rtd_conn *conns;
static size_t in_total, out_total;	/* bytes buffered, all connections */

int64_t rtd_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void free_output(struct rtd_conn *c)
{
	while (c->out_head) {
		struct out_msg *m = c->out_head;
		c->out_head = m->next;
		if (m->fd >= 0)
			close(m->fd);
		free(m);
	}
	c->out_tail = NULL;
	out_total -= c->out_mem;
	c->out_mem = 0;
	c->out_deadline = -1;
}

static void release_input(struct rtd_conn *c)
{
	in_total -= c->in_mem;
	c->in_mem = 0;
}

/* Close the socket now, reap later. */
static void conn_fail(struct rtd_conn *c, int why, bool notify)
{
	if (c->dead)
		return;
	c->dead = true;
	c->why = why;
	c->notify = notify;
	close(c->fd);
	c->fd = -1;
	rtp_reader_reset(&c->in);
	release_input(c);
	free_output(c);
}

struct rtd_conn *rtd_conn_new(int fd, const struct ucred *peer,
			      const struct rtd_conn_ops *ops, void *owner, int first_ms,
			      int out_ms)
{
	struct rtd_conn *c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return NULL;
	}
	c->fd = fd;
	if (peer)
		c->peer = *peer;
	c->ops = ops;
	c->owner = owner;
	c->in_deadline = rtd_now_ms() + first_ms;
	c->out_deadline = -1;
	c->out_ms = out_ms;
	c->next = conns;
	conns = c;
	return c;
}

void rtd_conn_set_ops(struct rtd_conn *c, const struct rtd_conn_ops *ops, void *owner,
		      int in_ms, int out_ms)
{
	c->ops = ops;
	c->owner = owner;
	c->in_ms = in_ms;
	c->out_ms = out_ms;
	c->in_deadline = c->in.have ? rtd_now_ms() + in_ms : -1;
}

void *rtd_conn_owner(const struct rtd_conn *c)
{
	return c->owner;
}

const struct ucred *rtd_conn_peer(const struct rtd_conn *c)
{
	return &c->peer;
}

bool rtd_conn_closing(const struct rtd_conn *c)
{
	return c->closing || c->dead;
}

/* Write what the socket takes. 0, or -errno (the connection failed). */
static int flush_output(struct rtd_conn *c)
{
	while (c->out_head) {
		struct out_msg *m = c->out_head;
		struct iovec iov = { .iov_base = m->data + m->off, .iov_len = m->len - m->off };
		union {
			char buf[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} ctl;
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		if (m->fd >= 0 && m->off == 0) {
			memset(&ctl, 0, sizeof(ctl));
			mh.msg_control = ctl.buf;
			mh.msg_controllen = sizeof(ctl.buf);
			struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(cm), &m->fd, sizeof(int));
		}
		ssize_t n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n < 0)
			return -errno;
		m->off += (uint32_t)n;
		if (m->off < m->len)
			continue;
		c->out_head = m->next;
		if (!c->out_head)
			c->out_tail = NULL;
		size_t size = sizeof(*m) + m->len;
		out_total -= size;
		c->out_mem -= size;
		if (m->fd >= 0)
			close(m->fd);
		free(m);
		c->out_deadline = c->out_head ? rtd_now_ms() + c->out_ms : -1;
	}
	if (c->closing)
		conn_fail(c, c->close_why, true);
	return 0;
}

int rtd_conn_send(struct rtd_conn *c, uint16_t type, int32_t status, const void *p,
		  uint32_t len, int fd)
{
	if (c->dead || c->closing)
		return -EPIPE;
	if (len > RTP_MAX_PAYLOAD || (len && !p))
		return -EINVAL;
	size_t size = sizeof(struct out_msg) + RTP_HEADER_SIZE + len;
	int ret = 0;
	if (size > RTD_IO_OUTPUT_MAX - out_total) {
		ret = -ENOBUFS;
		goto fail;
	}
	struct out_msg *m = malloc(size);
	if (!m) {
		ret = -ENOMEM;
		goto fail;
	}
	m->next = NULL;
	m->fd = -1;
	m->len = RTP_HEADER_SIZE + len;
	m->off = 0;
	if (fd >= 0 && (m->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0) {
		ret = -errno;
		free(m);
		goto fail;
	}
	struct rtp_header h = {
		.magic = RTP_MAGIC, .version = RTP_VERSION, .type = type,
		.length = len, .status = status,
	};
	memcpy(m->data, &h, sizeof(h));
	if (len)
		memcpy(m->data + RTP_HEADER_SIZE, p, len);
	if (c->out_tail)
		c->out_tail->next = m;
	else
		c->out_head = m;
	c->out_tail = m;
	out_total += size;
	c->out_mem += size;
	if (c->out_deadline < 0)
		c->out_deadline = rtd_now_ms() + c->out_ms;
	if ((ret = flush_output(c)) < 0)
		goto fail;
	return 0;
fail:
	conn_fail(c, ret, true);
	return ret;
}

void rtd_conn_close(struct rtd_conn *c)
{
	if (c->dead)
		return;
	c->closing = true;
	if (!c->out_head)
		conn_fail(c, c->close_why, true);
}

void rtd_conn_release(struct rtd_conn *c)
{
	conn_fail(c, 0, false);
}

static int lim_check(uint16_t type, uint32_t length, void *arg)
{
	struct rtd_conn *c = arg;
	return c->ops->check ? c->ops->check(type, length) : 0;
}

static int lim_grow(size_t delta, void *arg)
{
	struct rtd_conn *c = arg;
	if (delta > RTD_IO_INPUT_MAX - in_total)
		return -ENOBUFS;
	in_total += delta;
	c->in_mem += delta;
	return 0;
}

/* Read and hand over the frames that are in, a few at most. */
static void read_input(struct rtd_conn *c)
{
	const struct rtp_reader_limits lim = { .check = lim_check, .grow = lim_grow, .arg = c };
	for (int i = 0; i < FRAMES_PER_ROUND && !c->dead && !c->closing; i++) {
		struct rtp_msg m;
		int fds[RTP_MAX_FDS];
		unsigned nfds = 0;
		int r = rtp_reader_read(c->fd, &c->in, &lim, &m, fds, &nfds);
		if (r < 0 && c->ops->bad_frame &&
		    (r == -EPROTO || r == -EPROTONOSUPPORT || r == -EBADMSG || r == -EMSGSIZE ||
		     r == -ENOBUFS)) {
			rtp_reader_reset(&c->in);
			release_input(c);
			c->close_why = r;
			c->ops->bad_frame(c, r);
			rtd_conn_close(c);
			return;
		}
		if (r < 0) {
			conn_fail(c, r, true);
			return;
		}
		if (r == 0) {
			if (c->in.have && c->in_deadline < 0)
				c->in_deadline = rtd_now_ms() + c->in_ms;
			return;
		}
		release_input(c);
		c->in_deadline = -1;
		r = c->ops->frame(c, &m, fds, nfds);
		rtp_msg_free(&m);
		if (r < 0)
			conn_fail(c, r, true);
	}
}

/* Apply the deadlines of the connections of `only` (NULL: all); returns
 * the ms until the next one (-1: none). */
static int expire(const struct rtd_conn_ops *only)
{
	int64_t now = rtd_now_ms(), next = -1;
	for (struct rtd_conn *c = conns; c; c = c->next) {
		if (c->dead || (only && c->ops != only))
			continue;
		int64_t d = c->out_deadline;
		if (!c->closing && c->in_deadline >= 0 && (d < 0 || c->in_deadline < d))
			d = c->in_deadline;
		if (d < 0)
			continue;
		if (d <= now)
			conn_fail(c, -ETIMEDOUT, true);
		else if (next < 0 || d - now < next)
			next = d - now;
	}
	return next > INT32_MAX ? INT32_MAX : (int)next;
}

/* Free the dead connections, telling their owners. */
static void reap(void)
{
	for (struct rtd_conn **pp = &conns; *pp;) {
		struct rtd_conn *c = *pp;
		if (!c->dead) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		if (c->notify && c->ops->closed)
			c->ops->closed(c, c->why);
		free(c);
	}
}

static int min_timeout(int a, int b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	return a < b ? a : b;
}

int ctl_io_round(struct pollfd *extra, size_t nextra, const struct rtd_conn_ops *only,
		 int timeout_ms, bool locked)
{
	if (!locked)
		pthread_mutex_lock(&rtd_lock);
	timeout_ms = min_timeout(timeout_ms, expire(only));
	size_t n = nextra;
	for (struct rtd_conn *c = conns; c; c = c->next)
		n++;
	/* Arrays of this round: a request handled below may run a round
	 * of its own (rtd_conn_pump). Dead connections stay allocated
	 * until the outermost round reaps them. */
	int ret = 0;
	struct pollfd *pfds = malloc((n ? n : 1) * sizeof(*pfds));
	struct rtd_conn **who = malloc((n ? n : 1) * sizeof(*who));
	if (!pfds || !who) {
		ret = -ENOMEM;
		goto out;
	}
	if (nextra)
		memcpy(pfds, extra, nextra * sizeof(*pfds));
	n = nextra;
	for (struct rtd_conn *c = conns; c; c = c->next) {
		if (c->dead || (only && c->ops != only))
			continue;
		short ev = (short)((c->closing ? 0 : POLLIN) | (c->out_head ? POLLOUT : 0));
		who[n] = c;
		pfds[n++] = (struct pollfd){ .fd = c->fd, .events = ev };
	}
	if (!locked)
		pthread_mutex_unlock(&rtd_lock);
	int r = poll(pfds, n, timeout_ms);
	int err = errno;
	if (!locked)
		pthread_mutex_lock(&rtd_lock);
	if (r < 0) {
		ret = err == EINTR ? 0 : -err;
		goto out;
	}
	for (size_t i = 0; i < nextra; i++)
		extra[i].revents = pfds[i].revents;
	for (size_t i = nextra; r > 0 && i < n; i++) {
		struct rtd_conn *c = who[i];
		short rev = pfds[i].revents;
		if (!rev || c->dead)
			continue;
		if (c->out_head && (rev & (POLLOUT | POLLERR | POLLHUP))) {
			int e = flush_output(c);
			if (e < 0)
				conn_fail(c, e, true);
		}
		if (!c->dead && !c->closing && (rev & (POLLIN | POLLERR | POLLHUP)))
			read_input(c);
	}
out:
	free(pfds);
	free(who);
	if (!locked) {
		reap();
		pthread_mutex_unlock(&rtd_lock);
	}
	return ret;
}

void rtd_conn_pump(const struct rtd_conn_ops *ops, bool (*done)(void *arg), void *arg,
		   int64_t deadline_ms)
{
	while (!done(arg)) {
		int64_t left = deadline_ms - rtd_now_ms();
		if (left <= 0 || ctl_io_round(NULL, 0, ops, (int)left, true) < 0)
			return;
	}
}

void rtd_conn_close_all(const struct rtd_conn_ops *ops)
{
	for (struct rtd_conn *c = conns; c; c = c->next)
		if (!ops || c->ops == ops)
			conn_fail(c, -ESHUTDOWN, true);
	reap();
}

void ctl_io_fini(void)
{
	rtd_conn_close_all(NULL);
}
