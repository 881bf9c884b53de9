/*
 * fuzz_netsink.c - what a session daemon reads from a relay once the
 * handshake is done (src/consumer/net_sink.c, net_cluster.c and src/net's
 * cluster requests): the relay's REPLY and CLOCK_REPLY frames to every
 * request of the network sink, and the cluster requests a listening
 * connection receives. The relay is a scripted one on a loopback port:
 * it accepts each connection, authenticates it for real (the relay's
 * side of the handshake, with the secret the daemon reads), then sends
 * that connection's script and drops what the daemon sends.
 *
 * Input: byte 0 chooses the scenario; the rest is the relay's replies,
 * connection after connection in the order the daemon opens them: each
 * reply a u16 (little-endian: its length in bits 0-14, bit 15 set on the
 * connection's last reply) then that many bytes (cut short at the
 * input's end). A connection sends its next reply when the daemon's next
 * frame that waits for one (REPLY or CLOCK_REPLY) has arrived, whatever
 * the reply holds (unasked frames, a cluster request, half a frame);
 * with none left, or once the daemon is silent for SILENCE_MS, it
 * closes its sending half. A reply to a CLOCK whose
 * echoed timestamp is 0 gets the CLOCK's own (only a relay that reads
 * the request can echo it).
 *   0  a session: cons_net_open (control: four CLOCK exchanges and
 *      CREATE_SESSION; data: DATA_ATTACH), a trace with two streams:
 *      metadata, packets, a beacon, a sync; the connections dropped and
 *      made again (streams added again: the relay says what it has of
 *      each, the rest counted lost), more packets, a rotation, packets of
 *      the next chunk (connected again first if the rotation found the
 *      relay away: the ended chunk's streams asked what they have), an
 *      archive, a cluster trigger, a snapshot uploaded, the end;
 *   1  a cluster listener: cons_net_open, cons_net_cluster_listen, then
 *      every request of that connection read, checked and answered as
 *      the daemon does (rnet_cluster_recv, _check, _done).
 * Checked after each: no packet or event counted lost twice or more lost
 * than written, request ids taken in increasing order and only for the
 * session, the clock's error bound positive once connected.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/consumer/consumer_net.h"
#include "fuzz.h"

#define SESSION "s"
#define MAX_CONNS 16
/* A connection quiet this long with nothing left to send closes its
 * sending half (a reply cut short would otherwise hold the daemon for its
 * whole timeout). */
#define SILENCE_MS 100
#define TRACE_PATH "ust/uid/0/64-bit"

static char root[64];			/* the secret, the snapshot, chunks */
static int listen_fd = -1, port;
static struct rnet_secret secret;

/* ---- the scripted relay ---- */

/* One connection of the scripted relay: its replies (units of the input)
 * and what it has read of the daemon's current frame. */
struct conn {
	int fd;
	const uint8_t *units;		/* the connection's units */
	size_t size, off;
	pthread_t thread;
	uint8_t hdr[RNET_HEADER_SIZE];
	size_t hdr_got;
	uint64_t body_left;		/* of the current frame's payload */
	uint8_t first[8];		/* its first payload bytes */
	size_t first_got;
	uint16_t type;
	uint8_t *out;			/* the reply being written */
	size_t out_len, out_off;
	bool done;			/* no reply left: sending half closed */
};

/* The frames the daemon sends that wait for a reply. */
static bool answered(uint16_t type)
{
	switch (type) {
	case RNET_CREATE_SESSION: case RNET_ADD_STREAM: case RNET_CLOSE_SESSION:
	case RNET_CLOCK: case RNET_CLUSTER_LISTEN: case RNET_CLUSTER_TRIGGER:
	case RNET_ARCHIVE_CHUNK: case RNET_DATA_ATTACH: case RNET_DATA_SYNC:
		return true;
	default:
		return false;
	}
}

/* The daemon's frame of `type` is whole: queue the next reply. A reply to
 * CLOCK whose echo field (payload bytes 0-7) is zero gets the CLOCK's own
 * timestamp there, as a relay echoes it. */
static void reply(struct conn *c)
{
	if (!answered(c->type) || c->done)
		return;
	if (c->size - c->off < 2) {
		shutdown(c->fd, SHUT_WR);
		c->done = true;
		return;
	}
	size_t l = ((size_t)c->units[c->off] | (size_t)c->units[c->off + 1] << 8) & 0x7fff;
	c->off += 2;
	if (l > c->size - c->off)
		l = c->size - c->off;
	if (!l)
		return;
	uint8_t *o = realloc(c->out, c->out_len - c->out_off + l);
	if (!o)
		abort();
	memmove(o, o + c->out_off, c->out_len - c->out_off);
	c->out_len -= c->out_off;
	c->out_off = 0;
	c->out = o;
	memcpy(o + c->out_len, c->units + c->off, l);
	static const uint8_t zero[8];
	if (c->type == RNET_CLOCK && c->first_got == 8 && l >= RNET_HEADER_SIZE + 8 &&
	    !memcmp(o + c->out_len + RNET_HEADER_SIZE, zero, 8))
		memcpy(o + c->out_len + RNET_HEADER_SIZE, c->first, 8);
	c->out_len += l;
	c->off += l;
}

/* Bytes the daemon sent: its frames followed, each answered. */
static void take(struct conn *c, const uint8_t *p, size_t n)
{
	while (n) {
		if (c->hdr_got < RNET_HEADER_SIZE) {
			size_t k = RNET_HEADER_SIZE - c->hdr_got < n ? RNET_HEADER_SIZE - c->hdr_got : n;
			memcpy(c->hdr + c->hdr_got, p, k);
			c->hdr_got += k;
			p += k;
			n -= k;
			if (c->hdr_got < RNET_HEADER_SIZE)
				return;
			struct rnet_hdr h;
			if (rnet_frame_decode(c->hdr, sizeof(c->hdr), &h) < 0)
				abort();	/* the daemon's own frames */
			c->type = h.type;
			c->body_left = h.length;
			c->first_got = 0;
		}
		size_t k = c->body_left < n ? (size_t)c->body_left : n;
		for (size_t i = 0; i < k && c->first_got < 8; i++)
			c->first[c->first_got++] = p[i];
		c->body_left -= k;
		p += k;
		n -= k;
		if (!c->body_left) {
			c->hdr_got = 0;
			reply(c);
		}
	}
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	uint8_t buf[65536];
	for (;;) {
		bool pending = c->out_off < c->out_len;
		struct pollfd pf = { .fd = c->fd, .events = POLLIN | (pending ? POLLOUT : 0) };
		int n = poll(&pf, 1, pending || c->done ? -1 : SILENCE_MS);
		if (n < 0 && errno != EINTR)
			break;
		if (n == 0) {
			/* The daemon waits for the rest of a reply cut short,
			 * or is done with this connection: the relay falls
			 * silent, then closes its half. */
			shutdown(c->fd, SHUT_WR);
			c->done = true;
			continue;
		}
		if (pf.revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t r = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
				break;
			if (r > 0)
				take(c, buf, (size_t)r);
		}
		if (c->out_off < c->out_len && (pf.revents & POLLOUT)) {
			ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
					 MSG_DONTWAIT | MSG_NOSIGNAL);
			if (w < 0 && errno != EAGAIN && errno != EINTR)
				c->out_off = c->out_len;	/* the daemon is gone */
			else if (w > 0)
				c->out_off += (size_t)w;
		}
	}
	free(c->out);
	c->out = NULL;
	return NULL;
}

struct relay {
	const uint8_t *data;
	size_t size, off;
	int stop[2];			/* a pipe: written at the input's end */
	pthread_t thread;
	struct conn conns[MAX_CONNS];
	int nr;
};

/* The next connection's units: up to and including the first whose
 * length has bit 15 set (the connection's last), or the input's end. */
static void next_units(struct relay *r, struct conn *c)
{
	c->units = r->data + r->off;
	while (r->size - r->off >= 2) {
		size_t l = (size_t)r->data[r->off] | (size_t)r->data[r->off + 1] << 8;
		bool last = l & 0x8000;
		l &= 0x7fff;
		r->off += 2;
		r->off += l < r->size - r->off ? l : r->size - r->off;
		if (last)
			break;
	}
	if (r->size - r->off < 2)
		r->off = r->size;
	c->size = (size_t)(r->data + r->off - c->units);
}

static void *relay_main(void *arg)
{
	struct relay *r = arg;
	while (r->nr < MAX_CONNS) {
		struct pollfd pf[2] = { { .fd = listen_fd, .events = POLLIN },
					{ .fd = r->stop[0], .events = POLLIN } };
		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			break;
		if (pf[1].revents)
			break;
		if (!(pf[0].revents & POLLIN))
			continue;
		int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			continue;
		uint32_t role;
		char host[RNET_HOST_MAX + 1], err[256];
		if (rnet_server_handshake(fd, &secret, &role, host, 2000, err, sizeof(err)) < 0) {
			close(fd);
			continue;
		}
		struct conn *c = &r->conns[r->nr];
		*c = (struct conn){ .fd = fd };
		next_units(r, c);
		if (pthread_create(&c->thread, NULL, conn_main, c)) {
			close(fd);
			continue;
		}
		r->nr++;
	}
	return NULL;
}

static int relay_start(struct relay *r, const uint8_t *data, size_t size)
{
	*r = (struct relay){ .data = data, .size = size };
	if (pipe2(r->stop, O_CLOEXEC) < 0)
		return -errno;
	if (pthread_create(&r->thread, NULL, relay_main, r)) {
		close(r->stop[0]);
		close(r->stop[1]);
		return -EAGAIN;
	}
	return 0;
}

/* After the daemon's side closed every connection. */
static void relay_join(struct relay *r)
{
	char c = 0;
	if (write(r->stop[1], &c, 1) < 0)
		abort();
	pthread_join(r->thread, NULL);
	for (int i = 0; i < r->nr; i++) {
		pthread_join(r->conns[i].thread, NULL);
		close(r->conns[i].fd);
	}
	close(r->stop[0]);
	close(r->stop[1]);
}

/* ---- the daemon's side ---- */

static void no_lock(void *arg)
{
	(void)arg;
}

static bool no_fields(void *arg, uint32_t stream_id, uint32_t id,
		      const struct rt_field_desc **fields, uint32_t *nr)
{
	(void)arg, (void)stream_id, (void)id, (void)fields, (void)nr;
	return false;
}

static int no_classes(void *arg, uint32_t from, struct ctf_event_class **ev, uint32_t *nr,
		      uint64_t *generation)
{
	(void)arg, (void)from;
	*ev = NULL;
	*nr = 0;
	*generation = 1;
	return 0;
}

static uint64_t generation(void *arg)
{
	(void)arg;
	return 1;
}

static void cleanup(void)
{
	static const char *const files[] = { "snap/t/channel0_0", "snap/t/metadata", "snap/t",
					     "snap", "secret", "" };
	char path[128];
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", root, files[i]);
		remove(path);
	}
}

static void setup(void)
{
	if (listen_fd >= 0)
		return;
	snprintf(root, sizeof(root), "/tmp/fuzz-netsink-XXXXXX");
	if (!mkdtemp(root))
		abort();
	atexit(cleanup);
	char path[128], err[512];
	snprintf(path, sizeof(path), "%s/secret", root);
	setenv("RINGTRACE_RELAY_SECRET", path, 1);
	setenv("RINGTRACE_HOSTNAME", "fuzzhost", 1);
	if (rnet_secret_load(&secret, true, err, sizeof(err)) < 0)
		abort();
	listen_fd = rnet_listen("127.0.0.1", 0, err, sizeof(err));
	port = listen_fd < 0 ? -1 : rnet_local_port(listen_fd);
	if (port < 0)
		abort();
	/* A snapshot to upload: a trace directory with its metadata and a
	 * stream file of one packet. */
	snprintf(path, sizeof(path), "%s/snap", root);
	if (mkdir(path, 0700) < 0)
		abort();
	snprintf(path, sizeof(path), "%s/snap/t", root);
	if (mkdir(path, 0700) < 0)
		abort();
	snprintf(path, sizeof(path), "%s/snap/t/metadata", root);
	FILE *f = fopen(path, "w");
	if (!f)
		abort();
	fputs("/* CTF 1.8 */\n", f);
	fclose(f);
	struct ctf_packet_header h = { .magic = CTF_MAGIC, .packet_size = 8 * 128,
				       .content_size = 8 * sizeof(h) };
	uint8_t pkt[128] = { 0 };
	memcpy(pkt, &h, sizeof(h));
	snprintf(path, sizeof(path), "%s/snap/t/channel0_0", root);
	f = fopen(path, "w");
	if (!f || fwrite(pkt, sizeof(pkt), 1, f) != 1)
		abort();
	fclose(f);
}

/* A call's outcome as the daemon shows it: 0 or a negative errno, and a
 * message (the relay's text among it) safe to print on a terminal. */
static void check_outcome(int ret, const char *msg)
{
	FUZZ_CHECK(ret <= 0 && ret > -4096);
	for (const char *c = msg; *c; c++)
		FUZZ_CHECK(*c >= 0x20 && *c <= 0x7e);
}

/* What a stream was given. */
struct given {
	uint64_t packets, events;
};

static void packet(char *buf, size_t len, uint32_t stream, uint64_t seq)
{
	struct ctf_packet_header h = { .magic = CTF_MAGIC, .stream_instance_id = stream,
				       .timestamp_begin = 100 * seq, .timestamp_end = 100 * seq + 50,
				       .content_size = 8 * len, .packet_size = 8 * len,
				       .packet_seq_num = seq, .cpu_id = stream };
	memset(buf, 0, len);
	memcpy(buf, &h, sizeof(h));
}

static void write_packets(struct cons_sink *sink, struct given *g, uint64_t *seq, int n)
{
	char buf[128];
	for (int k = 0; k < n; k++) {
		uint32_t stream = (uint32_t)k % 2;
		packet(buf, sizeof(buf), stream, seq[stream]++);
		sink->ops->write(sink->arg, stream, buf, sizeof(buf), 3);
		g[stream].packets++;
		g[stream].events += 3;
	}
}

static void session(void)
{
	struct cons_net n;
	char err[512], where[512];
	int ret = cons_net_open(&n, "127.0.0.1", port, port, SESSION, 1700000000, 100000, err,
				sizeof(err));
	if (ret < 0) {
		check_outcome(ret, err);
		FUZZ_CHECK(err[0] != 0);
		return;
	}
	FUZZ_CHECK(n.clock_error_ns > 0);
	struct cons_trace_desc t = {
		.dir = "/out/" TRACE_PATH,
		.classes = { .lock = no_lock, .unlock = no_lock, .fields = no_fields,
			     .copy = no_classes, .generation = generation },
		.hostname = "fuzzhost",
	};
	struct cons_channel_desc ch = { .name = "channel0" };
	const struct cons_channel_desc *chans[] = { &ch };
	struct cons_net_trace nt;
	struct cons_net_sink ns;
	struct cons_sink sink;
	struct given g[2] = { { 0 } };
	uint64_t seq[2] = { 0, 0 };
	FUZZ_CHECK(cons_net_trace_open(&nt, &n, "/out", t.dir) == 0);
	if (cons_net_sink_init(&ns, &nt, &ch, 2) < 0)
		abort();
	cons_net_sink(&sink, &ns);
	cons_net_metadata(&nt, &t, chans, 1);
	write_packets(&sink, g, seq, 4);
	cons_net_sink_beacon(&ns, 0, 1000);
	cons_net_sync(&n);
	/* The relay away and back: connected again at the next packet. */
	pthread_mutex_lock(&n.lock);
	cons_net_disconnect_locked(&n);
	n.retry_ns = 0;
	pthread_mutex_unlock(&n.lock);
	cons_net_metadata(&nt, &t, chans, 1);
	write_packets(&sink, g, seq, 4);
	for (uint32_t i = 0; i < 2; i++)
		sink.ops->settle(sink.arg, i);
	sink.ops->rotate(sink.arg, "/out/chunk-1/" TRACE_PATH);
	/* Packets of the next chunk: connected again if the rotation found
	 * the relay away (its chunk's packets in flight asked of it then). */
	pthread_mutex_lock(&n.lock);
	n.retry_ns = 0;
	pthread_mutex_unlock(&n.lock);
	write_packets(&sink, g, seq, 2);
	for (uint32_t i = 0; i < 2; i++)
		sink.ops->settle(sink.arg, i);
	ret = cons_net_archive(&n, "", "archive-0", where, sizeof(where), err, sizeof(err));
	check_outcome(ret, ret < 0 ? err : where);
	FUZZ_CHECK(ret == 0 || err[0] != 0);
	uint64_t id;
	uint32_t asked;
	ret = cons_net_cluster_trigger(&n, rnet_realtime_ns(), &id, &asked, err, sizeof(err));
	check_outcome(ret, err);
	FUZZ_CHECK(ret == 0 || err[0] != 0);
	char snap[128];
	snprintf(snap, sizeof(snap), "%s/snap", root);
	ret = cons_net_upload(&n, snap, "snapshot-1", err, sizeof(err));
	check_outcome(ret, err);
	FUZZ_CHECK(ret == 0 || err[0] != 0);
	for (uint32_t i = 0; i < 2; i++) {
		const struct cons_net_stream *s = &ns.s[i];
		/* A packet is counted lost once: unsent (write failed) or
		 * sent and found unstored, never both, never more than
		 * were given (and header-only packets carry no events). */
		FUZZ_CHECK(s->lost_packets <= g[i].packets);
		FUZZ_CHECK(s->lost_events <= g[i].events);
		FUZZ_CHECK(s->unstored_events <= s->lost_events);
	}
	cons_net_sink_free(&ns);
	cons_net_close(&n);
}

static void listener(void)
{
	struct cons_net n;
	char err[512];
	if (cons_net_open(&n, "127.0.0.1", port, port, SESSION, 1700000000, 0, err,
			  sizeof(err)) < 0)
		return;
	int fd = cons_net_cluster_listen(&n, err, sizeof(err));
	if (fd < 0)
		check_outcome(fd, err);
	uint64_t last = 0;
	for (int k = 0; fd >= 0 && k < 64; k++) {
		struct rnet_cluster_req q;
		if (rnet_cluster_recv(fd, 1000, &q) < 0)
			break;
		FUZZ_CHECK(rnet_check_name(q.name, RNET_NAME_MAX) == 0);
		int ret = rnet_cluster_check(&q, SESSION, last, err, sizeof(err));
		if (!ret) {
			FUZZ_CHECK(q.id > last && !strcmp(q.session, SESSION));
			last = q.id;
			snprintf(err, sizeof(err), "stored as %s", q.name);
		}
		if (rnet_cluster_done(fd, q.id, ret, err, 1000) < 0)
			break;
	}
	if (fd >= 0)
		close(fd);
	cons_net_close(&n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 65536)
		return 0;
	setup();
	struct relay r;
	if (relay_start(&r, data + 1, size - 1) < 0)
		return 0;
	if (data[0] % 2 == 0)
		session();
	else
		listener();
	relay_join(&r);
	return 0;
}
