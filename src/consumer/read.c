/*
 * read.c - reading a channel from its source into its sink (consumer.h):
 * each packet trimmed (and checked, from an untrusted source), the
 * metadata brought up to date before it, written or accounted as lost; a
 * unit whose writer died mid-commit given up; the bounded drain.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "consumer.h"

uint64_t cons_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int cons_channel_init(struct cons_channel *c, const struct cons_channel_desc *desc,
		      const struct cons_trace_desc *trace, const struct cons_source *src,
		      const struct cons_sink *sink, struct cons_errors *errors, bool untrusted)
{
	*c = (struct cons_channel){ .desc = desc, .trace = trace, .src = *src, .sink = *sink,
				    .errors = errors, .untrusted = untrusted };
	c->streams = calloc(src->nr_streams ? src->nr_streams : 1, sizeof(*c->streams));
	if (!c->streams)
		return -ENOMEM;
	if (untrusted && !(c->copy = malloc(src->packet_size ? src->packet_size : 1))) {
		free(c->streams);
		c->streams = NULL;
		return -ENOMEM;
	}
	return 0;
}

void cons_channel_fini(struct cons_channel *c)
{
	free(c->streams);
	free(c->copy);
	c->streams = NULL;
	c->copy = NULL;
}

void cons_channel_flush(struct cons_channel *c)
{
	if (!c->src.ops->flush)
		return;
	for (uint32_t s = 0; s < c->src.nr_streams; s++)
		c->src.ops->flush(c->src.arg, s, false);
}

/* Relaxed: statistics only (cons_channel_stats). */
static void stat_add(uint64_t *v, uint64_t n)
{
	__atomic_fetch_add(v, n, __ATOMIC_RELAXED);
}

/* Write one packet taken from the stream: its trimmed (checked) form, or
 * nothing (counted) if it is damaged. */
static void write_packet(struct cons_channel *c, uint32_t stream, const struct cons_packet *p)
{
	struct cons_stream_state *st = &c->streams[stream];
	char *out = c->untrusted ? c->copy : p->data;
	uint64_t len, n;
	if ((c->untrusted && p->size > c->src.packet_size) ||
	    cons_packet_trim(c, stream, &st->prev, p->data, out, p->size, p->seq, &len, &n) < 0) {
		stat_add(&c->stats.packets_corrupt, 1);
		return;
	}
	/* The packet may use event classes registered after the last
	 * metadata write: the metadata goes first, or the packet cannot go
	 * out (and a program dying right after still leaves a readable
	 * trace). */
	int ret = c->metadata ? c->metadata(c->metadata_arg) : 0;
	const char *what = "the metadata";
	if (ret < 0) {
		c->sink.ops->lose(c->sink.arg, stream, out, n);
	} else {
		ret = c->sink.ops->write(c->sink.arg, stream, out, len, n);
		what = c->sink.ops->what ? c->sink.ops->what : "a stream file";
	}
	if (ret < 0) {
		/* A trusted packet's events are counted only when it is lost:
		 * a walk of every packet would cost time for nothing. */
		if (!c->untrusted) {
			n = cons_packet_events(c, out, len);
			if (c->sink.ops->lost_events)
				c->sink.ops->lost_events(c->sink.arg, stream, n);
		}
		cons_errors_failed(c->errors, what, ret, 1, n);
		stat_add(&c->stats.events_unwritten, n);
		return;
	}
	cons_errors_ok(c->errors);
	stat_add(&c->stats.events, n);
	stat_add(&c->stats.packets, 1);
	stat_add(&c->stats.bytes, len);
}

uint32_t cons_channel_read_stream(struct cons_channel *c, uint32_t s, uint64_t stuck_ms)
{
	struct cons_packet p;
	/* At most `batch` per stream and call, so that a program that keeps
	 * its buffer full cannot hold us on one stream (or a drain past its
	 * deadline). */
	uint32_t k = 0;
	for (; k < c->src.batch && c->src.ops->get(c->src.arg, s, &p) == 0; k++) {
		write_packet(c, s, &p);
		c->src.ops->put(c->src.arg, s, &p);
	}
	/* Nothing more to take: maybe a unit whose writer is gone (the
	 * source counts it in its subbufs_lost). */
	if (k < c->src.batch && c->src.ops->skip_stuck)
		c->src.ops->skip_stuck(c->src.arg, s, cons_now_ns(), stuck_ms * 1000000ull);
	return k;
}

uint32_t cons_channel_read(struct cons_channel *c, uint64_t stuck_ms)
{
	uint32_t most = 0;
	for (uint32_t s = 0; s < c->src.nr_streams; s++) {
		uint32_t k = cons_channel_read_stream(c, s, stuck_ms);
		if (k > most)
			most = k;
	}
	return most;
}

bool cons_stream_read_until(struct cons_channel *c, uint32_t stream, uint64_t until)
{
	if (!c->src.ops->counts)
		return false;
	/* At most `batch` packets a call (the counters are in memory that
	 * programs may write: the caller's deadline bounds the whole). */
	for (uint32_t k = 0; k <= c->src.batch; k++) {
		struct cons_counts cnt = { 0 };
		c->src.ops->counts(c->src.arg, stream, &cnt);
		if (cnt.bytes_consumed >= until)
			return true;
		struct cons_packet p;
		if (k == c->src.batch || c->src.ops->get(c->src.arg, stream, &p) < 0)
			break;
		write_packet(c, stream, &p);
		c->src.ops->put(c->src.arg, stream, &p);
	}
	return false;
}

/*
 * One drain pass's verdict on each stream that is not done yet: done when
 * all it reserved is consumed and its final flush finished; given up
 * (counted in subbufs_skipped, the units it still held) when its counters
 * are impossible (more unread than a stream holds: a program wrote on
 * them), when nothing was consumed for CONS_DRAIN_STUCK_MS, or at the
 * deadline. Returns whether every stream is done.
 */
static bool drain_settle(struct cons_channel *c, uint64_t now, bool deadline)
{
	bool all = true;
	for (uint32_t s = 0; s < c->src.nr_streams; s++) {
		struct cons_stream_state *st = &c->streams[s];
		if (st->drain_done)
			continue;
		struct cons_counts cnt = { 0 };
		if (c->src.ops->counts)
			c->src.ops->counts(c->src.arg, s, &cnt);
		uint64_t left = cnt.bytes_reserved - cnt.bytes_consumed;
		bool impossible = left > c->src.capacity;
		if (!left && !st->drain_pending) {
			st->drain_done = true;
			continue;
		}
		if (cnt.bytes_consumed != st->drain_consumed) {
			st->drain_consumed = cnt.bytes_consumed;
			st->drain_ns = now;
		}
		if (impossible || deadline || now - st->drain_ns >= CONS_DRAIN_STUCK_MS * 1000000ull) {
			uint64_t unit = c->src.packet_size ? c->src.packet_size : 1, n;
			if (impossible) {
				/* Once per set of impossible counters. */
				n = st->skipped && st->skipped_to == cnt.bytes_reserved ? 0 : 1;
				st->skipped_to = cnt.bytes_reserved;
			} else {
				/* Units an earlier drain gave up that are still
				 * unread are not counted again. */
				uint64_t done = st->skipped_to - cnt.bytes_consumed;
				if (!st->skipped || done > c->src.capacity)
					done = 0;
				n = left > done ? (left - done + unit - 1) / unit : 0;
				st->skipped_to = cnt.bytes_consumed + done + n * unit;
			}
			st->skipped = true;
			stat_add(&c->stats.subbufs_skipped, n);
			st->drain_done = true;
			continue;
		}
		all = false;
	}
	return all;
}

void cons_drain(struct cons_channel *const *chs, size_t nr, bool read)
{
	uint64_t start = cons_now_ns(), deadline = start + CONS_DRAIN_MAX_MS * 1000000ull;
	for (size_t i = 0; i < nr; i++)
		for (uint32_t s = 0; s < chs[i]->src.nr_streams; s++)
			chs[i]->streams[s] = (struct cons_stream_state){
				.prev = chs[i]->streams[s].prev, .drain_consumed = UINT64_MAX,
				.drain_ns = start, .skipped_to = chs[i]->streams[s].skipped_to,
				.skipped = chs[i]->streams[s].skipped };
	for (;;) {
		/* -EAGAIN from a flush (drain_pending): it could not finish,
		 * e.g. a full buffer (discard mode) had no room for the packet
		 * carrying the last lost events. Read and flush again even
		 * when all that is reserved is consumed, or those counts are
		 * lost. */
		for (size_t i = 0; i < nr; i++) {
			struct cons_channel *c = chs[i];
			for (uint32_t s = 0; c->src.ops->flush && s < c->src.nr_streams; s++)
				if (!c->streams[s].drain_done)
					c->streams[s].drain_pending =
						c->src.ops->flush(c->src.arg, s, true) == -EAGAIN;
			if (read)
				cons_channel_read(c, CONS_DRAIN_STUCK_MS);
		}
		if (!read)
			return;
		uint64_t now = cons_now_ns();
		bool all = true;
		for (size_t i = 0; i < nr; i++)
			all &= drain_settle(chs[i], now, now >= deadline);
		if (all)
			break;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	for (size_t i = 0; i < nr; i++)
		cons_channel_settle(chs[i]);
}

void cons_channel_settle(struct cons_channel *c)
{
	for (uint32_t s = 0; c->sink.ops->settle && s < c->src.nr_streams; s++) {
		int r = c->sink.ops->settle(c->sink.arg, s);
		if (r < 0)
			cons_errors_failed(c->errors, c->sink.ops->what ? c->sink.ops->what
									: "a stream file", r, 0, 0);
	}
}

void cons_channel_stats(const struct cons_channel *c, struct cons_stats *st)
{
	/* Relaxed: statistics, written by the reading thread. */
	st->packets += __atomic_load_n(&c->stats.packets, __ATOMIC_RELAXED);
	st->bytes += __atomic_load_n(&c->stats.bytes, __ATOMIC_RELAXED);
	st->events += __atomic_load_n(&c->stats.events, __ATOMIC_RELAXED);
	st->subbufs_skipped += __atomic_load_n(&c->stats.subbufs_skipped, __ATOMIC_RELAXED);
	st->packets_corrupt += __atomic_load_n(&c->stats.packets_corrupt, __ATOMIC_RELAXED);
	st->events_unwritten += __atomic_load_n(&c->stats.events_unwritten, __ATOMIC_RELAXED);
}
