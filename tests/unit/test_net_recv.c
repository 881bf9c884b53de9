/*
 * test_net_recv.c - what rnet_recv (src/net/sock.c) allocates for a
 * frame: its buffer grows with the bytes that arrive, so that a peer
 * announcing a frame of the largest size (a 64 MiB packet) and sending a
 * few bytes costs a few KiB. The test binary is linked with
 * --wrap=malloc,realloc: every allocation's size is seen here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/net.h"
#include "unit.h"

void *__real_malloc(size_t n);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_realloc(void *p, size_t n);

static size_t largest;

void *__wrap_malloc(size_t n)
{
	if (n > largest)
		largest = n;
	return __real_malloc(n);
}

void *__wrap_realloc(void *p, size_t n)
{
	if (n > largest)
		largest = n;
	return __real_realloc(p, n);
}

struct feed {
	int fd;
	const uint8_t *p;
	size_t len;
};

/* The peer: its bytes, then its end closed. */
static void *feeder(void *arg)
{
	struct feed *f = arg;
	for (size_t off = 0; off < f->len;) {
		ssize_t w = write(f->fd, f->p + off, f->len - off);
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	close(f->fd);
	return NULL;
}

/* rnet_recv of `len` bytes written by a peer thread: its result, the
 * largest allocation it made in *most, the payload in *payload. */
static int recv_of(const uint8_t *bytes, size_t len, struct rnet_hdr *h, uint8_t **payload,
		   size_t *most)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	struct feed f = { .fd = sv[0], .p = bytes, .len = len };
	pthread_t t;
	if (pthread_create(&t, NULL, feeder, &f)) {
		close(sv[0]);
		close(sv[1]);
		return -EAGAIN;
	}
	largest = 0;
	int ret = rnet_recv(sv[1], h, payload, 10000);
	*most = largest;
	pthread_join(t, NULL);
	close(sv[1]);
	return ret;
}

int main(void)
{
	struct rnet_hdr h;
	uint8_t *p;
	size_t most;

	unit_case = "a large frame announced, a few bytes sent";
	uint8_t cut[RNET_HEADER_SIZE + 10] = { 0 };
	rnet_frame_encode(cut, RNET_PACKET, RNET_PACKET_MAX);
	int ret = recv_of(cut, sizeof(cut), &h, &p, &most);
	CHECK(ret == -ECONNRESET, "closed mid-frame: %d", ret);
	CHECK(p == NULL, "no payload");
	CHECK(most <= RNET_RECV_FIRST, "allocated %zu bytes for 10 received", most);

	unit_case = "half the frame sent";
	size_t half = RNET_PACKET_MAX / 2;
	uint8_t *big = calloc(1, RNET_HEADER_SIZE + half);
	CHECK(big != NULL, "memory");
	if (big) {
		rnet_frame_encode(big, RNET_PACKET, RNET_PACKET_MAX);
		ret = recv_of(big, RNET_HEADER_SIZE + half, &h, &p, &most);
		CHECK(ret == -ECONNRESET, "closed mid-frame: %d", ret);
		CHECK(most <= 2 * half, "allocated %zu bytes for %zu received", most, half);
		free(big);
	}

	unit_case = "whole frames";
	size_t sizes[] = { 1, RNET_RECV_FIRST - 1, RNET_RECV_FIRST, RNET_RECV_FIRST + 1,
			   3 * RNET_RECV_FIRST + 17, 1u << 20 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		uint8_t *b = malloc(RNET_HEADER_SIZE + n);
		if (!b) {
			CHECK(0, "memory");
			break;
		}
		rnet_frame_encode(b, RNET_PACKET, (uint32_t)n);
		for (size_t k = 0; k < n; k++)
			b[RNET_HEADER_SIZE + k] = (uint8_t)(k * 7 + k / 251);
		ret = recv_of(b, RNET_HEADER_SIZE + n, &h, &p, &most);
		CHECK(ret == 0, "%zu bytes: %d", n, ret);
		CHECK(ret || (h.type == RNET_PACKET && h.length == n &&
			      !memcmp(p, b + RNET_HEADER_SIZE, n)), "%zu bytes read back", n);
		CHECK(most <= (n > RNET_RECV_FIRST ? n : RNET_RECV_FIRST), "%zu bytes: allocated %zu",
		      n, most);
		if (!ret)
			free(p);
		free(b);
	}
	return unit_finish();
}
