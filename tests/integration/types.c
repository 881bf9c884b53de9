/*
 * types.c - records every field type with values the interop test can
 * recompute (tests/integration/test_record.py), events with ids past the
 * compact-header range, an event after a long pause (full timestamp), and
 * events with 0 and 20 fields, and strings and a sequence that changed
 * after the call site sized them (rt__record_parts writes what was sized).
 *
 * usage: types N
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ringtrace/ringtrace.h>

static const char *const words[] = { "alpha", "", "a \"quoted\" \\ word\twith tab" };

#define E(n) rt_event(types, id##n, k, (int)(n))

static void many_ids(void)
{
	E(0); E(1); E(2); E(3); E(4); E(5); E(6); E(7); E(8); E(9);
	E(10); E(11); E(12); E(13); E(14); E(15); E(16); E(17); E(18); E(19);
	E(20); E(21); E(22); E(23); E(24); E(25); E(26); E(27); E(28); E(29);
	E(30); E(31); E(32); E(33); E(34); E(35); E(36); E(37); E(38); E(39);
}

/* What rt_event does for an event with strings, a sequence and an int,
 * written out by hand so the strings and the sequence can differ from the
 * sizes the call site computed: as if another thread had changed them in
 * between. The trace gets the first 3 characters of the grown string, the
 * shrunk ones (short, word-copied and memcpy-copied) padded with '#' to
 * their sizes (an early NUL must not end the field), 2 bytes of the
 * sequence, and the int intact. */
static void changed_after_sizing(void)
{
	static const struct rt_field_desc fields[] = {
		{ "grown", RT_TYPE_STRING }, { "shrunk", RT_TYPE_STRING },
		{ "shrunk12", RT_TYPE_STRING }, { "shrunk300", RT_TYPE_STRING },
		{ "b", RT_TYPE_BYTES }, { "k", RT_TYPE_S32 }, { NULL, 0 }
	};
	static struct rt_event_desc ev = { 0, RT_ABI_VERSION, "types", "changed", RT_LOGLEVEL_INFO,
					   6, fields, __FILE__, __LINE__, NULL, NULL };
	static struct rt_event_desc *const list[] = { &ev };
	static const uint8_t data[] = { 1, 2, 3, 4, 5 };
	static const char shrunk_buf[] = "ab\0defg";
	static const char shrunk12_buf[] = "abcdefghi\0kl";
	static char shrunk300_buf[301];
	memset(shrunk300_buf, 'x', 300);
	shrunk300_buf[100] = '\0';
	rt__register(list, list + 1);
	const char *grown = "abcdef", *shrunk = shrunk_buf, *shrunk12 = shrunk12_buf,
		   *shrunk300 = shrunk300_buf;
	struct rt_bytes b = rt_bytes(data, sizeof(data));
	int32_t k = 77;
	const struct rt_part parts[] = {
		{ &grown, 4, RT_PART_STRING }, { &shrunk, 6, RT_PART_STRING },
		{ &shrunk12, 13, RT_PART_STRING }, { &shrunk300, 301, RT_PART_STRING },
		{ &b, 4 + 2, RT_PART_BYTES }, { &k, 4, RT_PART_FIXED }
	};
	if (__atomic_load_n(&ev.enabled, __ATOMIC_RELAXED))
		rt__record_parts(&ev, parts, 6);
	rt__unregister(list, list + 1);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100;
	char longstr[301];
	memset(longstr, 'x', 300);
	longstr[300] = '\0';
	uint8_t buf[8] = { 0xde, 0xad, 0xbe, 0xef, 0x00, 0x01, 0x7f, 0x80 };

	many_ids();
	for (int i = 0; i < n; i++) {
		rt_event(types, ints, s8, (int8_t)(-i), u8, (uint8_t)(i * 3), s16, (int16_t)(-i * 100),
			 u16, (uint16_t)(i * 100), s32, (int32_t)(-i * 100000),
			 u32, (uint32_t)i * 100000u, s64, (int64_t)(-i) * (1LL << 40),
			 u64, (uint64_t)i * (1ULL << 40) + (1ULL << 63));
		rt_event(types, misc, f, (float)i * 0.5f, d, (double)i / 4.0, b, (bool)(i % 2),
			 str, words[i % 3], ptr, (void *)(uintptr_t)(0x1000 + i),
			 bytes, rt_bytes(buf, (size_t)(i % 9)), ch, (char)('a' + i % 26));
		rt_event(types, empty);
		rt_event_loglevel(RT_LOGLEVEL_DEBUG, types, many, f1, i + 1, f2, i + 2, f3, i + 3,
				  f4, i + 4, f5, i + 5, f6, i + 6, f7, i + 7, f8, i + 8, f9, i + 9,
				  f10, i + 10, f11, i + 11, f12, i + 12, f13, i + 13, f14, i + 14,
				  f15, i + 15, f16, i + 16, f17, i + 17, f18, i + 18, f19, i + 19,
				  f20, i + 20);
	}
	rt_event(types, strings, null, (const char *)NULL, longstr, longstr);
	changed_after_sizing();
	struct timespec pause = { 0, 150 * 1000 * 1000 };
	nanosleep(&pause, NULL);
	rt_event(types, after_pause, i, n);
	many_ids();
	printf("done %d\n", n);
	return 0;
}
