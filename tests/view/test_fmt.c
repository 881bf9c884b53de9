/*
 * test_fmt.c - the formatters of src/cli/fmt.c against the C library:
 * integers of every length and base, doubles (shortest form that reads
 * back), JSON and text string escaping (control characters, invalid
 * UTF-8), clock and seconds formatting, and the output buffer (long
 * strings, a failed write).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/fmt.h"
#include "unit.h"

static char *end_str(char *b, char *e)
{
	*e = '\0';
	return b;
}

static void test_integers(void)
{
	unit_case = "integers";
	char b[80], r[80];
	for (uint64_t v = 1; v < UINT64_MAX / 3; v = v * 3 + 1) {
		for (uint64_t x = v - 1; x <= v + 1; x++) {
			snprintf(r, sizeof(r), "%" PRIu64, x);
			CHECK(!strcmp(end_str(b, fmt_put_u64(b, x)), r), "%s != %s", b, r);
			snprintf(r, sizeof(r), "%" PRId64, -(int64_t)x);
			CHECK(!strcmp(end_str(b, fmt_put_i64(b, -(int64_t)x)), r), "%s != %s", b, r);
			snprintf(r, sizeof(r), "0x%" PRIx64, x);
			CHECK(!strcmp(end_str(b, fmt_put_base(b, x, 16)), r), "%s != %s", b, r);
			snprintf(r, sizeof(r), "0%" PRIo64, x);
			CHECK(!strcmp(end_str(b, fmt_put_base(b, x, 8)), r), "%s != %s", b, r);
		}
	}
	for (uint64_t p = 1; p <= 1000000000000000000ULL; p *= 10) {
		snprintf(r, sizeof(r), "%" PRIu64, p);
		CHECK(!strcmp(end_str(b, fmt_put_u64(b, p)), r), "%s != %s", b, r);
		snprintf(r, sizeof(r), "%" PRIu64, p - 1);
		CHECK(!strcmp(end_str(b, fmt_put_u64(b, p - 1)), r), "%s != %s", b, r);
	}
	CHECK(!strcmp(end_str(b, fmt_put_u64(b, UINT64_MAX)), "18446744073709551615"), "%s", b);
	CHECK(!strcmp(end_str(b, fmt_put_i64(b, INT64_MIN)), "-9223372036854775808"), "%s", b);
	CHECK(!strcmp(end_str(b, fmt_put_base(b, 5, 2)), "0b101"), "%s", b);
	CHECK(!strcmp(end_str(b, fmt_put_base(b, 0, 16)), "0x0"), "%s", b);
	CHECK(!strcmp(end_str(b, fmt_put_udigits(b, 42, 9)), "000000042"), "%s", b);
	for (uint32_t v = 0; v < 1000000000; v = v * 7 + 13) {
		snprintf(r, sizeof(r), "%09" PRIu32, v);
		CHECK(!strcmp(end_str(b, fmt_put_9digits(b, v)), r), "%s != %s", b, r);
	}
	CHECK(!strcmp(end_str(b, fmt_put_9digits(b, 999999999)), "999999999"), "%s", b);
}

static void test_doubles(void)
{
	unit_case = "doubles";
	char b[80];
	static const double vals[] = { 0.1, 0.5, 2.0, 1e300, -1e-300, 3.141592653589793,
				       1.0 / 3, 5e-324, 1.7976931348623157e308, 123456789.125 };
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		end_str(b, fmt_put_double(b, vals[i], true));
		CHECK(strtod(b, NULL) == vals[i], "%s does not read back as %.17g", b, vals[i]);
		CHECK(strchr(b, '.') || strchr(b, 'e'), "%s looks like an integer", b);
	}
	CHECK(!strcmp(end_str(b, fmt_put_double(b, 0.1, false)), "0.1"), "%s", b);
	CHECK(!strcmp(end_str(b, fmt_put_double(b, 2, false)), "2.0"), "%s", b);
	/* Multiples of 1/1024 (a fast path) read the same as "%.15g" (plus
	 * ".0" for whole numbers). */
	static const double whole[] = { 0.0, 1.0, -3.0, 1e14, 999999999999999.0, -999999999999999.0,
					9007199254740991.0, 1e15, -1e15, 1e20, 2.5, -3.25, 1.75,
					1.0009765625, 12345.0009765625, 99999.0009765625,
					999999999.5, 123456789012.125, 0.5, 0.0009765625 };
	for (size_t i = 0; i < sizeof(whole) / sizeof(whole[0]); i++) {
		char want[40];
		int n = snprintf(want, sizeof(want), "%.15g", whole[i]);
		if (!strchr(want, 'e') && !strchr(want, '.'))
			snprintf(want + n, sizeof(want) - (size_t)n, ".0");
		end_str(b, fmt_put_double(b, whole[i], false));
		CHECK(strtod(b, NULL) == whole[i], "%s does not read back as %.17g", b, whole[i]);
		if (fabs(whole[i]) < 1e15)
			CHECK(!strcmp(b, want), "%s, expected %s", b, want);
	}
	/* Every multiple of 1/1024 above a few integer parts: the text of the
	 * general rule (the first of %.15g, %.16g, %.17g that reads back). */
	static const double ips[] = { 0, 1, 7, 123456, 99999, 100000, 999999999 };
	for (size_t i = 0; i < sizeof(ips) / sizeof(ips[0]); i++) {
		for (int k = 0; k < 1024; k++) {
			for (int sign = 1; sign >= -1; sign -= 2) {
				double d = sign * (ips[i] + k / 1024.0);
				char want[40];
				int n = 0;
				for (int prec = 15; prec <= 17; prec++) {
					n = snprintf(want, sizeof(want), "%.*g", prec, d);
					if (strtod(want, NULL) == d)
						break;
				}
				if (!strchr(want, 'e') && !strchr(want, '.'))
					snprintf(want + n, sizeof(want) - (size_t)n, ".0");
				end_str(b, fmt_put_double(b, d, false));
				CHECK(!strcmp(b, want), "%s, expected %s", b, want);
			}
		}
	}
	CHECK(!strcmp(end_str(b, fmt_put_double(b, -0.0, false)), "-0.0"), "%s", b);
	CHECK(!strcmp(end_str(b, fmt_put_double(b, NAN, true)), "\"NaN\""), "%s", b);
	CHECK(!strcmp(end_str(b, fmt_put_double(b, -INFINITY, true)), "\"-Infinity\""), "%s", b);
	CHECK(!strcmp(end_str(b, fmt_put_double(b, INFINITY, false)), "Infinity"), "%s", b);
}

/* Format with f into a memory buffer; the result as a C string. */
static char *to_string(void (*f)(struct fmt_out *, const char *, size_t), const char *s,
		       size_t n)
{
	struct fmt_out o;
	if (fmt_open(&o, NULL, 16) < 0)
		return NULL;
	f(&o, s, n);
	fmt_putc(&o, '\0');
	return o.buf;
}

static void check_str(void (*f)(struct fmt_out *, const char *, size_t), const char *in,
		      size_t n, const char *want)
{
	char *got = to_string(f, in, n);
	CHECK(got && !strcmp(got, want), "got [%s] want [%s]", got ? got : "(null)", want);
	free(got);
}

static void test_strings(void)
{
	unit_case = "json strings";
	check_str(fmt_json_string, "a\"b\\c", 5, "\"a\\\"b\\\\c\"");
	check_str(fmt_json_string, "\n\t\r\b\f\x01\x1f", 7, "\"\\n\\t\\r\\b\\f\\u0001\\u001f\"");
	check_str(fmt_json_string, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14,
		  "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
	/* Invalid: lone continuation, truncated sequence, overlong, surrogate. */
	check_str(fmt_json_string, "\x80", 1, "\"\\ufffd\"");
	check_str(fmt_json_string, "a\xc3", 2, "\"a\\ufffd\"");
	check_str(fmt_json_string, "\xc0\xaf", 2, "\"\\ufffd\\ufffd\"");
	check_str(fmt_json_string, "\xed\xa0\x80", 3, "\"\\ufffd\\ufffd\\ufffd\"");
	check_str(fmt_json_string, "a\0b", 3, "\"a\\u0000b\"");
	unit_case = "text strings";
	check_str(fmt_text_string, "a \"q\" \\ \t\n\x01\x7f\xc3\xa9", 14,
		  "\"a \\\"q\\\" \\\\ \\t\\n\\x01\\x7f\xc3\xa9\"");

	/* Every byte value at every place of a 10-byte string (the writers
	 * take 8 plain bytes at a time). */
	for (unsigned c = 0; c < 256; c++) {
		for (int json = 0; json < 2; json++) {
			char esc[8];
			const char *named = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n"
					  : c == '\t' ? "\\t" : c == '\r' ? "\\r"
					  : json && c == '\b' ? "\\b" : json && c == '\f' ? "\\f" : NULL;
			if (named)
				snprintf(esc, sizeof(esc), "%s", named);
			else if (json && c < 0x20)
				snprintf(esc, sizeof(esc), "\\u%04x", c);
			else if (json && c >= 0x80)
				snprintf(esc, sizeof(esc), "\\ufffd");
			else if (!json && (c < 0x20 || c == 0x7f))
				snprintf(esc, sizeof(esc), "\\x%02x", c);
			else
				snprintf(esc, sizeof(esc), "%c", (char)c);
			unit_case = json ? "json strings, every byte" : "text strings, every byte";
			for (int at = 0; at < 10; at++) {
				char in[10], want[40];
				memcpy(in, "abcdefghij", 10);
				in[at] = (char)c;
				snprintf(want, sizeof(want), "\"%.*s%s%s\"", at, "abcdefghij", esc,
					 "abcdefghij" + at + 1);
				check_str(json ? fmt_json_string : fmt_text_string, in, 10, want);
			}
		}
	}

	unit_case = "long strings";
	size_t n = 100000;
	char *big = malloc(n + 1);
	if (!CHECK(big, "malloc"))
		return;
	for (size_t i = 0; i < n; i++)
		big[i] = (char)(i % 7 ? 'x' : '\n');
	big[n] = '\0';
	char *got = to_string(fmt_json_string, big, n);
	size_t newlines = (n + 6) / 7;
	CHECK(got && strlen(got) == n + newlines + 2, "length %zu", got ? strlen(got) : 0);
	free(got);
	struct fmt_out o;
	if (fmt_open(&o, NULL, 16) == 0) {
		fmt_str(&o, big, n);
		CHECK(o.len == n && !memcmp(o.buf, big, n), "fmt_str of %zu bytes", n);
		free(o.buf);
	}
	free(big);
}

/* fmt_bytes against the same text built element by element with
 * fmt_put_u64 and fmt_put_base (every byte value, indexes past 100). */
static void test_bytes(void)
{
	static const int bases[] = { 16, 10, 8, 2, 0 };
	uint8_t bytes[300];
	for (size_t i = 0; i < sizeof(bytes); i++)
		bytes[i] = (uint8_t)(i * 7 + 3);
	static char want[300 * 40 + 8];
	for (size_t b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
		for (int json = 0; json < 2; json++) {
			unit_case = json ? "bytes json" : "bytes text";
			for (size_t n = 0; n <= sizeof(bytes); n += n < 12 ? 1 : 97) {
				char *p = want;
				*p++ = '[';
				for (size_t i = 0; i < n; i++) {
					if (json) {
						if (i)
							*p++ = ',';
						p = fmt_put_u64(p, bytes[i]);
						continue;
					}
					p = stpcpy(p, i ? ", [" : " [");
					p = fmt_put_u64(p, i);
					p = stpcpy(p, "] = ");
					p = fmt_put_base(p, bytes[i], bases[b]);
				}
				strcpy(p, json ? "]" : " ]");
				struct fmt_out o;
				if (!CHECK(fmt_open(&o, NULL, 16) == 0, "fmt_open"))
					return;
				fmt_bytes(&o, bytes, n, bases[b], json);
				fmt_putc(&o, '\0');
				CHECK(!o.err && !strcmp(o.buf, want), "base %d, %zu bytes: got [%.60s] want [%.60s]",
				      bases[b], n, o.buf, want);
				free(o.buf);
			}
		}
	}
}

static void test_clock(void)
{
	unit_case = "clock";
	char b[80], want[80];
	struct fmt_clock c;
	fmt_clock_init(&c, true, false);
	int64_t ns = 1795244064681814347LL;
	end_str(b, fmt_put_clock(b, &c, ns));
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(want, sizeof(want), "%H:%M:%S.681814347", &tm);
	CHECK(!strcmp(b, want), "%s != %s", b, want);
	/* The cached second is reused, a new one refreshed. */
	end_str(b, fmt_put_clock(b, &c, ns + 1));
	CHECK(!strcmp(b + 8, ".681814348"), "%s", b);
	end_str(b, fmt_put_clock(b, &c, ns + 1000000000));
	t++;
	gmtime_r(&t, &tm);
	strftime(want, sizeof(want), "%H:%M:%S.681814347", &tm);
	CHECK(!strcmp(b, want), "%s != %s", b, want);
	fmt_clock_init(&c, true, true);
	end_str(b, fmt_put_clock(b, &c, ns));
	t--;
	gmtime_r(&t, &tm);
	strftime(want, sizeof(want), "%Y-%m-%d %H:%M:%S.681814347", &tm);
	CHECK(!strcmp(b, want), "%s != %s", b, want);
	CHECK(!strcmp(end_str(b, fmt_put_seconds(b, 1500000001)), "1.500000001"), "%s", b);
	CHECK(!strcmp(end_str(b, fmt_put_seconds(b, -5)), "-0.000000005"), "%s", b);
	CHECK(!strcmp(end_str(b, fmt_put_seconds(b, 0)), "0.000000000"), "%s", b);
}

static void test_failed_write(void)
{
	unit_case = "failed write";
	FILE *f = fopen("/dev/full", "w");
	if (!f)
		return;	/* no /dev/full: nothing to check */
	setvbuf(f, NULL, _IONBF, 0);
	struct fmt_out o;
	if (!CHECK(fmt_open(&o, f, 4096) == 0, "fmt_open"))
		return;
	for (int i = 0; i < 10000 && !fmt_failed(&o); i++)
		fmt_cstr(&o, "some text that fills the buffer\n");
	CHECK(fmt_failed(&o) && o.err == -ENOSPC, "err %d", o.err);
	fmt_cstr(&o, "ignored");	/* still safe to call */
	CHECK(fmt_close(&o) == -ENOSPC, "fmt_close");
	fclose(f);
}

int main(void)
{
	test_integers();
	test_doubles();
	test_strings();
	test_bytes();
	test_clock();
	test_failed_write();
	return unit_finish();
}
