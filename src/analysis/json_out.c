/*
 * json_out.c - JSON strings, and the analyses as one JSON document (the
 * layout is described in docs/analyze.md).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"

#define JSON_BUSIEST 10		/* event names listed per key */

size_t ra_utf8_len(const uint8_t *s, size_t left)
{
	size_t n;
	uint32_t min;
	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0) {
		n = 2;
		min = 0x80;
	} else if ((s[0] & 0xf0) == 0xe0) {
		n = 3;
		min = 0x800;
	} else if ((s[0] & 0xf8) == 0xf0) {
		n = 4;
		min = 0x10000;
	} else {
		return 0;
	}
	if (n > left)
		return 0;
	uint32_t cp = s[0] & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void ra_json_string(FILE *f, const char *str, size_t len)
{
	const uint8_t *s = (const uint8_t *)str;
	fputc('"', f);
	for (size_t i = 0; i < len;) {
		size_t run = i;	/* printable ASCII that needs no escape */
		while (run < len && s[run] >= 0x20 && s[run] < 0x7f && s[run] != '"' &&
		       s[run] != '\\' && s[run] != '<' && s[run] != '>' && s[run] != '&')
			run++;
		if (run > i) {
			fwrite(s + i, 1, run - i, f);
			i = run;
			continue;
		}
		uint8_t c = s[i];
		if (c == '"' || c == '\\') {
			fputc('\\', f);
			fputc(c, f);
			i++;
		} else if (c == '\n') {
			fputs("\\n", f);
			i++;
		} else if (c == '\t') {
			fputs("\\t", f);
			i++;
		} else if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x7f) {
			fprintf(f, "\\u%04x", c);
			i++;
		} else {
			size_t n = ra_utf8_len(s + i, len - i);
			if (!n) {
				fputs("\\ufffd", f);
				i++;
			} else {
				fwrite(s + i, 1, n, f);
				i += n;
			}
		}
	}
	fputc('"', f);
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
