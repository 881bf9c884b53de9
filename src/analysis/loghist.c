/*
 * loghist.c - ra_loghist: a log-bucket histogram of durations (HDR-style), in
 * memory bounded by the range of the values, not their number.
 *
 * Values 0 .. 2 * RA_LOGHIST_SUB - 1 have a bucket each (exact); above, each
 * power of two [2^e, 2^(e+1)) is cut into RA_LOGHIST_SUB buckets of
 * 2^e / RA_LOGHIST_SUB, so a bucket is at most 1/RA_LOGHIST_SUB of its values
 * wide. A percentile is the middle of the bucket of its rank (nearest
 * rank), clamped to the exact min and max: within half a bucket, 1/128 of
 * the value. The rows of a power of two are allocated when a value first
 * falls in it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"

/* Row (power of two) and column of v >= 0. Row 0 holds 0 .. 2 * SUB - 1
 * (2 * SUB buckets, exact); row r >= 1 holds [2^(r + SHIFT), 2^(r + SHIFT + 1)). */
#define SHIFT 6			/* log2(RA_LOGHIST_SUB) */

static unsigned row_of(uint64_t v)
{
	if (v < 2 * RA_LOGHIST_SUB)
		return 0;
	return (unsigned)(63 - __builtin_clzll(v)) - SHIFT;
}

static unsigned row_len(unsigned row)
{
	return row ? RA_LOGHIST_SUB : 2 * RA_LOGHIST_SUB;
}

static unsigned col_of(uint64_t v, unsigned row)
{
	if (!row)
		return (unsigned)v;
	return (unsigned)(v >> row) & (RA_LOGHIST_SUB - 1);
}

/* Lowest value of bucket (row, col) and its width. */
static uint64_t bucket_low(unsigned row, unsigned col, uint64_t *width)
{
	if (!row) {
		*width = 1;
		return col;
	}
	*width = (uint64_t)1 << row;
	return ((uint64_t)1 << (row + SHIFT)) + (uint64_t)col * *width;
}

int ra_loghist_add(struct ra_loghist *h, int64_t ns)
{
	uint64_t v = ns < 0 ? 0 : (uint64_t)ns;
	unsigned row = row_of(v);
	if (!h->rows) {
		h->rows = calloc(RA_LOGHIST_ROWS, sizeof(*h->rows));
		if (!h->rows)
			return -ENOMEM;
	}
	if (!h->rows[row]) {
		h->rows[row] = calloc(row_len(row), sizeof(**h->rows));
		if (!h->rows[row])
			return -ENOMEM;
	}
	h->rows[row][col_of(v, row)]++;
	if (!h->count || (int64_t)v < h->min)
		h->min = (int64_t)v;
	if (!h->count || (int64_t)v > h->max)
		h->max = (int64_t)v;
	h->count++;
	h->sum = h->sum + v < h->sum ? UINT64_MAX : h->sum + v;
	return 0;
}

int64_t ra_loghist_percentile(const struct ra_loghist *h, double pct)
{
	if (!h->count)
		return 0;
	uint64_t rank = (uint64_t)(pct / 100.0 * (double)h->count);
	if ((double)rank < pct / 100.0 * (double)h->count)
		rank++;		/* ceil: nearest rank */
	if (rank <= 1)
		return h->min;
	if (rank >= h->count)
		return h->max;
	uint64_t seen = 0;
	for (unsigned r = 0; r < RA_LOGHIST_ROWS; r++) {
		if (!h->rows[r])
			continue;
		for (unsigned c = 0; c < row_len(r); c++) {
			seen += h->rows[r][c];
			if (seen < rank)
				continue;
			uint64_t width, low = bucket_low(r, c, &width);
			int64_t mid = (int64_t)(low + width / 2);
			return mid < h->min ? h->min : mid > h->max ? h->max : mid;
		}
	}
	return h->max;
}

void ra_loghist_free(struct ra_loghist *h)
{
	if (h->rows)
		for (unsigned r = 0; r < RA_LOGHIST_ROWS; r++)
			free(h->rows[r]);
	free(h->rows);
	memset(h, 0, sizeof(*h));
}

int ra_loghist_merge(struct ra_loghist *dst, const struct ra_loghist *src)
{
	if (!src->count)
		return 0;
	if (!dst->rows) {
		dst->rows = calloc(RA_LOGHIST_ROWS, sizeof(*dst->rows));
		if (!dst->rows)
			return -ENOMEM;
	}
	for (unsigned r = 0; r < RA_LOGHIST_ROWS; r++) {
		if (!src->rows[r])
			continue;
		if (!dst->rows[r]) {
			dst->rows[r] = calloc(row_len(r), sizeof(**dst->rows));
			if (!dst->rows[r])
				return -ENOMEM;
		}
		for (unsigned c = 0; c < row_len(r); c++)
			dst->rows[r][c] += src->rows[r][c];
	}
	if (!dst->count || src->min < dst->min)
		dst->min = src->min;
	if (!dst->count || src->max > dst->max)
		dst->max = src->max;
	dst->count += src->count;
	dst->sum = dst->sum + src->sum < dst->sum ? UINT64_MAX : dst->sum + src->sum;
	return 0;
}
