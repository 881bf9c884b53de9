/*
 * ringtrace_fast.h - the ring buffer's producer fast path (Desnoyers & Dagenais 2012
 * Algorithm 2, RESERVE_SLOT, and Algorithm 3, COMMIT_SLOT, in their
 * common case), public so that a call site can inline it. Programs include
 * <ringtrace/ringtrace.h>, whose rt_event() uses it; the library's own
 * probe uses the same functions (src/ringbuffer/ringbuffer_api.h).
 *
 * How a call site records without calling the library: when one buffer
 * without contexts records the event (embedded mode, or daemon mode with
 * one target), the event id fits the compact header and the buffer's
 * producers use rseq with the TSC as clock, the library publishes a
 * struct rt_fast_site in the call site's descriptor (ev->fast). The call
 * site then reserves, writes the 4-byte compact header and its payload,
 * and commits, all inline; anything unusual (no site, a sub-buffer
 * switch, a full timestamp, an aborted rseq section) makes it call
 * rt__record, which does all of it (nothing was written).
 *
 * This is ABI between instrumented programs and the library, covered by
 * RT_ABI_VERSION: the site's layout, the per-CPU control words the fast
 * path touches (RT__CTL_*, checked against src/ringbuffer/ringbuffer.h by
 * static assertions) and the compact header's encoding.
 *
 * Concurrency contract: no lock, no system call, no allocation, no
 * floating point; safe in signal handlers (a handler that traces between
 * a reservation and its commit takes the next slot). A published site and
 * the memory it points to are never freed nor changed, so a call site may
 * use one it loaded after the library replaced it (events written then
 * are lost like any event recorded after a session stops).
 */
#ifndef RINGTRACE_FAST_H
#define RINGTRACE_FAST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#define RT__HAVE_RSEQ 1
#else
#define RT__HAVE_RSEQ 0
#endif

/* --- restartable sequences ------------------------------------------ */

/*
 * Per-CPU "local atomic operations" of Desnoyers & Dagenais 2012 (section 4.1) in user
 * space. glibc (2.35 and later) registers one `struct rseq` per thread
 * with the kernel; `__rseq_offset` gives its place relative to the thread
 * pointer and `__rseq_size` is 0 when registration failed or was disabled
 * (GLIBC_TUNABLES=glibc.pthread.rseq=0). A critical section below is a
 * few instructions between a start label and a commit instruction; if
 * the thread is preempted, migrated or interrupted by a signal before the
 * commit, the kernel moves it to the abort label instead, so the section
 * is atomic with respect to everything else that runs on the same CPU:
 * the paper's LCAS (local compare-and-swap) and localAdd() without a lock
 * prefix. The kernel's struct rseq: u32 cpu_id_start at 0, s32 cpu_id at
 * 4 (negative if unregistered), u64 rseq_cs at 8 (the running section's
 * descriptor).
 *
 * Rule that keeps this correct (DESIGN.md section 4): a word updated by
 * these per-CPU sections is never updated by an SMP atomic from another
 * CPU at the same time. src/ringbuffer/ringbuffer.c states how each
 * counter obeys it.
 */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

/* glibc's signature, checked by the kernel in the 4 bytes before every
 * abort handler (sysdeps/unix/sysv/linux/x86/bits/rseq.h). */
#define RT__RSEQ_SIG 0x53053053

/* The CPU the thread runs on now (a hint: it may change at any time);
 * `off` is __rseq_offset. */
static inline int32_t rt__rseq_cpu(ptrdiff_t off)
{
#if RT__HAVE_RSEQ
	int32_t cpu;
	/* Volatile: a fresh read each time (the kernel updates it). */
	__asm__ __volatile__("movl %%fs:4(%1), %0" : "=r"(cpu) : "r"(off));
	return cpu;
#else
	(void)off;
	return -1;
#endif
}

#if RT__HAVE_RSEQ

/* Descriptor of a critical section, in a section of its own, 32-byte
 * aligned as the kernel requires: version, flags, start, length, abort. */
#define RT__RSEQ_CS_DESC(label, start, commit, abort)                         \
	".pushsection __rseq_cs, \"aw\"\n\t"                                    \
	".balign 32\n\t" label ":\n\t"                                          \
	".long 0, 0\n\t"                                                        \
	".quad " start "f, (" commit "f - " start "f), " abort "f\n\t"          \
	".popsection\n\t"

/* Abort handler: signature, then a jump to the C label. Kept out of line
 * so the fast path falls through. */
#define RT__RSEQ_ABORT(abort, target)                                          \
	".pushsection __rseq_failure, \"ax\"\n\t"                              \
	".byte 0x0f, 0xb9, 0x3d\n\t"                                            \
	".long 0x53053053\n\t" abort ":\n\t"                                    \
	"jmp %l[" target "]\n\t"                                                \
	".popsection\n\t"

/* Entering a section: publish its descriptor `desc` in the thread's rseq
 * area (rseq_cs), then, from the section's `start`, leave for `abort` if
 * the thread is not on the expected CPU. Operands: %[off] (__rseq_offset),
 * %[cpu]; clobbers rax. */
#define RT__RSEQ_ENTER(desc, start, abort)                                     \
	"leaq " desc "b(%%rip), %%rax\n\t"                                     \
	"movq %%rax, %%fs:8(%[off])\n\t" start ":\n\t"                         \
	"cmpl %[cpu], %%fs:4(%[off])\n\t"                                      \
	"jnz " abort "f\n\t"

/*
 * Local CAS: if the thread runs on `cpu` and *v == expect, store newv.
 * Returns 0 on success, 1 if *v != expect, -1 if the thread is not on
 * `cpu` or the section was aborted. Desnoyers & Dagenais 2012 Algorithm 2 line 6 ("LCAS of
 * write_count"). The store is a plain mov: on x86 it is a release store
 * (TSO), which orders it after the caller's earlier writes. No "memory"
 * clobber: nothing the caller wrote must be ordered before it (the slot is
 * written after), so the compiler may keep the buffer's geometry in
 * registers across it.
 */
static inline int rt__rseq_cmpeq_store(uint64_t *v, uint64_t expect,
				       uint64_t newv, int32_t cpu, ptrdiff_t off)
{
	__asm__ goto(RT__RSEQ_CS_DESC("3", "1", "2", "4")
		     RT__RSEQ_ENTER("3", "1", "4")
		     "cmpq %[v], %[expect]\n\t"
		     "jnz %l[differ]\n\t"
		     "movq %[newv], %[v]\n\t"
		     "2:\n\t"
		     RT__RSEQ_ABORT("4", "aborted")
		     : [v] "+m"(*v)
		     : [off] "r"(off), [cpu] "r"(cpu), [expect] "r"(expect),
		       [newv] "r"(newv)
		     : "cc", "rax"
		     : differ, aborted);
	return 0;
differ:
	return 1;
aborted:
	return -1;
}

/*
 * Local add: if the thread runs on `cpu`, *v += inc as one instruction
 * inside a critical section. Returns 0, or -1 if the thread is not on
 * `cpu` (then nothing was added). Desnoyers & Dagenais 2012 Algorithm 3 line 2 (localAdd
 * of commit_count). The "memory" clobber is a compiler barrier in front:
 * the slot's data writes come before the add (x86 keeps stores in order,
 * section 4.4).
 */
static inline int rt__rseq_add(uint64_t *v, uint64_t inc, int32_t cpu,
			       ptrdiff_t off)
{
	__asm__ goto(RT__RSEQ_CS_DESC("3", "1", "2", "4")
		     RT__RSEQ_ENTER("3", "1", "4")
		     "addq %[inc], %[v]\n\t"
		     "2:\n\t"
		     RT__RSEQ_ABORT("4", "aborted")
		     :
		     : [off] "r"(off), [cpu] "r"(cpu), [v] "m"(*v),
		       [inc] "r"(inc)
		     : "memory", "cc", "rax"
		     : aborted);
	return 0;
aborted:
	return -1;
}

#endif /* RT__HAVE_RSEQ */

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define RT__HAVE_TSC 1
/* The TSC: the trace clock of a buffer that has a fast site, and the
 * library's (src/lib/clock.h). */
static inline uint64_t rt__rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}
#else
#define RT__HAVE_TSC 0
#endif

/* --- the buffer as the fast path sees it ---------------------------- */

/*
 * Per-CPU control words the fast path uses, as byte offsets into a CPU's
 * control area (struct rb_cpu_ctl in src/ringbuffer/ringbuffer.h, which
 * documents them): write_count and last_tsc, the hot word, then one
 * struct of RT__SB_SIZE bytes per sub-buffer whose first word is the
 * local commit count.
 */
#define RT__CTL_WRITE_COUNT 0
#define RT__CTL_LAST_TSC 8
#define RT__CTL_HOT 16
#define RT__CTL_SB 192
#define RT__SB_SIZE 32

/* The compact event header (CTF, 4 bytes): id in bits 0-4 (at most
 * RT__COMPACT_ID_MAX, 31 announces the extended header), the timestamp's
 * low 27 bits in bits 5-31. */
#define RT__COMPACT_ID_MAX 30u
#define RT__COMPACT_TSC_BITS 27u
#define RT__COMPACT_HEADER_SIZE 4u
#define RT__COMPACT_HEADER(id, tsc) ((uint32_t)(id) | (uint32_t)((tsc) << 5))

/*
 * A buffer set's geometry, what the fast path reads. Constant once the
 * buffer is mapped; lives in process-private memory, but everything it
 * points to is shared memory, whose contents are bounds-checked before
 * use. Byte by byte (x86-64):
 *    0  char *  cpu_ctl        CPU 0's control area
 *    8  u64     cpu_ctl_stride bytes between two CPUs' control areas
 *   16  char *  data           CPU 0's sub-buffers
 *   24  u64     data_stride    bytes between two CPUs' sub-buffers
 *   32  u64     subbuf_size    S, a power of two
 *   40  u64     tsc_max        largest compact timestamp delta
 *   48  i64     rseq_off       __rseq_offset
 *   56  u32     nr_cpus
 *   60  u32     phys_max       highest physical sub-buffer index
 *   64  u32     subbuf_mask    number of sub-buffers - 1
 *   68  u8      sbfbits        log2 S
 *   69  u8[3]   padding
 *   72  void *  owner          the library's buffer (rt__fast_commit_slow)
 */
struct rt_fast_buf {
	char *cpu_ctl;
	uint64_t cpu_ctl_stride;
	char *data;
	uint64_t data_stride;
	uint64_t subbuf_size;
	uint64_t tsc_max;
	int64_t rseq_off;
	uint32_t nr_cpus;
	uint32_t phys_max;
	uint32_t subbuf_mask;
	uint8_t sbfbits;
	uint8_t pad[3];
	void *owner;
};

/* What a call site needs for one event: its buffer and its id there
 * (at most RT__COMPACT_ID_MAX). Published by the library in ev->fast. */
struct rt_fast_site {
	struct rt_fast_buf buf;
	uint32_t id;
	uint32_t pad;
};

/* A reserved slot, as rt__fast_reserve returns it. */
struct rt_fast_slot {
	char *addr;		/* where the slot starts */
	uint64_t *ctl;		/* the CPU's control area (its write_count) */
	uint64_t *commit;	/* the slot's sub-buffer's local commit count */
	uint64_t offset;	/* write_count at the slot's start */
	uint64_t tsc;		/* the event's timestamp */
	int64_t rseq_off;	/* b->rseq_off (kept: the slot's writes
				 * may alias the geometry for the compiler) */
	uint32_t room;		/* bytes from offset to its sub-buffer's end */
	int32_t cpu;		/* the buffer the slot is in */
};

/* Commit's out-of-line part (src/ringbuffer/ringbuffer.c, rb_commit_slow):
 * add `remote` bytes (if nonzero) to the commit count of the slot at
 * `offset` in `cpu`'s buffer with an SMP add, then check whether its pass
 * is complete. */
typedef void (*rt__commit_slow_fn)(const struct rt_fast_buf *b, int32_t cpu,
				   uint64_t offset, uint64_t remote);

/* The library's, for call sites. */
__attribute__((visibility("default"))) void
rt__fast_commit_slow(const struct rt_fast_buf *b, int32_t cpu, uint64_t offset,
		     uint64_t remote);

/*
 * Algorithm 2 (RESERVE_SLOT) for the common case, with nothing out of
 * line: the slot (`slot` bytes, compact event header) fits in the current
 * sub-buffer, which is already open, does not end exactly at its boundary
 * (END_SWITCH_CURRENT), the previous event on this CPU is recent enough
 * for a compact timestamp, and the CPU's hot word names the physical
 * sub-buffer of this pass. Returns nonzero with *f filled (the slot is
 * reserved: the caller writes it and calls rt__fast_commit), 0 if any of
 * that does not hold or the rseq section aborted: nothing was reserved.
 * Reads the CPU's first control line only.
 *
 * Why the hot word can be trusted when its tag matches: it is stored only
 * by a writer that holds (or saw held) the overwrite table's writer flag
 * for that sub-buffer number, so it names the physical sub-buffer of that
 * pass; the flag is cleared only when the pass is complete, and the pass
 * cannot be complete while write_count is still inside it (in_sb != 0 and
 * the slot does not reach the end): the rseq section below commits only
 * if write_count is still the value read, so at that instant the pass is
 * open and the reader cannot have exchanged the sub-buffer. A stale word
 * (a writer preempted between its reservation and its store) carries an
 * older sub-buffer number and sends us to the slow path, which stores the
 * right one.
 *
 * The clock is read after write_count and the rseq section commits only
 * if write_count is still the value read, so no reservation on this CPU
 * falls between the clock read and ours: timestamps never go backwards in
 * buffer order. The slot's size does not depend on the clock (a full
 * timestamp takes the slow path), so the reservation does not wait for it.
 */
static inline __attribute__((always_inline)) int
rt__fast_reserve(const struct rt_fast_buf *b, uint64_t slot, uint64_t (*clock)(void),
		 struct rt_fast_slot *f)
{
#if RT__HAVE_RSEQ
	const ptrdiff_t off = b->rseq_off;
	const uint64_t S = b->subbuf_size;
	int32_t cpu = rt__rseq_cpu(off);
	if (__builtin_expect((uint32_t)cpu >= b->nr_cpus, 0))
		return 0;
	/* Multiplies, not shifts by a variable: x86's variable shifts want
	 * %cl, which the sub-buffer shifts below already hold. */
	char *c = b->cpu_ctl + (size_t)cpu * b->cpu_ctl_stride;
	uint64_t *wcp = (uint64_t *)(c + RT__CTL_WRITE_COUNT);
	uint64_t *lastp = (uint64_t *)(c + RT__CTL_LAST_TSC);
	uint64_t wc = __atomic_load_n(wcp, __ATOMIC_RELAXED);
	uint64_t last = __atomic_load_n(lastp, __ATOMIC_RELAXED);
	/* Relaxed: validated by its tag below (see above). */
	uint64_t hot = __atomic_load_n((uint64_t *)(c + RT__CTL_HOT), __ATOMIC_RELAXED);
	uint64_t in_sb = wc & (S - 1);
	uint64_t sbnum = wc >> b->sbfbits;
	/* One compare for both halves of the hot word: the tag (high 32
	 * bits) equals this sub-buffer number mod 2^32 and the index (low 32
	 * bits, untrusted shared memory) is a physical sub-buffer. */
	uint64_t phys = hot ^ (sbnum << 32);
	if (__builtin_expect(in_sb == 0 || in_sb + slot >= S || phys > b->phys_max, 0))
		return 0;
	/* Everything the commit needs is computed before the rseq section,
	 * so few values stay live across it. */
	char *addr = b->data + (size_t)cpu * b->data_stride + (phys << b->sbfbits) + in_sb;
	uint64_t *commit = (uint64_t *)(c + RT__CTL_SB +
					((uint32_t)sbnum & b->subbuf_mask) * RT__SB_SIZE);
	uint64_t tsc = clock();
	if (__builtin_expect(tsc - last > b->tsc_max, 0))
		return 0;
	/* Algorithm 2 line 6: the LCAS of write_count. */
	if (__builtin_expect(rt__rseq_cmpeq_store(wcp, wc, wc + slot, cpu, off) != 0, 0))
		return 0;
	/* Relaxed: a hint for the next reservation (stale only towards the
	 * past, which costs a full header, never a wrong one). */
	__atomic_store_n(lastp, tsc, __ATOMIC_RELAXED);
	f->addr = addr;
	f->ctl = wcp;
	f->commit = commit;
	f->offset = wc;
	f->room = (uint32_t)(S - in_sb);
	f->tsc = tsc;
	f->rseq_off = off;
	f->cpu = cpu;
	return 1;
#else
	(void)b;
	(void)slot;
	(void)clock;
	(void)f;
	return 0;
#endif
}

/*
 * Algorithm 3 (COMMIT_SLOT) for a slot of rt__fast_reserve: add the
 * slot's size to its sub-buffer's commit count. On the CPU that owns the
 * buffer this is a local add in an rseq section; a committer that
 * migrated since the reservation adds to the remote count instead
 * (`slow`), so neither word is ever written both ways.
 *
 * Then equation (3) for the committer, with a shortcut: a pass can only
 * be complete once every byte of its sub-buffer is reserved, that is once
 * write_count has left the sub-buffer. While it has not, the writer that
 * moves it out (a switch or a flush, all in the slow path) commits after
 * us and checks completion itself: on one CPU (rseq) program order and
 * context switches order our add before its check. Only a migrated
 * committer's remote add can race with the owner CPU's switch so that
 * neither sees the pass complete; the reader and the next writer to enter
 * the sub-buffer (equation (3) in the slow path) complete it then.
 */
static inline __attribute__((always_inline)) void
rt__fast_commit(const struct rt_fast_buf *b, const struct rt_fast_slot *f,
		uint64_t slot, rt__commit_slow_fn slow)
{
#if RT__HAVE_RSEQ
	/* The asm's "memory" clobber is the compiler barrier of Algorithm 3
	 * line 1: the slot's data is written before the add; it also keeps
	 * the write_count load below after the add. */
	if (__builtin_expect(rt__rseq_add(f->commit, slot, f->cpu, f->rseq_off) == 0, 1)) {
		/* Relaxed: only decides whether to check; the check does the
		 * acquire loads that pair with the other committers. Whether
		 * write_count left the slot's sub-buffer: a difference of
		 * free-running counters, wrap-safe. */
		uint64_t wc = __atomic_load_n(f->ctl, __ATOMIC_RELAXED);
		if (__builtin_expect(wc - f->offset < f->room, 1))
			return;
		slow(b, f->cpu, f->offset, 0);
		return;
	}
#endif
	slow(b, f->cpu, f->offset, slot);
}

#ifdef __cplusplus
}
#endif

#endif /* RINGTRACE_FAST_H */
