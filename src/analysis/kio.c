/*
 * kio.c - `analyze --io`: block requests (block_rq_issue to the
 * block_rq_complete of the same device and sector) per device and per
 * process (of the thread that issued them): requests, bytes read and
 * written, latency (ra_loghist), the slowest; bytes per process over time
 * (at most SLOTS intervals: the interval doubles, from 1 ms, until the
 * window fits); and the sync calls (fsync, fdatasync, sync, syncfs,
 * msync, sync_file_range) with their duration and the write requests
 * issued while they ran, by all threads and by the caller, and the
 * writeback_* events in that time. Requests count by their issue, inside
 * the window; latency by their completion, inside the window.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kstream.h"
#include "../common/array.h"

#define SLOTS 64
#define FIRST_SLOT_NS 1000000
#define SECTOR 512
#define MAX_INFLIGHT (1u << 20)		/* requests in flight kept at most: 48 MiB */

/* LTTng's rwbs bits (lttng-modules' block events); ftrace's is text. */
#define RWBS_WRITE 1
#define RWBS_READ 4

static const char *const sync_names[] = {
	"fsync", "fdatasync", "sync", "syncfs", "msync", "sync_file_range",
};

struct inflight {
	uint64_t dev, sector;
	int64_t ns;
	uint64_t bytes;
	uint32_t thread;
	uint8_t used, write, read;
};

struct io_stat {			/* a device's, a thread's or a process's */
	struct ra_loghist h;
	uint64_t requests, read, written;
	struct ra_ktop top;		/* devices: the slowest requests */
	uint64_t *slots;		/* threads and processes: bytes per slot */
};

struct dev_stat {
	uint64_t dev;
	struct io_stat io;
};

struct sync_open {			/* per thread, at its sync call's entry */
	uint64_t wr_bytes, wr_reqs, self_bytes, writeback;
};

struct sync_call {
	int64_t begin_ns, dur_ns, fd, ret;
	uint32_t thread, sys;
	uint64_t bytes, reqs, self_bytes, writeback;
};

struct ra_kio {
	struct inflight *fl;		/* open addressing by (dev, sector) */
	uint32_t fl_cap, fl_nr;
	struct dev_stat *devs;
	uint32_t nr_devs;
	size_t cap_devs;
	struct io_stat *thr;		/* per thread */
	size_t nr_thr;
	struct io_stat *proc;		/* per process (finish) */
	uint32_t nr_proc;
	int64_t slot0, slot_ns;		/* bytes over time: first slot, width */
	/* Totals of write requests issued so far (all threads), writeback
	 * events; per thread, what was at its sync call's entry. */
	uint64_t wr_bytes, wr_reqs, writeback;
	struct sync_open *sopen;
	size_t nr_sopen;
	bool *is_sync;			/* per syscall name */
	struct sync_call *syncs;	/* the longest sync calls */
	uint32_t nr_syncs;
	uint64_t sync_count;
	uint64_t unmatched, dropped;
	uint32_t *dev_order, *proc_order, *thr_order;
	uint32_t nr_dev_order, nr_proc_order, nr_thr_order;
};

struct ra_kio *ra_kio_new(void)
{
	struct ra_kio *s = calloc(1, sizeof(*s));
	if (s)
		s->slot_ns = FIRST_SLOT_NS;
	return s;
}

/* ---- requests in flight ---- */

static uint32_t fl_slot(uint64_t dev, uint64_t sector, uint32_t cap)
{
	uint64_t h = (dev * 0x9e3779b97f4a7c15ull) ^ (sector * 0xc2b2ae3d27d4eb4full);
	return (uint32_t)(h >> 32) & (cap - 1);
}

static struct inflight *fl_find(struct ra_kio *s, uint64_t dev, uint64_t sector)
{
	if (!s->fl_cap)
		return NULL;
	for (uint32_t i = fl_slot(dev, sector, s->fl_cap);; i = (i + 1) & (s->fl_cap - 1)) {
		struct inflight *f = &s->fl[i];
		if (!f->used)
			return NULL;
		if (f->dev == dev && f->sector == sector)
			return f;
	}
}

static int fl_grow(struct ra_kio *s)
{
	uint32_t cap = s->fl_cap ? s->fl_cap * 2 : 1024;
	struct inflight *fl = calloc(cap, sizeof(*fl));
	if (!fl)
		return -ENOMEM;
	for (uint32_t j = 0; j < s->fl_cap; j++) {
		if (!s->fl[j].used)
			continue;
		uint32_t i = fl_slot(s->fl[j].dev, s->fl[j].sector, cap);
		while (fl[i].used)
			i = (i + 1) & (cap - 1);
		fl[i] = s->fl[j];
	}
	free(s->fl);
	s->fl = fl;
	s->fl_cap = cap;
	return 0;
}

/* Remove f, shifting back the entries after it that belong before. */
static void fl_remove(struct ra_kio *s, struct inflight *f)
{
	uint32_t mask = s->fl_cap - 1, i = (uint32_t)(f - s->fl);
	for (uint32_t j = (i + 1) & mask; s->fl[j].used; j = (j + 1) & mask) {
		uint32_t home = fl_slot(s->fl[j].dev, s->fl[j].sector, s->fl_cap);
		/* j's entry may move to i if its home is not in (i, j]. */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			s->fl[i] = s->fl[j];
			i = j;
		}
	}
	s->fl[i].used = 0;
	s->fl_nr--;
}

/* ---- accounting ---- */

static void rw_of(const struct ra_kev *e, bool *write, bool *read)
{
	char rwbs[16];
	int64_t bits;
	*write = *read = false;
	if (ra_kev_str(e, RA_KF_RWBS, rwbs, sizeof(rwbs)) == 0) {
		*write = strchr(rwbs, 'W') != NULL;
		*read = strchr(rwbs, 'R') != NULL;
	} else if (ra_kev_int(e, RA_KF_RWBS, &bits) == 0) {
		*write = bits & RWBS_WRITE;
		*read = (bits & RWBS_READ) != 0;
	}
}

static int thr_stat(struct ra_kio *s, uint32_t t, struct io_stat **out)
{
	if (RT_ARRAY_GROW_ZEROED(s->thr, s->nr_thr, (size_t)t + 1, 64) < 0)
		return -ENOMEM;
	*out = &s->thr[t];
	return 0;
}

static struct io_stat *dev_stat(struct ra_kio *s, uint64_t dev)
{
	for (uint32_t i = 0; i < s->nr_devs; i++)
		if (s->devs[i].dev == dev)
			return &s->devs[i].io;
	if (RT_ARRAY_GROW(s->devs, s->cap_devs, (size_t)s->nr_devs + 1, 8) < 0)
		return NULL;
	s->devs[s->nr_devs] = (struct dev_stat){ .dev = dev };
	return &s->devs[s->nr_devs++].io;
}

/* Halve the time resolution of every thread's slots. */
static void merge_slots(struct ra_kio *s)
{
	for (size_t t = 0; t < s->nr_thr; t++) {
		uint64_t *v = s->thr[t].slots;
		if (!v)
			continue;
		for (unsigned i = 0; i < SLOTS / 2; i++)
			v[i] = v[2 * i] + v[2 * i + 1];
		memset(v + SLOTS / 2, 0, SLOTS / 2 * sizeof(*v));
	}
	s->slot_ns *= 2;
}

static int add_bytes(struct ra_kio *s, struct io_stat *t, int64_t ns, uint64_t bytes)
{
	if (s->slot0 == 0)
		s->slot0 = ns;
	if (!t->slots && !(t->slots = calloc(SLOTS, sizeof(*t->slots))))
		return -ENOMEM;
	int64_t off = ra_ns_diff(ns, s->slot0);
	if (off < 0)
		off = 0;
	while (off / s->slot_ns >= SLOTS && s->slot_ns < INT64_MAX / 2)
		merge_slots(s);
	int64_t i = off / s->slot_ns;
	t->slots[i < SLOTS ? i : SLOTS - 1] += bytes;
	return 0;
}

static int issue(struct ra_kio *s, const struct ra_kev *e)
{
	int64_t dev, sector, n;
	if (ra_kev_int(e, RA_KF_DEV, &dev) < 0 || ra_kev_int(e, RA_KF_SECTOR, &sector) < 0)
		return 0;
	uint64_t bytes = 0;
	if (ra_kev_int(e, RA_KF_BYTES, &n) == 0 && n > 0)
		bytes = (uint64_t)n;
	else if (ra_kev_int(e, RA_KF_NR_SECTOR, &n) == 0 && n > 0)
		bytes = (uint64_t)n * SECTOR;
	bool write, read;
	rw_of(e, &write, &read);
	if (write && e->in_window) {
		s->wr_bytes += bytes;
		s->wr_reqs++;
	}
	if (e->in_window && e->thread != UINT32_MAX) {
		struct io_stat *t;
		if (thr_stat(s, e->thread, &t) < 0)
			return -ENOMEM;
		t->requests++;
		t->read += read ? bytes : 0;
		t->written += write ? bytes : 0;
		if ((read || write) && add_bytes(s, t, e->ns, bytes) < 0)
			return -ENOMEM;
		if (write && e->thread < s->nr_sopen)
			s->sopen[e->thread].self_bytes += bytes;
	}
	struct inflight *f = fl_find(s, (uint64_t)dev, (uint64_t)sector);
	if (!f) {
		if (s->fl_nr >= MAX_INFLIGHT) {
			s->dropped++;
			return 0;
		}
		if ((s->fl_nr + 1) * 2 > s->fl_cap && fl_grow(s) < 0)
			return -ENOMEM;
		uint32_t i = fl_slot((uint64_t)dev, (uint64_t)sector, s->fl_cap);
		while (s->fl[i].used)
			i = (i + 1) & (s->fl_cap - 1);
		f = &s->fl[i];
		s->fl_nr++;
	} else {
		s->unmatched++;	/* issued again before its completion */
	}
	*f = (struct inflight){ .dev = (uint64_t)dev, .sector = (uint64_t)sector, .ns = e->ns,
				.bytes = bytes, .thread = e->thread, .used = 1, .write = write,
				.read = read };
	return 0;
}

static int complete(struct ra_kernel *k, struct ra_kio *s, const struct ra_kev *e)
{
	int64_t dev, sector;
	if (ra_kev_int(e, RA_KF_DEV, &dev) < 0 || ra_kev_int(e, RA_KF_SECTOR, &sector) < 0)
		return 0;
	struct inflight *f = fl_find(s, (uint64_t)dev, (uint64_t)sector);
	if (!f) {
		s->unmatched += e->in_window;
		return 0;
	}
	struct inflight r = *f;
	fl_remove(s, f);
	if (!e->in_window)
		return 0;
	int64_t d = ra_ns_diff(e->ns, r.ns);
	struct io_stat *dv = dev_stat(s, r.dev);
	if (!dv)
		return -ENOMEM;
	dv->requests++;
	dv->read += r.read ? r.bytes : 0;
	dv->written += r.write ? r.bytes : 0;
	struct ra_kout o = { .begin_ns = r.ns, .dur_ns = d, .value = (int64_t)r.bytes,
			     .thread = r.thread, .what = r.write ? 'W' : r.read ? 'R' : '-' };
	if (ra_loghist_add(&dv->h, d) < 0 || ra_ktop_push(&dv->top, k->opt.top, &o) < 0)
		return -ENOMEM;
	if (r.thread != UINT32_MAX) {
		struct io_stat *t;
		if (thr_stat(s, r.thread, &t) < 0 || ra_loghist_add(&t->h, d) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int sync_calls(struct ra_kernel *k, struct ra_kio *s, const struct ra_kev *e)
{
	if (!s->is_sync) {
		if (!(s->is_sync = calloc(k->sysnames.nr ? k->sysnames.nr : 1, 1)))
			return -ENOMEM;
		for (size_t i = 0; i < sizeof(sync_names) / sizeof(sync_names[0]); i++) {
			int64_t n = ra_strtab_find(&k->sysnames, sync_names[i]);
			if (n >= 0)
				s->is_sync[n] = true;
		}
	}
	if (e->thread == UINT32_MAX || !s->is_sync[e->kc->sys])
		return 0;
	if (RT_ARRAY_GROW_ZEROED(s->sopen, s->nr_sopen, (size_t)e->thread + 1, 64) < 0)
		return -ENOMEM;
	struct sync_open *o = &s->sopen[e->thread];
	if (e->kc->role == RA_KR_SYS_ENTRY) {
		*o = (struct sync_open){ .wr_bytes = s->wr_bytes, .wr_reqs = s->wr_reqs,
					 .writeback = s->writeback };
		return 0;
	}
	if (!e->sys_done || !e->in_window)
		return 0;
	struct sync_call c = {
		.begin_ns = e->sys_begin, .dur_ns = ra_ns_diff(e->ns, e->sys_begin), .fd = e->fd,
		.ret = e->ret, .thread = e->thread, .sys = e->sys,
		.bytes = s->wr_bytes - o->wr_bytes, .reqs = s->wr_reqs - o->wr_reqs,
		.self_bytes = o->self_bytes, .writeback = s->writeback - o->writeback,
	};
	s->sync_count++;
	unsigned cap = k->opt.top;
	if (!cap || (s->nr_syncs == cap && c.dur_ns <= s->syncs[cap - 1].dur_ns))
		return 0;
	if (!s->syncs && !(s->syncs = malloc(cap * sizeof(*s->syncs))))
		return -ENOMEM;
	uint32_t i = s->nr_syncs < cap ? s->nr_syncs++ : cap - 1;
	while (i > 0 && s->syncs[i - 1].dur_ns < c.dur_ns) {
		s->syncs[i] = s->syncs[i - 1];
		i--;
	}
	s->syncs[i] = c;
	return 0;
}

int ra_kio_feed(struct ra_kernel *k, struct ra_kio *s, const struct ra_kev *e)
{
	switch (e->kc->role) {
	case RA_KR_BLOCK_ISSUE:
		return issue(s, e);
	case RA_KR_BLOCK_COMPLETE:
		return complete(k, s, e);
	case RA_KR_WRITEBACK:
		s->writeback += e->in_window;
		return 0;
	case RA_KR_SYS_ENTRY:
	case RA_KR_SYS_EXIT:
		return sync_calls(k, s, e);
	default:
		return 0;
	}
}

int ra_kio_finish(struct ra_kernel *k, struct ra_kio *s)
{
	s->nr_proc = k->nr_procs;
	if (!(s->proc = calloc(s->nr_proc ? s->nr_proc : 1, sizeof(*s->proc))))
		return -ENOMEM;
	for (size_t t = 0; t < s->nr_thr && t < k->nr_threads; t++) {
		struct io_stat *w = &s->thr[t], *p = &s->proc[k->threads[t].proc];
		if (!w->requests && !w->h.count)
			continue;
		p->requests += w->requests;
		p->read += w->read;
		p->written += w->written;
		if (ra_loghist_merge(&p->h, &w->h) < 0)
			return -ENOMEM;
		if (w->slots) {
			if (!p->slots && !(p->slots = calloc(SLOTS, sizeof(*p->slots))))
				return -ENOMEM;
			for (unsigned i = 0; i < SLOTS; i++)
				p->slots[i] += w->slots[i];
		}
	}
	size_t most = s->nr_devs;
	if (k->nr_procs > most)
		most = k->nr_procs;
	if (k->nr_threads > most)
		most = k->nr_threads;
	uint64_t *key = calloc(most ? most : 1, sizeof(*key));
	if (!key)
		return -ENOMEM;
	for (uint32_t i = 0; i < s->nr_devs; i++)
		key[i] = s->devs[i].io.requests;
	s->dev_order = ra_korder(key, s->nr_devs, &s->nr_dev_order);
	for (uint32_t i = 0; i < s->nr_proc; i++)
		key[i] = s->proc[i].read + s->proc[i].written + (s->proc[i].requests ? 1 : 0);
	s->proc_order = ra_korder(key, s->nr_proc, &s->nr_proc_order);
	uint32_t nt = k->nr_threads < s->nr_thr ? k->nr_threads : (uint32_t)s->nr_thr;
	for (uint32_t i = 0; i < nt; i++)
		key[i] = s->thr[i].read + s->thr[i].written + (s->thr[i].requests ? 1 : 0);
	s->thr_order = ra_korder(key, nt, &s->nr_thr_order);
	free(key);
	return s->dev_order && s->proc_order && s->thr_order ? 0 : -ENOMEM;
}

static void dev_name(uint64_t dev, char *out, size_t len)
{
	/* The kernel's dev_t: major in the bits above 20, minor below. */
	snprintf(out, len, "%" PRIu64 ":%" PRIu64, dev >> 20, dev & 0xfffff);
}

/* The slots of a process as a row of block characters, scaled to max. */
static void sparkline(FILE *f, const uint64_t *v, uint64_t max)
{
	static const char *const bars[] = { " ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█" };
	for (unsigned i = 0; i < SLOTS; i++)
		fputs(bars[max && v ? (v[i] * 8 + max - 1) / max : 0], f);
}

static void text_who(FILE *f, const struct io_stat *w)
{
	char rd[32], wr[32], p50[32], p99[32], max[32];
	ra_format_bytes(w->read, rd, sizeof(rd));
	ra_format_bytes(w->written, wr, sizeof(wr));	/* "n B": 9 + 1 columns */
	ra_format_duration(ra_loghist_percentile(&w->h, 50), p50, sizeof(p50));
	ra_format_duration(ra_loghist_percentile(&w->h, 99), p99, sizeof(p99));
	ra_format_duration(w->h.max, max, sizeof(max));
	fprintf(f, "%9" PRIu64 " %11s %11s %9s %9s %9s", w->requests, rd, wr, p50, p99, max);
}

#define WHO_HEAD " requests        read     written       p50       p99       max"

void ra_kio_text(FILE *f, const struct ra_kernel *k, const struct ra_kio *s)
{
	unsigned top = k->opt.top;
	char a[32], b[32], c[32];
	fprintf(f, "\n== Block I/O ==\n");
	fprintf(f, "%" PRIu64 " completions without their issue (issued before the trace or the "
		"window, or issued twice)%s\n", s->unmatched, s->dropped ? ", requests dropped" : "");
	fprintf(f, "\nper device (latency: issue to completion):\n%-9s" WHO_HEAD "\n", "device");
	for (uint32_t i = 0; i < s->nr_dev_order; i++) {
		const struct dev_stat *d = &s->devs[s->dev_order[i]];
		char name[32];
		dev_name(d->dev, name, sizeof(name));
		fprintf(f, "%-9s", name);
		text_who(f, &d->io);
		fputc('\n', f);
	}
	fprintf(f, "\nper process (top %u by bytes; requests issued by its threads):\n"
		"%-8s %-16s" WHO_HEAD "\n", top, "pid", "name");
	for (uint32_t i = 0; i < s->nr_proc_order && i < top; i++) {
		const struct ra_kproc *p = &k->procs[s->proc_order[i]];
		char pid[32];
		snprintf(pid, sizeof(pid), "%" PRId64 "%s", p->pid, p->pid_known ? "" : "?");
		fprintf(f, "%-8s %-16s", pid, p->name[0] ? p->name : "?");
		text_who(f, &s->proc[s->proc_order[i]]);
		fputc('\n', f);
	}
	fprintf(f, "\nper thread (top %u by bytes):\n%-8s %-8s %-16s" WHO_HEAD "\n", top, "tid",
		"pid", "name");
	for (uint32_t i = 0; i < s->nr_thr_order && i < top; i++) {
		const struct ra_kthread *t = &k->threads[s->thr_order[i]];
		char pid[32];
		snprintf(pid, sizeof(pid), "%" PRId64 "%s", t->pid, t->pid_known ? "" : "?");
		fprintf(f, "%-8" PRId64 " %-8s %-16s", t->tid, pid, t->name[0] ? t->name : "?");
		text_who(f, &s->thr[s->thr_order[i]]);
		fputc('\n', f);
	}
	ra_format_duration(s->slot_ns, a, sizeof(a));
	fprintf(f, "\nbytes over time (%s per column, from %" PRId64 " ns; top %u processes):\n", a,
		s->slot0, top);
	uint64_t max = 0;
	for (uint32_t i = 0; i < s->nr_proc_order && i < top; i++)
		for (unsigned j = 0; s->proc[s->proc_order[i]].slots && j < SLOTS; j++)
			if (s->proc[s->proc_order[i]].slots[j] > max)
				max = s->proc[s->proc_order[i]].slots[j];
	for (uint32_t i = 0; i < s->nr_proc_order && i < top; i++) {
		const struct ra_kproc *p = &k->procs[s->proc_order[i]];
		fprintf(f, "%-8" PRId64 " %-16s |", p->pid, p->name[0] ? p->name : "?");
		sparkline(f, s->proc[s->proc_order[i]].slots, max);
		fputs("|\n", f);
	}
	fprintf(f, "\nslowest requests (top %u of each device):\n", top);
	for (uint32_t i = 0; i < s->nr_dev_order; i++) {
		const struct dev_stat *d = &s->devs[s->dev_order[i]];
		char name[32], who[96];
		dev_name(d->dev, name, sizeof(name));
		for (uint32_t j = 0; j < d->io.top.nr; j++) {
			const struct ra_kout *o = &d->io.top.v[j];
			ra_format_duration(o->dur_ns, a, sizeof(a));
			ra_format_wall(o->begin_ns, b, sizeof(b));
			ra_format_bytes((uint64_t)o->value, c, sizeof(c));
			ra_kthread_label(k, o->thread, who, sizeof(who));
			fprintf(f, "  %-9s %9s  %s  %19" PRId64 "  %c %11s  issued by %s\n", name, a, b,
				o->begin_ns, (char)o->what, c, who);
		}
	}
	fprintf(f, "\nsync calls: %" PRIu64 " (the longest %u; writes issued while each ran, by "
		"all threads and by the caller):\n", s->sync_count, top);
	fprintf(f, "  %9s  %-29s  %19s  %-10s %4s %9s %11s %11s %9s  %s\n", "duration",
		"begin (UTC)", "begin (ns)", "syscall", "fd", "requests", "written", "by caller",
		"writeback", "thread");
	for (uint32_t i = 0; i < s->nr_syncs; i++) {
		const struct sync_call *y = &s->syncs[i];
		char who[96], self[32];
		ra_format_duration(y->dur_ns, a, sizeof(a));
		ra_format_wall(y->begin_ns, b, sizeof(b));
		ra_format_bytes(y->bytes, c, sizeof(c));
		ra_format_bytes(y->self_bytes, self, sizeof(self));
		ra_kthread_label(k, y->thread, who, sizeof(who));
		fprintf(f, "  %9s  %-29s  %19" PRId64 "  %-10s %4" PRId64 " %9" PRIu64
			" %11s %11s %9" PRIu64 "  %s\n", a, b, y->begin_ns, k->sysnames.str[y->sys],
			y->fd, y->reqs, c, self, y->writeback, who);
	}
}

static void json_who(FILE *f, const struct io_stat *w)
{
	fprintf(f, ",\"requests\":%" PRIu64 ",\"read_bytes\":%" PRIu64 ",\"written_bytes\":%" PRIu64
		",\"latency\":{", w->requests, w->read, w->written);
	ra_kjson_lat(f, &w->h);
	fputc('}', f);
}

static void json_slots(FILE *f, const uint64_t *v)
{
	fputs(",\"bytes_over_time\":[", f);
	for (unsigned i = 0; i < SLOTS; i++)
		fprintf(f, "%s%" PRIu64, i ? "," : "", v ? v[i] : 0);
	fputc(']', f);
}

void ra_kio_json(FILE *f, const struct ra_kernel *k, const struct ra_kio *s)
{
	fprintf(f, "{\"unmatched\":%" PRIu64 ",\"dropped\":%" PRIu64 ",\"slot_start_ns\":%" PRId64
		",\"slot_ns\":%" PRId64 ",\"devices\":[", s->unmatched, s->dropped, s->slot0,
		s->slot_ns);
	for (uint32_t i = 0; i < s->nr_dev_order; i++) {
		const struct dev_stat *d = &s->devs[s->dev_order[i]];
		char name[32];
		dev_name(d->dev, name, sizeof(name));
		fprintf(f, "%s{\"dev\":%" PRIu64 ",\"name\":\"%s\"", i ? "," : "", d->dev, name);
		json_who(f, &d->io);
		fputs(",\"slowest\":[", f);
		for (uint32_t j = 0; j < d->io.top.nr; j++) {
			const struct ra_kout *o = &d->io.top.v[j];
			fprintf(f, "%s{\"dur_ns\":%" PRId64 ",\"issue_ns\":%" PRId64 ",\"bytes\":%" PRId64
				",\"rw\":\"%c\"", j ? "," : "", o->dur_ns, o->begin_ns, o->value,
				(char)o->what);
			if (o->thread != UINT32_MAX) {
				fputc(',', f);
				ra_kjson_thread(f, &k->threads[o->thread]);
			}
			fputc('}', f);
		}
		fputs("]}", f);
	}
	fputs("],\"processes\":[", f);
	for (uint32_t i = 0; i < s->nr_proc_order; i++) {
		fprintf(f, "%s{", i ? "," : "");
		ra_kjson_proc(f, &k->procs[s->proc_order[i]]);
		json_who(f, &s->proc[s->proc_order[i]]);
		json_slots(f, s->proc[s->proc_order[i]].slots);
		fputc('}', f);
	}
	fputs("],\"threads\":[", f);
	for (uint32_t i = 0; i < s->nr_thr_order; i++) {
		fprintf(f, "%s{", i ? "," : "");
		ra_kjson_thread(f, &k->threads[s->thr_order[i]]);
		json_who(f, &s->thr[s->thr_order[i]]);
		json_slots(f, s->thr[s->thr_order[i]].slots);
		fputc('}', f);
	}
	fprintf(f, "],\"sync_count\":%" PRIu64 ",\"sync_calls\":[", s->sync_count);
	for (uint32_t i = 0; i < s->nr_syncs; i++) {
		const struct sync_call *y = &s->syncs[i];
		fprintf(f, "%s{\"syscall\":\"%s\",\"dur_ns\":%" PRId64 ",\"begin_ns\":%" PRId64
			",\"fd\":%" PRId64 ",\"ret\":%" PRId64 ",\"write_requests\":%" PRIu64
			",\"written_bytes\":%" PRIu64 ",\"written_by_caller\":%" PRIu64
			",\"writeback_events\":%" PRIu64 ",", i ? "," : "", k->sysnames.str[y->sys],
			y->dur_ns, y->begin_ns, y->fd, y->ret, y->reqs, y->bytes, y->self_bytes,
			y->writeback);
		ra_kjson_thread(f, &k->threads[y->thread]);
		fputc('}', f);
	}
	fputs("]}", f);
}

void ra_kio_free(struct ra_kio *s)
{
	free(s->fl);
	for (uint32_t i = 0; i < s->nr_devs; i++) {
		ra_loghist_free(&s->devs[i].io.h);
		free(s->devs[i].io.top.v);
	}
	free(s->devs);
	for (size_t i = 0; i < s->nr_thr; i++) {
		ra_loghist_free(&s->thr[i].h);
		free(s->thr[i].slots);
	}
	free(s->thr);
	for (uint32_t i = 0; i < s->nr_proc; i++) {
		ra_loghist_free(&s->proc[i].h);
		free(s->proc[i].slots);
	}
	free(s->proc);
	free(s->sopen);
	free(s->is_sync);
	free(s->syncs);
	free(s->dev_order);
	free(s->proc_order);
	free(s->thr_order);
	free(s);
}
