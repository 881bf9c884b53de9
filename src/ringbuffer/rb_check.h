/*
 * rb_check.h - the ring buffer's invariant checks (RB_ASSERT).
 *
 * What it offers: RB_ASSERT(cond), a check of one invariant the design
 * states (ringbuffer.h, ringbuffer.c, docs/ring-buffer.md) at a place on
 * a slow path or the reader's side where it is cheap to test. Compiled in
 * only when RB_CHECKS is defined to 1: the unit test of the ring buffer
 * and the stress tests' build of libringtrace (tests/unit,
 * tests/stress). Everywhere else, the library's release build included,
 * RB_ASSERT expands to nothing, evaluates nothing, and the fast path is
 * the same code as without it.
 *
 * A failed check calls rb_check_hook (file, line, the condition's text).
 * Its default writes one line to stderr with write(2) and aborts, so that
 * the test fails where the invariant broke. A test that damages shared
 * memory on purpose (which is how a hostile program breaks invariants the
 * code must survive) replaces the hook to count the failures instead.
 *
 * Concurrency: RB_ASSERT runs wherever the code it checks runs (the slow
 * paths, from signal handlers too); the default hook is async-signal-safe
 * (write, abort). rb_check_hook is set by a test's main thread while no
 * buffer is in use.
 */
#ifndef RINGTRACE_RB_CHECK_H
#define RINGTRACE_RB_CHECK_H

#ifndef RB_CHECKS
#define RB_CHECKS 0
#endif

#if RB_CHECKS
extern void (*rb_check_hook)(const char *file, int line, const char *cond);
#define RB_ASSERT(cond)                                                        \
	((cond) ? (void)0 : rb_check_hook(__FILE__, __LINE__, #cond))
#else
/* sizeof: the condition stays type-checked but is never evaluated. */
#define RB_ASSERT(cond) ((void)sizeof(!(cond)))
#endif

#endif /* RINGTRACE_RB_CHECK_H */
