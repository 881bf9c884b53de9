/*
 * report.c - the self-contained HTML report: the page of
 * report_template.html with the data embedded as JSON where the marker is.
 *
 * Data (see docs/report.md): {"title", "analysis": ra_write_json's
 * document, "names": event names, "pairs": pair labels, "lane_cap",
 * "lanes": [{"kind": "cpu"|"thread", "label", "events": total,
 * "step": keep one in step, "t": [ns from the first event], "n": [name
 * index], "bars": [[start, dur, pair index], ...]}]}. Every string goes
 * through ra_json_string, which escapes '<', so no "</script>" can end
 * the data early.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "report_template.h"

static void jstr(FILE *f, const char *s)
{
	ra_json_string(f, s, strlen(s));
}

static uint64_t step_for(uint64_t n, size_t cap)
{
	return n <= cap ? 1 : (n + cap - 1) / cap;
}

/* One lane: the events with ev.cpu == id (cpu lane) or ev.key == id. */
static void write_lane(FILE *f, const struct ra_stats *s, bool cpu, uint32_t id,
		       size_t cap)
{
	uint64_t n = 0, nbars = 0;
	for (size_t i = 0; i < s->nr_ev; i++)
		n += (cpu ? s->ev[i].cpu : s->ev[i].key) == id;
	if (!cpu)
		for (size_t i = 0; i < s->nr_pairs; i++)
			nbars += s->pairs[i].key == id;
	uint64_t step = step_for(n, cap), bstep = step_for(nbars, cap);
	char label[192];
	if (cpu && id == UINT32_MAX)
		snprintf(label, sizeof(label), "CPU unknown");
	else if (cpu)
		snprintf(label, sizeof(label), "CPU %" PRIu32, id);
	else
		snprintf(label, sizeof(label), "%s %s", s->src.key_field,
			 s->src.keys.str[id]);
	fprintf(f, "{\"kind\":\"%s\",\"label\":", cpu ? "cpu" : "thread");
	jstr(f, label);
	fprintf(f, ",\"events\":%" PRIu64 ",\"step\":%" PRIu64 ",\"pairs\":%" PRIu64
		",\"bar_step\":%" PRIu64 ",\"t\":[", n, step, nbars, bstep);
	uint64_t seen = 0, out = 0;
	for (size_t i = 0; i < s->nr_ev; i++) {
		if ((cpu ? s->ev[i].cpu : s->ev[i].key) != id || seen++ % step)
			continue;
		fprintf(f, out++ ? ",%" PRId64 : "%" PRId64, ra_ns_diff(s->ev[i].ns, s->src.first_ns));
	}
	fputs("],\"n\":[", f);
	seen = out = 0;
	for (size_t i = 0; i < s->nr_ev; i++) {
		if ((cpu ? s->ev[i].cpu : s->ev[i].key) != id || seen++ % step)
			continue;
		fprintf(f, out++ ? ",%" PRIu32 : "%" PRIu32, s->ev[i].name);
	}
	fputs("],\"bars\":[", f);
	seen = out = 0;
	for (size_t i = 0; !cpu && i < s->nr_pairs; i++) {
		const struct ra_pair *p = &s->pairs[i];
		if (p->key != id || seen++ % bstep)
			continue;
		fprintf(f, "%s[%" PRId64 ",%" PRId64 ",%" PRIu32 ",%" PRIu32 "]",
			out++ ? "," : "", ra_ns_diff(p->begin_ns, s->src.first_ns), p->dur_ns,
			p->type, p->depth);
	}
	fputs("]}", f);
}

static int by_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* The distinct CPUs of the events, sorted. NULL if out of memory. */
static uint32_t *cpus_of(const struct ra_stats *s, size_t *nr)
{
	size_t cap = 16;
	uint32_t *cpus = malloc(cap * sizeof(*cpus));
	*nr = 0;
	for (size_t i = 0; cpus && i < s->nr_ev; i++) {
		uint32_t c = s->ev[i].cpu;
		size_t j = 0;
		while (j < *nr && cpus[j] != c)
			j++;
		if (j < *nr)
			continue;
		if (*nr == cap) {
			uint32_t *n = realloc(cpus, 2 * cap * sizeof(*n));
			if (!n) {
				free(cpus);
				return NULL;
			}
			cpus = n;
			cap *= 2;
		}
		cpus[(*nr)++] = c;
	}
	if (cpus)
		qsort(cpus, *nr, sizeof(*cpus), by_u32);
	return cpus;
}

static void write_data(FILE *f, const struct ra_stats *s, const char *title,
		       size_t cap, const uint32_t *cpus, size_t nr_cpus)
{
	fputs("{\"title\":", f);
	jstr(f, title);
	fputs(",\"analysis\":", f);
	ra_write_json(f, s, RA_RATES | RA_DURATIONS | RA_THREADS);
	fputs(",\"names\":[", f);
	for (uint32_t i = 0; i < s->src.names.nr; i++) {
		if (i)
			fputc(',', f);
		jstr(f, s->src.names.str[i]);
	}
	fputs("],\"pairs\":[", f);
	for (uint32_t i = 0; i < s->pairer.nr_types; i++) {
		if (i)
			fputc(',', f);
		jstr(f, s->pairer.types[i].label);
	}
	fprintf(f, "],\"lane_cap\":%zu,\"lanes\":[", cap);
	for (size_t i = 0; i < nr_cpus; i++) {
		if (i)
			fputc(',', f);
		write_lane(f, s, true, cpus[i], cap);
	}
	bool first = nr_cpus == 0;
	for (uint32_t k = 0; k < s->nr_keys && k < s->src.keys.nr; k++) {
		if (!s->keys[k].events)
			continue;
		if (!first)
			fputc(',', f);
		first = false;
		write_lane(f, s, false, k, cap);
	}
	fputs("]}", f);
}

int ra_write_report(FILE *f, const struct ra_stats *s, const char *title,
		    size_t lane_cap)
{
	const char *mark = strstr(ra_report_template, RA_REPORT_MARKER);
	if (!mark || !lane_cap)
		return -EINVAL;
	size_t nr_cpus;
	uint32_t *cpus = cpus_of(s, &nr_cpus);
	if (!cpus)
		return -ENOMEM;
	fwrite(ra_report_template, 1, (size_t)(mark - ra_report_template), f);
	write_data(f, s, title, lane_cap, cpus, nr_cpus);
	fputs(mark + strlen(RA_REPORT_MARKER), f);
	free(cpus);
	return ferror(f) ? -EIO : 0;
}
