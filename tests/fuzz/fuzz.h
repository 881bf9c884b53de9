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

#include <pthread.h>
#include <stdbool.h>
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

/*
 * A scripted peer for the decoders that read a socket: a thread writes
 * data[0..size) (what the other side of a connection says) into fd, or
 * into the one connection it accepts on listen_fd (>= 0), reading and
 * dropping whatever the code under test sends back, then closes its
 * sending half and reads until the code under test closes its end.
 * fuzz_peer_start: 0 or -EAGAIN; fuzz_peer_join once the code under test
 * closed its end.
 */
struct fuzz_peer {
	int fd, listen_fd;
	const uint8_t *data;
	size_t size;
	pthread_t thread;
};
int fuzz_peer_start(struct fuzz_peer *p, int fd, int listen_fd, const uint8_t *data,
		    size_t size);
void fuzz_peer_join(struct fuzz_peer *p);

#endif
