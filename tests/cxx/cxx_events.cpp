/*
 * cxx_events - every field type rt_event records, from C++: plain
 * functions, templates, an inline function emitted by two translation
 * units, a class's member function, a lambda, enumerations (recorded as
 * their underlying type), std::string through c_str(), an event without
 * fields and one with a log level; rt_printf's events (a format without
 * arguments, one with several types, one in a template, one in a lambda,
 * one with a log level). tests/cxx/test_cxx.py builds it with
 * each C++ compiler and standard, records it and checks every event.
 *
 * usage: cxx_events N
 */
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cxx_shared.h"

enum class color : uint8_t { red = 1, green = 2 };
enum plain { minus_three = -3, seven = 7 };

template <typename T> static void generic(T v, int i)
{
	rt_event(cxx, generic, v, v, i, i);
}

template <typename T> static void generic_printf(T v)
{
	rt_printf(cxx, printf_generic, "twice %d is %ld", v, 2L * v);
}

class counter {
public:
	explicit counter(int64_t start) : n(start) {}
	void bump()
	{
		n += 10;
		rt_event(cxx, method, n, n);
	}

private:
	int64_t n;
};

int main(int argc, char **argv)
{
	int n = argc > 1 ? std::atoi(argv[1]) : 10;
	counter c(-5);
	char buf[16];
	const uint8_t bytes[4] = { 0xca, 0xfe, 0x00, 0x7f };
	for (int i = 0; i < n; i++) {
		std::string s = "item-" + std::to_string(i);
		std::snprintf(buf, sizeof(buf), "buf%d", i);
		const char *null_str = nullptr;
		rt_event(cxx, types, s8, (int8_t)-i, u8, (uint8_t)(200 + i), s16, (int16_t)(-300 * i),
			 u16, (uint16_t)(60000 + i), s32, -70000 * i, u32, 4000000000u + (unsigned)i,
			 s64, -((int64_t)1 << 40) - i, u64, UINT64_C(1) << 63 | (unsigned)i,
			 f, 0.5f * (float)i, d, 0.25 * i, b, i % 2 == 1, ch, (char)('a' + i % 26),
			 lit, "literal", arr, buf, str, s.c_str(), null, null_str,
			 seq, rt_bytes(bytes, (size_t)(i % 5)), ptr, (void *)(uintptr_t)(0x1000 + i),
			 scoped, i % 2 ? color::green : color::red, unscoped, i % 2 ? seven : minus_three);
		rt_event(cxx, none);
		rt_event_loglevel(RT_LOGLEVEL_DEBUG, cxx, debug, i, i);
		generic(i, i);
		generic(1.5 * i, i);
		generic(s.c_str(), i);
		c.bump();
		auto lambda = [i](int twice) { rt_event(cxx, lambda, i, i, twice, twice); };
		lambda(2 * i);
		rt_printf(cxx, printf_none, "no arguments");
		rt_printf(cxx, printf, "i=%d u64=%llu s=%s d=%.2f c=%c p=%p", i,
			  (unsigned long long)UINT64_C(1) << 63 | (unsigned)i, s.c_str(), 0.25 * i,
			  (char)('a' + i % 26), (void *)(uintptr_t)(0x1000 + i));
		rt_printf_loglevel(RT_LOGLEVEL_DEBUG, cxx, printf_debug, "[%5d|%-4s]", -i, "ab");
		generic_printf(i);
		auto lambda_printf = [&s](int k) { rt_printf(cxx, printf_lambda, "%s#%d", s.c_str(), k); };
		lambda_printf(i);
		shared_event("main", i);
	}
	other_unit(n);
	std::printf("recorded %d iterations\n", n);
	return 0;
}
