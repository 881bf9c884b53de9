/*
 * fastsite.c - events recorded by the call site itself (rt__fast_record,
 * ringtrace/internal/fast.h), for tests/integration/test_record.py:
 *  - ten events of a descriptor written out by hand, to see which path
 *    each call took: the call site records by itself when the library
 *    published a fast site for it (default options) and calls the library
 *    when it did not (--clock monotonic, RINGTRACE_RSEQ=0) or when built
 *    with RT_NO_INLINE (fastsite_noinline); either way the
 *    trace gets v = 0..9 in order. The count goes to stderr
 *    ("fastsite: inline K of 10");
 *  - then N rt_event calls (seq = 0..N-1, and its square), enough to fill
 *    many small sub-buffers: the inline commit's switch handling; for the
 *    first SIZES_N of them, also one event of each payload size that
 *    takes its own copy in rt__fast_event (0, 1, 3, 5, 28, 32 bytes, and
 *    33 and 60, copied by a loop), each field a function of seq that
 *    test_record.py recomputes.
 *
 * usage: fastsite N
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <ringtrace/ringtrace.h>

static void by_hand(void)
{
	static const struct rt_field_desc fields[] = { { "v", RT_TYPE_S32 }, { NULL, 0 } };
	static struct rt_event_desc ev = { 0, RT_ABI_VERSION, "fastsite", "by_hand",
					   RT_LOGLEVEL_INFO, 1, fields, __FILE__, __LINE__,
					   NULL, NULL };
	static struct rt_event_desc *const list[] = { &ev };
	rt__register(list, list + 1);
	int inline_calls = 0;
	for (int32_t v = 0; v < 10; v++) {
		if (!__atomic_load_n(&ev.enabled, __ATOMIC_RELAXED))
			continue;
		if (rt__fast_record(&ev, &v, sizeof(v)))
			inline_calls++;
		else
			rt__record(&ev, &v, sizeof(v));
	}
	rt__unregister(list, list + 1);
	if (__atomic_load_n(&ev.fast, __ATOMIC_RELAXED))
		fprintf(stderr, "fastsite: fast site left after unregistering\n");
	fprintf(stderr, "fastsite: inline %d of 10\n", inline_calls);
}

#define SIZES_N 2000

/* One event of each size; field k of event e holds (seq * 7 + k) cut to
 * the field's width. */
static void sizes(uint32_t i)
{
	const uint32_t v = i * 7;
	rt_event(fastsite, s0);
	rt_event(fastsite, s1, a, (uint8_t)v);
	rt_event(fastsite, s3, a, (uint8_t)v, b, (uint16_t)(v + 1));
	rt_event(fastsite, s5, a, v, b, (uint8_t)(v + 1));
	rt_event(fastsite, s28, a, v, b, v + 1, c, v + 2, d, v + 3, e, v + 4, f, v + 5,
		 g, v + 6);
	rt_event(fastsite, s32, a, (uint64_t)v, b, (uint64_t)v + 1, c, (uint64_t)v + 2,
		 d, (uint64_t)v + 3);
	rt_event(fastsite, s33, a, (uint64_t)v, b, (uint64_t)v + 1, c, (uint64_t)v + 2,
		 d, (uint64_t)v + 3, e, (uint8_t)(v + 4));
	rt_event(fastsite, s60, a, v, b, v + 1, c, v + 2, d, v + 3, e, v + 4, f, v + 5,
		 g, v + 6, h, v + 7, i, v + 8, j, v + 9, k, v + 10, l, v + 11, m, v + 12,
		 n, v + 13, o, v + 14);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	by_hand();
	for (long i = 0; i < n; i++) {
		rt_event(fastsite, seq, seq, (int64_t)i, sq, (uint64_t)i * (uint64_t)i);
		if (i < SIZES_N)
			sizes((uint32_t)i);
	}
	printf("done %ld\n", n);
	return 0;
}
