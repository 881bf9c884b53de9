/*
 * rb_source.c - the user-space ring buffer as a consumer source
 * (consumer.h): one stream per CPU, read through the ring buffer's reader
 * API only (ringbuffer.h: get/put, giving up a stuck sub-buffer, the
 * non-destructive snapshot read, statistics, flush).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

#include "../ringbuffer/ringbuffer.h"
#include "consumer.h"

static int src_get(void *arg, uint32_t cpu, struct cons_packet *p)
{
	struct cons_rb_source *rs = arg;
	struct rb_read r;
	int ret = rb_get_subbuf(rs->rb, cpu, &r);
	if (ret < 0)
		return ret;
	*p = (struct cons_packet){ .data = r.data, .size = r.data_size, .seq = r.seq,
				   .cookie = r.count };
	return 0;
}

static void src_put(void *arg, uint32_t cpu, const struct cons_packet *p)
{
	struct cons_rb_source *rs = arg;
	struct rb_read r = { .count = p->cookie, .seq = p->seq, .data = p->data,
			     .data_size = p->size };
	rb_put_subbuf(rs->rb, cpu, &r);
}

static int src_skip_stuck(void *arg, uint32_t cpu, uint64_t now_ns, uint64_t after_ns)
{
	struct cons_rb_source *rs = arg;
	/* No writer left: what is incomplete now stays so (rb_skip_stuck
	 * wants to see it twice, at least `after` apart). */
	if (rs->dead)
		after_ns = 0;
	/* A writer that died in an event holds the CPU up: void its work
	 * (what it may have torn is given up by the next reads). */
	if (rs->gone && rb_void_dead(rs->rb, cpu, rs->gone, rs->gone_arg) > 0)
		return 0;
	return rb_skip_stuck(rs->rb, cpu, &rs->stuck[cpu], now_ns, after_ns);
}

static int src_flush(void *arg, uint32_t cpu, bool final)
{
	struct cons_rb_source *rs = arg;
	if (rs->dead) {
		uint64_t outstanding;
		return rb_close_dead(rs->rb, cpu, &outstanding);
	}
	/* The final flush of a drain (stop, destroy, exit) closes the
	 * buffer: nothing reserved after it lands (exact stop). */
	return final ? rb_close_cpu(rs->rb, cpu) : rb_flush_cpu(rs->rb, cpu, false);
}

static void src_counts(void *arg, uint32_t cpu, struct cons_counts *c)
{
	struct cons_rb_source *rs = arg;
	struct rb_stats st;
	rb_get_stats(rs->rb, cpu, &st);
	*c = (struct cons_counts){ .bytes_reserved = st.bytes_reserved,
				   .bytes_consumed = st.bytes_consumed,
				   .events_lost = st.events_lost,
				   .subbufs_lost = st.subbufs_lost };
}

static int src_snap_range(void *arg, uint32_t cpu, uint64_t *first, uint64_t *end)
{
	struct cons_rb_source *rs = arg;
	return rb_snapshot_range(rs->rb, cpu, first, end);
}

static int src_snap_copy(void *arg, uint32_t cpu, uint64_t off, void *dst, uint64_t *seq)
{
	struct cons_rb_source *rs = arg;
	return rb_snapshot_copy(rs->rb, cpu, off, dst, seq);
}

static const struct cons_source_ops rb_source_ops = {
	.get = src_get,
	.put = src_put,
	.skip_stuck = src_skip_stuck,
	.flush = src_flush,
	.counts = src_counts,
	.snap_range = src_snap_range,
	.snap_copy = src_snap_copy,
};

int cons_rb_source_init(struct cons_rb_source *rs, struct rb *rb, struct cons_source *s)
{
	rs->rb = rb;
	rs->dead = false;
	rs->stuck = calloc(rb->nr_cpus ? rb->nr_cpus : 1, sizeof(*rs->stuck));
	if (!rs->stuck)
		return -ENOMEM;
	*s = (struct cons_source){
		.ops = &rb_source_ops,
		.arg = rs,
		.nr_streams = rb->nr_cpus,
		.batch = rb->num_subbuf,
		.packet_size = rb->subbuf_size,
		/* rb_reserve never gets further ahead of the reader than the
		 * buffer and the open sub-buffer. */
		.capacity = ((uint64_t)rb->num_subbuf + 1) * rb->subbuf_size,
	};
	return 0;
}

void cons_rb_source_fini(struct cons_rb_source *rs)
{
	free(rs->stuck);
	rs->stuck = NULL;
}
