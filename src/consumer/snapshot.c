/*
 * snapshot.c - the flight recorder (Bligh, Desnoyers & Schultz 2007): write what the
 * buffers of a trace hold now as a complete CTF trace, while programs keep
 * writing, without consuming anything.
 *
 * Non-destructive copy: after a flush (closing every CPU's open packet),
 * every complete sub-buffer between the reader's position and the writers'
 * (rb_snapshot_range) is copied, oldest first, into private memory by
 * rb_snapshot_copy, which checks that the sub-buffer held that pass's
 * complete packet for the whole copy; the copy must then be a packet of
 * that pass (magic, packet_seq_num, content_size). A copy that raced with
 * a writer starting the next pass fails the check and is dropped,
 * together with every older copy of that CPU: a snapshot
 * holds a contiguous most-recent run of packets per CPU. read_count is
 * never moved, so the session goes on and the next snapshot contains the
 * same recent data again. Discard-mode buffers cannot be overwritten
 * before they are consumed, and nothing consumes them while we hold the
 * trace's io_lock.
 *
 * max_size: the newest packets of the whole trace (by timestamp_end) are
 * kept until the next would exceed it; that one and all older are dropped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/fs_util.h"
#include "../ringbuffer/ringbuffer.h"
#include "consumer_internal.h"

struct snap_packet {
	uint32_t set;
	uint32_t cpu;
	uint64_t seq;
	uint64_t ts_end;
	uint64_t len;		/* trimmed size; 0: dropped */
	char *data;		/* private copy (subbuf_size bytes) */
};

struct snap {
	struct snap_packet *p;
	size_t n, cap;
};

/* Copy the complete sub-buffer at logical offset `off` of a CPU's buffer
 * into `dst` (rb_snapshot_copy: stable during the copy), then check the
 * packet (cons_packet_check, after `prev`). Returns the trimmed packet
 * length, or 0 if it is not complete or was overwritten (*corrupt false)
 * or damaged (*corrupt true). */
static uint64_t copy_subbuf(struct cons_bufset *cb, uint32_t cpu, uint64_t off, char *dst,
			    struct cons_packet_prev *prev, bool *corrupt)
{
	struct rb *rb = &cb->b->rb;
	*corrupt = false;
	uint64_t seq;
	if (rb_snapshot_copy(rb, cpu, off, dst, &seq) < 0)
		return 0;
	uint64_t len, n;
	if (cons_packet_check(cb, cpu, prev, dst, dst, rb->subbuf_size, seq, &len, &n) < 0) {
		*corrupt = true;
		return 0;
	}
	return len;
}

static int snap_push(struct snap *sn, const struct snap_packet *p)
{
	if (sn->n == sn->cap) {
		size_t cap = sn->cap ? sn->cap * 2 : 64;
		struct snap_packet *np = realloc(sn->p, cap * sizeof(*np));
		if (!np)
			return -ENOMEM;
		sn->p = np;
		sn->cap = cap;
	}
	sn->p[sn->n++] = *p;
	return 0;
}

/* Copy one CPU's complete sub-buffers, oldest first; keep the run after
 * the last failed copy (a damaged packet is dropped alone and counted). */
static int snap_cpu(struct snap *sn, struct cons_bufset *cb, uint32_t set, uint32_t cpu)
{
	struct rb *rb = &cb->b->rb;
	struct cons_packet_prev prev = { 0 };
	const uint64_t S = rb->subbuf_size;
	uint64_t start, end;
	int ret = rb_snapshot_range(rb, cpu, &start, &end);
	if (ret < 0)
		return ret;
	size_t first = sn->n;
	for (uint64_t off = start; off != end; off += S) {
		struct snap_packet p = { .set = set, .cpu = cpu };
		p.data = malloc(S);
		if (!p.data)
			return -ENOMEM;
		bool corrupt;
		p.len = copy_subbuf(cb, cpu, off, p.data, &prev, &corrupt);
		if (!p.len && corrupt) {
			free(p.data);
			/* Relaxed: statistics only. */
			__atomic_fetch_add(&cb->packets_corrupt, 1, __ATOMIC_RELAXED);
			continue;
		}
		if (!p.len) {
			/* Overwritten (or never completed): drop it and all
			 * older copies of this CPU. */
			free(p.data);
			for (size_t i = first; i < sn->n; i++)
				free(sn->p[i].data);
			sn->n = first;
			prev.valid = false;
			continue;
		}
		struct ctf_packet_header h;
		memcpy(&h, p.data, sizeof(h));
		p.seq = h.packet_seq_num;
		p.ts_end = h.timestamp_end;
		if (snap_push(sn, &p) < 0) {
			free(p.data);
			return -ENOMEM;
		}
	}
	return 0;
}

static int by_age(const void *a, const void *b)
{
	const struct snap_packet *x = a, *y = b;
	if (x->ts_end != y->ts_end)
		return x->ts_end < y->ts_end ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int by_stream(const void *a, const void *b)
{
	const struct snap_packet *x = a, *y = b;
	if (x->set != y->set)
		return x->set < y->set ? -1 : 1;
	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Keep the newest packets that fit in max_size bytes. */
static void snap_trim(struct snap *sn, uint64_t max_size)
{
	if (!max_size)
		return;
	if (sn->n)	/* qsort(NULL, 0, ...) is undefined: no streams, no p */
		qsort(sn->p, sn->n, sizeof(*sn->p), by_age);
	uint64_t total = 0;
	bool full = false;
	for (size_t i = sn->n; i-- > 0;) {
		/* Once a packet does not fit, every older one goes too: a
		 * smaller older packet would leave a hole in its stream. */
		full = full || total + sn->p[i].len > max_size;
		if (full)
			sn->p[i].len = 0;
		else
			total += sn->p[i].len;
	}
}

/* Stream files CHANNEL_CPU in dir (never rotated). */
static int snap_write(struct dp_trace *t, struct snap *sn, const char *dir)
{
	if (sn->n)	/* as in snap_trim */
		qsort(sn->p, sn->n, sizeof(*sn->p), by_stream);
	int ret = 0;
	struct cons_stream s = { .fd = -1 };
	const struct snap_packet *prev = NULL;
	for (size_t i = 0; i < sn->n && !ret; i++) {
		const struct snap_packet *p = &sn->p[i];
		if (!p->len)
			continue;
		if (prev && (prev->set != p->set || prev->cpu != p->cpu))
			cons_stream_close(&s);
		prev = p;
		struct rtd_channel flat = *t->bufsets[p->set].channel;
		flat.tracefile_size = 0;
		ret = cons_stream_write(dir, &flat, p->cpu, &s, p->data, p->len, 0);
	}
	cons_stream_close(&s);
	return ret;
}

/* Errors: -EINVAL (the trace is not being consumed), -ENOMEM, -errno of
 * mkdir/open/write/rename in dir. */
int consumer_snapshot(struct dp_trace *t, const char *dir, uint64_t max_size,
		      char *err, size_t errlen)
{
	struct cons_trace *ct = t->consumer;
	if (!ct) {
		snprintf(err, errlen, "no consumer for the trace in %s", t->dir);
		return -EINVAL;
	}
	struct snap sn = { 0 };
	int ret = 0;
	pthread_mutex_lock(&ct->io_lock);
	for (uint32_t i = 0; i < t->nr_bufsets && !ret; i++) {
		struct dp_bufset *b = &t->bufsets[i];
		if (!cons_bufset_live(b))
			continue;
		for (uint32_t cpu = 0; cpu < b->rb.nr_cpus && !ret; cpu++) {
			/* Close the open packet so that its events are in. */
			rb_flush_cpu(&b->rb, cpu, false);
			ret = snap_cpu(&sn, &ct->sets[i], i, cpu);
		}
	}
	pthread_mutex_unlock(&ct->io_lock);
	if (ret < 0) {
		snprintf(err, errlen, "out of memory copying the buffers");
		goto out;
	}
	snap_trim(&sn, max_size);

	struct ctf_buf meta = { 0 };
	uint64_t gen;
	char why[512] = "";
	ret = cons_metadata_build(t, &meta, &gen);
	if (!ret)
		ret = rt_file_write_atomic(dir, "metadata", meta.data, meta.len, true, why,
					   sizeof(why));
	ctf_buf_free(&meta);
	if (!ret)
		ret = snap_write(t, &sn, dir);
	if (ret < 0)
		snprintf(err, errlen, "cannot write the snapshot in %s: %s", dir,
			 why[0] ? why : strerror(-ret));
out:
	for (size_t i = 0; i < sn.n; i++)
		free(sn.p[i].data);
	free(sn.p);
	return ret;
}
