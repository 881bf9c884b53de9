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
 * shortcut for equation (3) (rb_commit_rseq). Differences of free-running
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

/*
 * Algorithm 2 (RESERVE_SLOT) for the common case, with nothing out of
 * line: rseq mode, the slot (`slot` bytes, compact event header) fits in
 * the current sub-buffer, which is already open, does not end exactly at
 * its boundary (END_SWITCH_CURRENT), the previous event on this CPU is
 * recent enough for a compact timestamp, and the CPU's hot word
 * (ringbuffer.h, struct rb_cpu_ctl) names the physical sub-buffer of this
 * pass. Returns true with *f filled (the slot is reserved: the caller
 * must write it and call rb_fast_commit), false if any of that does not
 * hold or the rseq section aborted: nothing was reserved, take the
 * general path (rb_reserve). Reads the CPU's first control line and the
 * first line of struct rb; overwrite mode's table is not read.
 *
 * Why the hot word can be trusted when its tag matches: it is stored
 * only by a writer that holds (or saw held) the table's writer flag for
 * that sub-buffer number, so it names the physical sub-buffer of that
 * pass; the flag is cleared only when the pass is complete, and the pass
 * cannot be complete while write_count is still inside it (in_sb != 0
 * and the slot does not reach the end): the rseq section below commits
 * only if write_count is still the value read, so at that instant the
 * pass is open and the reader cannot have exchanged the sub-buffer. A
 * stale word (a writer preempted between its reservation and its store)
 * carries an older sub-buffer number and sends us to the slow path,
 * which stores the right one.
 *
 * The clock is read after write_count and the rseq section commits only
 * if write_count is still the value read, so no reservation on this CPU
 * falls between the clock read and ours: timestamps never go backwards in
 * buffer order. The slot's size does not depend on the clock (a full
 * timestamp takes the general path), so the reservation does not wait
 * for it.
 */
static inline __attribute__((always_inline)) bool
rb_fast_reserve(const struct rb *rb, uint64_t slot, uint64_t (*clock)(void),
		struct rb_fast *f)
{
#if RB_HAVE_RSEQ
	if (!__builtin_expect(rb->rseq_fast, 1))
		return false;
	const ptrdiff_t off = rb->rseq_off;
	const uint64_t S = rb->subbuf_size;
	int32_t cpu = rb_rseq_cpu(off);
	if (__builtin_expect((uint32_t)cpu >= rb->nr_cpus, 0))
		return false;
	/* A multiply, not a shift by a variable: x86's variable shifts
	 * want %cl, which the sub-buffer shifts below already hold. */
	struct rb_cpu_ctl *c =
		(struct rb_cpu_ctl *)(rb->cpu_ctl + (size_t)cpu * rb->cpu_ctl_stride);
	uint64_t wc = __atomic_load_n(&c->write_count, __ATOMIC_RELAXED);
	uint64_t last = __atomic_load_n(&c->last_tsc, __ATOMIC_RELAXED);
	/* Relaxed: validated by its tag below (see above). */
	uint64_t hot = __atomic_load_n(&c->hot_subbuf, __ATOMIC_RELAXED);
	uint64_t in_sb = wc & (S - 1);
	uint64_t sbnum = wc >> rb->sbfbits;
	/* One compare for both halves of the hot word: the tag (high 32
	 * bits) equals this sub-buffer number mod 2^32 and the index (low
	 * 32 bits, untrusted shared memory) is a physical sub-buffer. */
	uint64_t phys = hot ^ (sbnum << 32);
	if (__builtin_expect(in_sb == 0 || in_sb + slot >= S || phys > rb->phys_max, 0))
		return false;
	/* Everything the commit needs is computed before the rseq section,
	 * so few values stay live across it. */
	char *addr = rb->cpus[cpu].data + (phys << rb->sbfbits) + in_sb;
	struct rb_subbuf_ctl *sb = &c->sb[(uint32_t)sbnum & (rb->num_subbuf - 1)];
	uint64_t tsc = clock();
	if (__builtin_expect(tsc - last > rb->tsc_max, 0))
		return false;
	/* Algorithm 2 line 6: the LCAS of write_count. */
	if (__builtin_expect(rb_rseq_cmpeq_store(&c->write_count, wc, wc + slot,
						 cpu, off) != 0,
			     0))
		return false;
	__atomic_store_n(&c->last_tsc, tsc, __ATOMIC_RELAXED);
	f->addr = addr;
	f->ctl = c;
	f->sb = sb;
	f->offset = wc;
	f->room = rb_room(rb, wc);
	f->tsc = tsc;
	f->rseq_off = off;
	f->cpu = cpu;
	return true;
#else
	(void)rb;
	(void)slot;
	(void)clock;
	(void)f;
	return false;
#endif
}

/*
 * Algorithm 3 (COMMIT_SLOT) for a slot of rb_fast_reserve (rseq mode,
 * usable here): add the slot's size to its sub-buffer's commit count. On
 * the CPU that owns the buffer this is a local add in an
 * rseq section (commit_local); a committer that migrated since the
 * reservation, or any committer in SMP-atomic mode, adds to commit_remote
 * instead (rb_commit_slow), so neither word is ever written both ways.
 *
 * Then equation (3) for the committer, with a shortcut: a pass can only
 * be complete once every byte of its sub-buffer is reserved, that is once
 * write_count has left the sub-buffer. While it has not, the writer that
 * moves it out (a switch or a flush, all in the slow path) commits after
 * us and checks completion itself: on one CPU (rseq) program order and
 * context switches order our add before its check; in SMP-atomic mode
 * both sides are sequentially consistent. Only a migrated committer's
 * remote add can race with the owner CPU's switch so that neither sees
 * the pass complete; the reader (rb_get_subbuf) and the next writer to
 * enter the sub-buffer (equation (3) in the slow path) complete it then.
 */
static inline __attribute__((always_inline)) void
rb_commit_rseq(struct rb *rb, const struct rb_fast *f, uint64_t slot)
{
#if RB_HAVE_RSEQ
	/* The asm's "memory" clobber is the compiler barrier of Algorithm 3
	 * line 1: the slot's data is written before the add; it also keeps
	 * the write_count load below after the add. */
	if (__builtin_expect(rb_rseq_add(&f->sb->commit_local, slot, f->cpu,
					 f->rseq_off) == 0,
			     1)) {
		/* Relaxed: only decides whether to check; the check does the
		 * acquire loads that pair with the other committers. */
		uint64_t wc = __atomic_load_n(&f->ctl->write_count, __ATOMIC_RELAXED);
		if (__builtin_expect(!rb_left_subbuf(wc, f->offset, f->room), 1))
			return;
		rb_commit_slow(rb, f->cpu, f->offset, 0);
		return;
	}
#endif
	rb_commit_slow(rb, f->cpu, f->offset, slot);
}

/* As rb_commit_rseq for any slot (from the slow path too, in any mode). */
static inline __attribute__((always_inline)) void
rb_fast_commit(struct rb *rb, const struct rb_fast *f, uint64_t slot)
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
