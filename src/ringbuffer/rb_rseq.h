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

#endif /* RINGTRACE_RB_RSEQ_H */
