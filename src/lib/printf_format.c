/*
 * printf_format.c - rt_printf's format as its call site records it: the
 * format field's name is the string literal as the preprocessor stringizes
 * it (ringtrace_types.h, RT_TYPE_FORMAT), decoded here once, at
 * registration, into the format itself.
 */
#include <errno.h>
#include <string.h>

#include "../common/hex.h"
#include "../proto/app_proto.h"
#include "rt_internal.h"

/* One escape sequence after its backslash at *pp: the byte, or -1. */
static int escape(const char **pp)
{
	static const char simple[] = "\\\\\"\"''??a\ab\bf\fn\nr\rt\tv\v";
	const char *p = *pp;
	for (const char *s = simple; *s; s += 2) {
		if (*p == s[0]) {
			*pp = p + 1;
			return (unsigned char)s[1];
		}
	}
	int v = 0, n = 0;
	if (*p == 'x') {
		for (p++; rt_hex_digit((unsigned char)*p) >= 0 && v <= 0xff; p++, n++)
			v = v * 16 + rt_hex_digit((unsigned char)*p);
	} else {
		for (; n < 3 && *p >= '0' && *p <= '7'; p++, n++)
			v = v * 8 + (*p - '0');
	}
	*pp = p;
	return n && v <= 0xff ? v : -1;
}

int rt_printf_format_decode(const char *lit, char *out, size_t len)
{
	size_t n = 0;
	const char *p = lit;
	bool any = false;
	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == '\n')
			p++;
		if (!*p)
			break;
		if (*p++ != '"')
			return -EINVAL;
		any = true;
		while (*p != '"') {
			int c = (unsigned char)*p;
			if (!c)
				return -EINVAL;
			p++;
			if (c == '\\' && (c = escape(&p)) < 0)
				return -EINVAL;
			if (!c || n + 1 >= len)
				return -EINVAL;
			out[n++] = (char)c;
		}
		p++;
	}
	out[n] = '\0';
	return any && rtp_app_format_ok(out) ? 0 : -EINVAL;
}
