/*
 * text_out.c - the analyses as text tables, sparklines and histograms.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"

#define SPARK_COLUMNS 60	/* sparkline width; buckets are summed to fit */
#define TABLE_NAMES 6		/* names shown as columns of the rate table */
#define TABLE_ROWS 200		/* intervals shown in the rate table */
#define HIST_WIDTH 40		/* characters of the longest histogram bar */
#define BUSIEST 3		/* event names listed per key */

static const char *const spark[8] = { "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█" };

static void sparkline(FILE *f, const struct ra_stats *s, uint32_t n)
{
	const uint64_t *row = s->rates + (size_t)n * s->nr_buckets;
	uint32_t cols = s->nr_buckets < SPARK_COLUMNS ? s->nr_buckets : SPARK_COLUMNS;
	uint64_t sum[SPARK_COLUMNS] = { 0 }, max = 0;
	for (uint32_t b = 0; b < s->nr_buckets; b++)
		sum[(uint64_t)b * cols / s->nr_buckets] += row[b];
	for (uint32_t c = 0; c < cols; c++)
		if (sum[c] > max)
			max = sum[c];
	for (uint32_t c = 0; c < cols; c++)
		fputs(sum[c] ? spark[(sum[c] * 7 + max - 1) / max] : " ", f);
}

static void write_rates(FILE *f, const struct ra_stats *s, const uint32_t *order,
			uint32_t nr)
{
	char iv[32], at[32];
	ra_format_duration(s->interval_ns, iv, sizeof(iv));
	fprintf(f, "\n== Event rates (interval %s, %" PRIu32 " intervals) ==\n", iv,
		s->nr_buckets);
	fprintf(f, "%-36s %10s %12s %12s  %s\n", "event", "total", "peak/s",
		"peak at", "over time");
	for (uint32_t i = 0; i < nr; i++) {
		uint32_t n = order[i];
		uint32_t pb = ra_peak_bucket(s, n);
		uint64_t peak = s->rates[(size_t)n * s->nr_buckets + pb];
		ra_format_duration((int64_t)pb * s->interval_ns, at, sizeof(at));
		fprintf(f, "%-36s %10" PRIu64 " %12.0f %12s  ", s->src.names.str[n],
			s->name_counts[n], (double)peak * 1e9 / (double)s->interval_ns,
			pb ? at : "0");
		sparkline(f, s, n);
		fputc('\n', f);
	}
	uint32_t cols = nr < TABLE_NAMES ? nr : TABLE_NAMES;
	fprintf(f, "\nevents per interval (offset from the first event%s):\n",
		nr > cols ? "; most frequent names" : "");
	fprintf(f, "%12s %10s", "offset", "all");
	for (uint32_t c = 0; c < cols; c++) {
		const char *name = s->src.names.str[order[c]];
		const char *colon = strchr(name, ':');
		fprintf(f, " %14.14s", colon ? colon + 1 : name);
	}
	fputc('\n', f);
	uint32_t rows = s->nr_buckets < TABLE_ROWS ? s->nr_buckets : TABLE_ROWS;
	for (uint32_t b = 0; b < rows; b++) {
		uint64_t all = 0;
		for (uint32_t i = 0; i < nr; i++)
			all += s->rates[(size_t)order[i] * s->nr_buckets + b];
		ra_format_duration((int64_t)b * s->interval_ns, at, sizeof(at));
		fprintf(f, "%12s %10" PRIu64, b ? at : "0", all);
		for (uint32_t c = 0; c < cols; c++)
			fprintf(f, " %14" PRIu64, s->rates[(size_t)order[c] * s->nr_buckets + b]);
		fputc('\n', f);
	}
	if (rows < s->nr_buckets)
		fprintf(f, "(%" PRIu32 " more intervals: use --format=json or a larger "
			"--interval)\n", s->nr_buckets - rows);
}

static void write_one_duration(FILE *f, const struct ra_stats *s, uint32_t t)
{
	const struct ra_pair_type *pt = &s->pairer.types[t];
	const struct ra_dur_stats *d = &s->dur[t];
	char v[6][32];
	fprintf(f, "\n%s  (%s .. %s)\n", pt->label, pt->begin, pt->end);
	fprintf(f, "  count %" PRIu64 ", unmatched begins %" PRIu64
		", unmatched ends %" PRIu64 "\n", d->count, pt->unmatched_begin,
		pt->unmatched_end);
	if (!d->count)
		return;
	ra_format_duration(d->min, v[0], sizeof(v[0]));
	ra_format_duration((int64_t)d->avg, v[1], sizeof(v[1]));
	ra_format_duration(d->p50, v[2], sizeof(v[2]));
	ra_format_duration(d->p99, v[3], sizeof(v[3]));
	ra_format_duration(d->max, v[4], sizeof(v[4]));
	fprintf(f, "  min %s  avg %s  p50 %s  p99 %s  max %s\n", v[0], v[1], v[2],
		v[3], v[4]);
	uint64_t hmax = 0;
	unsigned lo = RA_HIST_BUCKETS, hi = 0;
	for (unsigned b = 0; b < RA_HIST_BUCKETS; b++) {
		if (!d->hist[b])
			continue;
		hmax = d->hist[b] > hmax ? d->hist[b] : hmax;
		lo = b < lo ? b : lo;
		hi = b;
	}
	fprintf(f, "  histogram (log scale):\n");
	for (unsigned b = lo; b <= hi; b++) {
		ra_format_duration(ra_hist_lower(b), v[0], sizeof(v[0]));
		fprintf(f, "  >= %8s %8" PRIu64 " ", v[0], d->hist[b]);
		unsigned w = (unsigned)((d->hist[b] * HIST_WIDTH + hmax - 1) / hmax);
		for (unsigned i = 0; i < w; i++)
			fputc('#', f);
		fputc('\n', f);
	}
	uint64_t top = d->count < s->opt.top ? d->count : s->opt.top;
	if (top)
		fprintf(f, "  top %" PRIu64 " outliers:\n  %10s  %-29s  %20s  %s\n", top,
			"duration", "begin (UTC)", "begin (ns)", "thread");
	for (uint64_t i = 0; i < top; i++) {
		const struct ra_pair *p = &d->sorted[i];
		ra_format_duration(p->dur_ns, v[0], sizeof(v[0]));
		char wall[64], thread[256];
		ra_format_wall(p->begin_ns, wall, sizeof(wall));
		ra_source_thread_label(&s->src, p->key, thread, sizeof(thread));
		fprintf(f, "  %10s  %-29s  %20" PRId64 "  %s\n", v[0], wall, p->begin_ns,
			thread);
	}
}

static void write_threads(FILE *f, const struct ra_stats *s)
{
	fprintf(f, "\n== Activity per %s ==\n", s->src.key_field);
	fprintf(f, "%-12s %-16s %10s %12s %12s %12s  %s\n", s->src.key_field, "thread",
		"events", "first", "last", "in pairs", "busiest events");
	for (uint32_t k = 0; k < s->nr_keys && k < s->src.keys.nr; k++) {
		const struct ra_key_stats *ks = &s->keys[k];
		if (!ks->events)
			continue;
		char first[32], last[32], paired[32];
		ra_format_duration(ra_ns_diff(ks->first_ns, s->src.first_ns), first, sizeof(first));
		ra_format_duration(ra_ns_diff(ks->last_ns, s->src.first_ns), last, sizeof(last));
		ra_format_duration(ks->paired_ns, paired, sizeof(paired));
		const char *name = ra_source_thread_name(&s->src, k);
		fprintf(f, "%-12s %-16s %10" PRIu64 " %12s %12s %12s  ", s->src.keys.str[k],
			name ? name : "-", ks->events, first, last, paired);
		uint32_t nr;
		uint32_t *order = ra_names_by_count(ks->name_counts, s->src.names.nr, &nr);
		for (uint32_t i = 0; order && i < nr && i < BUSIEST; i++)
			fprintf(f, "%s%s (%" PRIu64 ")", i ? ", " : "",
				s->src.names.str[order[i]], ks->name_counts[order[i]]);
		free(order);
		fputc('\n', f);
	}
	fprintf(f, "(first/last: offset from the first event of the trace)\n");
}

void ra_write_text(FILE *f, const struct ra_stats *s, unsigned sections)
{
	char span[32], first[64];
	int64_t span_ns = s->nr_ev ? ra_ns_diff(s->src.last_ns, s->src.first_ns) : 0;
	ra_format_duration(span_ns, span, sizeof(span));
	for (size_t i = 0; i < s->src.nr; i++)
		fprintf(f, "trace: %s\n", s->src.dirs[i]);
	if (s->nr_ev) {
		ra_format_wall(s->src.first_ns, first, sizeof(first));
		fprintf(f, "first event: %s UTC (%" PRId64 " ns), span %s\n", first,
			s->src.first_ns, span);
	}
	fprintf(f, "events: %zu, lost events: %" PRIu64 ", lost packets: %" PRIu64 "\n",
		s->nr_ev, s->lost_events, s->lost_packets);
	uint32_t nr;
	uint32_t *order = ra_names_by_count(s->name_counts, s->src.names.nr, &nr);
	if (!order)
		return;
	if (sections & RA_RATES)
		write_rates(f, s, order, nr);
	free(order);
	if (sections & RA_DURATIONS) {
		fprintf(f, "\n== Durations of paired events (key: %s) ==\n", s->src.key_field);
		if (!s->pairer.nr_types)
			fprintf(f, "no paired events (P:X_entry/P:X_exit, P:X_begin/P:X_end, "
				"P:X_start/P:X_stop, P:entry/P:exit, P:begin/P:end, "
				"P:start/P:stop, or --pair)\n");
		for (uint32_t t = 0; t < s->pairer.nr_types; t++)
			write_one_duration(f, s, t);
	}
	if (sections & RA_THREADS)
		write_threads(f, s);
}
