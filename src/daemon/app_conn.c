/*
 * app_conn.c - the programs connected to ringtraced: registration (their
 * identity and events), their later messages (EVENTS, GOODBYE), and their
 * departure. Everything a program sends is validated (app_proto.h); a
 * program that sends anything else is disconnected.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../common/array.h"
#include "../proto/proto.h"
#include "app.h"
#include "../common/warn.h"

struct app *app_list;

int app_send(struct app *a, uint16_t type, int32_t status, const void *p,
	     uint32_t len, int fd)
{
	if (!a->conn)
		return -EPIPE;
	/* On failure the connection is closed and the loop drops the
	 * program. */
	return rtd_conn_send(a->conn, type, status, p, len, fd);
}

static void free_events(struct app *a)
{
	for (uint32_t i = 0; i < a->nr_events; i++) {
		struct app_event *e = &a->events[i];
		for (uint32_t f = 0; f < e->nr_fields; f++)
			free((char *)(uintptr_t)e->fields[f].name);
		free(e->fields);
		free(e->provider);
		free(e->name);
		free(e->full);
	}
	free(a->events);
}

/* Decode an event list and append it. Returns 0, -E2BIG (past what a
 * program may register: logged), -EPROTO or -ENOMEM. */
static int add_events(struct app *a, struct rtp_app_cursor *c)
{
	uint32_t n;
	/* -E2BIG (more than RTP_APP_MAX_EVENTS) is refused by the cap
	 * below, with a message. */
	if (rtp_app_event_list_decode(c, &n) == -EPROTO)
		return -EPROTO;
	uint32_t bytes = c->len - c->pos;
	if (n > APP_EVENTS_PER_PROGRAM - a->nr_events ||
	    bytes > APP_EVENT_BYTES_PER_PROGRAM - a->event_bytes) {
		rt_warn("program %d (%s) registers %u more event classes "
			"(%u bytes) after %u: a program may register %u (%u MiB of "
			"descriptions) at most; refused", (int)a->pid, a->procname, n, bytes,
			a->nr_events, APP_EVENTS_PER_PROGRAM, APP_EVENT_BYTES_PER_PROGRAM >> 20);
		return -E2BIG;
	}
	a->event_bytes += bytes;
	if (!a->index_seen && !(a->index_seen = calloc(RTP_APP_MAX_EVENTS / 8, 1)))
		return -ENOMEM;
	struct rtp_app_event_in *in = malloc(sizeof(*in));
	if (!in || RT_ARRAY_GROW(a->events, a->cap_events, (size_t)a->nr_events + n + 1, 16) < 0) {
		free(in);
		return -ENOMEM;
	}
	int ret = 0;
	for (uint32_t i = 0; i < n && ret == 0; i++) {
		/* The decoder checks index < RTP_APP_MAX_EVENTS. */
		if (rtp_app_event_decode(c, in) < 0 ||
		    (a->index_seen[in->index / 8] & (1u << (in->index % 8)))) {
			ret = -EPROTO;
			break;
		}
		a->index_seen[in->index / 8] |= (uint8_t)(1u << (in->index % 8));
		struct app_event *e = &a->events[a->nr_events];
		memset(e, 0, sizeof(*e));
		e->index = in->index;
		e->loglevel = in->loglevel;
		e->provider = strdup(in->provider);
		e->name = strdup(in->name);
		e->fields = calloc(in->nr_fields + 1, sizeof(*e->fields));
		if (asprintf(&e->full, "%s:%s", in->provider, in->name) < 0)
			e->full = NULL;
		a->nr_events++;
		if (!e->provider || !e->name || !e->fields || !e->full) {
			ret = -ENOMEM;
			break;
		}
		for (uint32_t f = 0; f < in->nr_fields; f++) {
			e->fields[f].type = in->fields[f].type;
			e->fields[f].name = strdup(in->fields[f].name);
			if (!e->fields[f].name) {
				ret = -ENOMEM;
				break;
			}
			e->nr_fields++;
		}
	}
	free(in);
	if (ret == 0)
		ret = rtp_app_end(c);
	return ret;
}

static void app_free(struct app *a)
{
	app_triggers_free(a);
	free_events(a);
	free(a->index_seen);
	free(a->sent);
	if (a->conn)
		rtd_conn_release(a->conn);
	free(a);
}

void app_drop(struct app *a)
{
	for (struct app **p = &app_list; *p; p = &(*p)->next)
		if (*p == a) {
			*p = a->next;
			break;
		}
	/* Per-pid traces of this program: everything it committed is in
	 * the shared memory; write it and close the trace. */
	for (struct rtd_session *s = rtd_sessions; s; s = s->next) {
		struct app_session *as = s->dp;
		if (!as)
			continue;
		for (struct dp_trace **tp = &as->traces; *tp;) {
			struct dp_trace *t = *tp;
			if (t->pid == a->pid && t->pid != 0) {
				*tp = t->next;
				pthread_mutex_lock(&t->lock);
				t->app_gone = true;
				pthread_mutex_unlock(&t->lock);
				app_trace_free(t);
			} else {
				tp = &t->next;
			}
		}
	}
	app_free(a);
}

/* EVENTS: new classes; the sessions' buffers and enablement follow. */
static int on_events(struct app *a, struct rtp_msg *m)
{
	struct rtp_app_cursor c = rtp_app_cursor(m->payload, m->length);
	int ret = add_events(a, &c);
	if (ret == -E2BIG) {
		/* Past the cap: the program hears why, then is let go. */
		app_send(a, RTP_APP_EVENTS_REPLY, ret, NULL, 0, -1);
		rtd_conn_close(a->conn);
		return 0;
	}
	if (ret < 0)
		return ret;
	for (struct rtd_session *s = rtd_sessions; s; s = s->next)
		if (s->active)
			app_sync_session(a, s, true);
	app_send_triggers(a);
	return app_send(a, RTP_APP_EVENTS_REPLY, 0, NULL, 0, -1);
}

/* One message from a program. Returns 0 or a negative errno: the
 * program must be dropped. */
static int app_frame(struct rtd_conn *c, struct rtp_msg *m, int *fds, unsigned nfds)
{
	struct app *a = rtd_conn_owner(c);
	for (unsigned i = 0; i < nfds; i++)
		close(fds[i]);
	struct rtp_app_cursor in = rtp_app_cursor(m->payload, m->length);
	uint64_t got;
	int r;
	if (nfds)
		r = -EPROTO;
	else if (m->type == RTP_APP_EVENTS)
		r = on_events(a, m);
	else if (m->type == RTP_APP_SYNC_REPLY && rtp_app_sync_decode(&in, &got) == 0) {
		if (got == a->sync_cookie)
			a->sync_wait = false;
		r = 0;
	} else if (m->type == RTP_APP_GOODBYE && rtp_app_end(&in) == 0)
		r = -ECONNRESET;
	else
		r = -EPROTO;
	if (r == -EPROTO)
		rt_warn("program %d (%s) sent a malformed message; disconnected",
			(int)a->pid, a->procname);
	return r;
}

/* What a program may send after its REGISTER, and how long. */
static int app_check(uint16_t type, uint32_t length)
{
	switch (type) {
	case RTP_APP_EVENTS:
		return 0;	/* RTP_MAX_PAYLOAD, checked by the reader */
	case RTP_APP_SYNC_REPLY:
		return length == RTP_APP_SYNC_SIZE ? 0 : -EMSGSIZE;
	case RTP_APP_GOODBYE:
		return length == 0 ? 0 : -EMSGSIZE;
	default:
		return -EBADMSG;
	}
}

static void app_closed(struct rtd_conn *c, int why)
{
	struct app *a = rtd_conn_owner(c);
	if (why == -ETIMEDOUT)
		rt_warn("program %d (%s) did not take or finish a message in "
			"time; disconnected", (int)a->pid, a->procname);
	else if (why == -EPROTO || why == -EPROTONOSUPPORT || why == -EBADMSG ||
		 why == -EMSGSIZE)
		rt_warn("program %d (%s) sent a malformed message; "
			"disconnected", (int)a->pid, a->procname);
	else if (why == -ENOBUFS)
		rt_warn("program %d (%s) disconnected: the daemon's buffers "
			"for pending messages are full", (int)a->pid, a->procname);
	a->conn = NULL;
	app_drop(a);
}

static const struct rtd_conn_ops app_ops = {
	.check = app_check,
	.frame = app_frame,
	.closed = app_closed,
};

static bool all_synced(void *arg)
{
	(void)arg;
	for (const struct app *a = app_list; a; a = a->next)
		if (a->sync_wait && a->conn && !rtd_conn_closing(a->conn))
			return false;
	return true;
}

/* Send every program `type` (SYNC or STATEDUMP, one layout) and wait
 * for the SYNC_REPLYs, bounded by APP_SYNC_MS in all. */
static void sync_all(uint16_t type)
{
	static uint64_t cookie;
	cookie++;
	uint8_t sync[RTP_APP_SYNC_SIZE];
	rtp_app_sync_encode(sync, cookie);
	for (struct app *a = app_list; a; a = a->next) {
		a->sync_cookie = cookie;
		a->sync_wait = app_send(a, type, 0, sync, sizeof(sync), -1) == 0;
	}
	rtd_conn_pump(&app_ops, all_synced, NULL, rtd_now_ms() + APP_SYNC_MS);
	for (struct app *a = app_list; a; a = a->next) {
		if (a->sync_wait && a->conn && !rtd_conn_closing(a->conn))
			rt_warn("program %d (%s) did not answer in %d ms",
				(int)a->pid, a->procname, APP_SYNC_MS);
		a->sync_wait = false;
	}
}

void app_sync_all(void)
{
	sync_all(RTP_APP_SYNC);
}

void app_statedump_all(void)
{
	sync_all(RTP_APP_STATEDUMP);
}

/* Decode REGISTER into a new app. Returns 0 or -EPROTO / -ENOMEM. */
static int parse_register(struct app *a, struct rtp_msg *m, const struct ucred *peer)
{
	struct rtp_app_cursor c = rtp_app_cursor(m->payload, m->length);
	struct rtp_app_register r;
	if (m->type != RTP_APP_REGISTER || rtp_app_register_decode(&c, &r) < 0)
		return -EPROTO;
	if (r.abi != RT_ABI_VERSION || r.ptr_size != sizeof(void *) ||
	    !(r.clocks & RTP_APP_CAN_MONOTONIC))
		return -EPROTONOSUPPORT;
	/* The kernel's word on who the peer is wins over the message's. */
	a->pid = peer->pid;
	a->uid = peer->uid;
	memcpy(a->procname, r.procname, sizeof(r.procname));
	a->procname[RTP_APP_PROCNAME_LEN] = '\0';
	for (char *p = a->procname; *p; p++)
		if (*p == '/' || *p < ' ' || *p == 0x7f)
			*p = '_';
	if (!a->procname[0])
		snprintf(a->procname, sizeof(a->procname), "unknown");
	return add_events(a, &c);
}

void dp_app_connected(struct rtd_conn *c, struct rtp_msg *first, int *fds, unsigned nfds)
{
	for (unsigned i = 0; i < nfds; i++)
		close(fds[i]);
	const struct ucred *peer = rtd_conn_peer(c);
	struct app *a = calloc(1, sizeof(*a));
	if (!a) {
		rtd_conn_close(c);
		return;
	}
	a->next_key = 1;
	int ret = nfds ? -EPROTO : parse_register(a, first, peer);
	if (ret < 0) {
		rt_warn("registration of program %d refused: %s",
			(int)peer->pid, strerror(-ret));
		rtd_conn_send(c, RTP_APP_REGISTER_REPLY, ret, NULL, 0, -1);
		rtd_conn_close(c);
		app_free(a);
		return;
	}
	a->conn = c;
	rtd_conn_set_ops(c, &app_ops, a, APP_RECV_MS, APP_SEND_MS);
	a->next = app_list;
	app_list = a;
	for (struct rtd_session *s = rtd_sessions; s; s = s->next)
		if (s->active)
			app_sync_session(a, s, true);
	app_send_triggers(a);
	uint8_t reply[RTP_APP_REGISTER_REPLY_SIZE];
	rtp_app_register_reply_encode(reply, app_clock_kind());
	app_send(a, RTP_APP_REGISTER_REPLY, 0, reply, sizeof(reply), -1);
}

/* "name:type,..." for `ringtrace list -u`. */
static void signature(const struct app_event *e, char *buf, size_t len)
{
	static const char *const types[] = {
		[RT_TYPE_S8] = "s8", [RT_TYPE_U8] = "u8", [RT_TYPE_S16] = "s16",
		[RT_TYPE_U16] = "u16", [RT_TYPE_S32] = "s32", [RT_TYPE_U32] = "u32",
		[RT_TYPE_S64] = "s64", [RT_TYPE_U64] = "u64", [RT_TYPE_FLOAT] = "float",
		[RT_TYPE_DOUBLE] = "double", [RT_TYPE_BOOL] = "bool",
		[RT_TYPE_STRING] = "string", [RT_TYPE_POINTER] = "pointer",
		[RT_TYPE_BYTES] = "bytes", [RT_TYPE_FORMAT] = "format",
	};
	size_t pos = 0;
	buf[0] = '\0';
	for (uint32_t i = 0; i < e->nr_fields && pos < len; i++) {
		/* A format's name is the format: "fmt:format" says it. */
		int n = snprintf(buf + pos, len - pos, "%s%s:%s", i ? "," : "",
				 e->fields[i].type == RT_TYPE_FORMAT ? "fmt" : e->fields[i].name,
				 types[e->fields[i].type]);
		if (n < 0)
			break;
		pos += (size_t)n;
	}
}

void dp_list_events(void (*fn)(const struct rtd_app_event *e, void *arg), void *arg)
{
	char sig[2048];
	app_sync_all();
	for (const struct app *a = app_list; a; a = a->next) {
		for (uint32_t i = 0; i < a->nr_events; i++) {
			const struct app_event *e = &a->events[i];
			signature(e, sig, sizeof(sig));
			struct rtd_app_event out = {
				.pid = a->pid, .procname = a->procname, .name = e->full,
				.loglevel = e->loglevel, .signature = sig,
			};
			fn(&out, arg);
		}
	}
}
