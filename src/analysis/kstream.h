/*
 * kstream.h - the kernel events of a trace set as the kernel analyses see
 * them (internal to src/analysis; kernel.c): each event class's role and
 * the indexes of the fields that role reads, found once per class by the
 * names of LTTng's kernel traces (which ringtrace's kernel traces use:
 * docs/kernel.md); each event's thread; a table of the threads seen
 * (process id and name, learnt from the events); and the analyses' own
 * state, fed in time order.
 *
 * The thread of an event is its `tid` context (ringtrace always records
 * it; LTTng with add-context -k -t tid), else the thread its CPU's last
 * sched_switch switched in (LTTng traces without that context). Its
 * process is its `pid` context, else what the state dump
 * (lttng_statedump_process_state), a fork (sched_process_fork with
 * child_pid, LTTng) or task_newtask (CLONE_THREAD) said; else the thread
 * counts as a process of its own (pid = tid, pid_known false).
 *
 * Concurrency: one thread at a time.
 */
#ifndef RINGTRACE_ANALYSIS_KSTREAM_H
#define RINGTRACE_ANALYSIS_KSTREAM_H

#include "analysis_internal.h"

enum ra_krole {
	RA_KR_NONE,		/* not a kernel trace's event */
	RA_KR_OTHER,		/* a kernel event no analysis reads */
	RA_KR_SYS_ENTRY,	/* syscall_entry_NAME (compat_ too) */
	RA_KR_SYS_EXIT,		/* syscall_exit_NAME: ret */
	RA_KR_SWITCH,		/* sched_switch */
	RA_KR_BLOCK_ISSUE,	/* block_rq_issue */
	RA_KR_BLOCK_COMPLETE,	/* block_rq_complete */
	RA_KR_IRQ_ENTRY,	/* irq_handler_entry */
	RA_KR_IRQ_EXIT,		/* irq_handler_exit */
	RA_KR_SOFTIRQ_RAISE,	/* softirq_raise */
	RA_KR_SOFTIRQ_ENTRY,	/* softirq_entry */
	RA_KR_SOFTIRQ_EXIT,	/* softirq_exit */
	RA_KR_WRITEBACK,	/* writeback_* */
	RA_KR_STATEDUMP,	/* lttng_statedump_process_state */
	RA_KR_FORK,		/* sched_process_fork */
	RA_KR_NEWTASK,		/* task_newtask */
	RA_KR_NR
};

/* Field slots, per role (kstream.c's table gives their names). */
enum {
	RA_KF_RET = 0,					/* SYS_EXIT */
	RA_KF_FD = 0,					/* SYS_ENTRY (fsync...) */
	RA_KF_PREV_TID = 0, RA_KF_PREV_COMM, RA_KF_NEXT_TID, RA_KF_NEXT_COMM, /* SWITCH */
	RA_KF_DEV = 0, RA_KF_SECTOR, RA_KF_NR_SECTOR, RA_KF_BYTES, RA_KF_RWBS, /* BLOCK */
	RA_KF_IRQ = 0, RA_KF_IRQ_NAME, RA_KF_IRQ_RET = 1, /* IRQ_ENTRY / _EXIT */
	RA_KF_VEC = 0,					/* SOFTIRQ_* */
	RA_KF_SD_TID = 0, RA_KF_SD_PID, RA_KF_SD_NAME,	/* STATEDUMP */
	RA_KF_CHILD_TID = 0, RA_KF_CHILD_PID, RA_KF_CHILD_COMM, /* FORK */
	RA_KF_NT_TID = 0, RA_KF_NT_COMM, RA_KF_NT_FLAGS,	/* NEWTASK */
	RA_KF_MAX = 5
};

struct ra_kclass {
	enum ra_krole role;
	uint32_t sys;			/* SYS_*: index in ra_kernel.sysnames */
	int16_t f[RA_KF_MAX];		/* payload field indexes, -1: absent */
	/* Contexts: scope (RTR_SCOPE_*) and index, idx -1: absent. */
	int8_t tid_scope, pid_scope, procname_scope;
	int16_t tid_idx, pid_idx, procname_idx;
};

#define RA_KNAME 24

struct ra_kthread {
	int64_t tid, pid;
	bool pid_known;
	char name[RA_KNAME];		/* printable, "" unknown */
	uint32_t proc;			/* index in ra_kernel.procs (after the pass) */
};

struct ra_kproc {
	int64_t pid;
	bool pid_known;
	char name[RA_KNAME];
	uint32_t nr_threads;
};

/* An open-addressing map of int64 keys to dense indexes. */
struct ra_idmap {
	int64_t *keys;
	uint32_t *vals;			/* index + 1, 0 = free */
	uint32_t cap, nr;		/* cap: power of 2, at most half full */
};
/* The index of key, *added when new as `next`; -ENOMEM. */
int64_t ra_idmap_get(struct ra_idmap *m, int64_t key, uint32_t next, bool *added);
/* The index of key, -ENOENT. */
int64_t ra_idmap_find(const struct ra_idmap *m, int64_t key);
void ra_idmap_free(struct ra_idmap *m);

/* One event handed to the analyses. */
struct ra_kev {
	int64_t ns;
	uint32_t cpu;			/* UINT32_MAX unknown */
	struct ra_kclass *kc;		/* its class (contexts found at first use) */
	const struct rtr_event *raw;
	uint32_t thread;		/* index in ra_kernel.threads, UINT32_MAX unknown */
	bool in_window;			/* ns in [begin, end) */
	/* SYS_EXIT that closed its thread's open entry of the same name
	 * (the pairing, kernel.c): */
	bool sys_done;
	uint32_t sys;			/* SYS_*: the syscall's name index */
	int64_t sys_begin;		/* the entry's time */
	int64_t ret;			/* the exit's ret (0 if absent) */
	int64_t fd;			/* the entry's fd argument, -1 none */
};

/* Per thread: the system call it is in (entered, not exited yet). */
struct ra_kopen {
	int64_t ns;			/* entry time, INT64_MIN: none open */
	int64_t fd;
	uint32_t sys;
};

struct ra_ksys;
struct ra_kio;
struct ra_kcpu;
struct ra_kirq;
struct ra_ksched;

struct ra_kernel {
	struct ra_kopts opt;
	char **dirs;			/* owned copies */
	size_t nr_dirs;
	struct rtr_trace *t;
	const struct rtr_event_class *classes;
	size_t nr_classes;
	struct ra_kclass *kc;		/* owned, per class */
	struct ra_strtab sysnames;	/* syscall names */
	struct ra_kthread *threads;	/* owned */
	uint32_t nr_threads;
	size_t cap_threads;
	struct ra_idmap tids;
	struct ra_kproc *procs;		/* owned, after the pass */
	uint32_t nr_procs;
	struct ra_kopen *open;		/* owned, per thread */
	int64_t *cpu_cur;		/* owned, per CPU: tid switched in, -1 unknown */
	uint32_t nr_cpus;
	int64_t begin, end;		/* the window */
	bool cut;			/* the trace goes on after the window */
	int64_t first_ns, last_ns;	/* kernel events inside the window */
	uint64_t events;		/* kernel events read */
	uint64_t role_count[RA_KR_NR];	/* events read, per role */
	uint64_t lost_events, lost_packets;
	struct ra_ksys *sys;
	struct ra_kio *io;
	struct ra_kcpu *cpu;
	struct ra_kirq *irq;
	struct ra_ksched *sched;
};

/* The longest intervals of a kind, longest first (ties: earliest). */
struct ra_kout {
	int64_t begin_ns, dur_ns;
	int64_t value;			/* what the kind says: ret, bytes, irq... */
	uint32_t thread;		/* UINT32_MAX unknown */
	uint32_t what;			/* syscall index, device... */
};
struct ra_ktop {
	struct ra_kout *v;		/* owned */
	uint32_t nr;
};
/* Keep o if it is among the `cap` longest. 0 or -ENOMEM. */
int ra_ktop_push(struct ra_ktop *t, unsigned cap, const struct ra_kout *o);

/* A percentile table row's numbers as text: count, total, p50, p99, max. */
void ra_ktext_lat(FILE *f, const struct ra_loghist *h);
/* The same as JSON members "count":...,"total_ns",...,"max_ns". */
void ra_kjson_lat(FILE *f, const struct ra_loghist *h);
/* "NAME tid N pid P" into out. */
void ra_kthread_label(const struct ra_kernel *k, uint32_t thread, char *out, size_t len);

/* Indexes 0..n-1 whose key is not 0, sorted by key, largest first (ties:
 * lower index first); *nr of them. NULL if out of memory. Caller frees. */
uint32_t *ra_korder(uint64_t *key, uint32_t n, uint32_t *nr);
/* The index of thread tid in the table (added if new), -ENOMEM. */
int64_t ra_kthread_get(struct ra_kernel *k, int64_t tid);
/* Thread `idx` of the table. */
const struct ra_kthread *ra_kthread(const struct ra_kernel *k, uint32_t idx);
/* An integer field of slot `slot`: 0 and *out, -ENOENT. */
int ra_kev_int(const struct ra_kev *e, unsigned slot, int64_t *out);
/* A string field of slot `slot`, printable, in out (len >= 1): 0, -ENOENT. */
int ra_kev_str(const struct ra_kev *e, unsigned slot, char *out, size_t len);
/* "EPERM" ..., or "E<n>" for an unknown errno, into out. */
void ra_errno_name(int64_t err, char *out, size_t len);
/* JSON of a thread or process: "tid":N,"pid":N,"name":"..." members. */
void ra_kjson_thread(FILE *f, const struct ra_kthread *t);
void ra_kjson_proc(FILE *f, const struct ra_kproc *p);

/* The analyses: new (NULL: out of memory), feed every event (in time
 * order; 0 or -ENOMEM), finish after the last (0 or -ENOMEM; the process
 * table is built), write, free. */
struct ra_ksys *ra_ksys_new(void);
int ra_ksys_feed(struct ra_kernel *k, struct ra_ksys *s, const struct ra_kev *e);
int ra_ksys_finish(struct ra_kernel *k, struct ra_ksys *s);
void ra_ksys_text(FILE *f, const struct ra_kernel *k, const struct ra_ksys *s);
void ra_ksys_json(FILE *f, const struct ra_kernel *k, const struct ra_ksys *s);
void ra_ksys_free(struct ra_ksys *s);

/* The same for kcpu.c, kirq.c and kio.c. */
struct ra_kcpu *ra_kcpu_new(void);
int ra_kcpu_feed(struct ra_kernel *k, struct ra_kcpu *s, const struct ra_kev *e);
/* The last intervals (before the process table), then the rest. */
int ra_kcpu_finish_threads(struct ra_kernel *k, struct ra_kcpu *s);
int ra_kcpu_finish(struct ra_kernel *k, struct ra_kcpu *s);
void ra_kcpu_text(FILE *f, const struct ra_kernel *k, const struct ra_kcpu *s);
void ra_kcpu_json(FILE *f, const struct ra_kernel *k, const struct ra_kcpu *s);
void ra_kcpu_free(struct ra_kcpu *s);

struct ra_kirq *ra_kirq_new(void);
int ra_kirq_feed(struct ra_kernel *k, struct ra_kirq *s, const struct ra_kev *e);
int ra_kirq_finish(struct ra_kernel *k, struct ra_kirq *s);
void ra_kirq_text(FILE *f, const struct ra_kernel *k, const struct ra_kirq *s);
void ra_kirq_json(FILE *f, const struct ra_kernel *k, const struct ra_kirq *s);
void ra_kirq_free(struct ra_kirq *s);
/* --sched (ksched.c): on the kernel state model of analysis.h. */
struct ra_ksched *ra_ksched_new(void);
int ra_ksched_feed(struct ra_kernel *k, struct ra_ksched *s, const struct ra_kev *e);
int ra_ksched_finish(struct ra_kernel *k, struct ra_ksched *s);
void ra_ksched_text(FILE *f, const struct ra_kernel *k, const struct ra_ksched *s);
void ra_ksched_json(FILE *f, const struct ra_kernel *k, const struct ra_ksched *s);
void ra_ksched_free(struct ra_ksched *s);

struct ra_kio *ra_kio_new(void);
int ra_kio_feed(struct ra_kernel *k, struct ra_kio *s, const struct ra_kev *e);
int ra_kio_finish(struct ra_kernel *k, struct ra_kio *s);
void ra_kio_text(FILE *f, const struct ra_kernel *k, const struct ra_kio *s);
void ra_kio_json(FILE *f, const struct ra_kernel *k, const struct ra_kio *s);
void ra_kio_free(struct ra_kio *s);

#endif /* RINGTRACE_ANALYSIS_KSTREAM_H */
