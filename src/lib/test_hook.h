/*
 * test_hook.h - points on the library's event path where a test program
 * can hold a writer (exact stop, dead writers: tests/daemon/app_pause.c)
 * or record meanwhile (two sessions' shared clock read:
 * tests/daemon/app_pair.c).
 *
 * Compiled in only with RT_TEST_HOOKS, which only the test copy of the
 * library has (libringtrace_testhooks.so, tests/daemon/CMakeLists.txt):
 * in libringtrace.so RT_TEST_HOOK is nothing, so the event path has no
 * trace of it. In the test copy it calls rt__test_hook(point) when the
 * program defines it (a weak symbol).
 */
#ifndef RINGTRACE_LIB_TEST_HOOK_H
#define RINGTRACE_LIB_TEST_HOOK_H

enum rt_test_point {
	RT_TEST_BEFORE_RESERVE = 1,	/* buffer looked up, nothing reserved */
	RT_TEST_RESERVED = 2,		/* slot reserved, not yet written */
	RT_TEST_PAIR = 3,		/* two sessions' event: between the
					 * first buffer's section and the
					 * second's (record_pair_fast) */
};

#ifdef RT_TEST_HOOKS
extern void rt__test_hook(int point) __attribute__((weak, visibility("default")));
/* Nonzero in a program that wants the copies of the CPUs without AVX2
 * (parts_section.h) on this one: tests/integration/strparts.c. */
extern const int rt__test_no_avx2 __attribute__((weak, visibility("default")));
#define RT_TEST_NO_AVX2() (&rt__test_no_avx2 != NULL && rt__test_no_avx2)
#define RT_TEST_HOOK(point)                                                    \
	do {                                                                   \
		if (rt__test_hook)                                             \
			rt__test_hook(point);                                  \
	} while (0)
#else
#define RT_TEST_HOOK(point) ((void)0)
#define RT_TEST_NO_AVX2() 0
#endif

#endif /* RINGTRACE_LIB_TEST_HOOK_H */
