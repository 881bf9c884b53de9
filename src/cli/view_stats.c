/*
 * view_stats.c - `ringtrace view --stats`: counts of the events that pass
 * the filters, per event name and per CPU, the time span and rate, and
 * what each stream file lost.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../common/array.h"
#include "view.h"

int view_stats_add(struct view_stats *s, struct view_class *classes,
		   const struct view_event *e)
{
	const struct rtr_event *ev = e->ev;
	if (!s->events)
		s->first_ns = ev->ns;
	s->last_ns = ev->ns;
	s->events++;
	classes[e->gclass].count++;
	if (ev->cpu == UINT32_MAX) {
		s->unknown_cpu++;
		return 0;
	}
	if (RT_ARRAY_GROW_ZEROED(s->per_cpu, s->nr_cpu, (size_t)ev->cpu + 1, 8) < 0)
		return -ENOMEM;
	s->per_cpu[ev->cpu]++;
	return 0;
}

int view_stats_count(struct view_stats *s, struct view_class *classes, size_t nr,
		     struct rtr_trace *t)
{
	const struct rtr_stream_stats *st;
	size_t ns = rtr_streams(t, &st);
	uint64_t *per = calloc(nr + 1, sizeof(*per));
	uint32_t *cpus = calloc(ns + 1, sizeof(*cpus));
	struct rtr_count_result res;
	int ret = per && cpus ? rtr_count(t, per, cpus, &res) : -ENOMEM;
	if (ret < 0)
		goto out;
	for (size_t k = 0; k < nr; k++)
		classes[k].count += per[k];
	if (res.events && !s->events)
		s->first_ns = res.first_ns;
	if (res.events)
		s->last_ns = res.last_ns;
	s->events += res.events;
	for (size_t k = 0; k < ns; k++) {
		if (!st[k].events)
			continue;
		if (cpus[k] == UINT32_MAX) {
			s->unknown_cpu += st[k].events;
			continue;
		}
		ret = RT_ARRAY_GROW_ZEROED(s->per_cpu, s->nr_cpu, (size_t)cpus[k] + 1, 8);
		if (ret < 0)
			goto out;
		s->per_cpu[cpus[k]] += st[k].events;
	}
out:
	free(per);
	free(cpus);
	return ret;
}

/* Same name (several traces share event names): count them together. */
static int by_name(const void *a, const void *b)
{
	const struct view_class *x = *(const struct view_class *const *)a;
	const struct view_class *y = *(const struct view_class *const *)b;
	return strcmp(x->cls->name, y->cls->name);
}

static void print_names(FILE *f, const struct view_stats *s,
			const struct view_class *classes, size_t nr)
{
	const struct view_class **sorted = malloc((nr ? nr : 1) * sizeof(*sorted));
	if (!sorted)
		return;
	for (size_t i = 0; i < nr; i++)
		sorted[i] = &classes[i];
	qsort(sorted, nr, sizeof(*sorted), by_name);
	fprintf(f, "%-40s %14s %8s\n", "event", "count", "share");
	for (size_t i = 0; i < nr;) {
		uint64_t n = 0;
		size_t j = i;
		while (j < nr && !strcmp(sorted[j]->cls->name, sorted[i]->cls->name))
			n += sorted[j++]->count;
		if (n)
			fprintf(f, "%-40s %14" PRIu64 " %7.2f%%\n", sorted[i]->cls->name, n,
				100.0 * (double)n / (double)s->events);
		i = j;
	}
	free(sorted);
}

void view_stats_print(FILE *f, const struct view_stats *s,
		      const struct view_class *classes, size_t nr_classes,
		      const struct rtr_trace *t)
{
	double span = s->events ? (double)(s->last_ns - s->first_ns) / 1e9 : 0;
	fprintf(f, "events:     %" PRIu64 "\n", s->events);
	if (s->events) {
		fprintf(f, "first:      %" PRId64 " ns since the epoch\n", s->first_ns);
		fprintf(f, "last:       %" PRId64 " ns since the epoch\n", s->last_ns);
	}
	fprintf(f, "span:       %.9f s\n", span);
	if (span > 0)
		fprintf(f, "rate:       %.0f events/s\n", (double)s->events / span);
	fputc('\n', f);
	print_names(f, s, classes, nr_classes);

	fprintf(f, "\n%-8s %14s\n", "cpu", "count");
	for (size_t c = 0; c < s->nr_cpu; c++)
		if (s->per_cpu[c])
			fprintf(f, "%-8zu %14" PRIu64 "\n", c, s->per_cpu[c]);
	if (s->unknown_cpu)
		fprintf(f, "%-8s %14" PRIu64 "\n", "unknown", s->unknown_cpu);

	fprintf(f, "\n%-6s %-40s %10s %12s %12s %12s\n", "trace", "stream", "packets",
		"events", "discarded", "pkts lost");
	const struct rtr_stream_stats *st;
	size_t n = rtr_streams(t, &st);
	for (size_t i = 0; i < n; i++) {
		const char *base = strrchr(st[i].path, '/');
		base = base ? base + 1 : st[i].path;
		fprintf(f, "%-6" PRIu32 " %-40s %10" PRIu64 " %12" PRIu64 " %12" PRIu64
			" %12" PRIu64 "\n", st[i].trace, base, st[i].packets, st[i].events,
			st[i].events_discarded, st[i].packets_lost);
	}
	fputc('\n', f);
	for (uint32_t i = 0; i < rtr_trace_count(t); i++) {
		fprintf(f, "trace %" PRIu32 ": %s\n", i, rtr_trace_path(t, i));
		/* Streamed to a relay: its clock was put on the relay's. */
		const struct rtr_env *off = rtr_trace_env_get(t, i, "relay_clock_offset_ns");
		const struct rtr_env *err = rtr_trace_env_get(t, i, "relay_clock_error_ns");
		const struct rtr_env *host = rtr_trace_env_get(t, i, "hostname");
		if (off && err && !off->is_string && !err->is_string)
			fprintf(f, "         host %s: clock put on the relay's by %+" PRId64
				" ns, estimated error +-%" PRId64 " ns\n",
				host && host->is_string ? host->s : "?", off->i, err->i);
	}
}

void view_stats_free(struct view_stats *s)
{
	free(s->per_cpu);
	s->per_cpu = NULL;
	s->nr_cpu = 0;
}
