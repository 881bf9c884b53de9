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
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include "../proto/proto.h"
#include "app.h"

struct app *app_list;

int app_send(struct app *a, uint16_t type, int32_t status, const void *p,
	     uint32_t len, int fd)
{
	if (a->fd < 0)
		return -EPIPE;
	int r = rtp_send(a->fd, type, status, p, len, fd >= 0 ? &fd : NULL,
			 fd >= 0 ? 1 : 0, APP_SEND_MS);
	if (r < 0)
		/* The loop sees the hang-up and drops the program. */
		shutdown(a->fd, SHUT_RDWR);
	return r;
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
static int add_events(struct app *a, struct app_cursor *c)
{
	uint32_t n;
	if (app_get_u32(c, &n) < 0)
		return -EPROTO;
	uint32_t bytes = c->len - c->pos;
	if (n > bytes / 13)	/* an event record takes 13 bytes at least */
		return -EPROTO;
	if (n > APP_EVENTS_PER_PROGRAM - a->nr_events ||
	    bytes > APP_EVENT_BYTES_PER_PROGRAM - a->event_bytes) {
		fprintf(stderr, "ringtraced: program %d (%s) registers %u more event classes "
			"(%u bytes) after %u: a program may register %u (%u MiB of "
			"descriptions) at most; refused\n", (int)a->pid, a->procname, n, bytes,
			a->nr_events, APP_EVENTS_PER_PROGRAM, APP_EVENT_BYTES_PER_PROGRAM >> 20);
		return -E2BIG;
	}
	a->event_bytes += bytes;
	if (!a->index_seen && !(a->index_seen = calloc(APP_MAX_EVENTS / 8, 1)))
		return -ENOMEM;
	struct app_event_in *in = malloc(sizeof(*in));
	struct app_event *ev = realloc(a->events, (a->nr_events + n + 1) * sizeof(*ev));
	if (!in || !ev) {
		free(in);
		if (ev)
			a->events = ev;
		return -ENOMEM;
	}
	a->events = ev;
	int ret = 0;
	for (uint32_t i = 0; i < n && ret == 0; i++) {
		/* app_get_event checks index < APP_MAX_EVENTS. */
		if (app_get_event(c, in) < 0 ||
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
	if (ret == 0 && c->pos != c->len)
		ret = -EPROTO;
	return ret;
}

static void app_free(struct app *a)
{
	free_events(a);
	free(a->index_seen);
	free(a->sent);
	if (a->fd >= 0)
		close(a->fd);
	free(a);
}

void app_drop(struct app *a)
{
	for (struct app **p = &app_list; *p; p = &(*p)->next)
		if (*p == a) {
			*p = a->next;
			break;
		}
	rtd_loop_remove(a->fd);
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
	struct app_cursor c = { m->payload, m->length, 0 };
	int ret = add_events(a, &c);
	if (ret < 0)
		return ret;
	for (struct rtd_session *s = rtd_sessions; s; s = s->next)
		if (s->active)
			app_sync_session(a, s, true);
	return app_send(a, RTP_APP_EVENTS_REPLY, 0, NULL, 0, -1);
}

/* One message from a program. Returns 0, 1 for the SYNC_REPLY carrying
 * `cookie`, or a negative errno: the program must be dropped. */
static int on_message(struct app *a, uint64_t cookie)
{
	struct rtp_msg m;
	int fds[RTP_MAX_FDS];
	unsigned nfds = 0;
	int r = rtp_recv(a->fd, &m, fds, RTP_MAX_FDS, &nfds, APP_RECV_MS);
	if (r < 0)
		return r;
	for (unsigned i = 0; i < nfds; i++)
		close(fds[i]);
	uint64_t got;
	if (nfds)
		r = -EPROTO;
	else if (m.type == RTP_APP_EVENTS)
		r = on_events(a, &m);
	else if (m.type == RTP_APP_SYNC_REPLY && m.length == sizeof(got)) {
		memcpy(&got, m.payload, sizeof(got));
		r = got == cookie;
	} else if (m.type == RTP_APP_GOODBYE && m.length == 0)
		r = -ECONNRESET;
	else
		r = -EPROTO;
	rtp_msg_free(&m);
	if (r == -EPROTO)
		fprintf(stderr, "ringtraced: program %d (%s) sent a malformed message; disconnected\n",
			(int)a->pid, a->procname);
	return r;
}

static void on_readable(int fd, short revents, void *arg)
{
	(void)fd;
	(void)revents;
	struct app *a = arg;
	if (on_message(a, 0) < 0)
		app_drop(a);
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void app_sync_all(void)
{
	static uint64_t cookie;
	cookie++;
	size_t n = 0;
	for (struct app *a = app_list; a; a = a->next) {
		a->sync_wait = app_send(a, RTP_APP_SYNC, 0, &cookie, sizeof(cookie), -1) == 0;
		a->dead = !a->sync_wait;
		n++;
	}
	struct pollfd *pfd = calloc(n ? n : 1, sizeof(*pfd));
	struct app **who = calloc(n ? n : 1, sizeof(*who));
	int64_t deadline = now_ms() + APP_SYNC_MS;
	while (pfd && who) {
		size_t k = 0;
		for (struct app *a = app_list; a; a = a->next)
			if (a->sync_wait && !a->dead && k < n) {
				pfd[k] = (struct pollfd){ .fd = a->fd, .events = POLLIN };
				who[k++] = a;
			}
		int64_t left = deadline - now_ms();
		if (k == 0 || left <= 0)
			break;
		int r = poll(pfd, k, (int)left);
		if (r < 0 && errno != EINTR)
			break;
		for (size_t i = 0; r > 0 && i < k; i++) {
			if (!pfd[i].revents)
				continue;
			int got = on_message(who[i], cookie);
			if (got < 0)
				who[i]->dead = true;
			else if (got == 1)
				who[i]->sync_wait = false;
		}
	}
	free(pfd);
	free(who);
	for (struct app *a = app_list, *next; a; a = next) {
		next = a->next;
		if (a->sync_wait && !a->dead)
			fprintf(stderr, "ringtraced: program %d (%s) did not answer in %d ms\n",
				(int)a->pid, a->procname, APP_SYNC_MS);
		a->sync_wait = false;
		if (a->dead)
			app_drop(a);
	}
}

/* Decode REGISTER into a new app. Returns 0 or -EPROTO / -ENOMEM. */
static int parse_register(struct app *a, struct rtp_msg *m, const struct ucred *peer)
{
	struct app_cursor c = { m->payload, m->length, 0 };
	uint32_t pid, uid, abi;
	uint8_t ptr_size, clocks;
	uint16_t reserved;
	char procname[APP_PROCNAME_LEN];
	if (m->type != RTP_APP_REGISTER || app_get_u32(&c, &pid) < 0 ||
	    app_get_u32(&c, &uid) < 0 || app_get_u32(&c, &abi) < 0 ||
	    app_get_u8(&c, &ptr_size) < 0 || app_get_u8(&c, &clocks) < 0 ||
	    app_get(&c, &reserved, sizeof(reserved)) < 0 ||
	    app_get(&c, procname, sizeof(procname)) < 0 ||
	    memchr(procname, '\0', sizeof(procname)) == NULL)
		return -EPROTO;
	if (abi != RT_ABI_VERSION || ptr_size != sizeof(void *) || !(clocks & 2))
		return -EPROTONOSUPPORT;
	/* The kernel's word on who the peer is wins over the message's. */
	a->pid = peer->pid;
	a->uid = peer->uid;
	memcpy(a->procname, procname, sizeof(procname));
	a->procname[APP_PROCNAME_LEN] = '\0';
	for (char *p = a->procname; *p; p++)
		if (*p == '/' || *p < ' ' || *p == 0x7f)
			*p = '_';
	if (!a->procname[0])
		snprintf(a->procname, sizeof(a->procname), "unknown");
	return add_events(a, &c);
}

void dp_app_connected(int fd, const struct ucred *peer, struct rtp_msg *first,
		      int *fds, unsigned nfds)
{
	for (unsigned i = 0; i < nfds; i++)
		close(fds[i]);
	struct app *a = calloc(1, sizeof(*a));
	if (!a) {
		close(fd);
		return;
	}
	a->fd = fd;
	a->next_key = 1;
	int ret = nfds ? -EPROTO : parse_register(a, first, peer);
	if (ret < 0) {
		fprintf(stderr, "ringtraced: registration of program %d refused: %s\n",
			(int)peer->pid, strerror(-ret));
		rtp_send(fd, RTP_APP_REGISTER_REPLY, ret, NULL, 0, NULL, 0, APP_SEND_MS);
		app_free(a);
		return;
	}
	if (rtd_loop_add(fd, on_readable, a) < 0) {
		app_free(a);
		return;
	}
	a->next = app_list;
	app_list = a;
	for (struct rtd_session *s = rtd_sessions; s; s = s->next)
		if (s->active)
			app_sync_session(a, s, true);
	uint32_t reply[2] = { app_clock_kind(), 0 };
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
		[RT_TYPE_BYTES] = "bytes",
	};
	size_t pos = 0;
	buf[0] = '\0';
	for (uint32_t i = 0; i < e->nr_fields && pos < len; i++) {
		int n = snprintf(buf + pos, len - pos, "%s%s:%s", i ? "," : "",
				 e->fields[i].name, types[e->fields[i].type]);
		if (n < 0)
			break;
		pos += (size_t)n;
	}
}

void dp_list_events(void (*fn)(const struct rtd_app_event *e, void *arg), void *arg)
{
	char sig[2048];
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
