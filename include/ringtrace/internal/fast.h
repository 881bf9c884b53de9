/*
 * fast.h - INTERNAL, not API: the ring buffer's producer fast path for
 * fixed-size events (Desnoyers & Dagenais 2012 Algorithm 2,
 * RESERVE_SLOT, and Algorithm 3, COMMIT_SLOT, in their common case, in
 * one rseq critical section), installed so that a call site can inline
 * it. Programs include <ringtrace/ringtrace.h>, whose rt_event() uses
 * it; the library's own fast path (src/ringbuffer/ringbuffer_api.h)
 * shares its layouts (internal/fast_layout.h).
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
 * path touches and the compact header's encoding (internal/fast_layout.h,
 * whose named offsets the assembly below uses).
 *
 * Concurrency contract: no lock, no system call, no allocation, no
 * floating point; safe in signal handlers (a handler that interrupts the
 * section aborts it: the interrupted event then goes through the library,
 * after the handler's). A published site is never freed, so a call site
 * may use one it loaded after the library replaced it (events written
 * then are lost like any event recorded after a session stops). Before
 * the library unmaps the buffers of a site it no longer publishes, it
 * sets the site's nr_cpus to 0 (the section then fails at its first
 * check, before it touches the buffers), restarts every section in
 * progress (membarrier) and keeps the control area mapped as private
 * memory (the store of last_tsc after the section).
 */
#ifndef RINGTRACE_INTERNAL_FAST_H
#define RINGTRACE_INTERNAL_FAST_H

#include <stddef.h>
#include <stdint.h>

#include <ringtrace/internal/fast_layout.h>

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
 * prefix. The kernel's struct rseq: internal/fast_layout.h
 * (RT__RSEQ_CPU_ID, RT__RSEQ_CS).
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
	"movl %k[t], %c[hs]+" #k "*4(%[s])\n\t"
/* More than 8 words: a loop, last word first (%[n] = words). */
#define RT__FAST_CP_LOOP                                                       \
	"6:\n\t"                                                               \
	"movl -4(%[src],%[n],4), %k[t]\n\t"                                    \
	"movl %k[t], %c[hs]-4(%[s],%[n],4)\n\t"                              \
	"decq %[n]\n\t"                                                        \
	"jnz 6b\n\t"

/* The section's pieces (the library's own one-section events use them
 * too, with their own copies: src/lib/ctx_section.h, parts_section.h).
 * Registers: %[c] the CPU, then its control area; rdx:rax the TSC, then
 * rdx the TSC; %[wc] write_count; %[t] the offset in the sub-buffer;
 * %[s] the slot's address; rcx and rdi scratch. The clock is read once
 * write_count is loaded: its latency then overlaps the checks (measured:
 * reading it first, or last, costs 0.8 ns more at the median). */
#define RT__FAST_ENTER                                                         \
	RT__RSEQ_CS_DESC("3", "1", "2", "4")                                   \
	/* Enter: rseq_cs = our descriptor (rcx = rseq_off). */                \
	"leaq 3b(%%rip), %%rax\n\t"                                            \
	"movq " RT__S(RT__FB_RSEQ_OFF) "(%[b]), %%rcx\n\t"                     \
	"movq %%rax, %%fs:" RT__S(RT__RSEQ_CS) "(%%rcx)\n"                     \
	"1:\n\t"                                                               \
	/* The CPU, read inside the section so that it stays ours until the   \
	 * commit. Unsigned: -1 fails too. */                                  \
	"movl %%fs:" RT__S(RT__RSEQ_CPU_ID) "(%%rcx), %k[c]\n\t"               \
	"cmpl " RT__S(RT__FB_NR_CPUS) "(%[b]), %k[c]\n\t"                      \
	"jae %l[fail]\n\t"                                                     \
	"imulq " RT__S(RT__FB_CPU_CTL_STRIDE) "(%[b]), %[c]\n\t"               \
	"addq " RT__S(RT__FB_CPU_CTL) "(%[b]), %[c]\n\t"                       \
	"movq " RT__S(RT__CTL_WRITE_COUNT) "(%[c]), %[wc]\n\t"                 \
	/* The TSC; compact timestamp: tsc - last_tsc <= tsc_max. */           \
	"rdtsc\n\t"                                                            \
	"shlq $32, %%rdx\n\t"                                                  \
	"orq %%rax, %%rdx\n\t"                                                 \
	"movq %%rdx, %[t]\n\t"                                                 \
	"subq " RT__S(RT__CTL_LAST_TSC) "(%[c]), %[t]\n\t"                     \
	"cmpq " RT__S(RT__FB_TSC_MAX) "(%[b]), %[t]\n\t"                       \
	"ja %l[fail]\n\t"

/* The slot and the bytes copied after it stay before the sub-buffer's
 * end: `fit` sets rcx to in_sb + every byte the section writes from the
 * slot on, which must be < S. This also keeps the slot from ending
 * exactly at the boundary (END_SWITCH_CURRENT, the library's path). The
 * hot word: its tag is this sub-buffer's start (write_count - in_sb),
 * which also refuses a write_count at a boundary (a packet not open
 * yet); then its byte offset from data, <= off_max. Then the compact
 * header at %[s]. */
#define RT__FAST_SLOT(fit)                                                     \
	"movq " RT__S(RT__FB_OFFSET_MASK) "(%[b]), %[t]\n\t"                   \
	"andq %[wc], %[t]\n\t"                                                 \
	fit                                                                    \
	"cmpq " RT__S(RT__FB_SUBBUF_SIZE) "(%[b]), %%rcx\n\t"                  \
	"jae %l[fail]\n\t"                                                     \
	"movq %[wc], %%rdi\n\t"                                                \
	"subq %[t], %%rdi\n\t"                                                 \
	"cmpq " RT__S(RT__CTL_HOT) "(%[c]), %%rdi\n\t"                         \
	"jne %l[fail]\n\t"                                                     \
	"movq " RT__S(RT__CTL_HOT_OFF) "(%[c]), %[s]\n\t"                      \
	"cmpq " RT__S(RT__FB_OFF_MAX) "(%[b]), %[s]\n\t"                       \
	"ja %l[fail]\n\t"                                                      \
	"addq " RT__S(RT__FB_DATA) "(%[b]), %[s]\n\t"                          \
	"addq %[t], %[s]\n\t"                                                  \
	"movl %%edx, %k[t]\n\t"                                                \
	"shll %[idb], %k[t]\n\t"                                               \
	"orl %[id], %k[t]\n\t"                                                 \
	"movl %k[t], (%[s])\n\t"

/* Commit: Algorithms 2 and 3 in one store (write_count + slot); the
 * section's end and its abort handler. */
#define RT__FAST_COMMIT                                                        \
	"addq %[slot], %[wc]\n\t"                                              \
	"movq %[wc], " RT__S(RT__CTL_WRITE_COUNT) "(%[c])\n"                    \
	"2:\n\t" RT__RSEQ_ABORT("4", "aborted")

/* The section, with `copy` the payload's copy (one of the above). */
#define RT__FAST_EVENT_ASM(copy)                                               \
	__asm__ goto(RT__FAST_ENTER                                            \
		     RT__FAST_SLOT("leaq %c[hs](%[t],%[n],4), %%rcx\n\t")      \
		     copy                                                      \
		     RT__FAST_COMMIT                                           \
		     : "=&a"(lo), "=&d"(tsc), [c] "=&r"(ctl), [wc] "=&r"(wc),  \
		       [t] "=&r"(t), [s] "=&r"(s), [n] "+r"(n)                 \
		     : [b] "r"(b), [id] "rm"(id), [src] "r"(payload),          \
		       [slot] "rm"(slot), [hs] "i"(RT__COMPACT_HEADER_SIZE),   \
		       [idb] "i"(RT__COMPACT_ID_BITS)                          \
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
