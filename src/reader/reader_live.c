/*
 * reader_live.c - live trace sets (reader.h): traces, metadata and
 * streams added while reading, each stream holding one packet at a time
 * (a copy of what the feeder gave), merged by time like directory sets
 * with the feeder's pull answering for streams that have run dry.
 *
 * A stream is in one of four states: NEED (no event, to be pulled before
 * the next event is returned: listed in t->need), EVENT (in the heap with
 * its current event), WAIT (in the heap, keyed by the time before which it
 * said it has nothing; pulled again when it comes first) and ENDED.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/array.h"
#include "reader_stream.h"

enum { RTR_LS_NEED, RTR_LS_EVENT, RTR_LS_WAIT, RTR_LS_ENDED };

/* What a metadata replacement retires (kept until rtr_close: events and
 * classes handed out point into them). */
struct rtr_live_old {
	struct rtr_live_old *next;
	struct rtr_meta meta;
	struct rtr_event_class *classes;
};

int rtr_live_open(const struct rtr_live_ops *ops, void *arg, struct rtr_trace **out)
{
	*out = NULL;
	if (!ops || !ops->pull)
		return -EINVAL;
	struct rtr_trace *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->pending = -1;
	t->live_ops = ops;
	t->live_arg = arg;
	t->classes = calloc(1, sizeof(*t->classes));
	t->heap = calloc(1, sizeof(*t->heap));
	if (!t->classes || !t->heap) {
		rtr_close(t);
		return -ENOMEM;
	}
	*out = t;
	return 0;
}

void rtr_live_free(struct rtr_trace *t)
{
	struct rtr_live_old *o = t->old;
	while (o) {
		struct rtr_live_old *next = o->next;
		rtr_meta_free(&o->meta);
		free(o->classes);
		free(o);
		o = next;
	}
	free(t->need);
}

int rtr_live_fail(struct rtr_trace *t, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int ret = rtr_set_verror(t, code, fmt, ap);
	va_end(ap);
	return ret;
}

static int need_push(struct rtr_trace *t, uint32_t s)
{
	if (RT_ARRAY_GROW(t->need, t->need_cap, t->nr_need + 1, 16) < 0)
		return rtr_set_error(t, -ENOMEM, "out of memory");
	t->need[t->nr_need++] = s;
	t->cur[s].live_state = RTR_LS_NEED;
	return 0;
}

static int rebind_cursors(struct rtr_trace *t);

int rtr_live_add_trace(struct rtr_trace *t, const char *name, uint32_t *trace)
{
	struct rtr_tr *before = t->traces;
	if (RT_ARRAY_GROW(t->traces, t->traces_cap, t->nr_traces + 1, 4) < 0)
		return rtr_set_error(t, -ENOMEM, "out of memory");
	if (t->traces != before && rebind_cursors(t) < 0)	/* c->m moved */
		return t->err_code;
	struct rtr_tr *tr = &t->traces[t->nr_traces];
	memset(tr, 0, sizeof(*tr));
	if (!(tr->path = strdup(name)))
		return rtr_set_error(t, -ENOMEM, "out of memory");
	tr->cls_base = (uint32_t)t->nr_classes;
	*trace = t->nr_traces++;
	return 0;
}

int rtr_live_add_stream(struct rtr_trace *t, uint32_t trace, const char *name,
			uint32_t *stream)
{
	if (trace >= t->nr_traces)
		return rtr_set_error(t, -EINVAL, "live stream %s: no trace %" PRIu32, name, trace);
	int si = rtr_stream_new(t, trace, t->traces[trace].path, name);
	if (si < 0)
		return si;
	struct rtr_cursor *c = &t->cur[si];
	int ret = rtr_cursor_bind(t, c);
	if (ret < 0)
		return ret;
	*stream = (uint32_t)si;
	return need_push(t, (uint32_t)si);
}

/* The cursors after the traces moved or a trace's metadata changed: their
 * metadata, the new stream class of their packet and the new class of
 * their current event (same ids: metadata only grows). */
static int rebind_cursors(struct rtr_trace *t)
{
	for (size_t s = 0; s < t->nr_streams; s++) {
		struct rtr_cursor *c = &t->cur[s];
		int ret = rtr_cursor_bind(t, c);
		if (ret < 0)
			return ret;
		if (!c->pkt.sc)
			continue;
		const struct rtr_meta *m = c->m;
		const struct rtr_stream_class *sc = NULL;
		for (size_t k = 0; k < m->nr_streams; k++)
			if (m->streams[k].id == c->pkt.sc->id)
				sc = &m->streams[k];
		if (!sc)
			return rtr_set_error(t, -EINVAL,
					     "%s: new metadata lacks stream class %" PRIu64,
					     c->path, c->pkt.sc->id);
		c->pkt.sc = sc;
		if (c->live_state == RTR_LS_EVENT || t->pending == (int64_t)s) {
			uint32_t k = rtr_meta_find_class(m, sc, c->ev_id);
			if (k == UINT32_MAX)
				return rtr_set_error(t, -EINVAL,
						     "%s: new metadata lacks event id %" PRIu64,
						     c->path, c->ev_id);
			c->cls = k;
			c->ev.cls = &t->classes[c->cls_base + k];
		}
	}
	return 0;
}

int rtr_live_metadata(struct rtr_trace *t, uint32_t trace, const void *data, size_t len)
{
	if (t->err_code)
		return t->err_code;
	if (trace >= t->nr_traces)
		return rtr_set_error(t, -EINVAL, "live metadata: no trace %" PRIu32, trace);
	struct rtr_tr *tr = &t->traces[trace];
	char path[4096];
	snprintf(path, sizeof(path), "%s/metadata", tr->path);
	char *buf = malloc(len + 1);
	struct rtr_live_old *old = calloc(1, sizeof(*old));
	if (!buf || !old) {
		free(buf);
		free(old);
		return rtr_set_error(t, -ENOMEM, "out of memory");
	}
	memcpy(buf, data, len);
	struct rtr_meta m;
	memset(&m, 0, sizeof(m));
	int ret = rtr_meta_load(t, &m, path, buf, len);
	free(buf);
	if (ret < 0) {
		rtr_meta_free(&m);
		free(old);
		return ret;
	}
	/* The previous metadata and class list stay for what was handed out. */
	old->meta = tr->meta;
	old->classes = t->classes;
	old->next = t->old;
	t->old = old;
	tr->meta = m;
	t->classes = NULL;
	ret = rtr_classes_build(t);
	if (ret < 0)
		return ret;
	return rebind_cursors(t);
}

int rtr_live_packet(struct rtr_trace *t, uint32_t stream, const void *data, size_t len)
{
	if (t->err_code)
		return t->err_code;
	if (stream >= t->nr_streams)
		return rtr_set_error(t, -EINVAL, "live packet: no stream %" PRIu32, stream);
	struct rtr_cursor *c = &t->cur[stream];
	if (!c->m->arena)
		return rtr_set_error(t, -EINVAL, "%s: a packet before its trace's metadata",
				     c->path);
	if (!len)
		return rtr_set_error(t, -EINVAL, "%s: an empty packet", c->path);
	uint8_t *copy = malloc(len);
	if (!copy)
		return rtr_set_error(t, -ENOMEM, "out of memory");
	memcpy(copy, data, len);
	free((void *)(uintptr_t)c->map);
	c->map = copy;
	c->size = len;
	t->stats[stream].bytes += len;
	if (rtr_cursor_packet(c, 0) < 0 || rtr_packet_account(t, c) < 0)
		return t->err_code;
	return 0;
}

/* Ask for stream s's next packet or time: 0 (its new state set) or -errno. */
static int pull_stream(struct rtr_trace *t, uint32_t s)
{
	for (;;) {
		uint64_t ticks = 0;
		uint64_t before = t->stats[s].packets;
		int r = t->live_ops->pull(t->live_arg, t, s, &ticks);
		if (t->err_code)
			return t->err_code;
		struct rtr_cursor *c = &t->cur[s];	/* cursors may have moved */
		switch (r) {
		case RTR_LIVE_PACKET:
			if (t->stats[s].packets == before)
				return rtr_set_error(t, -EINVAL,
						     "%s: live source said it gave a packet but gave none",
						     c->path);
			r = rtr_cursor_step(t, c);
			if (r < 0)
				return r;
			if (r == 0)
				continue; /* a packet without events */
			c->live_state = RTR_LS_EVENT;
			rtr_heap_push(t, s);
			return 0;
		case RTR_LIVE_QUIET:
			if (!c->m->arena)
				return rtr_set_error(t, -EINVAL, "%s: no metadata", c->path);
			c->ns = rtr_meta_ns(c->m, ticks);
			c->live_state = RTR_LS_WAIT;
			rtr_heap_push(t, s);
			return 0;
		case RTR_LIVE_ENDED:
			c->live_state = RTR_LS_ENDED;
			return 0;
		default:
			return rtr_set_error(t, r < 0 ? r : -EIO, "%s: live source failed (%d)",
					     c->path, r);
		}
	}
}

int rtr_live_next(struct rtr_trace *t, struct rtr_event *ev)
{
	if (t->pending >= 0) {
		uint32_t s = (uint32_t)t->pending;
		t->pending = -1;
		int r = rtr_cursor_step(t, &t->cur[s]);
		if (r < 0)
			return r;
		if (r == 0) {
			/* The current event was the heap's top. */
			t->heap[0] = t->heap[--t->heap_len];
			if (need_push(t, s) < 0)
				return t->err_code;
		}
		rtr_heap_down(t, 0);
	}
	for (;;) {
		while (t->nr_need) {
			uint32_t s = t->need[--t->nr_need];
			if (pull_stream(t, s) < 0)
				return t->err_code;
		}
		if (!t->heap_len) {
			uint64_t ticks = 0;
			int r = t->live_ops->pull(t->live_arg, t, RTR_LIVE_NONE, &ticks);
			if (t->err_code)
				return t->err_code;
			if (r == RTR_LIVE_ENDED)
				return 0;
			if (r != RTR_LIVE_PACKET)
				return rtr_set_error(t, r < 0 ? r : -EIO, "live source failed (%d)", r);
			continue;
		}
		uint32_t top = t->heap[0];
		if (t->cur[top].live_state != RTR_LS_WAIT)
			break;
		/* Quiet up to a time before every other stream's next event:
		 * ask it again. */
		t->heap[0] = t->heap[--t->heap_len];
		rtr_heap_down(t, 0);
		if (need_push(t, top) < 0)
			return t->err_code;
	}
	uint32_t top = t->heap[0];
	*ev = t->cur[top].ev;
	t->stats[top].events++;
	t->pending = top;
	return 1;
}
