/*
 * test_equations.c - the buffer-state equations (1)-(4) and
 * rb_commit_target of src/ringbuffer/rb_equations.h, for both the 32-bit
 * and the 64-bit instantiation, on several geometries.
 *
 * Method: every counter is modelled as an unbounded position (an unsigned
 * __int128: bytes since "the beginning of time"), and the expected answer
 * is computed from that position in whole sub-buffers and passes:
 *
 *   eq1 Buffer Full       sub-buffers produced - consumed >= N
 *   eq2 Sub-buffer Ready  the sub-buffer rcnt points into has exactly
 *                         pass(rcnt) + 1 complete passes
 *   eq3 Fully Committed   the sub-buffer wcnt points into has exactly
 *                         pass(wcnt) complete passes
 *   eq4 Sub-buffer Written wcnt and rcnt are in the same sub-buffer
 *   commit target         a commit count equals the target of an offset
 *                         iff it says "pass(offset) is complete"
 *
 * where a sub-buffer's commit count after k complete passes (plus `part`
 * bytes of the next one) is k * S + part. The function under test only
 * sees the position truncated to the word (mod 2^32 or 2^64), so the same
 * scenario placed far from the wrap, just across it (wcnt wrapped, rcnt
 * not), or after the commit counters themselves wrapped must give the
 * same answers. Each scenario is run at many such bases and the answers
 * are compared with the expectation and with each other.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ringbuffer/rb_equations.h"
#include "unit.h"

typedef unsigned __int128 u128;

/* One instantiation (u32 or u64) behind a common 64-bit interface: the
 * wrappers truncate their arguments to the word, which is exactly the
 * modulo the counters live in. */
struct eqset {
	const char *name;
	unsigned w;
	bool (*eq1)(const struct rb_geom *g, uint64_t wcnt, uint64_t rcnt);
	bool (*eq2)(const struct rb_geom *g, uint64_t rcnt, uint64_t rcommit);
	bool (*eq3)(const struct rb_geom *g, uint64_t wcnt, uint64_t wcommit);
	bool (*eq4)(const struct rb_geom *g, uint64_t wcnt, uint64_t rcnt);
	uint64_t (*target)(const struct rb_geom *g, uint64_t offset);
	uint64_t (*mask_low)(uint64_t x, unsigned n);
	uint64_t (*mask_high)(uint64_t x, unsigned m);
};

#define WRAP(sfx, T)                                                           \
	static bool w_eq1_##sfx(const struct rb_geom *g, uint64_t a,            \
				uint64_t b)                                    \
	{                                                                      \
		return rb_eq1_buffer_full_##sfx(g, (T)a, (T)b);                \
	}                                                                      \
	static bool w_eq2_##sfx(const struct rb_geom *g, uint64_t a,            \
				uint64_t b)                                    \
	{                                                                      \
		return rb_eq2_subbuf_ready_##sfx(g, (T)a, (T)b);               \
	}                                                                      \
	static bool w_eq3_##sfx(const struct rb_geom *g, uint64_t a,            \
				uint64_t b)                                    \
	{                                                                      \
		return rb_eq3_fully_committed_##sfx(g, (T)a, (T)b);            \
	}                                                                      \
	static bool w_eq4_##sfx(const struct rb_geom *g, uint64_t a,            \
				uint64_t b)                                    \
	{                                                                      \
		return rb_eq4_subbuf_written_##sfx(g, (T)a, (T)b);             \
	}                                                                      \
	static uint64_t w_target_##sfx(const struct rb_geom *g, uint64_t o)     \
	{                                                                      \
		return rb_commit_target_##sfx(g, (T)o);                        \
	}                                                                      \
	static uint64_t w_mlow_##sfx(uint64_t x, unsigned n)                    \
	{                                                                      \
		return rb_mask_low_##sfx((T)x, n);                             \
	}                                                                      \
	static uint64_t w_mhigh_##sfx(uint64_t x, unsigned m)                   \
	{                                                                      \
		return rb_mask_high_##sfx((T)x, m);                            \
	}

WRAP(u32, uint32_t)
WRAP(u64, uint64_t)

static const struct eqset sets[] = {
	{ "u32", 32, w_eq1_u32, w_eq2_u32, w_eq3_u32, w_eq4_u32, w_target_u32,
	  w_mlow_u32, w_mhigh_u32 },
	{ "u64", 64, w_eq1_u64, w_eq2_u64, w_eq3_u64, w_eq4_u64, w_target_u64,
	  w_mlow_u64, w_mhigh_u64 },
};

struct geometry {
	unsigned sbfbits, nsbbits;
};

static const struct geometry geoms[] = {
	{ 12, 2 },	/* 4 KiB x 4 */
	{ 12, 1 },	/* 4 KiB x 2 */
	{ 16, 4 },	/* 64 KiB x 16 */
	{ 13, 3 },	/* 8 KiB x 8 */
	{ 20, 3 },	/* 1 MiB x 8 */
};

static char case_name[160];

/* Word truncation of an unbounded position. */
static uint64_t trunc_w(u128 x, unsigned w)
{
	return (uint64_t)(x & ((((u128)1) << w) - 1));
}

static uint64_t xs_state = 0x9e3779b97f4a7c15ULL;
static uint64_t xrand(void)
{
	uint64_t x = xs_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return xs_state = x;
}

/*
 * Bases: unbounded positions at which every scenario is replayed. All are
 * multiples of |buf| so that a scenario (positions relative to the base)
 * has the same sub-buffer/pass structure at every base. Chosen so that the
 * scenario's counters lie far from the wrap, straddle the 2^w wrap of
 * wcnt/rcnt, and straddle the wrap of the per-sub-buffer commit counters
 * (which happens when the position reaches N * 2^w).
 */
#define MAX_BASES 16
static unsigned make_bases(unsigned w, const struct geometry *ge, u128 *b)
{
	u128 M = ((u128)1) << w;
	u128 buf = ((u128)1) << (ge->sbfbits + ge->nsbbits);
	u128 N = ((u128)1) << ge->nsbbits;
	unsigned n = 0;
	b[n++] = 0;				/* the first pass */
	b[n++] = 5 * buf;			/* far from any wrap */
	b[n++] = M / 2;				/* far from any wrap */
	b[n++] = M - 1 * buf;			/* rcnt before, wcnt after 2^w */
	b[n++] = M - 2 * buf;
	b[n++] = M - 3 * buf;
	b[n++] = M;				/* exactly at the wrap */
	b[n++] = 2 * M - 2 * buf;		/* second word wrap */
	b[n++] = N * M - 2 * buf;		/* commit counters wrap too */
	b[n++] = N * M - 1 * buf;
	b[n++] = N * M + 3 * buf;
	b[n++] = 3 * N * M - 2 * buf;
	/* random bases, aligned to the buffer */
	for (int i = 0; i < 4; i++) {
		u128 r = ((u128)xrand() << 64 | xrand()) % (4 * N * M);
		b[n++] = r - r % buf;
	}
	return n;
}

/* Offsets inside a sub-buffer worth testing. */
static uint64_t in_sb_offsets(uint64_t S, unsigned i)
{
	const uint64_t v[] = { 0, 1, S / 2, S - 1 };
	return v[i];
}
#define N_IN_SB 4

/* Record of answers, to compare one base's with the first base's. */
#define MAX_ANS 8192
struct answers {
	unsigned n;
	bool a[MAX_ANS];
};

static void ans_push(struct answers *s, bool v)
{
	if (s->n < MAX_ANS)
		s->a[s->n] = v;
	s->n++;
}

static void compare_answers(const struct answers *ref, const struct answers *got,
			    const char *eq, unsigned base_i)
{
	CHECK(ref->n == got->n, "%s base #%u: %u answers vs %u", eq, base_i,
	      got->n, ref->n);
	unsigned n = ref->n < got->n ? ref->n : got->n;
	if (n > MAX_ANS)
		n = MAX_ANS;
	unsigned diff = 0;
	for (unsigned i = 0; i < n; i++)
		diff += ref->a[i] != got->a[i];
	CHECK(diff == 0, "%s base #%u: %u answers differ from base #0", eq,
	      base_i, diff);
}

/* ---- masks ------------------------------------------------------------ */

static void test_masks(const struct eqset *e)
{
	snprintf(case_name, sizeof(case_name), "%s masks", e->name);
	unit_case = case_name;
	for (int i = 0; i < 2000; i++) {
		uint64_t x = xrand();
		if (e->w == 32)
			x &= 0xffffffffu;
		unsigned k = (unsigned)(xrand() % e->w);	/* 0..w-1 */
		uint64_t p = 1ULL << k;
		CHECK(e->mask_low(x, k) == x % p, "mask_low(%#lx,%u)",
		      (unsigned long)x, k);
		CHECK(e->mask_high(x, k) == x - x % p, "mask_high(%#lx,%u)",
		      (unsigned long)x, k);
	}
	/* Extremes. */
	uint64_t ones = e->w == 32 ? 0xffffffffULL : UINT64_MAX;
	CHECK_EQ(e->mask_high(ones, 0), ones);
	CHECK_EQ(e->mask_low(ones, 0), 0);
	CHECK_EQ(e->mask_low(ones, e->w - 1), ones >> 1);
	CHECK_EQ(e->mask_high(ones, e->w - 1), 1ULL << (e->w - 1));
}

/* ---- equation (1): buffer full ----------------------------------------- */

static void test_eq1(const struct eqset *e, const struct geometry *ge,
		     const struct rb_geom *g)
{
	u128 bases[MAX_BASES];
	unsigned nb = make_bases(e->w, ge, bases);
	uint64_t S = 1ULL << ge->sbfbits, N = 1ULL << ge->nsbbits;
	static struct answers ref, cur;
	for (unsigned bi = 0; bi < nb; bi++) {
		cur.n = 0;
		/* rcnt: k sub-buffers after the base plus an in-sub-buffer
		 * offset; wcnt = rcnt + a distance of d sub-buffers +- bytes. */
		for (uint64_t rk = 0; rk < 2 * N; rk++)
			for (unsigned ri = 0; ri < N_IN_SB; ri++)
				for (uint64_t dk = 0; dk <= N + 2; dk++)
					for (int de = -2; de <= 2; de++) {
						if (dk == 0 && de < 0)
							continue;
						u128 R = bases[bi] + rk * S +
							 in_sb_offsets(S, ri);
						u128 W = R + dk * S + (u128)(__int128)de;
						/* Sub-buffers produced minus
						 * consumed, counted whole. */
						u128 diff = W / S - R / S;
						bool exp = diff >= N;
						bool got = e->eq1(g, trunc_w(W, e->w),
								  trunc_w(R, e->w));
						CHECK(got == exp,
						      "eq1 base#%u R=+%lu W-R=%ld*S%+d: got %d",
						      bi, (unsigned long)(R - bases[bi]),
						      (long)dk, de, got);
						ans_push(&cur, got);
					}
		if (bi == 0)
			ref = cur;
		else
			compare_answers(&ref, &cur, "eq1", bi);
	}
	/* A few hand-written cases with word-level values (u64 & u32):
	 * rcnt just before the wrap, wcnt just past it. */
	uint64_t ones = e->w == 32 ? 0xffffffffULL : UINT64_MAX;
	uint64_t r = (ones - 2 * S + 1);	/* 2 sub-buffers before wrap */
	if (N > 2)
		CHECK(!e->eq1(g, 0, r), "eq1: 2 sub-buffers ahead across the wrap");
	CHECK(e->eq1(g, (N - 2) * S, r) == true,
	      "eq1: N sub-buffers ahead across the wrap");
	CHECK(e->eq1(g, (N - 2) * S - 1, r) == false,
	      "eq1: N-1 sub-buffers (+S-1 bytes) ahead across the wrap");
}

/* ---- equation (2): sub-buffer ready ------------------------------------ */

static void test_eq2(const struct eqset *e, const struct geometry *ge,
		     const struct rb_geom *g)
{
	u128 bases[MAX_BASES];
	unsigned nb = make_bases(e->w, ge, bases);
	uint64_t S = 1ULL << ge->sbfbits, N = 1ULL << ge->nsbbits;
	u128 buf = (u128)S * N;
	static struct answers ref, cur;
	for (unsigned bi = 0; bi < nb; bi++) {
		cur.n = 0;
		for (uint64_t rk = 0; rk < 3 * N; rk++)
			for (unsigned ri = 0; ri < N_IN_SB; ri++) {
				u128 R = bases[bi] + rk * S + in_sb_offsets(S, ri);
				u128 p = R / buf;	/* pass rcnt is in */
				/* commit count of that sub-buffer: k whole
				 * passes and `part` bytes of the next. */
				for (int dk = -2; dk <= 2; dk++)
					for (unsigned pi = 0; pi < N_IN_SB; pi++) {
						if ((__int128)p + 1 + dk < 0)
							continue;
						u128 k = p + 1 + (u128)(__int128)dk;
						uint64_t part = in_sb_offsets(S, pi);
						u128 C = k * S + part;
						bool exp = k == p + 1 && part == 0;
						bool got = e->eq2(g, trunc_w(R, e->w),
								  trunc_w(C, e->w));
						CHECK(got == exp,
						      "eq2 base#%u R=+%lu passes=p%+d part=%lu: got %d",
						      bi, (unsigned long)(R - bases[bi]),
						      dk + 1, (unsigned long)part, got);
						if (bi != 0)	/* base 0 skips p-1 */
							ans_push(&cur, got);
					}
			}
		if (bi == 1)
			ref = cur;
		else if (bi > 1)
			compare_answers(&ref, &cur, "eq2", bi);
	}
}

/* ---- equation (3): fully committed -------------------------------------- */

static void test_eq3(const struct eqset *e, const struct geometry *ge,
		     const struct rb_geom *g)
{
	u128 bases[MAX_BASES];
	unsigned nb = make_bases(e->w, ge, bases);
	uint64_t S = 1ULL << ge->sbfbits, N = 1ULL << ge->nsbbits;
	u128 buf = (u128)S * N;
	static struct answers ref, cur;
	for (unsigned bi = 0; bi < nb; bi++) {
		cur.n = 0;
		for (uint64_t wk = 0; wk < 3 * N; wk++)
			for (unsigned wi = 0; wi < N_IN_SB; wi++) {
				u128 W = bases[bi] + wk * S + in_sb_offsets(S, wi);
				u128 p = W / buf;
				for (int dk = -2; dk <= 2; dk++)
					for (unsigned pi = 0; pi < N_IN_SB; pi++) {
						if ((__int128)p + dk < 0)
							continue;
						u128 k = p + (u128)(__int128)dk;
						uint64_t part = in_sb_offsets(S, pi);
						u128 C = k * S + part;
						/* The sub-buffer may start pass p
						 * iff passes 0..p-1 are complete. */
						bool exp = k == p && part == 0;
						bool got = e->eq3(g, trunc_w(W, e->w),
								  trunc_w(C, e->w));
						CHECK(got == exp,
						      "eq3 base#%u W=+%lu passes=p%+d part=%lu: got %d",
						      bi, (unsigned long)(W - bases[bi]), dk,
						      (unsigned long)part, got);
						if (bi != 0)
							ans_push(&cur, got);
					}
			}
		if (bi == 1)
			ref = cur;
		else if (bi > 1)
			compare_answers(&ref, &cur, "eq3", bi);
	}
}

/* ---- equation (4): sub-buffer written ----------------------------------- */

static void test_eq4(const struct eqset *e, const struct geometry *ge,
		     const struct rb_geom *g)
{
	u128 bases[MAX_BASES];
	unsigned nb = make_bases(e->w, ge, bases);
	uint64_t S = 1ULL << ge->sbfbits, N = 1ULL << ge->nsbbits;
	static struct answers ref, cur;
	for (unsigned bi = 0; bi < nb; bi++) {
		cur.n = 0;
		for (uint64_t rk = 0; rk < 2 * N; rk++)
			for (unsigned ri = 0; ri < N_IN_SB; ri++)
				for (uint64_t dk = 0; dk <= N + 1; dk++)
					for (int de = -2; de <= 2; de++) {
						if (dk == 0 && de < 0)
							continue;
						u128 R = bases[bi] + rk * S +
							 in_sb_offsets(S, ri);
						u128 W = R + dk * S + (u128)(__int128)de;
						bool exp = W / S == R / S;
						bool got = e->eq4(g, trunc_w(W, e->w),
								  trunc_w(R, e->w));
						CHECK(got == exp,
						      "eq4 base#%u R=+%lu W-R=%lu*S%+d: got %d",
						      bi, (unsigned long)(R - bases[bi]),
						      (unsigned long)dk, de, got);
						ans_push(&cur, got);
					}
		if (bi == 0)
			ref = cur;
		else
			compare_answers(&ref, &cur, "eq4", bi);
	}
	/* rcnt just before the wrap, wcnt just past it. */
	uint64_t ones = e->w == 32 ? 0xffffffffULL : UINT64_MAX;
	CHECK(!e->eq4(g, 0, ones), "eq4 across wrap, adjacent sub-buffers");
	CHECK(e->eq4(g, ones, ones - S + 1), "eq4 last sub-buffer before wrap");
	CHECK(e->eq4(g, S - 1, 0), "eq4 first sub-buffer after wrap");
}

/* ---- rb_commit_target, and its agreement with (2) and (3) --------------- */

static void test_target(const struct eqset *e, const struct geometry *ge,
			const struct rb_geom *g)
{
	u128 bases[MAX_BASES];
	unsigned nb = make_bases(e->w, ge, bases);
	uint64_t S = 1ULL << ge->sbfbits, N = 1ULL << ge->nsbbits;
	u128 buf = (u128)S * N;
	unsigned cbits = e->w - ge->nsbbits;
	static struct answers ref, cur;
	for (unsigned bi = 0; bi < nb; bi++) {
		cur.n = 0;
		for (uint64_t ok = 0; ok < 3 * N; ok++)
			for (unsigned oi = 0; oi < N_IN_SB; oi++) {
				u128 O = bases[bi] + ok * S + in_sb_offsets(S, oi);
				u128 p = O / buf;
				uint64_t t = e->target(g, trunc_w(O, e->w));
				/* The target fits the masked commit count. */
				CHECK(e->mask_low(t, cbits) == t,
				      "target has bits above w-nsbbits");
				/* Same pass -> same target, for every
				 * sub-buffer of the pass. */
				u128 O0 = p * buf;
				CHECK(t == e->target(g, trunc_w(O0, e->w)),
				      "target differs within one pass");
				/* The next pass's target is one sub-buffer
				 * further (modulo the masked width). */
				uint64_t tn = e->target(g, trunc_w(O + buf, e->w));
				CHECK(e->mask_low(tn - t, cbits) == S,
				      "target(next pass) - target != S");
				for (int dk = -2; dk <= 2; dk++)
					for (unsigned pi = 0; pi < N_IN_SB; pi++) {
						if ((__int128)p + 1 + dk < 0)
							continue;
						u128 k = p + 1 + (u128)(__int128)dk;
						uint64_t part = in_sb_offsets(S, pi);
						u128 C = k * S + part;
						uint64_t c = trunc_w(C, e->w);
						bool exp = k == p + 1 && part == 0;
						bool got = e->mask_low(c, cbits) == t;
						CHECK(got == exp,
						      "target base#%u O=+%lu count=(p%+d)*S+%lu: got %d",
						      bi, (unsigned long)(O - bases[bi]),
						      dk + 1, (unsigned long)part, got);
						if (bi != 0)
							ans_push(&cur, got);
						if (!exp)
							continue;
						/* A count that reaches the target
						 * makes (2) true for the reader at
						 * that pass and (3) true for the
						 * writer entering the next pass. */
						u128 R = O - O % S;
						CHECK(e->eq2(g, trunc_w(R, e->w), c),
						      "eq2 false at the commit target");
						CHECK(e->eq3(g, trunc_w(R + buf, e->w), c),
						      "eq3 false for the next pass at the target");
						CHECK(!e->eq3(g, trunc_w(R, e->w), c),
						      "eq3 true for the completed pass itself");
					}
			}
		if (bi == 1)
			ref = cur;
		else if (bi > 1)
			compare_answers(&ref, &cur, "target", bi);
	}
	/* Concrete values: offset 0 -> S; the first pass past the 2^w wrap
	 * of the offset is pass 0 again (target S); the last pass before it
	 * is target 0 (the masked (2^(w-bfbits)) * S). */
	uint64_t ones = e->w == 32 ? 0xffffffffULL : UINT64_MAX;
	CHECK_EQ(e->target(g, 0), S);
	CHECK_EQ(e->target(g, ones), 0);
	CHECK_EQ(e->target(g, ones - (uint64_t)buf), e->mask_low(ones, cbits) + 1 - S);
}

/* A walk through a realistic history: one sub-buffer's commit count and
 * the counters moving together through more than one 2^w wrap (u32 only:
 * 2^32 bytes is cheap to walk sub-buffer by sub-buffer in a small
 * geometry). Every step checks all four equations against the model. */
static void test_walk_u32(const struct eqset *e, const struct geometry *ge,
			  const struct rb_geom *g)
{
	uint64_t S = 1ULL << ge->sbfbits, N = 1ULL << ge->nsbbits;
	if (e->w != 32)
		return;
	/* The commit counts of all N sub-buffers, as word values, as the
	 * ring buffer keeps them (they start at 0 for counters at 0). */
	uint32_t commit[16] = { 0 };
	u128 wpos = 0;		/* unbounded write position (sub-buffer start) */
	uint64_t steps = (3ULL << 32) / S;	/* three wraps of the word */
	if (steps > 4000000)
		steps = 4000000;
	/* Start the walk at 2^32 - 5 buffers, to reach wraps quickly: the
	 * commit counts are then (pass) * S for every sub-buffer. */
	u128 start = ((u128)1 << 32) * N - 5 * (u128)S * N;
	wpos = start;
	for (uint64_t i = 0; i < N; i++)
		commit[i] = (uint32_t)((start / (S * N)) * S);
	uint64_t bad = 0;
	for (uint64_t st = 0; st < steps; st++) {
		uint32_t wc = (uint32_t)wpos;
		uint32_t idx = (uint32_t)((wpos / S) % N);
		/* writer may enter: previous pass complete */
		bad += !e->eq3(g, wc, commit[idx]);
		/* reader one buffer behind would find the buffer full when
		 * the writer enters; one sub-buffer less and it is not */
		u128 r_full = wpos - (u128)N * S;
		bad += !e->eq1(g, wc, (uint32_t)r_full);
		bad += e->eq1(g, wc, (uint32_t)(r_full + S));
		/* sub-buffer not ready before the pass completes */
		bad += e->eq2(g, wc, commit[idx]);
		/* write the whole sub-buffer in three commits */
		commit[idx] += (uint32_t)(S / 4);
		bad += e->eq2(g, wc, commit[idx]);
		commit[idx] += (uint32_t)(S / 2);
		commit[idx] += (uint32_t)(S / 4);
		/* now ready for the reader at that sub-buffer, and not
		 * "written" once the writer moves on */
		bad += !e->eq2(g, wc, commit[idx]);
		bad += e->eq4(g, (uint32_t)(wpos + S), wc);
		bad += !e->eq4(g, (uint32_t)(wpos + S - 1), wc);
		bad += (e->mask_low(commit[idx], 32 - ge->nsbbits) !=
			e->target(g, wc));
		wpos += S;
	}
	CHECK(bad == 0, "u32 walk over %lu sub-buffers: %lu wrong answers",
	      (unsigned long)steps, (unsigned long)bad);
}

int main(void)
{
	for (size_t si = 0; si < sizeof(sets) / sizeof(sets[0]); si++) {
		const struct eqset *e = &sets[si];
		test_masks(e);
		for (size_t gi = 0; gi < sizeof(geoms) / sizeof(geoms[0]); gi++) {
			const struct geometry *ge = &geoms[gi];
			struct rb_geom g = {
				.sbfbits = ge->sbfbits,
				.bfbits = ge->sbfbits + ge->nsbbits,
				.nsbbits = ge->nsbbits,
			};
			snprintf(case_name, sizeof(case_name), "%s %lu x %lu",
				 e->name, 1UL << ge->sbfbits, 1UL << ge->nsbbits);
			unit_case = case_name;
			test_eq1(e, ge, &g);
			test_eq2(e, ge, &g);
			test_eq3(e, ge, &g);
			test_eq4(e, ge, &g);
			test_target(e, ge, &g);
			test_walk_u32(e, ge, &g);
		}
	}
	return unit_finish();
}
