/*
 * stats.c - one pass over the events: rates over time, durations of paired
 * events, per-key activity.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis_internal.h"
#include "../common/array.h"

#define AUTO_BUCKETS 50		/* aim of the automatic interval */
#define MAX_BUCKETS 1000000	/* refuse intervals finer than span / this */
/* Intervals counted per name without the events (ra_stats.fine): with
 * at least 10 * AUTO_BUCKETS of them, the automatic interval of the
 * 1-2-5 series is a multiple of their width (a power of 10). */
#define FINE_MAX 1000

static const int64_t series125[3] = { 1, 2, 5 };

int64_t ra_hist_lower(unsigned bucket)
{
	int64_t v = series125[bucket % 3];
	for (unsigned i = 0; i < bucket / 3; i++)
		v *= 10;
	return v;
}

unsigned ra_hist_bucket(int64_t ns)
{
	unsigned b = 0;
	while (b + 1 < RA_HIST_BUCKETS && ra_hist_lower(b + 1) <= ns)
		b++;
	return b;
}

int64_t ra_ns_diff(int64_t a, int64_t b)
{
	int64_t r;
	if (!__builtin_sub_overflow(a, b, &r))
		return r;
	return a > b ? INT64_MAX : INT64_MIN;
}

int ra_parse_duration(const char *s, int64_t *ns)
{
	static const struct { const char *unit; double mult; } units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
	};
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || !(v > 0))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].unit))
			continue;
		double r = v * units[i].mult;
		if (r < 1 || r > 9e18)
			return -EINVAL;
		*ns = (int64_t)r;
		return 0;
	}
	return -EINVAL;
}

void ra_format_duration(int64_t ns, char *out, size_t len)
{
	static const struct { const char *unit; double div; } units[] = {
		{ "s", 1e9 }, { "ms", 1e6 }, { "us", 1e3 },
	};
	double a = ns < 0 ? -(double)ns : (double)ns;
	/* A value that rounds to 1000 of a unit (3 significant digits:
	 * 999.5 and more) is 1 of the next one, never "1e+03ms". */
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (a >= units[i].div * 0.9995) {
			snprintf(out, len, "%.3g%s", (double)ns / units[i].div, units[i].unit);
			return;
		}
	}
	snprintf(out, len, "%" PRId64 "ns", ns);
}

void ra_format_bytes(uint64_t b, char *out, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)b;
	unsigned u = 0;
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(out, len, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
}

void ra_format_wall(int64_t ns, char *out, size_t len)
{
	time_t sec = (time_t)(ns / 1000000000);
	int64_t frac = ns % 1000000000;
	if (frac < 0) {
		frac += 1000000000;
		sec--;
	}
	struct tm tm;
	char date[40] = "?";
	if (gmtime_r(&sec, &tm))
		strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S", &tm);
	snprintf(out, len, "%s.%09" PRId64, date, frac);
}

static int push_ev(struct ra_stats *s, const struct ra_event *ev)
{
	if (RT_ARRAY_GROW(s->ev, s->cap_ev, s->nr_ev + 1, 4096) < 0)
		return -ENOMEM;
	s->ev[s->nr_ev++] = (struct ra_ev){ .ns = ev->ns, .name = ev->name,
					    .key = ev->key, .cpu = ev->cpu,
					    .trace = ev->trace };
	return 0;
}

static int push_pair(struct ra_stats *s, const struct ra_pair_done *d, uint32_t key)
{
	if (RT_ARRAY_GROW(s->pairs, s->cap_pairs, s->nr_pairs + 1, 1024) < 0)
		return -ENOMEM;
	s->pairs[s->nr_pairs++] = (struct ra_pair){
		.begin_ns = d->begin_ns, .dur_ns = ra_ns_diff(d->end_ns, d->begin_ns),
		.type = d->type, .key = key, .depth = d->depth };
	return 0;
}

static int grow_keys(struct ra_stats *s, uint32_t key)
{
	uint32_t old = s->nr_keys;
	if (RT_ARRAY_GROW_ZEROED(s->keys, s->nr_keys, (size_t)key + 1, 16) < 0)
		return -ENOMEM;
	for (uint32_t i = old; i < s->nr_keys; i++) {
		s->keys[i].first_ns = INT64_MAX;
		s->keys[i].last_ns = INT64_MIN;
	}
	return 0;
}

/* Intervals of 10 times the width: each count moves to index / 10 (an
 * index never below the ones already moved). */
static void coarsen(struct ra_stats *s)
{
	s->width *= 10;
	for (uint32_t n = 0; n < s->nr_fine; n++) {
		struct ra_rate_counts *f = &s->fine[n];
		for (size_t j = 0; j < f->nr; j++) {
			uint64_t v = f->n[j];
			f->n[j] = 0;
			f->n[j / 10] += v;
		}
	}
}

/* Count ev in s->fine (the events are not kept): 0, -ENOMEM, or -EAGAIN
 * when it comes before the first event (the rates are then counted from
 * the events, kept). */
static int count_rate(struct ra_stats *s, const struct ra_event *ev)
{
	if (s->nr_ev == 1) {
		s->fine_from = ev->ns;
		s->width = s->opt.interval_ns ? (uint64_t)s->opt.interval_ns : 1;
	}
	if (ev->ns < s->fine_from)
		return -EAGAIN;
	uint64_t off = (uint64_t)ev->ns - (uint64_t)s->fine_from;
	uint64_t i = off / s->width;
	if (s->opt.interval_ns) {
		/* As many intervals as finish_rates refuses: it will. */
		if (i >= MAX_BUCKETS || s->too_fine) {
			s->too_fine = true;
			return 0;
		}
	} else {
		for (; i >= FINE_MAX; i = off / s->width)
			coarsen(s);
	}
	if (RT_ARRAY_GROW_ZEROED(s->fine, s->nr_fine, (size_t)ev->name + 1, 16) < 0)
		return -ENOMEM;
	struct ra_rate_counts *f = &s->fine[ev->name];
	if (RT_ARRAY_GROW_ZEROED(f->n, f->nr, (size_t)i + 1, 64) < 0)
		return -ENOMEM;
	f->n[i]++;
	return 0;
}

/* 0, -ENOMEM, or -EAGAIN (count_rate). */
static int account(struct ra_stats *s, const struct ra_event *ev, uint64_t seq)
{
	int ret;
	if (s->opt.keep_events) {
		ret = push_ev(s, ev);
	} else {
		s->nr_ev++;
		ret = count_rate(s, ev);
	}
	if (ret < 0)
		return ret;
	if (grow_keys(s, ev->key) < 0)
		return -ENOMEM;
	struct ra_key_stats *k = &s->keys[ev->key];
	if (RT_ARRAY_GROW_ZEROED(k->name_counts, k->nr_name_counts, (size_t)ev->name + 1, 8) < 0)
		return -ENOMEM;
	k->name_counts[ev->name]++;
	k->events++;
	if (ev->ns < k->first_ns)
		k->first_ns = ev->ns;
	if (ev->ns > k->last_ns)
		k->last_ns = ev->ns;

	struct ra_pair_done d;
	int r = ra_pairer_feed(&s->pairer, &s->src.names, ev, seq, &d);
	if (r < 0)
		return r;
	if (r == RA_PAIR_BEGIN && s->pairer.stacks[ev->key].nr == 1)
		k->open_since = ev->ns;
	if (r == RA_PAIR_DONE) {
		if (push_pair(s, &d, ev->key) < 0)
			return -ENOMEM;
		if (d.depth == 0 && __builtin_add_overflow(k->paired_ns,
				ra_ns_diff(ev->ns, k->open_since), &k->paired_ns))
			k->paired_ns = INT64_MAX;
	}
	return 0;
}

static int by_dur_desc(const void *a, const void *b)
{
	const struct ra_pair *x = a, *y = b;
	if (x->dur_ns != y->dur_ns)
		return x->dur_ns < y->dur_ns ? 1 : -1;
	return (x->begin_ns > y->begin_ns) - (x->begin_ns < y->begin_ns);
}

static int finish_durations(struct ra_stats *s)
{
	uint32_t nt = s->pairer.nr_types;
	s->dur = calloc(nt ? nt : 1, sizeof(*s->dur));
	if (!s->dur)
		return -ENOMEM;
	for (size_t i = 0; i < s->nr_pairs; i++)
		s->dur[s->pairs[i].type].count++;
	for (uint32_t t = 0; t < nt; t++) {
		struct ra_dur_stats *d = &s->dur[t];
		d->sorted = malloc((d->count ? d->count : 1) * sizeof(*d->sorted));
		if (!d->sorted)
			return -ENOMEM;
		d->count = 0;
	}
	for (size_t i = 0; i < s->nr_pairs; i++) {
		struct ra_dur_stats *d = &s->dur[s->pairs[i].type];
		d->sorted[d->count++] = s->pairs[i];
	}
	for (uint32_t t = 0; t < nt; t++) {
		struct ra_dur_stats *d = &s->dur[t];
		if (!d->count)
			continue;
		qsort(d->sorted, d->count, sizeof(*d->sorted), by_dur_desc);
		double sum = 0;
		for (uint64_t i = 0; i < d->count; i++) {
			sum += (double)d->sorted[i].dur_ns;
			d->hist[ra_hist_bucket(d->sorted[i].dur_ns)]++;
		}
		/* sorted is longest first: the q-quantile (nearest rank) of the
		 * ascending order sits at count - 1 - (count - 1) * q. */
		uint64_t last = d->count - 1;
		d->max = d->sorted[0].dur_ns;
		d->min = d->sorted[last].dur_ns;
		d->p50 = d->sorted[last - last * 50 / 100].dur_ns;
		d->p90 = d->sorted[last - last * 90 / 100].dur_ns;
		d->p99 = d->sorted[last - last * 99 / 100].dur_ns;
		d->avg = sum / (double)d->count;
	}
	return 0;
}

static int finish_rates(struct ra_stats *s, char *err, size_t errlen)
{
	/* last - first in uint64_t: the difference of two int64_t fits */
	uint64_t span = s->nr_ev ? (uint64_t)s->src.last_ns - (uint64_t)s->src.first_ns : 0;
	int64_t iv = s->opt.interval_ns;
	if (!iv) {
		unsigned b = 0;
		while (b + 1 < RA_HIST_BUCKETS &&
		       (uint64_t)ra_hist_lower(b) * AUTO_BUCKETS < span)
			b++;
		iv = ra_hist_lower(b);
		if ((uint64_t)iv < span / AUTO_BUCKETS)	/* beyond the 1-2-5 steps */
			iv = (int64_t)(span / AUTO_BUCKETS + 1);
	}
	if (span / (uint64_t)iv >= MAX_BUCKETS) {
		snprintf(err, errlen, "interval %" PRId64 "ns is too small for a trace "
			 "of %" PRIu64 "ns (at most %d intervals)", iv, span, MAX_BUCKETS);
		return -EINVAL;
	}
	/* Beyond the 1-2-5 series: not a multiple of the counted width. */
	if (!s->opt.keep_events && s->nr_ev && (uint64_t)iv % s->width)
		return -EAGAIN;
	s->interval_ns = iv;
	s->nr_buckets = (uint32_t)(span / (uint64_t)iv + 1);
	uint32_t nn = s->src.names.nr;
	s->rates = calloc((size_t)(nn ? nn : 1) * s->nr_buckets, sizeof(*s->rates));
	s->name_counts = calloc(nn ? nn : 1, sizeof(*s->name_counts));
	if (!s->rates || !s->name_counts)
		return -ENOMEM;
	for (size_t i = 0; s->ev && i < s->nr_ev; i++) {
		const struct ra_ev *e = &s->ev[i];
		uint64_t off = (uint64_t)e->ns - (uint64_t)s->src.first_ns;
		s->rates[(size_t)e->name * s->nr_buckets + off / (uint64_t)iv]++;
		s->name_counts[e->name]++;
	}
	/* Counted from the first event (the earliest): interval j of width
	 * w is in interval j / (iv / w) of width iv. */
	uint64_t m = s->width ? (uint64_t)iv / s->width : 1;
	for (uint32_t n = 0; n < s->nr_fine; n++) {
		const struct ra_rate_counts *f = &s->fine[n];
		for (size_t j = 0; j < f->nr; j++) {
			if (!f->n[j] || j / m >= s->nr_buckets)
				continue;
			s->rates[(size_t)n * s->nr_buckets + j / m] += f->n[j];
			s->name_counts[n] += f->n[j];
		}
	}
	return 0;
}

/* Every key's counts per name for every name (counted as they came). */
static int finish_keys(struct ra_stats *s)
{
	uint32_t nn = s->src.names.nr;
	for (uint32_t k = 0; k < s->nr_keys; k++) {
		struct ra_key_stats *ks = &s->keys[k];
		if (ks->events && RT_ARRAY_GROW_ZEROED(ks->name_counts, ks->nr_name_counts, nn, 8) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* ra_stats_run, keeping the events or not: also -EAGAIN when the rates
 * need them (count_rate, finish_rates). */
static int stats_pass(struct ra_stats *s, const char *const *dirs, size_t nr,
		      const struct ra_options *opt, bool keep_events, char *err, size_t errlen)
{
	memset(s, 0, sizeof(*s));
	s->opt = *opt;
	s->opt.keep_events = keep_events;
	ra_pairer_init(&s->pairer, opt->auto_pairs);
	for (size_t i = 0; i < opt->nr_pairs; i++) {
		int ret = ra_pairer_add(&s->pairer, opt->pairs[i], err, errlen);
		if (ret < 0)
			return ret;
	}
	int ret = ra_source_open(&s->src, dirs, nr, opt->key_field, err, errlen);
	if (ret < 0)
		return ret;
	struct ra_event ev;
	uint64_t seq = 0;
	while ((ret = ra_source_next(&s->src, &ev, err, errlen)) > 0) {
		ret = account(s, &ev, seq++);
		if (ret < 0) {
			if (ret == -ENOMEM)
				snprintf(err, errlen, "out of memory");
			return ret;
		}
	}
	if (ret < 0)
		return ret;
	ra_pairer_finish(&s->pairer);
	ra_source_lost(&s->src, &s->lost_events, &s->lost_packets);
	ret = finish_rates(s, err, errlen);
	if (ret == 0)
		ret = finish_durations(s);
	if (ret == 0)
		ret = finish_keys(s);
	if (ret == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	return ret;
}

int ra_stats_run(struct ra_stats *s, const char *const *dirs, size_t nr,
		 const struct ra_options *opt, char *err, size_t errlen)
{
	/* The events are kept only when asked, or when the rates cannot be
	 * counted without them (a trace whose time goes back before its
	 * first event, an automatic interval beyond the 1-2-5 series): the
	 * traces are then read again. */
	int ret = stats_pass(s, dirs, nr, opt, opt->keep_events, err, errlen);
	if (ret == -EAGAIN && !s->opt.keep_events) {
		ra_stats_free(s);
		ret = stats_pass(s, dirs, nr, opt, true, err, errlen);
	}
	return ret;
}

void ra_stats_free(struct ra_stats *s)
{
	for (uint32_t t = 0; s->dur && t < s->pairer.nr_types; t++)
		free(s->dur[t].sorted);
	free(s->dur);
	for (uint32_t k = 0; k < s->nr_keys; k++)
		free(s->keys[k].name_counts);
	free(s->keys);
	free(s->name_counts);
	free(s->rates);
	free(s->pairs);
	free(s->ev);
	for (uint32_t n = 0; n < s->nr_fine; n++)
		free(s->fine[n].n);
	free(s->fine);
	ra_pairer_free(&s->pairer);
	ra_source_close(&s->src);
	memset(s, 0, sizeof(*s));
}

struct count_ctx {
	const uint64_t *counts;
};

static int by_name_count_desc(const void *a, const void *b, void *arg)
{
	const uint64_t *c = ((struct count_ctx *)arg)->counts;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	if (c[x] != c[y])
		return c[x] < c[y] ? 1 : -1;
	return (x > y) - (x < y);
}

uint32_t *ra_names_by_count(const uint64_t *counts, uint32_t nr_names, uint32_t *nr)
{
	uint32_t *idx = malloc((nr_names ? nr_names : 1) * sizeof(*idx));
	*nr = 0;
	if (!idx)
		return NULL;
	for (uint32_t i = 0; i < nr_names; i++)
		if (counts[i])
			idx[(*nr)++] = i;
	struct count_ctx ctx = { counts };
	qsort_r(idx, *nr, sizeof(*idx), by_name_count_desc, &ctx);
	return idx;
}

uint32_t ra_peak_bucket(const struct ra_stats *s, uint32_t n)
{
	const uint64_t *row = s->rates + (size_t)n * s->nr_buckets;
	uint32_t best = 0;
	for (uint32_t b = 1; b < s->nr_buckets; b++)
		if (row[b] > row[best])
			best = b;
	return best;
}
