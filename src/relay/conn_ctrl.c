/*
 * conn_ctrl.c - a daemon's control connection (relay.h): sessions,
 * streams, metadata and clock exchanges. Every id the daemon names must
 * be one of the sessions this connection opened: a daemon never touches
 * another host's (or another connection's) data.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "relay.h"

void relay_log(const char *fmt, ...)
{
	char line[1024], when[32];
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%H:%M:%S", &tm);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s.%03ld ringtrace-relayd: %s\n", when, ts.tv_nsec / 1000000, line);
}

#define CTRL_SESSIONS_MAX 256u		/* per connection */

struct ctrl {
	int fd;
	const char *host;
	struct relay_session *sessions[CTRL_SESSIONS_MAX];
	uint32_t nr;
	uint64_t cluster_seq;		/* the last CLUSTER_TRIGGER's */
};

static int reply2(struct ctrl *c, int status, uint64_t value, uint64_t value2, const char *msg)
{
	struct rnet_wr w = { 0 };
	rnet_put_u32(&w, (uint32_t)status);
	rnet_put_u64(&w, value);
	rnet_put_u64(&w, value2);
	char m[RNET_MSG_MAX + 1];
	snprintf(m, sizeof(m), "%s", msg ? msg : "");
	rnet_put_str(&w, m);
	int ret = w.err ? w.err : rnet_send(c->fd, RNET_REPLY, w.p, (uint32_t)w.len, 10000);
	rnet_wr_free(&w);
	return ret;
}

static int reply(struct ctrl *c, int status, uint64_t value, const char *msg)
{
	return reply2(c, status, value, 0, msg);
}

static bool owns(const struct ctrl *c, const struct relay_session *s)
{
	for (uint32_t i = 0; i < c->nr; i++)
		if (c->sessions[i] == s)
			return true;
	return false;
}

/* The session `id`, if this connection created it. */
static struct relay_session *own_session(const struct ctrl *c, uint64_t id)
{
	pthread_mutex_lock(&relay_lock);
	struct relay_session *s = relay_session_find(id);
	if (s && !owns(c, s))
		s = NULL;
	pthread_mutex_unlock(&relay_lock);
	return s;
}

/* The stream `id`, if it belongs to a session of this connection. */
static struct relay_stream *own_stream(const struct ctrl *c, uint64_t id)
{
	pthread_mutex_lock(&relay_lock);
	struct relay_stream *st = relay_stream_find(id);
	if (st && !owns(c, st->session))
		st = NULL;
	pthread_mutex_unlock(&relay_lock);
	return st;
}

static int create_session(struct ctrl *c, struct rnet_rd *r)
{
	char name[RNET_NAME_MAX + 1], err[512];
	rnet_get_str(r, name, RNET_NAME_MAX);
	uint64_t created = rnet_get_u64(r);
	uint32_t live = rnet_get_u32(r), flags = rnet_get_u32(r);
	if (rnet_rd_end(r) < 0)
		return -EBADMSG;
	if (c->nr == CTRL_SESSIONS_MAX)
		return reply(c, -ENOSPC, 0, "too many sessions on one connection");
	struct relay_session *s;
	int ret = relay_session_open(c->host, name, created, live, flags & 1u, &s, err,
				     sizeof(err));
	if (ret < 0) {
		relay_log("host %s: session %s refused: %s", c->host, name, err);
		return reply(c, ret, 0, err);
	}
	if (!owns(c, s))
		c->sessions[c->nr++] = s;
	relay_log("host %s: session %s (id %llu) in %s", c->host, name,
		  (unsigned long long)s->id, s->dir);
	return reply(c, 0, s->id, NULL);
}

static int add_stream(struct ctrl *c, struct rnet_rd *r)
{
	char path[RNET_PATH_MAX + 1], channel[RNET_NAME_MAX + 1], err[PATH_MAX + 256];
	uint64_t sid = rnet_get_u64(r);
	rnet_get_str(r, path, RNET_PATH_MAX);
	rnet_get_str(r, channel, RNET_NAME_MAX);
	uint32_t cpu = rnet_get_u32(r), flags = rnet_get_u32(r);
	if (rnet_rd_end(r) < 0)
		return -EBADMSG;
	struct relay_session *s = own_session(c, sid);
	if (!s)
		return reply(c, -ENOENT, 0, "no such session on this connection");
	struct relay_stream *st;
	int ret = relay_stream_open(s, path, channel, cpu, flags & 1u, &st, err, sizeof(err));
	if (ret < 0) {
		relay_log("host %s: stream refused: %s", c->host, err);
		return reply(c, ret, 0, err);
	}
	/* value2: the last packet's sequence number + 1 (0: none), so
	 * that a daemon coming back knows which of the packets it sent
	 * before the relay went away were stored. */
	pthread_mutex_lock(&st->lock);
	uint64_t last = st->nr_index ? st->index[st->nr_index - 1].packet_seq_num + 1 : 0;
	pthread_mutex_unlock(&st->lock);
	return reply2(c, 0, st->id, last, NULL);
}

static int metadata(struct ctrl *c, struct rnet_rd *r)
{
	uint64_t id = rnet_get_u64(r), off = rnet_get_u64(r);
	size_t len = r->err ? 0 : r->len - r->off;
	const void *p = rnet_get_ref(r, len);
	if (rnet_rd_end(r) < 0)
		return -EBADMSG;
	struct relay_stream *st = own_stream(c, id);
	if (!st || !st->metadata)
		return -ENOENT;	/* no reply to answer with: a broken sender */
	int ret = relay_metadata_write(st, off, p, len);
	if (ret < 0)
		relay_log("host %s: cannot write the metadata of %s: %s", c->host,
			  st->session->dir, strerror(-ret));
	return 0;
}

static int close_stream(struct ctrl *c, struct rnet_rd *r)
{
	uint64_t id = rnet_get_u64(r);
	if (rnet_rd_end(r) < 0)
		return -EBADMSG;
	struct relay_stream *st = own_stream(c, id);
	if (!st)
		return -ENOENT;
	relay_stream_close(st);
	return 0;
}

static int close_session(struct ctrl *c, struct rnet_rd *r)
{
	uint64_t id = rnet_get_u64(r);
	if (rnet_rd_end(r) < 0)
		return -EBADMSG;
	for (uint32_t i = 0; i < c->nr; i++) {
		if (c->sessions[i]->id != id)
			continue;
		relay_session_end(c->sessions[i]);
		c->sessions[i] = c->sessions[--c->nr];
		return reply(c, 0, 0, NULL);
	}
	return reply(c, -ENOENT, 0, "no such session on this connection");
}

static int archive_chunk(struct ctrl *c, struct rnet_rd *r)
{
	char chunk[RNET_NAME_MAX + 1], name[RNET_NAME_MAX + 1], err[PATH_MAX + 256];
	uint64_t id = rnet_get_u64(r);
	rnet_get_str(r, chunk, RNET_NAME_MAX);
	rnet_get_str(r, name, RNET_NAME_MAX);
	if (rnet_rd_end(r) < 0)
		return -EBADMSG;
	struct relay_session *s = NULL;
	for (uint32_t i = 0; i < c->nr && !s; i++)
		if (c->sessions[i]->id == id)
			s = c->sessions[i];
	if (!s)
		return reply(c, -ENOENT, 0, "no such session on this connection");
	int ret = relay_chunk_archive(s, chunk, name, err, sizeof(err));
	if (ret < 0) {
		relay_log("host %s: %s", c->host, err);
		return reply(c, ret, 0, err);
	}
	const char *rel = s->dir + strlen(relay_cfg.output);
	snprintf(err, sizeof(err), "%s/archives/%s", rel + (*rel == '/'), name);
	relay_log("host %s: trace chunk archived in %s/archives/%s", c->host, s->dir, name);
	return reply(c, 0, 0, err);
}

/* NTP's exchange: the daemon sends t1 (its clock), the relay answers t1,
 * t2 (its clock at receipt), t3 (its clock at sending). */
static int clock_exchange(struct ctrl *c, struct rnet_rd *r)
{
	uint64_t t2 = rnet_realtime_ns();
	uint64_t t1 = rnet_get_u64(r);
	if (rnet_rd_end(r) < 0)
		return -EBADMSG;
	struct rnet_wr w = { 0 };
	rnet_put_u64(&w, t1);
	rnet_put_u64(&w, t2);
	rnet_put_u64(&w, rnet_realtime_ns());
	int ret = w.err ? w.err : rnet_send(c->fd, RNET_CLOCK_REPLY, w.p, (uint32_t)w.len, 10000);
	rnet_wr_free(&w);
	return ret;
}

/* The connection becomes a listener of its host's session's cluster
 * requests (it created none itself). Returns when it closes. */
static int cluster_listen(struct ctrl *c, struct rnet_rd *r)
{
	uint64_t id = rnet_get_u64(r);
	if (rnet_rd_end(r) < 0)
		return -EBADMSG;
	pthread_mutex_lock(&relay_lock);
	struct relay_session *s = relay_session_find(id);
	if (s && (strcmp(s->host, c->host) || !s->connected || c->nr))
		s = NULL;
	pthread_mutex_unlock(&relay_lock);
	int ret = reply(c, s ? 0 : -ENOENT, id, s ? NULL : "no such session of this host");
	if (ret < 0 || !s)
		return ret;
	return relay_cluster_listen(c->fd, c->host, s);
}

/* A trigger's cluster request, in a session of this connection. */
static int cluster_trigger(struct ctrl *c, struct rnet_rd *r)
{
	uint64_t sid = rnet_get_u64(r), fired = rnet_get_u64(r), seq = rnet_get_u64(r);
	if (rnet_rd_end(r) < 0)
		return -EBADMSG;
	struct relay_session *s = own_session(c, sid);
	if (!s)
		return reply(c, -ENOENT, 0, "no such session on this connection");
	if (seq <= c->cluster_seq) {
		relay_log("host %s: cluster request %llu refused: not after %llu (replayed?)",
			  c->host, (unsigned long long)seq, (unsigned long long)c->cluster_seq);
		return reply(c, -EALREADY, 0, "a cluster request replayed");
	}
	c->cluster_seq = seq;
	char err[256];
	uint64_t id = 0;
	uint32_t asked = 0;
	int ret = relay_cluster_request(c->host, s, fired, &id, &asked, err, sizeof(err));
	if (ret < 0) {
		relay_log("host %s: cluster request of session %s refused: %s", c->host, s->name,
			  err);
		return reply(c, ret, 0, err);
	}
	return reply2(c, 0, id, asked, NULL);
}

void relay_serve_ctrl(int fd, const char *host)
{
	struct ctrl c = { .fd = fd, .host = host };
	int ret = 0;
	while (ret == 0) {
		struct rnet_hdr h;
		uint8_t *p;
		ret = rnet_recv(fd, &h, &p, -1);
		if (ret < 0)
			break;
		struct rnet_rd r = { .p = p, .len = h.length };
		switch (h.type) {
		case RNET_CREATE_SESSION:
			ret = create_session(&c, &r);
			break;
		case RNET_ADD_STREAM:
			ret = add_stream(&c, &r);
			break;
		case RNET_METADATA:
			ret = metadata(&c, &r);
			break;
		case RNET_CLOSE_STREAM:
			ret = close_stream(&c, &r);
			break;
		case RNET_CLOSE_SESSION:
			ret = close_session(&c, &r);
			break;
		case RNET_CLOCK:
			ret = clock_exchange(&c, &r);
			break;
		case RNET_CLUSTER_LISTEN:
			ret = cluster_listen(&c, &r);
			break;
		case RNET_CLUSTER_TRIGGER:
			ret = cluster_trigger(&c, &r);
			break;
		case RNET_ARCHIVE_CHUNK:
			ret = archive_chunk(&c, &r);
			break;
		default:
			ret = -EBADMSG;
		}
		free(p);
	}
	if (ret != -ECONNRESET)
		relay_log("host %s: control connection closed: %s", host, strerror(-ret));
	for (uint32_t i = 0; i < c.nr; i++)
		relay_session_end(c.sessions[i]);
}
