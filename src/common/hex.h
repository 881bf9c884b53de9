/*
 * hex.h - hexadecimal digits: one digit's value, and byte strings to and
 * from their hexadecimal text (trace uuids in the environment, %XX
 * escapes in session files).
 *
 * Concurrency: pure functions on the caller's memory; callable from any
 * thread.
 */
#ifndef RINGTRACE_COMMON_HEX_H
#define RINGTRACE_COMMON_HEX_H

#include <stddef.h>
#include <stdint.h>

/* The value of hexadecimal digit c (0-9, a-f, A-F), -1 for another
 * character. */
int rt_hex_digit(int c);
/* s, exactly 2 * n hexadecimal digits (nothing before, nothing after),
 * into out[0 .. n). Returns 0, or -EINVAL (out undefined). */
int rt_hex_decode(const char *s, uint8_t *out, size_t n);
/* in[0 .. n) as 2 * n lowercase digits and a NUL into out. */
void rt_hex_encode(const uint8_t *in, size_t n, char *out);

#endif /* RINGTRACE_COMMON_HEX_H */
