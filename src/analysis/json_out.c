/*
 * json_out.c - JSON strings, and the analyses as one JSON document (the
 * layout is described in docs/analyze.md).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "../common/escape.h"

#define JSON_BUSIEST 10		/* event names listed per key */

void ra_json_string(FILE *f, const char *s, size_t len)
{
	char buf[256];
	char *p = buf;
	*p++ = '"';
	size_t i = 0;
	for (;;) {
		p = rt_json_escape(p, buf + sizeof(buf) - RT_JSON_STEP - 1, s, len, &i,
				   RT_JSON_HTML);
		if (i >= len)
			break;
		fwrite(buf, 1, (size_t)(p - buf), f);
		p = buf;
	}
	*p++ = '"';
	fwrite(buf, 1, (size_t)(p - buf), f);
}

static void jstr(FILE *f, const char *s)
{
	ra_json_string(f, s, strlen(s));
}

static void write_rates(FILE *f, const struct ra_stats *s, const uint32_t *order,
			uint32_t nr)
{
	fprintf(f, "\"rates\":{\"interval_ns\":%" PRId64 ",\"start_ns\":%" PRId64
		",\"intervals\":%" PRIu32 ",\"names\":[", s->interval_ns,
		s->nr_ev ? s->src.first_ns : 0, s->nr_buckets);
	for (uint32_t i = 0; i < nr; i++) {
		uint32_t n = order[i];
		uint32_t pb = ra_peak_bucket(s, n);
		const uint64_t *row = s->rates + (size_t)n * s->nr_buckets;
		fprintf(f, "%s{\"name\":", i ? "," : "");
		jstr(f, s->src.names.str[n]);
		fprintf(f, ",\"total\":%" PRIu64 ",\"peak_per_s\":%.3f,\"peak_at_ns\":%"
			PRId64 ",\"peak_offset_ns\":%" PRId64 ",\"counts\":[",
			s->name_counts[n], (double)row[pb] * 1e9 / (double)s->interval_ns,
			s->src.first_ns + (int64_t)pb * s->interval_ns,
			(int64_t)pb * s->interval_ns);
		for (uint32_t b = 0; b < s->nr_buckets; b++)
			fprintf(f, b ? ",%" PRIu64 : "%" PRIu64, row[b]);
		fputs("]}", f);
	}
	fputs("]}", f);
}

/* ,"thread":NAME when the key's thread name is known. */
static void write_thread_name(FILE *f, const struct ra_stats *s, uint32_t key)
{
	const char *name = ra_source_thread_name(&s->src, key);
	if (!name)
		return;
	fputs(",\"thread\":", f);
	jstr(f, name);
}

static void write_one_duration(FILE *f, const struct ra_stats *s, uint32_t t)
{
	const struct ra_pair_type *pt = &s->pairer.types[t];
	const struct ra_dur_stats *d = &s->dur[t];
	fputs("{\"pair\":", f);
	jstr(f, pt->label);
	fputs(",\"begin\":", f);
	jstr(f, pt->begin);
	fputs(",\"end\":", f);
	jstr(f, pt->end);
	fprintf(f, ",\"count\":%" PRIu64 ",\"unmatched_begin\":%" PRIu64
		",\"unmatched_end\":%" PRIu64, d->count, pt->unmatched_begin,
		pt->unmatched_end);
	if (d->count)
		fprintf(f, ",\"min_ns\":%" PRId64 ",\"avg_ns\":%.1f,\"p50_ns\":%" PRId64
			",\"p90_ns\":%" PRId64 ",\"p99_ns\":%" PRId64 ",\"max_ns\":%" PRId64,
			d->min, d->avg, d->p50, d->p90, d->p99, d->max);
	fputs(",\"histogram\":[", f);
	int first = 1;
	for (unsigned b = 0; b < RA_HIST_BUCKETS; b++) {
		if (!d->hist[b])
			continue;
		fprintf(f, "%s{\"lower_ns\":%" PRId64 ",\"count\":%" PRIu64 "}",
			first ? "" : ",", ra_hist_lower(b), d->hist[b]);
		first = 0;
	}
	fputs("],\"outliers\":[", f);
	uint64_t top = d->count < s->opt.top ? d->count : s->opt.top;
	for (uint64_t i = 0; i < top; i++) {
		const struct ra_pair *p = &d->sorted[i];
		char wall[64];
		ra_format_wall(p->begin_ns, wall, sizeof(wall));
		fprintf(f, "%s{\"dur_ns\":%" PRId64 ",\"begin_ns\":%" PRId64
			",\"begin_offset_ns\":%" PRId64 ",\"begin_utc\":\"%s\",\"key\":",
			i ? "," : "", p->dur_ns, p->begin_ns,
			ra_ns_diff(p->begin_ns, s->src.first_ns), wall);
		jstr(f, s->src.keys.str[p->key]);
		write_thread_name(f, s, p->key);
		fputc('}', f);
	}
	fputs("]}", f);
}

static void write_threads(FILE *f, const struct ra_stats *s)
{
	fputs("\"threads\":[", f);
	int first = 1;
	for (uint32_t k = 0; k < s->nr_keys && k < s->src.keys.nr; k++) {
		const struct ra_key_stats *ks = &s->keys[k];
		if (!ks->events)
			continue;
		fputs(first ? "{\"key\":" : ",{\"key\":", f);
		first = 0;
		jstr(f, s->src.keys.str[k]);
		write_thread_name(f, s, k);
		fprintf(f, ",\"events\":%" PRIu64 ",\"first_ns\":%" PRId64
			",\"last_ns\":%" PRId64 ",\"paired_ns\":%" PRId64 ",\"busiest\":[",
			ks->events, ks->first_ns, ks->last_ns, ks->paired_ns);
		uint32_t nr;
		uint32_t *order = ra_names_by_count(ks->name_counts, s->src.names.nr, &nr);
		for (uint32_t i = 0; order && i < nr && i < JSON_BUSIEST; i++) {
			fputs(i ? ",{\"name\":" : "{\"name\":", f);
			jstr(f, s->src.names.str[order[i]]);
			fprintf(f, ",\"count\":%" PRIu64 "}", ks->name_counts[order[i]]);
		}
		free(order);
		fputs("]}", f);
	}
	fputc(']', f);
}

void ra_write_json(FILE *f, const struct ra_stats *s, unsigned sections)
{
	fputs("{\"traces\":[", f);
	for (size_t i = 0; i < s->src.nr; i++) {
		if (i)
			fputc(',', f);
		jstr(f, s->src.dirs[i]);
	}
	fputs("],\"key_field\":", f);
	jstr(f, s->src.key_field);
	fprintf(f, ",\"events\":%zu,\"lost_events\":%" PRIu64 ",\"lost_packets\":%"
		PRIu64, s->nr_ev, s->lost_events, s->lost_packets);
	if (s->nr_ev) {
		char wall[64];
		ra_format_wall(s->src.first_ns, wall, sizeof(wall));
		fprintf(f, ",\"first_ns\":%" PRId64 ",\"last_ns\":%" PRId64
			",\"first_utc\":\"%s\"", s->src.first_ns, s->src.last_ns, wall);
	}
	uint32_t nr = 0;
	uint32_t *order = ra_names_by_count(s->name_counts, s->src.names.nr, &nr);
	if (order && (sections & RA_RATES)) {
		fputc(',', f);
		write_rates(f, s, order, nr);
	}
	free(order);
	if (sections & RA_DURATIONS) {
		fputs(",\"durations\":[", f);
		for (uint32_t t = 0; t < s->pairer.nr_types; t++) {
			if (t)
				fputc(',', f);
			write_one_duration(f, s, t);
		}
		fputc(']', f);
	}
	if (sections & RA_THREADS) {
		fputc(',', f);
		write_threads(f, s);
	}
	fputs("}", f);
}
