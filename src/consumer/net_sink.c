/*
 * net_sink.c - the consumer's network sink (consumer_net.h): a session's
 * connections to the relay, its traces' metadata and its channels'
 * packets sent there, packets that cannot be sent counted as lost.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <sys/stat.h>

#include "../common/array.h"
#include "consumer_net.h"

/* The packets sent and not yet known to be stored, per stream: after a
 * new connection the relay says which it has, the others are lost. */
#define NET_INFLIGHT 512u

/* ---- the connections ---- */

static void disconnect(struct cons_net *n)
{
	if (n->ctrl >= 0)
		close(n->ctrl);
	if (n->data >= 0)
		close(n->data);
	n->ctrl = n->data = -1;
	n->retry_ns = cons_now_ns() + RNET_RETRY_MS * 1000000ull;
}

/* A request answered by REPLY: 0 and *value, *value2 (and the relay's
 * message, if any, in err), or the relay's negative status (message in
 * err, printable: rnet_shown), or -errno of the connection (-EPROTO: a
 * malformed reply). */
static int request(int fd, uint16_t type, const struct rnet_wr *w, uint64_t *value,
		   uint64_t *value2, char *err, size_t errlen)
{
	struct rnet_hdr h;
	uint8_t *p = NULL;
	int ret = w->err ? w->err : rnet_send(fd, type, w->p, (uint32_t)w->len, RNET_SEND_MS);
	if (!ret)
		ret = rnet_recv(fd, &h, &p, RNET_CONNECT_MS);
	if (!ret && h.type != RNET_REPLY)
		ret = -EPROTO;
	if (!ret) {
		char msg[RNET_MSG_MAX + 1];
		struct rnet_rd r = { .p = p, .len = h.length };
		int32_t status = (int32_t)rnet_get_u32(&r);
		uint64_t v = rnet_get_u64(&r), v2 = rnet_get_u64(&r);
		rnet_get_str(&r, msg, RNET_MSG_MAX);
		rnet_shown(msg);
		/* A status is 0 or a negative errno (Linux's are above
		 * -4096): another one could not be told from ours. */
		if (rnet_rd_end(&r) < 0 || status > 0 || status < -4095) {
			ret = -EPROTO;
		} else if (status < 0) {
			snprintf(err, errlen, "the relay refused: %s", msg);
			ret = status;
		} else {
			*value = v;
			if (value2)
				*value2 = v2;
			snprintf(err, errlen, "%s", msg);
		}
	}
	free(p);
	if (ret < 0 && !err[0])
		snprintf(err, errlen, "%s", strerror(-ret));
	return ret;
}

/* NTP's estimate over a few exchanges, the one with the shortest round
 * trip kept: relay = ours + offset, error half that round trip. */
static int clock_sync(struct cons_net *n)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 4; i++) {
		struct rnet_wr w = { 0 };
		struct rnet_hdr h;
		uint8_t *p = NULL;
		uint64_t t1 = rnet_realtime_ns();
		rnet_put_u64(&w, t1);
		int ret = w.err ? w.err : rnet_send(n->ctrl, RNET_CLOCK, w.p, (uint32_t)w.len,
						    RNET_SEND_MS);
		rnet_wr_free(&w);
		if (!ret)
			ret = rnet_recv(n->ctrl, &h, &p, RNET_CONNECT_MS);
		uint64_t t4 = rnet_realtime_ns();
		if (!ret && h.type != RNET_CLOCK_REPLY)
			ret = -EPROTO;
		if (ret < 0) {
			free(p);
			return ret;
		}
		struct rnet_rd r = { .p = p, .len = h.length };
		uint64_t e1 = rnet_get_u64(&r), t2 = rnet_get_u64(&r), t3 = rnet_get_u64(&r);
		free(p);
		/* The relay's times are wall-clock nanoseconds (below 2^63,
		 * as ours): the offset then fits in 64 bits. */
		if (rnet_rd_end(&r) < 0 || e1 != t1 || t3 < t2 || t4 < t1 || t4 - t1 < t3 - t2 ||
		    t3 > INT64_MAX || t4 > INT64_MAX)
			return -EPROTO;
		uint64_t rtt = (t4 - t1) - (t3 - t2);
		if (rtt < best) {
			best = rtt;
			n->clock_offset_ns = (int64_t)(((__int128)t2 - t1 + ((__int128)t3 - t4)) / 2);
			n->clock_error_ns = rtt / 2 + 1;
		}
	}
	return 0;
}

/* One authenticated connection of `role` to `port`. */
static int dial(struct cons_net *n, int port, uint32_t role, char *err, size_t errlen)
{
	int fd = rnet_connect(n->relay, port, RNET_CONNECT_MS, err, errlen);
	if (fd < 0)
		return fd;
	char why[256];
	int ret = rnet_client_handshake(fd, &n->key, role, n->host, RNET_CONNECT_MS, why,
					sizeof(why));
	if (ret < 0) {
		snprintf(err, errlen, "relay at %s port %d: %s", n->relay, port, why);
		close(fd);
		return ret;
	}
	return fd;
}

static int connect_locked(struct cons_net *n, char *err, size_t errlen)
{
	struct rnet_wr w = { 0 };
	uint64_t id = 0;
	err[0] = 0;
	int ret = n->ctrl = dial(n, n->ctrl_port, RNET_ROLE_CTRL, err, errlen);
	if (ret >= 0)
		ret = clock_sync(n);
	if (ret >= 0) {
		rnet_put_str(&w, n->session);
		rnet_put_u64(&w, n->created);
		rnet_put_u32(&w, n->live_delay_us);
		rnet_put_u32(&w, 0);
		ret = request(n->ctrl, RNET_CREATE_SESSION, &w, &id, NULL, err, errlen);
		rnet_wr_free(&w);
	}
	if (ret >= 0)
		ret = n->data = dial(n, n->data_port, RNET_ROLE_DATA, err, errlen);
	if (ret >= 0) {
		rnet_put_u64(&w, id);
		ret = request(n->data, RNET_DATA_ATTACH, &w, &id, NULL, err, errlen);
		rnet_wr_free(&w);
	}
	if (ret < 0) {
		if (!err[0])
			snprintf(err, errlen, "%s", strerror(-ret));
		snprintf(n->last_error, sizeof(n->last_error), "%s", err);
		disconnect(n);
		return ret;
	}
	n->relay_session = id;
	n->epoch++;
	n->last_error[0] = 0;
	return 0;
}

/* Connected, or connecting again when the time has come. */
static int ensure(struct cons_net *n)
{
	char err[256];
	if (n->ctrl >= 0)
		return 0;
	if (cons_now_ns() < n->retry_ns)
		return -ENOTCONN;
	return connect_locked(n, err, sizeof(err));
}

int cons_net_open(struct cons_net *n, const char *relay, int ctrl_port, int data_port,
		  const char *session, uint64_t created, uint32_t live_delay_us, char *err,
		  size_t errlen)
{
	memset(n, 0, sizeof(*n));
	n->ctrl = n->data = -1;
	if (strlen(relay) >= sizeof(n->relay) || rnet_check_name(session, RNET_NAME_MAX) < 0) {
		snprintf(err, errlen, "bad relay address or session name");
		return -EINVAL;
	}
	snprintf(n->relay, sizeof(n->relay), "%s", relay);
	snprintf(n->session, sizeof(n->session), "%s", session);
	n->ctrl_port = ctrl_port;
	n->data_port = data_port;
	n->created = created;
	n->live_delay_us = live_delay_us;
	int ret = rnet_hostname(n->host, sizeof(n->host), err, errlen);
	if (!ret)
		ret = rnet_secret_load(&n->key, false, err, errlen);
	if (!ret)
		ret = connect_locked(n, err, errlen);
	if (ret < 0)
		return ret;
	pthread_mutex_init(&n->lock, NULL);
	return 0;
}

/* Every packet sent stored (DATA_SYNC on the data connection) and the
 * metadata too: the control connection's METADATA frames have no reply,
 * and the relay serves each connection on a thread of its own, so a
 * request answered there (a CLOCK exchange) comes after them. */
static int sync_locked(struct cons_net *n)
{
	if (n->data < 0)
		return -ENOTCONN;
	struct rnet_hdr h;
	uint8_t *p = NULL;
	int ret = rnet_send(n->data, RNET_DATA_SYNC, NULL, 0, RNET_SEND_MS);
	if (!ret)
		ret = rnet_recv(n->data, &h, &p, RNET_SYNC_MS);
	if (!ret && h.type != RNET_REPLY)
		ret = -EPROTO;
	free(p);
	p = NULL;
	if (!ret) {
		struct rnet_wr w = { 0 };
		rnet_put_u64(&w, rnet_realtime_ns());
		ret = w.err ? w.err : rnet_send(n->ctrl, RNET_CLOCK, w.p, (uint32_t)w.len,
						 RNET_SEND_MS);
		rnet_wr_free(&w);
		if (!ret)
			ret = rnet_recv(n->ctrl, &h, &p, RNET_SYNC_MS);
		if (!ret && h.type != RNET_CLOCK_REPLY)
			ret = -EPROTO;
		free(p);
	}
	if (ret < 0)
		disconnect(n);
	return ret;
}

int cons_net_sync(struct cons_net *n)
{
	pthread_mutex_lock(&n->lock);
	int ret = sync_locked(n);
	pthread_mutex_unlock(&n->lock);
	return ret;
}

void cons_net_close(struct cons_net *n)
{
	pthread_mutex_lock(&n->lock);
	sync_locked(n);
	if (n->ctrl >= 0) {
		struct rnet_wr w = { 0 };
		uint64_t v;
		char err[256] = "";
		rnet_put_u64(&w, n->relay_session);
		request(n->ctrl, RNET_CLOSE_SESSION, &w, &v, NULL, err, sizeof(err));
		rnet_wr_free(&w);
	}
	disconnect(n);
	pthread_mutex_unlock(&n->lock);
	pthread_mutex_destroy(&n->lock);
}

bool cons_net_connected(struct cons_net *n)
{
	pthread_mutex_lock(&n->lock);
	bool up = n->ctrl >= 0;
	pthread_mutex_unlock(&n->lock);
	return up;
}

/* A stream of this trace on the relay (lock held): its id and
 * value2 (its last stored packet_seq_num + 1, 0: none). */
static int add_stream_at(struct cons_net *n, const char *path, const char *channel,
			 uint32_t cpu, bool metadata, uint64_t *id, uint64_t *last)
{
	struct rnet_wr w = { 0 };
	char err[256] = "";
	rnet_put_u64(&w, n->relay_session);
	rnet_put_str(&w, path);
	rnet_put_str(&w, channel);
	rnet_put_u32(&w, cpu);
	rnet_put_u32(&w, metadata ? 1u : 0u);
	int ret = request(n->ctrl, RNET_ADD_STREAM, &w, id, last, err, sizeof(err));
	rnet_wr_free(&w);
	if (ret < 0)
		snprintf(n->last_error, sizeof(n->last_error), "%s", err);
	return ret;
}

/* The same in the trace's current path. */
static int add_stream(struct cons_net_trace *nt, const char *channel, uint32_t cpu,
		      bool metadata, uint64_t *id, uint64_t *last)
{
	return add_stream_at(nt->net, nt->path, channel, cpu, metadata, id, last);
}

/* The end of a stream on the relay (lock held, connected): no reply. */
static void close_stream(struct cons_net *n, uint64_t id)
{
	struct rnet_wr w = { 0 };
	rnet_put_u64(&w, id);
	if (!w.err && rnet_send(n->ctrl, RNET_CLOSE_STREAM, w.p, (uint32_t)w.len, RNET_SEND_MS) < 0)
		disconnect(n);
	rnet_wr_free(&w);
}

/* ---- metadata ---- */

int cons_net_trace_init(struct cons_net_trace *nt, struct cons_net *n, const char *path)
{
	memset(nt, 0, sizeof(*nt));
	if (rnet_check_path(path) < 0)
		return -EINVAL;
	nt->net = n;
	snprintf(nt->path, sizeof(nt->path), "%s", path);
	return 0;
}

int cons_net_relay_path(const char *root, const char *dir, char *out, size_t len)
{
	size_t n = strlen(root);
	if (strncmp(dir, root, n) || dir[n] != '/')
		return -EINVAL;
	if (strlen(dir + n + 1) >= len)
		return -ENAMETOOLONG;
	snprintf(out, len, "%s", dir + n + 1);
	for (char *p = out; *p; p++) {
		bool ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			  (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' || *p == '/' ||
			  *p == '+' || (*p == '.' && p > out && p[-1] != '/');
		if (!ok)
			*p = '_';
	}
	return rnet_check_path(out) < 0 ? -EINVAL : 0;
}

int cons_net_trace_open(struct cons_net_trace *nt, struct cons_net *n, const char *root,
			const char *dir)
{
	char path[RNET_PATH_MAX + 1];
	if (strlen(root) >= sizeof(nt->root))
		return -ENAMETOOLONG;
	int ret = cons_net_relay_path(root, dir, path, sizeof(path));
	if (!ret)
		ret = cons_net_trace_init(nt, n, path);
	if (!ret)
		snprintf(nt->root, sizeof(nt->root), "%s", root);
	return ret;
}

static int send_metadata(struct cons_net_trace *nt, const struct cons_trace_desc *t,
			 const struct cons_channel_desc *const *chans, size_t nr)
{
	struct cons_net *n = nt->net;
	struct cons_metadata_state *st = &nt->meta;
	if (st->written && t->classes.generation(t->classes.arg) == st->generation)
		return 0;
	/* Whole the first time on this connection, then the classes
	 * registered since appended: the relay's file is the local one. */
	struct ctf_buf b = { 0 };
	uint32_t nev = 0;
	uint64_t gen = 0;
	int ret = cons_metadata_build(&b, t, chans, nr,
				      st->written ? CONS_META_EVENTS : CONS_META_ALL,
				      st->written ? st->nr_events : 0, &nev, &gen);
	uint64_t off = st->written ? nt->meta_bytes : 0;
	for (size_t done = 0; !ret && done < b.len;) {
		size_t len = b.len - done < RNET_METADATA_MAX ? b.len - done : RNET_METADATA_MAX;
		struct rnet_wr w = { 0 };
		rnet_put_u64(&w, nt->meta_id);
		rnet_put_u64(&w, off + done);
		ret = w.err ? w.err : rnet_send2(n->ctrl, RNET_METADATA, w.p, (uint32_t)w.len,
						 b.data + done, (uint32_t)len, RNET_SEND_MS);
		rnet_wr_free(&w);
		done += len;
	}
	if (!ret) {
		nt->meta_bytes = off + b.len;
		st->nr_events = (st->written ? st->nr_events : 0) + nev;
		st->generation = gen;
		st->written = true;
	}
	ctf_buf_free(&b);
	return ret;
}

static int stream_add(struct cons_net_sink *ns, uint32_t stream);

int cons_net_metadata(struct cons_net_trace *nt, const struct cons_trace_desc *t,
		      const struct cons_channel_desc *const *chans, size_t nr)
{
	struct cons_net *n = nt->net;
	pthread_mutex_lock(&n->lock);
	int ret = ensure(n);
	if (!ret && nt->meta_epoch != n->epoch) {
		/* The data streams first: the metadata stream says they are
		 * all there (consumer_net.h). */
		for (size_t k = 0; !ret && k < nt->nr_sinks; k++)
			for (uint32_t i = 0; !ret && i < nt->sinks[k]->nr; i++)
				ret = stream_add(nt->sinks[k], i);
		uint64_t last;
		if (!ret)
			ret = add_stream(nt, "metadata", 0, true, &nt->meta_id, &last);
		if (!ret) {
			nt->meta_epoch = n->epoch;
			nt->meta = (struct cons_metadata_state){ 0 };
		}
	}
	if (!ret)
		ret = send_metadata(nt, t, chans, nr);
	if (ret < 0 && ret != -ENOTCONN && n->ctrl >= 0)
		disconnect(n);
	pthread_mutex_unlock(&n->lock);
	return ret;
}

/* ---- packets ---- */

struct inflight {
	uint64_t seq, events, ts_begin, ts_end, discarded;
};

/* The stream's ring of packets sent since its last confirmation. */
struct net_stream_ring {
	struct inflight e[NET_INFLIGHT];
	uint32_t head, nr;
};

int cons_net_sink_init(struct cons_net_sink *ns, struct cons_net_trace *nt,
		       const struct cons_channel_desc *ch, uint32_t nr)
{
	*ns = (struct cons_net_sink){ .nt = nt, .ch = ch, .nr = nr };
	if (RT_ARRAY_GROW(nt->sinks, nt->cap_sinks, nt->nr_sinks + 1, 4) < 0)
		return -ENOMEM;
	ns->s = calloc(nr ? nr : 1, sizeof(*ns->s) + sizeof(struct net_stream_ring));
	if (!ns->s)
		return -ENOMEM;
	nt->sinks[nt->nr_sinks++] = ns;
	return 0;
}

void cons_net_sink_free(struct cons_net_sink *ns)
{
	struct cons_net_trace *nt = ns->nt;
	for (size_t k = 0; nt && k < nt->nr_sinks; k++)
		if (nt->sinks[k] == ns) {
			nt->sinks[k] = nt->sinks[--nt->nr_sinks];
			break;
		}
	if (nt && !nt->nr_sinks) {
		free(nt->sinks);
		nt->sinks = NULL;
		nt->cap_sinks = 0;
	}
	/* Streams still waiting for the relay's word on an ended chunk
	 * (it stayed away to the end): no longer in the way of archiving. */
	for (uint32_t i = 0; nt && ns->s && i < ns->nr; i++)
		if (ns->s[i].unconfirmed[0]) {
			pthread_mutex_lock(&nt->net->lock);
			nt->net->unconfirmed--;
			pthread_mutex_unlock(&nt->net->lock);
		}
	free(ns->s);
	ns->s = NULL;
}

static struct net_stream_ring *ring_of(struct cons_net_sink *ns, uint32_t stream)
{
	return (struct net_stream_ring *)(ns->s + ns->nr) + stream;
}

static void lose(struct cons_net_stream *s, const char *pkt, uint64_t events)
{
	memcpy(&s->tomb_hdr, pkt, sizeof(s->tomb_hdr));
	s->lost_events += events;
	s->lost_packets++;
	s->tomb = true;
}

/* A new connection: the relay has this stream's packets up to
 * packet_seq_num `last` - 1 (last 0: none); those sent after it were
 * lost with the old connection. */
static void confirm(struct cons_net_stream *s, struct net_stream_ring *r, uint64_t last)
{
	bool newer_lost = s->tomb;	/* lost after these were sent */
	for (uint32_t i = 0; i < r->nr; i++) {
		const struct inflight *f = &r->e[(r->head + NET_INFLIGHT - r->nr + i) % NET_INFLIGHT];
		if (last && f->seq < last)
			continue;
		s->lost_events += f->events;
		s->lost_packets++;
		__atomic_fetch_add(&s->unstored_events, f->events, __ATOMIC_RELAXED);
		/* The newest lost packet's header stands for them: the
		 * stream's header with its numbers. */
		if (!newer_lost) {
			s->tomb = true;
			s->tomb_hdr.packet_seq_num = f->seq;
			s->tomb_hdr.timestamp_begin = f->ts_begin;
			s->tomb_hdr.timestamp_end = f->ts_end;
			s->tomb_hdr.events_discarded = f->discarded;
		}
	}
	r->nr = 0;
}

static int send_packet(struct cons_net *n, uint64_t id, const char *pkt, uint64_t len)
{
	struct ctf_packet_header h;
	memcpy(&h, pkt, sizeof(h));
	struct rnet_wr w = { 0 };
	rnet_put_u64(&w, id);
	rnet_put_u64(&w, h.packet_size);
	rnet_put_u64(&w, h.content_size);
	rnet_put_u64(&w, h.timestamp_begin);
	rnet_put_u64(&w, h.timestamp_end);
	rnet_put_u64(&w, h.events_discarded);
	rnet_put_u64(&w, h.stream_id);
	rnet_put_u64(&w, h.stream_instance_id);
	rnet_put_u64(&w, h.packet_seq_num);
	int ret = w.err ? w.err : len > RNET_PACKET_MAX ? -EMSGSIZE
			 : rnet_send2(n->data, RNET_PACKET, w.p, (uint32_t)w.len, pkt,
				      (uint32_t)len, RNET_SEND_MS);
	rnet_wr_free(&w);
	return ret;
}

/* A packet sent (its header as written, before events_discarded was
 * raised): in the ring, and its header the stream's template. */
static void remember(struct cons_net_stream *s, struct net_stream_ring *r, const char *pkt,
		     uint64_t events)
{
	struct ctf_packet_header h;
	memcpy(&h, pkt, sizeof(h));
	if (!s->tomb)
		s->tomb_hdr = h;
	r->e[r->head] = (struct inflight){ .seq = h.packet_seq_num, .events = events,
					   .ts_begin = h.timestamp_begin,
					   .ts_end = h.timestamp_end,
					   .discarded = h.events_discarded };
	r->head = (r->head + 1) % NET_INFLIGHT;
	if (r->nr < NET_INFLIGHT)
		r->nr++;
}

/* The ended chunk's stream `old` (added again: the relay has its packets
 * up to `last` - 1): the packets in flight it lacks counted lost, and in
 * that chunk too, as the header-only packet that ends it (its
 * events_discarded: the chunk's losses since its last stored packet, for
 * a reader of that chunk alone), then the stream closed. Lock held. 0 or
 * -errno of the connection. */
static int confirm_ended(struct cons_net_sink *ns, uint32_t stream, uint64_t old,
			 uint64_t last)
{
	struct cons_net_stream *s = &ns->s[stream];
	struct cons_net *n = ns->nt->net;
	uint64_t before = s->lost_events;
	confirm(s, ring_of(ns, stream), last);
	int ret = 0;
	if (!last || s->ended_hdr.packet_seq_num >= last) {
		char tomb[CTF_TOMB_SIZE];
		ctf_tomb_packet(&s->ended_hdr, s->ended_lost + (s->lost_events - before), tomb);
		ret = send_packet(n, old, tomb, sizeof(tomb));
	}
	if (!ret)
		close_stream(n, old);
	if (ret < 0 || n->ctrl < 0)
		return ret < 0 ? ret : -ENOTCONN;
	s->unconfirmed[0] = 0;
	n->unconfirmed--;
	return 0;
}

/* The stream added on this connection (once), what the relay lost of
 * the last one counted. Connected, lock held. 0 or -errno. */
static int stream_add(struct cons_net_sink *ns, uint32_t stream)
{
	struct cons_net_stream *s = &ns->s[stream];
	struct cons_net *n = ns->nt->net;
	if (s->epoch == n->epoch)
		return 0;
	uint64_t last = 0, old;
	int ret = 0;
	if (s->unconfirmed[0]) {
		ret = add_stream_at(n, s->unconfirmed, ns->ch->name, stream, false, &old, &last);
		if (!ret) {
			ret = confirm_ended(ns, stream, old, last);
		} else if (!strncmp(n->last_error, "the relay refused", 17)) {
			/* It cannot say: the stream goes on in its chunk,
			 * those packets left uncounted (the relay said why). */
			s->unconfirmed[0] = 0;
			n->unconfirmed--;
			ret = 0;
		}
		last = 0;
	}
	if (!ret)
		ret = add_stream(ns->nt, ns->ch->name, stream, false, &s->id, &last);
	if (!ret) {
		if (s->epoch)
			confirm(s, ring_of(ns, stream), last);
		s->epoch = n->epoch;
	}
	return ret;
}

/* Connected, the stream added on this connection (stream_add), and the
 * header-only packet that is due sent. Lock held. */
static int stream_ready(struct cons_net_sink *ns, uint32_t stream)
{
	struct cons_net_stream *s = &ns->s[stream];
	struct net_stream_ring *r = ring_of(ns, stream);
	struct cons_net *n = ns->nt->net;
	int ret = ensure(n);
	if (!ret)
		ret = stream_add(ns, stream);
	if (!ret && s->tomb) {
		char tomb[CTF_TOMB_SIZE];
		ctf_tomb_packet(&s->tomb_hdr, s->lost_events, tomb);
		ret = send_packet(n, s->id, tomb, sizeof(tomb));
		if (!ret) {
			s->tomb = false;
			/* Its events_discarded already counts the lost ones:
			 * as remembered, it says the packet's own. */
			memcpy(tomb, &s->tomb_hdr, sizeof(s->tomb_hdr));
			remember(s, r, tomb, 0);
		}
	}
	if (ret < 0 && ret != -ENOTCONN && n->ctrl >= 0)
		disconnect(n);
	return ret;
}

static int net_write(void *arg, uint32_t stream, char *data, uint64_t len, uint64_t events)
{
	struct cons_net_sink *ns = arg;
	struct cons_net_stream *s = &ns->s[stream];
	struct net_stream_ring *r = ring_of(ns, stream);
	struct cons_net *n = ns->nt->net;
	pthread_mutex_lock(&n->lock);
	int ret = stream_ready(ns, stream);
	if (!ret) {
		struct ctf_packet_header h;
		memcpy(&h, data, sizeof(h));
		uint64_t d = h.events_discarded + s->lost_events;
		memcpy(data + offsetof(struct ctf_packet_header, events_discarded), &d, 8);
		ret = send_packet(n, s->id, data, len);
		memcpy(data, &h, sizeof(h));
		if (!ret)
			remember(s, r, data, events);
	}
	if (ret < 0) {
		if (ret != -ENOTCONN && n->ctrl >= 0)
			disconnect(n);
		lose(s, data, events);
	}
	pthread_mutex_unlock(&n->lock);
	return ret;
}

static void net_lose(void *arg, uint32_t stream, const char *data, uint64_t events)
{
	struct cons_net_sink *ns = arg;
	lose(&ns->s[stream], data, events);
}

static void net_lost_events(void *arg, uint32_t stream, uint64_t events)
{
	struct cons_net_sink *ns = arg;
	ns->s[stream].lost_events += events;
}

/* The end: the header-only packet that is due, and what the relay has of
 * an ended chunk's packets in flight, if they can go now. */
static int net_settle(void *arg, uint32_t stream)
{
	struct cons_net_sink *ns = arg;
	struct cons_net *n = ns->nt->net;
	if (!ns->s[stream].tomb && !ns->s[stream].unconfirmed[0])
		return 0;
	pthread_mutex_lock(&n->lock);
	int ret = stream_ready(ns, stream);
	pthread_mutex_unlock(&n->lock);
	return ret;
}

/* Session rotation (consumer.h's sink rotate): the trace's packets from
 * now on go to the relay path of `dir` (the next chunk's copy of the
 * trace). The first of the trace's sinks to rotate waits until the relay
 * stored what was sent (the ended chunk is then whole there and may be
 * archived) and ends the metadata stream; each sink ends its streams.
 * The next packet or beacon adds the new chunk's streams, and the next
 * metadata call its metadata stream, whole. */
static int net_rotate(void *arg, const char *dir)
{
	struct cons_net_sink *ns = arg;
	struct cons_net_trace *nt = ns->nt;
	struct cons_net *n = nt->net;
	char path[RNET_PATH_MAX + 1];
	int ret = nt->root[0] ? cons_net_relay_path(nt->root, dir, path, sizeof(path)) : -EINVAL;
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&n->lock);
	if (strcmp(path, nt->path)) {
		nt->chunk_stored = sync_locked(n) == 0;
		if (n->ctrl >= 0 && nt->meta_epoch == n->epoch)
			close_stream(n, nt->meta_id);
		snprintf(nt->ended, sizeof(nt->ended), "%s", nt->path);
		snprintf(nt->path, sizeof(nt->path), "%s", path);
		nt->meta_epoch = 0;
		nt->meta = (struct cons_metadata_state){ 0 };
		nt->meta_bytes = 0;
	}
	for (uint32_t i = 0; i < ns->nr; i++) {
		struct cons_net_stream *s = &ns->s[i];
		struct net_stream_ring *r = ring_of(ns, i);
		if (n->ctrl >= 0 && s->epoch == n->epoch)
			close_stream(n, s->id);
		/* Stored: nothing of the ring can be lost any more. Not
		 * stored (the relay is away): the ended chunk's stream is
		 * asked at the next connection (stream_add). A ring that
		 * waits for that already holds an older chunk's packets,
		 * and nothing since (nothing is sent before it is asked). */
		if (!s->unconfirmed[0] && r->nr && !nt->chunk_stored) {
			snprintf(s->unconfirmed, sizeof(s->unconfirmed), "%s", nt->ended);
			s->ended_hdr = s->tomb_hdr;
			s->ended_lost = s->lost_events;
			n->unconfirmed++;
		} else if (!s->unconfirmed[0]) {
			r->nr = 0;
		}
		s->epoch = 0;
	}
	pthread_mutex_unlock(&n->lock);
	return nt->chunk_stored ? 0 : -ENOTCONN;
}

int cons_net_archive(struct cons_net *n, const char *chunk, const char *name, char *where,
		     size_t wlen, char *err, size_t errlen)
{
	pthread_mutex_lock(&n->lock);
	err[0] = 0;
	int ret = n->ctrl >= 0 ? 0 : connect_locked(n, err, errlen);
	if (!ret && n->unconfirmed) {
		snprintf(err, errlen, "the relay was away at the rotation: %u streams' packets "
			 "in flight then are not confirmed yet (the chunk stays in place)",
			 n->unconfirmed);
		ret = -EAGAIN;
	} else if (!ret) {
		struct rnet_wr w = { 0 };
		uint64_t v;
		rnet_put_u64(&w, n->relay_session);
		rnet_put_str(&w, chunk);
		rnet_put_str(&w, name);
		ret = request(n->ctrl, RNET_ARCHIVE_CHUNK, &w, &v, NULL, err, errlen);
		rnet_wr_free(&w);
		if (!ret)
			snprintf(where, wlen, "%s", err);
		else if (n->ctrl >= 0 && strncmp(err, "the relay refused", 17))
			disconnect(n);	/* the connection failed, not the request */
	}
	pthread_mutex_unlock(&n->lock);
	if (ret < 0 && !err[0])
		snprintf(err, errlen, "%s", strerror(-ret));
	return ret;
}

int cons_net_sink_beacon(struct cons_net_sink *ns, uint32_t stream, uint64_t ts)
{
	struct cons_net *n = ns->nt->net;
	pthread_mutex_lock(&n->lock);
	int ret = stream_ready(ns, stream);
	if (!ret) {
		struct rnet_wr w = { 0 };
		rnet_put_u64(&w, ns->s[stream].id);
		rnet_put_u64(&w, ts);
		rnet_put_u64(&w, ns->ch->stream_id);
		ret = w.err ? w.err : rnet_send(n->data, RNET_BEACON, w.p, (uint32_t)w.len,
						 RNET_SEND_MS);
		rnet_wr_free(&w);
		if (ret < 0 && n->ctrl >= 0)
			disconnect(n);
	}
	pthread_mutex_unlock(&n->lock);
	return ret;
}

static const struct cons_sink_ops net_ops = {
	.write = net_write,
	.lose = net_lose,
	.lost_events = net_lost_events,
	.settle = net_settle,
	.rotate = net_rotate,
	.what = "a packet to the relay",
};

void cons_net_sink(struct cons_sink *s, struct cons_net_sink *ns)
{
	*s = (struct cons_sink){ .ops = &net_ops, .arg = ns };
}

uint64_t cons_net_sink_unstored(const struct cons_net_sink *ns)
{
	uint64_t n = 0;
	for (uint32_t i = 0; ns->s && i < ns->nr; i++)
		n += __atomic_load_n(&ns->s[i].unstored_events, __ATOMIC_RELAXED);
	return n;
}

/* ---- uploading a trace directory (snapshots) ---- */

struct upload {
	struct cons_net *n;
	char *err;
	size_t errlen;
	char *buf;			/* one packet */
	size_t cap;
};

/* A stream file, packet by packet: each its header's packet_size. */
static int upload_stream(struct upload *u, int dirfd, const char *name, const char *path)
{
	const char *us = strrchr(name, '_');
	char channel[RNET_NAME_MAX + 1], *end;
	if (!us || us == name || (size_t)(us - name) > RNET_NAME_MAX)
		return 0;	/* not a stream file */
	unsigned long cpu = strtoul(us + 1, &end, 10);
	if (*end || us[1] < '0' || us[1] > '9' || cpu > UINT32_MAX)
		return 0;
	memcpy(channel, name, (size_t)(us - name));
	channel[us - name] = 0;
	struct cons_net_trace nt;
	uint64_t id, last;
	int ret = cons_net_trace_init(&nt, u->n, path);
	if (!ret)
		ret = add_stream(&nt, channel, (uint32_t)cpu, false, &id, &last);
	if (ret < 0)
		return ret;
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (uint64_t off = 0;;) {
		struct ctf_packet_header h;
		ssize_t r = pread(fd, &h, sizeof(h), (off_t)off);
		if (r == 0)
			break;
		if (r != (ssize_t)sizeof(h) || h.magic != CTF_MAGIC || h.packet_size % 8 ||
		    h.packet_size / 8 < sizeof(h) || h.packet_size / 8 > RNET_PACKET_MAX) {
			ret = -EBADMSG;
			break;
		}
		size_t len = (size_t)(h.packet_size / 8);
		if (len > u->cap) {
			char *b = realloc(u->buf, len);
			if (!b) {
				ret = -ENOMEM;
				break;
			}
			u->buf = b;
			u->cap = len;
		}
		if (pread(fd, u->buf, len, (off_t)off) != (ssize_t)len) {
			ret = -EBADMSG;
			break;
		}
		ret = send_packet(u->n, id, u->buf, len);
		if (ret < 0)
			break;
		off += len;
	}
	close(fd);
	if (ret == -EBADMSG)
		snprintf(u->err, u->errlen, "snapshot stream file %s/%s is not whole packets", path,
			 name);
	return ret;
}

/* The trace directory `rel` (under the upload's root dirfd) and below. */
static int upload_dir(struct upload *u, int dirfd, const char *rel, int depth)
{
	DIR *d = fdopendir(dirfd);
	if (!d) {
		close(dirfd);
		return -errno;
	}
	int ret = 0;
	struct stat st;
	/* The metadata first: a stream's packets need it. */
	if (fstatat(dirfd, "metadata", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
		struct cons_net_trace nt;
		uint64_t id, last;
		int fd = openat(dirfd, "metadata", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		ret = fd < 0 ? -errno : cons_net_trace_init(&nt, u->n, rel);
		if (!ret)
			ret = add_stream(&nt, "metadata", 0, true, &id, &last);
		char buf[65536];
		for (uint64_t off = 0; !ret;) {
			ssize_t r = read(fd, buf, sizeof(buf));
			if (r <= 0) {
				ret = r < 0 ? -errno : 0;
				break;
			}
			struct rnet_wr w = { 0 };
			rnet_put_u64(&w, id);
			rnet_put_u64(&w, off);
			ret = w.err ? w.err : rnet_send2(u->n->ctrl, RNET_METADATA, w.p,
							 (uint32_t)w.len, buf, (uint32_t)r,
							 RNET_SEND_MS);
			rnet_wr_free(&w);
			off += (uint64_t)r;
		}
		if (fd >= 0)
			close(fd);
	}
	struct dirent *e;
	while (!ret && (e = readdir(d))) {
		if (e->d_name[0] == '.' || !strcmp(e->d_name, "metadata") ||
		    fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		char sub[RNET_PATH_MAX + 1];
		if (S_ISDIR(st.st_mode) && depth < 8 && strcmp(e->d_name, "index")) {
			if (snprintf(sub, sizeof(sub), "%s/%s", rel, e->d_name) >= (int)sizeof(sub))
				continue;
			int fd = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					O_CLOEXEC);
			ret = fd < 0 ? -errno : upload_dir(u, fd, sub, depth + 1);
		} else if (S_ISREG(st.st_mode)) {
			ret = upload_stream(u, dirfd, e->d_name, rel);
		}
	}
	closedir(d);
	return ret;
}

int cons_net_upload(struct cons_net *n, const char *local, const char *prefix, char *err,
		    size_t errlen)
{
	struct upload u = { .n = n, .err = err, .errlen = errlen };
	err[0] = 0;
	if (rnet_check_name(prefix, RNET_NAME_MAX) < 0) {
		snprintf(err, errlen, "bad snapshot name %s", prefix);
		return -EINVAL;
	}
	int fd = open(local, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot open %s: %s", local, strerror(e));
		return -e;
	}
	pthread_mutex_lock(&n->lock);
	int ret = n->ctrl >= 0 ? 0 : connect_locked(n, err, errlen);
	if (!ret)
		ret = upload_dir(&u, fd, prefix, 0);
	else
		close(fd);
	if (!ret)
		ret = sync_locked(n);
	else if (n->ctrl >= 0 && ret != -EBADMSG && ret != -ENOMEM)
		disconnect(n);
	pthread_mutex_unlock(&n->lock);
	free(u.buf);
	if (ret < 0 && !err[0])
		snprintf(err, errlen, "cannot send the snapshot to the relay at %s: %s", n->relay,
			 n->last_error[0] ? n->last_error : strerror(-ret));
	return ret;
}

/* ---- for net_cluster.c ---- */

int cons_net_dial(struct cons_net *n, uint32_t role, char *err, size_t errlen)
{
	return dial(n, n->ctrl_port, role, err, errlen);
}

int cons_net_request(int fd, uint16_t type, const struct rnet_wr *w, uint64_t *value,
		     uint64_t *value2, char *err, size_t errlen)
{
	return request(fd, type, w, value, value2, err, errlen);
}

int cons_net_connect_locked(struct cons_net *n, char *err, size_t errlen)
{
	return n->ctrl >= 0 ? 0 : connect_locked(n, err, errlen);
}

void cons_net_disconnect_locked(struct cons_net *n)
{
	disconnect(n);
}
