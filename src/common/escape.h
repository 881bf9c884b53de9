/*
 * escape.h - strings for output: the UTF-8 check and the one JSON string
 * escaper (the command's `view --json`, the analyses, the Chrome export
 * and the HTML report all write JSON strings through it).
 *
 * JSON: '"' and '\\' escaped, \b \t \n \f \r by their letter, the other
 * controls as \u00XX, valid UTF-8 as it is, each byte of invalid UTF-8
 * (overlong, surrogate, above U+10FFFF, cut short) as \ufffd. With
 * RT_JSON_HTML also '<', '>', '&' and DEL as \u00XX, so that the text can
 * sit inside an HTML <script> (no "</script>" ends it early).
 *
 * Concurrency: pure functions on the caller's memory; callable from any
 * thread.
 */
#ifndef RINGTRACE_COMMON_ESCAPE_H
#define RINGTRACE_COMMON_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Length of the valid UTF-8 sequence at s (1 to 4; `left` bytes there,
 * at least 1), 0 if invalid. */
size_t rt_utf8_len(const uint8_t *s, size_t left);

#define RT_JSON_HTML 1u		/* rt_json_escape: also '<', '>', '&', DEL */

/* Bytes one step of rt_json_escape writes at most. */
#define RT_JSON_STEP 8

/* The inside of a JSON string (no quotes) for s[*i .. n) written at p,
 * until the whole string is written or p reaches `end`; the area must
 * hold RT_JSON_STEP bytes past `end`. Returns the new end of what was
 * written, *i the first byte not written yet (n when done). `flags`:
 * 0 or RT_JSON_HTML. */
char *rt_json_escape(char *p, const char *end, const char *s, size_t n, size_t *i,
		     unsigned flags);

#define RT_ESC_ONES 0x0101010101010101ull
#define RT_ESC_HIGHS 0x8080808080808080ull

/* Nonzero if one of the 8 bytes of x equals c (< 0x80). */
static inline uint64_t rt_word_has_byte(uint64_t x, unsigned c)
{
	uint64_t a = x ^ (c * RT_ESC_ONES);
	return (a - RT_ESC_ONES) & ~a & RT_ESC_HIGHS;
}

/* Nonzero if one of the 8 bytes of x is below 0x20 or equals c1, c2 or
 * c3 (c3 0: no third), or, when `high`, has its top bit set: x must then
 * go byte by byte. (x - b * ONES) & ~x & HIGHS is nonzero exactly when a
 * byte of x is below b, for b <= 0x80 (b = 1: a zero byte). */
static inline uint64_t rt_word_needs_care(uint64_t x, unsigned c1, unsigned c2, unsigned c3,
					  bool high)
{
	uint64_t r = ((x - 0x20 * RT_ESC_ONES) & ~x) | rt_word_has_byte(x, c1) |
		     rt_word_has_byte(x, c2);
	if (c3)
		r |= rt_word_has_byte(x, c3);
	if (high)
		r |= x;
	return r & RT_ESC_HIGHS;
}

#endif /* RINGTRACE_COMMON_ESCAPE_H */
