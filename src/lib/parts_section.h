/*
 * parts_section.h - an event with strings or byte sequences (the call
 * site's struct rt_part list, rt__record_parts) in ONE rseq critical
 * section: the call sites' section (rt__fast_event,
 * ringtrace/internal/fast.h: the same checks, the same one store that
 * reserves and commits) with each field copied from where it lives, the
 * string pointed to or the sequence's bytes, straight into the slot.
 * Used by the library for the events whose call site has a fast site
 * (one buffer without contexts, no filter, no trigger: registry.c),
 * which before took two sections (rb_fast_reserve announcing the slot,
 * the copies, rb_commit_rseq) after the library's dispatch.
 *
 * The sizes are the call site's (it ran strlen before the call): the
 * slot holds exactly them, whatever the fields became since. The copy is
 * exact per field (16, 8, 4 or 1 bytes at a time, the last piece of a
 * field overlapping the previous one: nothing is read past a field, nor
 * written past it). A string's size - 1 bytes are copied and checked for
 * a NUL as copied (the slot's bytes, which no other thread writes), then
 * a NUL is stored: a string that became shorter since the call site
 * sized it fails the section, and the library's path writes it padded
 * (probe.c, write_string); one that became longer is cut at its size.
 * A NULL string is "(null)" as in the library's path.
 *
 * Why one section is enough: as rt__fast_event. Preempted, migrated or
 * signalled before the store of write_count + slot, the thread goes to
 * the abort label and nothing was reserved; the bytes it wrote lie past
 * write_count, where the next slot overwrites them. A signal handler that
 * records meanwhile takes its own slot; the interrupted event then goes
 * through the library's path. So the event has nothing outstanding at
 * any time: a dead or stopped writer leaves no hole, an exact stop's
 * close (which moves the hot tag) refuses it as it refuses the call
 * sites' sections.
 *
 * Concurrency: no lock, no system call, no allocation, signal-safe. The
 * store that commits is a plain mov, a release store on x86 (TSO): the
 * slot's bytes are visible before the new write_count, which the
 * consumer loads with acquire. The store of last_tsc after it is a hint
 * (relaxed, as in rt__fast_event).
 */
#ifndef RINGTRACE_LIB_PARTS_SECTION_H
#define RINGTRACE_LIB_PARTS_SECTION_H

#include <stddef.h>
#include <stdint.h>

#include <ringtrace/internal/fast.h>
#include <ringtrace/ringtrace_types.h>

/* What a NULL string is recorded as (probe.c; its path writes the same). */
extern const char rt_null_string[7] __attribute__((visibility("hidden")));
/* Nonzero when the CPU has AVX2 (probe.c, at load): the section then
 * copies 32 bytes per instruction. */
extern uint8_t rt_parts_avx2 __attribute__((visibility("hidden")));

#if RT__HAVE_FAST_EVENT && defined(__SSE2__)
#define RT_HAVE_PARTS_SECTION 1

#if defined(__LP64__)
_Static_assert(sizeof(struct rt_part) == 16 && offsetof(struct rt_part, size) == 8 &&
		       offsetof(struct rt_part, kind) == 12 && offsetof(struct rt_bytes, ptr) == 0 &&
		       RT_PART_STRING == 1 && RT_PART_BYTES == 2,
	       "parts_section.h: the offsets and kinds the section reads");
#endif

/* 128 bytes from %[b] to %[s] through ymm0, ymm1, ymm4, ymm5 (the two
 * AVX2 copies' loop body; never xmm2, the SSE copies' zero). */
#define RT_PS_COPY128                                                          \
	"vmovdqu (%[b]), %%ymm0\n\t"                                           \
	"vmovdqu 32(%[b]), %%ymm1\n\t"                                         \
	"vmovdqu 64(%[b]), %%ymm4\n\t"                                         \
	"vmovdqu 96(%[b]), %%ymm5\n\t"                                         \
	"vmovdqu %%ymm0, (%[s])\n\t"                                           \
	"vmovdqu %%ymm1, 32(%[s])\n\t"                                         \
	"vmovdqu %%ymm4, 64(%[s])\n\t"                                         \
	"vmovdqu %%ymm5, 96(%[s])\n\t"

/*
 * Record event `id` of b's buffer with the `nr` parts at `parts`, `size`
 * bytes in all (the sum of their sizes). Returns nonzero when recorded;
 * 0 when nothing was: the slot does not fit the current sub-buffer (a
 * switch, or an event larger than a sub-buffer), the timestamp needs the
 * full header, the hot word is stale, the CPU is out of range, a string
 * became shorter than its size, a part is too small for its kind, or the
 * section aborted. The caller then takes the library's path.
 *
 * The AVX2 copies end with vzeroupper; a section aborted in the middle
 * of one leaves the upper halves dirty until the next vzeroupper (glibc's
 * string functions have one), which costs time on some Intel CPUs, not
 * correctness, and only after an abort.
 *
 * Registers: %[c] the CPU, then its control area; rdx:rax the TSC, then
 * rdx the TSC; %[wc] write_count; %[t] the offset in the sub-buffer,
 * then a part's bytes left to copy; %[s] the slot, then where the next
 * byte goes; %[p] the part; %[b] the buffer, then the part's source;
 * %[k] its kind; ecx the part's NUL lanes; rax and rdi scratch; xmm2
 * zero for the whole section (no copy may write it), ymm3 zero in the
 * AVX2 string copy; xmm0, xmm1, ymm4, ymm5 the bytes copied.
 */
static inline __attribute__((always_inline)) int
rt_parts_section(const struct rt_fast_buf *b, uint32_t id, const struct rt_part *parts,
		 uint32_t nr, uint64_t size)
{
	uint64_t lo, ctl, tsc, wc, t, s, k;
	const char *src = (const char *)b;
	const struct rt_part *p = parts;
	const struct rt_part *end = parts + nr;
	const uint64_t slot = RT__COMPACT_HEADER_SIZE + size;
	__asm__ goto(RT__FAST_ENTER
		     /* in_sb + slot < S. */
		     RT__FAST_SLOT("movq %[slot], %%rcx\n\t"
					 "addq %[t], %%rcx\n\t")
		     "addq %[hs], %[s]\n\t"
		     "pxor %%xmm2, %%xmm2\n\t"
		     "cmpq %[end], %[p]\n\t"
		     "jae 19f\n"
		     /* Each part: its source, size and kind. */
		     "10:\n\t"
		     "movq (%[p]), %[b]\n\t"
		     "movl 8(%[p]), %k[t]\n\t"
		     "movl 12(%[p]), %k[k]\n\t"
		     "xorl %%ecx, %%ecx\n\t"
		     "cmpl $1, %k[k]\n\t"
		     "jne 11f\n\t"
		     /* A string: size - 1 characters, then the NUL. */
		     "movq (%[b]), %[b]\n\t"
		     "testq %[b], %[b]\n\t"
		     "jnz 22f\n\t"
		     "leaq %[nul], %[b]\n"
		     "22:\n\t"
		     "subl $1, %k[t]\n\t"
		     "jb %l[fail]\n\t"
		     "jmp 12f\n"
		     "11:\n\t"
		     "cmpl $2, %k[k]\n\t"
		     "jne 12f\n\t"
		     /* A sequence: its length (u32), then its bytes. */
		     "subl $4, %k[t]\n\t"
		     "jb %l[fail]\n\t"
		     "movq (%[b]), %[b]\n\t"
		     "movl %k[t], (%[s])\n\t"
		     "addq $4, %[s]\n"
		     /* Copy %[t] bytes; in a string, a NUL's lane sets a bit
		      * of ecx. 16 bytes and more: 32 at a time, then the
		      * rest as 16 and the last 16, overlapping. */
		     "12:\n\t"
		     "cmpq $16, %[t]\n\t"
		     "jb 14f\n\t"
		     "cmpl $1, %k[k]\n\t"
		     "je 13f\n\t"
		     "cmpq $32, %[t]\n\t"
		     "jb 23f\n\t"
		     "cmpb $0, %[avx2]\n\t"
		     "je 23f\n\t"
		     /* AVX2 and 32 bytes or more: 64 at a time, then the
		      * rest as 32 and the last 32, overlapping. */
		     "30:\n\t"
		     "cmpq $128, %[t]\n\t"
		     "jb 38f\n\t"
		     RT_PS_COPY128
		     "addq $128, %[b]\n\t"
		     "addq $128, %[s]\n\t"
		     "subq $128, %[t]\n\t"
		     "jmp 30b\n"
		     "38:\n\t"
		     "cmpq $64, %[t]\n\t"
		     "jb 31f\n\t"
		     "vmovdqu (%[b]), %%ymm0\n\t"
		     "vmovdqu 32(%[b]), %%ymm1\n\t"
		     "vmovdqu %%ymm0, (%[s])\n\t"
		     "vmovdqu %%ymm1, 32(%[s])\n\t"
		     "addq $64, %[b]\n\t"
		     "addq $64, %[s]\n\t"
		     "subq $64, %[t]\n"
		     "31:\n\t"
		     "testq %[t], %[t]\n\t"
		     "jz 32f\n\t"
		     "cmpq $32, %[t]\n\t"
		     "jbe 33f\n\t"
		     "vmovdqu (%[b]), %%ymm0\n\t"
		     "vmovdqu %%ymm0, (%[s])\n"
		     "33:\n\t"
		     "vmovdqu -32(%[b],%[t]), %%ymm0\n\t"
		     "vmovdqu %%ymm0, -32(%[s],%[t])\n"
		     "32:\n\t"
		     "vzeroupper\n\t"
		     "jmp 16f\n"
		     "23:\n\t"
		     "cmpq $32, %[t]\n\t"
		     "jb 24f\n\t"
		     "movdqu (%[b]), %%xmm0\n\t"
		     "movdqu 16(%[b]), %%xmm1\n\t"
		     "movdqu %%xmm0, (%[s])\n\t"
		     "movdqu %%xmm1, 16(%[s])\n\t"
		     "addq $32, %[b]\n\t"
		     "addq $32, %[s]\n\t"
		     "subq $32, %[t]\n\t"
		     "jmp 23b\n"
		     "24:\n\t"
		     "testq %[t], %[t]\n\t"
		     "jz 17f\n\t"
		     "cmpq $16, %[t]\n\t"
		     "jbe 25f\n\t"
		     "movdqu (%[b]), %%xmm0\n\t"
		     "movdqu %%xmm0, (%[s])\n"
		     "25:\n\t"
		     "movdqu -16(%[b],%[t]), %%xmm0\n\t"
		     "movdqu %%xmm0, -16(%[s],%[t])\n\t"
		     "jmp 16f\n"
		     /* A string's characters, checked. */
		     "13:\n\t"
		     "cmpq $32, %[t]\n\t"
		     "jb 27f\n\t"
		     "cmpb $0, %[avx2]\n\t"
		     "je 27f\n\t"
		     "vpxor %%xmm3, %%xmm3, %%xmm3\n"
		     "34:\n\t"
		     "cmpq $128, %[t]\n\t"
		     "jb 39f\n\t"
		     RT_PS_COPY128
		     "vpminub %%ymm1, %%ymm0, %%ymm0\n\t"
		     "vpminub %%ymm5, %%ymm4, %%ymm4\n\t"
		     "vpminub %%ymm4, %%ymm0, %%ymm0\n\t"
		     "vpcmpeqb %%ymm3, %%ymm0, %%ymm0\n\t"
		     "vpmovmskb %%ymm0, %%eax\n\t"
		     "orl %%eax, %%ecx\n\t"
		     "addq $128, %[b]\n\t"
		     "addq $128, %[s]\n\t"
		     "subq $128, %[t]\n\t"
		     "jmp 34b\n"
		     "39:\n\t"
		     "cmpq $64, %[t]\n\t"
		     "jb 35f\n\t"
		     "vmovdqu (%[b]), %%ymm0\n\t"
		     "vmovdqu 32(%[b]), %%ymm1\n\t"
		     "vmovdqu %%ymm0, (%[s])\n\t"
		     "vmovdqu %%ymm1, 32(%[s])\n\t"
		     "vpminub %%ymm1, %%ymm0, %%ymm0\n\t"
		     "vpcmpeqb %%ymm3, %%ymm0, %%ymm0\n\t"
		     "vpmovmskb %%ymm0, %%eax\n\t"
		     "orl %%eax, %%ecx\n\t"
		     "addq $64, %[b]\n\t"
		     "addq $64, %[s]\n\t"
		     "subq $64, %[t]\n\t"
		     "jmp 34b\n"
		     "35:\n\t"
		     "testq %[t], %[t]\n\t"
		     "jz 36f\n\t"
		     "cmpq $32, %[t]\n\t"
		     "jbe 37f\n\t"
		     "vmovdqu (%[b]), %%ymm0\n\t"
		     "vmovdqu %%ymm0, (%[s])\n\t"
		     "vpcmpeqb %%ymm3, %%ymm0, %%ymm0\n\t"
		     "vpmovmskb %%ymm0, %%eax\n\t"
		     "orl %%eax, %%ecx\n"
		     "37:\n\t"
		     "vmovdqu -32(%[b],%[t]), %%ymm0\n\t"
		     "vmovdqu %%ymm0, -32(%[s],%[t])\n\t"
		     "vpcmpeqb %%ymm3, %%ymm0, %%ymm0\n\t"
		     "vpmovmskb %%ymm0, %%eax\n\t"
		     "orl %%eax, %%ecx\n"
		     "36:\n\t"
		     "vzeroupper\n\t"
		     "jmp 16f\n"
		     "27:\n\t"
		     "cmpq $32, %[t]\n\t"
		     "jb 26f\n\t"
		     "movdqu (%[b]), %%xmm0\n\t"
		     "movdqu 16(%[b]), %%xmm1\n\t"
		     "movdqu %%xmm0, (%[s])\n\t"
		     "movdqu %%xmm1, 16(%[s])\n\t"
		     "pcmpeqb %%xmm2, %%xmm0\n\t"
		     "pcmpeqb %%xmm2, %%xmm1\n\t"
		     "por %%xmm1, %%xmm0\n\t"
		     "pmovmskb %%xmm0, %%eax\n\t"
		     "orl %%eax, %%ecx\n\t"
		     "addq $32, %[b]\n\t"
		     "addq $32, %[s]\n\t"
		     "subq $32, %[t]\n\t"
		     "jmp 27b\n"
		     "26:\n\t"
		     "testq %[t], %[t]\n\t"
		     "jz 17f\n\t"
		     "cmpq $16, %[t]\n\t"
		     "jbe 28f\n\t"
		     "movdqu (%[b]), %%xmm0\n\t"
		     "movdqu %%xmm0, (%[s])\n\t"
		     "pcmpeqb %%xmm2, %%xmm0\n\t"
		     "pmovmskb %%xmm0, %%eax\n\t"
		     "orl %%eax, %%ecx\n"
		     "28:\n\t"
		     "movdqu -16(%[b],%[t]), %%xmm0\n\t"
		     "movdqu %%xmm0, -16(%[s],%[t])\n\t"
		     "pcmpeqb %%xmm2, %%xmm0\n\t"
		     "pmovmskb %%xmm0, %%eax\n\t"
		     "orl %%eax, %%ecx\n\t"
		     "jmp 16f\n"
		     /* 8 to 15 bytes: the first 8 and the last 8. */
		     "14:\n\t"
		     "cmpq $8, %[t]\n\t"
		     "jb 15f\n\t"
		     "movq (%[b]), %%xmm0\n\t"
		     "movq -8(%[b],%[t]), %%xmm1\n\t"
		     "movq %%xmm0, (%[s])\n\t"
		     "movq %%xmm1, -8(%[s],%[t])\n\t"
		     "punpcklqdq %%xmm1, %%xmm0\n\t"
		     "pcmpeqb %%xmm2, %%xmm0\n\t"
		     "pmovmskb %%xmm0, %%eax\n\t"
		     "orl %%eax, %%ecx\n\t"
		     "jmp 16f\n"
		     /* 4 to 7 bytes: the first 4 and the last 4 (8 lanes). */
		     "15:\n\t"
		     "cmpq $4, %[t]\n\t"
		     "jb 18f\n\t"
		     "movd (%[b]), %%xmm0\n\t"
		     "movd -4(%[b],%[t]), %%xmm1\n\t"
		     "movd %%xmm0, (%[s])\n\t"
		     "movd %%xmm1, -4(%[s],%[t])\n\t"
		     "punpckldq %%xmm1, %%xmm0\n\t"
		     "pcmpeqb %%xmm2, %%xmm0\n\t"
		     "pmovmskb %%xmm0, %%eax\n\t"
		     "andl $0xff, %%eax\n\t"
		     "orl %%eax, %%ecx\n\t"
		     "jmp 16f\n"
		     /* 0 to 3 bytes, one at a time (a NUL carries into ecx). */
		     "18:\n\t"
		     "xorl %%edi, %%edi\n\t"
		     "cmpq %[t], %%rdi\n\t"
		     "jae 16f\n"
		     "20:\n\t"
		     "movzbl (%[b],%%rdi), %%eax\n\t"
		     "movb %%al, (%[s],%%rdi)\n\t"
		     "cmpl $1, %%eax\n\t"
		     "adcl $0, %%ecx\n\t"
		     "incq %%rdi\n\t"
		     "cmpq %[t], %%rdi\n\t"
		     "jb 20b\n"
		     "16:\n\t"
		     "addq %[t], %[s]\n"
		     "17:\n\t"
		     /* A string: no NUL among its characters, then its NUL. */
		     "cmpl $1, %k[k]\n\t"
		     "jne 21f\n\t"
		     "testl %%ecx, %%ecx\n\t"
		     "jnz %l[fail]\n\t"
		     "movb $0, (%[s])\n\t"
		     "incq %[s]\n"
		     "21:\n\t"
		     "addq $16, %[p]\n\t"
		     "cmpq %[end], %[p]\n\t"
		     "jb 10b\n"
		     "19:\n\t"
		     RT__FAST_COMMIT
		     : "=&a"(lo), "=&d"(tsc), [c] "=&r"(ctl), [wc] "=&r"(wc), [t] "=&r"(t),
		       [s] "=&r"(s), [k] "=&r"(k), [b] "+r"(src), [p] "+r"(p)
		     : [end] "m"(end), [id] "m"(id), [slot] "m"(slot), [nul] "m"(rt_null_string), [avx2] "m"(rt_parts_avx2),
		       [hs] "i"(RT__COMPACT_HEADER_SIZE), [idb] "i"(RT__COMPACT_ID_BITS)
		     : "cc", "memory", "rcx", "rdi", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5"
		     : fail, aborted);
	/* Relaxed: a hint for the next reservation, stored after the
	 * commit (stale only towards the past, which costs a full header,
	 * never a wrong one), as rt__fast_event does. */
	__atomic_store_n((uint64_t *)((char *)ctl + RT__CTL_LAST_TSC), tsc, __ATOMIC_RELAXED);
	(void)lo;
	(void)t;
	(void)s;
	(void)k;
	(void)src;
	(void)p;
	return 1;
fail:
aborted:
	return 0;
}
#else
#define RT_HAVE_PARTS_SECTION 0
#endif

#endif /* RINGTRACE_LIB_PARTS_SECTION_H */
