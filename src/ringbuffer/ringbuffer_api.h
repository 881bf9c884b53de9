/*
 * ringbuffer_api.h - the producer fast path (seed 000 Algorithms 1-3),
 * inlined into the probe. Slow paths (sub-buffer switch, SMP-atomic mode,
 * table updates) are noinline functions in ringbuffer.c.
 *
 * Fast path contract: no lock, no system call, no allocation, no floating
 * point; reentrant (a signal handler may reserve and commit on the same
 * thread between our reserve and commit: its slot simply follows ours).
 */
#ifndef RINGTRACE_RINGBUFFER_API_H
#define RINGTRACE_RINGBUFFER_API_H

#include "rb_rseq.h"
#include "ringbuffer.h"

#define RB_HIDDEN __attribute__((visibility("hidden")))

RB_HIDDEN int rb_reserve_slow(struct rb *rb, struct rb_ctx *ctx);
RB_HIDDEN void rb_subbuf_try_complete(struct rb *rb, uint32_t cpu,
				      uint32_t idx, uint64_t offset);
/* Commit `remote_bytes` (if nonzero) with an SMP add, then check whether
 * the pass holding `offset` is complete (rb_fast_commit). */
RB_HIDDEN void rb_commit_slow(struct rb *rb, int32_t cpu, uint64_t offset,
			      uint64_t remote_bytes);

static inline struct rb_cpu_ctl *rb_cpu(const struct rb *rb, uint32_t cpu)
{
	return rb->cpus[cpu].ctl;
}

static inline uint32_t rb_subbuf_index(const struct rb *rb, uint64_t offset)
{
	return (uint32_t)(offset >> rb->geom.sbfbits) & (rb->num_subbuf - 1);
}

static inline char *rb_phys_addr(const struct rb *rb, uint32_t cpu,
				 uint32_t phys)
{
	return rb->cpus[cpu].data + ((size_t)phys << rb->geom.sbfbits);
}

/* The commit count (masked) that completes the pass holding `offset`. */
static inline uint64_t rb_ctx_target(const struct rb *rb, uint64_t offset)
{
	return ((((offset >> rb->geom.bfbits) + 1) << rb->geom.sbfbits)) &
	       rb->commit_mask;
}

/* Bytes from `offset` to the end of its sub-buffer. */
static inline uint32_t rb_room(const struct rb *rb, uint64_t offset)
{
	return (uint32_t)(rb->subbuf_size - (offset & (rb->subbuf_size - 1)));
}

/* Whether write_count `wc` has left the sub-buffer of the slot at
 * `offset`, `room` bytes before that sub-buffer's end: the commit's
 * shortcut for equation (3) (rt__fast_commit). Differences of free-running
 * counters: wrap-safe. */
static inline bool rb_left_subbuf(uint64_t wc, uint64_t offset, uint64_t room)
{
	return wc - offset >= room;
}

/* The slow path through a copy of *ctx: the caller's ctx never has its
 * address passed out of line, so the compiler keeps it in registers on
 * the fast path instead of storing every field to the stack. */
static inline int rb_reserve_slow_copy(struct rb *rb, struct rb_ctx *ctx)
{
	struct rb_ctx tmp = *ctx;
	int r = rb_reserve_slow(rb, &tmp);
	*ctx = tmp;
	return r;
}

/* Algorithm 2 for the common case (rt__fast_reserve, ringtrace_fast.h),
 * in rseq mode when this process can use it; false: nothing reserved,
 * take the general path (rb_reserve). */
static inline __attribute__((always_inline)) bool
rb_fast_reserve(const struct rb *rb, uint64_t slot, uint64_t (*clock)(void),
		struct rt_fast_slot *f)
{
	return __builtin_expect(rb->rseq_fast, 1) &&
	       rt__fast_reserve(&rb->fast, slot, clock, f);
}

/* Algorithm 3 for a slot of rb_fast_reserve (rt__fast_commit). */
static inline __attribute__((always_inline)) void
rb_commit_rseq(struct rb *rb, const struct rt_fast_slot *f, uint64_t slot)
{
	rt__fast_commit(&rb->fast, f, slot, rt__fast_commit_slow);
}

/* As rb_commit_rseq for any slot (from the slow path too, in any mode):
 * in SMP-atomic mode every commit is a remote add. */
static inline __attribute__((always_inline)) void
rb_fast_commit(struct rb *rb, const struct rt_fast_slot *f, uint64_t slot)
{
	if (__builtin_expect(rb->rseq_fast, 1))
		rb_commit_rseq(rb, f, slot);
	else
		rb_commit_slow(rb, f->cpu, f->offset, slot);
}

/*
 * The general reservation (Algorithms 1 and 2): rb_fast_reserve, or the
 * out-of-line path for everything else (switches, full timestamps,
 * SMP-atomic mode, retries). Returns 0 with ctx filled, or a negative
 * errno (event dropped and counted): -ENOBUFS buffer full (discard mode)
 * or not yet committed, -EMSGSIZE event larger than a sub-buffer.
 */
static inline __attribute__((always_inline)) int rb_reserve(struct rb *rb, struct rb_ctx *ctx,
			     uint64_t (*clock)(void))
{
	/* 64-bit: a payload near 2^32 must not wrap. */
	uint64_t slot = (uint64_t)ctx->hdr_compact + ctx->payload_size;
	if (__builtin_expect(rb_fast_reserve(rb, slot, clock, &ctx->r), 1)) {
		ctx->slot_size = (uint32_t)slot;
		ctx->full_tsc = false;
		return 0;
	}
	return rb_reserve_slow_copy(rb, ctx);
}

/* Algorithm 3 for a slot from rb_reserve. */
static inline __attribute__((always_inline)) void rb_commit(struct rb *rb,
							    const struct rb_ctx *ctx)
{
	rb_fast_commit(rb, &ctx->r, ctx->slot_size);
}

#endif /* RINGTRACE_RINGBUFFER_API_H */
