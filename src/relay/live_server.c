/*
 * live_server.c - the relay's live port (relay.h): LTTng's live protocol
 * (src/live/live_proto.h, version 2.4) served from the relay's table, so
 * that babeltrace2's lttng-live source and `ringtrace view --live` follow
 * a session while it streams in.
 *
 * A connection that opens with ringtrace's handshake (src/net's magic) is
 * authenticated as a viewer (role RNET_ROLE_VIEWER) and then speaks the
 * same protocol; one that does not is one of LTTng's viewers, which know
 * no secret: served only when the live port listens on loopback or
 * `--live-open` says so, refused otherwise.
 *
 * Per connection: the sessions it attached, and per stream it was told
 * of the next index entry to give and (metadata) the bytes given. Every
 * request's size is the command's exact payload size; anything else
 * (unknown command, wrong size, a command before CONNECT) ends the
 * connection, logged, and the relay goes on serving the others.
 * Differences from lttng-relayd: several viewers may follow one session;
 * a stream with nothing new is INACTIVE up to its sender's last beacon
 * (RNET_BEACON) when that is later than what it gave, else RETRY.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "../common/array.h"
#include "../live/live_proto.h"
#include "relay.h"

#define IO_MS 10000
#define ATTACH_MAX 64u
#define METADATA_CHUNK (1u << 20)

struct vstream {
	struct relay_stream *st;
	uint64_t next;		/* data: next index entry */
	uint64_t last_end;	/* data: timestamp_end of the last one given */
	uint64_t sent;		/* metadata: bytes given */
};

struct live_conn {
	int fd;
	char who[96];
	bool connected, created;
	struct relay_session *attached[ATTACH_MAX];
	uint32_t nr_attached;
	struct vstream *vs;
	size_t nr_vs, cap_vs;
	uint8_t *buf;		/* replies with data */
	size_t cap;
};

static atomic_uint_fast64_t next_viewer_id = 1;

static int reply(struct live_conn *c, const void *a, size_t alen, const void *b, size_t blen)
{
	return rnet_write_all(c->fd, a, alen, b, blen, IO_MS);
}

/* c->buf of at least n bytes: 0 or -ENOMEM. */
static int room(struct live_conn *c, size_t n)
{
	if (n <= c->cap)
		return 0;
	uint8_t *b = realloc(c->buf, n);
	if (!b)
		return -ENOMEM;
	c->buf = b;
	c->cap = n;
	return 0;
}

static struct vstream *vs_find(struct live_conn *c, uint64_t id)
{
	for (size_t k = 0; k < c->nr_vs; k++)
		if (c->vs[k].st->id == id)
			return &c->vs[k];
	return NULL;
}

static bool is_attached(const struct live_conn *c, const struct relay_session *s)
{
	for (uint32_t k = 0; k < c->nr_attached; k++)
		if (c->attached[k] == s)
			return true;
	return false;
}

/* The metadata stream of st's trace (relay_lock held), or NULL. */
static struct relay_stream *metadata_of(const struct relay_stream *st)
{
	for (struct relay_stream *m = st->session->streams; m; m = m->next)
		if (m->metadata && m->trace_id == st->trace_id)
			return m;
	return NULL;
}

/* Whether st's trace has a data stream (relay_lock held). */
static bool has_data(const struct relay_stream *st)
{
	for (struct relay_stream *d = st->session->streams; d; d = d->next)
		if (!d->metadata && d->trace_id == st->trace_id)
			return true;
	return false;
}

/* Streams of s the viewer was not told of and can read, relay_lock held:
 * how many, and appended to c's list (with the entry to start from) when
 * `take`. -ENOMEM/-ENOSPC. A trace's streams are told once it has its
 * metadata stream, which its sender adds after the trace's data streams
 * (LTTng's relay publishes a trace's streams together): a viewer that
 * learnt of one stream long before another could have shown events
 * later than the other's first ones (babeltrace2 then stops), and
 * babeltrace2 drops a trace it was told of without data streams. */
static int unannounced(struct live_conn *c, struct relay_session *s, bool take, bool last)
{
	int n = 0;
	for (struct relay_stream *st = s->streams; st; st = st->next) {
		if (vs_find(c, st->id) || !(st->metadata ? has_data(st) : metadata_of(st) != NULL))
			continue;
		n++;
		if (!take)
			continue;
		if (c->nr_vs >= RELAY_STREAMS_MAX)
			return -ENOSPC;
		if (RT_ARRAY_GROW(c->vs, c->cap_vs, c->nr_vs + 1, 16) < 0)
			return -ENOMEM;
		struct vstream *v = &c->vs[c->nr_vs++];
		v->st = st;
		v->sent = 0;
		v->next = 0;
		v->last_end = 0;
		if (last && !st->metadata) {
			pthread_mutex_lock(&st->lock);
			v->next = st->nr_index;
			pthread_mutex_unlock(&st->lock);
		}
	}
	return n;
}

/* The stream records of c's streams from index `from` on into c->buf
 * after an 8-byte head. -ENOMEM. */
static int stream_records(struct live_conn *c, size_t from, size_t *len)
{
	size_t n = c->nr_vs - from, need = LV_STREAMS_REPLY_SIZE + n * LV_STREAM_SIZE;
	if (room(c, need) < 0)
		return -ENOMEM;
	uint8_t *p = c->buf + LV_STREAMS_REPLY_SIZE;
	for (size_t k = from; k < c->nr_vs; k++) {
		const struct relay_stream *st = c->vs[k].st;
		const char *dir = strrchr(st->session->dir, '/');
		struct lv_stream r = { .id = st->id, .ctf_trace_id = st->trace_id,
				       .metadata_flag = st->metadata };
		if (st->metadata)
			snprintf(r.path, sizeof(r.path), "%.63s/%.96s/%.255s/metadata", st->session->host,
				 dir ? dir + 1 : st->session->dir, st->path);
		else
			snprintf(r.path, sizeof(r.path), "%.63s/%.96s/%.255s/%.63s_%" PRIu32, st->session->host,
				 dir ? dir + 1 : st->session->dir, st->path, st->channel, st->cpu);
		snprintf(r.channel, sizeof(r.channel), "%s", st->channel);
		p += lv_put_stream(p, &r);
	}
	*len = need;
	return 0;
}

/* An ATTACH or GET_NEW_STREAMS reply: its head r, then the records
 * stream_records put in c->buf (len bytes in all). */
static int send_streams(struct live_conn *c, const struct lv_reply *r, size_t len)
{
	if (room(c, LV_STREAMS_REPLY_SIZE) < 0)
		return -ENOMEM;
	lv_put_streams_reply(c->buf, r);
	return reply(c, c->buf, len, NULL, 0);
}

static int cmd_connect(struct live_conn *c, const uint8_t *p)
{
	struct lv_connect in;
	lv_get_connect(p, LV_CONNECT_SIZE, &in);
	if (in.major != LV_MAJOR || in.type != LV_CLIENT_COMMAND) {
		relay_log("live port: %s: protocol %" PRIu32 ".%" PRIu32 " type %" PRIu32
			  " (this relay speaks %d.%d, command connections)", c->who, in.major,
			  in.minor, in.type, LV_MAJOR, LV_MINOR);
		return -EPROTO;
	}
	struct lv_connect out = { .viewer_session_id = atomic_fetch_add(&next_viewer_id, 1),
				  .major = LV_MAJOR,
				  .minor = in.minor < LV_MINOR ? in.minor : LV_MINOR,
				  .type = LV_CLIENT_COMMAND };
	uint8_t b[LV_CONNECT_SIZE];
	lv_put_connect(b, &out);
	c->connected = true;
	return reply(c, b, sizeof(b), NULL, 0);
}

static int cmd_list(struct live_conn *c)
{
	pthread_mutex_lock(&relay_lock);
	uint32_t n = 0;
	for (struct relay_session *s = relay_sessions; s; s = s->next)
		n += s->live_delay_us > 0;
	size_t need = 4 + (size_t)n * LV_SESSION_SIZE;
	int ret = room(c, need);
	if (ret == 0) {
		uint8_t *p = c->buf + lv_put_u32(c->buf, n);
		for (struct relay_session *s = relay_sessions; s; s = s->next) {
			if (!s->live_delay_us)
				continue;
			struct lv_session r = { .id = s->id, .live_timer = s->live_delay_us,
						.clients = s->live_viewers,
						.streams = (uint32_t)s->nr_streams };
			snprintf(r.hostname, sizeof(r.hostname), "%s", s->host);
			snprintf(r.name, sizeof(r.name), "%s", s->name);
			p += lv_put_session(p, &r);
		}
	}
	pthread_mutex_unlock(&relay_lock);
	return ret < 0 ? ret : reply(c, c->buf, need, NULL, 0);
}

static int cmd_create(struct live_conn *c)
{
	uint8_t b[LV_STATUS_SIZE];
	c->created = true;
	lv_put_u32(b, LV_CREATE_OK);
	return reply(c, b, sizeof(b), NULL, 0);
}

static int cmd_attach(struct live_conn *c, const uint8_t *p)
{
	struct lv_attach a;
	lv_get_attach(p, LV_ATTACH_SIZE, &a);
	uint32_t status = LV_ATTACH_OK;
	size_t from = c->nr_vs, len = LV_STREAMS_REPLY_SIZE;
	int ret = 0;
	pthread_mutex_lock(&relay_lock);
	struct relay_session *s = relay_session_find(a.session_id);
	if (!c->created)
		status = LV_ATTACH_NO_SESSION;
	else if (!s)
		status = LV_ATTACH_UNK;
	else if (!s->live_delay_us)
		status = LV_ATTACH_NOT_LIVE;
	else if (a.seek != LV_SEEK_BEGINNING && a.seek != LV_SEEK_LAST)
		status = LV_ATTACH_SEEK_ERR;
	else if (!is_attached(c, s) && c->nr_attached == ATTACH_MAX)
		status = LV_ATTACH_UNK;	/* more than this connection may follow */
	if (status == LV_ATTACH_OK) {
		if (!is_attached(c, s)) {
			c->attached[c->nr_attached++] = s;
			s->live_viewers++;
		}
		ret = unannounced(c, s, true, a.seek == LV_SEEK_LAST);
		if (ret >= 0)
			ret = stream_records(c, from, &len);
	}
	pthread_mutex_unlock(&relay_lock);
	if (ret < 0)
		return ret;
	struct lv_reply r = { .status = status, .len = status == LV_ATTACH_OK ? c->nr_vs - from : 0 };
	return send_streams(c, &r, len);
}

/* Every stream of s this viewer knows read to its end and s's sender
 * gone (relay_lock held). */
static bool session_drained(struct live_conn *c, const struct relay_session *s)
{
	if (s->connected)
		return false;
	for (size_t k = 0; k < c->nr_vs; k++) {
		struct vstream *v = &c->vs[k];
		if (v->st->session != s)
			continue;
		struct relay_index ix;
		if (v->st->metadata ? v->sent < relay_stream_size(v->st)
				    : relay_stream_index(v->st, v->next, &ix) != -ENODATA)
			return false;
	}
	return true;
}

static int cmd_new_streams(struct live_conn *c, const uint8_t *p)
{
	uint64_t id;
	lv_get_u64(p, LV_ID_SIZE, &id);
	struct lv_reply r = { .status = LV_NEW_STREAMS_OK };
	size_t from = c->nr_vs, len = LV_STREAMS_REPLY_SIZE;
	int ret = 0;
	pthread_mutex_lock(&relay_lock);
	struct relay_session *s = relay_session_find(id);
	if (!s || !is_attached(c, s)) {
		r.status = LV_NEW_STREAMS_ERR;
	} else {
		ret = unannounced(c, s, true, false);
		if (ret == 0)
			r.status = session_drained(c, s) ? LV_NEW_STREAMS_HUP : LV_NEW_STREAMS_NO_NEW;
		if (ret > 0)
			ret = stream_records(c, from, &len);
	}
	pthread_mutex_unlock(&relay_lock);
	if (ret < 0)
		return ret;
	r.len = c->nr_vs - from;
	return send_streams(c, &r, len);
}

/* The flags a data stream's replies carry: its trace's metadata has bytes
 * not given yet, its session has streams not told of. */
static uint32_t flags_for(struct live_conn *c, const struct relay_stream *st)
{
	uint32_t flags = 0;
	pthread_mutex_lock(&relay_lock);
	struct relay_stream *m = metadata_of(st);
	struct vstream *mv = m ? vs_find(c, m->id) : NULL;
	if (m && (!mv || mv->sent < relay_stream_size(m)))
		flags |= LV_FLAG_NEW_METADATA;
	if (unannounced(c, st->session, false, false) > 0)
		flags |= LV_FLAG_NEW_STREAM;
	pthread_mutex_unlock(&relay_lock);
	return flags;
}

static int cmd_next_index(struct live_conn *c, const uint8_t *p)
{
	uint64_t id;
	lv_get_u64(p, LV_ID_SIZE, &id);
	struct lv_index x = { .status = LV_INDEX_ERR };
	struct vstream *v = vs_find(c, id);
	if (v && v->st->metadata) {
		x.status = LV_INDEX_HUP;
	} else if (v) {
		struct relay_index ix;
		int r = relay_stream_index(v->st, v->next, &ix);
		if (r == 0) {
			x = (struct lv_index){ .offset = ix.offset, .packet_size = ix.packet_size,
					       .content_size = ix.content_size,
					       .ts_begin = ix.ts_begin, .ts_end = ix.ts_end,
					       .discarded = ix.events_discarded,
					       .stream_class = ix.stream_id, .status = LV_INDEX_OK };
			v->next++;
			v->last_end = ix.ts_end;
		} else if (r == -ENODATA) {
			x.status = LV_INDEX_HUP;
		} else {
			pthread_mutex_lock(&v->st->lock);
			uint64_t beacon = v->st->beacon, cls = v->st->beacon_class;
			pthread_mutex_unlock(&v->st->lock);
			/* A beacon older than what was given says nothing new
			 * (babeltrace2 refuses a time before one it showed).
			 * Its stream class is the packets' (babeltrace2
			 * aborts on another). */
			bool news = beacon > v->last_end;
			x.status = news ? LV_INDEX_INACTIVE : LV_INDEX_RETRY;
			x.ts_end = news ? beacon : 0;
			x.stream_class = news ? cls : 0;
		}
		x.flags = flags_for(c, v->st);
	}
	uint8_t b[LV_INDEX_SIZE];
	lv_put_index(b, &x);
	return reply(c, b, sizeof(b), NULL, 0);
}

static int cmd_get_packet(struct live_conn *c, const uint8_t *p)
{
	struct lv_get_packet g;
	lv_get_get_packet(p, LV_GET_PACKET_SIZE, &g);
	struct lv_reply r = { .status = LV_PACKET_ERR };
	struct vstream *v = vs_find(c, g.stream_id);
	uint8_t b[LV_PACKET_REPLY_SIZE];
	if (v && !v->st->metadata) {
		r.flags = flags_for(c, v->st);
		uint64_t size = relay_stream_size(v->st);
		if (!(r.flags & LV_FLAG_NEW_METADATA) && g.len && g.len <= RNET_PACKET_MAX &&
		    g.offset <= size && g.len <= size - g.offset) {
			if (room(c, g.len) < 0)
				return -ENOMEM;
			ssize_t n = relay_stream_read(v->st, g.offset, c->buf, g.len);
			if (n == (ssize_t)g.len) {
				r.status = LV_PACKET_OK;
				r.len = g.len;
				lv_put_packet_reply(b, &r);
				return reply(c, b, sizeof(b), c->buf, g.len);
			}
		}
	}
	lv_put_packet_reply(b, &r);
	return reply(c, b, sizeof(b), NULL, 0);
}

static int cmd_get_metadata(struct live_conn *c, const uint8_t *p)
{
	uint64_t id;
	lv_get_u64(p, LV_ID_SIZE, &id);
	struct lv_reply r = { .status = LV_METADATA_ERR };
	struct vstream *v = vs_find(c, id);
	uint8_t b[LV_METADATA_REPLY_SIZE];
	if (v && v->st->metadata) {
		uint64_t size = relay_stream_size(v->st);
		r.status = LV_METADATA_NO_NEW;
		if (size > v->sent) {
			size_t n = size - v->sent > METADATA_CHUNK ? METADATA_CHUNK
								   : (size_t)(size - v->sent);
			if (room(c, n) < 0)
				return -ENOMEM;
			ssize_t got = relay_stream_read(v->st, v->sent, c->buf, n);
			if (got == (ssize_t)n) {
				v->sent += n;
				r.status = LV_METADATA_OK;
				r.len = n;
				lv_put_metadata_reply(b, &r);
				return reply(c, b, sizeof(b), c->buf, n);
			}
			r.status = LV_METADATA_ERR;
		}
	}
	lv_put_metadata_reply(b, &r);
	return reply(c, b, sizeof(b), NULL, 0);
}

static void detach(struct live_conn *c, uint32_t k)
{
	struct relay_session *s = c->attached[k];
	size_t w = 0;
	for (size_t j = 0; j < c->nr_vs; j++)
		if (c->vs[j].st->session != s)
			c->vs[w++] = c->vs[j];
	c->nr_vs = w;
	s->live_viewers--;
	c->attached[k] = c->attached[--c->nr_attached];
}

static int cmd_detach(struct live_conn *c, const uint8_t *p)
{
	uint64_t id;
	lv_get_u64(p, LV_ID_SIZE, &id);
	uint32_t status = LV_DETACH_UNK;
	pthread_mutex_lock(&relay_lock);
	for (uint32_t k = 0; k < c->nr_attached; k++)
		if (c->attached[k]->id == id) {
			detach(c, k);
			status = LV_DETACH_OK;
			break;
		}
	pthread_mutex_unlock(&relay_lock);
	uint8_t b[LV_STATUS_SIZE];
	lv_put_u32(b, status);
	return reply(c, b, sizeof(b), NULL, 0);
}

/* The exact payload size of each command, -1 for unknown ones. */
static int64_t payload_size(uint32_t cmd)
{
	switch (cmd) {
	case LV_CMD_CONNECT: return LV_CONNECT_SIZE;
	case LV_CMD_LIST_SESSIONS: return 0;
	case LV_CMD_ATTACH_SESSION: return LV_ATTACH_SIZE;
	case LV_CMD_GET_NEXT_INDEX: return LV_ID_SIZE;
	case LV_CMD_GET_PACKET: return LV_GET_PACKET_SIZE;
	case LV_CMD_GET_METADATA: return LV_ID_SIZE;
	case LV_CMD_GET_NEW_STREAMS: return LV_ID_SIZE;
	case LV_CMD_CREATE_SESSION: return 0;
	case LV_CMD_DETACH_SESSION: return LV_ID_SIZE;
	default: return -1;
	}
}

static int serve(struct live_conn *c)
{
	for (;;) {
		uint8_t h[LV_HDR_SIZE], p[32];
		struct lv_hdr hdr;
		int ret = rnet_read_all(c->fd, h, sizeof(h), -1);
		if (ret < 0)
			return ret == -ECONNRESET ? 0 : ret;
		lv_get_hdr(h, sizeof(h), &hdr);
		int64_t want = payload_size(hdr.cmd);
		if (want < 0 || hdr.data_size != (uint64_t)want) {
			relay_log("live port: %s: command %" PRIu32 " with %" PRIu64
				  " bytes: not the protocol, connection closed", c->who, hdr.cmd,
				  hdr.data_size);
			return -EPROTO;
		}
		if (want && (ret = rnet_read_all(c->fd, p, (size_t)want, IO_MS)) < 0)
			return ret;
		if (!c->connected && hdr.cmd != LV_CMD_CONNECT) {
			relay_log("live port: %s: a command before CONNECT, connection closed",
				  c->who);
			return -EPROTO;
		}
		switch (hdr.cmd) {
		case LV_CMD_CONNECT: ret = cmd_connect(c, p); break;
		case LV_CMD_LIST_SESSIONS: ret = cmd_list(c); break;
		case LV_CMD_CREATE_SESSION: ret = cmd_create(c); break;
		case LV_CMD_ATTACH_SESSION: ret = cmd_attach(c, p); break;
		case LV_CMD_GET_NEW_STREAMS: ret = cmd_new_streams(c, p); break;
		case LV_CMD_GET_NEXT_INDEX: ret = cmd_next_index(c, p); break;
		case LV_CMD_GET_PACKET: ret = cmd_get_packet(c, p); break;
		case LV_CMD_GET_METADATA: ret = cmd_get_metadata(c, p); break;
		default: ret = cmd_detach(c, p); break;
		}
		if (ret < 0)
			return ret;
	}
}

void relay_serve_live(int fd)
{
	struct live_conn c = { .fd = fd };
	snprintf(c.who, sizeof(c.who), "an LTTng viewer");
	/* ringtrace's handshake or LTTng's first command (whose first bytes
	 * are the high bytes of a small size: zeros). */
	uint8_t first[4];
	int ret = 0;
	for (int waited = 0;; waited += 10) {
		struct pollfd pf = { .fd = fd, .events = POLLIN | POLLRDHUP };
		if (waited > IO_MS || poll(&pf, 1, IO_MS) <= 0)
			return;
		ssize_t n = recv(fd, first, sizeof(first), MSG_PEEK);
		if (n == (ssize_t)sizeof(first))
			break;
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return;
		/* A part of them and the peer's end closed: no more will come
		 * (else this would wait the whole I/O timeout). */
		if (n > 0 && (pf.revents & (POLLRDHUP | POLLHUP))) {
			relay_log("live port: a connection closed before its first command");
			return;
		}
		struct timespec ts = { 0, 10000000 };	/* a part of them: wait */
		nanosleep(&ts, NULL);
	}
	uint32_t magic;
	memcpy(&magic, first, 4);
	if (be32toh(magic) == RNET_MAGIC) {
		char host[RNET_HOST_MAX + 1] = "", err[512];
		uint32_t role = 0;
		ret = rnet_server_handshake(fd, &relay_cfg.secret, &role, host, RNET_HANDSHAKE_MS,
					    err, sizeof(err));
		if (ret == 0 && role != RNET_ROLE_VIEWER) {
			snprintf(err, sizeof(err), "a connection of role %" PRIu32 " on the live port",
				 role);
			ret = -EPROTO;
		}
		if (ret < 0) {
			relay_log("live port: connection refused: %s", err);
			return;
		}
		snprintf(c.who, sizeof(c.who), "viewer on %s", host);
	} else if (!relay_cfg.live_plain) {
		relay_log("live port: refused a viewer without the relay's secret (LTTng's viewers "
			  "are served on a loopback live port, or with --live-open)");
		return;
	}
	ret = serve(&c);
	if (ret < 0 && ret != -EPROTO)
		relay_log("live port: %s: %s", c.who, strerror(-ret));
	pthread_mutex_lock(&relay_lock);
	while (c.nr_attached)
		detach(&c, 0);
	pthread_mutex_unlock(&relay_lock);
	free(c.vs);
	free(c.buf);
}
