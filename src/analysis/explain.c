/*
 * explain.c - the second pass of `ringtrace explain`: where a thread's
 * time went in an interval (running, waiting for a CPU and who ran
 * instead, blocked in which system calls and what woke it, waiting on
 * I/O), what the rest of the system did then against the rest of the
 * trace, and the most likely culprit (docs/explain.md says how it is
 * chosen).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "../common/array.h"

/* Per thread of the model (same index as ra_kstate.th). */
struct xth {
	int64_t cpu_in, cpu_out;	/* running, inside / outside the window */
	uint64_t io_in, io_out;		/* bytes of block requests issued */
	uint64_t rq_in;
	int64_t sync_in;		/* time in fsync & co inside the window */
	uint64_t sync_calls_in;
	uint64_t written_in;		/* bytes of write(2) & co returned in the
					 * window or the WRITE_LOOKBACK before it */
};

/* A system call of a thread: calls inside / outside the window. */
struct xsc {
	uint64_t key;			/* syscall << 32 | thread index; 0 free */
	uint64_t in, out;
	int64_t time_in;
};

/* A group of the thread's sleeps: the same state, syscall and waker. */
struct xwait {
	uint8_t state;
	int32_t syscall;
	struct ra_kwaker waker;
	int64_t ns, max;
	uint64_t count;
};

/* Time a thread ran on a CPU while the explained thread waited. */
struct xrun {
	uint32_t cpu;
	uint32_t th;			/* thread index */
	int64_t ns;
};

/* The explained thread's system calls. */
struct xcall {
	int32_t syscall;
	uint64_t count;
	int64_t ns, max;
};

struct xdev {
	uint64_t dev;
	uint64_t rq_in, rq_out, bytes_in;
	int64_t lat_in, lat_out, max_in;
};

enum culprit_kind {
	C_NONE,		/* no kernel events for the thread */
	C_RAN_INSTEAD,	/* a thread ran on its CPU while it waited */
	C_WAKER,	/* a thread it waited for (woke it) */
	C_IO_PROCESS,	/* another process's I/O while it waited */
	C_DEVICE,	/* it waited on the device */
	C_SELF,		/* its own running, or its own sleeps */
};

struct ra_explain {
	struct ra_explain_target t;
	struct ra_kstate ks;
	int64_t first_ns, last_ns;
	uint64_t lost_events, lost_packets;
	uint32_t target;		/* thread index, UINT32_MAX not seen */
	struct xth *th;
	size_t cap_th;
	struct xsc *sc;
	uint32_t nr_sc, nr_sc_slots;
	/* the explained thread */
	int64_t state_ns[RA_KS_NR];
	int64_t runnable_woken_ns, runnable_preempted_ns;
	uint64_t woken, preempted, migrations;
	int64_t *cpu_ns;		/* per CPU it ran on */
	size_t cap_cpu;
	struct xwait *waits;
	size_t nr_waits, cap_waits;
	struct xrun *ran, *pending;
	size_t nr_ran, cap_ran, nr_pending, cap_pending;
	struct xcall *calls;
	size_t nr_calls, cap_calls;
	uint64_t own_rq;
	uint64_t own_bytes;
	int64_t own_rq_max;
	struct xdev *devs;
	size_t nr_devs, cap_devs;
	int err;
	unsigned top;
	/* the verdict */
	enum culprit_kind kind;
	uint32_t culprit_th;		/* thread index */
	int64_t culprit_ns;		/* the evidence's duration */
	int32_t culprit_sc;
	uint64_t culprit_dev;
	uint32_t culprit_cpu;
	char evidence[512];
};

static int64_t overlap(int64_t b, int64_t e, int64_t A, int64_t B)
{
	int64_t lo = b > A ? b : A, hi = e < B ? e : B;
	return hi > lo ? ra_ns_diff(hi, lo) : 0;
}

static uint32_t th_index(const struct ra_explain *x, const struct ra_ks_thread *th)
{
	return (uint32_t)(th - x->ks.th);
}

static struct xth *xth_of(struct ra_explain *x, uint32_t i)
{
	if (i >= x->cap_th && RT_ARRAY_GROW_ZEROED(x->th, x->cap_th, (size_t)i + 1, 256) < 0) {
		x->err = -ENOMEM;
		return NULL;
	}
	return &x->th[i];
}

/* Data written this long before the window can be what writeback and the
 * journal flush in it: ext4's default commit interval. */
#define WRITE_LOOKBACK_NS 5000000000LL

static bool is_write_call(const char *name)
{
	return !strcmp(name, "write") || !strcmp(name, "pwrite64") || !strcmp(name, "writev") ||
	       !strcmp(name, "pwritev") || !strcmp(name, "pwritev2");
}

static bool is_sync_call(const char *name)
{
	return !strcmp(name, "fsync") || !strcmp(name, "fdatasync") || !strcmp(name, "sync") ||
	       !strcmp(name, "syncfs") || !strcmp(name, "sync_file_range") ||
	       !strcmp(name, "msync");
}

/* --- system calls per thread (open addressing) --------------------------- */

static uint64_t sc_hash(uint64_t k)
{
	return (k * 0x9e3779b97f4a7c15ull) >> 32;
}

static struct xsc *sc_slot(struct ra_explain *x, uint64_t key)
{
	if ((uint64_t)(x->nr_sc + 1) * 2 > x->nr_sc_slots) {
		uint32_t n = x->nr_sc_slots ? x->nr_sc_slots * 2 : 1024;
		struct xsc *s = calloc(n, sizeof(*s));
		if (!s) {
			x->err = -ENOMEM;
			return NULL;
		}
		for (uint32_t i = 0; i < x->nr_sc_slots; i++) {
			if (!x->sc[i].key)
				continue;
			uint32_t j = (uint32_t)sc_hash(x->sc[i].key) & (n - 1);
			while (s[j].key)
				j = (j + 1) & (n - 1);
			s[j] = x->sc[i];
		}
		free(x->sc);
		x->sc = s;
		x->nr_sc_slots = n;
	}
	uint32_t mask = x->nr_sc_slots - 1;
	for (uint32_t j = (uint32_t)sc_hash(key) & mask;; j = (j + 1) & mask) {
		if (x->sc[j].key == key)
			return &x->sc[j];
		if (!x->sc[j].key) {
			x->sc[j].key = key;
			x->nr_sc++;
			return &x->sc[j];
		}
	}
}

/* --- the model's reports ------------------------------------------------ */

static void add_ran(struct ra_explain *x, struct xrun **arr, size_t *nr, size_t *cap,
		    uint32_t cpu, uint32_t th, int64_t ns)
{
	for (size_t i = 0; i < *nr; i++)
		if ((*arr)[i].cpu == cpu && (*arr)[i].th == th) {
			(*arr)[i].ns += ns;
			return;
		}
	if (RT_ARRAY_GROW(*arr, *cap, *nr + 1, 16) < 0) {
		x->err = -ENOMEM;
		return;
	}
	(*arr)[(*nr)++] = (struct xrun){ .cpu = cpu, .th = th, .ns = ns };
}

static bool same_waker(const struct ra_kwaker *a, const struct ra_kwaker *b)
{
	if (a->kind != b->kind)
		return false;
	switch (a->kind) {
	case RA_WAKER_THREAD: return a->tid == b->tid;
	case RA_WAKER_IRQ:
	case RA_WAKER_SOFTIRQ: return a->irq == b->irq;
	case RA_WAKER_IO: return a->dev == b->dev;
	default: return true;
	}
}

static void target_span(struct ra_explain *x, const struct ra_kspan *sp, int64_t in)
{
	x->state_ns[sp->state] += in;
	if (sp->state == RA_KS_RUNNING && sp->cpu != UINT32_MAX) {
		if (sp->cpu >= x->cap_cpu &&
		    RT_ARRAY_GROW_ZEROED(x->cpu_ns, x->cap_cpu, (size_t)sp->cpu + 1, 8) < 0) {
			x->err = -ENOMEM;
			return;
		}
		x->cpu_ns[sp->cpu] += in;
	} else if (sp->state == RA_KS_RUNNABLE) {
		if (sp->preempted) {
			x->runnable_preempted_ns += in;
			x->preempted++;
		} else {
			x->runnable_woken_ns += in;
			x->woken++;
		}
		/* who ran on the CPU it then got, while it waited */
		for (size_t i = 0; i < x->nr_pending; i++)
			if (x->pending[i].cpu == sp->cpu)
				add_ran(x, &x->ran, &x->nr_ran, &x->cap_ran, sp->cpu,
					x->pending[i].th, x->pending[i].ns);
		x->nr_pending = 0;
	} else if (sp->state == RA_KS_BLOCKED || sp->state == RA_KS_IOWAIT) {
		size_t i;
		for (i = 0; i < x->nr_waits; i++)
			if (x->waits[i].state == sp->state && x->waits[i].syscall == sp->syscall &&
			    same_waker(&x->waits[i].waker, &sp->waker))
				break;
		if (i == x->nr_waits) {
			if (RT_ARRAY_GROW(x->waits, x->cap_waits, x->nr_waits + 1, 16) < 0) {
				x->err = -ENOMEM;
				return;
			}
			x->waits[x->nr_waits++] = (struct xwait){ .state = sp->state,
								  .syscall = sp->syscall,
								  .waker = sp->waker };
		}
		x->waits[i].ns += in;
		x->waits[i].count++;
		if (in > x->waits[i].max)
			x->waits[i].max = in;
	}
}

static void on_span(void *arg, const struct ra_kspan *sp)
{
	struct ra_explain *x = arg;
	const struct ra_explain_target *t = &x->t;
	int64_t in = overlap(sp->begin, sp->end, t->begin, t->end);
	uint32_t i = th_index(x, sp->th);
	if (sp->th->tid == t->tid) {
		x->target = i;
		if (in > 0)
			target_span(x, sp, in);
		return;
	}
	if (sp->state != RA_KS_RUNNING)
		return;
	struct xth *xt = xth_of(x, i);
	if (!xt)
		return;
	int64_t all = ra_ns_diff(sp->end, sp->begin);
	xt->cpu_in += in;
	xt->cpu_out += all - in;
	/* the explained thread waiting for a CPU meanwhile? */
	const struct ra_ks_thread *tt = x->target != UINT32_MAX ? &x->ks.th[x->target] : NULL;
	if (tt && tt->state == RA_KS_RUNNABLE && sp->cpu != UINT32_MAX) {
		int64_t b = sp->begin > tt->since ? sp->begin : tt->since;
		int64_t w = overlap(b, sp->end, t->begin, t->end);
		if (w > 0)
			add_ran(x, &x->pending, &x->nr_pending, &x->cap_pending, sp->cpu, i, w);
	}
}

static void on_syscall(void *arg, const struct ra_ks_thread *th, int32_t sc, int64_t begin,
		       int64_t end, int64_t ret)
{
	struct ra_explain *x = arg;
	int64_t in = overlap(begin, end, x->t.begin, x->t.end);
	bool inside = in > 0 || (begin >= x->t.begin && begin < x->t.end);
	uint32_t i = th_index(x, th);
	if (th->tid == x->t.tid && inside) {
		size_t k;
		for (k = 0; k < x->nr_calls && x->calls[k].syscall != sc; k++)
			;
		if (k == x->nr_calls) {
			if (RT_ARRAY_GROW(x->calls, x->cap_calls, x->nr_calls + 1, 16) < 0) {
				x->err = -ENOMEM;
				return;
			}
			x->calls[x->nr_calls++] = (struct xcall){ .syscall = sc };
		}
		x->calls[k].count++;
		x->calls[k].ns += in;
		if (in > x->calls[k].max)
			x->calls[k].max = in;
	}
	struct xsc *s = sc_slot(x, (uint64_t)(uint32_t)sc << 32 | i | 1ull << 63);
	if (!s)
		return;
	if (inside) {
		s->in++;
		s->time_in += in;
	} else {
		s->out++;
	}
	const char *name = ra_kstate_syscall(&x->ks, sc);
	if (inside && is_sync_call(name)) {
		struct xth *xt = xth_of(x, i);
		if (xt) {
			xt->sync_in += in;
			xt->sync_calls_in++;
		}
	} else if (ret > 0 && end < x->t.end && end >= x->t.begin - WRITE_LOOKBACK_NS &&
		   is_write_call(name)) {
		struct xth *xt = xth_of(x, i);
		if (xt)
			xt->written_in += (uint64_t)ret;
	}
}

static void on_io(void *arg, const struct ra_ks_io *io)
{
	struct ra_explain *x = arg;
	/* in flight during the window */
	bool inside = io->issue_ns < x->t.end && io->complete_ns > x->t.begin;
	int64_t lat = io->issue_ns == INT64_MIN || io->open ? -1
			: ra_ns_diff(io->complete_ns, io->issue_ns);
	size_t d;
	for (d = 0; d < x->nr_devs && x->devs[d].dev != io->dev; d++)
		;
	if (d == x->nr_devs) {
		if (d >= 256)
			goto issuer;	/* a bounded list of devices */
		if (RT_ARRAY_GROW(x->devs, x->cap_devs, x->nr_devs + 1, 8) < 0) {
			x->err = -ENOMEM;
			return;
		}
		x->devs[x->nr_devs++] = (struct xdev){ .dev = io->dev };
	}
	if (lat >= 0) {
		if (inside) {
			x->devs[d].rq_in++;
			x->devs[d].bytes_in += io->bytes;
			x->devs[d].lat_in += lat;
			if (lat > x->devs[d].max_in)
				x->devs[d].max_in = lat;
		} else {
			x->devs[d].rq_out++;
			x->devs[d].lat_out += lat;
		}
	}
issuer:
	if (!io->issuer)
		return;
	uint32_t i = th_index(x, io->issuer);
	struct xth *xt = xth_of(x, i);
	if (!xt)
		return;
	if (inside) {
		xt->io_in += io->bytes;
		xt->rq_in++;
	} else {
		xt->io_out += io->bytes;
	}
	if (io->issuer->tid == x->t.tid && inside) {
		x->own_rq++;
		x->own_bytes += io->bytes;
		if (lat > x->own_rq_max)
			x->own_rq_max = lat;
	}
}

static void on_migrate(void *arg, const struct ra_ks_thread *th, uint32_t from, uint32_t to,
		       int64_t ns)
{
	struct ra_explain *x = arg;
	(void)from;
	(void)to;
	if (th->tid == x->t.tid && ns >= x->t.begin && ns < x->t.end)
		x->migrations++;
}

/* --- the verdict --------------------------------------------------------- */

static const struct ra_ks_thread *thr(const struct ra_explain *x, uint32_t i)
{
	return &x->ks.th[i];
}

static int64_t window(const struct ra_explain *x)
{
	return ra_ns_diff(x->t.end, x->t.begin);
}

static int64_t outside(const struct ra_explain *x)
{
	int64_t o = ra_ns_diff(x->last_ns, x->first_ns) - window(x);
	return o > 0 ? o : 0;
}

static int pct(int64_t part, int64_t whole)
{
	return whole > 0 ? (int)(part * 100.0 / (double)whole + 0.5) : 0;
}

/* Bytes per second of a thread's process issued in [A, B) and elsewhere;
 * the process of the thread with the most I/O in the window that is not
 * the explained thread's. */
static uint32_t top_io_thread(const struct ra_explain *x, int64_t own_pid)
{
	uint32_t best = UINT32_MAX;
	uint64_t best_score = 0;
	for (uint32_t i = 0; i < x->ks.nr_th && i < x->cap_th; i++) {
		const struct ra_ks_thread *th = thr(x, i);
		if (th->tid == x->t.tid || (own_pid >= 0 && th->pid == own_pid) || th->kthread)
			continue;
		/* bytes of block I/O and of recent writes (the page cache
		 * that writeback and the journal flush), a byte per ns spent
		 * syncing */
		uint64_t score = x->th[i].io_in + x->th[i].written_in +
				 (uint64_t)x->th[i].sync_in;
		if (score > best_score) {
			best_score = score;
			best = i;
		}
	}
	return best;
}

static void thread_words(const struct ra_explain *x, const struct ra_ks_thread *th, char *out,
			 size_t len)
{
	if (th->pid >= 0 && th->pid != th->tid)
		snprintf(out, len, "process %s (pid %" PRId64 "), thread %s (tid %" PRId64 ")",
			 ra_kstate_process_name(&x->ks, th->pid), th->pid, th->comm[0] ? th->comm : "?",
			 th->tid);
	else if (th->pid >= 0)
		snprintf(out, len, "process %s (pid %" PRId64 "), thread %s (tid %" PRId64 ")",
			 th->comm[0] ? th->comm : "?", th->pid, th->comm[0] ? th->comm : "?",
			 th->tid);
	else
		snprintf(out, len, "thread %s (tid %" PRId64 ", process not recorded)",
			 th->comm[0] ? th->comm : "?", th->tid);
}

/* The process whose threads ran longest on a CPU while the explained
 * thread waited for that CPU (its thread that ran longest there), or
 * NULL; the process's time in *ns. */
static const struct xrun *top_ran_instead(const struct ra_explain *x, int64_t *ns)
{
	const struct xrun *best = NULL;
	*ns = 0;
	for (size_t i = 0; i < x->nr_ran; i++) {
		const struct ra_ks_thread *a = thr(x, x->ran[i].th);
		if (a->tid == 0)
			continue;
		int64_t sum = 0;
		for (size_t j = 0; j < x->nr_ran; j++) {
			const struct ra_ks_thread *b = thr(x, x->ran[j].th);
			if (x->ran[j].cpu == x->ran[i].cpu &&
			    (b == a || (a->pid >= 0 && b->pid == a->pid)))
				sum += x->ran[j].ns;
		}
		if (!best || sum > *ns || (sum == *ns && x->ran[i].ns > best->ns)) {
			best = &x->ran[i];
			*ns = sum;
		}
	}
	return best;
}

/* What ended a sleep of the explained thread, as a suspect. */
enum wait_cause {
	W_THREAD,	/* another user thread: waited for it */
	W_IO,		/* I/O: completion, a kernel thread, uninterruptible */
	W_SELF,		/* its own sleep: a timer, a signal, an interrupt */
};

static enum wait_cause wait_cause(const struct ra_explain *x, const struct xwait *w)
{
	const struct ra_ks_thread *wt = w->waker.kind == RA_WAKER_THREAD
			? ra_kstate_thread(&x->ks, w->waker.tid) : NULL;
	if (wt && !wt->kthread && wt->tid != x->t.tid)
		return W_THREAD;
	if (w->waker.kind == RA_WAKER_IO || (wt && wt->kthread) || w->state == RA_KS_IOWAIT)
		return W_IO;
	return W_SELF;
}

/*
 * The culprit is the suspect that accounts for most of the thread's
 * interval: a process that ran on the CPU it waited for (its time there),
 * a thread it was blocked on (the sleeps that thread ended), I/O (the
 * sleeps I/O or a kernel thread ended, and its uninterruptible ones:
 * blamed on the other process that issued the most block I/O or spent the
 * most time syncing in the window, else on the device), or the thread
 * itself (running, or sleeping until a timer).
 */
static void decide(struct ra_explain *x)
{
	char d1[32], d2[32], d3[32], wl[128], sc[80];
	int64_t W = window(x);
	if (x->target == UINT32_MAX) {
		x->kind = C_NONE;
		snprintf(x->evidence, sizeof(x->evidence),
			 "the kernel trace says nothing of tid %" PRId64 " (record it with -k "
			 "sched_switch,sched_waking,... and --syscall)", x->t.tid);
		return;
	}
	const struct ra_ks_thread *T = thr(x, x->target);
	ra_format_duration(W, d2, sizeof(d2));
	/* the suspects' times */
	int64_t ran_ns;
	const struct xrun *ran = top_ran_instead(x, &ran_ns);
	const struct xwait *thread_w = NULL;	/* the waker thread's longest group */
	int64_t thread_ns = 0, io_ns = 0, self_ns = x->state_ns[RA_KS_RUNNING];
	const struct xwait *io_w = NULL, *self_w = NULL;
	for (size_t i = 0; i < x->nr_waits; i++) {
		const struct xwait *w = &x->waits[i];
		switch (wait_cause(x, w)) {
		case W_THREAD: {
			int64_t sum = 0;
			for (size_t j = 0; j < x->nr_waits; j++)
				if (x->waits[j].waker.kind == RA_WAKER_THREAD &&
				    x->waits[j].waker.tid == w->waker.tid)
					sum += x->waits[j].ns;
			if (sum > thread_ns) {
				thread_ns = sum;
				thread_w = w;
			}
			break;
		}
		case W_IO:
			io_ns += w->ns;
			if (!io_w || w->ns > io_w->ns)
				io_w = w;
			break;
		case W_SELF:
			self_ns += w->ns;
			if (!self_w || w->ns > self_w->ns)
				self_w = w;
			break;
		}
	}
	if (ran && ran_ns >= thread_ns && ran_ns >= io_ns && ran_ns >= self_ns) {
		x->kind = C_RAN_INSTEAD;
		x->culprit_th = ran->th;
		x->culprit_ns = ran_ns;
		x->culprit_cpu = ran->cpu;
		ra_format_duration(ran_ns, d1, sizeof(d1));
		ra_format_duration(x->state_ns[RA_KS_RUNNABLE], d3, sizeof(d3));
		snprintf(x->evidence, sizeof(x->evidence),
			 "its threads ran %s on CPU %u while %s (tid %" PRId64 ") waited to run "
			 "there; it waited for a CPU %s of the %s interval (%d%%)",
			 d1, ran->cpu, T->comm, T->tid, d3, d2, pct(x->state_ns[RA_KS_RUNNABLE], W));
		return;
	}
	const struct xwait *w = thread_w && thread_ns >= io_ns && thread_ns >= self_ns ? thread_w
			      : io_w && io_ns >= self_ns ? io_w : NULL;
	if (w) {
		int64_t ns = w == thread_w ? thread_ns : io_ns;
		ra_kwaker_label(&x->ks, &w->waker, wl, sizeof(wl));
		if (w->syscall >= 0)
			snprintf(sc, sizeof(sc), "in %s", ra_kstate_syscall(&x->ks, w->syscall));
		else
			snprintf(sc, sizeof(sc), "outside system calls");
		ra_format_duration(ns, d1, sizeof(d1));
		x->culprit_sc = w->syscall;
		x->culprit_ns = ns;
		if (w == thread_w) {
			x->kind = C_WAKER;
			x->culprit_th = th_index(x, ra_kstate_thread(&x->ks, w->waker.tid));
			snprintf(x->evidence, sizeof(x->evidence),
				 "%s (tid %" PRId64 ") was blocked %s %s of the %s interval (%d%%) "
				 "until this thread woke it",
				 T->comm, T->tid, sc, d1, d2, pct(ns, W));
			return;
		}
		uint32_t io = top_io_thread(x, T->pid);
		if (io != UINT32_MAX) {
			const struct xth *xt = &x->th[io];
			x->kind = C_IO_PROCESS;
			x->culprit_th = io;
			char what[256];
			size_t n = 0;
			what[0] = '\0';
			if (xt->io_in)
				n += (size_t)snprintf(what + n, sizeof(what) - n,
						      "issued %.1f MB of block I/O in the interval",
						      (double)xt->io_in / 1e6);
			if (xt->written_in && n < sizeof(what))
				n += (size_t)snprintf(what + n, sizeof(what) - n,
						      "%swrote %.1f MB in it and the 5 s before",
						      n ? ", " : "", (double)xt->written_in / 1e6);
			if (xt->sync_calls_in && n < sizeof(what)) {
				ra_format_duration(xt->sync_in, d3, sizeof(d3));
				snprintf(what + n, sizeof(what) - n,
					 "%sspent %s in %" PRIu64 " fsync/sync call%s in it", n ? ", " : "",
					 d3, xt->sync_calls_in, xt->sync_calls_in == 1 ? "" : "s");
			}
			snprintf(x->evidence, sizeof(x->evidence),
				 "%s, while %s (tid %" PRId64 ") waited on I/O or the kernel %s of the "
				 "%s (%d%%), mostly %s, woken by %s",
				 what, T->comm, T->tid, d1, d2, pct(ns, W), sc, wl);
			return;
		}
		if (w->waker.kind == RA_WAKER_IO) {
			x->kind = C_DEVICE;
			x->culprit_dev = w->waker.dev;
			snprintf(x->evidence, sizeof(x->evidence),
				 "%s (tid %" PRId64 ") waited on I/O %s of the %s interval (%d%%), "
				 "longest %s", T->comm, T->tid, d1, d2, pct(ns, W), sc);
			return;
		}
		const struct ra_ks_thread *wt = w->waker.kind == RA_WAKER_THREAD
				? ra_kstate_thread(&x->ks, w->waker.tid) : NULL;
		x->kind = wt ? C_WAKER : C_SELF;
		x->culprit_th = wt ? th_index(x, wt) : x->target;
		snprintf(x->evidence, sizeof(x->evidence),
			 "%s (tid %" PRId64 ") waited %s %s of the %s interval (%d%%), woken by %s",
			 T->comm, T->tid, sc, d1, d2, pct(ns, W), wl);
		return;
	}
	x->kind = C_SELF;
	x->culprit_th = x->target;
	x->culprit_ns = self_ns;
	int64_t running = x->state_ns[RA_KS_RUNNING];
	if (self_w && self_w->ns > running) {
		ra_kwaker_label(&x->ks, &self_w->waker, wl, sizeof(wl));
		ra_format_duration(self_w->ns, d1, sizeof(d1));
		x->culprit_sc = self_w->syscall;
		snprintf(x->evidence, sizeof(x->evidence),
			 "it slept %s%s %s of the %s interval (%d%%), woken by %s",
			 self_w->syscall >= 0 ? "in " : "outside system calls",
			 self_w->syscall >= 0 ? ra_kstate_syscall(&x->ks, self_w->syscall) : "",
			 d1, d2, pct(self_w->ns, W), wl);
		return;
	}
	ra_format_duration(running, d1, sizeof(d1));
	const struct xcall *c = NULL;
	for (size_t i = 0; i < x->nr_calls; i++)
		if (!c || x->calls[i].ns > c->ns)
			c = &x->calls[i];
	if (c && c->ns * 2 > running && c->ns <= W) {
		x->culprit_sc = c->syscall;
		ra_format_duration(c->ns, d3, sizeof(d3));
		snprintf(x->evidence, sizeof(x->evidence),
			 "it ran %s of the %s interval (%d%%) itself; it was in %s %s (%" PRIu64
			 " call%s)", d1, d2, pct(running, W), ra_kstate_syscall(&x->ks, c->syscall),
			 d3, c->count, c->count == 1 ? "" : "s");
	} else {
		snprintf(x->evidence, sizeof(x->evidence),
			 "it ran %s of the %s interval (%d%%) itself, not waiting for a CPU "
			 "or blocked", d1, d2, pct(running, W));
	}
}

/* --- the run -------------------------------------------------------------- */

/* After each event: the target thread's index, once kstate knows it. */
static void find_target(void *arg)
{
	struct ra_explain *x = arg;
	if (x->target != UINT32_MAX)
		return;
	const struct ra_ks_thread *th = ra_kstate_thread(&x->ks, x->t.tid);
	if (th)
		x->target = th_index(x, th);
}

int ra_explain_run(const char *const *dirs, size_t nr, const struct ra_explain_target *t,
		   unsigned top, struct ra_explain **out, char *err, size_t errlen)
{
	struct ra_explain *x = calloc(1, sizeof(*x));
	*out = x;
	if (!x) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	x->t = *t;
	x->top = top ? top : 5;
	x->target = UINT32_MAX;
	x->culprit_sc = -1;
	static const struct ra_kstate_ops ops = {
		.span = on_span, .syscall = on_syscall, .io = on_io, .migrate = on_migrate,
	};
	ra_kstate_init(&x->ks, &ops, x);
	if (t->end <= t->begin) {
		snprintf(err, errlen, "the interval is empty (it ends before it begins)");
		return -EINVAL;
	}
	struct ra_kstate_span span;
	int ret = ra_kstate_read(&x->ks, dirs, nr, find_target, x, &x->err, &span, err,
				 errlen);
	if (ret < 0)
		return ret;
	x->first_ns = span.first_ns;
	x->last_ns = span.last_ns;
	x->lost_events = span.lost_events;
	x->lost_packets = span.lost_packets;
	if (!xth_of(x, x->ks.nr_th)) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	decide(x);
	return 0;
}

const struct ra_explain_target *ra_explain_target_of(const struct ra_explain *x)
{
	return &x->t;
}

void ra_explain_free(struct ra_explain *x)
{
	if (!x)
		return;
	ra_kstate_free(&x->ks);
	free(x->th);
	free(x->sc);
	free(x->cpu_ns);
	free(x->waits);
	free(x->ran);
	free(x->pending);
	free(x->calls);
	free(x->devs);
	free(x);
}

/* --- output --------------------------------------------------------------- */

static int cmp_ran(const void *a, const void *b)
{
	const struct xrun *x = a, *y = b;
	return x->ns < y->ns ? 1 : x->ns > y->ns ? -1 : 0;
}

static int cmp_wait(const void *a, const void *b)
{
	const struct xwait *x = a, *y = b;
	return x->ns < y->ns ? 1 : x->ns > y->ns ? -1 : 0;
}

/* Thread indexes sorted by a per-thread value, largest first, value > 0. */
struct ranked {
	uint32_t i;
	int64_t v;
};

static int cmp_ranked(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	return x->v < y->v ? 1 : x->v > y->v ? -1 : (x->i > y->i) - (x->i < y->i);
}

enum rank_by { BY_CPU, BY_IO };

static struct ranked *rank(const struct ra_explain *x, enum rank_by by, size_t *n)
{
	struct ranked *r = malloc(((size_t)x->ks.nr_th + 1) * sizeof(*r));
	*n = 0;
	if (!r)
		return NULL;
	for (uint32_t i = 0; i < x->ks.nr_th; i++) {
		if (thr(x, i)->tid == 0 || thr(x, i)->tid == x->t.tid)
			continue;
		int64_t v = by == BY_CPU ? x->th[i].cpu_in : (int64_t)x->th[i].io_in;
		if (v > 0)
			r[(*n)++] = (struct ranked){ .i = i, .v = v };
	}
	qsort(r, *n, sizeof(*r), cmp_ranked);
	return r;
}

/* Unusual system calls: calls in the window at 4 times their rate
 * elsewhere or more (or never elsewhere), at least 2 of them. */
static struct xsc **unusual(const struct ra_explain *x, size_t *n)
{
	struct xsc **r = malloc(((size_t)x->nr_sc + 1) * sizeof(*r));
	*n = 0;
	if (!r)
		return NULL;
	double win = (double)window(x), out = (double)outside(x);
	for (uint32_t i = 0; i < x->nr_sc_slots; i++) {
		struct xsc *s = &x->sc[i];
		if (!s->key || s->in < 2)
			continue;
		uint32_t th = (uint32_t)(s->key & 0xffffffffu);
		if (thr(x, th)->tid == x->t.tid)
			continue;
		if (s->out == 0 || out <= 0 || (double)s->in / win >= 4.0 * (double)s->out / out)
			r[(*n)++] = s;
	}
	/* most calls first */
	for (size_t i = 1; i < *n; i++)
		for (size_t j = i; j > 0 && r[j]->time_in > r[j - 1]->time_in; j--) {
			struct xsc *tmp = r[j];
			r[j] = r[j - 1];
			r[j - 1] = tmp;
		}
	return r;
}

static const char *kind_name(enum culprit_kind k)
{
	static const char *const names[] = {
		"none", "ran-instead", "waker", "io-process", "device", "self",
	};
	return names[k];
}

static void write_culprit_text(FILE *f, const struct ra_explain *x)
{
	char who[200];
	switch (x->kind) {
	case C_NONE:
		fprintf(f, "culprit: unknown: %s\n", x->evidence);
		return;
	case C_DEVICE:
		fprintf(f, "culprit: device %" PRIu64 ":%" PRIu64 ": %s\n", x->culprit_dev >> 20,
			x->culprit_dev & 0xfffff, x->evidence);
		return;
	default:
		thread_words(x, thr(x, x->culprit_th), who, sizeof(who));
		fprintf(f, "culprit: %s%s: %s\n", x->kind == C_SELF ? "the thread itself, " : "",
			who, x->evidence);
	}
}

void ra_explain_write_text(FILE *f, const struct ra_explain *x)
{
	char d[32], d2[32], w1[40], who[200];
	write_culprit_text(f, x);
	int64_t W = window(x);
	ra_format_duration(W, d, sizeof(d));
	ra_format_wall(x->t.begin, w1, sizeof(w1));
	fprintf(f, "\ninterval: %s UTC + %s, tid %" PRId64 ": %s\n", w1, d, x->t.tid, x->t.how);
	if (x->lost_events || x->lost_packets)
		fprintf(f, "warning: the traces lost %" PRIu64 " events and %" PRIu64 " packets: "
			"the states around the losses may be wrong (record with larger buffers, "
			"--subbuf-size and --num-subbuf)\n", x->lost_events, x->lost_packets);
	if (x->target == UINT32_MAX)
		return;
	thread_words(x, thr(x, x->target), who, sizeof(who));
	fprintf(f, "\nwhere the time of %s went:\n", who);
	int64_t known = 0;
	for (int s = RA_KS_RUNNING; s < RA_KS_NR; s++)
		known += x->state_ns[s];
	ra_format_duration(x->state_ns[RA_KS_RUNNING], d, sizeof(d));
	fprintf(f, "  running          %10s %3d%%", d, pct(x->state_ns[RA_KS_RUNNING], W));
	for (size_t c = 0; c < x->cap_cpu; c++)
		if (x->cpu_ns[c]) {
			ra_format_duration(x->cpu_ns[c], d, sizeof(d));
			fprintf(f, "  CPU %zu %s", c, d);
		}
	fputc('\n', f);
	ra_format_duration(x->state_ns[RA_KS_RUNNABLE], d, sizeof(d));
	fprintf(f, "  waiting for CPU  %10s %3d%%  (woken %" PRIu64 " times, preempted %" PRIu64
		" times, %" PRIu64 " migrations)\n", d, pct(x->state_ns[RA_KS_RUNNABLE], W),
		x->woken, x->preempted, x->migrations);
	struct xrun *ran = x->nr_ran ? malloc(x->nr_ran * sizeof(*ran)) : NULL;
	if (ran) {
		memcpy(ran, x->ran, x->nr_ran * sizeof(*ran));
		qsort(ran, x->nr_ran, sizeof(*ran), cmp_ran);
		for (size_t i = 0; i < x->nr_ran && i < x->top; i++) {
			ra_format_duration(ran[i].ns, d, sizeof(d));
			if (thr(x, ran[i].th)->tid == 0)
				snprintf(who, sizeof(who), "idle");
			else
				thread_words(x, thr(x, ran[i].th), who, sizeof(who));
			fprintf(f, "      ran instead on CPU %u: %s %s\n", ran[i].cpu, who, d);
		}
		free(ran);
	}
	ra_format_duration(x->state_ns[RA_KS_BLOCKED], d, sizeof(d));
	fprintf(f, "  blocked          %10s %3d%%\n", d, pct(x->state_ns[RA_KS_BLOCKED], W));
	ra_format_duration(x->state_ns[RA_KS_IOWAIT], d, sizeof(d));
	fprintf(f, "  uninterruptible  %10s %3d%%  (D: waiting on I/O or another kernel wait)\n", d,
		pct(x->state_ns[RA_KS_IOWAIT], W));
	struct xwait *waits = x->nr_waits ? malloc(x->nr_waits * sizeof(*waits)) : NULL;
	if (waits) {
		memcpy(waits, x->waits, x->nr_waits * sizeof(*waits));
		qsort(waits, x->nr_waits, sizeof(*waits), cmp_wait);
		for (size_t i = 0; i < x->nr_waits && i < x->top; i++) {
			char wl[128];
			ra_kwaker_label(&x->ks, &waits[i].waker, wl, sizeof(wl));
			ra_format_duration(waits[i].ns, d, sizeof(d));
			ra_format_duration(waits[i].max, d2, sizeof(d2));
			fprintf(f, "      %s %s %s: %s (%" PRIu64 " time%s, longest %s), woken by %s\n",
				waits[i].state == RA_KS_IOWAIT ? "uninterruptible" : "blocked",
				waits[i].syscall >= 0 ? "in" : "",
				waits[i].syscall >= 0 ? ra_kstate_syscall(&x->ks, waits[i].syscall)
						      : "outside system calls",
				d, waits[i].count, waits[i].count == 1 ? "" : "s", d2, wl);
		}
		free(waits);
	}
	int64_t unknown = W - known;
	ra_format_duration(unknown > 0 ? unknown : 0, d, sizeof(d));
	fprintf(f, "  not recorded     %10s %3d%%\n", d, pct(unknown > 0 ? unknown : 0, W));
	if (x->nr_calls) {
		fprintf(f, "  system calls:");
		for (size_t i = 0; i < x->nr_calls; i++) {
			ra_format_duration(x->calls[i].ns, d, sizeof(d));
			ra_format_duration(x->calls[i].max, d2, sizeof(d2));
			fprintf(f, "%s %s %" PRIu64 "x %s (longest %s)", i ? ";" : "",
				ra_kstate_syscall(&x->ks, x->calls[i].syscall), x->calls[i].count, d, d2);
		}
		fputc('\n', f);
	}
	if (x->own_rq)
		fprintf(f, "  block I/O: %" PRIu64 " requests, %.1f kB\n", x->own_rq,
			(double)x->own_bytes / 1e3);

	double win = (double)W, out = (double)outside(x);
	fprintf(f, "\nthe rest of the system in the interval (against the rest of the trace):\n");
	size_t n;
	struct ranked *r = rank(x, BY_CPU, &n);
	if (r) {
		fprintf(f, "  top CPU:\n");
		for (size_t i = 0; i < n && i < x->top; i++) {
			const struct xth *xt = &x->th[r[i].i];
			thread_words(x, thr(x, r[i].i), who, sizeof(who));
			ra_format_duration(xt->cpu_in, d, sizeof(d));
			fprintf(f, "    %s: %s (%.0f%% of a CPU; elsewhere %.0f%%)\n", who, d,
				100.0 * (double)xt->cpu_in / win,
				out > 0 ? 100.0 * (double)xt->cpu_out / out : 0.0);
		}
		free(r);
	}
	r = rank(x, BY_IO, &n);
	if (r) {
		fprintf(f, "  top I/O issuers:%s\n", n ? "" : " none");
		for (size_t i = 0; i < n && i < x->top; i++) {
			const struct xth *xt = &x->th[r[i].i];
			thread_words(x, thr(x, r[i].i), who, sizeof(who));
			fprintf(f, "    %s: %.2f MB in %" PRIu64 " requests (%.1f MB/s; elsewhere "
				"%.1f MB/s)\n", who, (double)xt->io_in / 1e6, xt->rq_in,
				(double)xt->io_in / win * 1e3,
				out > 0 ? (double)xt->io_out / out * 1e3 : 0.0);
		}
		free(r);
	}
	for (size_t i = 0; i < x->nr_devs; i++) {
		const struct xdev *dv = &x->devs[i];
		if (!dv->rq_in)
			continue;
		ra_format_duration(dv->lat_in / (int64_t)dv->rq_in, d, sizeof(d));
		ra_format_duration(dv->rq_out ? dv->lat_out / (int64_t)dv->rq_out : 0, d2,
				   sizeof(d2));
		fprintf(f, "  device %" PRIu64 ":%" PRIu64 ": %" PRIu64 " requests, mean latency %s "
			"(elsewhere %s)\n", dv->dev >> 20, dv->dev & 0xfffff, dv->rq_in, d,
			dv->rq_out ? d2 : "-");
	}
	struct xsc **u = unusual(x, &n);
	if (u) {
		fprintf(f, "  unusual system calls:%s\n", n ? "" : " none");
		for (size_t i = 0; i < n && i < x->top; i++) {
			uint32_t th = (uint32_t)(u[i]->key & 0xffffffffu);
			int32_t sc = (int32_t)((u[i]->key >> 32) & 0x7fffffff);
			thread_words(x, thr(x, th), who, sizeof(who));
			ra_format_duration(u[i]->time_in, d, sizeof(d));
			fprintf(f, "    %s by %s: %" PRIu64 " in the interval (%s), %.1f/s elsewhere\n",
				ra_kstate_syscall(&x->ks, sc), who, u[i]->in, d,
				out > 0 ? (double)u[i]->out / out * 1e9 : 0.0);
		}
		free(u);
	}
}

static void json_thread(FILE *f, const struct ra_explain *x, uint32_t i)
{
	const struct ra_ks_thread *th = thr(x, i);
	fprintf(f, "\"tid\":%" PRId64 ",\"thread\":", th->tid);
	ra_json_string(f, th->comm, strlen(th->comm));
	if (th->pid >= 0) {
		const char *p = ra_kstate_process_name(&x->ks, th->pid);
		if (th->pid == th->tid)
			p = th->comm;
		fprintf(f, ",\"pid\":%" PRId64 ",\"process\":", th->pid);
		ra_json_string(f, p, strlen(p));
	} else {
		fprintf(f, ",\"pid\":null,\"process\":null");
	}
}

static void json_waker(FILE *f, const struct ra_explain *x, const struct ra_kwaker *w)
{
	static const char *const kinds[] = { "none", "thread", "irq", "softirq", "timer", "io" };
	char wl[128];
	ra_kwaker_label(&x->ks, w, wl, sizeof(wl));
	fprintf(f, "{\"kind\":\"%s\",\"label\":", kinds[w->kind < 6 ? w->kind : 0]);
	ra_json_string(f, wl, strlen(wl));
	if (w->kind == RA_WAKER_THREAD) {
		const struct ra_ks_thread *th = ra_kstate_thread(&x->ks, w->tid);
		if (th) {
			fputc(',', f);
			json_thread(f, x, th_index(x, th));
		}
	} else if (w->kind == RA_WAKER_IRQ || w->kind == RA_WAKER_SOFTIRQ) {
		fprintf(f, ",\"irq\":%d", w->irq);
	} else if (w->kind == RA_WAKER_IO) {
		fprintf(f, ",\"device\":\"%" PRIu64 ":%" PRIu64 "\"", w->dev >> 20, w->dev & 0xfffff);
	}
	fputc('}', f);
}

static void json_sc(FILE *f, const struct ra_explain *x, int32_t sc)
{
	if (sc < 0) {
		fputs("null", f);
		return;
	}
	const char *s = ra_kstate_syscall(&x->ks, sc);
	ra_json_string(f, s, strlen(s));
}

void ra_explain_write_json(FILE *f, const struct ra_explain *x)
{
	int64_t W = window(x);
	fprintf(f, "{\"culprit\":{\"kind\":\"%s\"", kind_name(x->kind));
	if (x->kind != C_NONE && x->kind != C_DEVICE) {
		fputc(',', f);
		json_thread(f, x, x->culprit_th);
	}
	if (x->kind == C_DEVICE)
		fprintf(f, ",\"device\":\"%" PRIu64 ":%" PRIu64 "\"", x->culprit_dev >> 20,
			x->culprit_dev & 0xfffff);
	if (x->kind == C_RAN_INSTEAD)
		fprintf(f, ",\"cpu\":%u", x->culprit_cpu);
	fputs(",\"syscall\":", f);
	json_sc(f, x, x->kind == C_NONE ? -1 : x->culprit_sc);
	fprintf(f, ",\"ns\":%" PRId64 ",\"evidence\":", x->culprit_ns);
	ra_json_string(f, x->evidence, strlen(x->evidence));
	fprintf(f, "},\"interval\":{\"begin_ns\":%" PRId64 ",\"end_ns\":%" PRId64
		",\"duration_ns\":%" PRId64 ",\"tid\":%" PRId64 ",\"how\":",
		x->t.begin, x->t.end, W, x->t.tid);
	ra_json_string(f, x->t.how, strlen(x->t.how));
	fprintf(f, "},\"lost_events\":%" PRIu64 ",\"lost_packets\":%" PRIu64, x->lost_events,
		x->lost_packets);
	if (x->target == UINT32_MAX) {
		fputs(",\"thread\":null}", f);
		return;
	}
	fputs(",\"thread\":{", f);
	json_thread(f, x, x->target);
	int64_t known = 0;
	for (int s = RA_KS_RUNNING; s < RA_KS_NR; s++)
		known += x->state_ns[s];
	fprintf(f, ",\"running_ns\":%" PRId64 ",\"runnable_ns\":%" PRId64
		",\"runnable_woken_ns\":%" PRId64 ",\"runnable_preempted_ns\":%" PRId64
		",\"blocked_ns\":%" PRId64 ",\"uninterruptible_ns\":%" PRId64
		",\"dead_ns\":%" PRId64 ",\"unknown_ns\":%" PRId64 ",\"woken\":%" PRIu64
		",\"preempted\":%" PRIu64 ",\"migrations\":%" PRIu64,
		x->state_ns[RA_KS_RUNNING], x->state_ns[RA_KS_RUNNABLE], x->runnable_woken_ns,
		x->runnable_preempted_ns, x->state_ns[RA_KS_BLOCKED], x->state_ns[RA_KS_IOWAIT],
		x->state_ns[RA_KS_DEAD], W - known > 0 ? W - known : 0, x->woken, x->preempted,
		x->migrations);
	fputs(",\"cpus\":[", f);
	bool first = true;
	for (size_t c = 0; c < x->cap_cpu; c++)
		if (x->cpu_ns[c]) {
			fprintf(f, "%s{\"cpu\":%zu,\"ns\":%" PRId64 "}", first ? "" : ",", c,
				x->cpu_ns[c]);
			first = false;
		}
	fputs("],\"ran_instead\":[", f);
	struct xrun *ran = x->nr_ran ? malloc(x->nr_ran * sizeof(*ran)) : NULL;
	if (ran) {
		memcpy(ran, x->ran, x->nr_ran * sizeof(*ran));
		qsort(ran, x->nr_ran, sizeof(*ran), cmp_ran);
		for (size_t i = 0; i < x->nr_ran; i++) {
			fprintf(f, "%s{\"cpu\":%u,\"ns\":%" PRId64 ",", i ? "," : "", ran[i].cpu,
				ran[i].ns);
			json_thread(f, x, ran[i].th);
			fputc('}', f);
		}
		free(ran);
	}
	fputs("],\"waits\":[", f);
	struct xwait *waits = x->nr_waits ? malloc(x->nr_waits * sizeof(*waits)) : NULL;
	if (waits) {
		memcpy(waits, x->waits, x->nr_waits * sizeof(*waits));
		qsort(waits, x->nr_waits, sizeof(*waits), cmp_wait);
		for (size_t i = 0; i < x->nr_waits; i++) {
			fprintf(f, "%s{\"state\":\"%s\",\"syscall\":", i ? "," : "",
				waits[i].state == RA_KS_IOWAIT ? "uninterruptible" : "blocked");
			json_sc(f, x, waits[i].syscall);
			fprintf(f, ",\"ns\":%" PRId64 ",\"count\":%" PRIu64 ",\"max_ns\":%" PRId64
				",\"woken_by\":", waits[i].ns, waits[i].count, waits[i].max);
			json_waker(f, x, &waits[i].waker);
			fputc('}', f);
		}
		free(waits);
	}
	fputs("],\"syscalls\":[", f);
	for (size_t i = 0; i < x->nr_calls; i++) {
		fprintf(f, "%s{\"name\":", i ? "," : "");
		json_sc(f, x, x->calls[i].syscall);
		fprintf(f, ",\"count\":%" PRIu64 ",\"ns\":%" PRId64 ",\"max_ns\":%" PRId64 "}",
			x->calls[i].count, x->calls[i].ns, x->calls[i].max);
	}
	fprintf(f, "],\"io_requests\":%" PRIu64 ",\"io_bytes\":%" PRIu64 "}", x->own_rq,
		x->own_bytes);
	int64_t out = outside(x);
	fprintf(f, ",\"system\":{\"outside_ns\":%" PRId64 ",\"top_cpu\":[", out);
	size_t n;
	struct ranked *r = rank(x, BY_CPU, &n);
	for (size_t i = 0; r && i < n && i < x->top; i++) {
		fprintf(f, "%s{", i ? "," : "");
		json_thread(f, x, r[i].i);
		fprintf(f, ",\"ns\":%" PRId64 ",\"outside_ns\":%" PRId64 "}", x->th[r[i].i].cpu_in,
			x->th[r[i].i].cpu_out);
	}
	free(r);
	fputs("],\"top_io\":[", f);
	r = rank(x, BY_IO, &n);
	for (size_t i = 0; r && i < n && i < x->top; i++) {
		const struct xth *xt = &x->th[r[i].i];
		fprintf(f, "%s{", i ? "," : "");
		json_thread(f, x, r[i].i);
		fprintf(f, ",\"bytes\":%" PRIu64 ",\"requests\":%" PRIu64 ",\"outside_bytes\":%" PRIu64
			",\"sync_calls\":%" PRIu64 ",\"sync_ns\":%" PRId64 ",\"written_bytes\":%" PRIu64 "}",
			xt->io_in, xt->rq_in, xt->io_out, xt->sync_calls_in, xt->sync_in, xt->written_in);
	}
	free(r);
	fputs("],\"devices\":[", f);
	first = true;
	for (size_t i = 0; i < x->nr_devs; i++) {
		const struct xdev *dv = &x->devs[i];
		if (!dv->rq_in)
			continue;
		fprintf(f, "%s{\"device\":\"%" PRIu64 ":%" PRIu64 "\",\"requests\":%" PRIu64
			",\"bytes\":%" PRIu64 ",\"mean_latency_ns\":%" PRId64 ",\"max_latency_ns\":%"
			PRId64 ",\"outside_requests\":%" PRIu64 ",\"outside_mean_latency_ns\":%" PRId64 "}",
			first ? "" : ",", dv->dev >> 20, dv->dev & 0xfffff, dv->rq_in, dv->bytes_in,
			dv->lat_in / (int64_t)dv->rq_in, dv->max_in, dv->rq_out,
			dv->rq_out ? dv->lat_out / (int64_t)dv->rq_out : 0);
		first = false;
	}
	fputs("],\"unusual_syscalls\":[", f);
	struct xsc **u = unusual(x, &n);
	for (size_t i = 0; u && i < n && i < x->top; i++) {
		uint32_t th = (uint32_t)(u[i]->key & 0xffffffffu);
		int32_t sc = (int32_t)((u[i]->key >> 32) & 0x7fffffff);
		fprintf(f, "%s{\"name\":", i ? "," : "");
		json_sc(f, x, sc);
		fputc(',', f);
		json_thread(f, x, th);
		fprintf(f, ",\"count\":%" PRIu64 ",\"ns\":%" PRId64 ",\"outside_count\":%" PRIu64 "}",
			u[i]->in, u[i]->time_in, u[i]->out);
	}
	free(u);
	fputs("]}}", f);
}
