/*
 * rotate.c - session rotation (consumer.h): the channels' streams end
 * their packets at the rotation point, everything before it goes to the
 * current trace chunk, everything after to the next (the sink's rotate).
 *
 * A stream's rotation point is a position of its source: the bytes its
 * writers had reserved just before the flush that closes its open packet,
 * rounded up to a whole unit. Every packet that began before it is read
 * into the current chunk; the writers go on meanwhile, into later units,
 * which are the next chunk's. No packet is in two chunks and none is left
 * out, and the packets' sequence numbers and discarded-event counts go on
 * from one chunk to the next.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "consumer.h"

struct rot_stream {
	uint64_t until;			/* the rotation point */
	bool flushed;			/* its flush closed the open packet */
	bool done;
};

/* Every stream of the channels: one array, channel after channel. */
static size_t nr_streams(struct cons_channel *const *chs, size_t nr)
{
	size_t n = 0;
	for (size_t i = 0; i < nr; i++)
		n += chs[i]->src.nr_streams;
	return n;
}

static void mark(struct cons_channel *c, uint32_t s, struct rot_stream *r)
{
	struct cons_counts cnt = { 0 };
	if (c->src.ops->counts)
		c->src.ops->counts(c->src.arg, s, &cnt);
	uint64_t unit = c->src.packet_size ? c->src.packet_size : 1;
	r->until = cnt.bytes_reserved + (unit - cnt.bytes_reserved % unit) % unit;
	/* A source without counts or flush has nothing to wait for. */
	r->done = !c->src.ops->counts || !c->src.ops->flush;
	r->flushed = r->done || c->src.ops->flush(c->src.arg, s, false) == 0;
}

/* One pass over the streams not done yet; returns whether all are. */
static bool pass(struct cons_channel *const *chs, size_t nr, struct rot_stream *rs,
		 uint64_t now, bool deadline)
{
	bool all = true;
	struct rot_stream *r = rs;
	for (size_t i = 0; i < nr; i++) {
		struct cons_channel *c = chs[i];
		for (uint32_t s = 0; s < c->src.nr_streams; s++, r++) {
			if (r->done)
				continue;
			/* A flush that could not run (rseq mode, the CPU not
			 * usable now) is tried again. */
			if (!r->flushed)
				r->flushed = c->src.ops->flush(c->src.arg, s, false) == 0;
			if (cons_stream_read_until(c, s, r->until)) {
				r->done = true;
				continue;
			}
			/* A unit whose writer died mid-commit is given up
			 * after CONS_STUCK_MS, as the read timer would (counted
			 * by the source), not the drain's CONS_DRAIN_STUCK_MS:
			 * the writers are alive, and one preempted in the
			 * middle of an event is only late. Past the deadline
			 * what is left goes to the next chunk. */
			if (c->src.ops->skip_stuck)
				c->src.ops->skip_stuck(c->src.arg, s, now, CONS_STUCK_MS * 1000000ull);
			if (deadline)
				r->done = true;
			else
				all = false;
		}
	}
	return all;
}

int cons_rotate(struct cons_channel *const *chs, size_t nr, const char *dir)
{
	for (size_t i = 0; i < nr; i++)
		if (!chs[i]->sink.ops->rotate)
			return -EOPNOTSUPP;
	size_t n = nr_streams(chs, nr);
	struct rot_stream *rs = calloc(n ? n : 1, sizeof(*rs));
	if (!rs)
		return -ENOMEM;
	struct rot_stream *r = rs;
	for (size_t i = 0; i < nr; i++)
		for (uint32_t s = 0; s < chs[i]->src.nr_streams; s++)
			mark(chs[i], s, r++);
	uint64_t deadline = cons_now_ns() + CONS_DRAIN_MAX_MS * 1000000ull;
	for (;;) {
		uint64_t now = cons_now_ns();
		if (pass(chs, nr, rs, now, now >= deadline))
			break;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	free(rs);
	int ret = 0;
	for (size_t i = 0; i < nr; i++) {
		struct cons_channel *c = chs[i];
		/* The header-only packets that stand for packets that could
		 * not be written go to the chunk they belong to. */
		cons_channel_settle(c);
		int e = c->sink.ops->rotate(c->sink.arg, dir);
		if (e < 0 && !ret)
			ret = e;
	}
	return ret;
}
