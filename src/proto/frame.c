/*
 * frame.c - sending and receiving protocol frames with descriptors, on
 * sockets that may be blocking or not: every wait goes through poll with
 * what is left of the caller's time budget.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for `events` on fd until `deadline` (-1: forever). 0 or -ETIMEDOUT,
 * -errno. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		int left = -1;
		if (deadline >= 0) {
			int64_t d = deadline - now_ms();
			if (d <= 0)
				return -ETIMEDOUT;
			left = d > 1000000 ? 1000000 : (int)d;
		}
		struct pollfd p = { .fd = fd, .events = events };
		int r = poll(&p, 1, left);
		if (r > 0)
			return 0;
		if (r == 0)
			continue;
		if (errno != EINTR)
			return -errno;
	}
}

static int64_t deadline_of(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
}

int rtp_send(int fd, uint16_t type, int32_t status, const void *payload,
	     uint32_t length, const int *fds, unsigned nfds, int timeout_ms)
{
	if (length > RTP_MAX_PAYLOAD || nfds > RTP_MAX_FDS || (length && !payload))
		return -EINVAL;
	struct rtp_header h = {
		.magic = RTP_MAGIC, .version = RTP_VERSION, .type = type,
		.length = length, .status = status,
	};
	struct iovec iov[2] = {
		{ .iov_base = &h, .iov_len = sizeof(h) },
		{ .iov_base = (void *)(uintptr_t)payload, .iov_len = length },
	};
	union {
		char buf[CMSG_SPACE(sizeof(int) * RTP_MAX_FDS)];
		struct cmsghdr align;
	} ctl;
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = length ? 2 : 1 };
	if (nfds) {
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	int64_t deadline = deadline_of(timeout_ms);
	size_t left = sizeof(h) + length;
	while (left > 0) {
		ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				int r = wait_fd(fd, POLLOUT, deadline);
				if (r < 0)
					return r;
				continue;
			}
			return -errno;
		}
		/* The descriptors went with the first byte. */
		mh.msg_control = NULL;
		mh.msg_controllen = 0;
		left -= (size_t)n;
		while (n > 0 && mh.msg_iovlen > 0) {
			if ((size_t)n >= mh.msg_iov[0].iov_len) {
				n -= (ssize_t)mh.msg_iov[0].iov_len;
				mh.msg_iov++;
				mh.msg_iovlen--;
			} else {
				mh.msg_iov[0].iov_base = (char *)mh.msg_iov[0].iov_base + n;
				mh.msg_iov[0].iov_len -= (size_t)n;
				n = 0;
			}
		}
	}
	return 0;
}

static void close_fds(int *fds, unsigned *nfds)
{
	for (unsigned i = 0; i < *nfds; i++)
		close(fds[i]);
	*nfds = 0;
}

/* Collect the descriptors of one recvmsg; surplus ones are closed. */
static void take_fds(struct msghdr *mh, int *fds, unsigned maxfds, unsigned *nfds)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int f;
			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (fds && *nfds < maxfds)
				fds[(*nfds)++] = f;
			else
				close(f);
		}
	}
}

/* Read exactly len bytes (collecting descriptors). 0 or -errno. */
static int recv_all(int fd, void *buf, size_t len, int *fds, unsigned maxfds,
		    unsigned *nfds, int64_t deadline)
{
	char *p = buf;
	while (len > 0) {
		union {
			char buf[CMSG_SPACE(sizeof(int) * RTP_MAX_FDS)];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = { .iov_base = p, .iov_len = len };
		struct msghdr mh = {
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
		};
		ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				int r = wait_fd(fd, POLLIN, deadline);
				if (r < 0)
					return r;
				continue;
			}
			return -errno;
		}
		take_fds(&mh, fds, maxfds, nfds);
		if (n == 0)
			return -ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The checks every frame header gets. 0, -EPROTO (magic),
 * -EPROTONOSUPPORT (version), -EBADMSG (type) or -EMSGSIZE (length). */
static int header_check(const struct rtp_header *h)
{
	if (h->magic != RTP_MAGIC)
		return -EPROTO;
	if (h->version != RTP_VERSION)
		return -EPROTONOSUPPORT;
	if (!(h->type == RTP_CTL_REQUEST || h->type == RTP_CTL_REPLY ||
	      h->type == RTP_CTL_NOTIFICATION ||
	      (h->type >= RTP_APP_FIRST && h->type <= RTP_APP_LAST)))
		return -EBADMSG;
	return h->length > RTP_MAX_PAYLOAD ? -EMSGSIZE : 0;
}

int rtp_recv(int fd, struct rtp_msg *m, int *fds, unsigned maxfds,
	     unsigned *nfds, int timeout_ms)
{
	unsigned dummy = 0;
	if (!nfds)
		nfds = &dummy;
	*nfds = 0;
	memset(m, 0, sizeof(*m));
	int64_t deadline = deadline_of(timeout_ms);
	struct rtp_header h;
	int r = recv_all(fd, &h, sizeof(h), fds, maxfds, nfds, deadline);
	if (r < 0)
		goto fail;
	if (header_check(&h) < 0) {
		r = -EPROTO;
		goto fail;
	}
	m->payload = malloc((size_t)h.length + 1);
	if (!m->payload) {
		r = -ENOMEM;
		goto fail;
	}
	r = recv_all(fd, m->payload, h.length, fds, maxfds, nfds, deadline);
	if (r < 0)
		goto fail_payload;
	m->payload[h.length] = '\0';
	m->type = h.type;
	m->status = h.status;
	m->length = h.length;
	return 0;

fail_payload:
	free(m->payload);
	m->payload = NULL;
fail:
	close_fds(fds, nfds);
	return r;
}

/* Make room for `want` more payload bytes (at most up to the length). */
static int reader_grow(struct rtp_reader *r, const struct rtp_reader_limits *lim)
{
	uint32_t used = r->have - RTP_HEADER_SIZE;
	if (r->payload && used < r->cap - 1)
		return 0;
	uint32_t cap = r->cap ? (r->cap - 1) * 2 : RTP_READER_CHUNK;
	if (cap > r->length)
		cap = r->length;
	cap += 1;	/* the NUL after the payload */
	int ret = lim->grow ? lim->grow(cap - r->cap, lim->arg) : 0;
	if (ret < 0)
		return ret;
	char *p = realloc(r->payload, cap);
	if (!p)
		return -ENOMEM;
	r->payload = p;
	r->cap = cap;
	return 0;
}

int rtp_reader_read(int fd, struct rtp_reader *r, const struct rtp_reader_limits *lim,
		    struct rtp_msg *m, int *fds, unsigned *nfds)
{
	for (;;) {
		bool in_header = r->have < RTP_HEADER_SIZE;
		int ret;
		if (!in_header) {
			uint32_t used = r->have - RTP_HEADER_SIZE;
			if (used == r->length)
				break;
			if ((ret = reader_grow(r, lim)) < 0)
				return ret;
		}
		size_t want = in_header ? RTP_HEADER_SIZE - r->have
					: (size_t)(r->cap - 1) - (r->have - RTP_HEADER_SIZE);
		union {
			char buf[CMSG_SPACE(sizeof(int) * RTP_MAX_FDS)];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = {
			.iov_base = in_header ? (void *)(r->hdr + r->have)
					      : (void *)(r->payload + (r->have - RTP_HEADER_SIZE)),
			.iov_len = want,
		};
		struct msghdr mh = {
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
		};
		ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n < 0)
			return -errno;
		take_fds(&mh, r->fds, RTP_MAX_FDS, &r->nfds);
		if (n == 0)
			return -ECONNRESET;
		r->have += (uint32_t)n;
		if (in_header && r->have == RTP_HEADER_SIZE) {
			struct rtp_header h;
			memcpy(&h, r->hdr, sizeof(h));
			if ((ret = header_check(&h)) < 0)
				return ret;
			if (lim->check && (ret = lim->check(h.type, h.length, lim->arg)) < 0)
				return ret;
			r->length = h.length;
		}
	}
	struct rtp_header h;
	memcpy(&h, r->hdr, sizeof(h));
	if (!r->payload && (r->payload = malloc(1)) == NULL)
		return -ENOMEM;
	r->payload[r->length] = '\0';
	*m = (struct rtp_msg){
		.type = h.type, .status = h.status, .length = r->length, .payload = r->payload,
	};
	memcpy(fds, r->fds, sizeof(int) * r->nfds);
	*nfds = r->nfds;
	r->payload = NULL;
	r->nfds = 0;
	r->cap = 0;
	r->have = 0;
	r->length = 0;
	return 1;
}

void rtp_reader_reset(struct rtp_reader *r)
{
	close_fds(r->fds, &r->nfds);
	free(r->payload);
	r->payload = NULL;
	r->cap = 0;
	r->have = 0;
	r->length = 0;
}

void rtp_msg_free(struct rtp_msg *m)
{
	free(m->payload);
	m->payload = NULL;
	m->length = 0;
}

int rtp_connect(int timeout_ms, char *err, size_t errlen)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	err[0] = '\0';
	if (rtp_socket_path(path, sizeof(path)) < 0)
		return -ENAMETOOLONG;
	int dfd = rtp_rundir_open(false, err, errlen);
	if (dfd < 0)
		return dfd;
	close(dfd);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int r = 0;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno != EINPROGRESS && errno != EAGAIN) {
			r = -errno;
			goto fail;
		}
		/* A listener with a full backlog: wait, bounded. */
		r = wait_fd(fd, POLLOUT, deadline_of(timeout_ms));
		if (r < 0)
			goto fail;
		int soerr = 0;
		socklen_t el = sizeof(soerr);
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &el) < 0 || soerr) {
			r = soerr ? -soerr : -errno;
			goto fail;
		}
	}
	if ((r = rtp_peer_check(fd, err, errlen)) < 0)
		goto fail;
	return fd;

fail:
	close(fd);
	return r;
}
