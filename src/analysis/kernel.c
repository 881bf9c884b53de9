/*
 * kernel.c - the kernel analyses' pass (kstream.h): the kernel traces of a
 * set read once in time order, each event classified by its class, its
 * thread found, the thread table and the system call pairing kept, and
 * the chosen analyses fed; then the process table, and the writers'
 * common parts.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kstream.h"
#include "../common/array.h"

#define CLONE_THREAD_FLAG 0x00010000	/* <linux/sched.h> CLONE_THREAD */
#define PROGRESS_EVERY (1u << 20)

/* ---- the id map ---- */

static uint32_t slot_of(int64_t key, uint32_t cap)
{
	uint64_t h = (uint64_t)key * 0x9e3779b97f4a7c15ull;
	return (uint32_t)(h >> 32) & (cap - 1);
}

int64_t ra_idmap_find(const struct ra_idmap *m, int64_t key)
{
	if (!m->cap)
		return -ENOENT;
	for (uint32_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (!m->vals[i])
			return -ENOENT;
		if (m->keys[i] == key)
			return m->vals[i] - 1;
	}
}

static int idmap_grow(struct ra_idmap *m)
{
	uint32_t cap = m->cap ? m->cap * 2 : 256;
	int64_t *keys = malloc(cap * sizeof(*keys));
	uint32_t *vals = calloc(cap, sizeof(*vals));
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	for (uint32_t j = 0; j < m->cap; j++) {
		if (!m->vals[j])
			continue;
		uint32_t i = slot_of(m->keys[j], cap);
		while (vals[i])
			i = (i + 1) & (cap - 1);
		keys[i] = m->keys[j];
		vals[i] = m->vals[j];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = cap;
	return 0;
}

int64_t ra_idmap_get(struct ra_idmap *m, int64_t key, uint32_t next, bool *added)
{
	*added = false;
	int64_t found = ra_idmap_find(m, key);
	if (found >= 0)
		return found;
	if ((uint64_t)(m->nr + 1) * 2 > m->cap && idmap_grow(m) < 0)
		return -ENOMEM;
	uint32_t i = slot_of(key, m->cap);
	while (m->vals[i])
		i = (i + 1) & (m->cap - 1);
	m->keys[i] = key;
	m->vals[i] = next + 1;
	m->nr++;
	*added = true;
	return next;
}

void ra_idmap_free(struct ra_idmap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

/* ---- classes ---- */

/* The payload fields each role reads, by slot; "a|b": a, else b. */
static const char *const role_fields[RA_KR_NR][RA_KF_MAX] = {
	[RA_KR_SYS_ENTRY] = { "fd" },
	[RA_KR_SYS_EXIT] = { "ret" },
	[RA_KR_SWITCH] = { "prev_tid", "prev_comm", "next_tid", "next_comm" },
	[RA_KR_BLOCK_ISSUE] = { "dev", "sector", "nr_sector", "bytes", "rwbs" },
	[RA_KR_BLOCK_COMPLETE] = { "dev", "sector", "nr_sector", "bytes", "rwbs" },
	[RA_KR_IRQ_ENTRY] = { "irq", "name" },
	[RA_KR_IRQ_EXIT] = { "irq", "ret" },
	[RA_KR_SOFTIRQ_RAISE] = { "vec" },
	[RA_KR_SOFTIRQ_ENTRY] = { "vec" },
	[RA_KR_SOFTIRQ_EXIT] = { "vec" },
	[RA_KR_STATEDUMP] = { "tid", "pid", "name" },
	[RA_KR_FORK] = { "child_tid", "child_pid", "child_comm" },
	[RA_KR_NEWTASK] = { "tid|pid", "comm", "clone_flags" },
};

static const struct { const char *name; enum ra_krole role; } role_names[] = {
	{ "sched_switch", RA_KR_SWITCH },
	{ "block_rq_issue", RA_KR_BLOCK_ISSUE },
	{ "block_rq_complete", RA_KR_BLOCK_COMPLETE },
	{ "irq_handler_entry", RA_KR_IRQ_ENTRY },
	{ "irq_handler_exit", RA_KR_IRQ_EXIT },
	{ "softirq_raise", RA_KR_SOFTIRQ_RAISE },
	{ "softirq_entry", RA_KR_SOFTIRQ_ENTRY },
	{ "softirq_exit", RA_KR_SOFTIRQ_EXIT },
	{ "lttng_statedump_process_state", RA_KR_STATEDUMP },
	{ "sched_process_fork", RA_KR_FORK },
	{ "task_newtask", RA_KR_NEWTASK },
};

static int field_index(const struct rtr_event_class *c, const char *names)
{
	char want[64];
	snprintf(want, sizeof(want), "%s", names);
	for (char *save = NULL, *n = strtok_r(want, "|", &save); n;
	     n = strtok_r(NULL, "|", &save))
		for (uint32_t i = 0; i < c->nr_fields; i++)
			if (c->fields[i].name && !strcmp(c->fields[i].name, n))
				return (int)i;
	return -1;
}

static bool is_kernel_trace(const struct rtr_trace *t, uint32_t trace)
{
	const struct rtr_env *e = rtr_trace_env_get(t, trace, "domain");
	return e && e->is_string && e->s && !strcmp(e->s, "kernel");
}

/* The syscall name after one of the prefixes, or NULL. */
static const char *after(const char *name, const char *p1, const char *p2)
{
	size_t n1 = strlen(p1), n2 = strlen(p2);
	if (!strncmp(name, p1, n1) && name[n1])
		return name + n1;
	if (!strncmp(name, p2, n2) && name[n2])
		return name + n2;
	return NULL;
}

static int classify(struct ra_kernel *k)
{
	k->nr_classes = rtr_event_classes(k->t, &k->classes);
	k->kc = calloc(k->nr_classes ? k->nr_classes : 1, sizeof(*k->kc));
	if (!k->kc)
		return -ENOMEM;
	for (size_t i = 0; i < k->nr_classes; i++) {
		const struct rtr_event_class *c = &k->classes[i];
		struct ra_kclass *kc = &k->kc[i];
		kc->tid_idx = kc->pid_idx = kc->procname_idx = -2;	/* not looked up */
		for (unsigned f = 0; f < RA_KF_MAX; f++)
			kc->f[f] = -1;
		if (!is_kernel_trace(k->t, c->trace)) {
			kc->role = RA_KR_NONE;
			continue;
		}
		kc->role = RA_KR_OTHER;
		const char *sys;
		if ((sys = after(c->name, "syscall_entry_", "compat_syscall_entry_")))
			kc->role = RA_KR_SYS_ENTRY;
		else if ((sys = after(c->name, "syscall_exit_", "compat_syscall_exit_")))
			kc->role = RA_KR_SYS_EXIT;
		else if (!strncmp(c->name, "writeback_", 10))
			kc->role = RA_KR_WRITEBACK;
		for (size_t r = 0; r < sizeof(role_names) / sizeof(role_names[0]); r++)
			if (!strcmp(c->name, role_names[r].name))
				kc->role = role_names[r].role;
		if (sys) {
			/* Printable: the names go to terminals (untrusted metadata). */
			char name[128];
			ra_printable(sys, strlen(sys), name, sizeof(name));
			int64_t s = ra_strtab_intern(&k->sysnames, name);
			if (s < 0)
				return (int)s;
			kc->sys = (uint32_t)s;
		}
		for (unsigned f = 0; f < RA_KF_MAX; f++)
			if (role_fields[kc->role][f])
				kc->f[f] = (int16_t)field_index(c, role_fields[kc->role][f]);
	}
	return 0;
}

/* The contexts' positions, looked up at a class's first event. */
static void find_contexts(struct ra_kclass *kc, const struct rtr_event *raw)
{
	static const enum rtr_scope scopes[] = {
		RTR_SCOPE_EVENT_CONTEXT, RTR_SCOPE_STREAM_EVENT_CONTEXT,
	};
	kc->tid_idx = kc->pid_idx = kc->procname_idx = -1;
	for (size_t s = 0; s < 2; s++) {
		uint32_t n = rtr_scope_count(raw, scopes[s]);
		for (uint32_t i = 0; i < n && i < INT16_MAX; i++) {
			struct rtr_value v;
			const char *name = NULL;
			if (rtr_scope_field(raw, scopes[s], i, &v, &name) < 0 || !name)
				continue;
			if (!strcmp(name, "tid") && kc->tid_idx < 0) {
				kc->tid_scope = (int8_t)scopes[s];
				kc->tid_idx = (int16_t)i;
			} else if (!strcmp(name, "pid") && kc->pid_idx < 0) {
				kc->pid_scope = (int8_t)scopes[s];
				kc->pid_idx = (int16_t)i;
			} else if (!strcmp(name, "procname") && kc->procname_idx < 0) {
				kc->procname_scope = (int8_t)scopes[s];
				kc->procname_idx = (int16_t)i;
			}
		}
	}
}

static bool value_int(const struct rtr_value *v, int64_t *out)
{
	switch (v->type) {
	case RTR_INT:
		*out = v->i;
		return true;
	case RTR_UINT:
		*out = (int64_t)v->u;
		return true;
	case RTR_ENUM:
		*out = v->is_signed ? v->i : (int64_t)v->u;
		return true;
	default:
		return false;
	}
}

int ra_kev_int(const struct ra_kev *e, unsigned slot, int64_t *out)
{
	struct rtr_value v;
	if (slot >= RA_KF_MAX || e->kc->f[slot] < 0 ||
	    rtr_field(e->raw, (uint32_t)e->kc->f[slot], &v) < 0 || !value_int(&v, out))
		return -ENOENT;
	return 0;
}

int ra_kev_str(const struct ra_kev *e, unsigned slot, char *out, size_t len)
{
	struct rtr_value v;
	out[0] = '\0';
	if (slot >= RA_KF_MAX || e->kc->f[slot] < 0 ||
	    rtr_field(e->raw, (uint32_t)e->kc->f[slot], &v) < 0 || v.type != RTR_STRING)
		return -ENOENT;
	ra_printable(v.s.p, v.s.len, out, len);
	return 0;
}

static int ctx_int(const struct rtr_event *raw, int scope, int idx, int64_t *out)
{
	struct rtr_value v;
	if (idx < 0 || rtr_scope_field(raw, (enum rtr_scope)scope, (uint32_t)idx, &v, NULL) < 0 ||
	    !value_int(&v, out))
		return -ENOENT;
	return 0;
}

/* ---- threads ---- */

static int64_t thread_get(struct ra_kernel *k, int64_t tid)
{
	bool added;
	int64_t i = ra_idmap_get(&k->tids, tid, k->nr_threads, &added);
	if (i < 0 || !added)
		return i;
	if (RT_ARRAY_GROW(k->threads, k->cap_threads, (size_t)k->nr_threads + 1, 256) < 0)
		return -ENOMEM;
	size_t cap_open = k->cap_threads;
	struct ra_kopen *open = realloc(k->open, cap_open * sizeof(*open));
	if (!open)
		return -ENOMEM;
	k->open = open;
	k->threads[k->nr_threads] = (struct ra_kthread){ .tid = tid, .pid = tid };
	k->open[k->nr_threads] = (struct ra_kopen){ .ns = INT64_MIN, .fd = -1 };
	if (tid == 0)
		snprintf(k->threads[k->nr_threads].name, RA_KNAME, "swapper");
	return k->nr_threads++;
}

const struct ra_kthread *ra_kthread(const struct ra_kernel *k, uint32_t idx)
{
	return &k->threads[idx];
}

static int set_name_slot(struct ra_kernel *k, const struct ra_kev *e, unsigned tid_slot,
			 unsigned name_slot, int64_t *tid_out)
{
	int64_t tid;
	if (ra_kev_int(e, tid_slot, &tid) < 0)
		return 0;
	int64_t t = thread_get(k, tid);
	if (t < 0)
		return (int)t;
	if (tid_out)
		*tid_out = t;
	char name[RA_KNAME];
	if (tid && ra_kev_str(e, name_slot, name, sizeof(name)) == 0 && name[0])
		memcpy(k->threads[t].name, name, sizeof(name));
	return 0;
}

/* What the event says of threads: names, processes, the CPU's current
 * thread (after the analyses saw the event). */
static int learn(struct ra_kernel *k, struct ra_kev *e)
{
	int64_t t, v;
	int ret;
	switch (e->kc->role) {
	case RA_KR_SWITCH:
		if ((ret = set_name_slot(k, e, RA_KF_PREV_TID, RA_KF_PREV_COMM, NULL)) < 0 ||
		    (ret = set_name_slot(k, e, RA_KF_NEXT_TID, RA_KF_NEXT_COMM, NULL)) < 0)
			return ret;
		if (e->cpu < k->nr_cpus && ra_kev_int(e, RA_KF_NEXT_TID, &v) == 0)
			k->cpu_cur[e->cpu] = v;
		return 0;
	case RA_KR_STATEDUMP:
		t = -1;
		if ((ret = set_name_slot(k, e, RA_KF_SD_TID, RA_KF_SD_NAME, &t)) < 0)
			return ret;
		if (t >= 0 && ra_kev_int(e, RA_KF_SD_PID, &v) == 0) {
			k->threads[t].pid = v;
			k->threads[t].pid_known = true;
		}
		return 0;
	case RA_KR_FORK:
		t = -1;
		if ((ret = set_name_slot(k, e, RA_KF_CHILD_TID, RA_KF_CHILD_COMM, &t)) < 0)
			return ret;
		if (t >= 0 && ra_kev_int(e, RA_KF_CHILD_PID, &v) == 0) {
			k->threads[t].pid = v;
			k->threads[t].pid_known = true;
		}
		return 0;
	case RA_KR_NEWTASK:
		t = -1;
		if ((ret = set_name_slot(k, e, RA_KF_NT_TID, RA_KF_NT_COMM, &t)) < 0)
			return ret;
		if (t >= 0 && ra_kev_int(e, RA_KF_NT_FLAGS, &v) == 0) {
			struct ra_kthread *c = &k->threads[t];
			if (!(v & CLONE_THREAD_FLAG)) {
				c->pid = c->tid;
				c->pid_known = true;
			} else if (e->thread != UINT32_MAX) {
				c->pid = k->threads[e->thread].pid;
				c->pid_known = k->threads[e->thread].pid_known;
			}
		}
		return 0;
	default:
		return 0;
	}
}

/* The event's thread (see kstream.h), its pid and procname contexts. */
static int event_thread(struct ra_kernel *k, struct ra_kev *e)
{
	struct ra_kclass *kc = e->kc;
	if (kc->tid_idx == -2)
		find_contexts(kc, e->raw);
	int64_t tid = -1, pid;
	if (ctx_int(e->raw, kc->tid_scope, kc->tid_idx, &tid) < 0 && e->cpu < k->nr_cpus)
		tid = k->cpu_cur[e->cpu];
	e->thread = UINT32_MAX;
	if (tid < 0)
		return 0;
	int64_t t = thread_get(k, tid);
	if (t < 0)
		return (int)t;
	e->thread = (uint32_t)t;
	struct ra_kthread *th = &k->threads[t];
	if (ctx_int(e->raw, kc->pid_scope, kc->pid_idx, &pid) == 0 && pid >= 0) {
		th->pid = pid;
		th->pid_known = true;
	}
	struct rtr_value v;
	if (kc->procname_idx >= 0 && tid &&
	    rtr_scope_field(e->raw, (enum rtr_scope)kc->procname_scope,
			    (uint32_t)kc->procname_idx, &v, NULL) == 0 && v.type == RTR_STRING)
		ra_printable(v.s.p, v.s.len, th->name, sizeof(th->name));
	return 0;
}

/* The system call pairing: an exit closes its thread's open entry of the
 * same name; an entry replaces what was open (its exit was lost). */
static void pair_syscall(struct ra_kernel *k, struct ra_kev *e)
{
	e->sys_done = false;
	if (e->thread == UINT32_MAX)
		return;
	struct ra_kopen *o = &k->open[e->thread];
	if (e->kc->role == RA_KR_SYS_ENTRY) {
		o->ns = e->ns;
		o->sys = e->kc->sys;
		if (ra_kev_int(e, RA_KF_FD, &o->fd) < 0)
			o->fd = -1;
		return;
	}
	if (o->ns != INT64_MIN && o->sys == e->kc->sys) {
		e->sys_done = true;
		e->sys = o->sys;
		e->sys_begin = o->ns;
		e->fd = o->fd;
		if (ra_kev_int(e, RA_KF_RET, &e->ret) < 0)
			e->ret = 0;
	}
	o->ns = INT64_MIN;
}

/* ---- the pass ---- */

static int feed(struct ra_kernel *k, struct ra_kev *e)
{
	int ret = 0;
	if (k->sys && (ret = ra_ksys_feed(k, k->sys, e)) < 0)
		return ret;
	if (k->io && (ret = ra_kio_feed(k, k->io, e)) < 0)
		return ret;
	if (k->cpu && (ret = ra_kcpu_feed(k, k->cpu, e)) < 0)
		return ret;
	if (k->irq && (ret = ra_kirq_feed(k, k->irq, e)) < 0)
		return ret;
	if (k->sched && (ret = ra_ksched_feed(k, k->sched, e)) < 0)
		return ret;
	return 0;
}

static const struct {
	unsigned section;
	const char *what;
	enum ra_krole roles[2];
	const char *hint;
} needs[] = {
	{ RA_K_SYSCALLS, "system call", { RA_KR_SYS_EXIT, RA_KR_SYS_EXIT },
	  "record them with --syscall NAME,... or --syscall all (record -k), or "
	  "enable-event -k --syscall" },
	{ RA_K_IO, "block_rq_issue or block_rq_complete",
	  { RA_KR_BLOCK_ISSUE, RA_KR_BLOCK_COMPLETE },
	  "record them with -k block_rq_issue,block_rq_complete" },
	{ RA_K_CPU, "sched_switch", { RA_KR_SWITCH, RA_KR_SWITCH },
	  "record them with -k sched_switch" },
	{ RA_K_IRQ, "interrupt (irq_handler_* or softirq_*)",
	  { RA_KR_IRQ_EXIT, RA_KR_SOFTIRQ_EXIT },
	  "record them with -k irq_handler_entry,irq_handler_exit,softirq_entry,"
	  "softirq_exit,softirq_raise" },
	{ RA_K_SCHED, "sched_switch", { RA_KR_SWITCH, RA_KR_SWITCH },
	  "record them with -k sched_switch,sched_waking,sched_wakeup,sched_migrate_task" },
};

/* A section without its events: an error, or (skip_missing) left out. */
static int check_events(struct ra_kernel *k, char *err, size_t errlen)
{
	for (size_t i = 0; i < sizeof(needs) / sizeof(needs[0]); i++) {
		if (!(k->opt.sections & needs[i].section) ||
		    k->role_count[needs[i].roles[0]] || k->role_count[needs[i].roles[1]])
			continue;
		if (k->opt.skip_missing) {
			k->opt.sections &= ~needs[i].section;
			continue;
		}
		snprintf(err, errlen, "no %s events in the kernel trace: %s", needs[i].what,
			 needs[i].hint);
		return -ENOENT;
	}
	return 0;
}

static int build_procs(struct ra_kernel *k)
{
	struct ra_idmap pids = { 0 };
	int ret = 0;
	size_t cap = 0;
	for (uint32_t i = 0; i < k->nr_threads; i++) {
		struct ra_kthread *t = &k->threads[i];
		bool added;
		int64_t p = ra_idmap_get(&pids, t->pid, k->nr_procs, &added);
		if (p < 0) {
			ret = (int)p;
			goto out;
		}
		if (added) {
			if (RT_ARRAY_GROW(k->procs, cap, (size_t)k->nr_procs + 1, 64) < 0) {
				ret = -ENOMEM;
				goto out;
			}
			k->procs[k->nr_procs++] = (struct ra_kproc){ .pid = t->pid };
		}
		struct ra_kproc *pr = &k->procs[p];
		t->proc = (uint32_t)p;
		pr->nr_threads++;
		pr->pid_known |= t->pid_known;
		if (t->name[0] && (!pr->name[0] || t->tid == t->pid))
			memcpy(pr->name, t->name, sizeof(pr->name));
	}
out:
	ra_idmap_free(&pids);
	return ret;
}

static int open_traces(struct ra_kernel *k, const char *const *dirs, size_t nr, char *err,
		       size_t errlen)
{
	char msg[512];
	int ret = rtr_open_many(dirs, nr, &k->t, msg, sizeof(msg));
	if (ret < 0) {
		snprintf(err, errlen, "cannot read the trace in %s%s: %s", dirs[0],
			 nr > 1 ? " ..." : "", msg);
		return ret;
	}
	uint32_t nk = 0;
	for (uint32_t i = 0; i < rtr_trace_count(k->t); i++)
		nk += is_kernel_trace(k->t, i);
	if (!nk && k->opt.skip_missing) {
		k->opt.sections = 0;
		return 1;
	}
	if (!nk) {
		snprintf(err, errlen, "no kernel trace in %s%s (record one with ringtrace record "
			 "-k EVENTS -- CMD, or a session with enable-event -k)", dirs[0],
			 nr > 1 ? " ..." : "");
		return -ENOENT;
	}
	const struct rtr_stream_stats *st;
	size_t ns = rtr_streams(k->t, &st);
	for (size_t j = 0; j < ns; j++)
		if (st[j].cpu != UINT32_MAX && st[j].cpu >= k->nr_cpus && st[j].cpu < 65536)
			k->nr_cpus = st[j].cpu + 1;
	k->cpu_cur = malloc((k->nr_cpus ? k->nr_cpus : 1) * sizeof(*k->cpu_cur));
	if (!k->cpu_cur)
		return -ENOMEM;
	for (uint32_t c = 0; c < k->nr_cpus; c++)
		k->cpu_cur[c] = -1;
	return classify(k);
}

/* Events and packets lost by the kernel traces' streams. */
static void kernel_lost(struct ra_kernel *k)
{
	const struct rtr_stream_stats *st;
	size_t n = rtr_streams(k->t, &st);
	for (size_t j = 0; j < n; j++) {
		if (!is_kernel_trace(k->t, st[j].trace))
			continue;
		k->lost_events += st[j].events_discarded;
		k->lost_packets += st[j].packets_lost;
	}
}

static int pass(struct ra_kernel *k, char *err, size_t errlen)
{
	struct rtr_event raw;
	bool started = false;
	int r, ret;
	while ((r = rtr_next(k->t, &raw)) > 0) {
		struct ra_kev e = { .ns = raw.ns, .cpu = raw.cpu,
				    .kc = &k->kc[raw.cls - k->classes], .raw = &raw };
		if (e.kc->role == RA_KR_NONE)
			continue;
		if (!started) {
			started = true;
			if (k->opt.window)
				k->opt.window(k->opt.window_arg, e.ns, &k->begin, &k->end);
		}
		if (e.ns >= k->end) {
			k->cut = true;
			break;
		}
		if (++k->events % PROGRESS_EVERY == 0 && k->opt.progress)
			k->opt.progress(k->opt.progress_arg, k->events, e.ns);
		e.in_window = e.ns >= k->begin;
		if ((ret = event_thread(k, &e)) < 0)
			goto nomem;
		if (e.kc->role == RA_KR_SYS_ENTRY || e.kc->role == RA_KR_SYS_EXIT)
			pair_syscall(k, &e);
		k->role_count[e.kc->role]++;
		if (e.in_window) {
			if (e.ns < k->first_ns)
				k->first_ns = e.ns;
			k->last_ns = e.ns;
		}
		if ((ret = feed(k, &e)) < 0 || (ret = learn(k, &e)) < 0)
			goto nomem;
	}
	if (r < 0) {
		snprintf(err, errlen, "%s", rtr_error(k->t));
		return r;
	}
	return 0;
nomem:
	snprintf(err, errlen, "out of memory");
	return ret;
}

int ra_kernel_run(const char *const *dirs, size_t nr, const struct ra_kopts *opt,
		  struct ra_kernel **out, char *err, size_t errlen)
{
	*out = NULL;
	if (!nr) {
		snprintf(err, errlen, "no trace directory given");
		return -EINVAL;
	}
	struct ra_kernel *k = calloc(1, sizeof(*k));
	int ret = -ENOMEM;
	snprintf(err, errlen, "out of memory");
	if (!k)
		return -ENOMEM;
	k->opt = *opt;
	k->begin = INT64_MIN;
	k->end = INT64_MAX;
	k->first_ns = INT64_MAX;
	k->last_ns = INT64_MIN;
	k->dirs = calloc(nr, sizeof(*k->dirs));
	if (!k->dirs)
		goto fail;
	for (size_t i = 0; i < nr; i++)
		if (!(k->dirs[k->nr_dirs++] = strdup(dirs[i])))
			goto fail;
	if ((ret = open_traces(k, dirs, nr, err, errlen)) < 0)
		goto fail;
	if (ret == 1) {		/* no kernel trace, skip_missing */
		*out = k;
		return 0;
	}
	ret = -ENOMEM;
	snprintf(err, errlen, "out of memory");
	if (((opt->sections & RA_K_SYSCALLS) && !(k->sys = ra_ksys_new())) ||
	    ((opt->sections & RA_K_IO) && !(k->io = ra_kio_new())) ||
	    ((opt->sections & RA_K_CPU) && !(k->cpu = ra_kcpu_new())) ||
	    ((opt->sections & RA_K_IRQ) && !(k->irq = ra_kirq_new())) ||
	    ((opt->sections & RA_K_SCHED) && !(k->sched = ra_ksched_new())))
		goto fail;
	if ((ret = pass(k, err, errlen)) < 0)
		goto fail;
	kernel_lost(k);
	if ((ret = check_events(k, err, errlen)) < 0)
		goto fail;
	if (k->first_ns == INT64_MAX && k->opt.sections) {
		snprintf(err, errlen, "no kernel event inside the window (--begin, --end)");
		ret = -ENOENT;
		goto fail;
	}
	if (!(k->opt.sections & RA_K_SYSCALLS) && k->sys) {
		ra_ksys_free(k->sys);
		k->sys = NULL;
	}
	if (!(k->opt.sections & RA_K_IO) && k->io) {
		ra_kio_free(k->io);
		k->io = NULL;
	}
	if (!(k->opt.sections & RA_K_CPU) && k->cpu) {
		ra_kcpu_free(k->cpu);
		k->cpu = NULL;
	}
	if (!(k->opt.sections & RA_K_IRQ) && k->irq) {
		ra_kirq_free(k->irq);
		k->irq = NULL;
	}
	snprintf(err, errlen, "out of memory");
	/* The CPU time's last intervals may add threads: before the
	 * process table. */
	if ((k->cpu && (ret = ra_kcpu_finish_threads(k, k->cpu)) < 0) ||
	    (ret = build_procs(k)) < 0 ||
	    (k->sys && (ret = ra_ksys_finish(k, k->sys)) < 0) ||
	    (k->io && (ret = ra_kio_finish(k, k->io)) < 0) ||
	    (k->cpu && (ret = ra_kcpu_finish(k, k->cpu)) < 0) ||
	    (k->irq && (ret = ra_kirq_finish(k, k->irq)) < 0) ||
	    (k->sched && (ret = ra_ksched_finish(k, k->sched)) < 0))
		goto fail;
	*out = k;
	return 0;
fail:
	ra_kernel_free(k);
	return ret;
}

void ra_kernel_free(struct ra_kernel *k)
{
	if (!k)
		return;
	if (k->sys)
		ra_ksys_free(k->sys);
	if (k->io)
		ra_kio_free(k->io);
	if (k->cpu)
		ra_kcpu_free(k->cpu);
	if (k->irq)
		ra_kirq_free(k->irq);
	if (k->sched)
		ra_ksched_free(k->sched);
	for (size_t i = 0; i < k->nr_dirs; i++)
		free(k->dirs[i]);
	free(k->dirs);
	free(k->kc);
	ra_strtab_free(&k->sysnames);
	free(k->threads);
	free(k->open);
	ra_idmap_free(&k->tids);
	free(k->procs);
	free(k->cpu_cur);
	if (k->t)
		rtr_close(k->t);
	free(k);
}

/* ---- writers' common parts ---- */

unsigned ra_kernel_sections(const struct ra_kernel *k)
{
	return k->opt.sections;
}

void ra_errno_name(int64_t err, char *out, size_t len)
{
	const char *n = err > 0 && err < 4096 ? strerrorname_np((int)err) : NULL;
	if (n)
		snprintf(out, len, "%s", n);
	else
		snprintf(out, len, "E%" PRId64, err);
}

void ra_kjson_thread(FILE *f, const struct ra_kthread *t)
{
	fprintf(f, "\"tid\":%" PRId64 ",\"pid\":%" PRId64 ",\"pid_known\":%s,\"name\":", t->tid,
		t->pid, t->pid_known ? "true" : "false");
	ra_json_string(f, t->name, strlen(t->name));
}

void ra_kjson_proc(FILE *f, const struct ra_kproc *p)
{
	fprintf(f, "\"pid\":%" PRId64 ",\"pid_known\":%s,\"threads\":%u,\"name\":", p->pid,
		p->pid_known ? "true" : "false", p->nr_threads);
	ra_json_string(f, p->name, strlen(p->name));
}

void ra_kernel_write_text(FILE *f, const struct ra_kernel *k)
{
	char first[64], span[32];
	fprintf(f, "kernel trace:");
	for (size_t i = 0; i < k->nr_dirs; i++)
		fprintf(f, " %s", k->dirs[i]);
	fputc('\n', f);
	ra_format_wall(k->first_ns, first, sizeof(first));
	ra_format_duration(ra_ns_diff(k->last_ns, k->first_ns), span, sizeof(span));
	fprintf(f, "first event: %s UTC (%" PRId64 " ns), span %s%s\n", first, k->first_ns, span,
		k->begin != INT64_MIN || k->end != INT64_MAX ? " (the window)" : "");
	fprintf(f, "kernel events: %" PRIu64 ", lost events: %" PRIu64 ", lost packets: %" PRIu64
		", threads: %u, processes: %u\n", k->events, k->lost_events, k->lost_packets,
		k->nr_threads, k->nr_procs);
	if (k->sys)
		ra_ksys_text(f, k, k->sys);
	if (k->io)
		ra_kio_text(f, k, k->io);
	if (k->cpu)
		ra_kcpu_text(f, k, k->cpu);
	if (k->irq)
		ra_kirq_text(f, k, k->irq);
	if (k->sched)
		ra_ksched_text(f, k, k->sched);
}

void ra_kernel_write_json(FILE *f, const struct ra_kernel *k)
{
	fputs("{\"traces\":[", f);
	for (size_t i = 0; i < k->nr_dirs; i++) {
		if (i)
			fputc(',', f);
		ra_json_string(f, k->dirs[i], strlen(k->dirs[i]));
	}
	fprintf(f, "],\"events\":%" PRIu64 ",\"lost_events\":%" PRIu64
		",\"lost_packets\":%" PRIu64 ",\"first_ns\":%" PRId64 ",\"last_ns\":%" PRId64,
		k->events, k->lost_events, k->lost_packets, k->first_ns, k->last_ns);
	if (k->begin != INT64_MIN)
		fprintf(f, ",\"window_begin_ns\":%" PRId64, k->begin);
	if (k->end != INT64_MAX)
		fprintf(f, ",\"window_end_ns\":%" PRId64, k->end);
	if (k->sys) {
		fputs(",\"syscalls\":", f);
		ra_ksys_json(f, k, k->sys);
	}
	if (k->io) {
		fputs(",\"io\":", f);
		ra_kio_json(f, k, k->io);
	}
	if (k->cpu) {
		fputs(",\"cpu\":", f);
		ra_kcpu_json(f, k, k->cpu);
	}
	if (k->irq) {
		fputs(",\"irq\":", f);
		ra_kirq_json(f, k, k->irq);
	}
	if (k->sched) {
		fputs(",\"sched\":", f);
		ra_ksched_json(f, k, k->sched);
	}
	fputs("}", f);
}

int ra_ktop_push(struct ra_ktop *t, unsigned cap, const struct ra_kout *o)
{
	if (!cap || (t->nr == cap && o->dur_ns <= t->v[t->nr - 1].dur_ns))
		return 0;
	if (!t->v && !(t->v = malloc(cap * sizeof(*t->v))))
		return -ENOMEM;
	uint32_t i = t->nr < cap ? t->nr++ : cap - 1;
	while (i > 0 && t->v[i - 1].dur_ns < o->dur_ns) {
		t->v[i] = t->v[i - 1];
		i--;
	}
	t->v[i] = *o;
	return 0;
}

void ra_ktext_lat(FILE *f, const struct ra_loghist *h)
{
	char tot[32], p50[32], p99[32], max[32];
	ra_format_duration(h->sum > INT64_MAX ? INT64_MAX : (int64_t)h->sum, tot, sizeof(tot));
	ra_format_duration(ra_loghist_percentile(h, 50), p50, sizeof(p50));
	ra_format_duration(ra_loghist_percentile(h, 99), p99, sizeof(p99));
	ra_format_duration(h->max, max, sizeof(max));
	fprintf(f, "%9" PRIu64 " %9s %9s %9s %9s", h->count, tot, p50, p99, max);
}

void ra_kjson_lat(FILE *f, const struct ra_loghist *h)
{
	fprintf(f, "\"count\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"min_ns\":%" PRId64
		",\"p50_ns\":%" PRId64 ",\"p90_ns\":%" PRId64 ",\"p99_ns\":%" PRId64
		",\"max_ns\":%" PRId64, h->count, h->sum, h->min, ra_loghist_percentile(h, 50),
		ra_loghist_percentile(h, 90), ra_loghist_percentile(h, 99), h->max);
}

void ra_kthread_label(const struct ra_kernel *k, uint32_t thread, char *out, size_t len)
{
	if (thread == UINT32_MAX) {
		snprintf(out, len, "?");
		return;
	}
	const struct ra_kthread *t = &k->threads[thread];
	snprintf(out, len, "%s tid %" PRId64 " pid %" PRId64 "%s", t->name[0] ? t->name : "?",
		 t->tid, t->pid, t->pid_known ? "" : "?");
}

/* Sort indexes by a key (arg), largest first; ties by index. */
static int by_key_desc(const void *a, const void *b, void *arg)
{
	const uint64_t *key = arg;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	if (key[i] != key[j])
		return key[i] < key[j] ? 1 : -1;
	return (i > j) - (i < j);
}

uint32_t *ra_korder(uint64_t *key, uint32_t n, uint32_t *nr)
{
	uint32_t *o = malloc((n ? n : 1) * sizeof(*o));
	if (!o)
		return NULL;
	*nr = 0;
	for (uint32_t i = 0; i < n; i++)
		if (key[i])
			o[(*nr)++] = i;
	qsort_r(o, *nr, sizeof(*o), by_key_desc, key);
	return o;
}

int64_t ra_kthread_get(struct ra_kernel *k, int64_t tid)
{
	return thread_get(k, tid);
}
