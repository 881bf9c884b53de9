/*
 * ksched.c - `analyze --sched`: scheduling from the kernel state model
 * (kstate.c): per thread, the wakeup latency (sched_waking, else
 * sched_wakeup, to the sched_switch that puts it on a CPU) with its
 * percentiles, the time it waited preempted, preemptions, migrations and
 * CPU time; the longest wakeup latencies, each with the threads that ran
 * on that CPU meanwhile; CPU time per process over time. Spans are cut to
 * the window; a latency counts when its switch-in is inside it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kstream.h"
#include "../common/array.h"

#define RING 128		/* running spans remembered per CPU */
#define MAX_RAN 3		/* threads shown per outlier */
#define BUCKETS 64		/* CPU time over time: at most this many intervals */

struct sthread {
	struct ra_loghist wake;		/* wakeup latencies */
	int64_t preempted_ns;		/* waiting for a CPU after a preemption */
	uint64_t preemptions, migrations;
	int64_t cpu_ns;
	uint64_t *bucket;		/* owned: ns on a CPU per interval */
};

struct sspan {
	int64_t b, e;
	uint32_t th;			/* kstate thread index */
};

struct sring {
	struct sspan s[RING];
	uint32_t next, nr;
};

struct sout {
	int64_t wake_ns, lat;
	uint32_t th, cpu;
	struct {
		uint32_t th;
		int64_t ns;
	} ran[MAX_RAN];
	uint32_t nr_ran;
	bool partial;			/* the CPU's ring did not reach back to the wakeup */
};

struct ra_ksched {
	struct ra_kstate ks;
	struct ra_kernel *k;		/* during the pass */
	struct sthread *th;
	size_t cap_th;
	struct sring *ring;		/* per CPU */
	size_t cap_ring;
	struct sout *out;		/* the longest latencies, longest first */
	uint32_t nr_out, cap_out;
	int64_t origin, bucket_ns;	/* CPU time over time */
	uint32_t nr_buckets;
	uint64_t wakeups, preemptions, migrations;
	int err;
	/* after finish */
	uint32_t *order;		/* threads by their longest latency */
	uint32_t nr_order;
};

static int64_t clip(const struct ra_kernel *k, int64_t b, int64_t e)
{
	int64_t lo = b > k->begin ? b : k->begin, hi = e < k->end ? e : k->end;
	return hi > lo ? ra_ns_diff(hi, lo) : 0;
}

static struct sthread *sth(struct ra_ksched *s, uint32_t i)
{
	if (i >= s->cap_th && RT_ARRAY_GROW_ZEROED(s->th, s->cap_th, (size_t)i + 1, 256) < 0) {
		s->err = -ENOMEM;
		return NULL;
	}
	return &s->th[i];
}

/* Halve the number of intervals (twice as long each). */
static void merge_buckets(struct ra_ksched *s)
{
	for (size_t i = 0; i < s->cap_th; i++) {
		uint64_t *b = s->th[i].bucket;
		if (!b)
			continue;
		for (uint32_t j = 0; j < BUCKETS / 2; j++)
			b[j] = b[2 * j] + b[2 * j + 1];
		memset(b + BUCKETS / 2, 0, BUCKETS / 2 * sizeof(*b));
	}
	s->bucket_ns *= 2;
	s->nr_buckets = (s->nr_buckets + 1) / 2;
}

/* Add [b, e) of thread i's CPU time to the intervals. */
static void add_buckets(struct ra_ksched *s, struct sthread *t, int64_t b, int64_t e)
{
	if (s->origin == INT64_MIN) {
		s->origin = b;
		s->bucket_ns = 1000000;		/* 1 ms, doubled as needed */
	}
	if (b < s->origin)
		b = s->origin;
	while (e > b && ra_ns_diff(e, s->origin) / s->bucket_ns >= BUCKETS)
		merge_buckets(s);
	if (e <= b)
		return;
	if (!t->bucket && !(t->bucket = calloc(BUCKETS, sizeof(*t->bucket)))) {
		s->err = -ENOMEM;
		return;
	}
	while (b < e) {
		int64_t i = ra_ns_diff(b, s->origin) / s->bucket_ns;
		int64_t end = s->origin + (i + 1) * s->bucket_ns;
		int64_t to = e < end ? e : end;
		t->bucket[i] += (uint64_t)(to - b);
		if ((uint32_t)i + 1 > s->nr_buckets)
			s->nr_buckets = (uint32_t)i + 1;
		b = to;
	}
}

static struct sring *ring_of(struct ra_ksched *s, uint32_t cpu)
{
	if (cpu >= RA_KSTATE_MAX_CPUS)
		return NULL;
	if (cpu >= s->cap_ring &&
	    RT_ARRAY_GROW_ZEROED(s->ring, s->cap_ring, (size_t)cpu + 1, 4) < 0) {
		s->err = -ENOMEM;
		return NULL;
	}
	return &s->ring[cpu];
}

/* Who ran on the CPU during [b, e): the longest MAX_RAN, from its ring. */
static void ran_instead(const struct ra_ksched *s, uint32_t cpu, int64_t b, int64_t e,
			struct sout *o)
{
	o->nr_ran = 0;
	o->partial = true;
	if (cpu >= s->cap_ring)
		return;
	const struct sring *r = &s->ring[cpu];
	struct { uint32_t th; int64_t ns; } acc[RING];
	uint32_t nr = 0;
	for (uint32_t k = 0; k < r->nr; k++) {
		const struct sspan *sp = &r->s[(r->next + RING - 1 - k) % RING];
		if (sp->e <= b) {
			o->partial = false;
			break;
		}
		int64_t lo = sp->b > b ? sp->b : b, hi = sp->e < e ? sp->e : e;
		if (hi <= lo)
			continue;
		uint32_t j;
		for (j = 0; j < nr && acc[j].th != sp->th; j++)
			;
		if (j == nr)
			acc[nr++] = (typeof(acc[0])){ .th = sp->th, .ns = 0 };
		acc[j].ns += hi - lo;
		if (sp->b <= b)
			o->partial = false;
	}
	for (uint32_t n = 0; n < MAX_RAN && n < nr; n++) {
		uint32_t best = n;
		for (uint32_t j = n + 1; j < nr; j++)
			if (acc[j].ns > acc[best].ns)
				best = j;
		typeof(acc[0]) tmp = acc[n];
		acc[n] = acc[best];
		acc[best] = tmp;
		o->ran[n].th = acc[n].th;
		o->ran[n].ns = acc[n].ns;
		o->nr_ran++;
	}
}

static void keep_outlier(struct ra_ksched *s, unsigned top, const struct ra_kspan *sp,
			 uint32_t th)
{
	int64_t lat = ra_ns_diff(sp->end, sp->begin);
	if (!top || (s->nr_out == top && lat <= s->out[top - 1].lat))
		return;
	if (s->nr_out < top && RT_ARRAY_GROW(s->out, s->cap_out, (size_t)s->nr_out + 1, 16) < 0) {
		s->err = -ENOMEM;
		return;
	}
	uint32_t i = s->nr_out < top ? s->nr_out++ : top - 1;
	while (i > 0 && s->out[i - 1].lat < lat) {
		s->out[i] = s->out[i - 1];
		i--;
	}
	struct sout *o = &s->out[i];
	memset(o, 0, sizeof(*o));
	o->wake_ns = sp->begin;
	o->lat = lat;
	o->th = th;
	o->cpu = sp->cpu;
	ran_instead(s, sp->cpu, sp->begin, sp->end, o);
}

static void on_span(void *arg, const struct ra_kspan *sp)
{
	struct ra_ksched *s = arg;
	const struct ra_kernel *k = s->k;
	uint32_t i = (uint32_t)(sp->th - s->ks.th);
	struct sthread *t = sth(s, i);
	if (!t)
		return;
	if (sp->state == RA_KS_RUNNING && sp->cpu != UINT32_MAX) {
		struct sring *r = ring_of(s, sp->cpu);
		if (r) {
			r->s[r->next] = (struct sspan){ .b = sp->begin, .e = sp->end, .th = i };
			r->next = (r->next + 1) % RING;
			if (r->nr < RING)
				r->nr++;
		}
		if (sp->th->tid == 0)
			return;
		int64_t in = clip(k, sp->begin, sp->end);
		t->cpu_ns += in;
		if (in > 0) {
			int64_t b = sp->begin > k->begin ? sp->begin : k->begin;
			add_buckets(s, t, b, b + in);
		}
		return;
	}
	if (sp->state != RA_KS_RUNNABLE || sp->open || sp->end < k->begin || sp->end >= k->end)
		return;
	if (sp->preempted) {
		t->preempted_ns += ra_ns_diff(sp->end, sp->begin);
		t->preemptions++;
		s->preemptions++;
		return;
	}
	if (ra_loghist_add(&t->wake, ra_ns_diff(sp->end, sp->begin)) < 0) {
		s->err = -ENOMEM;
		return;
	}
	s->wakeups++;
	keep_outlier(s, s->k->opt.top, sp, i);
}

static void on_migrate(void *arg, const struct ra_ks_thread *th, uint32_t from, uint32_t to,
		       int64_t ns)
{
	struct ra_ksched *s = arg;
	(void)from;
	(void)to;
	if (ns < s->k->begin || ns >= s->k->end)
		return;
	struct sthread *t = sth(s, (uint32_t)(th - s->ks.th));
	if (t) {
		t->migrations++;
		s->migrations++;
	}
}

struct ra_ksched *ra_ksched_new(void)
{
	struct ra_ksched *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	static const struct ra_kstate_ops ops = { .span = on_span, .migrate = on_migrate };
	ra_kstate_init(&s->ks, &ops, s);
	s->origin = INT64_MIN;
	return s;
}

int ra_ksched_feed(struct ra_kernel *k, struct ra_ksched *s, const struct ra_kev *e)
{
	s->k = k;
	int ret = ra_kstate_feed(&s->ks, k->t, e->raw);
	return ret < 0 ? ret : s->err;
}

static int cmp_max(const void *a, const void *b, void *arg)
{
	const struct ra_ksched *s = arg;
	const struct sthread *x = &s->th[*(const uint32_t *)a], *y = &s->th[*(const uint32_t *)b];
	if (x->wake.max != y->wake.max)
		return x->wake.max < y->wake.max ? 1 : -1;
	return (*(const uint32_t *)a > *(const uint32_t *)b) -
	       (*(const uint32_t *)a < *(const uint32_t *)b);
}

int ra_ksched_finish(struct ra_kernel *k, struct ra_ksched *s)
{
	s->k = k;
	/* the spans still open end with the window, or the trace */
	ra_kstate_finish(&s->ks, k->cut ? k->end : s->ks.last_ns);
	if (s->err)
		return s->err;
	if (!sth(s, s->ks.nr_th))
		return -ENOMEM;
	s->order = malloc(((size_t)s->ks.nr_th + 1) * sizeof(*s->order));
	if (!s->order)
		return -ENOMEM;
	for (uint32_t i = 0; i < s->ks.nr_th; i++)
		if (s->th[i].wake.count || s->th[i].preemptions)
			s->order[s->nr_order++] = i;
	qsort_r(s->order, s->nr_order, sizeof(*s->order), cmp_max, s);
	return 0;
}

static void thread_label(const struct ra_ksched *s, uint32_t i, char *out, size_t len)
{
	const struct ra_ks_thread *t = &s->ks.th[i];
	if (t->tid == 0)
		snprintf(out, len, "idle");
	else if (t->pid >= 0)
		snprintf(out, len, "%s tid %" PRId64 " pid %" PRId64 " (%s)",
			 t->comm[0] ? t->comm : "?", t->tid, t->pid,
			 ra_kstate_process_name(&s->ks, t->pid));
	else
		snprintf(out, len, "%s tid %" PRId64, t->comm[0] ? t->comm : "?", t->tid);
}

/* Per process: CPU time per interval (threads summed), the top `top`. */
struct sproc {
	int64_t pid;
	int64_t ns;
	uint64_t b[BUCKETS];
};

static struct sproc *procs(const struct ra_ksched *s, uint32_t *nr)
{
	struct sproc *p = NULL;
	size_t cap = 0;
	*nr = 0;
	for (uint32_t i = 0; i < s->ks.nr_th && i < s->cap_th; i++) {
		const struct sthread *t = &s->th[i];
		if (!t->bucket || s->ks.th[i].tid == 0)
			continue;
		int64_t pid = s->ks.th[i].pid >= 0 ? s->ks.th[i].pid : s->ks.th[i].tid;
		uint32_t j;
		for (j = 0; j < *nr && p[j].pid != pid; j++)
			;
		if (j == *nr) {
			if (RT_ARRAY_GROW(p, cap, (size_t)*nr + 1, 32) < 0) {
				free(p);
				*nr = 0;
				return NULL;
			}
			memset(&p[j], 0, sizeof(p[j]));
			p[j].pid = pid;
			(*nr)++;
		}
		p[j].ns += t->cpu_ns;
		for (uint32_t b = 0; b < BUCKETS; b++)
			p[j].b[b] += t->bucket[b];
	}
	for (uint32_t i = 1; i < *nr; i++)
		for (uint32_t j = i; j > 0 && p[j].ns > p[j - 1].ns; j--) {
			struct sproc tmp = p[j];
			p[j] = p[j - 1];
			p[j - 1] = tmp;
		}
	return p;
}

void ra_ksched_text(FILE *f, const struct ra_kernel *k, const struct ra_ksched *s)
{
	char l[160], d[5][32];
	unsigned top = k->opt.top ? k->opt.top : 10;
	fprintf(f, "\n== Scheduling: wakeup latency (sched_waking to switched in) ==\n");
	fprintf(f, "wakeups: %" PRIu64 ", preemptions: %" PRIu64 ", migrations: %" PRIu64 "\n",
		s->wakeups, s->preemptions, s->migrations);
	fprintf(f, "%-44s %8s %10s %10s %10s %8s %12s %6s %10s\n", "thread", "wakeups", "p50",
		"p99", "max", "preempt", "preempt wait", "migr", "CPU");
	for (uint32_t n = 0; n < s->nr_order && n < top; n++) {
		uint32_t i = s->order[n];
		const struct sthread *t = &s->th[i];
		thread_label(s, i, l, sizeof(l));
		ra_format_duration(ra_loghist_percentile(&t->wake, 50), d[0], sizeof(d[0]));
		ra_format_duration(ra_loghist_percentile(&t->wake, 99), d[1], sizeof(d[1]));
		ra_format_duration(t->wake.count ? t->wake.max : 0, d[2], sizeof(d[2]));
		ra_format_duration(t->preempted_ns, d[3], sizeof(d[3]));
		ra_format_duration(t->cpu_ns, d[4], sizeof(d[4]));
		fprintf(f, "%-44.44s %8" PRIu64 " %10s %10s %10s %8" PRIu64 " %12s %6" PRIu64
			" %10s\n", l, t->wake.count, d[0], d[1], d[2], t->preemptions, d[3],
			t->migrations, d[4]);
	}
	if (s->nr_order > top)
		fprintf(f, "(%u more threads)\n", s->nr_order - top);
	fprintf(f, "\n== Longest wakeup latencies, and who ran on the CPU meanwhile ==\n");
	for (uint32_t n = 0; n < s->nr_out; n++) {
		const struct sout *o = &s->out[n];
		char w[40];
		ra_format_wall(o->wake_ns, w, sizeof(w));
		ra_format_duration(o->lat, d[0], sizeof(d[0]));
		thread_label(s, o->th, l, sizeof(l));
		fprintf(f, "%s  %10s  CPU %-3u %s\n", w, d[0], o->cpu, l);
		for (uint32_t r = 0; r < o->nr_ran; r++) {
			thread_label(s, o->ran[r].th, l, sizeof(l));
			ra_format_duration(o->ran[r].ns, d[1], sizeof(d[1]));
			fprintf(f, "      ran instead: %s %s\n", l, d[1]);
		}
		if (o->partial)
			fprintf(f, "      (the CPU's last %d switches do not reach back to the "
				"wakeup)\n", RING);
	}
	uint32_t nr;
	struct sproc *p = procs(s, &nr);
	if (!p || !s->nr_buckets)
		goto out;
	ra_format_duration(s->bucket_ns, d[0], sizeof(d[0]));
	fprintf(f, "\n== CPU time per process over time (%% of one CPU per %s) ==\n", d[0]);
	for (uint32_t n = 0; n < nr && n < top; n++) {
		char name[64];
		snprintf(name, sizeof(name), "%s pid %" PRId64,
			 ra_kstate_process_name(&s->ks, p[n].pid), p[n].pid);
		ra_format_duration(p[n].ns, d[1], sizeof(d[1]));
		fprintf(f, "%-32.32s %10s ", name, d[1]);
		for (uint32_t b = 0; b < s->nr_buckets; b++)
			fprintf(f, "%s%3.0f", b ? " " : "",
				100.0 * (double)p[n].b[b] / (double)s->bucket_ns);
		fputc('\n', f);
	}
out:
	free(p);
}

static void json_thread(FILE *f, const struct ra_ksched *s, uint32_t i)
{
	const struct ra_ks_thread *t = &s->ks.th[i];
	fprintf(f, "\"tid\":%" PRId64 ",\"name\":", t->tid);
	ra_json_string(f, t->comm, strlen(t->comm));
	if (t->pid >= 0) {
		const char *p = ra_kstate_process_name(&s->ks, t->pid);
		fprintf(f, ",\"pid\":%" PRId64 ",\"process\":", t->pid);
		ra_json_string(f, p, strlen(p));
	} else {
		fputs(",\"pid\":null,\"process\":null", f);
	}
}

void ra_ksched_json(FILE *f, const struct ra_kernel *k, const struct ra_ksched *s)
{
	unsigned top = k->opt.top ? k->opt.top : 10;
	fprintf(f, "{\"wakeups\":%" PRIu64 ",\"preemptions\":%" PRIu64 ",\"migrations\":%" PRIu64
		",\"threads\":[", s->wakeups, s->preemptions, s->migrations);
	for (uint32_t n = 0; n < s->nr_order; n++) {
		uint32_t i = s->order[n];
		const struct sthread *t = &s->th[i];
		fprintf(f, "%s{", n ? "," : "");
		json_thread(f, s, i);
		fprintf(f, ",\"wakeups\":%" PRIu64 ",\"p50_ns\":%" PRId64 ",\"p99_ns\":%" PRId64
			",\"max_ns\":%" PRId64 ",\"total_ns\":%" PRIu64 ",\"preemptions\":%" PRIu64
			",\"preempted_ns\":%" PRId64 ",\"migrations\":%" PRIu64 ",\"cpu_ns\":%" PRId64
			"}", t->wake.count, ra_loghist_percentile(&t->wake, 50),
			ra_loghist_percentile(&t->wake, 99), t->wake.count ? t->wake.max : 0,
			t->wake.sum, t->preemptions, t->preempted_ns, t->migrations, t->cpu_ns);
	}
	fputs("],\"outliers\":[", f);
	for (uint32_t n = 0; n < s->nr_out; n++) {
		const struct sout *o = &s->out[n];
		fprintf(f, "%s{\"wake_ns\":%" PRId64 ",\"latency_ns\":%" PRId64 ",\"cpu\":%u,",
			n ? "," : "", o->wake_ns, o->lat, o->cpu);
		json_thread(f, s, o->th);
		fputs(",\"ran_instead\":[", f);
		for (uint32_t r = 0; r < o->nr_ran; r++) {
			fprintf(f, "%s{", r ? "," : "");
			json_thread(f, s, o->ran[r].th);
			fprintf(f, ",\"ns\":%" PRId64 "}", o->ran[r].ns);
		}
		fprintf(f, "],\"partial\":%s}", o->partial ? "true" : "false");
	}
	fprintf(f, "],\"cpu_over_time\":{\"begin_ns\":%" PRId64 ",\"interval_ns\":%" PRId64
		",\"processes\":[", s->origin == INT64_MIN ? 0 : s->origin, s->bucket_ns);
	uint32_t nr;
	struct sproc *p = procs(s, &nr);
	for (uint32_t n = 0; p && n < nr && n < top; n++) {
		const char *name = ra_kstate_process_name(&s->ks, p[n].pid);
		fprintf(f, "%s{\"pid\":%" PRId64 ",\"name\":", n ? "," : "", p[n].pid);
		ra_json_string(f, name, strlen(name));
		fprintf(f, ",\"cpu_ns\":%" PRId64 ",\"ns\":[", p[n].ns);
		for (uint32_t b = 0; b < s->nr_buckets; b++)
			fprintf(f, "%s%" PRIu64, b ? "," : "", p[n].b[b]);
		fputs("]}", f);
	}
	free(p);
	fputs("]}}", f);
}

void ra_ksched_free(struct ra_ksched *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->cap_th; i++) {
		ra_loghist_free(&s->th[i].wake);
		free(s->th[i].bucket);
	}
	free(s->th);
	free(s->ring);
	free(s->out);
	free(s->order);
	ra_kstate_free(&s->ks);
	free(s);
}
