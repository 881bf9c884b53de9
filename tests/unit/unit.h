/*
 * unit.h - a tiny assertion helper shared by the unit tests.
 *
 * CHECK(cond, fmt, ...) counts one check; a failing one prints where and
 * why and is counted as failed (the test goes on). CHECK_EQ compares two
 * unsigned integers. unit_finish() prints "N passed, M failed" and returns
 * the exit status (0 only when nothing failed). Failures are printed at
 * most UNIT_MAX_REPORTS times so that a loop over thousands of cases does
 * not flood the output; all are counted.
 */
#ifndef RINGTRACE_TESTS_UNIT_H
#define RINGTRACE_TESTS_UNIT_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#define UNIT_MAX_REPORTS 50

static unsigned long unit_passed, unit_failed;
static const char *unit_case = "";

__attribute__((format(printf, 4, 5), unused)) static int
unit_check(int ok, const char *file, int line, const char *fmt, ...)
{
	if (ok) {
		unit_passed++;
		return 1;
	}
	unit_failed++;
	if (unit_failed <= UNIT_MAX_REPORTS) {
		va_list ap;
		fprintf(stderr, "FAIL %s:%d [%s]: ", file, line, unit_case);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	return 0;
}

#define CHECK(cond, ...) unit_check(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

#define CHECK_EQ(a, b)                                                         \
	({                                                                     \
		uint64_t unit_a_ = (uint64_t)(a), unit_b_ = (uint64_t)(b);      \
		unit_check(unit_a_ == unit_b_, __FILE__, __LINE__,             \
			   "%s == %s: 0x%" PRIx64 " != 0x%" PRIx64, #a, #b,     \
			   unit_a_, unit_b_);                                  \
	})

__attribute__((unused)) static int unit_finish(void)
{
	printf("%lu passed, %lu failed\n", unit_passed, unit_failed);
	return unit_failed ? 1 : 0;
}

#endif /* RINGTRACE_TESTS_UNIT_H */
