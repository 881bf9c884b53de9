/*
 * reader.c - the trace set: open one or several directories (the loading
 * itself is reader_open.c), merge the events of every stream of every
 * trace by time with a binary heap, and answer questions about traces,
 * streams, classes and clocks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <pthread.h>

#include "../common/array.h"
#include "reader_stream.h"

int rtr_set_verror(struct rtr_trace *t, int code, const char *fmt, va_list ap)
{
	if (t->err_code)
		return t->err_code;
	vsnprintf(t->err, sizeof(t->err), fmt, ap);
	t->err_code = code;
	return code;
}

int rtr_set_error(struct rtr_trace *t, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int ret = rtr_set_verror(t, code, fmt, ap);
	va_end(ap);
	return ret;
}

/*
 * As babeltrace2 does (so both show the same nanoseconds): the clock
 * offset is first normalized (whole seconds of `offset` move to offset_s),
 * then ns = offset_s * 1e9 + cycles_to_ns(offset) + cycles_to_ns(ticks),
 * saturated to the int64_t range.
 */
int64_t rtr_meta_ns(const struct rtr_meta *m, uint64_t ticks)
{
	__int128 ns = m->ns_base + (__int128)cycles_to_ns(m, ticks);
	if (ns > INT64_MAX)
		return INT64_MAX;
	if (ns < INT64_MIN)
		return INT64_MIN;
	return (int64_t)ns;
}

void rtr_meta_clock_init(struct rtr_meta *m)
{
	m->ns_base = ((__int128)m->offset_s + (__int128)(m->offset / m->freq)) * NS_PER_S +
		     (__int128)cycles_to_ns(m, m->offset % m->freq);
	m->ns_base64 = m->ns_base >= INT64_MIN && m->ns_base <= INT64_MAX;
}

/* ------------------------------------------------------------------ */
/* Merge                                                                */

/* Earlier time first; ties: lower stream index, which orders by trace
 * index too (streams are numbered trace by trace). */
static inline bool heap_less(const struct rtr_trace *t, uint32_t a, uint32_t b)
{
	int64_t x = t->cur[a].ns, y = t->cur[b].ns;
	return x < y || (x == y && a < b);
}

void rtr_heap_down(struct rtr_trace *t, size_t i)
{
	uint32_t *h = t->heap;
	size_t n = t->heap_len;
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		if (l < n && heap_less(t, h[l], h[m]))
			m = l;
		if (l + 1 < n && heap_less(t, h[l + 1], h[m]))
			m = l + 1;
		if (m == i)
			return;
		uint32_t tmp = h[i];
		h[i] = h[m];
		h[m] = tmp;
		i = m;
	}
}

void rtr_heap_push(struct rtr_trace *t, uint32_t si)
{
	uint32_t *h = t->heap;
	size_t i = t->heap_len++;
	h[i] = si;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!heap_less(t, h[i], h[p]))
			break;
		uint32_t tmp = h[i];
		h[i] = h[p];
		h[p] = tmp;
		i = p;
	}
}

int rtr_cursor_step(struct rtr_trace *t, struct rtr_cursor *c)
{
	int r = rtr_cursor_next(c);
	if (r > 0)
		c->ev.cls = &t->classes[c->cls_base + c->cls];
	return r < 0 ? t->err_code : r;
}

int rtr_next(struct rtr_trace *t, struct rtr_event *ev)
{
	if (!t || !ev)
		return -EINVAL;
	if (t->err_code)
		return t->err_code;
	if (t->live_ops)
		return rtr_live_next(t, ev);
	if (!t->started) {
		t->started = 1;
		for (uint32_t k = 0; k < t->nr_streams; k++) {
			int r = rtr_cursor_step(t, &t->cur[k]);
			if (r < 0)
				return r;
			if (r > 0)
				rtr_heap_push(t, k);
		}
	} else if (t->pending >= 0) {
		struct rtr_cursor *c = &t->cur[t->pending];
		t->pending = -1;
		int r = rtr_cursor_step(t, c);
		if (r < 0)
			return r;
		if (r == 0)
			t->heap[0] = t->heap[--t->heap_len];
		rtr_heap_down(t, 0);
	}
	if (!t->heap_len)
		return 0;
	uint32_t top = t->heap[0];
	*ev = t->cur[top].ev;
	t->stats[top].events++;
	t->pending = top;
	return 1;
}

/*
 * rtr_count's work, in chunks: packets [first, end) of a stream, counted
 * on a copy of its cursor (each packet begins at its timestamp_begin, so
 * a chunk needs nothing from the packets before it) by as many threads
 * as there are CPUs; the chunks of a stream are then joined in order,
 * checking that its clock does not go back from one to the next.
 */
struct count_chunk {
	uint32_t stream;
	size_t first, end;		/* indexes in the cursor's pkt_offs */
	int ret;
	struct rtr_cursor_count cc;
};

struct count_job {
	struct rtr_trace *t;
	struct count_chunk *chunks;
	size_t nr;
	size_t next;			/* the next chunk to take (atomic) */
};

struct count_worker {
	struct count_job *job;
	uint64_t *per_class;		/* the set's classes, this worker's counts */
	pthread_t th;
};

#define COUNT_CHUNK_MIN (1ull << 20)	/* bytes: smaller chunks are not worth a thread */
#define COUNT_THREADS_MAX 16

static int count_chunk(struct rtr_trace *t, struct count_chunk *ch, uint64_t *per_class)
{
	const struct rtr_cursor *orig = &t->cur[ch->stream];
	/* The copy's own error sink and slots: threads share nothing but
	 * what they only read (metadata, mapping, packet offsets). */
	struct rtr_trace *errs = calloc(1, sizeof(*errs));
	struct rtr_cursor c = *orig;
	c.slots = malloc((orig->nr_slots + 1) * sizeof(*c.slots));
	int ret = -ENOMEM;
	if (!errs || !c.slots)
		goto out;
	memcpy(c.slots, orig->slots, orig->nr_slots * sizeof(*c.slots));
	errs->pending = -1;
	c.set = errs;
	c.clock = 0;
	/* Its pages are released within the chunk only (others read the
	 * pages before it). */
	c.dropped = orig->pkt_offs[ch->first] & ~(uint64_t)(sysconf(_SC_PAGESIZE) - 1);
	uint64_t stop = ch->end < orig->nr_pkts ? orig->pkt_offs[ch->end] : UINT64_MAX;
	ret = -EAGAIN;
	if (rtr_cursor_packet(&c, orig->pkt_offs[ch->first]) < 0)
		goto out;
	/* A packet without timestamp_begin goes on from the previous one's
	 * clock: only the stream's first chunk may begin with one. */
	if (ch->first && !(c.pkt.have & (1u << RR_TS_BEGIN)))
		goto out;
	ret = rtr_cursor_count(&c, stop, per_class + orig->cls_base, &ch->cc);
out:
	free(c.slots);
	free(errs);
	return ret;
}

static void *count_work(void *arg)
{
	struct count_worker *w = arg;
	struct count_job *job = w->job;
	for (;;) {
		/* Relaxed: the index is all that is shared while counting; the
		 * chunks' results are read after pthread_join. */
		size_t i = __atomic_fetch_add(&job->next, 1, __ATOMIC_RELAXED);
		if (i >= job->nr)
			return NULL;
		job->chunks[i].ret = count_chunk(job->t, &job->chunks[i], w->per_class);
	}
}

/* The chunks of every stream holding packets, in stream order, each about
 * `size` bytes (whole packets). 0 or -ENOMEM. */
static int count_plan(struct rtr_trace *t, uint64_t size, struct count_chunk **out, size_t *nr)
{
	size_t cap = 0;
	*out = NULL;
	*nr = 0;
	for (uint32_t k = 0; k < t->nr_streams; k++) {
		const struct rtr_cursor *c = &t->cur[k];
		if (!c->map || !c->nr_pkts)
			continue;
		for (size_t p = 0; p < c->nr_pkts;) {
			size_t e = p + 1;
			while (e < c->nr_pkts && c->pkt_offs[e] - c->pkt_offs[p] < size)
				e++;
			if (RT_ARRAY_GROW(*out, cap, *nr + 1, 16) < 0)
				return -ENOMEM;
			(*out)[(*nr)++] = (struct count_chunk){ .stream = k, .first = p, .end = e };
			p = e;
		}
	}
	return 0;
}

/* Count the chunks with up to `threads` threads (this one included),
 * adding to per_class. 0 or -ENOMEM; each chunk's own result in its ret. */
static int count_run(struct count_job *job, size_t nr_classes, unsigned threads,
		     uint64_t *per_class)
{
	struct count_worker w[COUNT_THREADS_MAX];
	unsigned n = 0;
	int ret = 0;
	for (; n < threads; n++) {
		w[n].job = job;
		w[n].per_class = calloc(nr_classes + 1, sizeof(uint64_t));
		if (!w[n].per_class) {
			ret = -ENOMEM;
			break;
		}
		/* Worker 0 is this thread; fewer workers when a thread cannot
		 * be made. */
		if (n && pthread_create(&w[n].th, NULL, count_work, &w[n]) != 0) {
			free(w[n].per_class);
			break;
		}
	}
	if (n)
		count_work(&w[0]);
	for (unsigned i = 0; i < n; i++) {
		if (i)
			pthread_join(w[i].th, NULL);
		for (size_t k = 0; k < nr_classes; k++)
			per_class[k] += w[i].per_class[k];
		free(w[i].per_class);
	}
	return n ? 0 : ret;
}

int rtr_count(struct rtr_trace *t, uint64_t *per_class, uint32_t *stream_cpu,
	      struct rtr_count_result *res)
{
	if (!t || !per_class || !res || t->live_ops || t->started || t->err_code)
		return -EINVAL;
	uint64_t total = 0;
	for (size_t k = 0; k < t->nr_streams; k++)
		total += t->cur[k].map ? t->cur[k].size : 0;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned threads = cpus < 1 ? 1 : cpus > COUNT_THREADS_MAX ? COUNT_THREADS_MAX : (unsigned)cpus;
	/* A few chunks per thread, so that they end together. */
	uint64_t size = total / (threads * 4u);
	if (size < COUNT_CHUNK_MIN)
		size = COUNT_CHUNK_MIN;
	/* Into copies: nothing is counted unless every stream could be. */
	struct count_job job = { .t = t };
	uint64_t *cls = calloc(t->nr_classes + 1, sizeof(*cls));
	uint32_t *cpu = malloc((t->nr_streams + 1) * sizeof(*cpu));
	int ret = cls && cpu ? count_plan(t, size, &job.chunks, &job.nr) : -ENOMEM;
	if (ret == 0) {
		if (threads > job.nr)
			threads = job.nr ? (unsigned)job.nr : 1;
		ret = count_run(&job, t->nr_classes, threads, cls);
	}
	struct rtr_count_result r = { 0, INT64_MAX, INT64_MIN };
	uint64_t *events = ret == 0 ? calloc(t->nr_streams + 1, sizeof(*events)) : NULL;
	if (ret == 0 && !events)
		ret = -ENOMEM;
	for (size_t k = 0; ret == 0 && k < t->nr_streams; k++)
		cpu[k] = UINT32_MAX;
	/* Each stream's chunks in order: together, the stream as one. */
	uint64_t last = 0;
	for (size_t i = 0; ret == 0 && i < job.nr; i++) {
		const struct count_chunk *ch = &job.chunks[i];
		uint32_t k = ch->stream;
		ret = ch->ret;
		if (ret < 0 || !ch->cc.events)
			continue;
		if (events[k] && (ch->cc.first_ticks < last || ch->cc.cpu != cpu[k])) {
			ret = -EAGAIN;
			break;
		}
		const struct rtr_meta *m = t->cur[k].m;
		int64_t a = rtr_meta_ns(m, ch->cc.first_ticks), b = rtr_meta_ns(m, ch->cc.last_ticks);
		/* Each stream in time order: rtr_next's first event is the
		 * earliest first one, its last the latest last one. */
		r.first_ns = a < r.first_ns ? a : r.first_ns;
		r.last_ns = b > r.last_ns ? b : r.last_ns;
		cpu[k] = ch->cc.cpu;
		events[k] += ch->cc.events;
		r.events += ch->cc.events;
		last = ch->cc.last_ticks;
	}
	free(job.chunks);
	if (ret == 0) {
		for (size_t k = 0; k < t->nr_classes; k++)
			per_class[k] += cls[k];
		for (size_t k = 0; k < t->nr_streams; k++) {
			t->stats[k].events = events[k];
			if (stream_cpu)
				stream_cpu[k] = cpu[k];
		}
		if (!r.events)
			r.first_ns = r.last_ns = 0;
		*res = r;
		/* rtr_next has nothing left: every event was counted. */
		t->started = 1;
		t->pending = -1;
		t->heap_len = 0;
	}
	free(cls);
	free(cpu);
	free(events);
	/* Copies of the cursors counted: the set is as it was. */
	return ret < 0 && ret != -ENOMEM ? -EAGAIN : ret;
}

/* ------------------------------------------------------------------ */
/* Open and close                                                       */

int rtr_open_many(const char *const *dirs, size_t n, struct rtr_trace **out, char *err,
		  size_t errlen)
{
	if (out)
		*out = NULL;
	if (!dirs || !n || !out) {
		if (err && errlen)
			snprintf(err, errlen, "rtr_open: invalid argument");
		return -EINVAL;
	}
	for (size_t k = 0; k < n; k++)
		if (!dirs[k]) {
			if (err && errlen)
				snprintf(err, errlen, "rtr_open: invalid argument");
			return -EINVAL;
		}
	struct rtr_trace *t = calloc(1, sizeof(*t));
	if (!t) {
		if (err && errlen)
			snprintf(err, errlen, "%s: out of memory", dirs[0]);
		return -ENOMEM;
	}
	t->pending = -1;
	int ret = rtr_set_load(t, dirs, n);
	if (ret < 0) {
		if (err && errlen)
			snprintf(err, errlen, "%s", t->err);
		rtr_close(t);
		return ret;
	}
	*out = t;
	return 0;
}

int rtr_open(const char *dir, struct rtr_trace **out, char *err, size_t errlen)
{
	return rtr_open_many(&dir, 1, out, err, errlen);
}

void rtr_close(struct rtr_trace *t)
{
	if (!t)
		return;
	for (size_t k = 0; k < t->nr_streams; k++) {
		struct rtr_cursor *c = &t->cur[k];
		if (c->map && t->live_ops)
			free((void *)(uintptr_t)c->map);
		else if (c->map)
			munmap((void *)(uintptr_t)c->map, (size_t)c->size);
		rtr_cursor_free(c);
		free((void *)(uintptr_t)t->stats[k].path);
	}
	for (uint32_t k = 0; k < t->nr_traces; k++) {
		rtr_meta_free(&t->traces[k].meta);
		free(t->traces[k].path);
	}
	free(t->traces);
	free(t->cur);
	free(t->stats);
	free(t->gaps);
	free(t->classes);
	free(t->heap);
	rtr_live_free(t);
	free(t);
}

/* ------------------------------------------------------------------ */
/* Questions                                                            */

const char *rtr_error(const struct rtr_trace *t)
{
	return t ? t->err : "";
}

size_t rtr_event_classes(const struct rtr_trace *t, const struct rtr_event_class **out)
{
	*out = t->classes;
	return t->nr_classes;
}

size_t rtr_streams(const struct rtr_trace *t, const struct rtr_stream_stats **out)
{
	*out = t->stats;
	return t->nr_streams;
}

size_t rtr_gaps(const struct rtr_trace *t, const struct rtr_gap **out)
{
	*out = t->gaps;
	return t->nr_gaps;
}

uint32_t rtr_trace_count(const struct rtr_trace *t)
{
	return t->nr_traces;
}

const char *rtr_trace_path(const struct rtr_trace *t, uint32_t trace)
{
	return trace < t->nr_traces ? t->traces[trace].path : NULL;
}

size_t rtr_trace_env(const struct rtr_trace *t, uint32_t trace, const struct rtr_env **out)
{
	if (trace >= t->nr_traces) {
		*out = NULL;
		return 0;
	}
	*out = t->traces[trace].meta.env;
	return t->traces[trace].meta.nr_env;
}

const struct rtr_env *rtr_trace_env_get(const struct rtr_trace *t, uint32_t trace,
					const char *key)
{
	const struct rtr_env *env;
	size_t n = rtr_trace_env(t, trace, &env);
	for (size_t k = 0; k < n; k++)
		if (!strcmp(env[k].key, key))
			return &env[k];
	return NULL;
}

uint64_t rtr_trace_clock_freq(const struct rtr_trace *t, uint32_t trace)
{
	return trace < t->nr_traces ? t->traces[trace].meta.freq : 0;
}

int64_t rtr_trace_ticks_to_ns(const struct rtr_trace *t, uint32_t trace, uint64_t ticks)
{
	return trace < t->nr_traces ? rtr_meta_ns(&t->traces[trace].meta, ticks) : 0;
}

uint64_t rtr_clock_freq(const struct rtr_trace *t)
{
	return rtr_trace_clock_freq(t, 0);
}

int64_t rtr_ticks_to_ns(const struct rtr_trace *t, uint64_t ticks)
{
	return rtr_trace_ticks_to_ns(t, 0, ticks);
}
