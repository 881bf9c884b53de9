/*
 * escape.c - the UTF-8 check and the JSON string escaper (see escape.h).
 */
#include "escape.h"

#include <string.h>

size_t rt_utf8_len(const uint8_t *s, size_t left)
{
	unsigned c = s[0];
	size_t len;
	unsigned min;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		min = 0x10000;
	} else {
		return 0;
	}
	if (left < len)
		return 0;
	unsigned cp = c & (0x7f >> len);
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

static const char hexdig[] = "0123456789abcdef";

/* What each byte becomes in a JSON string: 0 itself, 1 the start of a
 * UTF-8 sequence to check, else the letter after the backslash ('u':
 * \u00XX). [1]: with RT_JSON_HTML. */
#define JSON_ESC_COMMON                                                                \
	[0 ... 7] = 'u', ['\b'] = 'b', ['\t'] = 't', ['\n'] = 'n', [0x0b] = 'u',       \
	['\f'] = 'f', ['\r'] = 'r', [0x0e ... 0x1f] = 'u', ['"'] = '"', ['\\'] = '\\', \
	[0x80 ... 0xff] = 1
static const uint8_t json_esc[2][256] = {
	{ JSON_ESC_COMMON },
	{ JSON_ESC_COMMON, ['<'] = 'u', ['>'] = 'u', ['&'] = 'u', [0x7f] = 'u' },
};

/* Whether the 8 bytes of x can be copied as they are. */
static inline bool json_plain(uint64_t x, bool html)
{
	if (rt_word_needs_care(x, '"', '\\', 0, true))
		return false;
	return !html || !(rt_word_has_byte(x, '<') | rt_word_has_byte(x, '>') |
			  rt_word_has_byte(x, '&') | rt_word_has_byte(x, 0x7f));
}

char *rt_json_escape(char *p, const char *end, const char *s, size_t n, size_t *i,
		     unsigned flags)
{
	const unsigned char *u = (const unsigned char *)s;
	bool html = flags & RT_JSON_HTML;
	const uint8_t *esc = json_esc[html];
	size_t k = *i;
	while (k < n && p < end) {
		uint64_t x;
		if (n - k >= 8 && (memcpy(&x, u + k, 8), json_plain(x, html))) {
			memcpy(p, &x, 8);	/* 8 plain ASCII bytes */
			p += 8;
			k += 8;
			continue;
		}
		unsigned c = u[k], e = esc[c];
		if (!e) {
			*p++ = (char)c;
			k++;
			continue;
		}
		if (e == 1) {
			size_t l = rt_utf8_len(u + k, n - k);
			if (l) {
				memcpy(p, u + k, l);
				p += l;
				k += l;
			} else {
				memcpy(p, "\\ufffd", 6);
				p += 6;
				k++;
			}
			continue;
		}
		*p++ = '\\';
		*p++ = (char)e;
		if (e == 'u') {
			memcpy(p, "00", 2);
			p[2] = hexdig[c >> 4];
			p[3] = hexdig[c & 15];
			p += 4;
		}
		k++;
	}
	*i = k;
	return p;
}
