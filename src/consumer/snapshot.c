/*
 * snapshot.c - the flight recorder (Bligh, Desnoyers & Schultz 2007): write what the
 * sources of a trace hold now as a complete CTF trace, while programs keep
 * writing, without consuming anything (consumer.h).
 *
 * Non-destructive copy: after a flush (closing every stream's open
 * packet), the complete units between the reader's position and the
 * writers' are copied, newest first, into private memory by the source
 * (snap_copy: for the ring buffer, rb_snapshot_copy checks that it held
 * the packet of that pass during the whole copy), then checked as packets
 * (cons_packet_trim), oldest first. The first copy that raced with a
 * writer after a good one ends the stream's copy: a snapshot holds a
 * contiguous most-recent run of packets per stream. Nothing is consumed,
 * so the session goes on and the next snapshot contains the same recent
 * data again. The caller serialises a snapshot with the channels' reading
 * (the daemon's io_lock).
 *
 * max_size: the newest packets of the whole trace (by timestamp_end) are
 * kept until the next would exceed it; that one and all older are dropped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/array.h"
#include "../common/fs_util.h"
#include "../ctf/ctf_packet.h"
#include "consumer.h"

struct snap_packet {
	uint32_t chan;
	uint32_t stream;
	uint64_t seq;
	uint64_t ts_end;
	uint64_t len;		/* trimmed size; 0: dropped */
	char *data;		/* private copy (its trimmed `len` bytes) */
};

struct snap {
	struct snap_packet *p;
	size_t n, cap;
};

static int snap_push(struct snap *sn, const struct snap_packet *p)
{
	if (RT_ARRAY_GROW(sn->p, sn->cap, sn->n + 1, 64) < 0)
		return -ENOMEM;
	sn->p[sn->n++] = *p;
	return 0;
}

/* Copy one stream's complete units, newest first, then check them as
 * packets oldest first. A writer that laps the buffer during the copy
 * overwrites the oldest unit next, so the newest are the likeliest to be
 * copied whole (copied oldest first, a writer faster than the copy, as
 * under CPU contention, overwrote each unit just before its turn and the
 * snapshot held nothing of the stream). The first copy that fails after
 * one succeeded ends the run (an older one would leave a hole); one that
 * fails before (overwritten, or the newest unit not complete: a writer in
 * the middle of an event) is skipped. A damaged packet is dropped alone
 * and counted. Returns 0 or -ENOMEM (the copies stay in sn). */
static int snap_stream(struct snap *sn, struct cons_channel *c, uint32_t chan, uint32_t stream)
{
	const uint64_t S = c->src.packet_size;
	uint64_t first_off, off;
	int ret = c->src.ops->snap_range(c->src.arg, stream, &first_off, &off);
	if (ret < 0)
		return ret;
	const size_t first = sn->n;
	while (off != first_off) {
		off -= S;
		struct snap_packet p = { .chan = chan, .stream = stream };
		p.data = malloc(S);
		if (!p.data)
			return -ENOMEM;
		ret = c->src.ops->snap_copy(c->src.arg, stream, off, p.data, &p.seq);
		if (ret == -EBADMSG) {
			free(p.data);
			/* Relaxed: statistics only. */
			__atomic_fetch_add(&c->stats.packets_corrupt, 1, __ATOMIC_RELAXED);
			continue;
		}
		if (ret < 0) {
			/* Overwritten, never completed or its table entry
			 * out of range. */
			free(p.data);
			if (sn->n > first)
				break;
			continue;
		}
		if (snap_push(sn, &p) < 0) {
			free(p.data);
			return -ENOMEM;
		}
	}
	/* Oldest first, as the packet checks (sequence, time) expect. */
	for (size_t i = first, j = sn->n; i + 1 < j; i++, j--) {
		struct snap_packet t = sn->p[i];
		sn->p[i] = sn->p[j - 1];
		sn->p[j - 1] = t;
	}
	struct cons_packet_prev prev = { 0 };
	size_t kept = first;
	for (size_t i = first; i < sn->n; i++) {
		struct snap_packet p = sn->p[i];
		uint64_t n;
		if (cons_packet_trim(c, stream, &prev, p.data, p.data, S, p.seq, &p.len, &n) < 0) {
			free(p.data);
			/* Relaxed: statistics only. */
			__atomic_fetch_add(&c->stats.packets_corrupt, 1, __ATOMIC_RELAXED);
			continue;
		}
		/* Keep the trimmed bytes only: a source's unit may be much
		 * larger than its packets (the kernel's bound a converted
		 * page). */
		char *fit = realloc(p.data, p.len);
		if (fit)
			p.data = fit;
		struct ctf_packet_header h;
		memcpy(&h, p.data, sizeof(h));
		p.seq = h.packet_seq_num;
		p.ts_end = h.timestamp_end;
		sn->p[kept++] = p;
	}
	sn->n = kept;
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
	if (x->chan != y->chan)
		return x->chan < y->chan ? -1 : 1;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
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

/* Stream files CHANNEL_STREAM in dir (never rotated). */
static int snap_write(struct cons_channel *const *chs, struct snap *sn, const char *dir)
{
	if (sn->n)	/* as in snap_trim */
		qsort(sn->p, sn->n, sizeof(*sn->p), by_stream);
	int ret = 0;
	struct cons_channel_desc flat = { 0 };
	struct cons_files fs = { 0 };
	struct cons_sink sink = { 0 };
	const struct snap_packet *prev = NULL;
	for (size_t i = 0; i < sn->n && !ret; i++) {
		const struct snap_packet *p = &sn->p[i];
		if (!p->len)
			continue;
		if (!prev || prev->chan != p->chan) {
			cons_files_free(&fs);
			flat = *chs[p->chan]->desc;
			flat.tracefile_size = 0;
			ret = cons_files_init(&fs, dir, &flat, chs[p->chan]->src.nr_streams);
			cons_files_sink(&sink, &fs);
		}
		prev = p;
		if (!ret)
			ret = sink.ops->write(sink.arg, p->stream, p->data, p->len, 0);
	}
	cons_files_free(&fs);
	return ret;
}

int cons_snapshot(struct cons_channel *const *chs, size_t nr,
		  const struct cons_trace_desc *trace,
		  const struct cons_channel_desc *const *descs, size_t nr_descs, const char *dir,
		  uint64_t max_size, char *err, size_t errlen)
{
	struct snap sn = { 0 };
	int ret = 0;
	for (size_t i = 0; i < nr && !ret; i++) {
		struct cons_channel *c = chs[i];
		if (!c->src.ops->snap_range || !c->src.ops->snap_copy) {
			snprintf(err, errlen, "the channel %s has no snapshots", c->desc->name);
			ret = -EOPNOTSUPP;
			goto out;
		}
		for (uint32_t s = 0; s < c->src.nr_streams && !ret; s++) {
			/* Close the open packet so that its events are in. */
			if (c->src.ops->flush)
				c->src.ops->flush(c->src.arg, s, false);
			ret = snap_stream(&sn, c, (uint32_t)i, s);
		}
	}
	if (ret < 0) {
		snprintf(err, errlen, "out of memory copying the buffers");
		goto out;
	}
	snap_trim(&sn, max_size);

	struct ctf_buf meta = { 0 };
	char why[512] = "";
	ret = cons_metadata_build(&meta, trace, descs, nr_descs, CONS_META_ALL, 0, NULL, NULL);
	if (!ret)
		ret = rt_file_write_atomic(dir, "metadata", meta.data, meta.len, true, why,
					   sizeof(why));
	ctf_buf_free(&meta);
	if (!ret)
		ret = snap_write(chs, &sn, dir);
	if (ret < 0)
		snprintf(err, errlen, "cannot write the snapshot in %s: %s", dir,
			 why[0] ? why : strerror(-ret));
out:
	for (size_t i = 0; i < sn.n; i++)
		free(sn.p[i].data);
	free(sn.p);
	return ret;
}
