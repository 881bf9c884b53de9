/*
 * callsite.c - call sites of one call-site ABI version, for test_abi.py.
 * Built once against each frozen header under tests/abi/vN (what
 * programs compiled against that release have in them) and once against
 * include/, all linked with the current libringtrace:
 *  - N events of each kind, field k of event i a function of i that
 *    test_abi.py recomputes: fixed-size fields of every width, no field,
 *    a 64-byte payload, a string and a byte sequence;
 *  - a descriptor written out by hand (abi:by_hand, v = 0..9) inside a
 *    struct with a canary after it: a library that wrote past the end of
 *    an old descriptor (`fast`, which versions 1 and 2 lack) changes the
 *    canary; for versions with `fast`, the library must leave it NULL
 *    unless the call site's inline layout is the current one;
 *  - version 1 only: two events reserved one inside the other
 *    (rt__reserve, rt__reserve, rt__commit, rt__commit), as a signal
 *    handler's event is inside the one it interrupted (abi:outer then
 *    abi:inner in the first buffer: buffer order is reservation order;
 *    in a second one, inner is committed, and so reserved, first).
 * Prints "abi N: done" on stdout; anything wrong goes to stderr with exit
 * status 1.
 *
 * usage: callsite N
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ringtrace/ringtrace.h>

#define CANARY 0x5a17c0ffee5a17c0ull

static const struct rt_field_desc hand_fields[] = { { "v", RT_TYPE_U32 }, { NULL, 0 } };
static struct {
	struct rt_event_desc d;
	uint64_t canary;
} hand = {
	.d = { .abi = RT_ABI_VERSION, .provider = "abi", .name = "by_hand",
	       .loglevel = RT_LOGLEVEL_INFO, .nr_fields = 1, .fields = hand_fields,
	       .file = __FILE__, .line = __LINE__ },
	.canary = CANARY,
};

static int by_hand(void)
{
	struct rt_event_desc *const list[] = { &hand.d };
	rt__register(list, list + 1);
	int recorded = 0;
	for (uint32_t v = 0; v < 10; v++) {
		if (!__atomic_load_n(&hand.d.enabled, __ATOMIC_RELAXED))
			continue;
		rt__record(&hand.d, &v, sizeof(v));
		recorded++;
	}
	int bad = 0;
#if RT_ABI_VERSION >= 3
	if (RT_ABI_VERSION != RINGTRACE_CURRENT_ABI &&
	    __atomic_load_n(&hand.d.fast, __ATOMIC_RELAXED)) {
		fprintf(stderr, "abi %d: the library published a fast site\n", RT_ABI_VERSION);
		bad = 1;
	}
#endif
	rt__unregister(list, list + 1);
	if (hand.canary != CANARY) {
		fprintf(stderr, "abi %d: the library wrote past the descriptor\n", RT_ABI_VERSION);
		bad = 1;
	}
	if (recorded != 10) {
		fprintf(stderr, "abi %d: by_hand enabled %d times of 10\n", RT_ABI_VERSION,
			recorded);
		bad = 1;
	}
	return bad;
}

#if RT_ABI_VERSION == 1
/* Version 1's two calls by hand, one reservation inside the other. */
static int nested(void)
{
	static const struct rt_field_desc f[] = { { "v", RT_TYPE_U64 }, { NULL, 0 } };
	static struct rt_event_desc outer = { .abi = 1, .provider = "abi", .name = "outer",
					      .loglevel = RT_LOGLEVEL_INFO, .nr_fields = 1,
					      .fields = f, .file = __FILE__,
					      .line = __LINE__ };
	static struct rt_event_desc inner = { .abi = 1, .provider = "abi", .name = "inner",
					      .loglevel = RT_LOGLEVEL_INFO, .nr_fields = 1,
					      .fields = f, .file = __FILE__,
					      .line = __LINE__ };
	struct rt_event_desc *const list[] = { &outer, &inner };
	rt__register(list, list + 2);
	struct rt_slot so, si;
	uint64_t vo = 111, vi = 222;
	int bad = 0;
	if (!rt__reserve(&outer, sizeof(vo), &so) || !rt__reserve(&inner, sizeof(vi), &si)) {
		fprintf(stderr, "abi 1: rt__reserve failed\n");
		bad = 1;
	} else {
		/* As version 1's rt_event did: write, commit, and again
		 * while another buffer wants the event. */
		memcpy(so.p, &vo, sizeof(vo));
		do
			memcpy(si.p, &vi, sizeof(vi));
		while (rt__commit(&si));
		while (rt__commit(&so))
			memcpy(so.p, &vo, sizeof(vo));
	}
	rt__unregister(list, list + 2);
	return bad;
}
#else
static int nested(void)
{
	return 0;
}
#endif

/* Every kind of call site, event i. */
static void events(uint32_t i)
{
	const uint32_t v = i * 7;
	char text[32];
	unsigned char bytes[8];
	snprintf(text, sizeof(text), "event %u", i);
	for (uint32_t k = 0; k < sizeof(bytes); k++)
		bytes[k] = (unsigned char)(v + k);
	rt_event(abi, empty);
	rt_event(abi, fixed, a, (uint8_t)v, b, (int16_t)-(int32_t)i, c, v + 1,
		 d, (uint64_t)v << 32, e, (double)i / 4);
	rt_event(abi, wide, a, (uint64_t)v, b, (uint64_t)v + 1, c, (uint64_t)v + 2,
		 d, (uint64_t)v + 3, e, (uint64_t)v + 4, f, (uint64_t)v + 5,
		 g, (uint64_t)v + 6, h, (uint64_t)v + 7);
	rt_event(abi, text, s, text, n, i, b, rt_bytes(bytes, i % (sizeof(bytes) + 1)));
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100;
	int bad = by_hand() | nested();
	for (long i = 0; i < n; i++)
		events((uint32_t)i);
	if (bad)
		return 1;
	printf("abi %d: done\n", RT_ABI_VERSION);
	return 0;
}
