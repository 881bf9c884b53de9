/*
 * kernel_internal.h - what the files of src/kernel share: an event class
 * as the trace writer lays it out (formats.c builds them, trace.c uses
 * them); the pages as a consumer source (source.c, used by writer.c).
 * Same concurrency contract as kernel.h. src/kernel sits on top of
 * src/consumer (it is one of its sources); src/consumer never includes
 * src/kernel.
 */
#ifndef RINGTRACE_KERNEL_INTERNAL_H
#define RINGTRACE_KERNEL_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ringtrace/ringtrace_types.h>

#include "../common/warn.h"
#include "../consumer/consumer.h"
#include "kernel.h"

/* How a field of the raw record becomes a CTF field. */
enum rtk_field_kind {
	RTK_INT,	/* `size` bytes, copied (little-endian both sides) */
	RTK_STR_ARRAY,	/* char[size]: up to the first NUL, then a NUL */
	RTK_STR_DYN,	/* __data_loc char[]: u32 (len << 16 | offset) */
	RTK_BYTES,	/* any other array: u32 length, then the bytes */
	RTK_BYTES_DYN,	/* __data_loc of anything else */
	RTK_PRIO,	/* s32 priority: the kernel's value minus MAX_RT_PRIO (100),
			 * as LTTng's sched events write it (RTK_PRIO_OFFSET) */
};

/* LTTng's kernel traces write a task's priority as p->prio - MAX_RT_PRIO:
 * 20 for nice 0, -1 to -100 for real-time ones (ftrace writes p->prio). */
#define RTK_PRIO_OFFSET 100

struct rtk_field {
	enum rtk_field_kind kind;
	int offset;		/* in the raw record */
	int size;
	int relative;		/* __rel_loc: offset from the field's end */
};

/*
 * What an event says of threads, for the process table behind the
 * contexts pid, procname and prio (procs.c, trace.c). who[0] and who[1]
 * are the two threads an event may name (sched_switch's prev and next;
 * the emitter or another thread); a field of size 0 is absent.
 */
enum rtk_role {
	RTK_ROLE_NONE,
	RTK_ROLE_SWITCH,	/* who[0] prev (the emitter), who[1] next: comm, prio */
	RTK_ROLE_WAKE,		/* who[1]: comm, prio (sched_waking, _wakeup, _wakeup_new) */
	RTK_ROLE_PRIO,		/* who[1]: prio = aux (sched_pi_setprio's newprio) */
	RTK_ROLE_FORK,		/* who[0] parent, who[1] child: comm */
	RTK_ROLE_NEWTASK,	/* who[1] the new task: comm; aux clone_flags */
	RTK_ROLE_EXEC,		/* who[1] the emitter after exec: tid; aux old_pid, name filename */
	RTK_ROLE_RENAME,	/* who[1]: comm (task_rename's newcomm) */
	RTK_ROLE_FREE,		/* who[1]: the thread whose task is freed */
	RTK_ROLE_DUMP,		/* who[1]: tid, pid, comm, prio (/proc's priority) */
};

struct rtk_who {
	struct rtk_field tid, pid, comm, prio;
};

struct rtk_class {
	int ftrace_id;
	uint32_t ctf_id;
	char *name;			/* CTF name */
	uint32_t nr_fields;
	struct rtk_field *fields;
	struct rt_field_desc *descs;	/* names and CTF types, for the metadata */
	char **names;			/* the descs' names, owned */
	int pid_offset;			/* common_pid, the event context's tid */
	enum rtk_role role;
	struct rtk_who who[2];
	struct rtk_field aux, filename;
	bool hidden;			/* for the process table only: not written */
};

/* Mark the class added last as hidden (kernel_internal.h's rtk_class). */
void rtk_formats_hide_last(struct rtk_formats *f);

/*
 * The process table: what is known of each thread (its process, name and
 * priority), for the contexts (procs.c). Fed by the conversion in the
 * order it converts events; a thread not in it is looked up in /proc
 * once.
 */
struct rtk_proc {
	int32_t tid;		/* 0: a free slot */
	int32_t pid;		/* -1: unknown */
	int32_t prio;		/* as /proc's priority (task_prio); RTK_PRIO_UNKNOWN */
	char comm[16];		/* "" unknown */
	bool looked_up;		/* /proc was read for it */
	bool searched;		/* its creation was looked for ahead (trace.c) */
	uint32_t freed;		/* keep_freed: the sweep count + 1 when it was
				 * freed; 0: alive */
};

struct rtk_procs {
	struct rtk_proc *slots;
	size_t cap, used;	/* cap: a power of two, or 0 */
	/* A freed thread is kept until the second rtk_procs_sweep after
	 * its free (else removed at once). */
	bool keep_freed;
	uint32_t sweeps;
	size_t nr_freed;	/* entries marked since the last sweep's count
				 * (at least those still marked) */
};

/* The entry of `tid` (> 0), created (pid and prio unknown, no name) when
 * missing; NULL only when out of memory. */
struct rtk_proc *rtk_procs_get(struct rtk_procs *p, int32_t tid);
/* Move `from`'s entry to `to` (exec by a thread that is not the group
 * leader takes the leader's id), replacing `to`'s. */
void rtk_procs_move(struct rtk_procs *p, int32_t from, int32_t to);
void rtk_procs_remove(struct rtk_procs *p, int32_t tid);
/* Thread `tid` is freed (sched_process_free): removed, or with
 * keep_freed marked for a later sweep. */
void rtk_procs_freed(struct rtk_procs *p, int32_t tid);
/* Remove the threads freed before the previous sweep (keep_freed). */
void rtk_procs_sweep(struct rtk_procs *p);
/* The entry of `tid` with what /proc says filled in when it was never
 * looked up and something is unknown; NULL when out of memory. */
struct rtk_proc *rtk_procs_resolve(struct rtk_procs *p, int32_t tid);
void rtk_procs_free(struct rtk_procs *p);

const struct rtk_class *rtk_formats_class(const struct rtk_formats *f, size_t i);

/*
 * Naming a thread created on another CPU (trace.c): when the conversion
 * meets a thread the table does not know and /proc no longer has (a
 * short-lived one whose creation, recorded on another CPU, is converted
 * later), it calls fn(arg, tid) once for that thread; fn hands pages that
 * are still to be converted to rtk_trace_learn_creation until it returns
 * 1. NULL fn: none (the thread's pid stays -1).
 */
void rtk_trace_lookahead(struct rtk_trace *t, void (*fn)(void *arg, int32_t tid), void *arg);
/* CPU cpu's stream starts again (packet sequence 0, no loss, no time
 * yet): what a snapshot that converts the same pages again, a flight
 * recorder's window, begins with. */
void rtk_trace_restart(struct rtk_trace *t, unsigned cpu);
/* Learn from the page (without converting it) the creation of `tid`
 * (sched_process_fork, task_newtask naming it), as its conversion would.
 * 1 when found, 0 when not (or the page does not parse). */
int rtk_trace_learn_creation(struct rtk_trace *t, const void *page, size_t size, int32_t tid);

/* The ftrace field of the i-th class that LTTng's trace calls `name`
 * (its CTF name), or whose ftrace name is `name`: 0, *ftrace_name (valid
 * as long as f), *text (a string field) and *offset (ftrace's value minus
 * the trace's: RTK_PRIO_OFFSET for the rebased priorities, else 0), or
 * -ENOENT, -ENOMEM. */
int rtk_formats_ftrace_field(const struct rtk_formats *f, size_t i, const char *name,
			     const char **ftrace_name, bool *text, int64_t *offset);

/* The kernel rules' filters (filters.c): one per rule (pattern), compiled
 * at rtk_filters_new (texts NULL, or an entry NULL: no filter; globs and
 * texts must outlive the set). 0 or -EINVAL (a rule's filter does not
 * compile), -ENOMEM, with a message in err. */
struct rtk_filters;
int rtk_filters_new(const char *const *globs, const char *const *texts, size_t n,
		    struct rtk_filters **out, char *err, size_t errlen);
/* The ftrace filter of the i-th class of f (`event` names it in messages),
 * matched by the rules whose now[k] is true: 0 and *text (malloc'ed, or
 * NULL when a matching rule has no filter), 1 when no matching rule can
 * record it (each names a field the event lacks), -EINVAL (ftrace cannot
 * express a filter) or -ENOMEM with a message in err. */
int rtk_filters_event(struct rtk_filters *fl, const bool *now, const struct rtk_formats *f,
		      size_t cls, const char *event, char **text, char *err, size_t errlen);
/* After every event: -EINVAL with a message when a rule matched events
 * but its filter names a field none of them has; else 0. */
int rtk_filters_check(const struct rtk_filters *fl, char *err, size_t errlen);
void rtk_filters_free(struct rtk_filters *fl);

/* The classes from the `from`-th on as the CTF writer takes them (no
 * provider, no log level; stream 0): *ev malloc'ed, *nr of them. 0 or
 * -ENOMEM. */
int rtk_formats_ctf_events(const struct rtk_formats *f, size_t from,
			   struct ctf_event_class **ev, uint32_t *nr);

/*
 * The state dump's records (statedump.c writes them, formats.c declares
 * their event classes, trace.c converts them). Each is one write to the
 * instance's trace_marker_raw, which ftrace stores as an ftrace:raw_data
 * event (its `id` field: the write's first 4 bytes; `buf`: the rest), so
 * that the records are stamped by ftrace's clock in the instance's
 * buffer, in time order with the other events (and kept in a flight
 * recorder's buffer like them). Little-endian, from the write's first
 * byte (the raw_data event's `id` field):
 *    0  u32  id: RTK_DUMP_ID (any other id: not ours, skipped)
 *    4  u32  kind: enum rtk_dump_kind
 *   then for RTK_DUMP_PROCESS, one thread of the machine:
 *    8  s32  tid
 *   12  s32  pid (its process, the thread group)
 *   16  s32  ppid (the parent process)
 *   20  s32  type (LTTng's lttng_thread_type: 0 user, 1 kernel thread)
 *   24  s32  mode (LTTng's lttng_execution_mode: 5 unknown)
 *   28  s32  submode (LTTng's lttng_execution_submode: 0 none)
 *   32  s32  status (LTTng's lttng_process_status, enum rtk_dump_status)
 *   36  u32  cpu (the CPU it last ran on)
 *   40  s32  prio (as /proc/PID/stat's priority: nice + 20, or -1 - the
 *            RT priority; not in the event, for the contexts' table)
 *   44  char name[16] (comm, NUL-padded)
 *   60  end
 *   for RTK_DUMP_PID_NS, the thread's ids in one pid namespace (one
 *   record per namespace it is in, its own first, then each parent up to
 *   the root's, as LTTng's lttng_statedump_process_pid_ns), after its
 *   RTK_DUMP_PROCESS record:
 *    8  s32  tid (in the root namespace)
 *   12  s32  vtid (the thread's id in this namespace)
 *   16  s32  vpid (its process's)
 *   20  s32  vppid (its parent process's, 0 when not in this namespace)
 *   24  s32  ns_level (0: the root namespace)
 *   28  u32  ns_inum (the namespace's inode, /proc/PID/ns/pid's; 0 when
 *            it cannot be known)
 *   32  end
 * A record shorter than its kind's layout, or of an unknown kind, is
 * skipped and counted as an event of unknown class.
 */
#define RTK_DUMP_ID 0x6b747272u	/* "rrtk" as little-endian bytes */

enum rtk_dump_kind {
	RTK_DUMP_START = 1,	/* lttng_statedump_start */
	RTK_DUMP_END = 2,	/* lttng_statedump_end */
	RTK_DUMP_PROCESS = 3,	/* lttng_statedump_process_state */
	RTK_DUMP_PID_NS = 4,	/* lttng_statedump_process_pid_ns */
};

/* LTTng's lttng_process_status values the dump uses. */
enum rtk_dump_status {
	RTK_STATUS_UNNAMED = 0,
	RTK_STATUS_WAIT_CPU = 2,
	RTK_STATUS_ZOMBIE = 4,
	RTK_STATUS_WAIT = 5,
	RTK_STATUS_DEAD = 7,
};

struct rtk_dump_header {
	uint32_t id;
	uint32_t kind;
};

struct rtk_dump_process {
	struct rtk_dump_header h;
	int32_t tid, pid, ppid, type, mode, submode, status;
	uint32_t cpu;
	int32_t prio;
	char name[16];
};

_Static_assert(sizeof(struct rtk_dump_process) == 60, "the dump's layout above");

struct rtk_dump_pid_ns {
	struct rtk_dump_header h;
	int32_t tid, vtid, vpid, vppid, ns_level;
	uint32_t ns_inum;
};

_Static_assert(sizeof(struct rtk_dump_pid_ns) == 32, "the dump's layout above");

/*
 * Write the state dump (start, every thread of the machine with its pid
 * namespaces' ids, end) through
 * `put`, one record per call (statedump.c). Threads that vanish during
 * the walk are left out. Returns the number of records written, the
 * first negative value of `put` (no message: put's caller says why), or
 * -errno of /proc with a message in err.
 */
long rtk_statedump_walk(int (*put)(const void *rec, size_t len, void *arg), void *arg,
			char *err, size_t errlen);

/* The state dump as ftrace pages of CPU `cpu` (the one the walk began
 * on), stamped as the walk goes with the instance's clock (clock_tsc:
 * x86-tsc, else mono), handed to fn one by one (statedump.c). Returns the
 * number of records, or -EINVAL (f declares no dump classes), -ENOMEM,
 * fn's negative value, -errno of /proc, with a message in err. */
long rtk_statedump_pages(const struct rtk_formats *f, bool clock_tsc,
			 int (*fn)(unsigned cpu, const void *page, size_t size, void *arg),
			 void *arg, char *err, size_t errlen);

/* raw_data's ftrace type id and the offset of its `id` field, the dump's
 * first byte: 0, or -ENOENT when the dump's classes are not declared. */
int rtk_formats_dump_layout(const struct rtk_formats *f, int *type, int *base);

/* The records (events, not padding nor time stamps) of an ftrace page
 * of `size` bytes, by its event headers alone (trace.c's layout), or -1
 * when they do not fit the page. */
long rtk_page_records(const void *page, size_t size);

/* Whether the ftrace page says events were lost before it (its commit's
 * missed-events flag, trace.c's layout). */
bool rtk_page_missed(const void *page, size_t size);
/* Whether a page read is less than half full: the page the kernel was
 * writing (a read that caught up with it); a short read counts too. */
bool rtk_page_partial(const void *page, size_t size);

/* The class of the raw record `rec` (`size` bytes: the ftrace event,
 * its common fields first), or NULL: an event of this formats' classes,
 * or a state dump record. */
const struct rtk_class *rtk_formats_record_class(const struct rtk_formats *f, const char *rec,
						 int size);

/* The kernel trace's one stream event context: the emitting thread
 * (common_pid), as LTTng's kernel traces name it. */
#define RTK_CONTEXT_NAME "tid"

/* The stream event context of the trace's packets (their names and CTF
 * types, in record order: tid, then pid, procname, prio when asked;
 * constant, owned by the trace): *nr of them. */
const struct rt_field_desc *rtk_trace_contexts(const struct rtk_trace *t, uint32_t *nr);

/* ---- readers.c: an instance's per-CPU buffers ---- */

/*
 * The files per_cpu/cpuN/trace_pipe_raw of N CPUs, read page by page,
 * directly or through one reader thread per CPU (readers.c says how).
 * Concurrency: rtk_cpus_read of a CPU by one thread at a time (its
 * converter), distinct CPUs' at once; rtk_cpus_wait, rtk_cpus_peek and
 * rtk_cpus_sweep by any thread; rtk_cpus_start and rtk_cpus_stop by one thread, ordered
 * before the converters' first reads (start) and safe beside their reads
 * (stop); open and close alone.
 */
struct rtk_cpus;
/* Open the files (path(cpu) names CPU cpu's; a missing one is a CPU
 * without pages) with pages of page_size. 0, -ENOMEM, -errno of open or
 * path, with a message in err. */
int rtk_cpus_open(struct rtk_cpus **out, unsigned nr, size_t page_size,
		  int (*path)(unsigned cpu, char *buf, size_t len, void *arg), void *arg,
		  char *err, size_t errlen);
/* Start a reader per CPU, its queue of buffer_kb (at most 16 MiB; the
 * first start's size stays), its period period_ms (it reads every page
 * there is at least this often, and whenever the kernel wakes it); ring:
 * a full queue drops its oldest page (a flight recorder's window, copied
 * by rtk_cpus_peek; no reads while the readers run), else a full queue's
 * reader moves the pages into its backlog (at most backlog_kb; 0: none),
 * read after the queue, and waits for the converter only when that is
 * full too. 0 (also when running), -ENOMEM, -errno of eventfd or
 * pthread_create, with a message in err. */
int rtk_cpus_start(struct rtk_cpus *cs, uint64_t buffer_kb, uint64_t backlog_kb,
		   unsigned period_ms, bool ring, char *err, size_t errlen);
/* The records of the pages a ring dropped on cpu so far. */
uint64_t rtk_cpus_dropped(struct rtk_cpus *cs, unsigned cpu);
/* The bytes of pages queued on cpu now, backlog included (any thread). */
uint64_t rtk_cpus_queued(struct rtk_cpus *cs, unsigned cpu);
/* What cpu's reader did so far (any thread; its counts, kernel_* 0). */
void rtk_cpus_stats(struct rtk_cpus *cs, unsigned cpu, struct rtk_reader_stats *st);
/* Wake the readers and join them; the pages they queued stay to be read.
 * Prompt: a reader sleeping in poll() wakes at once. */
void rtk_cpus_stop(struct rtk_cpus *cs);
/* The next page of CPU cpu (rtk_pages' read): its size with *page valid
 * until the next read of that CPU, 0 when there is none now, -errno with
 * a message in err. */
long rtk_cpus_read(struct rtk_cpus *cs, unsigned cpu, const void **page, char *err,
		   size_t errlen);
/* A copy into buf (page_size bytes) of the i-th queued page of cpu from
 * the one its last read returned on (rtk_pages' peek; i = 0: that one,
 * or the next to be read when it was given back): its size, 0 when there
 * is none (or no queue). */
long rtk_cpus_peek(struct rtk_cpus *cs, unsigned cpu, size_t i, void *buf);
/* Have every reader move what its CPU's buffer holds now into its queue,
 * and wait for them (timeout_ms at most: a reader whose queue and
 * backlog are full waits for its converter). 1 when every reader did (or none runs), 0 at
 * the timeout. Any thread. */
int rtk_cpus_sweep(struct rtk_cpus *cs, int timeout_ms);
/* Wait until cpu's queue holds a quarter of its pages, `fd` (-1: none) is
 * readable or timeout_ms passed. 1 when fd is readable, else 0. */
int rtk_cpus_wait(struct rtk_cpus *cs, unsigned cpu, int fd, int timeout_ms);
void rtk_cpus_close(struct rtk_cpus *cs);

/* ---- source.c ---- */

struct rtk_source_stream {
	uint64_t consumed;		/* packets taken, in packet_size units */
	bool more;			/* the last get found a packet */
	uint64_t lost;			/* the kernel's count, last read */
	uint64_t bad;			/* pages skipped: relaxed atomic */
	bool staged;			/* snap holds a staged snapshot */
	char **snap;			/* a snapshot's packets, oldest first */
	size_t *snap_len;
	size_t nr_snap, cap_snap, cap_len;
};

struct rtk_source {
	struct rtk_pages pages;
	struct rtk_trace *trace;	/* converts, packets only */
	uint64_t packet_size;
	struct rtk_source_stream *s;	/* [pages.nr_cpus] */
	size_t page_size;
	char *ahead;			/* a page looked at ahead (lookahead) */
	bool window;			/* snapshots copy the readers' pages */
	char *snap_page;		/* a window's page (snapshots) */
	pthread_mutex_t err_lock;	/* err, errmsg */
	int err;			/* the first read error, not yet taken */
	char errmsg[256];
};

/* `pages` converted by `t` as a consumer source (*src), its batch and
 * capacity from the buffer's size; window: snapshots copy the pages the
 * readers keep (rtk_writer_opts.window). 0 or -ENOMEM. */
int rtk_source_init(struct rtk_source *ks, const struct rtk_pages *pages, struct rtk_trace *t,
		    uint64_t buffer_size_kb, bool window, struct cons_source *src);
void rtk_source_fini(struct rtk_source *ks);
/* Read every CPU's buffer into the snapshot lists that the next
 * snapshot's snap_range hands out. 0 or -ENOMEM. */
int rtk_source_snap_stage(struct rtk_source *ks);
/* Convert `page` and append it to CPU `cpu`'s staged list. 0, -EINVAL (a
 * page that does not parse, a CPU without a stream), -ENOMEM, with a
 * message in err. */
int rtk_source_snap_page(struct rtk_source *ks, unsigned cpu, const void *page, size_t size,
			 char *err, size_t errlen);
/* The first read error not yet taken (take: taken now): its -errno
 * with "cannot read the kernel's buffers: WHY" in msg, or 0. Any thread. */
int rtk_source_error(struct rtk_source *ks, bool take, char *msg, size_t len);
/* Pages skipped because they did not parse (any thread). */
uint64_t rtk_source_bad_pages(const struct rtk_source *ks);
/* The formats' classes as the consumer reads them (stream class 0). */
void rtk_source_classes(const struct rtk_formats *f, struct cons_classes *cl);

/* ---- probe_resolve.c, probe_events.c: user-space probes ---- */

/* Where a probe goes and what it captures, as uprobe_events takes it. */
struct rtk_probe_site {
	char path[4096];	/* the binary, absolute, symbolic links resolved */
	uint64_t offset;	/* of the probed instruction in the file */
	uint64_t ref_ctr;	/* file offset of an SDT semaphore; 0: none */
	bool ret;		/* a return probe (r:), else an entry probe (p:) */
	char args[1024];	/* fetch arguments, each " NAME=FETCH:TYPE" */
};
/* Resolve an elf:/sdt: probe (kernel.h's struct rtk_probe). 0, or
 * -EINVAL (not such a probe, a path uprobe_events cannot take), -ENOENT
 * (no such file, function or SDT note; a stripped binary without its debug
 * file), -ENOEXEC (not an x86-64 ELF executable or library), -E2BIG,
 * -errno, with a message in err. */
int rtk_probe_resolve(const char *spec, struct rtk_probe_site *s, char *err, size_t errlen);
/* A new group name for one instance's probes (RTK_PROBE_GROUP_PREFIX, this
 * process's pid, '_', a number of this process). */
#define RTK_PROBE_GROUP_PREFIX "ringtrace_"
void rtk_probe_group(char *out, size_t len);
/* Define uprobe event GROUP/EVENT at s. 0 or -errno of uprobe_events
 * (with the kernel's error_log line) and a message in err. */
int rtk_probe_define(const char *group, const char *event, const struct rtk_probe_site *s,
		     char *err, size_t errlen);
/* Remove every uprobe event of the group (disabled first). */
void rtk_probes_remove(const char *group);
/* Remove the uprobe events of groups whose owner is gone; the number. */
int rtk_probes_remove_stale(void);

#endif /* RINGTRACE_KERNEL_INTERNAL_H */
