/*
 * fmt.h - fast text output for `ringtrace view`: a large output buffer
 * written with fwrite in big chunks, and number, time and string
 * formatting that never goes through printf on the hot path.
 *
 *   struct fmt_out o;
 *   if (fmt_open(&o, stdout, 1 << 20) < 0) ...
 *   fmt_str(&o, "x = ", 4);
 *   fmt_u64(&o, 42);
 *   fmt_putc(&o, '\n');
 *   if (fmt_close(&o) < 0) ... (o.err says why)
 *
 * When a write fails, the buffer stops accepting data (what every call writes is
 * dropped) and o.err holds the -errno (-EPIPE when the reader went away), so
 * the caller checks fmt_failed() once per event and stops.
 *
 * Concurrency: a struct fmt_out belongs to one thread.
 */
#ifndef RINGTRACE_CLI_FMT_H
#define RINGTRACE_CLI_FMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct fmt_out {
	char *buf;	/* owned; freed by fmt_close */
	size_t len;	/* bytes pending in buf */
	size_t cap;	/* size of buf (>= FMT_MIN_ROOM * 2) */
	FILE *f;	/* borrowed; flushed by fmt_close, not closed. NULL:
			 * a memory buffer that grows instead (buf is the
			 * result, take it before fmt_close) */
	int err;	/* 0 or the -errno of the first failed write */
};

/* Every fmt_* call needs at most this much room at once (fmt_reserve). */
#define FMT_MIN_ROOM 128

/* 0 or -ENOMEM. */
int fmt_open(struct fmt_out *o, FILE *f, size_t cap);
/* Write out everything pending, free the buffer: 0 or o->err. */
int fmt_close(struct fmt_out *o);
/* Write out what is pending: 0 or o->err. */
int fmt_flush(struct fmt_out *o);

static inline bool fmt_failed(const struct fmt_out *o)
{
	return o->err != 0;
}

/* A pointer to at least n (<= cap / 2) free bytes; commit with fmt_commit. */
static inline char *fmt_reserve(struct fmt_out *o, size_t n)
{
	if (o->cap - o->len < n)
		fmt_flush(o);
	return o->buf + o->len;
}

/* Also after a failed write: the buffer is then scratch space that the
 * next fmt_reserve short of room empties again without writing it. */
static inline void fmt_commit(struct fmt_out *o, const char *end)
{
	o->len = (size_t)(end - o->buf);
}

static inline void fmt_putc(struct fmt_out *o, char c)
{
	char *p = fmt_reserve(o, 1);
	*p++ = c;
	fmt_commit(o, p);
}

/* Any length (long strings are copied in pieces by the slow path). */
void fmt_str_slow(struct fmt_out *o, const char *s, size_t n);

static inline void fmt_str(struct fmt_out *o, const char *s, size_t n)
{
	if (o->cap - o->len >= n) {
		memcpy(o->buf + o->len, s, n);
		o->len += n;
	} else {
		fmt_str_slow(o, s, n);
	}
}

static inline void fmt_cstr(struct fmt_out *o, const char *s)
{
	fmt_str(o, s, strlen(s));
}

/* Copy n bytes in 16-byte blocks (no call, no length dispatch): reads up
 * to 15 bytes past src + n and writes up to 15 past p + n; the caller
 * guarantees both areas are that large. Returns p + n. */
static inline char *fmt_put_blocks(char *p, const char *src, size_t n)
{
	for (size_t i = 0; i < n; i += 16)
		memcpy(p + i, src + i, 16);
	return p + n;
}

/* Raw writers into a reserved area: each returns the new end. */
char *fmt_put_u64(char *p, uint64_t v);
char *fmt_put_i64(char *p, int64_t v);
/* Exactly `width` digits, zero-padded (v < 10^width). */
char *fmt_put_udigits(char *p, uint64_t v, unsigned width);
/* Exactly 9 digits of v < 10^9 (nanoseconds). */
char *fmt_put_9digits(char *p, uint32_t v);
/* 0x..., 0..., 0b... or decimal for base 16, 8, 2, 10. */
char *fmt_put_base(char *p, uint64_t v, int base);
/* The shortest decimal form that reads back as the same double; `json`
 * makes it a valid JSON number (inf/nan become the strings "Infinity",
 * "-Infinity", "NaN", quotes included). At most 32 bytes. */
char *fmt_put_double(char *p, double d, bool json);

static inline void fmt_u64(struct fmt_out *o, uint64_t v)
{
	fmt_commit(o, fmt_put_u64(fmt_reserve(o, 24), v));
}

static inline void fmt_i64(struct fmt_out *o, int64_t v)
{
	fmt_commit(o, fmt_put_i64(fmt_reserve(o, 24), v));
}

/* The elements of a byte sequence or array: "[ [0] = 0x1, [1] = 0x2 ]" in
 * text (elements in `base` as fmt_put_base writes them; "[ ]" when empty),
 * "[1,2]" in JSON (decimal). */
void fmt_bytes(struct fmt_out *o, const uint8_t *b, size_t n, int base, bool json);

/* A JSON string literal, quotes included: ", \ and control characters are
 * escaped, invalid UTF-8 bytes become U+FFFD. */
void fmt_json_string(struct fmt_out *o, const char *s, size_t n);
/* A C-like quoted string for the text output: ", \, \n, \t, \r escaped,
 * other control bytes as \xNN; other bytes (UTF-8) as they are. */
void fmt_text_string(struct fmt_out *o, const char *s, size_t n);

/*
 * Wall-clock formatting with the broken-down date cached per second:
 * consecutive events in the same second only format their nanoseconds.
 */
struct fmt_clock {
	bool utc;		/* UTC, else the local time zone */
	bool date;		/* "YYYY-MM-DD " before the time */
	int64_t cached_sec;	/* second whose text is in `text` */
	size_t text_len;
	char text[32];		/* "[YYYY-MM-DD ]HH:MM:SS", copied as 32 bytes */
};

void fmt_clock_init(struct fmt_clock *c, bool utc, bool date);
/* "[date ]HH:MM:SS.nnnnnnnnn" of ns since the epoch. Writes at most 48
 * bytes (32 for the cached text whatever its length, then 10). */
char *fmt_put_clock(char *p, struct fmt_clock *c, int64_t ns);
/* "S.nnnnnnnnn" (seconds since the epoch, or a delta); a leading '-' when
 * negative. At most 32 bytes. */
char *fmt_put_seconds(char *p, int64_t ns);

#endif /* RINGTRACE_CLI_FMT_H */
