/*
 * fuzz.h - what every harness in tests/fuzz defines: libFuzzer's entry
 * point, called with one input at a time. Each harness feeds the input to
 * the product's own decoder (nothing here re-implements one) and returns
 * 0; a crash, a sanitizer report, a leak or a failed assertion is the
 * finding. The same file builds for `make fuzz` (clang -fsanitize=fuzzer)
 * and for the corpus replay that make check runs (replay.c).
 */
#ifndef RINGTRACE_FUZZ_H
#define RINGTRACE_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A finding of the harness's own (an invariant of the decoder broken):
 * print it and abort, as a sanitizer does. */
#define FUZZ_CHECK(cond)                                                       \
	do {                                                                   \
		if (!(cond))                                                   \
			fuzz_fail(__FILE__, __LINE__, #cond);                  \
	} while (0)
void fuzz_fail(const char *file, int line, const char *cond) __attribute__((noreturn));

#endif
