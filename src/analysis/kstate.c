/*
 * kstate.c - the kernel state model: each thread's state (running,
 * runnable, blocked, waiting on I/O) and each CPU's running thread over
 * time, from the scheduler, system call, interrupt and block events of a
 * kernel trace (analysis.h describes what is followed and how).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "../common/array.h"

/* What an event name is to the model (ra_kstate.kind). */
enum {
	K_UNCLASSIFIED,
	K_OTHER,
	K_SWITCH,
	K_WAKING,
	K_WAKEUP,
	K_WAKEUP_NEW,
	K_MIGRATE,
	K_SC_ENTRY,
	K_SC_EXIT,
	K_IRQ_ENTRY,
	K_IRQ_EXIT,
	K_SOFTIRQ_ENTRY,
	K_SOFTIRQ_EXIT,
	K_TIMER_ENTRY,
	K_TIMER_EXIT,
	K_RQ_ISSUE,
	K_RQ_COMPLETE,
	K_STATEDUMP,
	K_FORK,
	K_EXIT,
	K_RENAME,
	K_NEWTASK,
};

/* A block request in flight: open addressing on (dev, sector). */
struct ra_ks_io_slot {
	bool used;
	uint64_t dev, sector, bytes;
	bool write, sync;
	int64_t issue_ns;
	int64_t issuer;		/* tid, -1 unknown */
};

static const struct {
	const char *name;
	uint8_t kind;
} kinds[] = {
	{ "sched_switch", K_SWITCH },
	{ "sched_waking", K_WAKING },
	{ "sched_wakeup", K_WAKEUP },
	{ "sched_wakeup_new", K_WAKEUP_NEW },
	{ "sched_migrate_task", K_MIGRATE },
	{ "irq_handler_entry", K_IRQ_ENTRY },
	{ "irq_handler_exit", K_IRQ_EXIT },
	{ "softirq_entry", K_SOFTIRQ_ENTRY },
	{ "softirq_exit", K_SOFTIRQ_EXIT },
	{ "hrtimer_expire_entry", K_TIMER_ENTRY },
	{ "hrtimer_expire_exit", K_TIMER_EXIT },
	{ "timer_hrtimer_expire_entry", K_TIMER_ENTRY },	/* LTTng */
	{ "timer_hrtimer_expire_exit", K_TIMER_EXIT },
	{ "timer_expire_entry", K_TIMER_ENTRY },
	{ "timer_expire_exit", K_TIMER_EXIT },
	{ "block_rq_issue", K_RQ_ISSUE },
	{ "block_rq_complete", K_RQ_COMPLETE },
	{ "lttng_statedump_process_state", K_STATEDUMP },
	{ "sched_process_fork", K_FORK },
	{ "sched_process_exit", K_EXIT },
	{ "task_rename", K_RENAME },
	{ "task_newtask", K_NEWTASK },
};

static const char *const softirq_names[] = {
	"HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED",
	"HRTIMER", "RCU",
};

void ra_kstate_init(struct ra_kstate *ks, const struct ra_kstate_ops *ops, void *arg)
{
	memset(ks, 0, sizeof(*ks));
	if (ops)
		ks->ops = *ops;
	ks->arg = arg;
	ks->last_ns = INT64_MIN;
}

const char *ra_kstate_name(unsigned state)
{
	static const char *const names[RA_KS_NR] = {
		"UNKNOWN", "RUNNING", "RUNNABLE", "BLOCKED", "IOWAIT", "DEAD",
	};
	return state < RA_KS_NR ? names[state] : "?";
}

const char *ra_kstate_syscall(const struct ra_kstate *ks, int32_t sc)
{
	return sc >= 0 && (uint32_t)sc < ks->syscalls.nr ? ks->syscalls.str[sc] : "?";
}

/* --- threads ------------------------------------------------------------ */

static uint32_t hash_tid(int64_t tid)
{
	uint64_t h = (uint64_t)tid * 0x9e3779b97f4a7c15ull;
	return (uint32_t)(h >> 32);
}

static int64_t find_slot(const struct ra_kstate *ks, int64_t tid)
{
	if (!ks->nr_th_slots)
		return -1;
	uint32_t mask = ks->nr_th_slots - 1;
	for (uint32_t i = hash_tid(tid) & mask;; i = (i + 1) & mask) {
		uint32_t v = ks->th_slots[i];
		if (!v)
			return -1;
		if (ks->th[v - 1].tid == tid)
			return v - 1;
	}
}

const struct ra_ks_thread *ra_kstate_thread(const struct ra_kstate *ks, int64_t tid)
{
	int64_t i = find_slot(ks, tid);
	return i < 0 ? NULL : &ks->th[i];
}

static int grow_slots(struct ra_kstate *ks)
{
	uint32_t nr = ks->nr_th_slots ? ks->nr_th_slots * 2 : 256;
	uint32_t *slots = calloc(nr, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (uint32_t k = 0; k < ks->nr_th; k++) {
		uint32_t i = hash_tid(ks->th[k].tid) & (nr - 1);
		while (slots[i])
			i = (i + 1) & (nr - 1);
		slots[i] = k + 1;
	}
	free(ks->th_slots);
	ks->th_slots = slots;
	ks->nr_th_slots = nr;
	return 0;
}

/* Thread tid, added (UNKNOWN) if new: the thread, NULL when the table is
 * full (counted in threads_dropped), ERR via *err (-ENOMEM). */
static struct ra_ks_thread *thread(struct ra_kstate *ks, int64_t tid, int *err)
{
	int64_t i = find_slot(ks, tid);
	if (i >= 0)
		return &ks->th[i];
	if (ks->nr_th >= RA_KSTATE_MAX_THREADS) {
		ks->threads_dropped++;
		return NULL;
	}
	if ((uint64_t)(ks->nr_th + 1) * 2 > ks->nr_th_slots && grow_slots(ks) < 0) {
		*err = -ENOMEM;
		return NULL;
	}
	if (RT_ARRAY_GROW(ks->th, ks->cap_th, (size_t)ks->nr_th + 1, 256) < 0) {
		*err = -ENOMEM;
		return NULL;
	}
	struct ra_ks_thread *th = &ks->th[ks->nr_th];
	memset(th, 0, sizeof(*th));
	th->tid = tid;
	th->pid = tid == 0 ? 0 : -1;
	th->cpu = UINT32_MAX;
	th->syscall = -1;
	th->kthread = tid == 0 || tid == 2;
	uint32_t mask = ks->nr_th_slots - 1;
	uint32_t s = hash_tid(tid) & mask;
	while (ks->th_slots[s])
		s = (s + 1) & mask;
	ks->th_slots[s] = ++ks->nr_th;
	return th;
}

const char *ra_kstate_process_name(const struct ra_kstate *ks, int64_t pid)
{
	const struct ra_ks_thread *th = ra_kstate_thread(ks, pid);
	return th && th->comm[0] ? th->comm : "?";
}

static void set_comm(struct ra_ks_thread *th, const struct rtr_value *v)
{
	if (v->type != RTR_STRING)
		return;
	size_t n = v->s.len < RA_KCOMM_LEN - 1 ? v->s.len : RA_KCOMM_LEN - 1;
	memcpy(th->comm, v->s.p, n);
	th->comm[n] = '\0';
}

/* --- CPUs --------------------------------------------------------------- */

static struct ra_ks_cpu *cpu_of(struct ra_kstate *ks, uint32_t cpu, int *err)
{
	if (cpu >= RA_KSTATE_MAX_CPUS)
		return NULL;
	if (cpu >= ks->nr_cpu) {
		size_t cap = ks->nr_cpu;
		if (RT_ARRAY_GROW(ks->cpu, cap, (size_t)cpu + 1, 8) < 0) {
			*err = -ENOMEM;
			return NULL;
		}
		for (size_t i = ks->nr_cpu; i < cap; i++) {
			memset(&ks->cpu[i], 0, sizeof(ks->cpu[i]));
			ks->cpu[i].tid = -1;
		}
		ks->nr_cpu = (uint32_t)cap;
	}
	return &ks->cpu[cpu];
}

/* --- fields ------------------------------------------------------------- */

/* An integer value (an enumeration's integer) in *out. */
static bool as_int(const struct rtr_value *v, int64_t *out)
{
	switch (v->type) {
	case RTR_INT: *out = v->i; return true;
	case RTR_UINT: *out = (int64_t)v->u; return true;
	case RTR_ENUM: *out = v->is_signed ? v->i : (int64_t)v->u; return true;
	default: return false;
	}
}

static bool payload_int(const struct rtr_event *raw, const char *name, int64_t *out)
{
	struct rtr_value v;
	return rtr_field_by_name(raw, name, &v) == 0 && as_int(&v, out);
}

static bool context_int(const struct rtr_event *raw, const char *name, int64_t *out)
{
	struct rtr_value v;
	return ra_event_context(raw, name, &v) == 0 && as_int(&v, out);
}

/* --- spans -------------------------------------------------------------- */

static void emit(struct ra_kstate *ks, struct ra_ks_thread *th, int64_t end, uint32_t cpu,
		 bool open)
{
	if (th->state == RA_KS_UNKNOWN || !ks->ops.span || th->tid == 0)
		return;
	struct ra_kspan sp = {
		.th = th,
		.state = th->state,
		.open = open,
		.preempted = th->preempted,
		.cpu = cpu,
		.begin = th->since,
		.end = end < th->since ? th->since : end,
		.syscall = th->syscall,
		.waker = th->waker,
	};
	ks->ops.span(ks->arg, &sp);
}

/* The idle task runs on every CPU at once: its spans come from the CPU. */
static void emit_idle(struct ra_kstate *ks, struct ra_ks_thread *idle, struct ra_ks_cpu *c,
		      uint32_t cpu, int64_t end, bool open)
{
	if (!ks->ops.span || c->since == INT64_MIN)
		return;
	struct ra_kspan sp = {
		.th = idle, .state = RA_KS_RUNNING, .open = open, .cpu = cpu,
		.begin = c->since, .end = end < c->since ? c->since : end, .syscall = -1,
	};
	ks->ops.span(ks->arg, &sp);
}

static void set_state(struct ra_ks_thread *th, uint8_t state, int64_t ns)
{
	th->state = state;
	th->since = ns;
}

/* th runs on cpu from ns (what its state was ends here). */
static int switch_in(struct ra_kstate *ks, struct ra_ks_cpu *c, uint32_t cpu,
		     struct ra_ks_thread *th, int64_t ns)
{
	if (c->tid > 0 && c->tid != th->tid) {
		/* the CPU's thread left without a sched_switch saying so
		 * (events lost, or learnt from a context): what it became
		 * is not known */
		int64_t i = find_slot(ks, c->tid);
		struct ra_ks_thread *old = i >= 0 ? &ks->th[i] : NULL;
		if (old && old->state == RA_KS_RUNNING && old->cpu == cpu) {
			emit(ks, old, ns, cpu, false);
			set_state(old, RA_KS_UNKNOWN, ns);
		}
	}
	c->tid = th->tid;
	c->since = ns;
	if (th->tid == 0)
		return 0;
	if (th->state != RA_KS_RUNNING)
		emit(ks, th, ns, cpu, false);
	else if (th->cpu != cpu)	/* a switch-out we did not see */
		emit(ks, th, ns, th->cpu, false);
	else
		return 0;
	set_state(th, RA_KS_RUNNING, ns);
	th->cpu = cpu;
	th->preempted = false;
	return 0;
}

/* The waker of a wakeup on CPU c now. */
static void waker_of(struct ra_kstate *ks, struct ra_ks_cpu *c, uint32_t cpu, int64_t ctx_tid,
		     struct ra_kwaker *w)
{
	memset(w, 0, sizeof(*w));
	w->cpu = cpu;
	w->irq = -1;
	w->tid = -1;
	if (c && c->io_done) {
		w->kind = RA_WAKER_IO;
		w->dev = c->io_dev;
	} else if (c && c->irq_depth) {
		w->kind = RA_WAKER_IRQ;
		w->irq = c->irq;
	} else if (c && c->timer_depth) {
		w->kind = RA_WAKER_TIMER;
	} else if (c && c->softirq_depth) {
		w->kind = (c->softirq == 1 || c->softirq == 8) ? RA_WAKER_TIMER : RA_WAKER_SOFTIRQ;
		w->irq = c->softirq;
	} else {
		int64_t tid = ctx_tid >= 0 ? ctx_tid : c ? c->tid : -1;
		if (tid == 0) {
			w->kind = RA_WAKER_IRQ;	/* the idle CPU: an interrupt */
		} else if (tid > 0) {
			w->kind = RA_WAKER_THREAD;
			w->tid = tid;
		}
	}
	(void)ks;
}

static void woken(struct ra_kstate *ks, struct ra_ks_thread *th, const struct ra_kwaker *w,
		  int64_t ns)
{
	if (th->state == RA_KS_RUNNING || th->state == RA_KS_RUNNABLE || th->tid == 0)
		return;
	th->waker = *w;
	emit(ks, th, ns, th->cpu, false);
	set_state(th, RA_KS_RUNNABLE, ns);
	th->preempted = false;
}

static void switch_event(struct ra_kstate *ks, const struct rtr_event *raw, struct ra_ks_cpu *c,
			 uint32_t cpu, int64_t ns, int *err)
{
	int64_t prev_tid, prev_state, next_tid;
	struct rtr_value v;
	if (!payload_int(raw, "prev_tid", &prev_tid) || !payload_int(raw, "next_tid", &next_tid) ||
	    !payload_int(raw, "prev_state", &prev_state))
		return;
	struct ra_ks_thread *prev = thread(ks, prev_tid, err);
	if (*err)
		return;
	if (prev) {
		if (rtr_field_by_name(raw, "prev_comm", &v) == 0)
			set_comm(prev, &v);
		if (prev_tid == 0) {
			if (c && c->tid == 0)
				emit_idle(ks, prev, c, cpu, ns, false);
		} else {
			if (prev->state == RA_KS_RUNNING)
				emit(ks, prev, ns, cpu, false);
			uint8_t st;
			if ((prev_state & 0xff) == 0)
				st = RA_KS_RUNNABLE;	/* preempted (R, R+) */
			else if (prev_state & 0x30)
				st = RA_KS_DEAD;	/* X, Z */
			else if (prev_state & 0x2)
				st = RA_KS_IOWAIT;	/* D */
			else
				st = RA_KS_BLOCKED;
			set_state(prev, st, ns);
			prev->preempted = st == RA_KS_RUNNABLE;
			prev->cpu = cpu;
			if (st == RA_KS_RUNNABLE)
				memset(&prev->waker, 0, sizeof(prev->waker));
		}
	}
	struct ra_ks_thread *next = thread(ks, next_tid, err);
	if (*err || !next)
		return;
	if (rtr_field_by_name(raw, "next_comm", &v) == 0)
		set_comm(next, &v);
	if (c) {
		switch_in(ks, c, cpu, next, ns);
		c->io_done = false;
	}
}

static void wake_event(struct ra_kstate *ks, const struct rtr_event *raw, struct ra_ks_cpu *c,
		       uint32_t cpu, int64_t ctx_tid, int64_t ns, int kind, int *err)
{
	int64_t tid;
	struct rtr_value v;
	if (!payload_int(raw, "tid", &tid) && !payload_int(raw, "pid", &tid))
		return;
	struct ra_ks_thread *th = thread(ks, tid, err);
	if (!th)
		return;
	if (rtr_field_by_name(raw, "comm", &v) == 0)
		set_comm(th, &v);
	if (kind == K_WAKEUP_NEW) {
		if (th->state == RA_KS_UNKNOWN) {
			waker_of(ks, c, cpu, ctx_tid, &th->waker);
			set_state(th, RA_KS_RUNNABLE, ns);
		}
		return;
	}
	struct ra_kwaker w;
	waker_of(ks, c, cpu, ctx_tid, &w);
	woken(ks, th, &w, ns);
}

static uint64_t io_hash(uint64_t dev, uint64_t sector)
{
	return (dev * 0x9e3779b97f4a7c15ull) ^ (sector * 0xc2b2ae3d27d4eb4full);
}

static struct ra_ks_io_slot *io_find(struct ra_kstate *ks, uint64_t dev, uint64_t sector,
				   bool add)
{
	if (!ks->io) {
		if (!add)
			return NULL;
		ks->io = calloc(RA_KSTATE_MAX_IO * 2, sizeof(*ks->io));
		if (!ks->io)
			return NULL;
	}
	uint32_t mask = RA_KSTATE_MAX_IO * 2 - 1;
	for (uint32_t i = (uint32_t)(io_hash(dev, sector) >> 20) & mask, n = 0; n <= mask;
	     i = (i + 1) & mask, n++) {
		struct ra_ks_io_slot *s = &ks->io[i];
		if (!s->used)
			return add ? s : NULL;
		if (s->dev == dev && s->sector == sector)
			return s;
	}
	return NULL;
}

/* Remove slot s, moving later entries of its cluster back (linear probing
 * without tombstones). */
static void io_remove(struct ra_kstate *ks, struct ra_ks_io_slot *s)
{
	uint32_t mask = RA_KSTATE_MAX_IO * 2 - 1;
	uint32_t i = (uint32_t)(s - ks->io);
	s->used = false;
	for (uint32_t j = (i + 1) & mask; ks->io[j].used; j = (j + 1) & mask) {
		uint32_t home = (uint32_t)(io_hash(ks->io[j].dev, ks->io[j].sector) >> 20) & mask;
		/* can entry j move to the hole at i? (home not in (i, j]) */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			ks->io[i] = ks->io[j];
			ks->io[j].used = false;
			i = j;
		}
	}
}

static void rwbs_flags(const struct rtr_event *raw, bool *write, bool *sync)
{
	struct rtr_value v;
	*write = *sync = false;
	if (rtr_field_by_name(raw, "rwbs", &v) < 0)
		return;
	if (v.type == RTR_STRING) {
		*write = memchr(v.s.p, 'W', v.s.len) != NULL;
		*sync = memchr(v.s.p, 'F', v.s.len) || memchr(v.s.p, 'S', v.s.len);
	} else if (v.type == RTR_UINT || v.type == RTR_INT || v.type == RTR_ENUM) {
		/* LTTng's mask: WRITE 1 << 0, SYNC 1 << 5, FLUSH 1 << 8,
		 * PREFLUSH 1 << 10 */
		*write = v.u & 1;
		*sync = v.u & (1u << 5 | 1u << 8 | 1u << 10);
	}
}

static void report_io(struct ra_kstate *ks, const struct ra_ks_io_slot *s, int64_t end, bool open)
{
	if (!ks->ops.io)
		return;
	struct ra_ks_io io = {
		.dev = s->dev, .sector = s->sector, .bytes = s->bytes, .write = s->write,
		.sync = s->sync, .open = open, .issue_ns = s->issue_ns, .complete_ns = end,
		.issuer = s->issuer >= 0 ? ra_kstate_thread(ks, s->issuer) : NULL,
	};
	ks->ops.io(ks->arg, &io);
}

static void rq_issue(struct ra_kstate *ks, const struct rtr_event *raw, int64_t tid, int64_t ns)
{
	int64_t dev, sector, nr_sector = 0, bytes;
	if (!payload_int(raw, "dev", &dev) || !payload_int(raw, "sector", &sector))
		return;
	payload_int(raw, "nr_sector", &nr_sector);
	if (!payload_int(raw, "bytes", &bytes))
		bytes = nr_sector * 512;
	if (ks->nr_io >= RA_KSTATE_MAX_IO) {
		ks->io_dropped++;
		return;
	}
	struct ra_ks_io_slot *s = io_find(ks, (uint64_t)dev, (uint64_t)sector, true);
	if (!s) {
		ks->io_dropped++;
		return;
	}
	if (!s->used)
		ks->nr_io++;
	s->used = true;
	s->dev = (uint64_t)dev;
	s->sector = (uint64_t)sector;
	s->bytes = bytes > 0 ? (uint64_t)bytes : 0;
	rwbs_flags(raw, &s->write, &s->sync);
	s->issue_ns = ns;
	s->issuer = tid;
}

static void rq_complete(struct ra_kstate *ks, const struct rtr_event *raw, struct ra_ks_cpu *c,
			int64_t ns)
{
	int64_t dev, sector, nr_sector = 0;
	if (!payload_int(raw, "dev", &dev) || !payload_int(raw, "sector", &sector))
		return;
	if (c) {
		c->io_done = true;
		c->io_dev = (uint64_t)dev;
	}
	struct ra_ks_io_slot *s = io_find(ks, (uint64_t)dev, (uint64_t)sector, false);
	if (s) {
		report_io(ks, s, ns, false);
		io_remove(ks, s);
		ks->nr_io--;
		return;
	}
	/* completed without a recorded issue */
	payload_int(raw, "nr_sector", &nr_sector);
	struct ra_ks_io_slot tmp = { .used = true, .dev = (uint64_t)dev, .sector = (uint64_t)sector,
				   .bytes = nr_sector > 0 ? (uint64_t)nr_sector * 512 : 0,
				   .issue_ns = INT64_MIN, .issuer = -1 };
	rwbs_flags(raw, &tmp.write, &tmp.sync);
	report_io(ks, &tmp, ns, false);
}

static void irq_entry(struct ra_kstate *ks, const struct rtr_event *raw, struct ra_ks_cpu *c)
{
	int64_t irq;
	if (!c || !payload_int(raw, "irq", &irq))
		return;
	c->irq_depth++;
	c->irq = (int32_t)irq;
	struct rtr_value v;
	if (irq < 0 || irq >= 65536 || rtr_field_by_name(raw, "name", &v) < 0 ||
	    v.type != RTR_STRING)
		return;
	if ((uint32_t)irq >= ks->nr_irq_name) {
		size_t cap = ks->nr_irq_name;
		if (RT_ARRAY_GROW(ks->irq_name, cap, (size_t)irq + 1, 64) < 0)
			return;		/* names are a nicety */
		for (size_t i = ks->nr_irq_name; i < cap; i++)
			ks->irq_name[i] = -1;
		ks->nr_irq_name = (uint32_t)cap;
	}
	if (ks->irq_name[irq] < 0) {
		char name[64];
		snprintf(name, sizeof(name), "%.*s", (int)v.s.len, v.s.p);
		int64_t i = ra_strtab_intern(&ks->irq_names, name);
		if (i >= 0)
			ks->irq_name[irq] = (int32_t)i;
	}
}

/* A nesting level ends: the context's I/O completion is forgotten when
 * the CPU leaves its interrupts. */
static void context_exit(struct ra_ks_cpu *c, uint32_t *depth)
{
	if (*depth)
		(*depth)--;
	if (!c->irq_depth && !c->softirq_depth && !c->timer_depth)
		c->io_done = false;
}

static void statedump(struct ra_kstate *ks, const struct rtr_event *raw, int *err)
{
	int64_t tid, pid, ppid = -1, type = 0;
	struct rtr_value v;
	if (!payload_int(raw, "tid", &tid) || !payload_int(raw, "pid", &pid))
		return;
	struct ra_ks_thread *th = thread(ks, tid, err);
	if (!th)
		return;
	th->pid = pid;
	payload_int(raw, "ppid", &ppid);
	payload_int(raw, "type", &type);
	if (type == 1 || ppid == 2 || tid == 2)
		th->kthread = true;
	if (rtr_field_by_name(raw, "name", &v) == 0)
		set_comm(th, &v);
}

static void fork_event(struct ra_kstate *ks, const struct rtr_event *raw, int *err)
{
	int64_t parent, child, child_pid;
	struct rtr_value v;
	if (!(payload_int(raw, "parent_tid", &parent) || payload_int(raw, "parent_pid", &parent)) ||
	    !(payload_int(raw, "child_tid", &child) || payload_int(raw, "child_pid", &child)))
		return;
	const struct ra_ks_thread *p = ra_kstate_thread(ks, parent);
	bool parent_kthread = p && p->kthread;
	struct ra_ks_thread *th = thread(ks, child, err);
	if (!th)
		return;
	/* LTTng's child_pid is the process; ftrace's is the thread */
	if (payload_int(raw, "child_tid", &child) && payload_int(raw, "child_pid", &child_pid))
		th->pid = child_pid;
	th->kthread = parent_kthread || parent == 2;
	if (rtr_field_by_name(raw, "child_comm", &v) == 0)
		set_comm(th, &v);
}

static void classify(struct ra_kstate *ks, size_t c)
{
	const char *s = ks->classes[c].name;
	uint8_t kind = K_OTHER;
	int32_t sc = -1;
	const char *p;
	if (strchr(s, ':')) {
		ks->kind[c] = K_OTHER;	/* a user event */
		ks->kind_sc[c] = -1;
		return;
	}
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(s, kinds[i].name))
			kind = kinds[i].kind;
	if (!strncmp(s, "compat_", 7))
		s += 7;
	if (!strncmp(s, "syscall_entry_", 14) || !strncmp(s, "syscall_exit_", 13)) {
		bool entry = s[8] == 'e' && s[9] == 'n';
		p = s + (entry ? 14 : 13);
		int64_t i = ra_strtab_intern(&ks->syscalls, p);
		if (i >= 0) {
			kind = entry ? K_SC_ENTRY : K_SC_EXIT;
			sc = (int32_t)i;
		}
	}
	ks->kind[c] = kind;
	ks->kind_sc[c] = sc;
}

int ra_kstate_feed(struct ra_kstate *ks, const struct rtr_trace *t, const struct rtr_event *raw)
{
	if (!ks->kind) {
		ks->nr_classes = rtr_event_classes(t, &ks->classes);
		ks->kind = calloc(ks->nr_classes + 1, sizeof(*ks->kind));
		ks->kind_sc = calloc(ks->nr_classes + 1, sizeof(*ks->kind_sc));
		if (!ks->kind || !ks->kind_sc)
			return -ENOMEM;
	}
	if (raw->cls < ks->classes || raw->cls >= ks->classes + ks->nr_classes)
		return 0;
	size_t cidx = (size_t)(raw->cls - ks->classes);
	if (ks->kind[cidx] == K_UNCLASSIFIED)
		classify(ks, cidx);
	uint8_t kind = ks->kind[cidx];
	if (kind == K_OTHER)
		return 0;
	int64_t ns = raw->ns;
	uint32_t ev_cpu = raw->cpu;
	ks->last_ns = ns;
	int err = 0;
	struct ra_ks_cpu *c = ev_cpu == UINT32_MAX ? NULL : cpu_of(ks, ev_cpu, &err);
	if (err)
		return err;
	int64_t ctx_tid = -1, pid;
	struct rtr_value v;
	struct ra_ks_thread *cur = NULL;
	if (context_int(raw, "tid", &ctx_tid) || context_int(raw, "vtid", &ctx_tid)) {
		cur = thread(ks, ctx_tid, &err);
		if (err)
			return err;
		if (cur && context_int(raw, "pid", &pid) && pid >= 0)
			cur->pid = pid;
		if (cur && ra_event_context(raw, "procname", &v) == 0)
			set_comm(cur, &v);
		/* a CPU whose thread is not known yet runs the event's */
		if (cur && c && c->tid < 0 && kind != K_SWITCH)
			switch_in(ks, c, ev_cpu, cur, ns);
	} else if (c && c->tid >= 0) {
		cur = thread(ks, c->tid, &err);
		if (err)
			return err;
	}
	switch (kind) {
	case K_SWITCH:
		switch_event(ks, raw, c, ev_cpu, ns, &err);
		break;
	case K_WAKING:
	case K_WAKEUP:
	case K_WAKEUP_NEW:
		wake_event(ks, raw, c, ev_cpu, ctx_tid, ns, kind, &err);
		break;
	case K_MIGRATE: {
		int64_t tid, from, to;
		if (!payload_int(raw, "tid", &tid) || !payload_int(raw, "orig_cpu", &from) ||
		    !payload_int(raw, "dest_cpu", &to))
			break;
		struct ra_ks_thread *th = thread(ks, tid, &err);
		if (!th)
			break;
		if (th->state != RA_KS_RUNNING)
			th->cpu = (uint32_t)to;
		if (ks->ops.migrate)
			ks->ops.migrate(ks->arg, th, (uint32_t)from, (uint32_t)to, ns);
		break;
	}
	case K_SC_ENTRY:
		if (cur) {
			cur->syscall = ks->kind_sc[cidx];
			cur->syscall_ns = ns;
		}
		break;
	case K_SC_EXIT:
		if (cur && cur->syscall == ks->kind_sc[cidx]) {
			int64_t ret = 0;
			payload_int(raw, "ret", &ret);
			if (ks->ops.syscall)
				ks->ops.syscall(ks->arg, cur, cur->syscall, cur->syscall_ns, ns, ret);
		}
		if (cur)
			cur->syscall = -1;
		break;
	case K_IRQ_ENTRY:
		irq_entry(ks, raw, c);
		break;
	case K_IRQ_EXIT:
		if (c)
			context_exit(c, &c->irq_depth);
		break;
	case K_SOFTIRQ_ENTRY: {
		int64_t vec;
		if (c && payload_int(raw, "vec", &vec)) {
			c->softirq_depth++;
			c->softirq = (int32_t)vec;
		}
		break;
	}
	case K_SOFTIRQ_EXIT:
		if (c)
			context_exit(c, &c->softirq_depth);
		break;
	case K_TIMER_ENTRY:
		if (c)
			c->timer_depth++;
		break;
	case K_TIMER_EXIT:
		if (c)
			context_exit(c, &c->timer_depth);
		break;
	case K_RQ_ISSUE: {
		int64_t tid = ctx_tid >= 0 ? ctx_tid : c ? c->tid : -1;
		rq_issue(ks, raw, tid, ns);
		break;
	}
	case K_RQ_COMPLETE:
		rq_complete(ks, raw, c, ns);
		break;
	case K_STATEDUMP:
		statedump(ks, raw, &err);
		break;
	case K_FORK:
		fork_event(ks, raw, &err);
		break;
	case K_EXIT:
		break;
	case K_NEWTASK: {
		/* the new thread's process: its creator's with CLONE_THREAD,
		 * else its own */
		int64_t tid, flags;
		if (!payload_int(raw, "pid", &tid) || !payload_int(raw, "clone_flags", &flags))
			break;
		/* What the creator says, read before thread() adds the new
		 * thread: adding may move the table, and cur with it. */
		int64_t cur_pid = cur ? cur->pid : -1;
		bool cur_kthread = cur && cur->kthread && cur->tid != 0;
		struct ra_ks_thread *th = thread(ks, tid, &err);
		if (!th)
			break;
		if (!(flags & 0x10000))
			th->pid = tid;
		else if (cur_pid >= 0)
			th->pid = cur_pid;
		th->kthread = cur_kthread;
		if (rtr_field_by_name(raw, "comm", &v) == 0)
			set_comm(th, &v);
		break;
	}
	case K_RENAME: {
		int64_t tid;
		if (!payload_int(raw, "tid", &tid) && !payload_int(raw, "pid", &tid))
			break;
		struct ra_ks_thread *th = thread(ks, tid, &err);
		if (th && rtr_field_by_name(raw, "newcomm", &v) == 0)
			set_comm(th, &v);
		break;
	}
	}
	return err;
}

void ra_kstate_finish(struct ra_kstate *ks, int64_t end_ns)
{
	for (uint32_t i = 0; i < ks->nr_th; i++) {
		struct ra_ks_thread *th = &ks->th[i];
		if (th->tid == 0 || th->state == RA_KS_DEAD)
			continue;
		emit(ks, th, end_ns, th->state == RA_KS_RUNNING ? th->cpu : UINT32_MAX, true);
		th->since = end_ns;
	}
	int64_t idle = find_slot(ks, 0);
	for (uint32_t c = 0; c < ks->nr_cpu; c++)
		if (ks->cpu[c].tid == 0 && idle >= 0)
			emit_idle(ks, &ks->th[idle], &ks->cpu[c], c, end_ns, true);
	if (ks->io)
		for (uint32_t i = 0; i < RA_KSTATE_MAX_IO * 2; i++)
			if (ks->io[i].used)
				report_io(ks, &ks->io[i], end_ns, true);
}

int ra_kstate_read(struct ra_kstate *ks, const char *const *dirs, size_t nr,
		   void (*each)(void *arg), void *arg, const int *ops_err,
		   struct ra_kstate_span *span, char *err, size_t errlen)
{
	struct ra_source src;
	struct ra_event ev;
	int ret = ra_source_open(&src, dirs, nr, NULL, err, errlen);
	if (ret < 0)
		return ret;
	while ((ret = ra_source_next(&src, &ev, err, errlen)) > 0) {
		ret = ra_kstate_feed(ks, src.t, ev.raw);
		if (ret >= 0 && ops_err && *ops_err < 0)
			ret = *ops_err;
		if (ret < 0) {
			snprintf(err, errlen, "out of memory");
			goto close;
		}
		if (each)
			each(arg);
	}
	if (ret < 0)
		goto close;
	if (span) {
		span->first_ns = src.first_ns;
		span->last_ns = src.last_ns;
		ra_source_lost(&src, &span->lost_events, &span->lost_packets);
	}
	ra_kstate_finish(ks, src.last_ns);
	if (ops_err && *ops_err < 0) {
		ret = *ops_err;
		snprintf(err, errlen, "out of memory");
	}
close:
	ra_source_close(&src);
	return ret;
}

void ra_kwaker_label(const struct ra_kstate *ks, const struct ra_kwaker *w, char *out, size_t len)
{
	const struct ra_ks_thread *th;
	switch (w->kind) {
	case RA_WAKER_THREAD:
		th = ra_kstate_thread(ks, w->tid);
		snprintf(out, len, "thread %s tid %" PRId64, th && th->comm[0] ? th->comm : "?",
			 w->tid);
		break;
	case RA_WAKER_IRQ:
		if (w->irq < 0)
			snprintf(out, len, "an interrupt on idle CPU %u", w->cpu);
		else if ((uint32_t)w->irq < ks->nr_irq_name && ks->irq_name[w->irq] >= 0)
			snprintf(out, len, "irq %d (%s)", w->irq,
				 ks->irq_names.str[ks->irq_name[w->irq]]);
		else
			snprintf(out, len, "irq %d", w->irq);
		break;
	case RA_WAKER_SOFTIRQ:
		if (w->irq >= 0 && (size_t)w->irq < sizeof(softirq_names) / sizeof(softirq_names[0]))
			snprintf(out, len, "softirq %s", softirq_names[w->irq]);
		else
			snprintf(out, len, "softirq %d", w->irq);
		break;
	case RA_WAKER_TIMER:
		snprintf(out, len, "a timer");
		break;
	case RA_WAKER_IO:
		snprintf(out, len, "I/O completion on device %" PRIu64 ":%" PRIu64,
			 w->dev >> 20, w->dev & 0xfffff);
		break;
	default:
		snprintf(out, len, "unknown");
		break;
	}
}

void ra_kstate_free(struct ra_kstate *ks)
{
	free(ks->th);
	free(ks->th_slots);
	free(ks->cpu);
	ra_strtab_free(&ks->syscalls);
	ra_strtab_free(&ks->irq_names);
	free(ks->irq_name);
	free(ks->kind);
	free(ks->kind_sc);
	free(ks->io);
	memset(ks, 0, sizeof(*ks));
}
