/*
 * rb_rseq.h - per-CPU "local atomic operations" of seed 000 (section 4.1)
 * in user space, built on restartable sequences (rseq).
 *
 * glibc (2.35 and later) registers one `struct rseq` per thread with the
 * kernel; `__rseq_offset` gives its place relative to the thread pointer
 * and `__rseq_size` is 0 when registration failed or was disabled
 * (GLIBC_TUNABLES=glibc.pthread.rseq=0). A critical section below is a few
 * instructions between a start label and a commit instruction; if the
 * thread is preempted, migrated or interrupted by a signal before the
 * commit, the kernel moves it to the abort label instead, so the section
 * is atomic with respect to everything else that runs on the same CPU.
 * That is the paper's LCAS (local compare-and-swap) and localAdd() without
 * a lock prefix.
 *
 * Rule that keeps this correct (DESIGN.md section 4): a word updated by
 * these per-CPU sections is never updated by an SMP atomic from another
 * CPU at the same time. ringbuffer.c states how each counter obeys it.
 *
 * Only x86-64 has the assembly; elsewhere RB_HAVE_RSEQ is 0 and the ring
 * buffer uses SMP-safe atomics for everything.
 */
#ifndef RINGTRACE_RB_RSEQ_H
#define RINGTRACE_RB_RSEQ_H

#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define RB_HAVE_RSEQ 1
#else
#define RB_HAVE_RSEQ 0
#endif

/* Layout of the kernel's struct rseq (include/uapi/linux/rseq.h), the
 * fields we use only. Written by the kernel, read here. */
struct rb_rseq_abi {
	uint32_t cpu_id_start;
	int32_t cpu_id;		/* current CPU, or negative if unregistered */
	uint64_t rseq_cs;	/* descriptor of the running critical section */
	uint32_t flags;
};

/* glibc's signature, checked by the kernel in the 4 bytes before every
 * abort handler (sysdeps/unix/sysv/linux/x86/bits/rseq.h). */
#define RB_RSEQ_SIG 0x53053053

extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

/* Where the calling thread's rseq area is, relative to the thread
 * pointer (%fs on x86-64); only meaningful when rb_rseq_usable(). The
 * fast path keeps a copy in struct rb (one load instead of two through
 * the GOT) and addresses the area as %fs:offset, so it never reads the
 * thread pointer itself. */
static inline ptrdiff_t rb_rseq_off(void)
{
	return __rseq_offset;
}

/* The CPU the thread runs on now (a hint: it may change at any time);
 * `off` from rb_rseq_off(). */
static inline int32_t rb_rseq_cpu(ptrdiff_t off)
{
#if defined(__x86_64__) && defined(__GNUC__)
	int32_t cpu;
	/* Volatile: a fresh read each time (the kernel updates it). */
	__asm__ __volatile__("movl %%fs:4(%1), %0" : "=r"(cpu) : "r"(off));
	return cpu;
#else
	const struct rb_rseq_abi *rs =
		(const struct rb_rseq_abi *)((char *)__builtin_thread_pointer() + off);
	return __atomic_load_n(&rs->cpu_id, __ATOMIC_RELAXED);
#endif
}

#if RB_HAVE_RSEQ

/* Descriptor of a critical section, in a section of its own, 32-byte
 * aligned as the kernel requires: version, flags, start, length, abort. */
#define RB_RSEQ_CS_DESC(label, start, commit, abort)                          \
	".pushsection __rseq_cs, \"aw\"\n\t"                                    \
	".balign 32\n\t" label ":\n\t"                                          \
	".long 0, 0\n\t"                                                        \
	".quad " start "f, (" commit "f - " start "f), " abort "f\n\t"          \
	".popsection\n\t"

/* Abort handler: signature, then a jump to the C label. Kept out of line
 * so the fast path falls through. */
#define RB_RSEQ_ABORT(abort, target)                                           \
	".pushsection __rseq_failure, \"ax\"\n\t"                              \
	".byte 0x0f, 0xb9, 0x3d\n\t"                                            \
	".long 0x53053053\n\t" abort ":\n\t"                                    \
	"jmp %l[" target "]\n\t"                                                \
	".popsection\n\t"

/*
 * Local CAS: if the thread runs on `cpu` and *v == expect, store newv.
 * Returns 0 on success, 1 if *v != expect, -1 if the thread is not on
 * `cpu` or the section was aborted. Seed 000 Algorithm 2 line 6 ("LCAS of
 * write_count"). The store is a plain mov: on x86 it is a release store
 * (TSO), which orders it after the caller's earlier writes. No "memory"
 * clobber: nothing the caller wrote must be ordered before it (the slot is
 * written after), so the compiler may keep the buffer's geometry in
 * registers across it.
 */
static inline int rb_rseq_cmpeq_store(uint64_t *v, uint64_t expect,
				      uint64_t newv, int32_t cpu, ptrdiff_t off)
{
	__asm__ goto(RB_RSEQ_CS_DESC("3", "1", "2", "4")
		     "leaq 3b(%%rip), %%rax\n\t"
		     "movq %%rax, %%fs:8(%[off])\n\t"
		     "1:\n\t"
		     "cmpl %[cpu], %%fs:4(%[off])\n\t"
		     "jnz 4f\n\t"
		     "cmpq %[v], %[expect]\n\t"
		     "jnz %l[differ]\n\t"
		     "movq %[newv], %[v]\n\t"
		     "2:\n\t"
		     RB_RSEQ_ABORT("4", "aborted")
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
 * `cpu` (then nothing was added). Seed 000 Algorithm 3 line 2 (localAdd
 * of commit_count). A compiler barrier in front orders the slot's data
 * writes before the add (x86 keeps stores in order, section 4.4).
 */
static inline int rb_rseq_add(uint64_t *v, uint64_t inc, int32_t cpu,
			      ptrdiff_t off)
{
	__asm__ goto(RB_RSEQ_CS_DESC("3", "1", "2", "4")
		     "leaq 3b(%%rip), %%rax\n\t"
		     "movq %%rax, %%fs:8(%[off])\n\t"
		     "1:\n\t"
		     "cmpl %[cpu], %%fs:4(%[off])\n\t"
		     "jnz 4f\n\t"
		     "addq %[inc], %[v]\n\t"
		     "2:\n\t"
		     RB_RSEQ_ABORT("4", "aborted")
		     :
		     : [off] "r"(off), [cpu] "r"(cpu), [v] "m"(*v),
		       [inc] "r"(inc)
		     : "memory", "cc", "rax"
		     : aborted);
	return 0;
aborted:
	return -1;
}

#endif /* RB_HAVE_RSEQ */

#endif /* RINGTRACE_RB_RSEQ_H */
