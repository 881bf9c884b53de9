/*
 * live_viewer.c - the LTTng live protocol's viewer side (live_viewer.h):
 * the connection and its bounded I/O, the session list, attaching, and
 * the reader's pull (reader.h, live sets) answered with GET_NEXT_INDEX,
 * GET_PACKET, GET_METADATA and GET_NEW_STREAMS.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../common/array.h"
#include "../net/net.h"
#include "live_viewer.h"

#define IO_TIMEOUT_MS 30000
#ifndef RETRY_MS	/* the fuzzing harness (tests/fuzz) builds it with 1 ms */
#define RETRY_MS 100
#endif
#define SLICE_MS 200

/* One CTF trace of the attached sessions: a metadata stream and data
 * streams sharing a ctf_trace_id. */
struct lv_trace {
	uint64_t ctf_trace_id;
	uint32_t reader;		/* trace index in the set */
	bool has_meta_stream;
	uint64_t meta_stream;
	uint8_t *meta;			/* every metadata byte received */
	size_t meta_len, meta_cap;
	size_t meta_given;		/* bytes the reader has parsed */
};

/* One data stream; index = the reader's stream index. */
struct lv_stream_ent {
	uint64_t id;
	uint32_t trace;			/* in v->traces */
	bool has_beacon;
	uint64_t beacon;		/* the last inactivity time told */
};

struct lv_viewer {
	int fd;
	const volatile sig_atomic_t *stop;
	char peer[300];
	uint64_t *sessions;		/* attached relay session ids */
	bool *session_hup;
	size_t nr_sessions;
	struct lv_trace *traces;
	size_t nr_traces, traces_cap;
	struct lv_stream_ent *streams;
	size_t nr_streams, streams_cap;
	struct rtr_trace *t;		/* the set being fed (not owned) */
	uint8_t *pkt;			/* receive buffer for packets */
	size_t pkt_cap;
	char err[512];
};

__attribute__((format(printf, 3, 4)))
static int fail(struct lv_viewer *v, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(v->err, sizeof(v->err), fmt, ap);
	va_end(ap);
	return code;
}

static bool stopped(const struct lv_viewer *v)
{
	return v->stop && *v->stop;
}

/* Wait for fd to be ready for `events` within the I/O timeout, watching
 * the stop flag: 0 or -errno (message set). */
static int wait_fd(struct lv_viewer *v, short events)
{
	for (int waited = 0; waited < IO_TIMEOUT_MS; waited += SLICE_MS) {
		if (stopped(v))
			return fail(v, -EINTR, "interrupted");
		struct pollfd p = { .fd = v->fd, .events = events };
		int r = poll(&p, 1, SLICE_MS);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return fail(v, -errno, "%s: %s", v->peer, strerror(errno));
	}
	return fail(v, -ETIMEDOUT, "%s: no answer from the relay within %d s", v->peer,
		    IO_TIMEOUT_MS / 1000);
}

static int send_all(struct lv_viewer *v, const uint8_t *b, size_t len)
{
	while (len) {
		int ret = wait_fd(v, POLLOUT);
		if (ret < 0)
			return ret;
		ssize_t n = send(v->fd, b, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return fail(v, -errno, "%s: cannot send: %s", v->peer, strerror(errno));
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

static int recv_all(struct lv_viewer *v, void *buf, size_t len)
{
	uint8_t *b = buf;
	while (len) {
		int ret = wait_fd(v, POLLIN);
		if (ret < 0)
			return ret;
		ssize_t n = recv(v->fd, b, len, MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return fail(v, -errno, "%s: cannot receive: %s", v->peer, strerror(errno));
		if (n == 0)
			return fail(v, -ECONNRESET, "%s: the relay closed the connection", v->peer);
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

/* A command with its payload, sent in one piece. */
static int command(struct lv_viewer *v, uint32_t cmd, const uint8_t *payload, size_t len)
{
	uint8_t b[LV_HDR_SIZE + 32];
	struct lv_hdr h = { .data_size = len, .cmd = cmd, .version = 0 };
	size_t n = lv_put_hdr(b, &h);
	if (len)
		memcpy(b + n, payload, len);
	return send_all(v, b, n + len);
}

static int proto_error(struct lv_viewer *v, const char *what)
{
	return fail(v, -EPROTO, "%s: %s", v->peer, what);
}

/* Sleep the retry period (shorter when interrupted): 0 or -EINTR. */
static int pause_retry(struct lv_viewer *v)
{
	struct timespec ts = { 0, RETRY_MS * 1000000L };
	nanosleep(&ts, NULL);
	return stopped(v) ? fail(v, -EINTR, "interrupted") : 0;
}

/* A TCP connection to the relay in v->fd: 0 or -errno (message set). */
static int dial(struct lv_viewer *v, const struct lv_url *u)
{
	char port[8];
	snprintf(port, sizeof(port), "%u", u->port);
	struct addrinfo hints = { .ai_family = u->family, .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai = NULL;
	int ret = getaddrinfo(u->host, port, &hints, &ai);
	if (ret)
		return fail(v, -EHOSTUNREACH, "%s: %s", u->host, gai_strerror(ret));
	ret = -ECONNREFUSED;
	for (struct addrinfo *a = ai; a; a = a->ai_next) {
		int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0) {
			ret = fail(v, -errno, "%s: socket: %s", v->peer, strerror(errno));
			continue;
		}
		struct timeval tv = { .tv_sec = IO_TIMEOUT_MS / 1000 };
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
			int one = 1;
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			v->fd = fd;
			ret = 0;
			break;
		}
		ret = fail(v, -errno, "%s: cannot connect to the relay's live port: %s", v->peer,
			   strerror(errno));
		close(fd);
	}
	freeaddrinfo(ai);
	return ret;
}

/*
 * With the relay's secret (net.h: RINGTRACE_RELAY_SECRET, else the run
 * directory's relay.secret), ringtrace's handshake as a viewer first: a
 * ringtrace relay then knows us (and we know it is one). A relay that
 * closes the connection or answers otherwise (LTTng's) is connected to
 * again and spoken to as LTTng's viewers are; a failed authentication is
 * an error. No secret: LTTng's way from the start.
 */
static int authenticate(struct lv_viewer *v, const struct lv_url *u)
{
	struct rnet_secret k;
	char e[512], host[RNET_HOST_MAX + 1];
	int ret = rnet_secret_load(&k, false, e, sizeof(e));
	if (ret == -ENOENT)
		return 0;
	if (ret < 0)
		return fail(v, ret, "%s", e);
	if ((ret = rnet_hostname(host, sizeof(host), e, sizeof(e))) < 0)
		return fail(v, ret, "%s", e);
	ret = rnet_client_handshake(v->fd, &k, RNET_ROLE_VIEWER, host, RNET_HANDSHAKE_MS, e,
				    sizeof(e));
	memset(&k, 0, sizeof(k));
	if (ret == 0)
		return 0;
	if (ret != -ECONNRESET && ret != -EPROTO && ret != -EPIPE)
		return fail(v, ret, "%s: %s", v->peer, e);
	close(v->fd);
	v->fd = -1;
	return dial(v, u);
}

int lv_viewer_connect(const struct lv_url *u, const volatile sig_atomic_t *stop,
		      struct lv_viewer **out, char *err, size_t errlen)
{
	*out = NULL;
	struct lv_viewer *v = calloc(1, sizeof(*v));
	if (!v) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	v->fd = -1;
	v->stop = stop;
	snprintf(v->peer, sizeof(v->peer), "%s:%u", u->host, u->port);
	int ret = dial(v, u);
	if (ret == 0)
		ret = authenticate(v, u);
	if (ret < 0)
		goto out;
	uint8_t b[LV_CONNECT_SIZE];
	struct lv_connect c = { .viewer_session_id = UINT64_MAX, .major = LV_MAJOR, .minor = LV_MINOR, .type = LV_CLIENT_COMMAND };
	lv_put_connect(b, &c);
	if ((ret = command(v, LV_CMD_CONNECT, b, sizeof(b))) < 0 ||
	    (ret = recv_all(v, b, sizeof(b))) < 0)
		goto out;
	lv_get_connect(b, sizeof(b), &c);
	if (c.major != LV_MAJOR) {
		ret = fail(v, -EPROTO, "%s: the relay speaks live protocol %" PRIu32 ".%" PRIu32
			   ", not %d.x", v->peer, c.major, c.minor, LV_MAJOR);
		goto out;
	}
	*out = v;
	return 0;
out:
	snprintf(err, errlen, "%s", v->err);
	lv_viewer_close(v);
	return ret;
}

int lv_viewer_list(struct lv_viewer *v, struct lv_session **out, size_t *n, char *err,
		   size_t errlen)
{
	*out = NULL;
	*n = 0;
	uint8_t b[LV_SESSION_SIZE];
	uint32_t count = 0;
	struct lv_session *s = NULL;
	int ret = command(v, LV_CMD_LIST_SESSIONS, NULL, 0);
	if (ret < 0 || (ret = recv_all(v, b, 4)) < 0)
		goto out;
	lv_get_u32(b, 4, &count);
	if (count > LV_SESSIONS_MAX) {
		ret = fail(v, -EPROTO, "%s: the relay announces %" PRIu32
			   " sessions (at most %u are read)", v->peer, count, LV_SESSIONS_MAX);
		goto out;
	}
	s = calloc(count ? count : 1, sizeof(*s));
	if (!s) {
		ret = fail(v, -ENOMEM, "out of memory");
		goto out;
	}
	for (uint32_t k = 0; k < count; k++) {
		if ((ret = recv_all(v, b, sizeof(b))) < 0)
			goto out;
		lv_get_session(b, sizeof(b), &s[k]);
	}
	*out = s;
	*n = count;
	return 0;
out:
	free(s);
	snprintf(err, errlen, "%s", v->err);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Streams and metadata                                                 */

static struct lv_trace *trace_for(struct lv_viewer *v, uint64_t id, const char *path)
{
	for (size_t k = 0; k < v->nr_traces; k++)
		if (v->traces[k].ctf_trace_id == id)
			return &v->traces[k];
	if (RT_ARRAY_GROW(v->traces, v->traces_cap, v->nr_traces + 1, 4) < 0)
		return NULL;
	/* Named for the directory of its streams on the relay. */
	char name[LV_PATH_MAX + 1];
	snprintf(name, sizeof(name), "%s", path);
	char *slash = strrchr(name, '/');
	if (slash)
		*slash = '\0';
	uint32_t idx;
	if (rtr_live_add_trace(v->t, name, &idx) < 0)
		return NULL;
	struct lv_trace *tr = &v->traces[v->nr_traces++];
	memset(tr, 0, sizeof(*tr));
	tr->ctf_trace_id = id;
	tr->reader = idx;
	return tr;
}

/* Fetch new metadata of trace tr until the relay has none; give it to the
 * reader when it changed. `need`: wait until there is some at all. */
static int fetch_metadata(struct lv_viewer *v, struct lv_trace *tr, bool need)
{
	if (!tr->has_meta_stream)
		return proto_error(v, "a trace without a metadata stream");
	for (;;) {
		uint8_t b[LV_METADATA_REPLY_SIZE];
		struct lv_reply r;
		lv_put_u64(b, tr->meta_stream);
		int ret = command(v, LV_CMD_GET_METADATA, b, LV_ID_SIZE);
		if (ret < 0 || (ret = recv_all(v, b, sizeof(b))) < 0)
			return ret;
		lv_get_metadata_reply(b, sizeof(b), &r);
		if (r.status == LV_METADATA_NO_NEW) {
			if (need && !tr->meta_len) {
				if ((ret = pause_retry(v)) < 0)
					return ret;
				continue;
			}
			break;
		}
		if (r.status != LV_METADATA_OK)
			return fail(v, -EPROTO, "%s: the relay cannot give the metadata (status %" PRIu32 ")",
				    v->peer, r.status);
		if (r.len > LV_METADATA_MAX - tr->meta_len)
			return fail(v, -EPROTO, "%s: metadata larger than %u MiB", v->peer,
				    LV_METADATA_MAX >> 20);
		if (!r.len) {	/* nothing yet (a clear in progress): ask again */
			if ((ret = pause_retry(v)) < 0)
				return ret;
			continue;
		}
		if (RT_ARRAY_GROW(tr->meta, tr->meta_cap, tr->meta_len + r.len, 4096) < 0)
			return fail(v, -ENOMEM, "out of memory");
		if ((ret = recv_all(v, tr->meta + tr->meta_len, r.len)) < 0)
			return ret;
		tr->meta_len += r.len;
	}
	if (tr->meta_len == tr->meta_given)
		return 0;
	if (rtr_live_metadata(v->t, tr->reader, tr->meta, tr->meta_len) < 0)
		return fail(v, -EPROTO, "%s", rtr_error(v->t));
	tr->meta_given = tr->meta_len;
	return 0;
}

/* Read `count` stream descriptions and add them: metadata streams to
 * their trace, data streams to the set (after their trace's metadata). */
static int add_streams(struct lv_viewer *v, uint32_t count)
{
	if (count > LV_STREAMS_MAX - v->nr_streams)
		return fail(v, -EPROTO, "%s: the relay announces %" PRIu32
			    " more streams (at most %u in all)", v->peer, count, LV_STREAMS_MAX);
	struct lv_stream *list = calloc(count ? count : 1, sizeof(*list));
	if (!list)
		return fail(v, -ENOMEM, "out of memory");
	int ret = 0;
	uint8_t *b = malloc(LV_STREAM_SIZE);
	if (!b) {
		ret = fail(v, -ENOMEM, "out of memory");
		goto out;
	}
	for (uint32_t k = 0; k < count && ret == 0; k++) {
		ret = recv_all(v, b, LV_STREAM_SIZE);
		if (ret == 0)
			lv_get_stream(b, LV_STREAM_SIZE, &list[k]);
	}
	if (ret < 0)
		goto out;
	/* Metadata streams first: the data streams' traces then have one. */
	for (uint32_t k = 0; k < count; k++) {
		if (!list[k].metadata_flag)
			continue;
		struct lv_trace *tr = trace_for(v, list[k].ctf_trace_id, list[k].path);
		if (!tr) {
			ret = fail(v, -ENOMEM, "%s", rtr_error(v->t));
			goto out;
		}
		tr->has_meta_stream = true;
		tr->meta_stream = list[k].id;
		if ((ret = fetch_metadata(v, tr, true)) < 0)
			goto out;
	}
	for (uint32_t k = 0; k < count; k++) {
		if (list[k].metadata_flag)
			continue;
		for (size_t j = 0; j < v->nr_streams; j++)
			if (v->streams[j].id == list[k].id) {
				ret = proto_error(v, "the relay announced a stream twice");
				goto out;
			}
		struct lv_trace *tr = trace_for(v, list[k].ctf_trace_id, list[k].path);
		if (!tr) {
			ret = fail(v, -ENOMEM, "%s", rtr_error(v->t));
			goto out;
		}
		if (!tr->has_meta_stream) {
			ret = proto_error(v, "a data stream whose trace has no metadata stream");
			goto out;
		}
		if (RT_ARRAY_GROW(v->streams, v->streams_cap, v->nr_streams + 1, 16) < 0) {
			ret = fail(v, -ENOMEM, "out of memory");
			goto out;
		}
		const char *base = strrchr(list[k].path, '/');
		uint32_t si;
		if (rtr_live_add_stream(v->t, tr->reader, base ? base + 1 : list[k].path, &si) < 0) {
			ret = fail(v, -ENOMEM, "%s", rtr_error(v->t));
			goto out;
		}
		if (si != v->nr_streams) {
			ret = proto_error(v, "stream numbering out of step with the reader");
			goto out;
		}
		struct lv_stream_ent *e = &v->streams[v->nr_streams++];
		memset(e, 0, sizeof(*e));
		e->id = list[k].id;
		e->trace = (uint32_t)(tr - v->traces);
	}
out:
	free(b);
	free(list);
	return ret;
}

/* GET_NEW_STREAMS for every attached session: 1 if streams were added,
 * 0 if none, -errno. Sessions that hung up are marked. */
static int new_streams(struct lv_viewer *v)
{
	int added = 0;
	for (size_t k = 0; k < v->nr_sessions; k++) {
		if (v->session_hup[k])
			continue;
		uint8_t b[LV_STREAMS_REPLY_SIZE];
		struct lv_reply r;
		lv_put_u64(b, v->sessions[k]);
		int ret = command(v, LV_CMD_GET_NEW_STREAMS, b, LV_ID_SIZE);
		if (ret < 0 || (ret = recv_all(v, b, sizeof(b))) < 0)
			return ret;
		lv_get_streams_reply(b, sizeof(b), &r);
		switch (r.status) {
		case LV_NEW_STREAMS_OK:
			if ((ret = add_streams(v, (uint32_t)r.len)) < 0)
				return ret;
			added |= r.len > 0;
			break;
		case LV_NEW_STREAMS_NO_NEW:
			break;
		case LV_NEW_STREAMS_HUP:
			v->session_hup[k] = true;
			break;
		default:
			return fail(v, -EPROTO, "%s: the relay cannot list new streams (status %" PRIu32 ")",
				    v->peer, r.status);
		}
	}
	return added;
}

/* What the flags of an index or packet reply ask for. */
static int follow_flags(struct lv_viewer *v, struct lv_trace *tr, uint32_t flags)
{
	int ret = 0;
	if (flags & LV_FLAG_NEW_STREAM)
		ret = new_streams(v);
	if (ret >= 0 && (flags & LV_FLAG_NEW_METADATA))
		ret = fetch_metadata(v, tr, false);
	return ret < 0 ? ret : 0;
}

/* Get the packet the index describes into the set: RTR_LIVE_PACKET,
 * RTR_LIVE_ENDED or -errno. */
static int get_packet(struct lv_viewer *v, uint32_t s, const struct lv_index *x)
{
	if (x->packet_size % 8 || !x->packet_size || x->packet_size / 8 > LV_PACKET_MAX ||
	    x->content_size > x->packet_size)
		return fail(v, -EPROTO, "%s: an index with impossible sizes (packet %" PRIu64
			    " bits, content %" PRIu64 " bits; packets of at most %u MiB are read)",
			    v->peer, x->packet_size, x->content_size, LV_PACKET_MAX >> 20);
	uint32_t len = (uint32_t)(x->packet_size / 8);
	for (;;) {
		struct lv_stream_ent *e = &v->streams[s];
		uint8_t b[LV_GET_PACKET_SIZE];
		struct lv_get_packet g = { .stream_id = e->id, .offset = x->offset, .len = len };
		lv_put_get_packet(b, &g);
		int ret = command(v, LV_CMD_GET_PACKET, b, sizeof(b));
		if (ret < 0 || (ret = recv_all(v, b, LV_PACKET_REPLY_SIZE)) < 0)
			return ret;
		struct lv_reply r;
		lv_get_packet_reply(b, LV_PACKET_REPLY_SIZE, &r);
		switch (r.status) {
		case LV_PACKET_OK:
			if (r.len != len)
				return fail(v, -EPROTO, "%s: asked for a packet of %" PRIu32
					    " bytes, the relay sends %" PRIu64, v->peer, len, r.len);
			if (len > v->pkt_cap) {
				uint8_t *p = realloc(v->pkt, len);
				if (!p)
					return fail(v, -ENOMEM, "out of memory");
				v->pkt = p;
				v->pkt_cap = len;
			}
			if ((ret = recv_all(v, v->pkt, len)) < 0)
				return ret;
			if ((ret = follow_flags(v, &v->traces[e->trace], r.flags)) < 0)
				return ret;
			if (rtr_live_packet(v->t, s, v->pkt, len) < 0)
				return fail(v, -EPROTO, "%s", rtr_error(v->t));
			return RTR_LIVE_PACKET;
		case LV_PACKET_RETRY:
			if ((ret = pause_retry(v)) < 0)
				return ret;
			break;
		case LV_PACKET_ERR:
			if (!(r.flags & (LV_FLAG_NEW_METADATA | LV_FLAG_NEW_STREAM)))
				return fail(v, -EPROTO, "%s: the relay cannot give a packet of stream %" PRIu64,
					    v->peer, e->id);
			if ((ret = follow_flags(v, &v->traces[e->trace], r.flags)) < 0)
				return ret;
			break;
		case LV_PACKET_EOF:
			return RTR_LIVE_ENDED;
		default:
			return fail(v, -EPROTO, "%s: unknown packet status %" PRIu32, v->peer, r.status);
		}
	}
}

static int pull_stream(struct lv_viewer *v, uint32_t s, uint64_t *ticks)
{
	for (;;) {
		if (stopped(v))
			return fail(v, -EINTR, "interrupted");
		struct lv_stream_ent *e = &v->streams[s];
		uint8_t b[LV_INDEX_SIZE];
		lv_put_u64(b, e->id);
		int ret = command(v, LV_CMD_GET_NEXT_INDEX, b, LV_ID_SIZE);
		if (ret < 0 || (ret = recv_all(v, b, LV_INDEX_SIZE)) < 0)
			return ret;
		struct lv_index x;
		lv_get_index(b, LV_INDEX_SIZE, &x);
		uint32_t tr = e->trace;
		if ((ret = follow_flags(v, &v->traces[tr], x.flags)) < 0)
			return ret;
		e = &v->streams[s];	/* new streams may have moved it */
		switch (x.status) {
		case LV_INDEX_OK:
			return get_packet(v, s, &x);
		case LV_INDEX_RETRY:
			break;
		case LV_INDEX_INACTIVE:
			if (!e->has_beacon || x.ts_end > e->beacon) {
				e->has_beacon = true;
				e->beacon = x.ts_end;
				*ticks = x.ts_end;
				return RTR_LIVE_QUIET;
			}
			break;	/* no progress: wait before asking again */
		case LV_INDEX_HUP:
		case LV_INDEX_EOF:
			return RTR_LIVE_ENDED;
		case LV_INDEX_ERR:
			return fail(v, -EPROTO, "%s: the relay has no index for stream %" PRIu64,
				    v->peer, e->id);
		default:
			return fail(v, -EPROTO, "%s: unknown index status %" PRIu32, v->peer, x.status);
		}
		if ((ret = pause_retry(v)) < 0)
			return ret;
	}
}

/* Nothing to read: wait for new streams or the end of every session. */
static int pull_none(struct lv_viewer *v)
{
	for (;;) {
		int ret = new_streams(v);
		if (ret < 0)
			return ret;
		if (ret > 0)
			return RTR_LIVE_PACKET;
		bool all_hup = true;
		for (size_t k = 0; k < v->nr_sessions; k++)
			all_hup &= v->session_hup[k];
		if (all_hup)
			return RTR_LIVE_ENDED;
		if ((ret = pause_retry(v)) < 0)
			return ret;
	}
}

static int pull(void *arg, struct rtr_trace *t, uint32_t stream, uint64_t *ticks)
{
	struct lv_viewer *v = arg;
	int ret;
	if (stream == RTR_LIVE_NONE)
		ret = pull_none(v);
	else if (stream < v->nr_streams)
		ret = pull_stream(v, stream, ticks);
	else
		ret = fail(v, -EINVAL, "no stream %" PRIu32, stream);
	if (ret < 0)
		rtr_live_fail(t, ret, "%s", v->err);
	return ret;
}

static const struct rtr_live_ops viewer_ops = { .pull = pull };

int lv_viewer_attach(struct lv_viewer *v, const char *host, const char *session,
		     struct rtr_trace **out, char *err, size_t errlen)
{
	*out = NULL;
	struct lv_session *list = NULL;
	size_t n = 0;
	int ret = lv_viewer_list(v, &list, &n, err, errlen);
	if (ret < 0)
		return ret;
	uint8_t b[LV_ATTACH_SIZE];
	if ((ret = command(v, LV_CMD_CREATE_SESSION, NULL, 0)) < 0 ||
	    (ret = recv_all(v, b, LV_STATUS_SIZE)) < 0)
		goto out;
	uint32_t status;
	lv_get_u32(b, LV_STATUS_SIZE, &status);
	if (status != LV_CREATE_OK) {
		ret = fail(v, -EPROTO, "%s: the relay refuses a viewer session (status %" PRIu32 ")",
			   v->peer, status);
		goto out;
	}
	if ((ret = rtr_live_open(&viewer_ops, v, &v->t)) < 0) {
		ret = fail(v, ret, "out of memory");
		goto out;
	}
	v->sessions = calloc(n ? n : 1, sizeof(*v->sessions));
	v->session_hup = calloc(n ? n : 1, sizeof(*v->session_hup));
	if (!v->sessions || !v->session_hup) {
		ret = fail(v, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t k = 0; k < n; k++) {
		if (strcmp(list[k].hostname, host) || strcmp(list[k].name, session))
			continue;
		struct lv_attach a = { .session_id = list[k].id, .seek = LV_SEEK_BEGINNING };
		lv_put_attach(b, &a);
		if ((ret = command(v, LV_CMD_ATTACH_SESSION, b, LV_ATTACH_SIZE)) < 0 ||
		    (ret = recv_all(v, b, LV_STREAMS_REPLY_SIZE)) < 0)
			goto out;
		struct lv_reply r;
		lv_get_streams_reply(b, LV_STREAMS_REPLY_SIZE, &r);
		if (r.status == LV_ATTACH_ALREADY) {
			ret = fail(v, -EBUSY, "%s: another viewer follows session %s of %s", v->peer,
				   session, host);
			goto out;
		}
		if (r.status == LV_ATTACH_NOT_LIVE)
			continue; /* not a live session: nothing to follow */
		if (r.status != LV_ATTACH_OK) {
			ret = fail(v, -EPROTO, "%s: the relay refuses to attach session %s of %s (status %" PRIu32 ")",
				   v->peer, session, host, r.status);
			goto out;
		}
		v->sessions[v->nr_sessions++] = list[k].id;
		if ((ret = add_streams(v, (uint32_t)r.len)) < 0)
			goto out;
	}
	if (!v->nr_sessions) {
		ret = fail(v, -ENOENT, "%s: no live session %s of host %s on the relay (the list: "
			   "ringtrace view --live net://%s)", v->peer, session, host, v->peer);
		goto out;
	}
	free(list);
	*out = v->t;
	return 0;
out:
	free(list);
	snprintf(err, errlen, "%s", v->err);
	rtr_close(v->t);
	v->t = NULL;
	return ret;
}

void lv_viewer_close(struct lv_viewer *v)
{
	if (!v)
		return;
	if (v->fd >= 0) {
		for (size_t k = 0; k < v->nr_sessions; k++) {
			uint8_t b[LV_ID_SIZE];
			lv_put_u64(b, v->sessions[k]);
			if (command(v, LV_CMD_DETACH_SESSION, b, sizeof(b)) < 0 ||
			    recv_all(v, b, LV_STATUS_SIZE) < 0)
				break;
		}
		close(v->fd);
	}
	for (size_t k = 0; k < v->nr_traces; k++)
		free(v->traces[k].meta);
	free(v->traces);
	free(v->streams);
	free(v->sessions);
	free(v->session_hup);
	free(v->pkt);
	free(v);
}
