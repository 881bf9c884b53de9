/*
 * app_pair.c - an event two sessions record, with another event recorded
 * between its two buffers' sections (src/lib/test_hook.h, RT_TEST_PAIR:
 * it links with the tests' copy of the library): the first buffer's
 * section reads the clock for both, and the second's must not reuse that
 * reading once something was reserved there since (pair_section.h).
 *
 * usage: app_pair N
 * On CPU 0 only, records pair:out { seq = 0..N-1 }; between the two
 * sections of each that takes that path (not the first, which opens the
 * packets, nor one at a sub-buffer's end), the hook records pair:in
 * { seq } (both buffers), so session one holds out 0, out 1, in 1...
 * and session two out 0, in 1, out 1..., each with timestamps in that
 * order. Prints "hooked" and the seqs whose hook ran on stdout.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <ringtrace/ringtrace.h>

#include "../../src/lib/test_hook.h"

static uint64_t current;
static bool inside;

/* The tests' library calls this at each hook point (exported: the build
 * hides symbols by default). */
__attribute__((visibility("default"))) void rt__test_hook(int point);
void rt__test_hook(int point)
{
	if (point != RT_TEST_PAIR || inside)
		return;
	inside = true;
	printf(" %llu", (unsigned long long)current);
	rt_event(pair, in, seq, current);
	inside = false;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: app_pair N\n");
		return 2;
	}
	unsigned long n = strtoul(argv[1], NULL, 10);
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	if (sched_setaffinity(0, sizeof(one), &one) < 0) {
		perror("sched_setaffinity");
		return 1;
	}
	printf("hooked");
	for (uint64_t seq = 0; seq < n; seq++) {
		current = seq;
		rt_event(pair, out, seq, seq);
	}
	printf("\n");
	return 0;
}
