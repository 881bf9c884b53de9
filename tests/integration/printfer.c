/*
 * printfer.c - rt_printf's events for test_printf.py: each call's
 * message is also formatted here, by snprintf, with the same format and
 * arguments, and printed as one line of hexadecimal bytes on stdout, so
 * that the test can check that `ringtrace view` formats every message
 * at read time as printf did.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <ringtrace/ringtrace.h>

static void expect(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void expect(const char *fmt, ...)
{
	char buf[8192];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	for (int i = 0; i < n && i < (int)sizeof(buf) - 1; i++)
		printf("%02x", (unsigned char)buf[i]);
	printf("\n");
}

/* The event and its expected message, from one format and one list. */
#define BOTH(event, ...)                                                       \
	do {                                                                   \
		rt_printf(printfer, event, __VA_ARGS__);                       \
		expect(__VA_ARGS__);                                           \
	} while (0)

int main(void)
{
	const char *name = "disk0", *none = NULL;
	int8_t s8 = -8;
	uint16_t u16 = 65535;
	long big = -1234567890123L;
	unsigned int hex = 0xdeadbeef;
	for (int i = 0; i < 3; i++) {
		BOTH(plain, "no arguments at all");
		BOTH(ints, "i=%d s8=%hhd u16=%hu big=%ld hex=%x HEX=%#X oct=%o", i, s8, u16, big,
		     hex, hex, 8u);
		BOTH(widths, "[%5d] [%-5d] [%05d] [%+d] [% d] [%*d] [%-*d] [%.3d]", i, i, i, i, i,
		     6, i, 4, i, i);
		BOTH(floats, "%f %.2f %e %g %10.3f %a", 1.5 * i, 3.14159, 12345.678, 0.0001,
		     -2.5 * i, 1.0);
		BOTH(text, "dev=%s pad=[%8s] left=[%-8s] cut=%.3s c=%c pct=100%%", name, name,
		     name, name, 'A' + i);
		BOTH(u64, "n=%" PRIu64 " x=%" PRIx64 " i=%" PRId64, (uint64_t)1 << 63,
		     (uint64_t)0xabcdef, (int64_t)-42);
		BOTH(escapes, "tab\there \"quoted\" back\\slash\nnew line %d", i);
		BOTH(negative_as_unsigned, "%u %x", -1, -2);
		BOTH(ptr, "p=%p null=%p b=%d", (void *)&name, (void *)0, (int)(bool)(i & 1));
		BOTH(joined, "adjacent " "literals " "%s", "joined");
		(void)none;
	}
	rt_printf(printfer, null_string, "s=%s", none);
	printf("%s\n", "733d286e756c6c29");	/* "s=(null)", as rt_event records NULL */
	return 0;
}
