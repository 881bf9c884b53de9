/*
 * ksyscalls.c - `analyze --syscalls`: the system calls paired by kernel.c
 * (entry to exit of the same name on the same thread), per system call,
 * per process and per thread: count, total time, latency percentiles
 * (ra_loghist), failures by errno (ret in -4095 .. -1), the longest calls.
 * A call counts when its exit lies inside the window.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kstream.h"
#include "../common/array.h"

#define MAX_ERRNO 4095

struct errn {
	int64_t err;
	uint64_t n;
};

struct sys_stat {
	struct ra_loghist h;
	uint64_t fails;
	struct errn *errs;		/* owned */
	uint32_t nr_errs;
	size_t cap_errs;
	struct ra_ktop top;
};

struct who_stat {			/* a thread's or a process's */
	struct ra_loghist h;
	uint64_t fails;
	uint64_t *sys_ns;		/* owned, per syscall: time in it */
};

struct ra_ksys {
	struct sys_stat *sys;		/* per syscall name (k->sysnames) */
	uint32_t nr_sys;
	struct who_stat *thr;		/* per thread */
	size_t nr_thr;
	struct who_stat *proc;		/* per process (finish) */
	struct ra_ktop top;		/* the longest calls of all */
	uint64_t calls, fails, unmatched;
	uint32_t nr_proc;
	uint32_t *sys_order, *thr_order, *proc_order;	/* by total time, finish */
	uint32_t nr_sys_order, nr_thr_order, nr_proc_order;
};

struct ra_ksys *ra_ksys_new(void)
{
	return calloc(1, sizeof(struct ra_ksys));
}

static int add_errno(struct sys_stat *st, int64_t err)
{
	for (uint32_t i = 0; i < st->nr_errs; i++)
		if (st->errs[i].err == err) {
			st->errs[i].n++;
			return 0;
		}
	if (RT_ARRAY_GROW(st->errs, st->cap_errs, (size_t)st->nr_errs + 1, 4) < 0)
		return -ENOMEM;
	st->errs[st->nr_errs++] = (struct errn){ err, 1 };
	return 0;
}

static int add_who(struct who_stat *w, uint32_t nr_sys, uint32_t sys, int64_t dur, bool failed)
{
	if (!w->sys_ns && !(w->sys_ns = calloc(nr_sys, sizeof(*w->sys_ns))))
		return -ENOMEM;
	w->sys_ns[sys] += (uint64_t)dur;
	w->fails += failed;
	return ra_loghist_add(&w->h, dur);
}

int ra_ksys_feed(struct ra_kernel *k, struct ra_ksys *s, const struct ra_kev *e)
{
	if (e->kc->role == RA_KR_SYS_EXIT && !e->sys_done && e->in_window)
		s->unmatched++;
	if (!e->sys_done || !e->in_window)
		return 0;
	if (!s->sys) {
		s->nr_sys = k->sysnames.nr;
		if (!(s->sys = calloc(s->nr_sys, sizeof(*s->sys))))
			return -ENOMEM;
	}
	int64_t dur = ra_ns_diff(e->ns, e->sys_begin);
	bool failed = e->ret < 0 && e->ret >= -MAX_ERRNO;
	struct sys_stat *st = &s->sys[e->sys];
	int ret;
	if ((ret = ra_loghist_add(&st->h, dur)) < 0)
		return ret;
	s->calls++;
	if (failed) {
		st->fails++;
		s->fails++;
		if ((ret = add_errno(st, -e->ret)) < 0)
			return ret;
	}
	if (RT_ARRAY_GROW_ZEROED(s->thr, s->nr_thr, (size_t)e->thread + 1, 64) < 0 ||
	    (ret = add_who(&s->thr[e->thread], s->nr_sys, e->sys, dur, failed)) < 0)
		return -ENOMEM;
	struct ra_kout o = { .begin_ns = e->sys_begin, .dur_ns = dur, .value = e->ret,
			     .thread = e->thread, .what = e->sys };
	if (ra_ktop_push(&st->top, k->opt.top, &o) < 0 || ra_ktop_push(&s->top, k->opt.top, &o) < 0)
		return -ENOMEM;
	return 0;
}

int ra_ksys_finish(struct ra_kernel *k, struct ra_ksys *s)
{
	if (!(s->proc = calloc(k->nr_procs ? k->nr_procs : 1, sizeof(*s->proc))))
		return -ENOMEM;
	s->nr_proc = k->nr_procs;
	/* s->thr is zeroed past the threads with calls (its capacity). */
	for (size_t t = 0; t < s->nr_thr && t < k->nr_threads; t++) {
		struct who_stat *w = &s->thr[t];
		if (!w->h.count)
			continue;
		struct who_stat *p = &s->proc[k->threads[t].proc];
		if (!p->sys_ns && !(p->sys_ns = calloc(s->nr_sys, sizeof(*p->sys_ns))))
			return -ENOMEM;
		for (uint32_t i = 0; i < s->nr_sys; i++)
			p->sys_ns[i] += w->sys_ns[i];
		p->fails += w->fails;
		if (ra_loghist_merge(&p->h, &w->h) < 0)
			return -ENOMEM;
	}
	uint32_t n = s->nr_sys;
	size_t most = n;
	if (s->nr_thr > most)
		most = s->nr_thr;
	if (k->nr_procs > most)
		most = k->nr_procs;
	uint64_t *key = calloc(most ? most : 1, sizeof(*key));
	if (!key)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		key[i] = s->sys[i].h.sum ? s->sys[i].h.sum : s->sys[i].h.count;
	s->sys_order = ra_korder(key, n, &s->nr_sys_order);
	for (size_t i = 0; i < s->nr_thr && i < k->nr_threads; i++)
		key[i] = s->thr[i].h.sum ? s->thr[i].h.sum : s->thr[i].h.count;
	s->thr_order = ra_korder(key, k->nr_threads < s->nr_thr ? k->nr_threads : (uint32_t)s->nr_thr,
				 &s->nr_thr_order);
	for (uint32_t i = 0; i < k->nr_procs; i++)
		key[i] = s->proc[i].h.sum ? s->proc[i].h.sum : s->proc[i].h.count;
	s->proc_order = ra_korder(key, k->nr_procs, &s->nr_proc_order);
	free(key);
	return s->sys_order && s->thr_order && s->proc_order ? 0 : -ENOMEM;
}

/* The syscall a thread or process spent most time in. */
static uint32_t busiest(const struct ra_ksys *s, const struct who_stat *w)
{
	uint32_t best = 0;
	for (uint32_t i = 1; i < s->nr_sys; i++)
		if (w->sys_ns[i] > w->sys_ns[best])
			best = i;
	return best;
}

static void text_errors(FILE *f, const struct sys_stat *st)
{
	/* Most frequent first (a few: sorted in place on a copy). */
	struct errn e[16];
	uint32_t n = st->nr_errs < 16 ? st->nr_errs : 16;
	if (n)
		memcpy(e, st->errs, n * sizeof(*e));
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t j = i + 1; j < n; j++)
			if (e[j].n > e[i].n) {
				struct errn x = e[i];
				e[i] = e[j];
				e[j] = x;
			}
	for (uint32_t i = 0; i < n; i++) {
		char name[32];
		ra_errno_name(e[i].err, name, sizeof(name));
		fprintf(f, "%s%s %" PRIu64, i ? ", " : "  ", name, e[i].n);
	}
	if (st->nr_errs > n)
		fprintf(f, ", ...");
}

static void text_outliers(FILE *f, const struct ra_kernel *k, const struct ra_ktop *top)
{
	fprintf(f, "  %9s  %-29s  %19s  %-16s %8s  %s\n", "duration", "begin (UTC)", "begin (ns)",
		"syscall", "ret", "thread");
	for (uint32_t i = 0; i < top->nr; i++) {
		const struct ra_kout *o = &top->v[i];
		char d[32], w[64], who[96], ret[32];
		ra_format_duration(o->dur_ns, d, sizeof(d));
		ra_format_wall(o->begin_ns, w, sizeof(w));
		ra_kthread_label(k, o->thread, who, sizeof(who));
		if (o->value < 0 && o->value >= -MAX_ERRNO)
			ra_errno_name(-o->value, ret, sizeof(ret));
		else
			snprintf(ret, sizeof(ret), "%" PRId64, o->value);
		fprintf(f, "  %9s  %-29s  %19" PRId64 "  %-16s %8s  %s\n", d, w, o->begin_ns,
			k->sysnames.str[o->what], ret, who);
	}
}

#define LAT_HEAD "    count     total       p50       p99       max"

void ra_ksys_text(FILE *f, const struct ra_kernel *k, const struct ra_ksys *s)
{
	unsigned top = k->opt.top;
	bool unknown_pid = false;
	fprintf(f, "\n== System calls ==\n");
	fprintf(f, "%" PRIu64 " calls, %" PRIu64 " failed, %" PRIu64
		" exits without their entry (begun before the trace or the window)\n", s->calls,
		s->fails, s->unmatched);
	fprintf(f, "\n%-20s" LAT_HEAD "  %8s  %s\n", "syscall", "failed", "errors");
	for (uint32_t i = 0; i < s->nr_sys_order; i++) {
		const struct sys_stat *st = &s->sys[s->sys_order[i]];
		fprintf(f, "%-20s", k->sysnames.str[s->sys_order[i]]);
		ra_ktext_lat(f, &st->h);
		fprintf(f, "  %8" PRIu64, st->fails);
		text_errors(f, st);
		fputc('\n', f);
	}
	fprintf(f, "\nper process (top %u by time in system calls):\n", top);
	fprintf(f, "%-8s %-16s" LAT_HEAD "  %8s  %s\n", "pid", "name", "failed", "most time in");
	for (uint32_t i = 0; i < s->nr_proc_order && i < top; i++) {
		const struct ra_kproc *p = &k->procs[s->proc_order[i]];
		const struct who_stat *w = &s->proc[s->proc_order[i]];
		char pid[32];
		snprintf(pid, sizeof(pid), "%" PRId64 "%s", p->pid, p->pid_known ? "" : "?");
		unknown_pid |= !p->pid_known;
		fprintf(f, "%-8s %-16s", pid, p->name[0] ? p->name : "?");
		ra_ktext_lat(f, &w->h);
		fprintf(f, "  %8" PRIu64 "  %s\n", w->fails, k->sysnames.str[busiest(s, w)]);
	}
	fprintf(f, "\nper thread (top %u by time in system calls):\n", top);
	fprintf(f, "%-8s %-8s %-16s" LAT_HEAD "  %8s  %s\n", "tid", "pid", "name", "failed",
		"most time in");
	for (uint32_t i = 0; i < s->nr_thr_order && i < top; i++) {
		const struct ra_kthread *t = &k->threads[s->thr_order[i]];
		const struct who_stat *w = &s->thr[s->thr_order[i]];
		char pid[32];
		snprintf(pid, sizeof(pid), "%" PRId64 "%s", t->pid, t->pid_known ? "" : "?");
		fprintf(f, "%-8" PRId64 " %-8s %-16s", t->tid, pid, t->name[0] ? t->name : "?");
		ra_ktext_lat(f, &w->h);
		fprintf(f, "  %8" PRIu64 "  %s\n", w->fails, k->sysnames.str[busiest(s, w)]);
	}
	fprintf(f, "\nlongest calls (top %u):\n", top);
	text_outliers(f, k, &s->top);
	if (unknown_pid)
		fprintf(f, "(pid N?: the trace does not say the thread's process: record the pid "
			"context, --kernel-context pid)\n");
}

static void json_outliers(FILE *f, const struct ra_kernel *k, const struct ra_ktop *top)
{
	fputc('[', f);
	for (uint32_t i = 0; i < top->nr; i++) {
		const struct ra_kout *o = &top->v[i];
		char w[64];
		ra_format_wall(o->begin_ns, w, sizeof(w));
		fprintf(f, "%s{\"syscall\":", i ? "," : "");
		ra_json_string(f, k->sysnames.str[o->what], strlen(k->sysnames.str[o->what]));
		fprintf(f, ",\"dur_ns\":%" PRId64 ",\"begin_ns\":%" PRId64 ",\"begin_utc\":\"%s\""
			",\"ret\":%" PRId64, o->dur_ns, o->begin_ns, w, o->value);
		if (o->value < 0 && o->value >= -MAX_ERRNO) {
			char e[32];
			ra_errno_name(-o->value, e, sizeof(e));
			fprintf(f, ",\"errno\":\"%s\"", e);
		}
		if (o->thread != UINT32_MAX) {
			fputc(',', f);
			ra_kjson_thread(f, &k->threads[o->thread]);
		}
		fputc('}', f);
	}
	fputc(']', f);
}

static void json_who(FILE *f, const struct ra_kernel *k, const struct ra_ksys *s,
		     const struct who_stat *w)
{
	fputc(',', f);
	ra_kjson_lat(f, &w->h);
	const char *b = k->sysnames.str[busiest(s, w)];
	fprintf(f, ",\"failed\":%" PRIu64 ",\"most_time_in\":", w->fails);
	ra_json_string(f, b, strlen(b));
}

void ra_ksys_json(FILE *f, const struct ra_kernel *k, const struct ra_ksys *s)
{
	fprintf(f, "{\"calls\":%" PRIu64 ",\"failed\":%" PRIu64 ",\"unmatched_exits\":%" PRIu64
		",\"syscalls\":[", s->calls, s->fails, s->unmatched);
	for (uint32_t i = 0; i < s->nr_sys_order; i++) {
		const struct sys_stat *st = &s->sys[s->sys_order[i]];
		const char *name = k->sysnames.str[s->sys_order[i]];
		fprintf(f, "%s{\"name\":", i ? "," : "");
		ra_json_string(f, name, strlen(name));
		fputc(',', f);
		ra_kjson_lat(f, &st->h);
		fprintf(f, ",\"failed\":%" PRIu64 ",\"errors\":{", st->fails);
		for (uint32_t j = 0; j < st->nr_errs; j++) {
			char e[32];
			ra_errno_name(st->errs[j].err, e, sizeof(e));
			fprintf(f, "%s\"%s\":%" PRIu64, j ? "," : "", e, st->errs[j].n);
		}
		fputs("},\"outliers\":", f);
		json_outliers(f, k, &st->top);
		fputc('}', f);
	}
	fputs("],\"processes\":[", f);
	for (uint32_t i = 0; i < s->nr_proc_order; i++) {
		fprintf(f, "%s{", i ? "," : "");
		ra_kjson_proc(f, &k->procs[s->proc_order[i]]);
		json_who(f, k, s, &s->proc[s->proc_order[i]]);
		fputc('}', f);
	}
	fputs("],\"threads\":[", f);
	for (uint32_t i = 0; i < s->nr_thr_order; i++) {
		fprintf(f, "%s{", i ? "," : "");
		ra_kjson_thread(f, &k->threads[s->thr_order[i]]);
		json_who(f, k, s, &s->thr[s->thr_order[i]]);
		fputc('}', f);
	}
	fputs("],\"outliers\":", f);
	json_outliers(f, k, &s->top);
	fputc('}', f);
}

void ra_ksys_free(struct ra_ksys *s)
{
	for (uint32_t i = 0; i < s->nr_sys && s->sys; i++) {
		ra_loghist_free(&s->sys[i].h);
		free(s->sys[i].errs);
		free(s->sys[i].top.v);
	}
	free(s->sys);
	for (size_t i = 0; i < s->nr_thr; i++) {
		ra_loghist_free(&s->thr[i].h);
		free(s->thr[i].sys_ns);
	}
	free(s->thr);
	for (uint32_t i = 0; i < s->nr_proc; i++) {
		ra_loghist_free(&s->proc[i].h);
		free(s->proc[i].sys_ns);
	}
	free(s->proc);
	free(s->top.v);
	free(s->sys_order);
	free(s->thr_order);
	free(s->proc_order);
	free(s);
}
