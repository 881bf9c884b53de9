/*
 * kernel.h - the kernel domain through ftrace: a private tracefs instance
 * per session, the kernel's events and system calls, and the conversion
 * of the instance's ring-buffer pages (per_cpu/cpuN/trace_pipe_raw) into a
 * CTF 1.8 trace that LTTng's kernel traces' readers understand
 * (docs/kernel.md).
 *
 * What it offers:
 *  - rtk_access: whether this process may use the kernel domain (root, or
 *    write access to tracefs, mounted here when it is not yet);
 *  - rtk_instance_*: create, configure, start, stop and remove an instance
 *    named "ringtrace-OWNERPID-SESSION", so that instances left by a
 *    process that died (kill -9) are found and removed by
 *    rtk_instances_remove_stale; write the state dump of every process
 *    and thread into its buffer (rtk_instance_statedump); per-CPU
 *    reader threads that empty its buffers as they fill
 *    (rtk_instance_readers_start);
 *  - rtk_list_*: the tracepoints and system calls this kernel offers;
 *  - rtk_probe_*: user-space probes (uprobe events on a function's entry
 *    or return, or an SDT probe, of any ELF binary) checked here and
 *    recorded by an instance as events of their own (rtk_config.probes);
 *  - rtk_formats_*: event classes built from ftrace's format files, named
 *    and laid out as LTTng's kernel traces have them (sched_switch's
 *    prev_tid, syscall_entry_NAME/syscall_exit_NAME, ...);
 *  - rtk_trace_*: raw pages converted into CTF packets (one stream per
 *    CPU, one packet per ftrace page, lost events as the packets'
 *    events_discarded);
 *  - rtk_writer_*: a kernel trace written by src/consumer from an
 *    instance's pages (the kernel is one of the consumer's sources).
 *
 * Errors: negative errno; functions taking `err` also write one line
 * saying what failed into it (NUL-terminated, truncated to errlen).
 *
 * Concurrency: no global state but libtracefs's own (the tracing
 * directory's path, found once). An instance, a formats table, a trace
 * and a writer are each used by one thread at a time (a writer reads its
 * instance's pages: the caller serialises the two, rtk_writer_error and
 * rtk_writer_stats included), but for rtk_instance_stop,
 * rtk_instance_readers_stop and rtk_instance_buffer_used, which may run
 * beside the writer's reads, for a trace's rtk_trace_packet and
 * rtk_trace_lost_packet of distinct CPUs, which may run at once, and for
 * a writer's converters (rtk_writer_start), which run beside its calls;
 * distinct ones are independent. An instance's readers
 * (rtk_instance_readers_start) are threads of their own that touch only
 * their CPU's file and queue; a writer's converters, one per CPU, read
 * their CPU's pages into its stream.
 * Nothing here is for a traced program's fast path: every call makes
 * system calls and may allocate.
 */
#ifndef RINGTRACE_KERNEL_H
#define RINGTRACE_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../ctf/ctf_metadata.h"

/* Instance names: RTK_INSTANCE_PREFIX, the owner's pid, '-', the session
 * name with every byte outside [A-Za-z0-9_.] replaced by '_'. */
#define RTK_INSTANCE_PREFIX "ringtrace-"

/*
 * Whether the kernel domain can be used: tracefs is mounted (mounted now
 * at its usual place when it is not) and its instances directory is
 * writable by this process. Returns 0, or -EACCES (not root and no write
 * access), -ENODEV (no tracefs), with a message in err.
 */
int rtk_access(char *err, size_t errlen);

/* How a session's instance records. */
struct rtk_config {
	const char *session;		/* part of the instance's name */
	bool clock_tsc;			/* x86-tsc, else mono (both: ringtrace's clocks) */
	uint64_t buffer_size_kb;	/* per CPU; 0: the kernel's default */
	bool overwrite;			/* flight recorder; else new events are lost */
	/* Tracepoints: globs matched against "system:event" and "event";
	 * all_events: every tracepoint but the syscalls system. */
	const char *const *events;
	size_t nr_events;
	bool all_events;
	/* System calls: globs on the name (write, read, ...); all_syscalls:
	 * every one. */
	const char *const *syscalls;
	size_t nr_syscalls;
	bool all_syscalls;
	/* Filters (LTTng's language, docs/filters.md) of the events' and the
	 * system calls' globs, index for index; NULL (the array or an entry):
	 * none. Translated into each event's ftrace filter (src/filter); an
	 * event several globs match is recorded when one of their filters
	 * passes. */
	const char *const *event_filters;
	const char *const *syscall_filters;
	/* Processes to record (set_event_pid, their children included as they
	 * fork); nr_pids 0: every process. */
	const pid_t *pids;
	size_t nr_pids;
	/* The contexts the trace will carry (enum rtk_context bits, declared
	 * below): when any, the events that tell the process table about
	 * new, renamed, exec'ed and freed threads are enabled too, for the
	 * conversion only (not written into the trace unless asked for). */
	unsigned contexts;
	/* Events left out although a glob matches them: globs matched as the
	 * events' ("system:event" and "event") and the system calls' names
	 * (a trigger rule's --exclude-name). */
	const char *const *excludes;
	size_t nr_excludes;
	/* The sides of the system calls recorded: RTK_SYSCALL_ENTRY and/or
	 * RTK_SYSCALL_EXIT; 0: both. */
	unsigned syscall_sides;
	/* A trigger's instance (the daemon's event-rule-matches conditions):
	 * named "ringtrace-OWNERPID-trigger-" then `session` with its unusual
	 * bytes replaced, a name no session's instance has (their names never
	 * hold a '-' there); removed as stale like the sessions' ones. */
	bool trigger;
	/* User-space probes (uprobe events), each recorded as its own event
	 * class (docs/probes.md). */
	const struct rtk_probe *probes;
	size_t nr_probes;
	/* Wake a poll(2) of rtk_instance_poll_fd as soon as one event is
	 * recorded (buffer_percent 0), instead of ftrace's default of half a
	 * buffer. */
	bool wake_on_event;
};

/*
 * A user-space probe: the kernel's uprobe at a function's entry
 * ("elf:PATH:FUNC", its first integer arguments captured), its return
 * ("elf:PATH:FUNC%return", the value returned) or an SDT probe
 * ("sdt:PATH:PROVIDER:NAME", the note's arguments), recorded as event
 * `name` (docs/probes.md says what is captured and named how).
 */
struct rtk_probe {
	const char *name;	/* [A-Za-z_][A-Za-z0-9_]*, at most RTK_PROBE_NAME_MAX */
	const char *spec;
	/* Its filter (LTTng's language, on the probe's fields: the captured
	 * arguments, ret, probe_ip, probe_func), set as the uprobe event's
	 * ftrace filter; NULL: none. */
	const char *filter;
};
#define RTK_PROBE_NAME_MAX 63
/* Whether the probe's name is one ftrace takes and the probe resolves
 * (the file, the function or note, the debug information): 0, or
 * -EINVAL, -ENOENT, -ENOEXEC, -errno with a message in err. Reads the
 * file; needs no tracefs. */
int rtk_probe_check(const char *name, const char *spec, char *err, size_t errlen);
int rtk_probe_check_name(const char *name, char *err, size_t errlen);

#define RTK_SYSCALL_ENTRY 1u
#define RTK_SYSCALL_EXIT 2u

struct rtk_instance;
struct rtk_formats;
struct rtk_trace;

/*
 * Create the instance, configure it as cfg says and load the enabled
 * events' formats. Tracing is off until rtk_instance_start. Returns 0 and
 * *out, or -EEXIST (an instance of that name exists), -ENOENT (a name or
 * glob matched no event), -EINVAL (a filter ftrace cannot express or
 * refuses, one naming a field none of its events has, or a
 * setting), -EACCES, -ENOMEM, -errno of tracefs, with a message in err;
 * nothing is left behind on error.
 */
int rtk_instance_create(const struct rtk_config *cfg, struct rtk_instance **out,
			char *err, size_t errlen);
/* tracing_on = 1 / 0. Returns 0 or -errno. */
int rtk_instance_start(struct rtk_instance *in);
int rtk_instance_stop(struct rtk_instance *in);
/* The instance's name, and the formats of its enabled events (owned by the
 * instance). */
const char *rtk_instance_name(const struct rtk_instance *in);
const struct rtk_formats *rtk_instance_formats(const struct rtk_instance *in);
/* Number of enabled events (tracepoints and syscall entries/exits). */
size_t rtk_instance_nr_events(const struct rtk_instance *in);
/*
 * Write the state dump into the instance's buffer: every process and
 * thread of the machine (from /proc) as lttng_statedump_process_state
 * events, each followed by its lttng_statedump_process_pid_ns events,
 * between lttng_statedump_start and lttng_statedump_end, stamped
 * by ftrace like the instance's other events (docs/kernel.md). Tracing
 * must be on (after rtk_instance_start). Returns the number of records
 * written, or -EBADF (tracing is off, or the buffer is full in discard
 * mode), -errno of /proc or of the write, with a message in err.
 */
long rtk_instance_statedump(struct rtk_instance *in, char *err, size_t errlen);

/* A descriptor of CPU `cpu`'s buffer for poll(2) only: readable
 * (POLLIN) when the buffer holds events (as soon as one is recorded with
 * rtk_config.wake_on_event, else when it is half full); never read (the
 * pages come through rtk_instance_pages). Opened at the first call, owned
 * by the instance. The descriptor, or -errno (-ENOENT: no such CPU). */
int rtk_instance_poll_fd(struct rtk_instance *in, unsigned cpu);

/* The bytes of events the instance's buffers hold, all CPUs (the sum of
 * per_cpu/cpuN/stats' "bytes:"; 0 when unknown). Reads tracefs only:
 * any thread. */
uint64_t rtk_instance_buffer_used(struct rtk_instance *in);

/* Stop, remove the instance from tracefs and free it. Returns 0 or -errno
 * of the removal (the memory is freed in every case). */
int rtk_instance_destroy(struct rtk_instance *in);

/* Remove the ringtrace instances whose owner process is gone, and then
 * the uprobe events their probes defined. Returns the number of instances
 * removed, or -errno when tracefs cannot be read. */
int rtk_instances_remove_stale(void);

/* Call fn for every tracepoint ("system:event", syscalls excluded) /
 * every system call name, in tracefs's order (alphabetical). Returns 0,
 * fn's non-zero value, or -errno with a message in err. */
int rtk_list_tracepoints(int (*fn)(const char *system, const char *event, void *arg),
			 void *arg, char *err, size_t errlen);
int rtk_list_syscalls(int (*fn)(const char *name, void *arg), void *arg, char *err,
		      size_t errlen);

/* Event classes from format files. */
struct rtk_formats *rtk_formats_new(void);
/*
 * Declare the state dump's event classes (lttng_statedump_start, _end,
 * _process_state, _process_pid_ns), whose records come as
 * ftrace:raw_data events (the instance's trace_marker_raw) of format
 * `text`. Returns 0, or -EINVAL
 * (not raw_data's layout: a u32 `id` then `buf`), -EEXIST (declared
 * already, or an event of that id is there), -ENOMEM.
 */
int rtk_formats_add_statedump(struct rtk_formats *f, const char *text, size_t len);
/*
 * Add the event whose ftrace format file (events/SYSTEM/EVENT/format) is
 * `text`. Returns 0, or -EINVAL (not a format libtraceevent parses),
 * -EEXIST (an event of that id is there already), -ENOMEM.
 */
int rtk_formats_add(struct rtk_formats *f, const char *system, const char *text, size_t len);
size_t rtk_formats_count(const struct rtk_formats *f);
/* The CTF name of the i-th class (LTTng's, see docs/kernel.md). */
const char *rtk_formats_name(const struct rtk_formats *f, size_t i);
void rtk_formats_free(struct rtk_formats *f);

/* The contexts a kernel trace may carry besides `tid` (every event has
 * it), as LTTng names them: the thread's process, name and priority
 * (docs/kernel.md says where the values come from). */
enum rtk_context {
	RTK_CTX_PID = 1u << 0,		/* s32 pid: the thread group */
	RTK_CTX_PROCNAME = 1u << 1,	/* string procname: the thread's comm */
	RTK_CTX_PRIO = 1u << 2,		/* s32 prio: as /proc's priority (nice + 20) */
};
#define RTK_CTX_ALL (RTK_CTX_PID | RTK_CTX_PROCNAME | RTK_CTX_PRIO)
#define RTK_PRIO_UNKNOWN (-1000)	/* the prio context of a thread not known */

/* The context named `name` (LTTng's: pid, procname, prio; tid is 0:
 * always there), or -EINVAL; the name of one bit (NULL for another). */
int rtk_context_by_name(const char *name);
const char *rtk_context_name(unsigned bit);

/*
 * A converter of `f`'s pages (f must outlive it) into packets whose
 * header carries `uuid` and whose events carry `tid` and the `contexts`
 * (enum rtk_context bits). Returns 0 and *out, or -ENOMEM.
 */
int rtk_trace_open(const struct rtk_formats *f, const uint8_t uuid[16], unsigned contexts,
		   struct rtk_trace **out);
/*
 * Convert one ftrace page of CPU `cpu` (as read from trace_pipe_raw:
 * 8-byte timestamp, 8-byte commit with the missed-events flags, events)
 * into one packet of that CPU's stream: *pkt (the trace's buffer, valid
 * until the next call) holds its *len bytes. Events of unknown classes
 * are skipped and counted (rtk_trace_stats). A page that does not parse
 * is -EINVAL, and the stream is left as it was. Returns the number of
 * events, or -errno with a message in err.
 */
long rtk_trace_packet(struct rtk_trace *t, unsigned cpu, const void *page, size_t size,
		      char **pkt, size_t *len, char *err, size_t errlen);
/*
 * The kernel counts `total` events lost on CPU `cpu` so far (overwritten
 * or dropped: per_cpu/cpuN/stats): when that is more than the stream's
 * packets said, 1 and an empty packet carrying the new count in *pkt,
 * *len; 0 (no new loss), or -errno with a message in err.
 */
int rtk_trace_lost_packet(struct rtk_trace *t, unsigned cpu, uint64_t total, char **pkt,
			  size_t *len, char *err, size_t errlen);

/*
 * An event as a page's conversion meets it, for a caller that watches
 * them (rtk_trace_watch: the daemon's trigger conditions). Valid during
 * the call only.
 */
struct rtk_class;
struct rtk_event {
	unsigned cpu;
	uint64_t time;			/* as in the packet: ticks of the trace clock */
	const char *name;		/* the class's CTF name (syscall_entry_write, ...) */
	int32_t tid;			/* the emitter (common_pid) */
	/* The emitter's process, name and priority as the contexts give
	 * them (the trace's rtk_context bits; else pid -1, "",
	 * RTK_PRIO_UNKNOWN). */
	int32_t pid;
	const char *procname;
	int32_t prio;
	const struct rtk_class *cls;	/* for rtk_event_field */
	const char *rec;
	int size;
};
/* Call fn(arg, event) for every event that rtk_trace_packet writes
 * (hidden bookkeeping events and skipped ones not), after it is written
 * into the packet, in the thread converting the page (several at once
 * when distinct CPUs are converted at once); fn NULL: none. */
void rtk_trace_watch(struct rtk_trace *t, void (*fn)(void *arg, const struct rtk_event *e),
		     void *arg);
/*
 * The payload field of e that the trace calls `name` (its CTF name, as
 * LTTng's kernel traces name it): 0 and *v (RTF_INT or RTF_UINT for the
 * integers, as the field's sign; RTF_STRING for the strings, up to their
 * first NUL, pointing into the record), -ENOENT (no such field) or
 * -EINVAL (an array of bytes, or a field outside the record).
 */
struct rtf_value;
int rtk_event_field(const struct rtk_event *e, const char *name, struct rtf_value *v);
/* The bytes of e's field `name` when it is an array of bytes (fixed or
 * dynamic, as the trace records it): 0 with *p (into the record) and
 * *len, -ENOENT (no such field) or -EINVAL (another kind of field, or
 * one outside the record). */
int rtk_event_bytes(const struct rtk_event *e, const char *name, const uint8_t **p,
		    size_t *len);

struct rtk_trace_stats {
	uint64_t events;	/* converted */
	uint64_t lost;		/* reported lost by ftrace (at least) */
	uint64_t unknown;	/* skipped: class not in the formats */
	uint64_t packets;
};
void rtk_trace_stats(const struct rtk_trace *t, struct rtk_trace_stats *s);
/* Free the converter. */
/* What the trace's process table knows of thread `tid` (> 0) now, /proc
 * read when it never was (as for the contexts): its process (-1:
 * unknown), name ("" unknown) and priority (RTK_PRIO_UNKNOWN). The table
 * is fed by the conversion of the pages with contexts: a caller may keep
 * a trace whose instance holds the thread-table events only and look the
 * threads of other instances' events up in it (the daemon's kernel
 * triggers). Any thread (under the table's lock). */
struct rtk_thread {
	int32_t pid;
	int32_t prio;
	char comm[16];
};
void rtk_trace_thread(struct rtk_trace *t, int32_t tid, struct rtk_thread *out);
/* Such a caller names events read after the table's: a thread the table
 * saw freed (sched_process_free) may have events in another instance not
 * read yet. After rtk_trace_keep_freed, a freed thread stays known until
 * the second rtk_trace_sweep after its free was converted (without it:
 * forgotten at once); the caller sweeps once per round of reads. Any
 * thread. */
void rtk_trace_keep_freed(struct rtk_trace *t);
void rtk_trace_sweep(struct rtk_trace *t);
void rtk_trace_close(struct rtk_trace *t);

/* ---- the kernel trace through src/consumer (source.c, writer.c) ---- */

/*
 * Where pages come from: an instance's per-CPU buffers (rtk_instance_pages)
 * or, for tests, pages recorded earlier. read: one page of `cpu`, its
 * size with *page valid until the next read, 0 when there is none now,
 * -errno with a message in err. lost: the events lost on `cpu` so far as
 * the kernel counts them.
 */
struct rtk_pages {
	long (*read)(void *arg, unsigned cpu, const void **page, char *err, size_t errlen);
	uint64_t (*lost)(void *arg, unsigned cpu);
	/* A copy into buf (page_size bytes) of the i-th page of `cpu` from
	 * the one its last read gave on (i = 0: that one, or the next when
	 * it was given back), looked at without being taken, among those
	 * already out of the kernel's buffer: its size, 0 when there is
	 * none. Any thread, beside that CPU's reads. NULL: no page can be
	 * looked at ahead. What the conversion uses to name a thread whose
	 * creation is recorded on another CPU than its first events
	 * (trace.c). */
	long (*peek)(void *arg, unsigned cpu, size_t i, void *buf);
	/* Move what every CPU's buffer holds now where peek sees it, waiting
	 * a bounded time: what the conversion does before it gives up
	 * looking for a thread's creation (its CPU's reader may not have
	 * woken yet). Any thread. NULL: nothing to move. */
	void (*sweep)(void *arg);
	/* Sleep until `cpu` has pages worth converting (its reader queued a
	 * quarter of its queue), `fd` (-1: none) is readable, or timeout_ms
	 * passed: 1 when fd is readable, else 0. Any thread. NULL: a poll
	 * of fd alone. */
	int (*wait)(void *arg, unsigned cpu, int fd, int timeout_ms);
	/* The state dump, not through the buffers: ftrace pages stamped now
	 * on the instance's clock, handed to fn one by one with the CPU of
	 * the stream they go to (rtk_writer_snapshot appends them after what
	 * the buffers held, displacing none of a flight recorder's events).
	 * The number of records or -errno with a message in err. NULL:
	 * none. */
	long (*dump)(void *arg, int (*fn)(unsigned cpu, const void *page, size_t size, void *fn_arg),
		     void *fn_arg, char *err, size_t errlen);
	void *arg;
	unsigned nr_cpus;
	size_t page_size;
};
/* The instance's buffers as pages. 0, or -errno (its buffers cannot be
 * opened) with a message in err. */
int rtk_instance_pages(struct rtk_instance *in, struct rtk_pages *p, char *err, size_t errlen);

/*
 * One reader thread per CPU, from now until rtk_instance_readers_stop
 * (after rtk_instance_pages): each sleeps in poll() on its CPU's
 * trace_pipe_raw until the kernel says the buffer holds 16 pages, or a
 * quarter of it when that is less or with ring (buffer_percent), or
 * period_ms passed, and then moves every page the
 * buffer holds into a queue in memory as large as the buffer (at most
 * 16 MiB per CPU), and when that is full into a backlog in memory (at
 * most RTK_BACKLOG_MAX_MB per CPU, and an eighth of the machine's memory
 * over all CPUs), which the pages' read takes from, queue first: the
 * kernel's buffers are emptied as they fill even when the converter (the
 * writer's reads) is late, e.g. on CPUs busy with other work; it
 * catches up later, the drain at the end included. ring (a flight recorder:
 * snapshot-only instances): a full queue drops its oldest page (its
 * events counted lost by the pages' `lost`) and the queues are read by
 * snapshots only, without being consumed (rtk_writer_opts.window), so
 * that the queues hold the newest buffer's worth of pages, without a
 * backlog; else only a full backlog leaves the pages in the kernel's
 * buffer until the converter reads it. 0 (also when started already), -EINVAL (pages not open),
 * -ENOMEM, -errno, with a message in err.
 */
int rtk_instance_readers_start(struct rtk_instance *in, unsigned period_ms, bool ring,
			       char *err, size_t errlen);
/* Wake and join the readers (at once, even when they sleep); what they
 * queued is read first, then the buffers directly. May run beside the
 * writer's reads (not beside another start or stop). */
void rtk_instance_readers_stop(struct rtk_instance *in);
#define RTK_BACKLOG_MAX_MB 1024u
/* Where a CPU's events went: its reader's counts (since the instance's
 * pages were opened) and the kernel's (per_cpu/cpuN/stats). */
struct rtk_reader_stats {
	uint64_t pages;		/* pages the reader moved out of the kernel's buffer */
	uint64_t backlog_pages;	/* of those, into the backlog (the queue was full) */
	uint64_t backlog_peak;	/* the most pages in the backlog at once */
	uint64_t full_waits;	/* times the reader waited 1 ms: queue and backlog full */
	uint64_t longest_gap_ns;	/* the longest between two passes over the buffer */
	uint64_t kernel_read;	/* "read events": the events read out of the buffer */
	uint64_t kernel_overrun;	/* "overrun": overwritten (overwrite mode) */
	uint64_t kernel_dropped;	/* "dropped events": buffer full (discard mode) */
};
/* CPU cpu's counts (zeros for a CPU without pages or readers). Any
 * thread. */
void rtk_instance_reader_stats(struct rtk_instance *in, unsigned cpu,
			       struct rtk_reader_stats *st);
/* The CPUs whose pages the instance reads (after rtk_instance_pages). */
unsigned rtk_instance_nr_cpus(const struct rtk_instance *in);
/*
 * A kernel trace written by src/consumer: a source (struct cons_source:
 * one stream per CPU, each get reads one page and converts it into one
 * packet, then a header-only packet when the kernel's lost count passed
 * the stream's), the formats' classes as the consumer's struct
 * cons_classes, the channel "channel0" (stream class 0, stream files
 * channel0_CPU, the stream event context `tid`), the consumer's one
 * metadata builder (env domain "kernel"), stream files, write errors
 * (a packet that cannot be written cut back and counted lost in the
 * trace, reported once) and snapshots.
 *
 * What ftrace allows: reads consume (trace_pipe_raw; this kernel's
 * tracefs has no non-consuming raw read), partly filled pages included,
 * so there is no flush. A snapshot of a writer with `window` (a flight
 * recorder whose readers keep the newest pages: rtk_instance_readers_start
 * with ring) converts copies of the pages the readers keep, consuming
 * nothing: a later snapshot holds them again while they are among the
 * newest; without `window`, it reads what the buffers hold and consumes
 * it. Both keep the newest packets within the snapshot's size limit.
 *
 * Concurrency: one thread at a time per writer (the caller's lock);
 * rtk_writer_stats reads relaxed counters besides and may be called
 * under the same lock only. The writer's converters (rtk_writer_start:
 * a thread per CPU) run beside the caller's calls, which take each
 * CPU's stream from them in turn (read, drain, snapshot).
 */
struct rtk_writer;
struct rtk_writer_opts {
	const char *dir;		/* trace directory; NULL: snapshots only */
	uint8_t uuid[16];		/* the trace's (its packets') */
	const char *trace_name;
	struct ctf_clock_info clock;	/* ticks of the instance's trace_clock */
	uint64_t buffer_size_kb;	/* per CPU, as configured (0: ftrace's default) */
	unsigned contexts;		/* enum rtk_context bits, besides tid */
	/* Snapshots copy the pages the readers keep (pages.peek), without
	 * consuming them: the readers run with ring and are stopped during
	 * the snapshot (rtk_writer_snapshot). */
	bool window;
	/* Called when writes start failing (err < 0) and when they work again
	 * (err 0), with the message; NULL: none. Any thread. */
	void (*log)(void *arg, int err, const char *line);
	void *log_arg;
};
/* Open a writer of `pages` converted with `f` (both must outlive it).
 * Nothing is written before the first read. 0 and *out, or -ENOMEM, with
 * a message in err. */
int rtk_writer_open(const struct rtk_pages *pages, const struct rtk_formats *f,
		    const struct rtk_writer_opts *o, struct rtk_writer **out, char *err,
		    size_t errlen);
/* Move what the buffers hold now into the trace (at most the buffer's
 * pages per CPU): the metadata first, then the packets. Returns the most
 * pages read from one CPU. */
uint32_t rtk_writer_read(struct rtk_writer *w);
/*
 * A converter thread per CPU, from now until rtk_writer_stop: each sleeps
 * until its CPU's reader (rtk_instance_readers_start) has queued a
 * quarter of its pages, or period_ms passed, and then moves what the CPU
 * holds into its stream (as rtk_writer_read does for every CPU), so that
 * each CPU's pages get converted with a CPU share of their own. Not for
 * snapshot-only writers (0, nothing started). 0 (also when started
 * already), -ENOMEM, -errno of eventfd or pthread_create, with a message
 * in err.
 */
int rtk_writer_start(struct rtk_writer *w, unsigned period_ms, char *err, size_t errlen);
/* Wake the converters and join them (at once, even when they sleep);
 * what they have not read stays for rtk_writer_read or the drain. */
void rtk_writer_stop(struct rtk_writer *w);
/* Read everything (after rtk_instance_stop: all that was recorded; bounded
 * as cons_drain is) and settle the stream files, then write the metadata
 * whole with `clock` when not NULL (the clock as calibrated over the
 * whole run). Errors are kept for rtk_writer_error. */
void rtk_writer_drain(struct rtk_writer *w, const struct ctf_clock_info *clock);
/* What the buffers hold now, into `dir` as a complete trace (metadata
 * and stream files channel0_CPU), then the pages' state dump (a failure
 * of the dump is logged through the writer's `log`, the snapshot is
 * written without it); the newest packets within max_size bytes (0: no
 * limit). With `window`, the pages the readers keep (the readers stopped
 * by the caller, rtk_instance_readers_stop, so that the window stands
 * still), consuming nothing; else what the buffers hold, consumed. 0 or
 * -errno (-ENOMEM, of mkdir/open/write/rename) with a message in err. */
int rtk_writer_snapshot(struct rtk_writer *w, const char *dir, uint64_t max_size, char *err,
			size_t errlen);
/* Session rotation (the converters stopped: rtk_writer_stop): what the
 * buffers hold now goes to the trace's
 * directory, which ends complete (its metadata rewritten), and the trace
 * goes on in `dir` (its metadata written there now): a new trace chunk
 * (consumer.h's cons_rotate). 0, -EINVAL (a writer for snapshots only),
 * -ENOMEM, or -errno of the metadata's first write in dir. */
int rtk_writer_rotate(struct rtk_writer *w, const char *dir);
/* The first error not yet taken (take) or the last one: a write error
 * (cons_errors' message) or a read error of the buffers; 0 when none,
 * else its -errno with the message in msg. */
int rtk_writer_error(struct rtk_writer *w, bool take, char *msg, size_t len);
struct rtk_writer_stats {
	uint64_t events;	/* converted and written */
	uint64_t lost;		/* ftrace's count, plus those that could not be written */
	uint64_t unknown;	/* skipped: class not in the formats */
	uint64_t pages_bad;	/* pages that did not parse, skipped */
	uint64_t bytes;		/* written into the stream files (packets) */
};
void rtk_writer_stats(struct rtk_writer *w, struct rtk_writer_stats *s);
/* Close the files and free. */
void rtk_writer_close(struct rtk_writer *w);

#endif /* RINGTRACE_KERNEL_H */
