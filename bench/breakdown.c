/*
 * breakdown.c - where an enabled ringtrace event's nanoseconds go, in the
 * style of Gebai & Dagenais 2018 Figure 10 (call, clock, serialization, buffer). Each
 * case is the probe with one more piece than the previous one, measured
 * with the bench.h method:
 *
 *   rseq2      the two rseq critical sections alone (local CAS + local add
 *              on a per-CPU word), no clock, no buffer
 *   clock      rdtsc alone
 *   buf        rb_reserve + rb_commit, inlined, on a private buffer set
 *              (overwrite mode, 4 x 256 KiB per CPU, no reader), with a
 *              counter instead of the clock
 *   buf_clk    the same with the TSC
 *   inline     + the 4-byte CTF event header and the 4-byte payload: the
 *              library's two-section fast path (rb_reserve, rb_commit:
 *              events with strings, sequences or contexts), inlined
 *   calls      a call site of the old kind (payload serialized on the
 *              stack) and its library call, into a stub library
 *              (stub_probe.c) that does nothing: what recording inline
 *              saves
 *   lib        rt_event with libringtrace (recording when run with
 *              RINGTRACE_OUTPUT set, as micro_rt): the call site records
 *              by itself in one rseq section through its fast site
 *              (rt__fast_event, ringtrace/internal/fast.h)
 *   *_atomic   buf and inline with SMP atomics instead of rseq (the
 *              buffer's atomic mode: rb_smp_reserve, rb_smp_commit)
 *   smp3       atomic mode's three locked instructions alone (the
 *              announcement's add, the lock cmpxchg16b of {write_count,
 *              stamp}, the commit's add) on a private cache line, no
 *              clock, no buffer
 *   inline_s64, inline_q256
 *              the library's two-section path inlined (as `inline`) for
 *              a 64-byte string (strlen + copy) and a 256-byte sequence
 *              (length + copy): what recording such a shape costs
 *              without the call and the library's dispatch
 *   lib_s64, lib_q256
 *              the same events through rt_event and libringtrace (the
 *              library's path): lib_X - inline_X is the call and the
 *              dispatch
 *   inline_acct inline in a buffer set several programs write (the
 *              daemon's per-user buffers), on the program's own account
 *              (ringbuffer.h, accounts): announcement and reservation in
 *              two sections instead of one store
 *   floor      the least an rseq per-CPU buffer can do: one cache line of
 *              per-CPU state, an rseq local CAS to reserve 8 bytes, the
 *              TSC, the 4-byte header and payload, an rseq local add to
 *              commit; no sub-buffers (no switch, no overwrite table, no
 *              completion check). Not a tracer: the cost floor of the design
 *
 * Then, for the call site's event: clock = clock - empty, the section
 * around it = lib - clock; for the library's path: buffer = buf - empty,
 * clock = buf_clk - buf, serialization = inline - buf_clk. analyze.py
 * computes them from the medians.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>

#include <ringtrace/ringtrace.h>

#include "../src/ctf/ctf_packet.h"
#include "../src/ringbuffer/ringbuffer_api.h"
#include "bench.h"
#include "stub_probe.h"

/* `buf` has a buffer of its own, whose slow path reads the same counter:
 * its counter clock and the TSC of the other cases must not meet in one
 * buffer's last_tsc (a counter far behind the TSC looks like a clock gone
 * back, which the fast path leaves to the slow path). */
static struct rb rb_rseq, rb_counter, rb_atomic, rb_acct;
static struct ctf_stream_info stream;
static __thread uint64_t fake_clock;
static uint64_t rseq_word;
static uint64_t smp_words[4] __attribute__((aligned(64)));

static uint64_t clk_counter(void)
{
	return ++fake_clock;
}

static uint64_t clk_tsc(void)
{
	return bench_rdtsc();
}

/* The slow path's clock (sub-buffer switches). */
static uint64_t clk_tsc_ordered(void)
{
	__asm__ __volatile__("lfence" ::: "memory");
	return bench_rdtsc();
}

__attribute__((always_inline)) static inline void buf_only(struct rb *rb, uint64_t (*clk)(void), int32_t v,
			    bool serialize)
{
	struct rb_ctx ctx;
	ctx.payload_size = sizeof(v);
	ctx.hdr_compact = CTF_EVENT_HEADER_COMPACT;
	ctx.hdr_full = CTF_EVENT_HEADER_EXTENDED;
	if (__builtin_expect(rb_reserve(rb, &ctx, clk) != 0, 0))
		return;
	if (serialize) {
		char *p = ctx.r.addr + ctf_write_event_header(ctx.r.addr, 1, ctx.r.tsc,
							    ctx.full_tsc);
		memcpy(p, &v, sizeof(v));
	}
	rb_commit(rb, &ctx);
}

/* A string (str) or byte sequence of n bytes into rb_rseq, the library's
 * two-section path inlined. */
static char bd_str64[64];
static uint8_t bd_blob256[256];

__attribute__((always_inline)) static inline void buf_bytes(const void *src, uint32_t n, bool str)
{
	uint32_t len = str ? (uint32_t)strlen(src) + 1 : n;
	struct rb_ctx ctx;
	ctx.payload_size = str ? len : (uint32_t)sizeof(len) + len;
	ctx.hdr_compact = CTF_EVENT_HEADER_COMPACT;
	ctx.hdr_full = CTF_EVENT_HEADER_EXTENDED;
	if (__builtin_expect(rb_reserve(&rb_rseq, &ctx, clk_tsc) != 0, 0))
		return;
	char *p = ctx.r.addr + ctf_write_event_header(ctx.r.addr, 1, ctx.r.tsc, ctx.full_tsc);
	if (!str) {
		memcpy(p, &len, sizeof(len));
		p += sizeof(len);
	}
	memcpy(p, src, len);
	rb_commit(&rb_rseq, &ctx);
}

__attribute__((always_inline)) static inline void rseq_pair(void)
{
	const ptrdiff_t rs = rb_rseq_off();
	int32_t cpu = rb_rseq_cpu(rs);
	uint64_t w = __atomic_load_n(&rseq_word, __ATOMIC_RELAXED);
	if (rb_rseq_cmpeq_store(&rseq_word, w, w + 1, cpu, rs) == 0)
		rb_rseq_add(&rseq_word, 1, cpu, rs);
}

__attribute__((always_inline)) static inline void smp_three(void)
{
#if RB_HAVE_SMP_PAIR
	__atomic_fetch_add(&smp_words[2], 8, __ATOMIC_SEQ_CST);
	uint64_t lo = __atomic_load_n(&smp_words[0], __ATOMIC_RELAXED);
	uint64_t hi = __atomic_load_n(&smp_words[1], __ATOMIC_RELAXED);
	rb_cas_pair(&smp_words[0], &lo, &hi, lo + 8, hi + 1);
	__atomic_fetch_add(&smp_words[3], 8, __ATOMIC_SEQ_CST);
#endif
}

/* "floor": per-CPU state in one cache line, a 1 MiB buffer per CPU. */
struct floor_cpu {
	uint64_t write_count;
	uint64_t commit_count;
	char *base;
	uint64_t mask;
} __attribute__((aligned(64)));
#define FLOOR_BYTES (1u << 20)
static struct floor_cpu *floor_cpus;
static uint32_t floor_nr;

__attribute__((always_inline)) static inline void floor_event(int32_t v)
{
	const ptrdiff_t rs = rb_rseq_off();
	for (;;) {
		int32_t cpu = rb_rseq_cpu(rs);
		if (__builtin_expect((uint32_t)cpu >= floor_nr, 0))
			return;
		struct floor_cpu *f = &floor_cpus[cpu];
		uint64_t wc = __atomic_load_n(&f->write_count, __ATOMIC_RELAXED);
		uint64_t tsc = bench_rdtsc();
		if (rb_rseq_cmpeq_store(&f->write_count, wc, wc + 8, cpu, rs) != 0)
			continue;
		char *slot = f->base + (wc & f->mask);
		uint32_t h = 1u | (uint32_t)(tsc << 5);
		memcpy(slot, &h, sizeof(h));
		memcpy(slot + 4, &v, sizeof(v));
		if (rb_rseq_add(&f->commit_count, 8, cpu, rs) != 0)
			__atomic_fetch_add(&f->commit_count, 8, __ATOMIC_RELAXED);
		return;
	}
}

static int floor_init(void)
{
	if (!rb_rseq_usable())
		return 1;
	if (floor_cpus)
		return 0;
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&lock);
	if (!floor_cpus) {
		int n = get_nprocs_conf();
		uint32_t nr = (uint32_t)(n > 0 ? n : 1);
		struct floor_cpu *fc = aligned_alloc(64, nr * sizeof(*fc));
		for (uint32_t i = 0; fc && i < nr; i++) {
			fc[i] = (struct floor_cpu){ 0, 0, aligned_alloc(4096, FLOOR_BYTES),
						    FLOOR_BYTES - 1 };
			if (!fc[i].base) {
				fc = NULL;
				break;
			}
			memset(fc[i].base, 0, FLOOR_BYTES);
		}
		floor_nr = nr;
		__atomic_store_n(&floor_cpus, fc, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&lock);
	return floor_cpus ? 0 : -1;
}

static struct rt_event_desc stub_ev = { 1, RT_ABI_VERSION, "rtbench", "stub", 6,
					0, NULL, __FILE__, __LINE__, NULL, NULL };
static uint64_t clock_sink;

BENCH_DEFINE(rseq2, rseq_pair())
BENCH_DEFINE(smp3, smp_three())
BENCH_DEFINE(clock, __atomic_store_n(&clock_sink, bench_rdtsc(), __ATOMIC_RELAXED))
BENCH_DEFINE(buf, buf_only(&rb_counter, clk_counter, v, false))
BENCH_DEFINE(buf_clk, buf_only(&rb_rseq, clk_tsc, v, false))
BENCH_DEFINE(inline, buf_only(&rb_rseq, clk_tsc, v, true))
BENCH_DEFINE(buf_atomic, buf_only(&rb_atomic, clk_counter, v, false))
BENCH_DEFINE(inline_atomic, buf_only(&rb_atomic, clk_tsc, v, true))
BENCH_DEFINE(inline_acct, buf_only(&rb_acct, clk_tsc, v, true))
BENCH_DEFINE(calls, do {
	if (__atomic_load_n(&stub_ev.enabled, __ATOMIC_RELAXED)) {
		char b_[sizeof(v)];
		memcpy(b_, &v, sizeof(v));
		stub_record(&stub_ev, b_, sizeof(b_));
	}
} while (0))
BENCH_DEFINE(lib, rt_event(rtbench, p4, v, v))
BENCH_DEFINE(floor, floor_event(v))
BENCH_DEFINE(inline_s64, buf_bytes(bd_str64, 0, true))
BENCH_DEFINE(lib_s64, rt_event(rtbench, str64, s, (const char *)bd_str64))
BENCH_DEFINE(inline_q256, buf_bytes(bd_blob256, sizeof(bd_blob256), false))
BENCH_DEFINE(lib_q256, rt_event(rtbench, seq256, data, rt_bytes(bd_blob256, sizeof(bd_blob256))))

/* Cases that only exist with rseq: unavailable (not failed) without. */
static int need_rseq(void)
{
	return rb_rseq_usable() ? 0 : 1;
}

/* Atomic mode's 16-byte compare-and-swap: x86-64 only. */
static int need_pair(void)
{
	return RB_HAVE_SMP_PAIR ? 0 : 1;
}

static const struct bench_case cases[] = {
	BENCH_CASE(rseq2, need_rseq, "two rseq sections (local CAS + local add)"),
	BENCH_CASE(smp3, need_pair, "lock add + lock cmpxchg16b + lock add"),
	BENCH_CASE(clock, NULL, "rdtsc"),
	BENCH_CASE(buf, need_rseq, "rb_reserve + rb_commit inlined, counter clock"),
	BENCH_CASE(buf_clk, need_rseq, "rb_reserve + rb_commit inlined, TSC"),
	BENCH_CASE(inline, need_rseq, "buf_clk + CTF header + payload"),
	BENCH_CASE(buf_atomic, NULL, "buf with SMP atomics"),
	BENCH_CASE(inline_atomic, NULL, "inline with SMP atomics"),
	BENCH_CASE(inline_acct, need_rseq, "inline on a writer's account (per-user buffers)"),
	BENCH_CASE(calls, NULL, "call site + one call into a stub library"),
	BENCH_CASE(lib, NULL, "rt_event through libringtrace"),
	BENCH_CASE(floor, floor_init, "minimal rseq per-CPU buffer (cost floor)"),
	BENCH_CASE(inline_s64, need_rseq, "inline + a 64-byte string (strlen + copy)"),
	BENCH_CASE(lib_s64, NULL, "rt_event of a 64-byte string through libringtrace"),
	BENCH_CASE(inline_q256, need_rseq, "inline + a 256-byte sequence (length + copy)"),
	BENCH_CASE(lib_q256, NULL, "rt_event of a 256-byte sequence through libringtrace"),
};

static int make_rb(struct rb *rb, bool rseq, uint64_t (*clock)(void), uint32_t accts)
{
	int n = get_nprocs_conf();
	struct rb_config rc = {
		.subbuf_size = 256 * 1024,
		.num_subbuf = 4,
		.nr_cpus = (uint32_t)(n > 0 ? n : 1),
		.mode = RB_MODE_OVERWRITE,
		.tsc_bits = CTF_COMPACT_TSC_BITS,
		.subbuf_header_size = CTF_PACKET_HEADER_SIZE,
		.use_rseq = rseq,
		.nr_accts = accts,
	};
	struct rb_client client = {
		.subbuf_begin = ctf_packet_begin,
		.subbuf_end = ctf_packet_end,
		.clock_read = clock,
		.priv = &stream,
	};
	int ret = rb_create(rb, &rc, &client);
	if (ret == 0 && accts)
		ret = rb_use_acct(rb, 1);
	return ret;
}

int main(int argc, char **argv)
{
	memset(bd_str64, 'x', sizeof(bd_str64) - 1);
	memset(bd_blob256, 0xa5, sizeof(bd_blob256));
	stream.subbuf_size = 256 * 1024;
	if (make_rb(&rb_rseq, rb_rseq_usable(), clk_tsc_ordered, 0) < 0 ||
	    make_rb(&rb_counter, rb_rseq_usable(), clk_counter, 0) < 0 ||
	    make_rb(&rb_atomic, false, clk_tsc_ordered, 0) < 0 ||
	    make_rb(&rb_acct, rb_rseq_usable(), clk_tsc_ordered, 64) < 0) {
		fprintf(stderr, "breakdown: cannot create the buffers\n");
		return 1;
	}
	int ret = bench_main(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
	rb_destroy(&rb_rseq);
	rb_destroy(&rb_counter);
	rb_destroy(&rb_atomic);
	rb_destroy(&rb_acct);
	return ret;
}
