/*
 * source.c - ftrace's pages as a source of src/consumer (kernel.h,
 * consumer.h's struct cons_source_ops), and the formats' classes as the
 * consumer's struct cons_classes.
 *
 * One stream per CPU. get reads one page (trace_pipe_raw, without
 * blocking, partly filled pages included) and converts it (trace.c) into
 * one packet, valid until the next get: put has nothing to give back.
 * When the CPU has no page left, the kernel's lost count
 * (per_cpu/cpuN/stats) is read and, when it passed what the stream's
 * packets said, a header-only packet carries the new count. A page that
 * does not parse is skipped and counted (subbufs_lost). There is no
 * flush: reads take partly filled pages. A thread the conversion cannot
 * name (gone from /proc, its creation recorded on another CPU) is looked
 * for in every CPU's pages still to be read (pages.peek, lookahead).
 *
 * Threads: get, counts and the snapshot ops of distinct streams may run
 * at once (a converter per CPU, writer.c): each touches its stream's
 * state and the trace's conversion of that CPU only; the first read
 * error is kept under err_lock.
 *
 * Counts: a packet taken counts packet_size bytes consumed; the stream
 * is said to hold one more unit until a get finds it empty, so that a
 * drain reads until every CPU said so (bounded as cons_drain is).
 *
 * Snapshots: ftrace has no non-consuming raw read here (no snapshot
 * buffer in this kernel's tracefs). With `window` (a flight recorder
 * whose readers keep the newest pages in their queues, readers.c), the
 * queued pages are copied (pages.peek) and converted, each CPU's stream
 * starting again (rtk_trace_restart: the same pages may be converted by
 * every snapshot), consuming nothing; else what each CPU's buffer holds
 * now is read and converted (consuming it). Either way into private
 * copies, staged for every CPU first (rtk_source_snap_stage) so that
 * pages made after the read (the state dump, rtk_source_snap_page)
 * follow it, or by snap_range itself; snap_copy hands them out, oldest
 * first.
 *
 * packet_size bounds a converted page: per record, ftrace's header and
 * common fields (4 + 8 bytes at least) become at most 13 + 4 (the
 * extended event header and the tid), and a field of n >= 1 bytes at most
 * n + 4 (a byte array's length), so a packet is at most the header plus 5
 * times the page. A larger one (a format with zero-length arrays) is
 * still written by get, and dropped from snapshots (snap_copy: -EBADMSG).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/array.h"
#include "../ctf/ctf_packet.h"
#include "kernel_internal.h"

#define RTK_DEFAULT_BUFFER_KB 1408u	/* ftrace's default per CPU */

static void keep_error(struct rtk_source *ks, int err, const char *msg)
{
	pthread_mutex_lock(&ks->err_lock);
	if (!ks->err) {
		ks->err = err;
		snprintf(ks->errmsg, sizeof(ks->errmsg), "%s", msg);
	}
	pthread_mutex_unlock(&ks->err_lock);
}

int rtk_source_error(struct rtk_source *ks, bool take, char *msg, size_t len)
{
	pthread_mutex_lock(&ks->err_lock);
	int ret = ks->err;
	if (ret)
		snprintf(msg, len, "cannot read the kernel's buffers: %s", ks->errmsg);
	if (take)
		ks->err = 0;
	pthread_mutex_unlock(&ks->err_lock);
	return ret;
}

/* The next packet of `cpu`: a converted page or a loss packet. 0 with
 * *pkt, *len (the trace's buffer), or -EAGAIN. */
static int next_packet(struct rtk_source *ks, uint32_t cpu, char **pkt, size_t *len)
{
	struct rtk_source_stream *s = &ks->s[cpu];
	char msg[256];
	for (;;) {
		const void *page;
		long n = ks->pages.read(ks->pages.arg, cpu, &page, msg, sizeof(msg));
		if (n < 0) {
			keep_error(ks, (int)n, msg);
			break;
		}
		if (n == 0)
			break;
		long r = rtk_trace_packet(ks->trace, cpu, page, (size_t)n, pkt, len, msg,
					  sizeof(msg));
		if (r >= 0)
			return 0;
		/* Relaxed: a statistic (rtk_writer_stats). */
		__atomic_fetch_add(&s->bad, 1, __ATOMIC_RELAXED);
		keep_error(ks, (int)r, msg);
	}
	s->lost = ks->pages.lost(ks->pages.arg, cpu);
	int r = rtk_trace_lost_packet(ks->trace, cpu, s->lost, pkt, len, msg, sizeof(msg));
	if (r == 1)
		return 0;
	if (r < 0)
		keep_error(ks, r, msg);
	return -EAGAIN;
}

static int src_get(void *arg, uint32_t cpu, struct cons_packet *p)
{
	struct rtk_source *ks = arg;
	struct rtk_source_stream *s = &ks->s[cpu];
	char *pkt;
	size_t len;
	if (next_packet(ks, cpu, &pkt, &len) < 0) {
		s->more = false;
		return -EAGAIN;
	}
	struct ctf_packet_header h;
	memcpy(&h, pkt, sizeof(h));
	*p = (struct cons_packet){ .data = pkt, .size = len, .seq = h.packet_seq_num };
	s->more = true;
	s->consumed += ks->packet_size;
	return 0;
}

static void src_put(void *arg, uint32_t cpu, const struct cons_packet *p)
{
	(void)arg;
	(void)cpu;
	(void)p;
}

static void src_counts(void *arg, uint32_t cpu, struct cons_counts *c)
{
	struct rtk_source *ks = arg;
	const struct rtk_source_stream *s = &ks->s[cpu];
	*c = (struct cons_counts){
		.bytes_consumed = s->consumed,
		.bytes_reserved = s->consumed + (s->more ? ks->packet_size : 0),
		.events_lost = s->lost,
		.subbufs_lost = __atomic_load_n(&s->bad, __ATOMIC_RELAXED),
	};
}

static void snap_free(struct rtk_source_stream *s)
{
	for (size_t i = 0; i < s->nr_snap; i++)
		free(s->snap[i]);
	free(s->snap);
	free(s->snap_len);
	s->snap = NULL;
	s->snap_len = NULL;
	s->nr_snap = s->cap_snap = s->cap_len = 0;
}

static int snap_append(struct rtk_source_stream *s, const char *pkt, size_t len)
{
	char *copy = malloc(len);
	if (!copy || RT_ARRAY_GROW(s->snap, s->cap_snap, s->nr_snap + 1, 64) < 0 ||
	    RT_ARRAY_GROW(s->snap_len, s->cap_len, s->nr_snap + 1, 64) < 0) {
		free(copy);
		return -ENOMEM;
	}
	memcpy(copy, pkt, len);
	s->snap[s->nr_snap] = copy;
	s->snap_len[s->nr_snap++] = len;
	return 0;
}

/* Read and convert what CPU `cpu`'s buffer holds now into its snapshot
 * list. 0 or -ENOMEM (the list emptied). */
static int snap_read(struct rtk_source *ks, uint32_t cpu)
{
	struct rtk_source_stream *s = &ks->s[cpu];
	snap_free(s);
	s->staged = true;
	char *pkt, msg[256];
	size_t len;
	if (ks->window) {
		if (!ks->snap_page && !(ks->snap_page = malloc(ks->page_size)))
			return -ENOMEM;
		rtk_trace_restart(ks->trace, cpu);
		long n;
		for (size_t i = 0; ks->pages.peek &&
				   (n = ks->pages.peek(ks->pages.arg, cpu, i, ks->snap_page)) > 0;
		     i++) {
			if (rtk_trace_packet(ks->trace, cpu, ks->snap_page, (size_t)n, &pkt, &len,
					     msg, sizeof(msg)) < 0) {
				/* Relaxed: a statistic (rtk_writer_stats). */
				__atomic_fetch_add(&s->bad, 1, __ATOMIC_RELAXED);
				keep_error(ks, -EINVAL, msg);
			} else if (snap_append(s, pkt, len) < 0) {
				goto oom;
			}
		}
		/* The window's losses: the pages it dropped, what the kernel
		 * lost (a loss packet, as after a read). */
		s->lost = ks->pages.lost(ks->pages.arg, cpu);
		int r = rtk_trace_lost_packet(ks->trace, cpu, s->lost, &pkt, &len, msg,
					      sizeof(msg));
		if (r < 0)
			keep_error(ks, r, msg);
		if (r == 1 && snap_append(s, pkt, len) < 0)
			goto oom;
		return 0;
	}
	while (next_packet(ks, cpu, &pkt, &len) == 0) {
		if (snap_append(s, pkt, len) < 0)
			goto oom;
	}
	return 0;
oom:
	snap_free(s);
	return -ENOMEM;
}

int rtk_source_snap_stage(struct rtk_source *ks)
{
	for (unsigned c = 0; c < ks->pages.nr_cpus; c++) {
		int ret = snap_read(ks, c);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int rtk_source_snap_page(struct rtk_source *ks, unsigned cpu, const void *page, size_t size,
			 char *err, size_t errlen)
{
	if (cpu >= ks->pages.nr_cpus) {
		rt_errf(err, errlen, "CPU %u has no stream", cpu);
		return -EINVAL;
	}
	char *pkt;
	size_t len;
	long n = rtk_trace_packet(ks->trace, cpu, page, size, &pkt, &len, err, errlen);
	if (n < 0)
		return (int)n;
	int ret = snap_append(&ks->s[cpu], pkt, len);
	if (ret < 0)
		rt_errf(err, errlen, "out of memory");
	return ret;
}

/* The staged list (rtk_source_snap_stage), else what the buffer holds
 * now; each list is handed out once. */
static int src_snap_range(void *arg, uint32_t cpu, uint64_t *first, uint64_t *end)
{
	struct rtk_source *ks = arg;
	struct rtk_source_stream *s = &ks->s[cpu];
	if (!s->staged && snap_read(ks, cpu) < 0)
		return -ENOMEM;
	s->staged = false;
	*first = 0;
	*end = s->nr_snap * ks->packet_size;
	return 0;
}

static int src_snap_copy(void *arg, uint32_t cpu, uint64_t off, void *dst, uint64_t *seq)
{
	struct rtk_source *ks = arg;
	const struct rtk_source_stream *s = &ks->s[cpu];
	uint64_t i = off / ks->packet_size;
	if (i >= s->nr_snap)
		return -EAGAIN;
	if (s->snap_len[i] > ks->packet_size)
		return -EBADMSG;
	struct ctf_packet_header h;
	memcpy(&h, s->snap[i], sizeof(h));
	memcpy(dst, s->snap[i], s->snap_len[i]);
	*seq = h.packet_seq_num;
	return 0;
}

static const struct cons_source_ops rtk_source_ops = {
	.get = src_get,
	.put = src_put,
	.counts = src_counts,
	.snap_range = src_snap_range,
	.snap_copy = src_snap_copy,
};

/* The creation of `tid` among the pages the reads will give next, every
 * CPU's (rtk_trace_lookahead; pages.peek). Called within a page's
 * conversion, under the trace's table lock (trace.c): one at a time, so
 * the copy `ahead` is this function's alone. */
static bool look(struct rtk_source *ks, int32_t tid)
{
	for (unsigned c = 0; c < ks->pages.nr_cpus; c++) {
		long n;
		for (size_t i = 0; (n = ks->pages.peek(ks->pages.arg, c, i, ks->ahead)) > 0; i++)
			if (rtk_trace_learn_creation(ks->trace, ks->ahead, (size_t)n, tid))
				return true;
	}
	return false;
}

/* Not among the queued pages: its creation may still be in its CPU's
 * buffer (recorded before the thread's events, but that CPU's reader has
 * not woken since): the readers sweep their buffers, and it is looked for
 * again. */
static void lookahead(void *arg, int32_t tid)
{
	struct rtk_source *ks = arg;
	if (!ks->ahead && !(ks->ahead = malloc(ks->page_size)))
		return;
	if (look(ks, tid) || !ks->pages.sweep)
		return;
	ks->pages.sweep(ks->pages.arg);
	look(ks, tid);
}

int rtk_source_init(struct rtk_source *ks, const struct rtk_pages *pages, struct rtk_trace *t,
		    uint64_t buffer_size_kb, bool window, struct cons_source *src)
{
	*ks = (struct rtk_source){ .pages = *pages, .trace = t, .window = window };
	pthread_mutex_init(&ks->err_lock, NULL);
	size_t page = pages->page_size ? pages->page_size : 4096;
	ks->page_size = page;
	if (pages->peek)
		rtk_trace_lookahead(t, lookahead, ks);
	unsigned n = pages->nr_cpus ? pages->nr_cpus : 1;
	ks->s = calloc(n, sizeof(*ks->s));
	if (!ks->s)
		return -ENOMEM;
	for (unsigned c = 0; c < n; c++)
		ks->s[c].more = true;	/* unknown until a get finds it empty */
	uint64_t kb = buffer_size_kb ? buffer_size_kb : RTK_DEFAULT_BUFFER_KB;
	uint64_t per_cpu = kb * 1024 / page + 1;
	ks->packet_size = CTF_PACKET_HEADER_SIZE + 5 * (uint64_t)page;
	*src = (struct cons_source){
		.ops = &rtk_source_ops, .arg = ks, .nr_streams = pages->nr_cpus,
		/* The whole buffer, its loss packet and a page written
		 * meanwhile: one read empties a CPU that is not refilled
		 * faster than it is read. */
		.batch = (uint32_t)(per_cpu + 2), .packet_size = ks->packet_size,
		.capacity = (per_cpu + 2) * ks->packet_size,
	};
	return 0;
}

void rtk_source_fini(struct rtk_source *ks)
{
	for (unsigned c = 0; ks->s && c < ks->pages.nr_cpus; c++)
		snap_free(&ks->s[c]);
	free(ks->s);
	ks->s = NULL;
	free(ks->ahead);
	ks->ahead = NULL;
	free(ks->snap_page);
	ks->snap_page = NULL;
	pthread_mutex_destroy(&ks->err_lock);
}

uint64_t rtk_source_bad_pages(const struct rtk_source *ks)
{
	uint64_t n = 0;
	for (unsigned c = 0; ks->s && c < ks->pages.nr_cpus; c++)
		n += __atomic_load_n(&ks->s[c].bad, __ATOMIC_RELAXED);
	return n;
}

/* ---- the formats' classes (constant once the instance is created) ---- */

static void cl_nolock(void *arg)
{
	(void)arg;
}

static bool cl_fields(void *arg, uint32_t stream_id, uint32_t id,
		      const struct rt_field_desc **fields, uint32_t *nr)
{
	const struct rtk_class *c = stream_id == 0 ? rtk_formats_class(arg, id) : NULL;
	if (!c)
		return false;
	*fields = c->descs;
	*nr = c->nr_fields;
	return true;
}

static int cl_copy(void *arg, uint32_t from, struct ctf_event_class **ev, uint32_t *nr,
		   uint64_t *generation)
{
	*generation = rtk_formats_count(arg);
	return rtk_formats_ctf_events(arg, from, ev, nr);
}

static uint64_t cl_generation(void *arg)
{
	return rtk_formats_count(arg);
}

void rtk_source_classes(const struct rtk_formats *f, struct cons_classes *cl)
{
	*cl = (struct cons_classes){
		.arg = (void *)(uintptr_t)f, .lock = cl_nolock, .unlock = cl_nolock,
		.fields = cl_fields, .copy = cl_copy, .generation = cl_generation,
	};
}
