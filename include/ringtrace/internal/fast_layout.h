/*
 * fast_layout.h - INTERNAL, not API: the byte layouts that the inline
 * fast path (internal/fast.h) reads and the library writes. Installed
 * only because call sites inline that path; programs use
 * <ringtrace/ringtrace.h> and never these names. Any change here is a
 * change of the call-site ABI and raises RT_ABI_VERSION
 * (ringtrace_types.h).
 *
 * Every offset the assembly uses (internal/fast.h, and the library's own
 * sections in src/ringbuffer/rb_rseq.h) is one of the constants below,
 * put into the asm strings by RT__S; static assertions tie each to its C
 * layout: struct rt_fast_buf here, the control area
 * (src/ringbuffer/ringbuffer.c), the kernel's struct rseq (rb_rseq.h).
 */
#ifndef RINGTRACE_INTERNAL_FAST_LAYOUT_H
#define RINGTRACE_INTERNAL_FAST_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A constant as text, for asm strings (the constants below are plain
 * integers for that reason); also rt_event's misuse checks. */
#define RT__STR(x) RT__STR_(x)
#define RT__STR_(x) #x
#define RT__S(x) RT__STR(x)

#ifdef __cplusplus
#define RT__STATIC_ASSERT(e, msg) static_assert(e, msg)
#else
#define RT__STATIC_ASSERT(e, msg) _Static_assert(e, msg)
#endif

/*
 * The kernel's struct rseq (one per thread, registered by glibc; its
 * place relative to the thread pointer is __rseq_offset): u32
 * cpu_id_start at 0, s32 cpu_id at 4 (negative if unregistered), u64
 * rseq_cs at 8 (the running section's descriptor).
 */
#define RT__RSEQ_CPU_ID 4
#define RT__RSEQ_CS 8

/*
 * Per-CPU control words the fast paths use, as byte offsets into a CPU's
 * control area (struct rb_cpu_ctl in src/ringbuffer/ringbuffer.h, which
 * documents them): all in its first cache line. announced follows
 * write_count: the library stores both with one 16-byte store.
 */
#define RT__CTL_WRITE_COUNT 0
#define RT__CTL_ANNOUNCE 8
#define RT__CTL_LAST_TSC 16
#define RT__CTL_HOT 24
#define RT__CTL_COMMIT 32
#define RT__CTL_HOT_OFF 40

/* The compact event header (CTF, 4 bytes): id in the low
 * RT__COMPACT_ID_BITS bits (at most RT__COMPACT_ID_MAX, 31 announces the
 * extended header), the timestamp's low 27 bits above. */
#define RT__COMPACT_ID_BITS 5
#define RT__COMPACT_ID_MAX 30u
#define RT__COMPACT_TSC_BITS 27u
#define RT__COMPACT_HEADER_SIZE 4u
#define RT__COMPACT_HEADER(id, tsc)                                            \
	((uint32_t)(id) | (uint32_t)((tsc) << RT__COMPACT_ID_BITS))

/*
 * A buffer set's geometry, what the fast paths read. Constant once the
 * buffer is mapped; lives in process-private memory, but everything it
 * points to is shared memory, whose contents are bounds-checked before
 * use. Byte by byte (x86-64, the only layout the assembly reads):
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
#define RT__FB_CPU_CTL 0
#define RT__FB_CPU_CTL_STRIDE 8
#define RT__FB_DATA 16
#define RT__FB_OFF_MAX 24
#define RT__FB_SUBBUF_SIZE 32
#define RT__FB_TSC_MAX 40
#define RT__FB_RSEQ_OFF 48
#define RT__FB_NR_CPUS 56
#define RT__FB_OFFSET_MASK 64

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

#if defined(__x86_64__)
RT__STATIC_ASSERT(offsetof(struct rt_fast_buf, cpu_ctl) == RT__FB_CPU_CTL &&
		  offsetof(struct rt_fast_buf, cpu_ctl_stride) == RT__FB_CPU_CTL_STRIDE &&
		  offsetof(struct rt_fast_buf, data) == RT__FB_DATA &&
		  offsetof(struct rt_fast_buf, off_max) == RT__FB_OFF_MAX &&
		  offsetof(struct rt_fast_buf, subbuf_size) == RT__FB_SUBBUF_SIZE &&
		  offsetof(struct rt_fast_buf, tsc_max) == RT__FB_TSC_MAX &&
		  offsetof(struct rt_fast_buf, rseq_off) == RT__FB_RSEQ_OFF &&
		  offsetof(struct rt_fast_buf, nr_cpus) == RT__FB_NR_CPUS &&
		  offsetof(struct rt_fast_buf, offset_mask) == RT__FB_OFFSET_MASK,
		  "struct rt_fast_buf: the offsets the assembly reads");
#endif

/* What a call site needs for one event: its buffer and its id there
 * (at most RT__COMPACT_ID_MAX). Published by the library in ev->fast. */
struct rt_fast_site {
	struct rt_fast_buf buf;
	uint32_t id;
	uint32_t pad;
};

#ifdef __cplusplus
}
#endif

#endif /* RINGTRACE_INTERNAL_FAST_LAYOUT_H */
