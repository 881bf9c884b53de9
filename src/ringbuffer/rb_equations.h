/*
 * rb_equations.h - the buffer-state equations (1)-(4) of Desnoyers & Dagenais 2012, section 4.2.
 *
 * Every counter is free-running and compared modulo 2^wbits: write_count
 * (wcnt) and read_count (rcnt) count bytes since the buffer was created,
 * commit_seq counts the bytes committed into one sub-buffer over all its
 * passes. Overflow of the word is part of the design, not an error.
 *
 * Notation (paper):  M_m^n(x) = x with only bits m..n-1 kept,
 *   |sbuf| = sub-buffer size = 2^sbfbits, |buf| = buffer size = 2^bfbits,
 *   nsbbits = bfbits - sbfbits (log2 of the number of sub-buffers).
 *
 * The equations are generated for any unsigned word type so the unit tests
 * can run them on 32-bit counters (the paper's 32-bit architectures) as well
 * as on the 64-bit counters the ring buffer uses.
 *
 * Concurrency: pure functions of their arguments; callable from anywhere.
 */
#ifndef RINGTRACE_RB_EQUATIONS_H
#define RINGTRACE_RB_EQUATIONS_H

#include <stdbool.h>
#include <stdint.h>

/* Geometry of one buffer, shifts precomputed once at creation. */
struct rb_geom {
	unsigned sbfbits;	/* log2 |sbuf| */
	unsigned bfbits;	/* log2 |buf| */
	unsigned nsbbits;	/* bfbits - sbfbits */
};

#define RB_DEFINE_EQUATIONS(sfx, T)                                            \
	/* M_m^wbits(x): clear the m low bits. */                              \
	static inline T rb_mask_high_##sfx(T x, unsigned m)                     \
	{                                                                      \
		return (T)(x & ~(((T)1 << m) - 1));                            \
	}                                                                      \
	/* M_0^n(x): keep the n low bits (n < wbits). */                       \
	static inline T rb_mask_low_##sfx(T x, unsigned n)                      \
	{                                                                      \
		return (T)(x & (((T)1 << n) - 1));                             \
	}                                                                      \
	/* Equation (1), Buffer Full: less than one whole sub-buffer is free.  \
	 * M_sbfbits(wcnt) - M_sbfbits(rcnt) >= |buf|, subtraction mod 2^w. */ \
	static inline bool rb_eq1_buffer_full_##sfx(const struct rb_geom *g,  \
						     T wcnt, T rcnt)           \
	{                                                                      \
		T produced = rb_mask_high_##sfx(wcnt, g->sbfbits);             \
		T consumed = rb_mask_high_##sfx(rcnt, g->sbfbits);             \
		return (T)(produced - consumed) >= ((T)1 << g->bfbits);        \
	}                                                                      \
	/* Equation (2), Sub-buffer Ready: the sub-buffer at rcnt is fully     \
	 * committed for the pass rcnt points to.                              \
	 * M_bfbits(rcnt) / nsb = M_0^(w-nsbbits)(rcommit - |sbuf|). */         \
	static inline bool rb_eq2_subbuf_ready_##sfx(const struct rb_geom *g, \
						      T rcnt, T rcommit)       \
	{                                                                      \
		unsigned w = sizeof(T) * 8;                                    \
		T lhs = (T)(rb_mask_high_##sfx(rcnt, g->bfbits) >> g->nsbbits); \
		T rhs = rb_mask_low_##sfx(                                     \
			(T)(rcommit - ((T)1 << g->sbfbits)), w - g->nsbbits); \
		return lhs == rhs;                                             \
	}                                                                      \
	/* Equation (3), Fully Committed: the sub-buffer wcnt points to has   \
	 * been completely committed for every earlier pass, so a writer may   \
	 * start a new pass in it.                                             \
	 * M_bfbits(wcnt) / nsb = M_0^(w-nsbbits)(wcommit). */                  \
	static inline bool rb_eq3_fully_committed_##sfx(                       \
		const struct rb_geom *g, T wcnt, T wcommit)                    \
	{                                                                      \
		unsigned w = sizeof(T) * 8;                                    \
		T lhs = (T)(rb_mask_high_##sfx(wcnt, g->bfbits) >> g->nsbbits); \
		return lhs == rb_mask_low_##sfx(wcommit, w - g->nsbbits);      \
	}                                                                      \
	/* Equation (4), Sub-buffer Written: the writer is still inside the    \
	 * sub-buffer the reader points to.                                    \
	 * M_sbfbits(wcnt) = M_sbfbits(rcnt). */                                \
	static inline bool rb_eq4_subbuf_written_##sfx(                        \
		const struct rb_geom *g, T wcnt, T rcnt)                       \
	{                                                                      \
		return rb_mask_high_##sfx(wcnt, g->sbfbits) ==                 \
		       rb_mask_high_##sfx(rcnt, g->sbfbits);                   \
	}                                                                      \
	/* The commit_seq value that marks pass `pass_of(offset)` of the       \
	 * sub-buffer holding `offset` as complete: (pass + 1) * |sbuf|,       \
	 * masked like the right side of (3). */                               \
	static inline T rb_commit_target_##sfx(const struct rb_geom *g,       \
					       T offset)                       \
	{                                                                      \
		unsigned w = sizeof(T) * 8;                                    \
		T pass = (T)(offset >> g->bfbits);                             \
		return rb_mask_low_##sfx((T)((T)(pass + 1) << g->sbfbits),     \
					 w - g->nsbbits);                      \
	}

RB_DEFINE_EQUATIONS(u64, uint64_t)
RB_DEFINE_EQUATIONS(u32, uint32_t)

#endif /* RINGTRACE_RB_EQUATIONS_H */
