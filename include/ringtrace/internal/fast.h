/*
 * fast.h - the ring buffer's producer fast path for fixed-size
 * events (Desnoyers & Dagenais 2012 Algorithm 2, RESERVE_SLOT, and Algorithm 3,
 * COMMIT_SLOT, in their common case, in one rseq critical section),
 * public so that a call site can inline it. Programs include
 * <ringtrace/ringtrace.h>, whose rt_event() uses it; the library's own
 * fast path (src/ringbuffer/ringbuffer_api.h) shares the layouts below.
 *
 * How a call site records without calling the library: when one buffer
 * without contexts records the event (embedded mode, or daemon mode with
 * one target), the event id fits the compact header and the buffer's
 * producers use rseq with the TSC as clock, the library publishes a
 * struct rt_fast_site in the call site's descriptor (ev->fast). The call
 * site then reserves, writes the 4-byte compact header and its payload,
 * and commits, all inline and in one store (rt__fast_event); anything
 * unusual (no site, a sub-buffer switch, a full timestamp, an aborted
 * rseq section) makes it call rt__record, which does all of it (nothing
 * was written).
 *
 * This is ABI between instrumented programs and the library, covered by
 * RT_ABI_VERSION: the site's layout, the per-CPU control words the fast
 * path touches (RT__CTL_*, checked against src/ringbuffer/ringbuffer.h by
 * static assertions) and the compact header's encoding.
 *
 * Concurrency contract: no lock, no system call, no allocation, no
 * floating point; safe in signal handlers (a handler that interrupts the
 * section aborts it: the interrupted event then goes through the library,
 * after the handler's). A published site and the memory it points to
 * are never freed nor changed, so a call site may use one it loaded after
 * the library replaced it (events written then are lost like any event
 * recorded after a session stops).
 */
#ifndef RINGTRACE_INTERNAL_FAST_H
#define RINGTRACE_INTERNAL_FAST_H

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
 * with the kernel (src/ringbuffer/rb_rseq.h finds it for the library,
 * which hands call sites its offset in struct rt_fast_buf). A critical
 * section is a few instructions between a start label and a commit
 * instruction; if the thread is preempted, migrated or interrupted by a
 * signal before the commit, the kernel moves it to the abort label
 * instead, so the section
 * is atomic with respect to everything else that runs on the same CPU:
 * the paper's LCAS (local compare-and-swap) and localAdd() without a lock
 * prefix. The kernel's struct rseq: u32 cpu_id_start at 0, s32 cpu_id at
 * 4 (negative if unregistered), u64 rseq_cs at 8 (the running section's
 * descriptor).
 *
 * Rule that keeps this correct (docs/ring-buffer.md): a word updated by
 * these per-CPU sections is never updated by an SMP atomic from another
 * CPU at the same time. src/ringbuffer/ringbuffer.c states how each
 * counter obeys it.
 */

#if RT__HAVE_RSEQ

/* Descriptor of a critical section, in a section of its own, 32-byte
 * aligned as the kernel requires: version, flags, start, length, abort. */
#define RT__RSEQ_CS_DESC(label, start, commit, abort)                         \
	".pushsection __rseq_cs, \"aw\"\n\t"                                    \
	".balign 32\n\t" label ":\n\t"                                          \
	".long 0, 0\n\t"                                                        \
	".quad " start "f, (" commit "f - " start "f), " abort "f\n\t"          \
	".popsection\n\t"

/* glibc's signature, checked by the kernel in the 4 bytes before every
 * abort handler (sysdeps/unix/sysv/linux/x86/bits/rseq.h). */
#define RT__RSEQ_SIG "0x53053053"

/* Abort handler: signature, then a jump to the C label. Kept out of line
 * so the fast path falls through. */
#define RT__RSEQ_ABORT(abort, target)                                          \
	".pushsection __rseq_failure, \"ax\"\n\t"                              \
	".byte 0x0f, 0xb9, 0x3d\n\t"                                            \
	".long " RT__RSEQ_SIG "\n\t" abort ":\n\t"                              \
	"jmp %l[" target "]\n\t"                                                \
	".popsection\n\t"

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
 * Per-CPU control words the fast paths use, as byte offsets into a CPU's
 * control area (struct rb_cpu_ctl in src/ringbuffer/ringbuffer.h, which
 * documents them): all in its first cache line.
 */
#define RT__CTL_WRITE_COUNT 0
#define RT__CTL_ANNOUNCE 8
#define RT__CTL_LAST_TSC 16
#define RT__CTL_HOT 24
#define RT__CTL_COMMIT 32
#define RT__CTL_HOT_OFF 40

/* The compact event header (CTF, 4 bytes): id in bits 0-4 (at most
 * RT__COMPACT_ID_MAX, 31 announces the extended header), the timestamp's
 * low 27 bits in bits 5-31. */
#define RT__COMPACT_ID_MAX 30u
#define RT__COMPACT_TSC_BITS 27u
#define RT__COMPACT_HEADER_SIZE 4u
#define RT__COMPACT_HEADER(id, tsc) ((uint32_t)(id) | (uint32_t)((tsc) << 5))

/*
 * A buffer set's geometry, what the fast paths read. Constant once the
 * buffer is mapped; lives in process-private memory, but everything it
 * points to is shared memory, whose contents are bounds-checked before
 * use. Byte by byte (x86-64; rt__fast_event's assembly uses the offsets):
 *    0  char *  cpu_ctl        CPU 0's control area
 *    8  u64     cpu_ctl_stride bytes between two CPUs' control areas
 *   16  char *  data           CPU 0's sub-buffers
 *   24  u64     off_max        largest byte offset of a sub-buffer from
 *                              data (nr_cpus x the CPUs' stride - S)
 *   32  u64     subbuf_size    S, a power of two
 *   40  u64     tsc_max        largest compact timestamp delta
 *   48  i64     rseq_off       __rseq_offset
 *   56  u32     nr_cpus
 *   60  u32     padding
 *   64  u64     offset_mask    S - 1
 */
struct rt_fast_buf {
	char *cpu_ctl;
	uint64_t cpu_ctl_stride;
	char *data;
	uint64_t off_max;
	uint64_t subbuf_size;
	uint64_t tsc_max;
	int64_t rseq_off;
	uint32_t nr_cpus;
	uint32_t pad;
	uint64_t offset_mask;
};

/* What a call site needs for one event: its buffer and its id there
 * (at most RT__COMPACT_ID_MAX). Published by the library in ev->fast. */
struct rt_fast_site {
	struct rt_fast_buf buf;
	uint32_t id;
	uint32_t pad;
};

/* Largest payload a call site records by itself (rt__fast_event). */
#define RT__FAST_PAYLOAD_MAX 256u

/*
 * Record one event whose compact header and payload fit the current
 * sub-buffer of the CPU we run on, in ONE rseq critical section: Desnoyers & Dagenais 2012
 * Algorithm 2 (RESERVE_SLOT) in its common case, the slot's writes, and
 * Algorithm 3 (COMMIT_SLOT) at once. The section reads the TSC, the CPU's
 * write_count, last_tsc and hot word, checks that the slot fits, writes
 * the header and the payload, and ends with the store of write_count +
 * slot: the reservation and the commit in one instruction. If the thread
 * is preempted, migrated or signalled before that store, the kernel moves
 * it to the abort label: nothing was reserved, and the bytes it wrote lie
 * past write_count, where the next slot overwrites them. So the slot
 * needs no commit count (ringbuffer.c: "announced" bytes are the only
 * ones a pass waits for), and no other reservation on this CPU falls
 * between the clock read and ours: timestamps never go backwards in
 * buffer order.
 *
 * `payload` is read as size / 4 rounded up 4-byte words (the caller pads
 * it); the section writes as many words after the header, so up to 3
 * bytes past the slot (unreserved bytes of the same sub-buffer: the fit
 * check counts them). Returns nonzero when recorded; 0 when the slot
 * does not fit, the previous event is too old for a compact timestamp,
 * the hot word does not name this sub-buffer, the CPU is out of range or
 * the section aborted: nothing was reserved, the caller takes the
 * library's path (rt__record).
 *
 * The hot word's byte offset (shared memory, which another process may
 * have scribbled on) and the CPU number are bounds-checked, so the
 * writes stay inside the mapping whatever is stored there.
 */
#if RT__HAVE_RSEQ && ((defined(__GNUC__) && __GNUC__ >= 11) || defined(__clang__))
#define RT__HAVE_FAST_EVENT 1

/* Copy of payload word k (4 bytes) into the slot, after the header. */
#define RT__FAST_CP(k)                                                         \
	"movl " #k "*4(%[src]), %k[t]\n\t"                                     \
	"movl %k[t], 4+" #k "*4(%[s])\n\t"
/* More than 8 words: a loop, last word first (%[n] = words). */
#define RT__FAST_CP_LOOP                                                       \
	"6:\n\t"                                                               \
	"movl -4(%[src],%[n],4), %k[t]\n\t"                                    \
	"movl %k[t], (%[s],%[n],4)\n\t"                                        \
	"decq %[n]\n\t"                                                        \
	"jnz 6b\n\t"

/* The section, with `copy` the payload's copy (one of the above).
 * Registers: %[c] the CPU, then its control area; rdx:rax the TSC, then
 * rdx the TSC; %[wc] write_count; %[t] the offset in the sub-buffer;
 * %[s] the slot's address; rcx and rdi scratch. The clock is read once
 * write_count is loaded: its latency then overlaps the checks (measured:
 * reading it first, or last, costs 0.8 ns more at the median). */
#define RT__FAST_EVENT_ASM(copy)                                               \
	__asm__ goto(RT__RSEQ_CS_DESC("3", "1", "2", "4")                         \
		     /* Enter: rseq_cs = our descriptor (rcx = rseq_off). */   \
		     "leaq 3b(%%rip), %%rax\n\t"                               \
		     "movq 48(%[b]), %%rcx\n\t"                                \
		     "movq %%rax, %%fs:8(%%rcx)\n"                             \
		     "1:\n\t"                                                  \
		     /* The CPU, read inside the section so that it stays    \
		      * ours until the commit. Unsigned: -1 fails too. */      \
		     "movl %%fs:4(%%rcx), %k[c]\n\t"                           \
		     "cmpl 56(%[b]), %k[c]\n\t"                                \
		     "jae %l[fail]\n\t"                                        \
		     "imulq 8(%[b]), %[c]\n\t"                                 \
		     "addq (%[b]), %[c]\n\t"                                   \
		     "movq (%[c]), %[wc]\n\t"                                  \
		     /* The TSC; compact timestamp: tsc - last_tsc <=         \
		      * tsc_max. */                                            \
		     "rdtsc\n\t"                                               \
		     "shlq $32, %%rdx\n\t"                                     \
		     "orq %%rax, %%rdx\n\t"                                    \
		     "movq %%rdx, %[t]\n\t"                                    \
		     "subq 16(%[c]), %[t]\n\t"                                 \
		     "cmpq 40(%[b]), %[t]\n\t"                                 \
		     "ja %l[fail]\n\t"                                         \
		     /* The slot and the bytes copied after it stay before   \
		      * the sub-buffer's end: in_sb + 4 + 4 * words < S.      \
		      * This also keeps the slot from ending exactly at the   \
		      * boundary (END_SWITCH_CURRENT, the library's path). */ \
		     "movq 64(%[b]), %[t]\n\t"                                 \
		     "andq %[wc], %[t]\n\t"                                    \
		     "leaq 4(%[t],%[n],4), %%rcx\n\t"                          \
		     "cmpq 32(%[b]), %%rcx\n\t"                                \
		     "jae %l[fail]\n\t"                                        \
		     /* The hot word: its tag is this sub-buffer's start    \
		      * (write_count - in_sb), which also refuses a           \
		      * write_count at a boundary (a packet not open yet);    \
		      * then its byte offset from data, <= off_max. */        \
		     "movq %[wc], %%rdi\n\t"                                   \
		     "subq %[t], %%rdi\n\t"                                    \
		     "cmpq 24(%[c]), %%rdi\n\t"                                \
		     "jne %l[fail]\n\t"                                        \
		     "movq 40(%[c]), %[s]\n\t"                                 \
		     "cmpq 24(%[b]), %[s]\n\t"                                 \
		     "ja %l[fail]\n\t"                                         \
		     "addq 16(%[b]), %[s]\n\t"                                 \
		     "addq %[t], %[s]\n\t"                                     \
		     /* The compact header, then the payload. */               \
		     "movl %%edx, %k[t]\n\t"                                   \
		     "shll $5, %k[t]\n\t"                                      \
		     "orl %[id], %k[t]\n\t"                                    \
		     "movl %k[t], (%[s])\n\t"                                  \
		     copy                                                      \
		     /* Commit: Algorithms 2 and 3 in one store. */            \
		     "addq %[slot], %[wc]\n\t"                                 \
		     "movq %[wc], (%[c])\n"                                    \
		     "2:\n\t"                                                  \
		     RT__RSEQ_ABORT("4", "aborted")                            \
		     : "=&a"(lo), "=&d"(tsc), [c] "=&r"(ctl), [wc] "=&r"(wc),  \
		       [t] "=&r"(t), [s] "=&r"(s), [n] "+r"(n)                 \
		     : [b] "r"(b), [id] "rm"(id), [src] "r"(payload),          \
		       [slot] "rm"(slot)                                       \
		     : "cc", "memory", "rcx", "rdi"                            \
		     : fail, aborted)

static inline __attribute__((always_inline)) int
rt__fast_event(const struct rt_fast_buf *b, uint32_t id, const void *payload,
	       uint32_t size)
{
	uint64_t lo, ctl, tsc, wc, t, s;
	uint64_t n = ((uint64_t)size + 3) / 4;
	const uint64_t slot = RT__COMPACT_HEADER_SIZE + (uint64_t)size;
	/* The copy unrolled for up to 8 words: call sites pass a constant
	 * size, so only one of these remains. */
	switch (n) {
	case 0:
		RT__FAST_EVENT_ASM("");
		break;
	case 1:
		RT__FAST_EVENT_ASM(RT__FAST_CP(0));
		break;
	case 2:
		RT__FAST_EVENT_ASM(RT__FAST_CP(0) RT__FAST_CP(1));
		break;
	case 3:
		RT__FAST_EVENT_ASM(RT__FAST_CP(0) RT__FAST_CP(1) RT__FAST_CP(2));
		break;
	case 4:
		RT__FAST_EVENT_ASM(RT__FAST_CP(0) RT__FAST_CP(1) RT__FAST_CP(2)
				   RT__FAST_CP(3));
		break;
	case 5:
		RT__FAST_EVENT_ASM(RT__FAST_CP(0) RT__FAST_CP(1) RT__FAST_CP(2)
				   RT__FAST_CP(3) RT__FAST_CP(4));
		break;
	case 6:
		RT__FAST_EVENT_ASM(RT__FAST_CP(0) RT__FAST_CP(1) RT__FAST_CP(2)
				   RT__FAST_CP(3) RT__FAST_CP(4) RT__FAST_CP(5));
		break;
	case 7:
		RT__FAST_EVENT_ASM(RT__FAST_CP(0) RT__FAST_CP(1) RT__FAST_CP(2)
				   RT__FAST_CP(3) RT__FAST_CP(4) RT__FAST_CP(5)
				   RT__FAST_CP(6));
		break;
	case 8:
		RT__FAST_EVENT_ASM(RT__FAST_CP(0) RT__FAST_CP(1) RT__FAST_CP(2)
				   RT__FAST_CP(3) RT__FAST_CP(4) RT__FAST_CP(5)
				   RT__FAST_CP(6) RT__FAST_CP(7));
		break;
	default:
		RT__FAST_EVENT_ASM(RT__FAST_CP_LOOP);
		break;
	}
	/* Relaxed: a hint for the next reservation, stored after the
	 * commit (stale only towards the past, which costs a full header,
	 * never a wrong one). */
	__atomic_store_n((uint64_t *)((char *)ctl + RT__CTL_LAST_TSC), tsc,
			 __ATOMIC_RELAXED);
	(void)lo;
	return 1;
fail:
aborted:
	return 0;
}
#else
#define RT__HAVE_FAST_EVENT 0
#endif

#ifdef __cplusplus
}
#endif

#endif /* RINGTRACE_INTERNAL_FAST_H */
