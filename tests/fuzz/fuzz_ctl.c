/*
 * fuzz_ctl.c - the control protocol as the daemon reads it
 * (src/proto: frame.c's incremental frame reader rtp_reader_read, then
 * kv.c's rtp_kv_validate and the lookups of a validated payload). Input:
 * the bytes a client writes on the control socket; they go through a
 * socket pair to the reader, frame after frame, as in the daemon's loop.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../src/proto/proto.h"
#include "fuzz.h"

/* What the daemon's first frame may be (its own limits, ctl_conn.c). */
static int check(uint16_t type, uint32_t length, void *arg)
{
	(void)arg;
	if (type == RTP_CTL_REQUEST)
		return length > (1u << 20) ? -EMSGSIZE : 0;
	return type >= RTP_APP_FIRST && type <= RTP_APP_LAST ? 0 : -EBADMSG;
}

static int grow(size_t delta, void *arg)
{
	size_t *total = arg;
	*total += delta;
	return *total > (4u << 20) ? -ENOBUFS : 0;
}

static void payload(const struct rtp_msg *m)
{
	if (rtp_kv_validate(m->payload, m->length) < 0)
		return;
	uint32_t pos = 0;
	const char *key, *value;
	size_t keylen;
	while (rtp_kv_next(m->payload, m->length, &pos, &key, &keylen, &value))
		FUZZ_CHECK(keylen >= 1 && keylen <= RTP_KEY_MAX && pos <= m->length);
	(void)rtp_kv_get(m->payload, m->length, "cmd");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* What one socket buffer takes at once: the writer never blocks. */
	if (size > 65536)
		return 0;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return 0;
	int bufsz = 1 << 18;
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof(bufsz));
	setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof(bufsz));
	size_t off = 0;
	while (off < size) {
		ssize_t w = write(sv[0], data + off, size - off);
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	close(sv[0]);
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	struct rtp_reader r;
	memset(&r, 0, sizeof(r));
	size_t total = 0;
	const struct rtp_reader_limits lim = { check, grow, &total };
	for (int frames = 0; frames < 64; frames++) {
		struct rtp_msg m;
		int fds[RTP_MAX_FDS];
		unsigned nfds = 0;
		int ret = rtp_reader_read(sv[1], &r, &lim, &m, fds, &nfds);
		if (ret <= 0)
			break;
		FUZZ_CHECK(nfds == 0);
		FUZZ_CHECK(m.payload == NULL || m.payload[m.length] == '\0');
		if (m.type == RTP_CTL_REQUEST)
			payload(&m);
		rtp_msg_free(&m);
		total = 0;
	}
	rtp_reader_reset(&r);
	close(sv[1]);
	return 0;
}
