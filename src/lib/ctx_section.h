/*
 * ctx_section.h - one event with contexts in ONE rseq critical section:
 * the call sites' section (rt__fast_event, ringtrace/internal/fast.h)
 * with the buffer's contexts copied between the header and the payload,
 * from the calling thread's context cache (struct rt_ctx_cache, filled by
 * probe.c). Used by the library for events of fixed-size fields recorded
 * in a buffer with contexts (`ringtrace record`'s default: vpid, vtid,
 * procname), which before took two sections (rb_fast_reserve announcing
 * the slot, the writes, rb_commit_rseq) and wrote each context in turn.
 *
 * Why one section is enough, as for rt__fast_event: the section reads the
 * CPU, write_count, the TSC, last_tsc and the hot word, checks that the
 * slot fits the current sub-buffer, writes the header, the contexts and
 * the payload after write_count and ends with the store of write_count +
 * slot, which reserves and commits at once. Preempted, migrated or
 * signalled before that store, the thread goes to the abort label and
 * nothing was reserved; the bytes it wrote lie past write_count, where
 * the next slot overwrites them.
 *
 * The cache is the thread's own and changes only in this thread (a signal
 * handler that records may rebuild it): the section compares its `seq`
 * with the value the caller sized the event with, so a rebuild between
 * the sizing and the section fails the section, and one during the
 * section aborts it (a signal ends the section).
 *
 * Concurrency: as rt__fast_event (no lock, no system call, no allocation,
 * signal-safe); the store that commits is a plain mov, a release store on
 * x86 (TSO): the slot's bytes are visible before the new write_count,
 * which the consumer loads with acquire.
 */
#ifndef RINGTRACE_LIB_CTX_SECTION_H
#define RINGTRACE_LIB_CTX_SECTION_H

#include <stddef.h>
#include <stdint.h>

#include <ringtrace/internal/fast.h>

/* Bytes of contexts a cache holds: vpid, vtid, prio (4 each) and the
 * thread's name (16 with its NUL) take 28; each at most once. */
#define RT_CTX_CACHE_MAX 64

/*
 * A thread's contexts for one layout (the list of a buffer's contexts),
 * as recorded. Byte by byte: 0 u32 seq (odd while being rebuilt), 4 u32
 * size (bytes of contexts), 8 u64 key (the layout, rt_ctx_key; 0: none),
 * 16 u32 gen (the thread-name generation it was built for, plus one),
 * 20 u32 padding, 24 u64 padding, 32 the bytes, readable up to size
 * rounded up to 16.
 */
struct rt_ctx_cache {
	uint32_t seq;
	uint32_t size;
	uint64_t key;
	uint32_t gen;
	uint32_t pad;
	uint64_t pad2;
	char bytes[RT_CTX_CACHE_MAX];
};
#define RT_CC_SEQ 0
#define RT_CC_BYTES 32
_Static_assert(offsetof(struct rt_ctx_cache, seq) == RT_CC_SEQ &&
		       offsetof(struct rt_ctx_cache, bytes) == RT_CC_BYTES &&
		       RT_CTX_CACHE_MAX % 16 == 0,
	       "struct rt_ctx_cache: the offsets the section reads");

#if RT__HAVE_FAST_EVENT
#define RT_HAVE_CTX_SECTION 1
/*
 * Record event `id` of b's buffer with the cache's `csize` bytes of
 * contexts (1 <= csize <= RT_CTX_CACHE_MAX, as of cache sequence `seq`)
 * and `psize` bytes of payload at `payload` (a multiple of 4, at most
 * RT__FAST_PAYLOAD_MAX). Returns nonzero when recorded; 0 when nothing
 * was: the slot does not fit, the timestamp needs the full header, the
 * hot word is stale, the CPU is out of range, the cache changed, or the
 * section aborted.
 *
 * The contexts are copied 16 bytes at a time (the cache is padded), the
 * payload 4 bytes at a time over them, last word first. The fit check
 * counts the larger of the two extents, so what the rounding writes past
 * the slot stays in the sub-buffer, unreserved.
 */
static inline __attribute__((always_inline)) int
rt_ctx_section(const struct rt_fast_buf *b, uint32_t id, const struct rt_ctx_cache *cc,
	       uint32_t seq, uint32_t csize, const void *payload, uint32_t psize)
{
	uint64_t lo, ctl, tsc, wc, t, s;
	uint64_t c16 = ((uint64_t)csize + 15) & ~(uint64_t)15;
	uint64_t cn = c16 / 8;		/* 8-byte words of contexts, even */
	uint64_t n = psize / 4;		/* 4-byte words of payload */
	uint64_t coff = csize;
	uint64_t ext = csize + (uint64_t)psize > c16 ? csize + (uint64_t)psize : c16;
	const uint64_t slot = RT__COMPACT_HEADER_SIZE + (uint64_t)csize + psize;
	__asm__ goto(RT__FAST_ENTER
		     /* The cache is the one the event was sized with. */
		     "movl " RT__S(RT_CC_SEQ) "(%[cc]), %%ecx\n\t"
		     "cmpl %[seq], %%ecx\n\t"
		     "jne %l[fail]\n\t"
		     /* in_sb + 4 + ext < S. */
		     RT__FAST_SLOT("movq %[ext], %%rcx\n\t"
					 "leaq %c[hs](%[t],%%rcx), %%rcx\n\t")
		     /* The contexts, 16 bytes per iteration, last first. */
		     "6:\n\t"
		     "movq " RT__S(RT_CC_BYTES) "-16(%[cc],%[cn],8), %%rcx\n\t"
		     "movq " RT__S(RT_CC_BYTES) "-8(%[cc],%[cn],8), %%rdi\n\t"
		     "movq %%rcx, %c[hs]-16(%[s],%[cn],8)\n\t"
		     "movq %%rdi, %c[hs]-8(%[s],%[cn],8)\n\t"
		     "subq $2, %[cn]\n\t"
		     "jnz 6b\n\t"
		     /* The payload after them, 4 bytes per iteration. */
		     "addq %[coff], %[s]\n\t"
		     "testq %[n], %[n]\n\t"
		     "jz 7f\n\t"
		     "8:\n\t"
		     "movl -4(%[src],%[n],4), %%ecx\n\t"
		     "movl %%ecx, %c[hs]-4(%[s],%[n],4)\n\t"
		     "decq %[n]\n\t"
		     "jnz 8b\n"
		     "7:\n\t"
		     RT__FAST_COMMIT
		     : "=&a"(lo), "=&d"(tsc), [c] "=&r"(ctl), [wc] "=&r"(wc),
		       [t] "=&r"(t), [s] "=&r"(s), [n] "+r"(n), [cn] "+r"(cn)
		     : [b] "r"(b), [cc] "r"(cc), [src] "r"(payload), [id] "rm"(id),
		       [seq] "rm"(seq), [ext] "rm"(ext), [coff] "rm"(coff),
		       [slot] "rm"(slot), [hs] "i"(RT__COMPACT_HEADER_SIZE),
		       [idb] "i"(RT__COMPACT_ID_BITS)
		     : "cc", "memory", "rcx", "rdi"
		     : fail, aborted);
	/* Relaxed: a hint for the next reservation, stored after the
	 * commit (stale only towards the past, which costs a full header,
	 * never a wrong one), as rt__fast_event does. */
	__atomic_store_n((uint64_t *)((char *)ctl + RT__CTL_LAST_TSC), tsc, __ATOMIC_RELAXED);
	(void)lo;
	return 1;
fail:
aborted:
	return 0;
}
#else
#define RT_HAVE_CTX_SECTION 0
#endif

#endif /* RINGTRACE_LIB_CTX_SECTION_H */
