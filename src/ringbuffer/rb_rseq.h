/*
 * rb_rseq.h - the ring buffer's per-CPU "local atomic operations"
 * (Desnoyers & Dagenais 2012, section 4.1) the library uses; call sites
 * have their own section, rt__fast_event in <ringtrace/internal/fast.h>,
 * which also holds the macros that lay out a section.
 *
 * Only x86-64 has the assembly; elsewhere RB_HAVE_RSEQ is 0 and the ring
 * buffer uses SMP-safe atomics for everything.
 */
#ifndef RINGTRACE_RB_RSEQ_H
#define RINGTRACE_RB_RSEQ_H

#include <ringtrace/internal/fast.h>

#define RB_HAVE_RSEQ RT__HAVE_RSEQ

#if RB_HAVE_RSEQ
#include <linux/rseq.h>

/* The offsets the sections below use (internal/fast_layout.h): the
 * kernel's struct rseq; the compare of RB_RSEQ_CMPEQ is on the word at
 * ctl itself, which for rb_rseq_reserve is write_count, stored with
 * announced in one aligned 16-byte store; rb_rseq_hot_store's memory
 * operand covers the first 6 words of the control area (the control
 * words' own assertions are in ringbuffer.c). */
_Static_assert(offsetof(struct rseq, cpu_id) == RT__RSEQ_CPU_ID &&
	       offsetof(struct rseq, rseq_cs) == RT__RSEQ_CS,
	       "struct rseq: the offsets the sections use");
_Static_assert(RT__CTL_WRITE_COUNT == 0 && RT__CTL_WRITE_COUNT % 16 == 0 &&
	       RT__CTL_ANNOUNCE == RT__CTL_WRITE_COUNT + 8,
	       "rb_rseq_reserve: write_count at ctl, announced after it");
_Static_assert(RT__CTL_HOT + 8 <= 6 * 8 && RT__CTL_HOT_OFF + 8 <= 6 * 8,
	       "rb_rseq_hot_store: the hot word within its memory operand");
#endif

/* glibc's registration: `__rseq_offset` is the rseq area's place
 * relative to the thread pointer, `__rseq_size` is 0 when registration
 * failed or was disabled (GLIBC_TUNABLES=glibc.pthread.rseq=0). */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

/* The CPU the thread runs on now (a hint: it may change at any time);
 * `off` is __rseq_offset. */
static inline int32_t rb_rseq_cpu(ptrdiff_t off)
{
#if RB_HAVE_RSEQ
	int32_t cpu;
	/* Volatile: a fresh read each time (the kernel updates it). */
	__asm__ __volatile__("movl %%fs:" RT__S(RT__RSEQ_CPU_ID) "(%1), %0" : "=r"(cpu) : "r"(off));
	return cpu;
#else
	(void)off;
	return -1;
#endif
}

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
/* Entering a section: publish its descriptor `desc` in the thread's rseq
 * area (rseq_cs), then, from the section's `start`, leave for `abort` if
 * the thread is not on the expected CPU. Operands: %[off] (__rseq_offset),
 * %[cpu]; clobbers rax. */
#define RB_RSEQ_ENTER(desc, start, abort)                                     \
	"leaq " desc "b(%%rip), %%rax\n\t"                                     \
	"movq %%rax, %%fs:" RT__S(RT__RSEQ_CS) "(%[off])\n\t" start ":\n\t"     \
	"cmpl %[cpu], %%fs:" RT__S(RT__RSEQ_CPU_ID) "(%[off])\n\t"              \
	"jnz " abort "f\n\t"

/* The body of a compare-and-commit section: enter, leave for `differ`
 * unless the word at %[ctl] equals %[expect], then `commit`, whose last
 * instruction is the section's commit. Operands: %[ctl], %[expect],
 * %[off], %[cpu]; labels differ and aborted; clobbers rax. */
#define RB_RSEQ_CMPEQ(commit)                                                  \
	RT__RSEQ_CS_DESC("3", "1", "2", "4")                                   \
	RB_RSEQ_ENTER("3", "1", "4")                                           \
	"cmpq %[expect], (%[ctl])\n\t"                                         \
	"jnz %l[differ]\n\t"                                                   \
	commit                                                                 \
	"2:\n\t"                                                               \
	RT__RSEQ_ABORT("4", "aborted")

/*
 * Local CAS: if the thread runs on `cpu` and *v == expect, store newv.
 * Returns 0 on success, 1 if *v != expect, -1 if the thread is not on
 * `cpu` or the section was aborted. Desnoyers & Dagenais 2012, Algorithm 2
 * line 6 ("LCAS of write_count"). The store is a plain mov: on x86 it is a
 * release store (TSO), which orders it after the caller's earlier writes.
 * No "memory" clobber: nothing the caller wrote must be ordered before it
 * (the slot is written after), so the compiler may keep the buffer's
 * geometry in registers across it.
 */
static inline int rb_rseq_cmpeq_store(uint64_t *v, uint64_t expect,
				      uint64_t newv, int32_t cpu, ptrdiff_t off)
{
	__asm__ goto(RB_RSEQ_CMPEQ("movq %[newv], (%[ctl])\n")
		     : "+m"(*v)
		     : [ctl] "r"(v), [off] "r"(off), [cpu] "r"(cpu),
		       [expect] "r"(expect), [newv] "r"(newv)
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
 * `cpu` (then nothing was added). Desnoyers & Dagenais 2012, Algorithm 3
 * line 2 (localAdd of commit_count). The "memory" clobber is a compiler
 * barrier in front: the slot's data writes come before the add (x86 keeps
 * stores in order, section 4.4).
 */
static inline int rb_rseq_add(uint64_t *v, uint64_t inc, int32_t cpu,
			       ptrdiff_t off)
{
	__asm__ goto(RT__RSEQ_CS_DESC("3", "1", "2", "4")
		     RB_RSEQ_ENTER("3", "1", "4")
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

/* Where out_from and committed_remote are in a CPU's control area
 * (ringbuffer.h; its assertions are in ringbuffer.c). */
#define RB_CTL_OUT_FROM 56
#define RB_CTL_COMMIT_REMOTE 192

/*
 * The library's reservation (Algorithm 2 line 6, the LCAS of write_count)
 * that also announces its slot: if the thread runs on `cpu` and
 * write_count (at ctl + RT__CTL_WRITE_COUNT) == expect, store write_count
 * = newv and announced += units with ONE 16-byte store, the section's
 * commit, so a slot is never reserved without being announced nor
 * announced without being reserved. Before it, when nothing is
 * outstanding on the CPU's words (announced == committed +
 * committed_remote), out_from = expect (ringbuffer.h: every slot below it
 * is written; a store of an aborted section is still true). Returns 0 on
 * success, 1 if write_count != expect, -1 if the thread is not on `cpu`
 * or the section aborted; nothing but out_from was stored then. The two
 * words are 16-byte aligned (the control area is cache-line aligned). No
 * "memory" clobber, as rb_rseq_cmpeq_store: the slot is written after.
 */
static inline int rb_rseq_reserve(char *ctl, uint64_t expect, uint64_t newv,
				  uint64_t units, int32_t cpu, ptrdiff_t off)
{
	__asm__ goto(RB_RSEQ_CMPEQ("movq " RT__S(RT__CTL_ANNOUNCE) "(%[ctl]), %%rcx\n\t"
				   "subq " RT__S(RT__CTL_COMMIT) "(%[ctl]), %%rcx\n\t"
				   "cmpq %[comr], %%rcx\n\t"
				   "jnz 6f\n\t"
				   "movq %[expect], " RT__S(RB_CTL_OUT_FROM) "(%[ctl])\n"
				   "6:\n\t"
				   "movq " RT__S(RT__CTL_ANNOUNCE) "(%[ctl]), %%rcx\n\t"
				   "addq %[units], %%rcx\n\t"
				   "movq %[newv], %%xmm0\n\t"
				   "movq %%rcx, %%xmm1\n\t"
				   "punpcklqdq %%xmm1, %%xmm0\n\t"
				   "movdqa %%xmm0, " RT__S(RT__CTL_WRITE_COUNT) "(%[ctl])\n")
		     : "+m"(*(uint64_t(*)[8])ctl)
		     : [ctl] "r"(ctl), [off] "r"(off), [cpu] "r"(cpu),
		       [expect] "r"(expect), [newv] "r"(newv), [units] "r"(units),
		       [comr] "m"(*(const uint64_t *)(ctl + RB_CTL_COMMIT_REMOTE))
		     : "cc", "rax", "rcx", "xmm0", "xmm1"
		     : differ, aborted);
	return 0;
differ:
	return 1;
aborted:
	return -1;
}

/* The words a writer announces and commits on (ringbuffer.h: the CPU's
 * own or its account's), for rb_rseq_place: `to` is NULL for the CPU's
 * own (they have no out_to). */
struct rb_words {
	uint64_t *ann, *com, *comr, *from, *to;
};

/* rb_rseq_place's section: enter; `shut` (a check of closed, or
 * nothing); the compare of write_count; out_from = expect when the words'
 * outstanding work is only this reservation's `units` (announced by the
 * caller's section before); `to` (out_to = newv, or nothing); then the
 * commit, write_count = newv. */
#define RB_RSEQ_PLACE(shut, to)                                                \
	RT__RSEQ_CS_DESC("3", "1", "2", "4")                                   \
	RB_RSEQ_ENTER("3", "1", "4")                                           \
	shut                                                                   \
	"cmpq %[expect], %[wc]\n\t"                                            \
	"jnz %l[differ]\n\t"                                                   \
	"movq %[ann], %%rcx\n\t"                                               \
	"subq %[com], %%rcx\n\t"                                               \
	"subq %[comr], %%rcx\n\t"                                              \
	"cmpq %[units], %%rcx\n\t"                                             \
	"jnz 6f\n\t"                                                           \
	"movq %[expect], %[from]\n"                                            \
	"6:\n\t"                                                               \
	to                                                                     \
	"movq %[newv], %[wc]\n"                                                \
	"2:\n\t"                                                               \
	RT__RSEQ_ABORT("4", "aborted")
#define RB_RSEQ_SHUT "cmpq $0, %[closed]\n\tjnz %l[shut]\n\t"
#define RB_RSEQ_TO "movq %[newv], %[to]\n\t"

/*
 * The compare-and-store half of a reservation whose `units` the caller
 * announced on `w` in a section before (the slow path; the fast path on
 * an account): if the thread runs on `cpu` and *wc == expect, store the
 * words' out_from (when `units` is all they have outstanding) and out_to
 * (w->to), then *wc = newv, the commit (ringbuffer.h, out_from). With
 * `closed`, a writer's: nothing is stored when *closed is nonzero (the
 * reader's final flush closed the buffer; it sets closed, then runs on
 * the CPU, which aborts every section in progress there: a section sees
 * closed, or ends before the flush runs). Returns 0 on success, 1 if *wc
 * != expect, 2 if closed, -1 if the thread is not on `cpu` or the section
 * aborted (out_from and out_to may have been stored then: still bounds).
 * The stores are plain movs: on x86 they are release stores (TSO), in
 * program order. No "memory" clobber: the slot is written after.
 */
static inline int rb_rseq_place(uint64_t *wc, const uint64_t *closed, const struct rb_words *w,
				uint64_t expect, uint64_t newv, uint64_t units, int32_t cpu,
				ptrdiff_t off)
{
	static const uint64_t open_word = 0;
	const uint64_t *cl = closed ? closed : &open_word;
	uint64_t *to = w->to ? w->to : w->from;
#define RB_RSEQ_PLACE_OPERANDS                                                 \
	: [wc] "+m"(*wc), [from] "+m"(*w->from), [to] "+m"(*to)                \
	: [off] "r"(off), [cpu] "r"(cpu), [closed] "m"(*cl), [ann] "m"(*w->ann), \
	  [com] "m"(*w->com), [comr] "m"(*w->comr), [expect] "r"(expect),      \
	  [newv] "r"(newv), [units] "r"(units)                                 \
	: "cc", "rax", "rcx"                                                   \
	: differ, shut, aborted
	if (closed && w->to)
		__asm__ goto(RB_RSEQ_PLACE(RB_RSEQ_SHUT, RB_RSEQ_TO) RB_RSEQ_PLACE_OPERANDS);
	else if (closed)
		__asm__ goto(RB_RSEQ_PLACE(RB_RSEQ_SHUT, "") RB_RSEQ_PLACE_OPERANDS);
	else if (w->to)
		__asm__ goto(RB_RSEQ_PLACE("", RB_RSEQ_TO) RB_RSEQ_PLACE_OPERANDS);
	else
		__asm__ goto(RB_RSEQ_PLACE("", "") RB_RSEQ_PLACE_OPERANDS);
#undef RB_RSEQ_PLACE_OPERANDS
	return 0;
differ:
	return 1;
shut:
	return 2;
aborted:
	return -1;
}

/*
 * Refresh the CPU's hot word (ringbuffer.h, hot_tag and hot_off): if the
 * thread runs on `cpu` and write_count is still in the sub-buffer that
 * starts at `tag` (write_count & ~mask == tag), store hot_off = `hoff`,
 * then hot_tag = `tag`, the section's commit. Otherwise, or if the
 * section aborts, store nothing (a later slow path will).
 */
static inline void rb_rseq_hot_store(char *ctl, uint64_t tag, uint64_t hoff,
				     uint64_t mask, int32_t cpu, ptrdiff_t off)
{
	__asm__ goto(RT__RSEQ_CS_DESC("3", "1", "2", "4")
		     RB_RSEQ_ENTER("3", "1", "4")
		     "movq " RT__S(RT__CTL_WRITE_COUNT) "(%[ctl]), %%rcx\n\t"
		     "andq %[nmask], %%rcx\n\t"
		     "cmpq %[tag], %%rcx\n\t"
		     "jnz %l[skip]\n\t"
		     "movq %[hoff], " RT__S(RT__CTL_HOT_OFF) "(%[ctl])\n\t"
		     "movq %[tag], " RT__S(RT__CTL_HOT) "(%[ctl])\n"
		     "2:\n\t"
		     RT__RSEQ_ABORT("4", "skip")
		     : "+m"(*(uint64_t(*)[6])ctl)
		     : [ctl] "r"(ctl), [off] "r"(off), [cpu] "r"(cpu), [tag] "r"(tag),
		       [hoff] "r"(hoff), [nmask] "r"(~mask)
		     : "cc", "rax", "rcx"
		     : skip);
skip:
	return;
}
#endif

#endif /* RINGTRACE_RB_RSEQ_H */
