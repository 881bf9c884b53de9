/*
 * kcpu.c - `analyze --cpu`: CPU time per CPU, per process and per thread
 * from sched_switch. On each CPU, the time from one switch to the next
 * belongs to the switch's prev_tid (tid 0: idle) when that is the thread
 * the previous switch put there; when it is not, switches were not
 * recorded in between (record -k records those of CMD's threads only,
 * unless --all-processes; lost events) and the time is unknown. Before a
 * CPU's first switch: from its first event; after its last: to the end
 * of the trace (or of the window), for the thread switched in. Every
 * interval is cut to the window.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kstream.h"
#include "../common/array.h"

struct cpu_stat {
	int64_t since;			/* start of the current interval, INT64_MIN none */
	int64_t cur;			/* tid switched in, -1 unknown */
	int64_t from;			/* first time accounted */
	uint64_t busy, idle, unknown, switches;
};

struct ra_kcpu {
	struct cpu_stat *cpu;		/* per CPU (cap_cpu allocated) */
	uint32_t nr_cpu, cap_cpu;	/* nr_cpu: highest CPU seen + 1 */
	uint64_t *thr;			/* per thread: ns on a CPU */
	size_t nr_thr;
	uint64_t *proc;			/* per process (finish) */
	uint32_t nr_proc;
	uint32_t *thr_order, *proc_order;
	uint32_t nr_thr_order, nr_proc_order;
	int64_t span;			/* the time accounted, one CPU */
};

struct ra_kcpu *ra_kcpu_new(void)
{
	return calloc(1, sizeof(struct ra_kcpu));
}

/* Time [a, b) cut to the window, ran by tid on cpu c. */
static int account(struct ra_kernel *k, struct ra_kcpu *s, struct cpu_stat *c, int64_t tid,
		   int64_t a, int64_t b)
{
	if (a < k->begin)
		a = k->begin;
	if (b > k->end)
		b = k->end;
	if (b <= a)
		return 0;
	uint64_t d = (uint64_t)ra_ns_diff(b, a);
	if (c->from == INT64_MIN || a < c->from)
		c->from = a;
	if (tid < 0) {
		c->unknown += d;
		return 0;
	}
	if (tid == 0) {
		c->idle += d;
		return 0;
	}
	c->busy += d;
	int64_t t = ra_kthread_get(k, tid);
	if (t < 0)
		return (int)t;
	if (RT_ARRAY_GROW_ZEROED(s->thr, s->nr_thr, (size_t)t + 1, 64) < 0)
		return -ENOMEM;
	s->thr[t] += d;
	return 0;
}

static struct cpu_stat *cpu_of(struct ra_kcpu *s, uint32_t cpu)
{
	if (cpu >= 65536)
		return NULL;
	if (cpu >= s->cap_cpu) {
		uint32_t old = s->cap_cpu;
		if (RT_ARRAY_GROW(s->cpu, s->cap_cpu, (size_t)cpu + 1, 8) < 0)
			return NULL;
		for (uint32_t i = old; i < s->cap_cpu; i++)
			s->cpu[i] = (struct cpu_stat){ .since = INT64_MIN, .cur = -1,
						       .from = INT64_MIN };
	}
	if (cpu >= s->nr_cpu)
		s->nr_cpu = cpu + 1;
	return &s->cpu[cpu];
}

int ra_kcpu_feed(struct ra_kernel *k, struct ra_kcpu *s, const struct ra_kev *e)
{
	if (e->cpu == UINT32_MAX)
		return 0;
	struct cpu_stat *c = cpu_of(s, e->cpu);
	if (!c)
		return e->cpu >= 65536 ? 0 : -ENOMEM;
	if (c->since == INT64_MIN)
		c->since = e->ns;		/* the CPU's first event */
	if (e->kc->role != RA_KR_SWITCH)
		return 0;
	int64_t prev, next;
	if (ra_kev_int(e, RA_KF_PREV_TID, &prev) < 0 || ra_kev_int(e, RA_KF_NEXT_TID, &next) < 0)
		return 0;
	int ret = account(k, s, c, c->cur < 0 || c->cur == prev ? prev : -1, c->since, e->ns);
	if (ret < 0)
		return ret;
	c->switches += e->in_window;
	c->since = e->ns;
	c->cur = next;
	return 0;
}

int ra_kcpu_finish_threads(struct ra_kernel *k, struct ra_kcpu *s)
{
	/* The last interval of each CPU: to the last event of the trace,
	 * or to the window's end when the trace goes on after it. */
	int64_t end = k->cut ? k->end : k->last_ns;
	for (uint32_t i = 0; i < s->nr_cpu; i++) {
		struct cpu_stat *c = &s->cpu[i];
		int ret = account(k, s, c, c->cur, c->since, end);
		if (ret < 0)
			return ret;
		int64_t covered = (int64_t)(c->busy + c->idle + c->unknown);
		if (covered > s->span)
			s->span = covered;
	}
	return 0;
}

int ra_kcpu_finish(struct ra_kernel *k, struct ra_kcpu *s)
{
	if (RT_ARRAY_GROW_ZEROED(s->thr, s->nr_thr, (size_t)k->nr_threads, 64) < 0)
		return -ENOMEM;
	s->nr_proc = k->nr_procs;
	if (!(s->proc = calloc(s->nr_proc ? s->nr_proc : 1, sizeof(*s->proc))))
		return -ENOMEM;
	for (uint32_t t = 0; t < k->nr_threads; t++)
		s->proc[k->threads[t].proc] += s->thr[t];
	s->thr_order = ra_korder(s->thr, k->nr_threads, &s->nr_thr_order);
	s->proc_order = ra_korder(s->proc, s->nr_proc, &s->nr_proc_order);
	return s->thr_order && s->proc_order ? 0 : -ENOMEM;
}

static double pct(uint64_t part, int64_t whole)
{
	return whole > 0 ? 100.0 * (double)part / (double)whole : 0;
}

void ra_kcpu_text(FILE *f, const struct ra_kernel *k, const struct ra_kcpu *s)
{
	char span[32], busy[32], idle[32];
	ra_format_duration(s->span, span, sizeof(span));
	fprintf(f, "\n== CPU usage ==\n%u CPUs, %s accounted on the busiest one "
		"(%% of one CPU over that time)\n\n", s->nr_cpu, span);
	fprintf(f, "%-5s %7s %10s %10s %10s %10s\n", "cpu", "usage", "busy", "idle", "unknown",
		"switches");
	uint64_t unknown = 0;
	for (uint32_t i = 0; i < s->nr_cpu; i++) {
		const struct cpu_stat *c = &s->cpu[i];
		char unk[32];
		ra_format_duration((int64_t)c->busy, busy, sizeof(busy));
		ra_format_duration((int64_t)c->idle, idle, sizeof(idle));
		ra_format_duration((int64_t)c->unknown, unk, sizeof(unk));
		unknown += c->unknown;
		fprintf(f, "%-5u %6.1f%% %10s %10s %10s %10" PRIu64 "\n", i,
			pct(c->busy, (int64_t)(c->busy + c->idle)), busy, idle, unk, c->switches);
	}
	if (unknown)
		fprintf(f, "(unknown: switches of other threads were not recorded, e.g. record -k "
			"without --all-processes; usage is of the known time)\n");
	fprintf(f, "\nper process (top %u):\n%-8s %-16s %10s %7s %8s\n", k->opt.top, "pid", "name",
		"cpu time", "cpu %", "threads");
	for (uint32_t i = 0; i < s->nr_proc_order && i < k->opt.top; i++) {
		const struct ra_kproc *p = &k->procs[s->proc_order[i]];
		uint64_t v = s->proc[s->proc_order[i]];
		char pid[32];
		snprintf(pid, sizeof(pid), "%" PRId64 "%s", p->pid, p->pid_known ? "" : "?");
		ra_format_duration((int64_t)v, busy, sizeof(busy));
		fprintf(f, "%-8s %-16s %10s %6.1f%% %8u\n", pid, p->name[0] ? p->name : "?", busy,
			pct(v, s->span), p->nr_threads);
	}
	fprintf(f, "\nper thread (top %u):\n%-8s %-8s %-16s %10s %7s\n", k->opt.top, "tid", "pid",
		"name", "cpu time", "cpu %");
	for (uint32_t i = 0; i < s->nr_thr_order && i < k->opt.top; i++) {
		const struct ra_kthread *t = &k->threads[s->thr_order[i]];
		uint64_t v = s->thr[s->thr_order[i]];
		char pid[32];
		snprintf(pid, sizeof(pid), "%" PRId64 "%s", t->pid, t->pid_known ? "" : "?");
		ra_format_duration((int64_t)v, busy, sizeof(busy));
		fprintf(f, "%-8" PRId64 " %-8s %-16s %10s %6.1f%%\n", t->tid, pid,
			t->name[0] ? t->name : "?", busy, pct(v, s->span));
	}
}

void ra_kcpu_json(FILE *f, const struct ra_kernel *k, const struct ra_kcpu *s)
{
	fprintf(f, "{\"span_ns\":%" PRId64 ",\"cpus\":[", s->span);
	for (uint32_t i = 0; i < s->nr_cpu; i++) {
		const struct cpu_stat *c = &s->cpu[i];
		fprintf(f, "%s{\"cpu\":%u,\"busy_ns\":%" PRIu64 ",\"idle_ns\":%" PRIu64
			",\"unknown_ns\":%" PRIu64 ",\"switches\":%" PRIu64 "}", i ? "," : "", i,
			c->busy, c->idle, c->unknown, c->switches);
	}
	fputs("],\"processes\":[", f);
	for (uint32_t i = 0; i < s->nr_proc_order; i++) {
		fprintf(f, "%s{", i ? "," : "");
		ra_kjson_proc(f, &k->procs[s->proc_order[i]]);
		fprintf(f, ",\"cpu_ns\":%" PRIu64 "}", s->proc[s->proc_order[i]]);
	}
	fputs("],\"threads\":[", f);
	for (uint32_t i = 0; i < s->nr_thr_order; i++) {
		fprintf(f, "%s{", i ? "," : "");
		ra_kjson_thread(f, &k->threads[s->thr_order[i]]);
		fprintf(f, ",\"cpu_ns\":%" PRIu64 "}", s->thr[s->thr_order[i]]);
	}
	fputs("]}", f);
}

void ra_kcpu_free(struct ra_kcpu *s)
{
	free(s->cpu);
	free(s->thr);
	free(s->proc);
	free(s->thr_order);
	free(s->proc_order);
	free(s);
}
