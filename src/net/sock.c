/*
 * sock.c - TCP sockets for the relay protocol (net.h): listening,
 * connecting within a time, and whole frames sent and received within a
 * time on non-blocking sockets.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "net.h"

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Time left until `deadline` (-1: none) for poll. */
static int left(int64_t deadline)
{
	if (deadline < 0)
		return -1;
	int64_t l = deadline - now_ms();
	return l < 0 ? 0 : (int)l;
}

int rnet_parse_hostport(const char *s, int def, char *host, size_t hostlen, int *port)
{
	const char *end, *colon;
	if (*s == '[') {
		end = strchr(s, ']');
		if (!end)
			return -EINVAL;
		colon = end[1] == ':' ? end + 1 : NULL;
		if (end[1] && !colon)
			return -EINVAL;
		s++;
	} else {
		colon = strchr(s, ':');
		end = colon ? colon : s + strlen(s);
	}
	size_t n = (size_t)(end - s);
	if (n == 0 || n >= hostlen)
		return -EINVAL;
	memcpy(host, s, n);
	host[n] = 0;
	*port = def;
	if (colon) {
		char *e;
		errno = 0;
		long v = strtol(colon + 1, &e, 10);
		if (errno || e == colon + 1 || *e || v < 0 || v > 65535)
			return -EINVAL;
		*port = (int)v;
	}
	return 0;
}

static int port_of(const char *s, const char **end)
{
	char *e;
	errno = 0;
	long v = strtol(s, &e, 10);
	if (errno || e == s || v < 1 || v > 65535 || *s == '-' || *s == '+')
		return -EINVAL;
	*end = e;
	return (int)v;
}

int rnet_parse_url(const char *url, bool one_port, char *host, size_t hostlen, int *ctrl,
		   int *data)
{
	static const char *const schemes[] = { "net://", "net4://", "net6://", "tcp://",
					       "tcp4://", "tcp6://" };
	const char *p = NULL;
	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]) && !p; i++)
		if (!strncmp(url, schemes[i], strlen(schemes[i])) && (one_port || i < 3))
			p = url + strlen(schemes[i]);
	if (!p)
		return -EINVAL;
	const char *end;
	if (*p == '[') {
		end = strchr(p, ']');
		if (!end)
			return -EINVAL;
		p++;
	} else {
		end = p + strcspn(p, ":/");
	}
	size_t n = (size_t)(end - p);
	if (n == 0 || n >= hostlen)
		return -EINVAL;
	memcpy(host, p, n);
	host[n] = 0;
	p = *end == ']' ? end + 1 : end;
	*ctrl = RNET_CTRL_PORT;
	*data = RNET_DATA_PORT;
	if (*p == ':' && (*ctrl = port_of(p + 1, &p)) < 0)
		return -EINVAL;
	if (!one_port && *p == ':' && (*data = port_of(p + 1, &p)) < 0)
		return -EINVAL;
	if (*p == '/' && !p[1])
		p++;
	return *p ? -EINVAL : 0;
}

static int resolve(const char *host, int port, bool passive, struct addrinfo **res)
{
	char serv[16];
	snprintf(serv, sizeof(serv), "%d", port);
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = passive ? AI_PASSIVE : 0 };
	return getaddrinfo(host, serv, &hints, res);
}

int rnet_listen(const char *addr, int port, char *err, size_t errlen)
{
	struct addrinfo *res;
	int g = resolve(addr, port, true, &res);
	if (g) {
		snprintf(err, errlen, "cannot resolve %s: %s", addr, gai_strerror(g));
		return -EINVAL;
	}
	int ret = -EADDRNOTAVAIL;
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0) {
			ret = -errno;
			continue;
		}
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 64) == 0) {
			freeaddrinfo(res);
			return fd;
		}
		ret = -errno;
		close(fd);
	}
	freeaddrinfo(res);
	snprintf(err, errlen, "cannot listen on %s port %d: %s", addr, port, strerror(-ret));
	return ret;
}

int rnet_local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &l) < 0)
		return -errno;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return -EAFNOSUPPORT;
}

static int connect_one(const struct addrinfo *a, int timeout_ms)
{
	int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
			a->ai_protocol);
	if (fd < 0)
		return -errno;
	int ret = 0;
	if (connect(fd, a->ai_addr, a->ai_addrlen) < 0) {
		if (errno != EINPROGRESS) {
			ret = -errno;
		} else {
			struct pollfd p = { .fd = fd, .events = POLLOUT };
			int n = poll(&p, 1, timeout_ms);
			int e = 0;
			socklen_t l = sizeof(e);
			if (n == 0)
				ret = -ETIMEDOUT;
			else if (n < 0)
				ret = -errno;
			else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &l) < 0)
				ret = -errno;
			else if (e)
				ret = -e;
		}
	}
	if (ret < 0) {
		close(fd);
		return ret;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

int rnet_connect(const char *host, int port, int timeout_ms, char *err, size_t errlen)
{
	struct addrinfo *res;
	int g = resolve(host, port, false, &res);
	if (g) {
		snprintf(err, errlen, "cannot resolve %s: %s", host, gai_strerror(g));
		return -EHOSTUNREACH;
	}
	int ret = -EHOSTUNREACH;
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		ret = connect_one(a, timeout_ms);
		if (ret >= 0)
			break;
	}
	freeaddrinfo(res);
	if (ret < 0)
		snprintf(err, errlen, "cannot connect to the relay at %s port %d: %s", host, port,
			 strerror(-ret));
	return ret;
}

/* Write the iovecs whole by the deadline. */
static int send_all(int fd, struct iovec *iov, int n, int64_t deadline)
{
	while (n > 0) {
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)n };
		ssize_t w = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -errno;
			struct pollfd p = { .fd = fd, .events = POLLOUT };
			int r = poll(&p, 1, left(deadline));
			if (r == 0)
				return -ETIMEDOUT;
			if (r < 0 && errno != EINTR)
				return -errno;
			continue;
		}
		size_t done = (size_t)w;
		while (n > 0 && done >= iov->iov_len) {
			done -= iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + done;
			iov->iov_len -= done;
		}
	}
	return 0;
}

int rnet_send2(int fd, uint16_t type, const void *a, uint32_t alen, const void *b,
	       uint32_t blen, int timeout_ms)
{
	uint8_t hdr[RNET_HEADER_SIZE];
	if ((uint64_t)alen + blen > UINT32_MAX)
		return -EINVAL;
	rnet_frame_encode(hdr, type, alen + blen);
	struct iovec iov[3] = {
		{ .iov_base = hdr, .iov_len = sizeof(hdr) },
		{ .iov_base = (void *)(uintptr_t)a, .iov_len = alen },
		{ .iov_base = (void *)(uintptr_t)b, .iov_len = blen },
	};
	return send_all(fd, iov, blen ? 3 : alen ? 2 : 1,
			timeout_ms < 0 ? -1 : now_ms() + timeout_ms);
}

int rnet_send(int fd, uint16_t type, const void *payload, uint32_t len, int timeout_ms)
{
	return rnet_send2(fd, type, payload, len, NULL, 0, timeout_ms);
}

static int recv_all(int fd, void *buf, size_t len, int64_t deadline)
{
	size_t got = 0;
	while (got < len) {
		ssize_t r = recv(fd, (char *)buf + got, len - got, MSG_DONTWAIT);
		if (r == 0)
			return -ECONNRESET;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -errno;
			struct pollfd p = { .fd = fd, .events = POLLIN };
			int n = poll(&p, 1, left(deadline));
			if (n == 0)
				return -ETIMEDOUT;
			if (n < 0 && errno != EINTR)
				return -errno;
			continue;
		}
		got += (size_t)r;
	}
	return 0;
}

int rnet_write_all(int fd, const void *a, size_t alen, const void *b, size_t blen,
		   int timeout_ms)
{
	struct iovec iov[2] = {
		{ .iov_base = (void *)(uintptr_t)a, .iov_len = alen },
		{ .iov_base = (void *)(uintptr_t)b, .iov_len = blen },
	};
	return send_all(fd, iov, blen ? 2 : 1, timeout_ms < 0 ? -1 : now_ms() + timeout_ms);
}

int rnet_read_all(int fd, void *buf, size_t len, int timeout_ms)
{
	return recv_all(fd, buf, len, timeout_ms < 0 ? -1 : now_ms() + timeout_ms);
}

int rnet_recv(int fd, struct rnet_hdr *h, uint8_t **payload, int timeout_ms)
{
	uint8_t hdr[RNET_HEADER_SIZE];
	int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	*payload = NULL;
	int ret = recv_all(fd, hdr, sizeof(hdr), deadline);
	if (!ret)
		ret = rnet_frame_decode(hdr, sizeof(hdr), h);
	if (ret < 0 || h->length == 0)
		return ret;
	/* The buffer grows with the bytes that came (twice what arrived, at
	 * most): a peer that announces a large frame and sends little costs
	 * little. */
	uint8_t *p = NULL;
	size_t got = 0, cap = 0;
	while (!ret && got < h->length) {
		size_t want = cap ? 2 * cap : RNET_RECV_FIRST;
		if (want > h->length)
			want = h->length;
		uint8_t *np = realloc(p, want);
		if (!np) {
			ret = -ENOMEM;
			break;
		}
		p = np;
		cap = want;
		ret = recv_all(fd, p + got, cap - got, deadline);
		got = cap;
	}
	if (ret < 0) {
		free(p);
		return ret;
	}
	*payload = p;
	return 0;
}
