/*
 * rt_test.h - what the C tests share beyond unit.h's checks (library
 * rt_test_support): skipping a test the machine cannot run, pinning
 * threads to CPUs, and private temporary directories.
 *
 * A skipped test exits with RT_TEST_SKIP (77, which ctest reports as
 * skipped where the test sets SKIP_RETURN_CODE 77), the reason on stderr.
 * Not for the fast path: these allocate and make system calls.
 */
#ifndef RINGTRACE_TESTS_RT_TEST_H
#define RINGTRACE_TESTS_RT_TEST_H

#include <stdbool.h>

#define RT_TEST_SKIP 77

/* Print "skipped: REASON" to stderr and exit with RT_TEST_SKIP. */
__attribute__((noreturn, format(printf, 1, 2))) void rt_test_skip(const char *fmt, ...);

/* Whether the calling thread can be pinned to CPU `cpu` (the machine,
 * and the cpuset the test runs in, have it); its affinity is unchanged. */
bool rt_test_cpu_usable(int cpu);

/* Pin the calling thread to CPU `cpu`. A machine, or a cpuset, without
 * that CPU skips the test (rt_test_skip); any other failure ends it with
 * exit status 2. */
void rt_test_pin_cpu(int cpu);

/* Pin the calling thread to the n-th (from 0) CPU it may run on; returns
 * that CPU, or -1 when it may run on fewer than n + 1 CPUs or pinning
 * failed (the thread's affinity is unchanged then). */
int rt_test_pin_nth_cpu(int n);

/* A new directory, mode 0700, under $TMPDIR (or /tmp), named
 * TAG.XXXXXX; returns its path (malloc'd). Failure ends the test with
 * exit status 2. */
char *rt_test_tmpdir(const char *tag);

/* Remove `dir` and everything under it, without following links.
 * Returns 0 or a negative errno. */
int rt_test_rmtree(const char *dir);

#endif /* RINGTRACE_TESTS_RT_TEST_H */
