/*
 * kirq.c - `analyze --irq`: hard interrupts (irq_handler_entry to the
 * irq_handler_exit of the same irq on the same CPU) per irq number with
 * its handler's name, and soft interrupts per vector (softirq_entry to
 * softirq_exit of the same vector on the same CPU), with the delay from
 * softirq_raise to softirq_entry (the first raise of a vector on a CPU
 * since its last entry there): counts, durations (ra_loghist), the
 * longest ones. An interval counts when its end lies in the window.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kstream.h"
#include "../common/array.h"

#define NR_VEC 10			/* NR_SOFTIRQS */
#define MAX_IRQ 65536

static const char *const vec_names[NR_VEC] = {
	"HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER",
	"RCU",
};

struct irq_stat {
	struct ra_loghist h;
	char name[RA_KNAME];
	struct ra_ktop top;
};

struct vec_stat {
	struct ra_loghist h, raise;	/* durations; raise -> entry */
	struct ra_ktop top;
};

struct cpu_open {
	int64_t irq_ns;			/* INT64_MIN: none */
	int64_t irq;
	int64_t soft_ns[NR_VEC], raise_ns[NR_VEC];
	uint64_t hard_time, soft_time;
};

struct ra_kirq {
	struct irq_stat *irq;		/* per irq number */
	size_t nr_irq;
	struct vec_stat vec[NR_VEC];
	struct cpu_open *cpu;		/* per CPU (cap_cpu allocated) */
	size_t nr_cpu, cap_cpu;		/* nr_cpu: highest CPU seen + 1 */
	uint64_t unmatched;
	uint64_t *key;			/* order of the irqs (finish) */
	uint32_t *order, nr_order;
};

struct ra_kirq *ra_kirq_new(void)
{
	return calloc(1, sizeof(struct ra_kirq));
}

static struct cpu_open *cpu_of(struct ra_kirq *s, uint32_t cpu)
{
	if (cpu >= 65536)
		return NULL;
	if (cpu >= s->cap_cpu) {
		size_t old = s->cap_cpu;
		if (RT_ARRAY_GROW_ZEROED(s->cpu, s->cap_cpu, (size_t)cpu + 1, 8) < 0)
			return NULL;
		for (size_t i = old; i < s->cap_cpu; i++) {
			s->cpu[i].irq_ns = INT64_MIN;
			for (unsigned v = 0; v < NR_VEC; v++)
				s->cpu[i].soft_ns[v] = s->cpu[i].raise_ns[v] = INT64_MIN;
		}
	}
	if (cpu >= s->nr_cpu)
		s->nr_cpu = cpu + 1;
	return &s->cpu[cpu];
}

static int hard(struct ra_kernel *k, struct ra_kirq *s, struct cpu_open *c,
		const struct ra_kev *e)
{
	int64_t irq;
	if (ra_kev_int(e, RA_KF_IRQ, &irq) < 0 || irq < 0 || irq >= MAX_IRQ)
		return 0;
	if (RT_ARRAY_GROW_ZEROED(s->irq, s->nr_irq, (size_t)irq + 1, 64) < 0)
		return -ENOMEM;
	struct irq_stat *st = &s->irq[irq];
	if (e->kc->role == RA_KR_IRQ_ENTRY) {
		c->irq_ns = e->ns;
		c->irq = irq;
		char name[RA_KNAME];
		if (ra_kev_str(e, RA_KF_IRQ_NAME, name, sizeof(name)) == 0 && name[0])
			memcpy(st->name, name, sizeof(name));
		return 0;
	}
	bool open = c->irq_ns != INT64_MIN && c->irq == irq;
	int64_t begin = c->irq_ns;
	c->irq_ns = INT64_MIN;
	if (!e->in_window)
		return 0;
	if (!open) {
		s->unmatched++;
		return 0;
	}
	int64_t d = ra_ns_diff(e->ns, begin);
	c->hard_time += (uint64_t)d;
	struct ra_kout o = { .begin_ns = begin, .dur_ns = d, .value = irq, .thread = e->thread,
			     .what = e->cpu };
	if (ra_loghist_add(&st->h, d) < 0 || ra_ktop_push(&st->top, k->opt.top, &o) < 0)
		return -ENOMEM;
	return 0;
}

static int soft(struct ra_kernel *k, struct ra_kirq *s, struct cpu_open *c,
		const struct ra_kev *e)
{
	int64_t vec;
	if (ra_kev_int(e, RA_KF_VEC, &vec) < 0 || vec < 0 || vec >= NR_VEC)
		return 0;
	struct vec_stat *st = &s->vec[vec];
	switch (e->kc->role) {
	case RA_KR_SOFTIRQ_RAISE:
		if (c->raise_ns[vec] == INT64_MIN)
			c->raise_ns[vec] = e->ns;
		return 0;
	case RA_KR_SOFTIRQ_ENTRY:
		c->soft_ns[vec] = e->ns;
		if (c->raise_ns[vec] != INT64_MIN && e->in_window &&
		    ra_loghist_add(&st->raise, ra_ns_diff(e->ns, c->raise_ns[vec])) < 0)
			return -ENOMEM;
		c->raise_ns[vec] = INT64_MIN;
		return 0;
	default: {
		int64_t begin = c->soft_ns[vec];
		c->soft_ns[vec] = INT64_MIN;
		if (!e->in_window)
			return 0;
		if (begin == INT64_MIN) {
			s->unmatched++;
			return 0;
		}
		int64_t d = ra_ns_diff(e->ns, begin);
		c->soft_time += (uint64_t)d;
		struct ra_kout o = { .begin_ns = begin, .dur_ns = d, .value = vec,
				     .thread = e->thread, .what = e->cpu };
		if (ra_loghist_add(&st->h, d) < 0 || ra_ktop_push(&st->top, k->opt.top, &o) < 0)
			return -ENOMEM;
		return 0;
	}
	}
}

int ra_kirq_feed(struct ra_kernel *k, struct ra_kirq *s, const struct ra_kev *e)
{
	enum ra_krole r = e->kc->role;
	if (r < RA_KR_IRQ_ENTRY || r > RA_KR_SOFTIRQ_EXIT || e->cpu == UINT32_MAX)
		return 0;
	struct cpu_open *c = cpu_of(s, e->cpu);
	if (!c)
		return e->cpu >= 65536 ? 0 : -ENOMEM;
	return r <= RA_KR_IRQ_EXIT ? hard(k, s, c, e) : soft(k, s, c, e);
}

int ra_kirq_finish(struct ra_kernel *k, struct ra_kirq *s)
{
	(void)k;
	if (!(s->key = calloc(s->nr_irq ? s->nr_irq : 1, sizeof(*s->key))))
		return -ENOMEM;
	for (size_t i = 0; i < s->nr_irq; i++)
		s->key[i] = s->irq[i].h.sum ? s->irq[i].h.sum : s->irq[i].h.count;
	s->order = ra_korder(s->key, (uint32_t)s->nr_irq, &s->nr_order);
	return s->order ? 0 : -ENOMEM;
}

static void text_top(FILE *f, const struct ra_kernel *k, const struct ra_ktop *top,
		     const char *what)
{
	for (uint32_t i = 0; i < top->nr; i++) {
		const struct ra_kout *o = &top->v[i];
		char d[32], w[64], who[96];
		ra_format_duration(o->dur_ns, d, sizeof(d));
		ra_format_wall(o->begin_ns, w, sizeof(w));
		ra_kthread_label(k, o->thread, who, sizeof(who));
		fprintf(f, "    %9s  %s  %19" PRId64 "  %s, cpu %u, during %s\n", d, w, o->begin_ns,
			what, o->what, who);
	}
}

void ra_kirq_text(FILE *f, const struct ra_kernel *k, const struct ra_kirq *s)
{
	fprintf(f, "\n== Interrupts ==\n");
	fprintf(f, "%" PRIu64 " exits without their entry (begun before the trace or the window)\n",
		s->unmatched);
	fprintf(f, "\nhard interrupts:\n%-5s %-20s    count     total       p50       p99       max\n",
		"irq", "name");
	for (uint32_t i = 0; i < s->nr_order; i++) {
		const struct irq_stat *st = &s->irq[s->order[i]];
		fprintf(f, "%-5u %-20s", s->order[i], st->name[0] ? st->name : "?");
		ra_ktext_lat(f, &st->h);
		fputc('\n', f);
	}
	fprintf(f, "\nsoft interrupts:\n%-4s %-9s    count     total       p50       p99       max"
		"  raise->entry p50       p99       max\n", "vec", "name");
	for (unsigned v = 0; v < NR_VEC; v++) {
		const struct vec_stat *st = &s->vec[v];
		if (!st->h.count && !st->raise.count)
			continue;
		char p50[32], p99[32], max[32];
		ra_format_duration(ra_loghist_percentile(&st->raise, 50), p50, sizeof(p50));
		ra_format_duration(ra_loghist_percentile(&st->raise, 99), p99, sizeof(p99));
		ra_format_duration(st->raise.max, max, sizeof(max));
		fprintf(f, "%-4u %-9s", v, vec_names[v]);
		ra_ktext_lat(f, &st->h);
		fprintf(f, "  %16s %9s %9s\n", p50, p99, max);
	}
	fprintf(f, "\nper CPU:\n%-5s %12s %12s\n", "cpu", "hard irq", "soft irq");
	for (size_t c = 0; c < s->nr_cpu; c++) {
		char h[32], so[32];
		ra_format_duration((int64_t)s->cpu[c].hard_time, h, sizeof(h));
		ra_format_duration((int64_t)s->cpu[c].soft_time, so, sizeof(so));
		fprintf(f, "%-5zu %12s %12s\n", c, h, so);
	}
	fprintf(f, "\nlongest (top %u of each):\n", k->opt.top);
	for (uint32_t i = 0; i < s->nr_order; i++) {
		char what[64];
		snprintf(what, sizeof(what), "irq %u %s", s->order[i], s->irq[s->order[i]].name);
		text_top(f, k, &s->irq[s->order[i]].top, what);
	}
	for (unsigned v = 0; v < NR_VEC; v++)
		text_top(f, k, &s->vec[v].top, vec_names[v]);
}

static void json_top(FILE *f, const struct ra_kernel *k, const struct ra_ktop *top)
{
	fputs(",\"outliers\":[", f);
	for (uint32_t i = 0; i < top->nr; i++) {
		const struct ra_kout *o = &top->v[i];
		fprintf(f, "%s{\"dur_ns\":%" PRId64 ",\"begin_ns\":%" PRId64 ",\"cpu\":%u",
			i ? "," : "", o->dur_ns, o->begin_ns, o->what);
		if (o->thread != UINT32_MAX) {
			fputc(',', f);
			ra_kjson_thread(f, &k->threads[o->thread]);
		}
		fputc('}', f);
	}
	fputc(']', f);
}

void ra_kirq_json(FILE *f, const struct ra_kernel *k, const struct ra_kirq *s)
{
	fprintf(f, "{\"unmatched_exits\":%" PRIu64 ",\"hard\":[", s->unmatched);
	for (uint32_t i = 0; i < s->nr_order; i++) {
		const struct irq_stat *st = &s->irq[s->order[i]];
		fprintf(f, "%s{\"irq\":%u,\"name\":", i ? "," : "", s->order[i]);
		ra_json_string(f, st->name, strlen(st->name));
		fputc(',', f);
		ra_kjson_lat(f, &st->h);
		json_top(f, k, &st->top);
		fputc('}', f);
	}
	fputs("],\"soft\":[", f);
	bool first = true;
	for (unsigned v = 0; v < NR_VEC; v++) {
		const struct vec_stat *st = &s->vec[v];
		if (!st->h.count && !st->raise.count)
			continue;
		fprintf(f, "%s{\"vec\":%u,\"name\":\"%s\",", first ? "" : ",", v, vec_names[v]);
		first = false;
		ra_kjson_lat(f, &st->h);
		fprintf(f, ",\"raise_count\":%" PRIu64 ",\"raise_p50_ns\":%" PRId64
			",\"raise_p99_ns\":%" PRId64 ",\"raise_max_ns\":%" PRId64, st->raise.count,
			ra_loghist_percentile(&st->raise, 50), ra_loghist_percentile(&st->raise, 99),
			st->raise.max);
		json_top(f, k, &st->top);
		fputc('}', f);
	}
	fputs("],\"cpus\":[", f);
	for (size_t c = 0; c < s->nr_cpu; c++)
		fprintf(f, "%s{\"cpu\":%zu,\"hard_ns\":%" PRIu64 ",\"soft_ns\":%" PRIu64 "}",
			c ? "," : "", c, s->cpu[c].hard_time, s->cpu[c].soft_time);
	fputs("]}", f);
}

void ra_kirq_free(struct ra_kirq *s)
{
	for (size_t i = 0; i < s->nr_irq; i++) {
		ra_loghist_free(&s->irq[i].h);
		free(s->irq[i].top.v);
	}
	for (unsigned v = 0; v < NR_VEC; v++) {
		ra_loghist_free(&s->vec[v].h);
		ra_loghist_free(&s->vec[v].raise);
		free(s->vec[v].top.v);
	}
	free(s->irq);
	free(s->cpu);
	free(s->key);
	free(s->order);
	free(s);
}
