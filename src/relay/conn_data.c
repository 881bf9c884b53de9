/*
 * conn_data.c - a daemon's data connection (relay.h): attached to one
 * session of its host, then packets appended to that session's streams.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "relay.h"

static int attach(int fd, const char *host, struct rnet_rd *r, struct relay_session **out)
{
	uint64_t id = rnet_get_u64(r);
	if (rnet_rd_end(r) < 0)
		return -EBADMSG;
	pthread_mutex_lock(&relay_lock);
	struct relay_session *s = relay_session_find(id);
	if (s && (strcmp(s->host, host) || !s->connected))
		s = NULL;
	pthread_mutex_unlock(&relay_lock);
	struct rnet_wr w = { 0 };
	rnet_put_u32(&w, s ? 0 : (uint32_t)-ENOENT);
	rnet_put_u64(&w, id);
	rnet_put_u64(&w, 0);
	rnet_put_str(&w, s ? "" : "no such session of this host");
	int ret = w.err ? w.err : rnet_send(fd, RNET_REPLY, w.p, (uint32_t)w.len, 10000);
	rnet_wr_free(&w);
	if (s)
		*out = s;
	return ret;
}

/* Data stream `id` of session s, or NULL. */
static struct relay_stream *data_stream(struct relay_session *s, uint64_t id)
{
	pthread_mutex_lock(&relay_lock);
	struct relay_stream *st = relay_stream_find(id);
	if (st && (st->session != s || st->metadata))
		st = NULL;
	pthread_mutex_unlock(&relay_lock);
	return st;
}

/* Every packet before the SYNC is stored (this thread wrote it). */
static int synced(int fd, const struct relay_session *s)
{
	struct rnet_wr w = { 0 };
	rnet_put_u32(&w, s ? 0 : (uint32_t)-ENOENT);
	rnet_put_u64(&w, 0);
	rnet_put_u64(&w, 0);
	rnet_put_str(&w, "");
	int ret = w.err ? w.err : rnet_send(fd, RNET_REPLY, w.p, (uint32_t)w.len, 10000);
	rnet_wr_free(&w);
	return ret;
}

static int packet(struct relay_session *s, struct rnet_rd *r)
{
	uint64_t id = rnet_get_u64(r);
	struct relay_index ix = {
		.packet_size = rnet_get_u64(r), .content_size = rnet_get_u64(r),
		.ts_begin = rnet_get_u64(r), .ts_end = rnet_get_u64(r),
		.events_discarded = rnet_get_u64(r), .stream_id = rnet_get_u64(r),
		.stream_instance_id = rnet_get_u64(r), .packet_seq_num = rnet_get_u64(r),
	};
	size_t len = r->err ? 0 : r->len - r->off;
	const void *data = rnet_get_ref(r, len);
	if (rnet_rd_end(r) < 0 || !s)
		return -EBADMSG;
	struct relay_stream *st = data_stream(s, id);
	if (!st)
		return -ENOENT;
	int ret = relay_stream_append(st, &ix, data, len);
	if (ret == -EINVAL)
		return -EBADMSG;
	if (ret < 0)
		relay_log("host %s: cannot write a packet of %s/%s_%u in %s: %s", s->host,
			  st->path, st->channel, st->cpu, s->dir, strerror(-ret));
	return 0;
}

/* An idle stream's beacon: kept when it is later than the last one. */
static int beacon(struct relay_session *s, struct rnet_rd *r)
{
	uint64_t id = rnet_get_u64(r), ts = rnet_get_u64(r), cls = rnet_get_u64(r);
	if (rnet_rd_end(r) < 0 || !s)
		return -EBADMSG;
	struct relay_stream *st = data_stream(s, id);
	if (!st)
		return -ENOENT;
	pthread_mutex_lock(&st->lock);
	if (ts > st->beacon) {
		st->beacon = ts;
		st->beacon_class = cls;
	}
	pthread_mutex_unlock(&st->lock);
	return 0;
}

void relay_serve_data(int fd, const char *host)
{
	struct relay_session *s = NULL;
	int ret = 0;
	while (ret == 0) {
		struct rnet_hdr h;
		uint8_t *p;
		ret = rnet_recv(fd, &h, &p, -1);
		if (ret < 0)
			break;
		struct rnet_rd r = { .p = p, .len = h.length };
		if (h.type == RNET_DATA_ATTACH)
			ret = attach(fd, host, &r, &s);
		else if (h.type == RNET_DATA_SYNC)
			ret = synced(fd, s);
		else if (h.type == RNET_PACKET)
			ret = packet(s, &r);
		else if (h.type == RNET_BEACON)
			ret = beacon(s, &r);
		else
			ret = -EBADMSG;
		free(p);
	}
	if (ret != -ECONNRESET)
		relay_log("host %s: data connection closed: %s", host, strerror(-ret));
}
