/*
 * test_printf.c - rt_printf's read-time formatting (rtr_printf) against
 * snprintf on the values a call site records, and on what a damaged or
 * hostile trace may hold: arguments of the wrong type, too few of them,
 * huge widths, %n, a format cut in the middle of a conversion, a small
 * output buffer. Nothing may crash or write past the buffer (run under
 * the sanitizers too, docs/sanitizers.md).
 */
#include <stdio.h>
#include <string.h>

#include "../../src/reader/reader.h"
#include "unit.h"

static struct rtr_value i64(int64_t v, unsigned bits)
{
	return (struct rtr_value){ .type = RTR_INT, .i = v, .is_signed = true, .bits = bits };
}

static struct rtr_value u64(uint64_t v, unsigned bits)
{
	return (struct rtr_value){ .type = RTR_UINT, .u = v, .bits = bits };
}

static struct rtr_value dbl(double v)
{
	return (struct rtr_value){ .type = RTR_DOUBLE, .d = v, .bits = 64 };
}

static struct rtr_value str(const char *s)
{
	struct rtr_value v = { .type = RTR_STRING };
	v.s.p = s;
	v.s.len = strlen(s);
	return v;
}

static void same(const char *fmt, const struct rtr_value *a, size_t n, const char *want)
{
	char out[512];
	unit_case = fmt;
	size_t len = rtr_printf(fmt, a, n, out, sizeof(out));
	CHECK(!strcmp(out, want) && len == strlen(want), "'%s' gives '%s', not '%s'", fmt, out,
	      want);
}

int main(void)
{
	char want[512];
	/* As snprintf formats the values the call site passed. */
	struct rtr_value a1[] = { i64(-42, 32), u64(4000000000u, 32), str("abc"), dbl(3.25) };
	snprintf(want, sizeof(want), "%d|%u|%s|%.1f|%5.2e|%-6d|%06x", -42, 4000000000u, "abc",
		 3.25, 3.25, -42, 4000000000u);
	struct rtr_value a2[] = { a1[0], a1[1], a1[2], a1[3], a1[3], a1[0], a1[1] };
	same("%d|%u|%s|%.1f|%5.2e|%-6d|%06x", a2, 7, want);
	snprintf(want, sizeof(want), "%u %x %d", -1, -2, (int)4294967295u);
	struct rtr_value a3[] = { i64(-1, 32), i64(-2, 32), u64(4294967295u, 32) };
	same("%u %x %d", a3, 3, want);
	snprintf(want, sizeof(want), "[%*d] [%-*d] [%.*s]", 5, 7, 4, 7, 2, "xyz");
	struct rtr_value a4[] = { i64(5, 32), i64(7, 32), i64(4, 32), i64(7, 32), i64(2, 32),
				  str("xyz") };
	same("[%*d] [%-*d] [%.*s]", a4, 6, want);
	struct rtr_value a5[] = { u64(0, 64), u64(0x1234, 64), i64('z', 32) };
	same("%p %p %c 100%%", a5, 3, "(nil) 0x1234 z 100%");

	/* Hostile or damaged. */
	same("%s and %d", (struct rtr_value[]){ i64(5, 32), str("five") }, 2, "5 and five");
	same("%d %d %d", (struct rtr_value[]){ i64(1, 32) }, 1, "1 <missing> <missing>");
	same("%n%d", (struct rtr_value[]){ u64(0, 64), i64(3, 32) }, 2, "3");
	same("end %", NULL, 0, "end %");
	same("end %5", NULL, 0, "end %5");
	same("%y %d", (struct rtr_value[]){ i64(9, 32) }, 1, "%y 9");
	char big[2048];
	unit_case = "huge width";
	size_t n = rtr_printf("%999999999d|%.999999999f|%*d", (struct rtr_value[]){
		i64(1, 32), dbl(1.0), i64(2000000000, 32), i64(3, 32) }, 4, big, sizeof(big));
	CHECK(n == strlen(big) && n < sizeof(big), "bounded: %zu", n);
	unit_case = "small buffer";
	char small[8];
	memset(small, 'x', sizeof(small));
	n = rtr_printf("%s-%s", (struct rtr_value[]){ str("abcdef"), str("ghijk") }, 2, small,
		       sizeof(small));
	CHECK(n == 7 && !strcmp(small, "abcdef-"), "cut: %zu '%s'", n, small);
	CHECK_EQ(rtr_printf("x", NULL, 0, small, 0), 0);
	return unit_finish();
}
