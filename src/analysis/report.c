/*
 * report.c - the self-contained HTML report: the page of
 * report_template.html with the data embedded as JSON where the marker is.
 *
 * Data (see docs/report.md): {"title", "analysis": ra_write_json's
 * document, "kernel": ra_kernel_write_json's (kernel traces only),
 * "klanes": ra_klanes_write_json's (kernel lanes; kernel traces only),
 * "explain": the interval explained (report --explain-interval),
 * "names": event names, "pairs": pair labels, "lane_cap",
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

#include "../common/array.h"
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

/*
 * Items grouped by lane: the indexes of group g are
 * idx[start[g] .. start[g + 1]), in their original order (a counting
 * sort). Owned by the caller (lanes_free).
 */
struct grouping {
	size_t *idx;
	size_t *start;		/* nr_groups + 1 entries */
};

static void lanes_free(struct grouping *g)
{
	free(g->idx);
	free(g->start);
}

static int group(struct grouping *g, const uint32_t *of, size_t n, size_t nr_groups)
{
	g->idx = malloc((n ? n : 1) * sizeof(*g->idx));
	g->start = calloc(nr_groups + 1, sizeof(*g->start));
	if (!g->idx || !g->start)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		g->start[of[i] + 1]++;
	for (size_t k = 0; k < nr_groups; k++)
		g->start[k + 1] += g->start[k];
	size_t *fill = malloc((nr_groups ? nr_groups : 1) * sizeof(*fill));
	if (!fill)
		return -ENOMEM;
	memcpy(fill, g->start, nr_groups * sizeof(*fill));
	for (size_t i = 0; i < n; i++)
		g->idx[fill[of[i]]++] = i;
	free(fill);
	return 0;
}

struct lanes {
	uint32_t *cpu_list;	/* distinct CPUs, sorted */
	size_t nr_cpus;
	struct grouping by_cpu, by_key, pairs_by_key;
};

/* One lane: events idx[from..to) of s->ev, pairs pidx[pfrom..pto). */
static void write_lane(FILE *f, const struct ra_stats *s, const char *label,
		       bool cpu, const size_t *idx, size_t n, const size_t *pidx,
		       size_t np, size_t cap)
{
	uint64_t step = step_for(n, cap), bstep = step_for(np, cap);
	fprintf(f, "{\"kind\":\"%s\",\"label\":", cpu ? "cpu" : "thread");
	jstr(f, label);
	fprintf(f, ",\"events\":%zu,\"step\":%" PRIu64 ",\"pairs\":%zu"
		",\"bar_step\":%" PRIu64 ",\"t\":[", n, step, np, bstep);
	for (size_t i = 0; i < n; i += step)
		fprintf(f, i ? ",%" PRId64 : "%" PRId64,
			ra_ns_diff(s->ev[idx[i]].ns, s->src.first_ns));
	fputs("],\"n\":[", f);
	for (size_t i = 0; i < n; i += step)
		fprintf(f, i ? ",%" PRIu32 : "%" PRIu32, s->ev[idx[i]].name);
	fputs("],\"bars\":[", f);
	for (size_t i = 0; i < np; i += bstep) {
		const struct ra_pair *p = &s->pairs[pidx[i]];
		fprintf(f, "%s[%" PRId64 ",%" PRId64 ",%" PRIu32 ",%" PRIu32 "]",
			i ? "," : "", ra_ns_diff(p->begin_ns, s->src.first_ns), p->dur_ns,
			p->type, p->depth);
	}
	fputs("]}", f);
}

static int by_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* The distinct CPUs of the events, sorted, into l. -ENOMEM. */
static int find_cpus(const struct ra_stats *s, struct lanes *l)
{
	size_t cap = 0, last = SIZE_MAX;
	/* Allocated even when there is no event: qsort and bsearch get a list. */
	if (RT_ARRAY_GROW(l->cpu_list, cap, 1, 16) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < s->nr_ev; i++) {
		uint32_t c = s->ev[i].cpu;
		if (last != SIZE_MAX && l->cpu_list[last] == c)
			continue;	/* the common case: same CPU as before */
		size_t j = 0;
		while (j < l->nr_cpus && l->cpu_list[j] != c)
			j++;
		last = j;
		if (j < l->nr_cpus)
			continue;
		if (RT_ARRAY_GROW(l->cpu_list, cap, l->nr_cpus + 1, 16) < 0)
			return -ENOMEM;
		l->cpu_list[l->nr_cpus++] = c;
	}
	qsort(l->cpu_list, l->nr_cpus, sizeof(*l->cpu_list), by_u32);
	return 0;
}

static int build_lanes(const struct ra_stats *s, struct lanes *l)
{
	if (find_cpus(s, l) < 0)
		return -ENOMEM;
	size_t n = s->nr_ev > s->nr_pairs ? s->nr_ev : s->nr_pairs;
	uint32_t *of = malloc((n ? n : 1) * sizeof(*of));
	if (!of)
		return -ENOMEM;
	for (size_t i = 0; i < s->nr_ev; i++) {
		const uint32_t *hit = bsearch(&s->ev[i].cpu, l->cpu_list, l->nr_cpus,
					      sizeof(*l->cpu_list), by_u32);
		of[i] = (uint32_t)(hit - l->cpu_list);
	}
	int ret = group(&l->by_cpu, of, s->nr_ev, l->nr_cpus);
	for (size_t i = 0; ret == 0 && i < s->nr_ev; i++)
		of[i] = s->ev[i].key;
	if (ret == 0)
		ret = group(&l->by_key, of, s->nr_ev, s->src.keys.nr);
	for (size_t i = 0; ret == 0 && i < s->nr_pairs; i++)
		of[i] = s->pairs[i].key;
	if (ret == 0)
		ret = group(&l->pairs_by_key, of, s->nr_pairs, s->src.keys.nr);
	free(of);
	return ret;
}

/* "explain": the interval (ns after the first event), its thread, how it
 * was chosen, explain's text and its JSON. */
static void write_explain(FILE *f, const struct ra_stats *s, const struct ra_explain *x)
{
	const struct ra_explain_target *t = ra_explain_target_of(x);
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	if (m) {
		ra_explain_write_text(m, x);
		if (fclose(m) != 0) {
			free(text);
			text = NULL;
		}
	}
	fprintf(f, ",\"explain\":{\"begin\":%" PRId64 ",\"end\":%" PRId64 ",\"tid\":%" PRId64
		",\"how\":", ra_ns_diff(t->begin, s->src.first_ns),
		ra_ns_diff(t->end, s->src.first_ns), t->tid);
	jstr(f, t->how);
	fputs(",\"text\":", f);
	jstr(f, text ? text : "");
	fputs(",\"data\":", f);
	ra_explain_write_json(f, x);
	fputc('}', f);
	free(text);
}

static void write_data(FILE *f, const struct ra_stats *s, const struct ra_report_extra *x,
		       const char *title,
		       size_t cap, const struct lanes *l)
{
	fputs("{\"title\":", f);
	jstr(f, title);
	fputs(",\"analysis\":", f);
	ra_write_json(f, s, RA_RATES | RA_DURATIONS | RA_THREADS);
	if (x->kernel && ra_kernel_sections(x->kernel)) {
		fputs(",\"kernel\":", f);
		ra_kernel_write_json(f, x->kernel);
	}
	if (!ra_klanes_empty(x->klanes)) {
		fputs(",\"klanes\":", f);
		ra_klanes_write_json(f, x->klanes, s->src.first_ns);
	}
	if (x->explain)
		write_explain(f, s, x->explain);
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
	char label[192];
	for (size_t c = 0; c < l->nr_cpus; c++) {
		if (l->cpu_list[c] == UINT32_MAX)
			snprintf(label, sizeof(label), "CPU unknown");
		else
			snprintf(label, sizeof(label), "CPU %" PRIu32, l->cpu_list[c]);
		const size_t *st = l->by_cpu.start;
		fputs(c ? "," : "", f);
		write_lane(f, s, label, true, l->by_cpu.idx + st[c], st[c + 1] - st[c],
			   NULL, 0, cap);
	}
	bool first = l->nr_cpus == 0;
	for (uint32_t k = 0; k < s->src.keys.nr; k++) {
		const size_t *st = l->by_key.start, *ps = l->pairs_by_key.start;
		if (st[k + 1] == st[k])
			continue;
		fputs(first ? "" : ",", f);
		first = false;
		ra_source_thread_label(&s->src, k, label, sizeof(label));
		write_lane(f, s, label, false, l->by_key.idx + st[k], st[k + 1] - st[k],
			   l->pairs_by_key.idx + ps[k], ps[k + 1] - ps[k], cap);
	}
	fputs("]}", f);
}

int ra_write_report(FILE *f, const struct ra_stats *s, const struct ra_report_extra *x,
		    const char *title, size_t lane_cap)
{
	const char *mark = strstr(ra_report_template, RA_REPORT_MARKER);
	if (!mark || !lane_cap)
		return -EINVAL;
	struct lanes l = { 0 };
	int ret = build_lanes(s, &l);
	if (ret == 0) {
		fwrite(ra_report_template, 1, (size_t)(mark - ra_report_template), f);
		write_data(f, s, x, title, lane_cap, &l);
		fputs(mark + strlen(RA_REPORT_MARKER), f);
		ret = ferror(f) ? -EIO : 0;
	}
	lanes_free(&l.pairs_by_key);
	lanes_free(&l.by_key);
	lanes_free(&l.by_cpu);
	free(l.cpu_list);
	return ret;
}
