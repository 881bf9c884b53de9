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
RB_HIDDEN uint32_t rb_table_acquire_slow(struct rb *rb, uint32_t cpu,
					 uint32_t idx, uint64_t offset);
RB_HIDDEN void rb_subbuf_try_complete(struct rb *rb, uint32_t cpu,
				      uint32_t idx, uint64_t offset);
RB_HIDDEN void rb_commit_remote(struct rb_subbuf_ctl *sb, uint64_t bytes);

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

/* The buffer's geometry as a writer uses it, read into locals once per
 * reservation: the fields never change after rb_create/rb_attach, but
 * the rseq section's "memory" clobber would make the compiler reload
 * each one after it. */
struct rb_wgeom {
	struct rb_cpu_ptrs *cpus;
	uint64_t subbuf_size;
	uint64_t commit_mask;
	uint32_t sbfbits;
	uint32_t bfbits;
	uint32_t num_subbuf;
	bool discard;
};

static inline struct rb_wgeom rb_wgeom(const struct rb *rb)
{
	struct rb_wgeom g = {
		.cpus = rb->cpus,
		.subbuf_size = rb->subbuf_size,
		.commit_mask = rb->commit_mask,
		.sbfbits = rb->geom.sbfbits,
		.bfbits = rb->geom.bfbits,
		.num_subbuf = rb->num_subbuf,
		.discard = rb->mode == RB_MODE_DISCARD,
	};
	return g;
}

/*
 * Physical sub-buffer that holds `offset` for a writer. Discard mode: the
 * logical index itself. Overwrite mode: the table entry, which must carry
 * this pass's tag and the writer flag before anything is written (a nested
 * writer can get here before the writer that switched in has set it).
 */
static inline uint32_t rb_writer_phys_g(struct rb *rb, const struct rb_wgeom *g,
					uint32_t cpu, uint64_t offset)
{
	uint32_t idx = (uint32_t)(offset >> g->sbfbits) & (g->num_subbuf - 1);
	if (g->discard)
		return idx;
	/* Acquire: pairs with the CAS in rb_table_acquire_slow() or the
	 * reader's swap, so the index we use is the one the flag protects. */
	uint64_t e = __atomic_load_n(&g->cpus[cpu].ctl->sb[idx].table,
				     __ATOMIC_ACQUIRE);
	uint64_t pass = (offset >> g->bfbits) & RB_TABLE_TAG_MASK;
	/* The entry lives in shared memory that another process (the
	 * daemon, other programs) can write: an index past the N + 1
	 * physical sub-buffers goes to the slow path, which never returns
	 * one. */
	if (__builtin_expect((e & RB_TABLE_FLAG) && RB_TABLE_TAG(e) == pass &&
				     RB_TABLE_IDX(e) <= g->num_subbuf,
			     1))
		return RB_TABLE_IDX(e);
	return rb_table_acquire_slow(rb, cpu, idx, offset);
}

/* As rb_writer_phys_g, reading the geometry from rb. */
static inline uint32_t rb_writer_phys(struct rb *rb, uint32_t cpu,
				      uint64_t offset)
{
	struct rb_wgeom g = rb_wgeom(rb);
	return rb_writer_phys_g(rb, &g, cpu, offset);
}

/* Fill the slot's address and commit bookkeeping once its offset is
 * reserved; `g` is rb's geometry (rb_wgeom). */
static inline void rb_ctx_place_g(struct rb *rb, const struct rb_wgeom *g,
				  struct rb_ctx *ctx, uint32_t cpu,
				  uint64_t offset)
{
	uint32_t idx = (uint32_t)(offset >> g->sbfbits) & (g->num_subbuf - 1);
	uint32_t phys = rb_writer_phys_g(rb, g, cpu, offset);
	ctx->offset = offset;
	ctx->cpu = (int32_t)cpu;
	ctx->sb = &g->cpus[cpu].ctl->sb[idx];
	ctx->target = (((offset >> g->bfbits) + 1) << g->sbfbits) & g->commit_mask;
	ctx->addr = g->cpus[cpu].data + ((size_t)phys << g->sbfbits) +
		    (offset & (g->subbuf_size - 1));
}

/* As rb_ctx_place_g, reading the geometry from rb (all paths). */
static inline void rb_ctx_place(struct rb *rb, struct rb_ctx *ctx,
				uint32_t cpu, uint64_t offset)
{
	struct rb_wgeom g = rb_wgeom(rb);
	rb_ctx_place_g(rb, &g, ctx, cpu, offset);
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
 * Algorithm 2 (RESERVE_SLOT) for the common case: the slot fits in the
 * current sub-buffer, which is already open, and does not end exactly at
 * its boundary (that is END_SWITCH_CURRENT, in the slow path). The clock
 * is read after write_count and the rseq section commits only if
 * write_count is still the value read, so no reservation on this CPU falls
 * between the clock read and ours: timestamps never go backwards in buffer
 * order.
 * Returns 0 with ctx filled, or a negative errno (event dropped and
 * counted): -ENOBUFS buffer full (discard mode) or not yet committed,
 * -EMSGSIZE event larger than a sub-buffer.
 */
static inline __attribute__((always_inline)) int rb_reserve(struct rb *rb, struct rb_ctx *ctx,
			     uint64_t (*clock)(void))
{
#if RB_HAVE_RSEQ
	if (__builtin_expect(rb->rseq, 1)) {
		struct rb_rseq_abi *rs = rb_rseq_area();
		const struct rb_wgeom g = rb_wgeom(rb);
		const uint32_t nr_cpus = rb->nr_cpus, tsc_bits = rb->tsc_bits;
		const uint64_t S = g.subbuf_size;
		for (;;) {
			int32_t cpu = rb_rseq_cpu(rs);
			if (__builtin_expect((uint32_t)cpu >= nr_cpus, 0))
				break;
			struct rb_cpu_ctl *c = g.cpus[cpu].ctl;
			uint64_t wc = __atomic_load_n(&c->write_count,
						      __ATOMIC_RELAXED);
			uint64_t last = __atomic_load_n(&c->last_tsc,
							__ATOMIC_RELAXED);
			uint64_t tsc = clock();
			bool full = ((tsc - last) >> tsc_bits) != 0;
			/* 64-bit: a payload near 2^32 must not wrap. */
			uint64_t slot = (uint64_t)(full ? ctx->hdr_full : ctx->hdr_compact) +
					ctx->payload_size;
			uint64_t in_sb = wc & (S - 1);
			if (__builtin_expect(in_sb == 0 || in_sb + slot >= S, 0))
				break;
			int r = rb_rseq_cmpeq_store(&c->write_count, wc,
						    wc + slot, cpu, rs);
			if (__builtin_expect(r != 0, 0))
				continue;
			__atomic_store_n(&c->last_tsc, tsc, __ATOMIC_RELAXED);
			ctx->tsc = tsc;
			ctx->slot_size = (uint32_t)slot;
			ctx->full_tsc = full;
			rb_ctx_place_g(rb, &g, ctx, (uint32_t)cpu, wc);
			return 0;
		}
	}
#else
	(void)clock;
#endif
	return rb_reserve_slow_copy(rb, ctx);
}

/*
 * Algorithm 3 (COMMIT_SLOT): add the slot's size to its sub-buffer's
 * commit count. On the CPU that owns the buffer this is a local add in an
 * rseq section (commit_local); a committer that migrated since the
 * reservation, or any committer in SMP-atomic mode, adds to commit_remote
 * instead, so neither word is ever written both ways. Then equation (3)
 * for the committer: if the count says the pass is complete, publish it
 * (acquire loads: pair with the other committers' release adds).
 */
static inline void rb_commit(struct rb *rb, const struct rb_ctx *ctx)
{
	struct rb_subbuf_ctl *sb = ctx->sb;
#if RB_HAVE_RSEQ
	/* The asm's "memory" clobber is the compiler barrier of Algorithm 3
	 * line 1: the slot's data is written before the add. */
	if (!__builtin_expect(rb->rseq, 1) ||
	    __builtin_expect(rb_rseq_add(&sb->commit_local, ctx->slot_size,
					 ctx->cpu, rb_rseq_area()) != 0,
			     0))
#endif
		rb_commit_remote(sb, ctx->slot_size);
	uint64_t total = __atomic_load_n(&sb->commit_local, __ATOMIC_ACQUIRE) +
			 __atomic_load_n(&sb->commit_remote, __ATOMIC_ACQUIRE);
	if (__builtin_expect((total & rb->commit_mask) == ctx->target, 0))
		rb_subbuf_try_complete(rb, (uint32_t)ctx->cpu,
				       rb_subbuf_index(rb, ctx->offset), ctx->offset);
}

#endif /* RINGTRACE_RINGBUFFER_API_H */
