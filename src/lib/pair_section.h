/*
 * pair_section.h - one event recorded in two buffers (two daemon
 * sessions recording the same event) with ONE clock read: the call
 * sites' section (rt__fast_event, ringtrace/internal/fast.h) into the
 * first buffer, which also reads the second buffer's write_count on the
 * same CPU, then a section into the second buffer that reuses the first
 * one's timestamp if nothing was reserved there since that read.
 *
 * Why the timestamp stays monotonic in the second buffer's order (it is
 * read before that buffer's reservation, not inside its section): in rseq
 * mode a CPU's buffer is reserved only by sections running on that CPU.
 * The first section reads the second buffer's write_count (W) and then
 * the TSC (T) on CPU c, with no preemption, migration or signal between
 * them (any of those aborts it). Every reservation of the second buffer
 * on c that W includes ran before our section started, with a context
 * switch or a signal return (both serializing) between its clock read and
 * ours: its timestamp is no newer than T. The second section runs on c
 * too (it compares the CPU with the first's) and reserves only if
 * write_count is still W: nothing was reserved there since, so the slot
 * right before ours is one W includes. Anything else (another program or
 * thread, a signal handler, the consumer's flush wrote the second buffer
 * meanwhile, or the thread moved) fails the second section, and the
 * caller records the event with a clock read of its own (rt__fast_event).
 * The compact header's delta is checked against last_tsc as in
 * rt__fast_event (last_tsc is no newer than the last slot's timestamp).
 *
 * Both events carry the same timestamp: the instant of the first section.
 *
 * Concurrency: as rt__fast_event (no lock, no system call, no allocation,
 * signal-safe); `st` is the caller's (its stack).
 */
#ifndef RINGTRACE_LIB_PAIR_SECTION_H
#define RINGTRACE_LIB_PAIR_SECTION_H

#include <stddef.h>
#include <stdint.h>

#include <ringtrace/internal/fast.h>

/* What the first section leaves for the second, byte by byte: 0 u32 the
 * CPU, 4 u32 padding, 8 u64 the second buffer's write_count, 16 the
 * second buffer (set by the caller before the first section), 24 u64 the
 * timestamp. */
struct rt_pair {
	uint32_t cpu;
	uint32_t pad;
	uint64_t wc2;
	const struct rt_fast_buf *b2;
	uint64_t tsc;
};
#define RT_PAIR_CPU 0
#define RT_PAIR_WC2 8
#define RT_PAIR_B2 16
#define RT_PAIR_TSC 24
_Static_assert(offsetof(struct rt_pair, cpu) == RT_PAIR_CPU &&
		       offsetof(struct rt_pair, wc2) == RT_PAIR_WC2 &&
		       offsetof(struct rt_pair, b2) == RT_PAIR_B2 &&
		       offsetof(struct rt_pair, tsc) == RT_PAIR_TSC,
	       "struct rt_pair: the offsets the sections use");

#if RT__HAVE_FAST_EVENT
#define RT_HAVE_PAIR_SECTION 1

/* The end both sections share, from the fit check on (as
 * RT__FAST_EVENT_ASM, with fast.h's pieces): %[t] the offset in the
 * sub-buffer, the compact header from the TSC in edx, the payload's %[n]
 * 4-byte words (none when 0), the commit. */
#define RT_PAIR_TAIL                                                           \
	RT__FAST_SLOT("leaq %c[hs](%[t],%[n],4), %%rcx\n\t")                  \
	"testq %[n], %[n]\n\t"                                                 \
	"jz 7f\n\t"                                                            \
	RT__FAST_CP_LOOP                                                       \
	"7:\n\t"                                                               \
	RT__FAST_COMMIT

/*
 * The first buffer's event (b: event `id`, `size` bytes of payload at
 * `payload`, a multiple of 4, at most RT__FAST_PAYLOAD_MAX), as
 * rt__fast_event, reading also st->b2's write_count on the same CPU
 * before the TSC. Returns nonzero when recorded, with st's CPU, second
 * write_count and timestamp set; 0 when nothing was (as rt__fast_event,
 * or the CPU is out of st->b2's range).
 */
static inline __attribute__((always_inline)) int
rt_pair_first(const struct rt_fast_buf *b, uint32_t id, const void *payload, uint32_t size,
	      struct rt_pair *st)
{
	uint64_t lo, ctl, tsc, wc, t, s;
	uint64_t n = size / 4;
	const uint64_t slot = RT__COMPACT_HEADER_SIZE + (uint64_t)size;
	__asm__ goto(RT__RSEQ_CS_DESC("3", "1", "2", "4")
		     "leaq 3b(%%rip), %%rax\n\t"
		     "movq " RT__S(RT__FB_RSEQ_OFF) "(%[b]), %%rcx\n\t"
		     "movq %%rax, %%fs:" RT__S(RT__RSEQ_CS) "(%%rcx)\n"
		     "1:\n\t"
		     "movl %%fs:" RT__S(RT__RSEQ_CPU_ID) "(%%rcx), %k[c]\n\t"
		     "cmpl " RT__S(RT__FB_NR_CPUS) "(%[b]), %k[c]\n\t"
		     "jae %l[fail]\n\t"
		     /* The second buffer's write_count on this CPU. */
		     "movq " RT__S(RT_PAIR_B2) "(%[st]), %%rdi\n\t"
		     "cmpl " RT__S(RT__FB_NR_CPUS) "(%%rdi), %k[c]\n\t"
		     "jae %l[fail]\n\t"
		     "movl %k[c], " RT__S(RT_PAIR_CPU) "(%[st])\n\t"
		     "movq %[c], %%rax\n\t"
		     "imulq " RT__S(RT__FB_CPU_CTL_STRIDE) "(%%rdi), %%rax\n\t"
		     "addq " RT__S(RT__FB_CPU_CTL) "(%%rdi), %%rax\n\t"
		     "movq " RT__S(RT__CTL_WRITE_COUNT) "(%%rax), %%rax\n\t"
		     "movq %%rax, " RT__S(RT_PAIR_WC2) "(%[st])\n\t"
		     /* Then as rt__fast_event. */
		     "imulq " RT__S(RT__FB_CPU_CTL_STRIDE) "(%[b]), %[c]\n\t"
		     "addq " RT__S(RT__FB_CPU_CTL) "(%[b]), %[c]\n\t"
		     "movq " RT__S(RT__CTL_WRITE_COUNT) "(%[c]), %[wc]\n\t"
		     "rdtsc\n\t"
		     "shlq $32, %%rdx\n\t"
		     "orq %%rax, %%rdx\n\t"
		     "movq %%rdx, %[t]\n\t"
		     "subq " RT__S(RT__CTL_LAST_TSC) "(%[c]), %[t]\n\t"
		     "cmpq " RT__S(RT__FB_TSC_MAX) "(%[b]), %[t]\n\t"
		     "ja %l[fail]\n\t"
		     RT_PAIR_TAIL
		     : "=&a"(lo), "=&d"(tsc), [c] "=&r"(ctl), [wc] "=&r"(wc),
		       [t] "=&r"(t), [s] "=&r"(s), [n] "+r"(n)
		     : [b] "r"(b), [st] "r"(st), [id] "rm"(id), [src] "r"(payload),
		       [slot] "rm"(slot), [hs] "i"(RT__COMPACT_HEADER_SIZE),
		       [idb] "i"(RT__COMPACT_ID_BITS)
		     : "cc", "memory", "rcx", "rdi"
		     : fail, aborted);
	/* Relaxed: a hint, stored after the commit, as rt__fast_event. */
	__atomic_store_n((uint64_t *)((char *)ctl + RT__CTL_LAST_TSC), tsc, __ATOMIC_RELAXED);
	st->tsc = tsc;
	(void)lo;
	return 1;
fail:
aborted:
	return 0;
}

/*
 * The second buffer's event (b is st->b2) with the first section's
 * timestamp: on st's CPU only, and only if write_count there is still
 * the one the first section read; otherwise as rt__fast_event's checks.
 * Returns nonzero when recorded; 0 when nothing was.
 */
static inline __attribute__((always_inline)) int
rt_pair_next(const struct rt_fast_buf *b, uint32_t id, const void *payload, uint32_t size,
	     const struct rt_pair *st)
{
	uint64_t ctl, tsc, wc, t, s;
	uint64_t n = size / 4;
	const uint64_t slot = RT__COMPACT_HEADER_SIZE + (uint64_t)size;
	__asm__ goto(RT__RSEQ_CS_DESC("3", "1", "2", "4")
		     "leaq 3b(%%rip), %%rax\n\t"
		     "movq " RT__S(RT__FB_RSEQ_OFF) "(%[b]), %%rcx\n\t"
		     "movq %%rax, %%fs:" RT__S(RT__RSEQ_CS) "(%%rcx)\n"
		     "1:\n\t"
		     /* The first section's CPU (in b's range: it checked). */
		     "movl %%fs:" RT__S(RT__RSEQ_CPU_ID) "(%%rcx), %k[c]\n\t"
		     "cmpl " RT__S(RT_PAIR_CPU) "(%[st]), %k[c]\n\t"
		     "jne %l[fail]\n\t"
		     "imulq " RT__S(RT__FB_CPU_CTL_STRIDE) "(%[b]), %[c]\n\t"
		     "addq " RT__S(RT__FB_CPU_CTL) "(%[b]), %[c]\n\t"
		     "movq " RT__S(RT__CTL_WRITE_COUNT) "(%[c]), %[wc]\n\t"
		     /* Nothing reserved here since the first section. */
		     "cmpq " RT__S(RT_PAIR_WC2) "(%[st]), %[wc]\n\t"
		     "jne %l[fail]\n\t"
		     "movq " RT__S(RT_PAIR_TSC) "(%[st]), %%rdx\n\t"
		     "movq %%rdx, %[t]\n\t"
		     "subq " RT__S(RT__CTL_LAST_TSC) "(%[c]), %[t]\n\t"
		     "cmpq " RT__S(RT__FB_TSC_MAX) "(%[b]), %[t]\n\t"
		     "ja %l[fail]\n\t"
		     RT_PAIR_TAIL
		     : "=&d"(tsc), [c] "=&r"(ctl), [wc] "=&r"(wc), [t] "=&r"(t),
		       [s] "=&r"(s), [n] "+r"(n)
		     : [b] "r"(b), [st] "r"(st), [id] "rm"(id), [src] "r"(payload),
		       [slot] "rm"(slot), [hs] "i"(RT__COMPACT_HEADER_SIZE),
		       [idb] "i"(RT__COMPACT_ID_BITS)
		     : "cc", "memory", "rax", "rcx", "rdi"
		     : fail, aborted);
	__atomic_store_n((uint64_t *)((char *)ctl + RT__CTL_LAST_TSC), tsc, __ATOMIC_RELAXED);
	return 1;
fail:
aborted:
	return 0;
}
#else
#define RT_HAVE_PAIR_SECTION 0
#endif

#endif /* RINGTRACE_LIB_PAIR_SECTION_H */
