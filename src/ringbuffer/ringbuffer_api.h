/*
 * ringbuffer_api.h - the producer fast path (Desnoyers & Dagenais 2012 Algorithms 1-3),
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
RB_HIDDEN bool rb_subbuf_try_complete(struct rb *rb, uint32_t cpu,
				      uint32_t idx, uint64_t offset);
/* Count `remote_units` (if nonzero) as committed with an SMP add, then,
 * if write_count has left the sub-buffer of slot `f` (or the slot's
 * reservation switched sub-buffers: room 0), complete the passes it left
 * (rb_commit_rseq). */
RB_HIDDEN void rb_commit_slow(struct rb *rb, const struct rb_slot *f,
			      uint64_t remote_units);
/* Void `units` announced on `cpu` by a reservation that failed (commit
 * them, locally or remotely), as rb_lcas_announce does. */
RB_HIDDEN void rb_unannounce(struct rb *rb, uint32_t cpu, uint64_t units);

static inline struct rb_cpu_ctl *rb_cpu(const struct rb *rb, uint32_t cpu)
{
	return rb->cpus[cpu].ctl;
}

/* The announced and committed words this process's writers use in the
 * control area `ctl` (ringbuffer.h, accounts): its account's, or the
 * CPU's own (committed_remote goes with committed: rb_remote_word). */
static inline uint64_t *rb_ann_word(const struct rb *rb, char *ctl)
{
	if (rb->acct_off)
		return (uint64_t *)(ctl + rb->acct_off);
	return rb->rseq ? &((struct rb_cpu_ctl *)ctl)->announced
			: &((struct rb_cpu_ctl *)ctl)->announced_smp;
}

static inline uint64_t *rb_com_word(const struct rb *rb, char *ctl)
{
	return (uint64_t *)(ctl + (rb->acct_off ? rb->acct_off + 8 : RT__CTL_COMMIT));
}

#if RB_HAVE_RSEQ
/* All the words of this process's writers in the control area `ctl`
 * (rb_ann_word's set), for rb_rseq_place. */
static inline struct rb_words rb_words_of(const struct rb *rb, char *ctl)
{
	if (rb->acct_off) {
		uint64_t *a = (uint64_t *)(ctl + rb->acct_off);
		return (struct rb_words){ .ann = a, .com = a + 1, .comr = a + 2, .from = a + 3,
					  .to = a + 4 };
	}
	return (struct rb_words){ .ann = (uint64_t *)(ctl + RT__CTL_ANNOUNCE),
				  .com = (uint64_t *)(ctl + RT__CTL_COMMIT),
				  .comr = (uint64_t *)(ctl + RB_CTL_COMMIT_REMOTE),
				  .from = (uint64_t *)(ctl + RB_CTL_OUT_FROM), .to = NULL };
}
#endif

/* The committed_remote word that goes with this process's committed word
 * `com` of control area `c` (ringbuffer.h, accounts). */
static inline uint64_t *rb_remote_word(struct rb_cpu_ctl *c, uint64_t *com)
{
	return com == &c->committed ? &c->committed_remote
				    : &((struct rb_acct *)(com - 1))->committed_remote;
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

#if defined(__x86_64__)
#define RB_HAVE_SMP_PAIR 1
/* One lock cmpxchg16b of the 16-byte aligned pair at `m`: from {*lo, *hi}
 * to {nlo, nhi}. True if stored; false with {*lo, *hi} the pair found (a
 * 16-byte atomic read). Sequentially consistent (a locked instruction). */
static inline bool rb_cas_pair(uint64_t *m, uint64_t *lo, uint64_t *hi, uint64_t nlo,
			       uint64_t nhi)
{
	bool ok;
	__asm__ __volatile__("lock cmpxchg16b %[m]"
			     : "+a"(*lo), "+d"(*hi), [m] "+m"(*(uint64_t(*)[2])m), "=@ccz"(ok)
			     : "b"(nlo), "c"(nhi)
			     : "memory");
	return ok;
}
#else
#define RB_HAVE_SMP_PAIR 0
#endif

/* Atomic mode's work done on the words a reservation is about to
 * announce on: committed + committed_remote, read BEFORE the
 * announcement's add (seq-cst loads, ordered before that locked add).
 * Every unit counted here was announced before it was committed, so
 * before this load, so before the add: the add's result then includes
 * it, and (announced after the add) - (this) >= the work outstanding
 * at the add. Read after the add instead, a slot announced and
 * committed by another thread in between would be subtracted without
 * its announcement and could hide an older slot still outstanding. */
static inline __attribute__((always_inline)) uint64_t
rb_done_smp(struct rb *rb, struct rb_cpu_ctl *c)
{
	uint64_t *com = rb_com_word(rb, (char *)c);
	return __atomic_load_n(com, __ATOMIC_SEQ_CST) +
	       __atomic_load_n(rb_remote_word(c, com), __ATOMIC_SEQ_CST);
}

/* Atomic mode's out_from and out_to (ringbuffer.h) for a reservation of
 * [old, new) whose `units` are announced (this process's announced word
 * now `ann`, its own add included; `done` read before that add,
 * rb_done_smp), before its compare-and-swap: out_from = old when nothing
 * else is outstanding on the words (ann - done == units: the difference
 * can only be too large, never hide work), out_to = the maximum
 * (compare-and-swap) of itself and new. After the announcement, before
 * the compare-and-swap; the out_from store is relaxed: the reader reads
 * it only once the writers are gone (their stores all done), and a
 * locked instruction follows it anyway. */
static inline __attribute__((always_inline)) void
rb_bounds_smp(struct rb *rb, struct rb_cpu_ctl *c, uint64_t ann, uint64_t done, uint64_t old,
	      uint64_t new, uint64_t units)
{
	uint64_t out = ann - done;
	struct rb_acct *a = rb->acct_off ? (struct rb_acct *)((char *)c + rb->acct_off) : NULL;
	if (out == units)
		__atomic_store_n(a ? &a->out_from : &c->out_from, old, __ATOMIC_RELAXED);
	if (!a)
		return;
	uint64_t to = __atomic_load_n(&a->out_to, __ATOMIC_SEQ_CST);
	while ((int64_t)(new - to) > 0 &&
	       !__atomic_compare_exchange_n(&a->out_to, &to, new, false, __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST))
		;
}

/* sched_getcpu (the CPU the thread runs on, or -1). */
RB_HIDDEN int32_t rb_getcpu(void);

/* The CPU whose buffer an atomic-mode writer picks (a hint: any buffer
 * is correct there; enum rb_smp_cpu), or -1 when out of range. */
static inline int32_t rb_smp_cpu(const struct rb *rb)
{
	int32_t cpu;
	if (rb->smp_cpu == RB_CPU_RSEQ) {
		cpu = rb_rseq_cpu(rb->smp_cpu_off);
#if defined(__x86_64__)
	} else if (rb->smp_cpu == RB_CPU_RDPID) {
		uint64_t aux;
		__asm__ __volatile__("rdpid %0" : "=r"(aux));
		cpu = (int32_t)(aux & 0xfff);
#endif
	} else {
		cpu = rb_getcpu();
	}
	return (uint32_t)cpu < rb->nr_cpus ? cpu : -1;
}

/*
 * The reservation of atomic mode (no rseq: every counter is an SMP
 * atomic) in the common case, as rb_fast_reserve's: the slot fits the
 * open sub-buffer, whose physical sub-buffer the table names for this
 * pass with the writer flag (overwrite mode; discard mode: the logical
 * one), the buffer is not closed, and a compact timestamp does. Then the
 * announcement (an SMP add on this process's announced word) and ONE
 * lock cmpxchg16b of {write_count, stamp} from the pair read to {wc +
 * slot, tsc}, where tsc is the clock raised to stamp: the clock is read
 * without a fence (no lfence: 10-15 ns here), so it may run before the
 * load of write_count, but the swap only succeeds if the pair is the one
 * read, so stamp is the timestamp of the slot right before ours in the
 * buffer and ours is no older (ringbuffer.h, stamp). Returns true with
 * *f filled (reserved and announced: the caller writes the slot and
 * commits it, rb_smp_commit); false when any of that does not hold or
 * another writer moved the pair: nothing is reserved or outstanding.
 *
 * Why the table entry can be trusted: its flag with this pass's tag was
 * set by the writer that opened the pass and is cleared only once the
 * pass is complete, which needs write_count out of the sub-buffer and
 * our announcement committed; the swap succeeds only if write_count is
 * still where it was read, in that sub-buffer, after our announcement.
 * The closed word is read after the pair: a closing reader stores it and
 * then moves the pair (rb_close_smp), so a swap from a pair read before
 * that fails and one read after sees closed (the slow path refuses).
 */
static __attribute__((noinline, unused)) bool
rb_smp_reserve(struct rb *rb, uint64_t slot, uint64_t (*clock)(void), struct rb_slot *f)
{
#if RB_HAVE_SMP_PAIR
	const struct rt_fast_buf *b = &rb->fast;
	const uint64_t S = b->subbuf_size;
	int32_t cpu = rb_smp_cpu(rb);
	if (__builtin_expect(cpu < 0, 0))
		return false;
	struct rb_cpu_ctl *c = (struct rb_cpu_ctl *)(b->cpu_ctl + (size_t)cpu * b->cpu_ctl_stride);
	/* Acquire: the table entry and closed are read after the pair (see
	 * above); the pair itself may be torn, the swap checks it whole. */
	uint64_t wc = __atomic_load_n(&c->write_count, __ATOMIC_ACQUIRE);
	uint64_t stamp = __atomic_load_n(&c->stamp, __ATOMIC_ACQUIRE);
	uint64_t in_sb = wc & b->offset_mask;
	if (__builtin_expect(in_sb == 0 || in_sb + slot >= S, 0))
		return false;
	uint32_t idx = rb_subbuf_index(rb, wc);
	uint32_t phys = idx;
	if (rb->mode == RB_MODE_OVERWRITE) {
		/* Acquire: pairs with the CAS that set the flag (the index
		 * it protects). Shared memory: the index is bounded. */
		uint64_t e = __atomic_load_n(&c->sb[idx].table, __ATOMIC_ACQUIRE);
		uint64_t pass = (wc >> rb->geom.bfbits) & RB_TABLE_TAG_MASK;
		if (__builtin_expect(!(e & RB_TABLE_FLAG) || RB_TABLE_TAG(e) != pass ||
				     RB_TABLE_IDX(e) > rb->num_subbuf, 0))
			return false;
		phys = RB_TABLE_IDX(e);
	}
	if (__builtin_expect(__atomic_load_n(&c->closed, __ATOMIC_ACQUIRE) != 0, 0))
		return false;
	uint64_t tsc = clock();
	if ((int64_t)(tsc - stamp) < 0)
		tsc = stamp;
	if (__builtin_expect(tsc - stamp > b->tsc_max, 0))
		return false;
	/* The announcement, before the reservation; seq-cst: visible before
	 * the swap (the completion test reads write_count, then announced).
	 * Then the dead writers' bounds. */
	uint64_t done = rb_done_smp(rb, c);
	uint64_t ann = __atomic_add_fetch(rb_ann_word(rb, (char *)c), slot, __ATOMIC_SEQ_CST);
	rb_bounds_smp(rb, c, ann, done, wc, wc + slot, slot);
	if (__builtin_expect(!rb_cas_pair(&c->write_count, &wc, &stamp, wc + slot, tsc), 0)) {
		rb_unannounce(rb, (uint32_t)cpu, slot);
		return false;
	}
	f->addr = b->data + (size_t)cpu * rb->data_stride + ((size_t)phys << rb->geom.sbfbits) +
		  in_sb;
	f->ctl = (char *)c;
	f->com = rb_com_word(rb, (char *)c);
	f->offset = wc;
	f->room = (uint32_t)(S - in_sb);
	f->tsc = tsc;
	f->rseq_off = 0;
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

/* Algorithm 3 in atomic mode, for any slot: an SMP add of `units` to
 * this process's committed_remote word (seq-cst: the slot's data before
 * the count, which the completion test's acquire loads pair with, and
 * the count before the load of write_count), then the completion of the
 * passes write_count left, if it left the slot's sub-buffer (as
 * rb_commit_rseq). */
static inline __attribute__((always_inline)) void
rb_smp_commit(struct rb *rb, const struct rb_slot *f, uint64_t units)
{
	struct rb_cpu_ctl *c = (struct rb_cpu_ctl *)f->ctl;
	__atomic_fetch_add(rb_remote_word(c, f->com), units, __ATOMIC_SEQ_CST);
	uint64_t wc = __atomic_load_n(&c->write_count, __ATOMIC_RELAXED);
	if (__builtin_expect(rb_left_subbuf(wc, f->offset, f->room), 0))
		rb_commit_slow(rb, f, 0);
}

/*
 * Algorithm 2 (RESERVE_SLOT) for the common case, with nothing out of
 * line, in rseq mode when this process can use it: the slot (`slot`
 * bytes, compact event header) fits in the current sub-buffer, which is
 * already open, does not end exactly at its boundary (END_SWITCH_CURRENT),
 * the previous event on this CPU is recent enough for a compact timestamp,
 * and the CPU's hot word names the physical sub-buffer of this pass.
 * Returns true with *f filled (the slot is reserved and announced: the
 * caller writes it and calls rb_commit_rseq), false if any of that does
 * not hold or the rseq section aborted: nothing was reserved. Reads and
 * writes the CPU's first control line only. This is the path of events
 * the call site does not record itself (rt__fast_event does it in one
 * section): strings, sequences, contexts, several buffers.
 *
 * Why the hot word can be trusted when its tag matches: it is stored only
 * by a writer that holds (or saw held) the overwrite table's writer flag
 * for that sub-buffer, so it names the physical sub-buffer of that pass;
 * the flag is cleared only when the pass is complete, and the pass cannot
 * be complete while write_count is still inside it: the rseq section
 * commits only if write_count is still the value read. A stale word
 * carries an older start and sends us to the slow path; ringbuffer.h says
 * why its two words belong together when the tag matches.
 *
 * The clock is read after write_count and the section commits only if
 * write_count is still the value read, so no reservation on this CPU
 * falls between the clock read and ours: timestamps never go backwards in
 * buffer order.
 */
static inline __attribute__((always_inline)) bool
rb_fast_reserve(struct rb *rb, uint64_t slot, uint64_t (*clock)(void),
		struct rb_slot *f)
{
#if RB_HAVE_RSEQ
	const struct rt_fast_buf *b = &rb->fast;
	if (__builtin_expect(!rb->rseq_fast, 0))
		return rb->smp_fast && rb_smp_reserve(rb, slot, clock, f);
	const ptrdiff_t off = b->rseq_off;
	const uint64_t S = b->subbuf_size;
	int32_t cpu = rb_rseq_cpu(off);
	if (__builtin_expect((uint32_t)cpu >= b->nr_cpus, 0))
		return false;
	char *c = b->cpu_ctl + (size_t)cpu * b->cpu_ctl_stride;
	uint64_t *wcp = (uint64_t *)(c + RT__CTL_WRITE_COUNT);
	uint64_t *lastp = (uint64_t *)(c + RT__CTL_LAST_TSC);
	uint64_t wc = __atomic_load_n(wcp, __ATOMIC_RELAXED);
	uint64_t last = __atomic_load_n(lastp, __ATOMIC_RELAXED);
	/* The hot word (ringbuffer.h): its tag first, acquire so that its
	 * byte offset is read after it; both validated by the tag and by
	 * the section's check that write_count did not move. */
	uint64_t tag = __atomic_load_n((uint64_t *)(c + RT__CTL_HOT), __ATOMIC_ACQUIRE);
	uint64_t hoff = __atomic_load_n((uint64_t *)(c + RT__CTL_HOT_OFF), __ATOMIC_RELAXED);
	uint64_t in_sb = wc & b->offset_mask;
	/* A write_count at a boundary (in_sb == 0, the packet not open yet)
	 * never equals the tag, nor does a stale one; hoff is untrusted
	 * shared memory. */
	if (__builtin_expect(wc - in_sb != tag || in_sb + slot >= S || hoff > b->off_max, 0))
		return false;
	char *addr = b->data + hoff + in_sb;
	uint64_t tsc = clock();
	if (__builtin_expect(tsc - last > b->tsc_max, 0))
		return false;
	/* Algorithm 2 line 6: the LCAS of write_count, announcing the slot:
	 * one section storing both words, or, with an account (a buffer
	 * other programs write too), the announcement on it first, then the
	 * compare-and-store with the account's bounds (out_from, out_to),
	 * whose failure voids it (the slow path's two sections,
	 * rb_lcas_announce: program order on the CPU orders the
	 * announcement before the reservation). */
	if (__builtin_expect(rb->acct_off != 0, 0)) {
		struct rb_words w = rb_words_of(rb, c);
		if (rb_rseq_add(w.ann, slot, cpu, off) != 0)
			return false;
		if (rb_rseq_place(wcp, NULL, &w, wc, wc + slot, slot, cpu, off) != 0) {
			rb_unannounce(rb, (uint32_t)cpu, slot);
			return false;
		}
	} else if (__builtin_expect(rb_rseq_reserve(c, wc, wc + slot, slot, cpu, off) != 0, 0)) {
		return false;
	}
	/* Relaxed: a hint for the next reservation (stale only towards the
	 * past, which costs a full header, never a wrong one). */
	__atomic_store_n(lastp, tsc, __ATOMIC_RELAXED);
	f->addr = addr;
	f->ctl = c;
	f->com = rb_com_word(rb, c);
	f->offset = wc;
	f->room = (uint32_t)(S - in_sb);
	f->tsc = tsc;
	f->rseq_off = off;
	f->cpu = cpu;
	return true;
#else
	return rb->smp_fast && rb_smp_reserve(rb, slot, clock, f);
#endif
}

/*
 * Algorithm 3 (COMMIT_SLOT) for a slot of rb_fast_reserve or the slow
 * path: count its `units` as committed. On the CPU that owns the buffer
 * this is a local add in an rseq section; a committer that migrated since
 * the reservation adds to committed_remote instead (rb_commit_slow), so
 * neither word is ever written both ways.
 *
 * Then equation (3) for the committer, with a shortcut: a pass can only
 * be complete once write_count has left its sub-buffer. While it has not,
 * the writer that moves it out (a switch or a flush, all in the slow path)
 * announces, commits and checks completion after us: on one CPU (rseq)
 * program order and context switches order our add before its check.
 * Only a migrated committer's remote add can race with the owner CPU's
 * switch so that neither sees the pass complete; the reader and the next
 * writer to enter the sub-buffer complete it then.
 */
static inline __attribute__((always_inline)) void
rb_commit_rseq(struct rb *rb, const struct rb_slot *f, uint64_t units)
{
#if RB_HAVE_RSEQ
	/* The asm's "memory" clobber is the compiler barrier of Algorithm 3
	 * line 1: the slot's data is written before the add; it also keeps
	 * the write_count load below after the add. */
	if (__builtin_expect(rb_rseq_add(f->com, units, f->cpu, f->rseq_off) == 0, 1)) {
		/* Relaxed: only decides whether to check; the check does the
		 * acquire loads. */
		uint64_t wc = __atomic_load_n((uint64_t *)(f->ctl + RT__CTL_WRITE_COUNT),
					      __ATOMIC_RELAXED);
		if (__builtin_expect(!rb_left_subbuf(wc, f->offset, f->room), 1))
			return;
		rb_commit_slow(rb, f, 0);
		return;
	}
#endif
	rb_commit_slow(rb, f, units);
}

/* As rb_commit_rseq for any slot (from the slow path too, in any mode):
 * in SMP-atomic mode every commit is a remote add (rb_smp_commit). */
static inline __attribute__((always_inline)) void
rb_fast_commit(struct rb *rb, const struct rb_slot *f, uint64_t units)
{
	if (__builtin_expect(rb->rseq_fast, 1))
		rb_commit_rseq(rb, f, units);
	else
		rb_smp_commit(rb, f, units);
}

/*
 * The general reservation (Algorithms 1 and 2): rb_fast_reserve, or the
 * out-of-line path for everything else (switches, full timestamps,
 * SMP-atomic mode, retries). Returns 0 with ctx filled, or a negative
 * errno (event dropped and counted): -ENOBUFS buffer full (discard mode)
 * or not yet committed, -EMSGSIZE event larger than a sub-buffer;
 * -ESHUTDOWN the buffer was closed (rb_close_cpu) before this event's
 * reservation.
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
