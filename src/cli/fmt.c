/*
 * fmt.c - the output buffer and the formatters of fmt.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "fmt.h"

#include "../common/array.h"
#include "../common/escape.h"

int fmt_open(struct fmt_out *o, FILE *f, size_t cap)
{
	if (cap < FMT_MIN_ROOM * 2)
		cap = FMT_MIN_ROOM * 2;
	o->buf = malloc(cap);
	if (!o->buf)
		return -ENOMEM;
	o->len = 0;
	o->cap = cap;
	o->f = f;
	o->err = 0;
	return 0;
}

__attribute__((noinline)) int fmt_flush(struct fmt_out *o)
{
	if (!o->f) {
		/* A memory buffer: grow it (doubled) instead of writing it out. */
		if (!o->err && RT_ARRAY_GROW(o->buf, o->cap, o->cap + 1, FMT_MIN_ROOM * 2) == 0)
			return 0;
		o->err = o->err ? o->err : -ENOMEM;
		o->len = 0;
		return o->err;
	} else if (o->len && !o->err) {
		if (fwrite(o->buf, 1, o->len, o->f) != o->len)
			o->err = errno ? -errno : -EIO;
	}
	/* After a failure the buffer is scratch space: writes are dropped. */
	o->len = 0;
	return o->err;
}

int fmt_close(struct fmt_out *o)
{
	if (o->f)
		fmt_flush(o);
	if (o->f && !o->err && fflush(o->f) != 0)
		o->err = errno ? -errno : -EIO;
	free(o->buf);
	o->buf = NULL;
	o->cap = 0;
	return o->err;
}

__attribute__((noinline)) void fmt_str_slow(struct fmt_out *o, const char *s, size_t n)
{
	while (n) {
		size_t room = o->cap - o->len;
		if (!room) {
			fmt_flush(o);
			room = o->cap - o->len;
		}
		size_t k = n < room ? n : room;
		memcpy(o->buf + o->len, s, k);
		o->len += k;
		s += k;
		n -= k;
	}
}

static const char digit_pairs[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

static const uint64_t pow10_table[20] = {
	1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL,
	100000000ULL, 1000000000ULL, 10000000000ULL, 100000000000ULL, 1000000000000ULL,
	10000000000000ULL, 100000000000000ULL, 1000000000000000ULL,
	10000000000000000ULL, 100000000000000000ULL, 1000000000000000000ULL,
	10000000000000000000ULL,
};

static inline unsigned count_digits(uint64_t v)
{
	if (v < 10)
		return 1;
	/* floor(log10(v)) is about floor(log2(v)) * 1233 / 4096. */
	unsigned t = (unsigned)(64 - __builtin_clzll(v)) * 1233 >> 12;
	return t + (v >= pow10_table[t]);
}

char *fmt_put_u64(char *p, uint64_t v)
{
	unsigned n = count_digits(v);
	char *q = p + n;
	/* Above 2^32 with 64-bit divisions, below with cheaper 32-bit ones. */
	while (v > UINT32_MAX) {
		q -= 2;
		memcpy(q, digit_pairs + 2 * (v % 100), 2);
		v /= 100;
	}
	uint32_t x = (uint32_t)v;
	while (x >= 100) {
		q -= 2;
		memcpy(q, digit_pairs + 2 * (x % 100), 2);
		x /= 100;
	}
	if (x >= 10)
		memcpy(q - 2, digit_pairs + 2 * x, 2);
	else
		q[-1] = (char)('0' + x);
	return p + n;
}

char *fmt_put_i64(char *p, int64_t v)
{
	if (v < 0) {
		*p++ = '-';
		return fmt_put_u64(p, (uint64_t)0 - (uint64_t)v);
	}
	return fmt_put_u64(p, (uint64_t)v);
}

/* Four digits of v < 10000 at p. */
static inline void put4(char *p, uint32_t v)
{
	memcpy(p, digit_pairs + 2 * (v / 100), 2);
	memcpy(p + 2, digit_pairs + 2 * (v % 100), 2);
}

/* fmt_put_9digits, inline in the time formatters below. */
static inline char *put_9digits(char *p, uint32_t v)
{
	uint32_t rest = v % 100000000;
	p[0] = (char)('0' + v / 100000000);
	put4(p + 1, rest / 10000);
	put4(p + 5, rest % 10000);
	return p + 9;
}

char *fmt_put_9digits(char *p, uint32_t v)
{
	return put_9digits(p, v);
}

char *fmt_put_udigits(char *p, uint64_t v, unsigned width)
{
	unsigned i = width;
	for (; i >= 2; i -= 2) {
		memcpy(p + i - 2, digit_pairs + 2 * (v % 100), 2);
		v /= 100;
	}
	if (i)
		p[0] = (char)('0' + v % 10);
	return p + width;
}

char *fmt_put_base(char *p, uint64_t v, int base)
{
	static const char hex[] = "0123456789abcdef";
	unsigned shift;
	switch (base) {
	case 16:
		*p++ = '0';
		*p++ = 'x';
		shift = 4;
		break;
	case 8:
		*p++ = '0';
		shift = 3;
		break;
	case 2:
		*p++ = '0';
		*p++ = 'b';
		shift = 1;
		break;
	default:
		return fmt_put_u64(p, v);
	}
	/* Digit count from the bit length, then the digits from the last. */
	unsigned bits = v ? 64u - (unsigned)__builtin_clzll(v) : 1u;
	unsigned n = (bits + shift - 1) / shift;
	uint64_t mask = ((uint64_t)1 << shift) - 1;
	for (unsigned i = n; i-- > 0; v >>= shift)
		p[i] = hex[v & mask];
	return p + n;
}

/*
 * Without snprintf, the common doubles of traces (durations, ratios): d
 * a multiple of 1/1024 with 1 <= |d| < 1e15 (or +0). Such a number has a
 * finite decimal expansion (at most 10 decimals: 1/1024 = 0.0009765625);
 * when it has at most 15 significant digits, "%.15g" writes exactly it
 * and it reads back exactly, so it is what fmt_put_double's general path
 * would write. Returns the end, or NULL (not such a number).
 */
static char *put_short_double(char *p, double d)
{
	double a = fabs(d);
	if (!(a >= 1 && a < 1e15) && !(d == 0 && !signbit(d)))
		return NULL;
	uint64_t ip = (uint64_t)a;
	double f = (a - (double)ip) * 1024;	/* exact: ip < 2^50 */
	if (f != floor(f))
		return NULL;
	/* f / 1024 = f * 5^10 / 10^10: 10 decimals, of which the last
	 * min(ctz(f), 10) are zeros (5^10 is odd and f < 1024). */
	uint64_t k = (uint64_t)f;
	uint64_t frac = 0;
	unsigned nd = 0;
	if (k) {
		unsigned tz = (unsigned)__builtin_ctzll(k);
		nd = 10 - tz;
		frac = k * 9765625u / pow10_table[tz];
	}
	if (count_digits(ip) + nd > 15)
		return NULL;
	if (d < 0)
		*p++ = '-';
	p = fmt_put_u64(p, ip);
	*p++ = '.';
	if (!nd) {
		*p++ = '0';
		return p;
	}
	return fmt_put_udigits(p, frac, nd);
}

char *fmt_put_double(char *p, double d, bool json)
{
	if (isnan(d) || isinf(d)) {
		const char *s = isnan(d) ? "NaN" : d > 0 ? "Infinity" : "-Infinity";
		size_t n = strlen(s);
		if (json)
			*p++ = '"';
		memcpy(p, s, n);
		p += n;
		if (json)
			*p++ = '"';
		return p;
	}
	char *q = put_short_double(p, d);
	if (q)
		return q;
	/* Other doubles: try the short forms first and keep the first that
	 * reads back exactly. */
	char tmp[40];
	int n = 0;
	for (int prec = 15; prec <= 17; prec++) {
		n = snprintf(tmp, sizeof(tmp), "%.*g", prec, d);
		if (strtod(tmp, NULL) == d)
			break;
	}
	memcpy(p, tmp, (size_t)n);
	p += n;
	/* Keep it recognisably a real number: 2 -> 2.0 (and valid JSON). */
	if (!memchr(tmp, '.', (size_t)n) && !memchr(tmp, 'e', (size_t)n)) {
		*p++ = '.';
		*p++ = '0';
	}
	return p;
}

/* A byte in base 10 or 16 (as fmt_put_u64 / fmt_put_base write it)
 * without their digit count and loops. */
static inline char *put_byte(char *p, unsigned v, int base)
{
	static const char hex[] = "0123456789abcdef";
	if (base == 16) {
		p[0] = '0';
		p[1] = 'x';
		if (v < 16) {
			p[2] = hex[v];
			return p + 3;
		}
		p[2] = hex[v >> 4];
		p[3] = hex[v & 15];
		return p + 4;
	}
	if (v < 10) {
		*p = (char)('0' + v);
		return p + 1;
	}
	if (v >= 100) {
		*p++ = (char)('0' + v / 100);
		v %= 100;
	}
	memcpy(p, digit_pairs + 2 * v, 2);
	return p + 2;
}

/* Room one element takes at most: ", [" 20 digits "] = " and 0b + 8. */
#define BYTE_ELEM_ROOM 40

/* fmt_bytes's text of 1 to 8 elements in base 16, in one reservation
 * (at most 98 bytes): each element a constant piece with its index digit
 * patched in, then its one or two hex digits. */
static char *put_hex_bytes_short(char *p, const uint8_t *b, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	memcpy(p, "[ [0] = 0x", 10);
	p += 10;
	for (size_t i = 0;;) {
		unsigned v = b[i], hi = v >> 4;
		p[0] = hex[hi ? hi : v];
		p[1] = hex[v & 15];	/* overwritten next when v < 16 */
		p += 1 + (hi != 0);
		if (++i == n)
			break;
		memcpy(p, ", [0] = 0x", 10);
		p[3] = (char)('0' + i);
		p += 10;
	}
	memcpy(p, " ]", 2);
	return p + 2;
}

void fmt_bytes(struct fmt_out *o, const uint8_t *b, size_t n, int base, bool json)
{
	if (!json && base == 16 && n && n <= 8) {
		fmt_commit(o, put_hex_bytes_short(fmt_reserve(o, FMT_MIN_ROOM), b, n));
		return;
	}
	bool fast = json || base == 10 || base == 16;	/* else fmt_put_base */
	fmt_putc(o, '[');
	size_t i = 0;
	while (i < n) {
		char *p = fmt_reserve(o, FMT_MIN_ROOM);
		char *end = p + FMT_MIN_ROOM - BYTE_ELEM_ROOM;
		for (; i < n && p <= end; i++) {
			if (json) {
				*p = ',';
				p = put_byte(p + (i != 0), b[i], 10);
				continue;
			}
			if (i < 10) {	/* " [i] = " or ", [i] = " in one store */
				memcpy(p, i ? ", [0] = " : " [0] =  ", 8);
				p += i ? 8 : 7;
				p[-5] = (char)('0' + i);
				p = fast ? put_byte(p, b[i], base) : fmt_put_base(p, b[i], base);
				continue;
			}
			memcpy(p, ", [", 3);
			p += 3;
			if (i < 100) {
				memcpy(p, digit_pairs + 2 * i, 2);
				p += 2;
			} else {
				p = fmt_put_u64(p, i);
			}
			memcpy(p, "] = ", 4);
			p += 4;
			p = fast ? put_byte(p, b[i], base) : fmt_put_base(p, b[i], base);
		}
		fmt_commit(o, p);
	}
	if (json)
		fmt_putc(o, ']');
	else
		fmt_str(o, " ]", 2);
}

static const char hexdig[] = "0123456789abcdef";

/* What each byte becomes in the text output: 0 itself, else the letter
 * after the backslash ('x': \xXX); bytes from 0x80 stay as they are
 * (UTF-8). */
static const uint8_t text_esc[256] = {
	[0 ... 8] = 'x', ['\t'] = 't', ['\n'] = 'n', [0x0b ... 0x0c] = 'x', ['\r'] = 'r',
	[0x0e ... 0x1f] = 'x', ['"'] = '"', ['\\'] = '\\', [0x7f] = 'x',
};

/*
 * Both string writers: the quotes and the bytes, in reservations of
 * FMT_MIN_ROOM with 8 bytes to spare (one byte becomes at most 6, 8 plain
 * ones are copied at once, and the closing quote follows).
 */
void fmt_json_string(struct fmt_out *o, const char *s, size_t n)
{
	char *p = fmt_reserve(o, FMT_MIN_ROOM);
	char *end = p + FMT_MIN_ROOM - RT_JSON_STEP;
	*p++ = '"';
	size_t i = 0;
	for (;;) {
		p = rt_json_escape(p, end, s, n, &i, 0);
		if (i >= n)
			break;
		fmt_commit(o, p);
		p = fmt_reserve(o, FMT_MIN_ROOM);
		end = p + FMT_MIN_ROOM - RT_JSON_STEP;
	}
	*p++ = '"';
	fmt_commit(o, p);
}

void fmt_text_string(struct fmt_out *o, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	char *p = fmt_reserve(o, FMT_MIN_ROOM);
	char *end = p + FMT_MIN_ROOM - 8;
	*p++ = '"';
	size_t i = 0;
	for (;;) {
		for (; i < n && p < end; i++) {
			uint64_t x;
			if (n - i >= 8 && (memcpy(&x, u + i, 8), !rt_word_needs_care(x, '"', '\\', 0x7f, false))) {
				memcpy(p, &x, 8);	/* 8 bytes as they are */
				p += 8;
				i += 7;
				continue;
			}
			unsigned c = u[i], e = text_esc[c];
			if (!e) {
				*p++ = (char)c;
				continue;
			}
			*p++ = '\\';
			*p++ = (char)e;
			if (e == 'x') {
				*p++ = hexdig[c >> 4];
				*p++ = hexdig[c & 15];
			}
		}
		if (i >= n)
			break;
		fmt_commit(o, p);
		p = fmt_reserve(o, FMT_MIN_ROOM);
		end = p + FMT_MIN_ROOM - 8;
	}
	*p++ = '"';
	fmt_commit(o, p);
}

void fmt_clock_init(struct fmt_clock *c, bool utc, bool date)
{
	memset(c->text, 0, sizeof(c->text));
	c->utc = utc;
	c->date = date;
	c->cached_sec = INT64_MIN;
	c->text_len = 0;
}

/* Seconds and nanoseconds of ns, rounding down (also before 1970). */
static void split_ns(int64_t ns, int64_t *sec, uint32_t *frac)
{
	int64_t s = ns / 1000000000, r = ns % 1000000000;
	if (r < 0) {
		r += 1000000000;
		s--;
	}
	*sec = s;
	*frac = (uint32_t)r;
}

__attribute__((noinline)) static void clock_refresh(struct fmt_clock *c, int64_t sec)
{
	time_t t = (time_t)sec;
	struct tm tm;
	if (!(c->utc ? gmtime_r(&t, &tm) : localtime_r(&t, &tm)))
		memset(&tm, 0, sizeof(tm));
	char *p = c->text;
	if (c->date) {
		p = fmt_put_udigits(p, (uint64_t)(tm.tm_year + 1900) % 10000, 4);
		*p++ = '-';
		p = fmt_put_udigits(p, (uint64_t)tm.tm_mon + 1, 2);
		*p++ = '-';
		p = fmt_put_udigits(p, (uint64_t)tm.tm_mday, 2);
		*p++ = ' ';
	}
	p = fmt_put_udigits(p, (uint64_t)tm.tm_hour, 2);
	*p++ = ':';
	p = fmt_put_udigits(p, (uint64_t)tm.tm_min, 2);
	*p++ = ':';
	p = fmt_put_udigits(p, (uint64_t)tm.tm_sec, 2);
	c->text_len = (size_t)(p - c->text);
	c->cached_sec = sec;
}

char *fmt_put_clock(char *p, struct fmt_clock *c, int64_t ns)
{
	int64_t sec;
	uint32_t frac;
	split_ns(ns, &sec, &frac);
	if (sec != c->cached_sec)
		clock_refresh(c, sec);
	memcpy(p, c->text, sizeof(c->text));	/* constant size: no call */
	p += c->text_len;
	*p++ = '.';
	return put_9digits(p, frac);
}

char *fmt_put_seconds(char *p, int64_t ns)
{
	uint64_t mag = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	if (ns < 0)
		*p++ = '-';
	if (mag < 1000000000) {	/* the usual delta */
		*p++ = '0';
		*p++ = '.';
		return put_9digits(p, (uint32_t)mag);
	}
	p = fmt_put_u64(p, mag / 1000000000);
	*p++ = '.';
	return put_9digits(p, (uint32_t)(mag % 1000000000));
}
