/* fuzz_util.c - fuzz_fail and the scripted peer (fuzz.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz.h"

void fuzz_fail(const char *file, int line, const char *cond)
{
	fprintf(stderr, "%s:%d: harness check failed: %s\n", file, line, cond);
	abort();
}

/* Write the script while reading (and dropping) what the other side
 * sends, so that neither side blocks on a full socket; after the script,
 * close our sending half and read until the other side closes. */
static void *peer_main(void *arg)
{
	struct fuzz_peer *p = arg;
	if (p->listen_fd >= 0) {
		struct pollfd lp = { .fd = p->listen_fd, .events = POLLIN };
		if (poll(&lp, 1, 10000) <= 0)
			return NULL;
		p->fd = accept4(p->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (p->fd < 0)
			return NULL;
	}
	size_t off = 0;
	char sink[4096];
	bool half_closed = false;
	for (;;) {
		if (off == p->size && !half_closed) {
			shutdown(p->fd, SHUT_WR);
			half_closed = true;
		}
		struct pollfd pf = { .fd = p->fd, .events = POLLIN | (half_closed ? 0 : POLLOUT) };
		if (poll(&pf, 1, -1) < 0 && errno != EINTR)
			break;
		if (pf.revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t n = recv(p->fd, sink, sizeof(sink), MSG_DONTWAIT);
			if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
				break;
		}
		if (!half_closed && (pf.revents & POLLOUT)) {
			ssize_t n = send(p->fd, p->data + off, p->size - off,
					 MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				off = p->size;	/* the other side is gone */
			else if (n > 0)
				off += (size_t)n;
		}
	}
	if (p->listen_fd >= 0)
		close(p->fd);
	return NULL;
}

int fuzz_peer_start(struct fuzz_peer *p, int fd, int listen_fd, const uint8_t *data,
		    size_t size)
{
	p->fd = fd;
	p->listen_fd = listen_fd;
	p->data = data;
	p->size = size;
	return pthread_create(&p->thread, NULL, peer_main, p) ? -EAGAIN : 0;
}

void fuzz_peer_join(struct fuzz_peer *p)
{
	pthread_join(p->thread, NULL);
}
