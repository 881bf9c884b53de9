/*
 * fastsite.c - events recorded by the call site itself (rt__fast_record,
 * ringtrace_fast.h), for tests/integration/test_record.py:
 *  - ten events of a descriptor written out by hand, to see which path
 *    each call took: the call site records by itself when the library
 *    published a fast site for it (default options) and calls the library
 *    when it did not (--clock monotonic, RINGTRACE_RSEQ=0) or when built
 *    with RT_NO_INLINE (fastsite_noinline); either way the
 *    trace gets v = 0..9 in order. The count goes to stderr
 *    ("fastsite: inline K of 10");
 *  - then N rt_event calls (seq = 0..N-1, and its square), enough to fill
 *    many small sub-buffers: the inline commit's switch handling.
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

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	by_hand();
	for (long i = 0; i < n; i++)
		rt_event(fastsite, seq, seq, (int64_t)i, sq, (uint64_t)i * (uint64_t)i);
	printf("done %ld\n", n);
	return 0;
}
