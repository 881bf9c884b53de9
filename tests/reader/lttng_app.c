/*
 * lttng_app - fires every event of lttng_tp.h a few times with values
 * derived from the loop index (the reader tests compare what rt_reader and
 * babeltrace2 decode, so any value will do as long as it varies). No empty
 * string: babeltrace2 2.0 shows the previous value of a text field that is
 * empty (so no empty string and no empty text sequence here).
 *
 *   lttng_app [ROUNDS]
 */
#define TRACEPOINT_CREATE_PROBES
#define TRACEPOINT_DEFINE
#include "lttng_tp.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 50;
	static const char *const words[] = { "e", "a", "hello", "tab\there", "quote\"\\",
					     "a longer string of text" };
	for (int i = 0; i < rounds; i++) {
		int32_t a[3] = { i, -i, i * 7 };
		uint16_t q[8] = { 1, 2, 3, 4, 5, 6, 7, (uint16_t)(65535 - i) };
		const char *w = words[i % 6];
		tracepoint(rtrtest, ints, i - rounds / 2);
		tracepoint(rtrtest, floats, i * 0.25 - 3);
		tracepoint(rtrtest, text, w, (unsigned)(1 + i % 2));
		tracepoint(rtrtest, arrays, a, q, (unsigned)(i % 9));
		tracepoint(rtrtest, enums, i % 25);
	}
	return 0;
}
