/*
 * analysis.h - analyses of ringtrace traces and their exporters, shared by
 * `ringtrace analyze`, `ringtrace export` and `ringtrace report`.
 *
 * What it offers:
 *   - ra_source: several trace directories read as one stream of events in
 *     timestamp order, each event with an interned name ("provider:event")
 *     and an interned key (its thread: see ra_source_open);
 *   - ra_pairer: pairs begin/end events per key (a stack per key);
 *   - ra_stats: event rates over time, durations of paired events and
 *     per-key activity, computed from a source (keeps one 32-byte record
 *     per pair in memory, and one 24-byte record per event only when
 *     asked to: counts per name and interval otherwise);
 *   - ra_kernel_run: the kernel analyses (system calls, block I/O, CPU
 *     time, interrupts) of the kernel traces of a set, streamed in one
 *     pass in memory bounded by threads, names and devices (ra_loghist
 *     percentiles), as text or JSON;
 *   - writers: analyses as text or JSON, the Chrome trace-event JSON
 *     (streamed: memory grows only with the events of a key inside an open
 *     pair), the self-contained HTML report.
 *
 * Concurrency: none of these objects is thread-safe; use each from one
 * thread at a time. Nothing keeps global state.
 *
 * Errors: functions return 0 (or a count) or -errno and, when they take an
 * `err` buffer, put a message there naming what was wrong.
 */
#ifndef RINGTRACE_ANALYSIS_H
#define RINGTRACE_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../reader/reader.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- interned strings ------------------------------------------------- */

/* A set of strings, each given a dense index in insertion order. */
struct ra_strtab {
	char **str;		/* owned: str[index], NUL-terminated */
	uint32_t nr, cap;
	uint32_t *slots;	/* owned: open addressing, index + 1, 0 = free */
	uint32_t nr_slots;	/* power of 2 */
};

/* Index of `s` (added if new); -ENOMEM. */
int64_t ra_strtab_intern(struct ra_strtab *tab, const char *s);
/* Index of `s` or -ENOENT. */
int64_t ra_strtab_find(const struct ra_strtab *tab, const char *s);
void ra_strtab_free(struct ra_strtab *tab);

/* --- symbols: the state dump's threads and objects ------------------- */

/* What the state dumps of a set of traces say (lttng_ust_statedump:*,
 * lttng_ust_dl:*; docs/statedump.md): each process's loaded objects,
 * whose ELF symbols resolve the `ip` context (elfutils), and its threads'
 * names. Files are looked up on first use and cached. */
struct ra_symbols;

/* Read the dumps of the traces under dirs (only their events are
 * decoded; a trace without any is not read; damaged data ends the pass,
 * what came before is kept). 0, or -errno with a message in err (the
 * traces cannot be opened, out of memory). */
int ra_symbols_load(const char *const *dirs, size_t nr, struct ra_symbols **out, char *err,
		    size_t errlen);
/* ip in process vpid as "symbol+0xOFF" in out (bytes that are not
 * printable ASCII as '?'): true, or false when no object, file or symbol
 * holds it (s may be NULL). */
bool ra_symbols_resolve(struct ra_symbols *s, int64_t vpid, uint64_t ip, char *out,
			size_t len);
/* The name the dumps gave thread tid of process vpid, or NULL. */
const char *ra_symbols_thread_name(const struct ra_symbols *s, int64_t vpid, int64_t tid);
void ra_symbols_free(struct ra_symbols *s);
/* The event's process: its vpid context, else its trace's `vpid`
 * environment entry (per-process traces), else 0 (unknown). Never a
 * payload field: a field the program calls "pid" says nothing of the
 * recording. */
int64_t ra_event_vpid(const struct rtr_trace *t, const struct rtr_event *ev);

/* --- source: several traces merged ------------------------------------ */

struct ra_event {
	int64_t ns;		/* since the epoch */
	uint32_t cpu;		/* UINT32_MAX if unknown */
	uint32_t trace;		/* index of the trace in the set */
	uint32_t name;		/* index in ra_source.names */
	uint32_t key;		/* index in ra_source.keys */
	int64_t tid;		/* its thread: vtid, else tid context, else
				 * the thread the CPU's last sched_switch
				 * put there (kernel traces without
				 * contexts, as LTTng's); -1 unknown */
	const struct rtr_event *raw;	/* valid until the next ra_source_next */
};

struct ra_source_cache;

struct ra_source {
	const char *const *dirs;	/* borrowed from the caller */
	size_t nr;
	struct rtr_trace *t;		/* owned: every trace, merged */
	struct ra_strtab names;		/* event names */
	struct ra_strtab keys;		/* key values as text; "unknown" */
	struct ra_strtab threads;	/* thread names (procname contexts) */
	uint32_t *key_thread;		/* owned, per key: its last thread
					 * name's index in threads + 1; 0 none */
	struct ra_symbols *syms;	/* owned: the state dump (thread names
					 * the events lack); default key only */
	size_t nr_key_thread;
	int64_t *cpu_tid;		/* owned, per CPU: the thread its last
					 * sched_switch switched in + 1; 0 unknown */
	size_t nr_cpu_tid;
	const char *key_field;		/* borrowed; "tid" by default */
	bool default_key;		/* no key field given: vtid, then tid */
	bool hosts;			/* the traces name more than one host
					 * (env hostname: a relay's): default
					 * keys are "HOST/tid", a thread of one
					 * host never another's of the same tid */
	int64_t first_ns, last_ns;	/* of the events returned so far */
	uint64_t events;
	struct rtr_event cur;		/* what ra_event.raw points to */
	struct ra_source_cache *cache;	/* owned (source.c): what each event
					 * class and thread gave before */
};

#define RA_DEFAULT_KEY "tid"
#define RA_UNKNOWN_KEY "unknown"

/*
 * Open every trace under the directories of `dirs` (kept by reference; see
 * rtr_open_many). The key of an event is the value of the field
 * `key_field`, looked up with ra_event_field; with key_field NULL, the
 * context field "vtid", else the field "tid", else the thread the event's
 * CPU runs (ra_event.tid; kernel traces without a tid context, as
 * LTTng's). Integers are written in
 * decimal, strings as they are, enumerations as their label; events
 * without the field get the key "unknown". Returns 0 or -errno (message in
 * err).
 */
int ra_source_open(struct ra_source *src, const char *const *dirs, size_t nr,
		   const char *key_field, char *err, size_t errlen);
/* 1 (event in *ev), 0 (end), -errno (message in err). The thread name
 * of the event's key is updated from its procname context (the thread's
 * name when the event was recorded), if it has one. */
int ra_source_next(struct ra_source *src, struct ra_event *ev, char *err,
		   size_t errlen);
/* Events lost (discarded) and packets lost in every trace; complete once
 * ra_source_next returned 0. */
void ra_source_lost(const struct ra_source *src, uint64_t *events,
		    uint64_t *packets);
/* The name of key `key`'s thread as of the events read so far (its last
 * procname context; without one, the name the state dump gave that
 * thread), NULL when none was recorded or the key is a field given by the
 * caller (not a thread). */
const char *ra_source_thread_name(const struct ra_source *src, uint32_t key);
/* "KEY_FIELD KEY (NAME)", or without " (NAME)" when none is known: how
 * the writers name a key's thread. */
void ra_source_thread_label(const struct ra_source *src, uint32_t key, char *out,
			    size_t len);
/* The directory of trace `trace` of the set (ra_event.trace). */
const char *ra_source_trace_path(const struct ra_source *src, uint32_t trace);
void ra_source_close(struct ra_source *src);

/* Field `name` of an event (names as the reader gives them, without the
 * metadata's leading '_'): in its event context, else its stream event
 * context, else its payload. 0 or -ENOENT. */
int ra_event_field(const struct rtr_event *raw, const char *name,
		   struct rtr_value *v);

/* Field `name` of an event's contexts only (event context, else stream
 * event context): what the recording knows of the event (vpid, vtid,
 * procname), never the payload. 0 or -ENOENT. */
int ra_event_context(const struct rtr_event *raw, const char *name,
		     struct rtr_value *v);

/* Write the payload fields of `raw` as JSON object members
 * ("name":value,...) without the braces: structures as objects, arrays as
 * arrays, enumerations as their label (their integer if no label
 * matches), NaN and infinities as null; nesting deeper than 32 levels as
 * null. Returns the number of members written. */
size_t ra_write_payload_json(FILE *f, const struct rtr_event *raw);

/* --- pairing ------------------------------------------------------------ */

/* A kind of pair: its begin and end event names (indexes in names). */
struct ra_pair_type {
	char *label;		/* owned: "provider:X" or "BEGIN,END" */
	char *begin, *end;	/* owned: the event names */
	uint64_t unmatched_begin, unmatched_end;
};

/* One open begin on a key's stack. */
struct ra_open {
	int64_t ns;
	uint32_t type;
	uint32_t name;
	uint64_t seq;		/* the caller's number for the begin */
};

struct ra_key_stack {
	struct ra_open *o;	/* owned */
	uint32_t nr, cap;
};

struct ra_pairer {
	struct ra_pair_type *types;	/* owned */
	uint32_t nr_types, cap_types;
	bool auto_pairs;		/* P:X_entry/P:X_exit ..., P:entry/P:exit ... */
	int64_t *role;			/* owned, per name: -1 none, else type * 2 + is_end;
					 * INT64_MIN not classified yet */
	uint32_t nr_roles;
	struct ra_key_stack *stacks;	/* owned, per key */
	uint32_t nr_stacks;
};

enum ra_pair_result {
	RA_PAIR_NONE,		/* not a begin or end event */
	RA_PAIR_BEGIN,		/* pushed on its key's stack */
	RA_PAIR_DONE,		/* closed a pair: *done filled */
	RA_PAIR_UNMATCHED_END,	/* an end without a begin */
};

struct ra_pair_done {
	uint32_t type;
	int64_t begin_ns, end_ns;
	uint32_t begin_name;
	uint64_t begin_seq;
	uint32_t depth;		/* stack depth after the pop (0: outermost) */
	uint32_t dropped;	/* begins above it, closed as unmatched */
};

/* `auto_pairs`: recognise the name patterns. Then add user pairs. */
void ra_pairer_init(struct ra_pairer *p, bool auto_pairs);
/* Add a pair "BEGIN,END" of full event names. -EINVAL (message), -ENOMEM. */
int ra_pairer_add(struct ra_pairer *p, const char *spec, char *err,
		  size_t errlen);
/* Feed the next event (in timestamp order). `seq` is any number the
 * caller gives the event; a pair's ra_pair_done.begin_seq is its begin's.
 * Returns an enum ra_pair_result or -ENOMEM. */
int ra_pairer_feed(struct ra_pairer *p, const struct ra_strtab *names,
		   const struct ra_event *ev, uint64_t seq,
		   struct ra_pair_done *done);
/* At the end of the trace: count the begins still open as unmatched. */
void ra_pairer_finish(struct ra_pairer *p);
void ra_pairer_free(struct ra_pairer *p);

/* --- statistics --------------------------------------------------------- */

struct ra_options {
	const char *key_field;	/* NULL: "tid" */
	int64_t interval_ns;	/* 0: automatic */
	unsigned top;		/* outliers shown per pair type */
	bool auto_pairs;
	const char *const *pairs;	/* "BEGIN,END" specs */
	size_t nr_pairs;
	bool keep_events;	/* fill ra_stats.ev (the report's lanes) */
};

struct ra_ev {			/* one event, kept for the report */
	int64_t ns;
	uint32_t name, key, cpu, trace;
};

struct ra_pair {			/* one closed pair */
	int64_t begin_ns, dur_ns;
	uint32_t type, key, depth, pad;
};

struct ra_key_stats {
	uint64_t events;
	int64_t first_ns, last_ns;
	int64_t paired_ns;	/* time inside outermost pairs */
	int64_t open_since;	/* begin of the outermost open pair */
	uint64_t *name_counts;	/* owned, per name (nr_names at finish) */
	uint32_t nr_name_counts;	/* allocated in name_counts */
};

/* Events per name in intervals of ra_stats.width ns from the first
 * event's time (ra_stats without its events), grown as they come. */
struct ra_rate_counts {
	uint64_t *n;		/* owned */
	size_t nr;		/* allocated */
};

#define RA_HIST_BUCKETS 40	/* 1-2-5 series from 1 ns: 1, 2, 5, 10 ... */

struct ra_dur_stats {
	uint64_t count;
	int64_t min, max, p50, p90, p99;
	double avg;
	uint64_t hist[RA_HIST_BUCKETS];
	struct ra_pair *sorted;	/* owned: this type's pairs, longest first */
};

struct ra_stats {
	struct ra_source src;
	struct ra_pairer pairer;
	struct ra_options opt;
	struct ra_ev *ev;		/* owned; NULL but with opt.keep_events */
	size_t nr_ev, cap_ev;		/* nr_ev: the events read */
	/* Without the events: counts per name in intervals of `width` ns
	 * from the first event (1, 10, 100 ... ns, the finest that makes
	 * fewer than 1000 intervals, coarsened as the trace goes on; or the
	 * interval asked for), summed into the rates at the end. */
	struct ra_rate_counts *fine;	/* owned, per name */
	uint32_t nr_fine;
	uint64_t width;
	int64_t fine_from;		/* the first event's time */
	bool too_fine;			/* the interval asked for cannot fit */
	struct ra_pair *pairs;		/* owned */
	size_t nr_pairs, cap_pairs;
	struct ra_key_stats *keys;	/* owned, per key */
	uint32_t nr_keys;
	uint64_t *name_counts;		/* owned, per name */
	uint64_t lost_events, lost_packets;
	/* rates (ra_stats_finish) */
	int64_t interval_ns;
	uint32_t nr_buckets;
	uint64_t *rates;		/* owned: [name * nr_buckets + bucket] */
	struct ra_dur_stats *dur;	/* owned, per pair type */
};

/* Read every event of `dirs` and compute everything. Returns 0 or -errno
 * (message in err). ra_stats_free in every case. */
int ra_stats_run(struct ra_stats *s, const char *const *dirs, size_t nr,
		 const struct ra_options *opt, char *err, size_t errlen);
void ra_stats_free(struct ra_stats *s);

/* Bucket of a duration in the histogram; its lower bound. */
unsigned ra_hist_bucket(int64_t ns);
int64_t ra_hist_lower(unsigned bucket);

/* a - b, saturated to the int64_t range (timestamps come from untrusted
 * traces: their differences must not overflow). */
int64_t ra_ns_diff(int64_t a, int64_t b);

/* Parse "10ms", "250us", "1s", "500ns", "2.5ms". -EINVAL if not > 0. */
int ra_parse_duration(const char *s, int64_t *ns);
/* "1.234ms" style, 3 significant digits. */
void ra_format_duration(int64_t ns, char *out, size_t len);
/* "512 B", "1.5 KiB", "3.4 MiB" ... (powers of 1024). */
void ra_format_bytes(uint64_t b, char *out, size_t len);
/* "2026-11-21 06:52:29.123456789" UTC. */
void ra_format_wall(int64_t ns, char *out, size_t len);

/* --- kernel analyses (kernel.c, ksyscalls.c, kio.c, kcpu.c, kirq.c) --- */

/* A log-bucket (HDR-style) histogram of durations in ns (loghist.c):
 * exact count, total, min and max; percentiles within 1/128 of their
 * value (the middle of a bucket 1/64 of its values wide; values below 128
 * exact). Memory grows with the range of the values (512 bytes per power
 * of two reached), never with their number. Zero-initialised = empty. */
#define RA_LOGHIST_SUB 64
#define RA_LOGHIST_ROWS 58
struct ra_loghist {
	uint64_t count;
	uint64_t sum;		/* saturates at UINT64_MAX */
	int64_t min, max;
	uint64_t **rows;	/* owned, allocated on first use */
};

/* Count one duration (negative ones as 0). 0 or -ENOMEM. */
int ra_loghist_add(struct ra_loghist *h, int64_t ns);
/* Nearest-rank percentile pct (0..100]; 0 when empty. */
int64_t ra_loghist_percentile(const struct ra_loghist *h, double pct);
/* Add src's counts to dst (per-process totals of per-thread ones). 0 or -ENOMEM. */
int ra_loghist_merge(struct ra_loghist *dst, const struct ra_loghist *src);
void ra_loghist_free(struct ra_loghist *h);

/* The analyses of kernel events (ringtrace's and LTTng's kernel traces:
 * docs/analyze.md), chosen by these bits. */
enum ra_ksection {
	RA_K_SYSCALLS = 1,	/* system calls: latency, errors, per process/thread */
	RA_K_IO = 2,		/* block requests, bytes per process, sync calls */
	RA_K_CPU = 4,		/* CPU time per CPU, process and thread */
	RA_K_IRQ = 8,		/* hard and soft interrupts */
	RA_K_SCHED = 16,	/* wakeup latency, preemptions, migrations (ksched.c) */
};

struct ra_kopts {
	unsigned sections;	/* enum ra_ksection bits */
	unsigned top;		/* rows and outliers shown per table */
	/* The window analysed: called once with the first event's time, it
	 * sets [*begin, *end) (left as INT64_MIN, INT64_MAX: everything).
	 * NULL: everything. */
	void (*window)(void *arg, int64_t first_ns, int64_t *begin, int64_t *end);
	void *window_arg;
	/* Called about every million events with the events read so far and
	 * the time reached (a progress line); NULL: none. */
	void (*progress)(void *arg, uint64_t events, int64_t ns);
	void *progress_arg;
	/* Leave out the sections whose events the traces lack (a set
	 * without a kernel trace gives no section) instead of failing:
	 * what `report` shows when it can. */
	bool skip_missing;
};

struct ra_kernel;		/* opaque: the results */

/* Read the kernel traces among dirs (env domain "kernel"; other traces
 * are skipped) in one streamed pass and compute opt->sections. Returns 0,
 * or -errno with a message in err: no kernel trace, none of the events a
 * section needs (the message says what to record), a damaged trace, out
 * of memory. *out is set on success only; ra_kernel_free it. */
int ra_kernel_run(const char *const *dirs, size_t nr, const struct ra_kopts *opt,
		  struct ra_kernel **out, char *err, size_t errlen);
void ra_kernel_write_text(FILE *f, const struct ra_kernel *k);
/* One JSON object (docs/analyze.md). */
void ra_kernel_write_json(FILE *f, const struct ra_kernel *k);
/* The sections computed (enum ra_ksection bits). */
unsigned ra_kernel_sections(const struct ra_kernel *k);
void ra_kernel_free(struct ra_kernel *k);

/* --- kernel state: threads and CPUs over time (kstate.c) --------------- */

/*
 * What each thread of a kernel trace (ringtrace's or LTTng's event names:
 * docs/kernel.md) was doing, streamed from sched_switch, sched_waking,
 * sched_wakeup(_new), sched_migrate_task, syscall_entry_X/syscall_exit_X,
 * irq_handler_entry/exit, softirq_entry/exit, hrtimer_expire_entry/exit,
 * timer_expire_entry/exit,
 * block_rq_issue/complete, lttng_statedump_process_state,
 * sched_process_fork/exit/free, task_newtask (CLONE_THREAD: its creator's
 * process) and task_rename, in timestamp order. The
 * other events are ignored. Memory grows with the number of threads, CPUs
 * and block requests in flight, never with the number of events.
 *
 * A thread is, from one event to the next:
 *   RUNNING   on a CPU (from sched_switch's next_tid, or from any of its
 *             kernel events on a CPU whose thread is not known yet);
 *   RUNNABLE  waiting for a CPU: woken (sched_waking, else sched_wakeup)
 *             or preempted (switched out with prev_state R);
 *   BLOCKED   switched out asleep (prev_state S or other);
 *   IOWAIT    switched out uninterruptible (prev_state D: disk I/O,
 *             or another kernel wait that cannot be interrupted);
 *   DEAD      switched out as exiting (X or Z).
 * Each span of a state is reported when it ends (ra_kstate_ops.span); the
 * spans still open are reported, flagged, by ra_kstate_finish.
 *
 * Who woke a thread: the interrupt, softirq or timer the waking CPU was
 * running (irq_handler_entry .. exit, softirq_entry .. exit,
 * hrtimer/timer_expire_entry .. exit), I/O completion when a
 * block_rq_complete came before it in that interrupt (or, without irq
 * events, on that CPU since its last sched_switch), else the thread that
 * ran on the waking CPU (its tid context, else sched_switch's view); tid 0
 * (the idle task) means an interrupt whose events were not recorded.
 */
enum ra_kstate_kind {
	RA_KS_UNKNOWN,		/* not seen yet */
	RA_KS_RUNNING,
	RA_KS_RUNNABLE,
	RA_KS_BLOCKED,
	RA_KS_IOWAIT,
	RA_KS_DEAD,
	RA_KS_NR
};

enum ra_kwaker_kind {
	RA_WAKER_NONE,		/* not woken (preempted), or unknown */
	RA_WAKER_THREAD,	/* tid */
	RA_WAKER_IRQ,		/* irq (-1: an interrupt of the idle CPU) */
	RA_WAKER_SOFTIRQ,	/* irq = vector */
	RA_WAKER_TIMER,		/* a timer expiring */
	RA_WAKER_IO,		/* a block request completing: dev */
};

struct ra_kwaker {
	uint8_t kind;		/* enum ra_kwaker_kind */
	int32_t irq;
	int64_t tid;
	uint64_t dev;
	uint32_t cpu;		/* where the waking ran */
};

#define RA_KCOMM_LEN 24

struct ra_ks_thread {
	int64_t tid;
	int64_t pid;		/* its process; -1 unknown */
	char comm[RA_KCOMM_LEN];	/* NUL-terminated */
	bool kthread;		/* a kernel thread (state dump type, ppid 2) */
	uint8_t state;		/* enum ra_kstate_kind */
	bool preempted;		/* RUNNABLE: preempted, not woken */
	uint32_t cpu;		/* where it runs, or ran last; UINT32_MAX */
	int64_t since;		/* start of its state */
	int32_t syscall;	/* index in ra_kstate.syscalls it is in, -1 */
	int64_t syscall_ns;	/* its entry */
	struct ra_kwaker waker;	/* what made it RUNNABLE (or woke it last) */
};

/* A span of one thread in one state, [begin, end). */
struct ra_kspan {
	const struct ra_ks_thread *th;
	uint8_t state;		/* enum ra_kstate_kind */
	bool open;		/* still open at the end of the trace */
	bool preempted;		/* RUNNABLE: preempted, not woken */
	uint32_t cpu;		/* RUNNING: its CPU; RUNNABLE: the CPU it ran
				 * on next (UINT32_MAX if the trace ended) */
	int64_t begin, end;
	int32_t syscall;	/* BLOCKED/IOWAIT: the syscall it slept in, -1 */
	struct ra_kwaker waker;	/* BLOCKED/IOWAIT: what ended it;
				 * RUNNABLE: what made it runnable */
};

/* A block request, reported at its completion (or at the end, open). */
struct ra_ks_io {
	uint64_t dev, sector;
	uint64_t bytes;
	bool write;		/* rwbs holds 'W' */
	bool sync;		/* rwbs holds 'F' or 'S' (flush, sync) */
	bool open;		/* not completed when the trace ended */
	int64_t issue_ns;	/* INT64_MIN: issue not recorded */
	int64_t complete_ns;
	const struct ra_ks_thread *issuer;	/* NULL: unknown */
};

/* What a consumer of the model is told; any member may be NULL. The
 * pointers passed are valid during the call only. */
struct ra_kstate_ops {
	void (*span)(void *arg, const struct ra_kspan *sp);
	/* A completed system call [begin, end) of th; ret: its return value. */
	void (*syscall)(void *arg, const struct ra_ks_thread *th, int32_t syscall,
			int64_t begin, int64_t end, int64_t ret);
	void (*io)(void *arg, const struct ra_ks_io *io);
	void (*migrate)(void *arg, const struct ra_ks_thread *th, uint32_t from,
			uint32_t to, int64_t ns);
};

struct ra_ks_cpu {
	int64_t tid;		/* running: -1 unknown */
	int64_t since;
	uint32_t irq_depth, softirq_depth, timer_depth;
	int32_t irq, softirq;	/* innermost */
	bool io_done;		/* a block_rq_complete in this context */
	uint64_t io_dev;
};

#define RA_KSTATE_MAX_THREADS (1u << 20)	/* threads past it are ignored */
#define RA_KSTATE_MAX_CPUS 4096
#define RA_KSTATE_MAX_IO (1u << 16)		/* block requests in flight */

struct ra_ks_io_slot;

struct ra_kstate {
	struct ra_kstate_ops ops;
	void *arg;
	struct ra_ks_thread *th;		/* owned */
	uint32_t nr_th, cap_th;
	uint32_t *th_slots;		/* owned: open addressing, index + 1 */
	uint32_t nr_th_slots;
	struct ra_ks_cpu *cpu;		/* owned, per CPU */
	uint32_t nr_cpu;
	struct ra_strtab syscalls;	/* names without syscall_entry_ */
	struct ra_strtab irq_names;	/* "irq N name" */
	int32_t *irq_name;		/* owned: irq -> index in irq_names */
	uint32_t nr_irq_name;
	const struct rtr_event_class *classes;	/* the trace set's (rtr_event_classes) */
	size_t nr_classes;
	uint8_t *kind;			/* owned, per event class: what it is */
	int32_t *kind_sc;		/* owned, per event class: syscall index */
	struct ra_ks_io_slot *io;		/* owned: requests in flight */
	uint32_t nr_io;
	uint64_t threads_dropped, io_dropped;
	int64_t last_ns;
};

/* `ops` and `arg`: what to call; ops may be NULL. */
void ra_kstate_init(struct ra_kstate *ks, const struct ra_kstate_ops *ops, void *arg);
/* Feed the next event of trace set t (timestamp order). 0, or -ENOMEM. */
int ra_kstate_feed(struct ra_kstate *ks, const struct rtr_trace *t,
		   const struct rtr_event *raw);
/* Report the spans and requests still open, up to end_ns. */
void ra_kstate_finish(struct ra_kstate *ks, int64_t end_ns);
/* What ra_kstate_read saw of the traces. */
struct ra_kstate_span {
	int64_t first_ns, last_ns;
	uint64_t lost_events, lost_packets;
};
/* Feed every event of the traces in dirs to ks (initialised), then finish it
 * at the last event's time. After each event, `each` (may be NULL) runs with
 * arg, and *ops_err (the ops' own error, may be NULL) is checked: a negative
 * value there stops the read. `span` (may be NULL) gets the traces' first and
 * last times and lost counts. 0, or -errno with err set: -ENOMEM (ks or the
 * ops ran out of memory), ra_source_open's and ra_source_next's errors. */
int ra_kstate_read(struct ra_kstate *ks, const char *const *dirs, size_t nr,
		   void (*each)(void *arg), void *arg, const int *ops_err,
		   struct ra_kstate_span *span, char *err, size_t errlen);
/* Thread tid, or NULL if never seen. */
const struct ra_ks_thread *ra_kstate_thread(const struct ra_kstate *ks, int64_t tid);
/* The name of process pid: its main thread's comm, else "?". */
const char *ra_kstate_process_name(const struct ra_kstate *ks, int64_t pid);
/* Describe a waker: "thread NAME tid T", "irq 36 (virtio1-req.0)",
 * "softirq TIMER", "timer", "I/O completion on 8:0". */
void ra_kwaker_label(const struct ra_kstate *ks, const struct ra_kwaker *w, char *out,
		     size_t len);
/* "RUNNING" ... for enum ra_kstate_kind. */
const char *ra_kstate_name(unsigned state);
/* The name of syscall index sc ("?" for -1). */
const char *ra_kstate_syscall(const struct ra_kstate *ks, int32_t sc);
void ra_kstate_free(struct ra_kstate *ks);

/* --- explain: where a slow interval of a thread went (explain.c) ------- */

/*
 * The interval to explain: [begin, end) of thread tid, and how it was
 * chosen (text for the output). Found by a first pass over the traces
 * (ra_explain_slowest, ra_explain_event) or given; ra_explain_run reads
 * them a second time: two passes, each streamed, instead of a look-back
 * buffer whose size would bound how long an interval can be explained.
 */
struct ra_explain_target {
	int64_t begin, end;
	int64_t tid;
	char how[256];
};

/* The slowest pair "BEGIN,END" (full event names) of the traces, paired
 * per key_field (NULL: per thread); its thread is the end event's (vtid,
 * else tid context). 0, -ENOENT (no such pair: message), -EINVAL (bad
 * spec), -ENOMEM, or the reader's -errno. */
int ra_explain_slowest(const char *const *dirs, size_t nr, const char *pair,
		       const char *key_field, struct ra_explain_target *t, char *err,
		       size_t errlen);

/* Events named `name` for which match(arg, src, ev) is true; each ends an
 * interval that starts at its thread's begin (the pairing name patterns of
 * ra_pairer_init, e.g. app:req_begin for app:req_end), else at its
 * thread's previous event of that name. The longest such interval. Same
 * returns as ra_explain_slowest. */
typedef bool (*ra_explain_match_fn)(void *arg, const struct ra_source *src,
				    const struct ra_event *ev);
int ra_explain_event(const char *const *dirs, size_t nr, const char *name,
		     ra_explain_match_fn match, void *arg, struct ra_explain_target *t,
		     char *err, size_t errlen);

struct ra_explain;

/* Explain t over the traces (their kernel events: kstate). 0, or -errno
 * (message in err); ra_explain_free(*out) in every case. */
int ra_explain_run(const char *const *dirs, size_t nr, const struct ra_explain_target *t,
		   unsigned top, struct ra_explain **out, char *err, size_t errlen);
/* Its first line names the most likely culprit, with the evidence. */
void ra_explain_write_text(FILE *f, const struct ra_explain *x);
void ra_explain_write_json(FILE *f, const struct ra_explain *x);
/* The interval x explains. */
const struct ra_explain_target *ra_explain_target_of(const struct ra_explain *x);
void ra_explain_free(struct ra_explain *x);

/* --- writers ------------------------------------------------------------ */

enum ra_section { RA_RATES = 1, RA_DURATIONS = 2, RA_THREADS = 4 };

void ra_write_text(FILE *f, const struct ra_stats *s, unsigned sections);
void ra_write_json(FILE *f, const struct ra_stats *s, unsigned sections);

/* JSON string with quotes (rt_json_escape with RT_JSON_HTML: '<', '>',
 * '&' and controls escaped, so the text can sit inside an HTML <script>;
 * invalid UTF-8 bytes become U+FFFD). */
void ra_json_string(FILE *f, const char *s, size_t len);

/* Chrome trace-event JSON (see docs/export.md). 0 or -errno (message). */
int ra_export_chrome(FILE *f, const char *const *dirs, size_t nr,
		     const struct ra_options *opt, char *err, size_t errlen);

/* The report's kernel lanes (klanes.c): per CPU, the threads it ran; per
 * thread, its states (kstate.c's spans: state, CPU, syscall, waker); per
 * device, its block requests (issue .. complete). Read in one streamed
 * pass; each lane keeps at most 2 x lane_cap bars (one in a doubling step
 * past that), so memory grows with lanes, not events. */
struct ra_klanes;
/* 0, or -errno (message in err); ra_klanes_free(*out) in every case. */
int ra_klanes_run(const char *const *dirs, size_t nr, size_t lane_cap,
		  struct ra_klanes **out, char *err, size_t errlen);
/* No lane (no kernel events the model reads), or k NULL. */
bool ra_klanes_empty(const struct ra_klanes *k);
/* One JSON object (docs/report.md), times in ns after first_ns. */
void ra_klanes_write_json(FILE *f, const struct ra_klanes *k, int64_t first_ns);
void ra_klanes_free(struct ra_klanes *k);

/* What the HTML report shows besides the stats: each may be NULL. */
struct ra_report_extra {
	const struct ra_kernel *kernel;		/* the kernel analyses (if sections) */
	const struct ra_klanes *klanes;		/* the kernel lanes (if not empty) */
	const struct ra_explain *explain;	/* an interval explained: highlighted */
};

/* The HTML report; at most `lane_cap` events and pairs per timeline lane
 * (more are downsampled). 0 or -errno (message). */
#define RA_REPORT_LANE_CAP 200000
int ra_write_report(FILE *f, const struct ra_stats *s, const struct ra_report_extra *x,
		    const char *title, size_t lane_cap);

#ifdef __cplusplus
}
#endif

#endif /* RINGTRACE_ANALYSIS_H */
