/*
 * rb_rseq.h - the ring buffer's per-CPU "local atomic operations" (seed
 * 000 section 4.1): the rseq sections of <ringtrace/ringtrace_fast.h>,
 * which call sites inline too, and what only the library needs.
 *
 * Only x86-64 has the assembly; elsewhere RB_HAVE_RSEQ is 0 and the ring
 * buffer uses SMP-safe atomics for everything.
 */
#ifndef RINGTRACE_RB_RSEQ_H
#define RINGTRACE_RB_RSEQ_H

#include <ringtrace/ringtrace_fast.h>

#define RB_HAVE_RSEQ RT__HAVE_RSEQ

/* Where the calling thread's rseq area is, relative to the thread
 * pointer (%fs on x86-64); only meaningful when rb_rseq_usable(). The
 * fast path keeps a copy in struct rt_fast_buf (one load instead of two
 * through the GOT) and addresses the area as %fs:offset, so it never
 * reads the thread pointer itself. */
static inline ptrdiff_t rb_rseq_off(void)
{
	return __rseq_offset;
}

#if RB_HAVE_RSEQ
/*
 * The library's reservation (Algorithm 2 line 6, the LCAS of write_count)
 * that also announces its slot: if the thread runs on `cpu` and
 * write_count (at ctl + RT__CTL_WRITE_COUNT) == expect, store write_count
 * = newv and announced += units with ONE 16-byte store, the section's
 * commit, so a slot is never reserved without being announced nor
 * announced without being reserved. Returns 0 on success, 1 if
 * write_count != expect, -1 if the thread is not on `cpu` or the section
 * aborted; nothing was stored then. The two words are 16-byte aligned
 * (the control area is cache-line aligned). No "memory" clobber, as
 * rt__rseq_cmpeq_store: the slot is written after.
 */
static inline int rb_rseq_reserve(char *ctl, uint64_t expect, uint64_t newv,
				  uint64_t units, int32_t cpu, ptrdiff_t off)
{
	__asm__ goto(RT__RSEQ_CS_DESC("3", "1", "2", "4")
		     RT__RSEQ_ENTER("3", "1", "4")
		     "cmpq %[expect], (%[ctl])\n\t"
		     "jnz %l[differ]\n\t"
		     "movq 8(%[ctl]), %%rcx\n\t"
		     "addq %[units], %%rcx\n\t"
		     "movq %[newv], %%xmm0\n\t"
		     "movq %%rcx, %%xmm1\n\t"
		     "punpcklqdq %%xmm1, %%xmm0\n\t"
		     "movdqa %%xmm0, (%[ctl])\n"
		     "2:\n\t"
		     RT__RSEQ_ABORT("4", "aborted")
		     : "+m"(*(uint64_t(*)[2])ctl)
		     : [ctl] "r"(ctl), [off] "r"(off), [cpu] "r"(cpu),
		       [expect] "r"(expect), [newv] "r"(newv), [units] "r"(units)
		     : "cc", "rax", "rcx", "xmm0", "xmm1"
		     : differ, aborted);
	return 0;
differ:
	return 1;
aborted:
	return -1;
}
#endif

#endif /* RINGTRACE_RB_RSEQ_H */
