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
 *    and thread into its buffer (rtk_instance_statedump);
 *  - rtk_list_*: the tracepoints and system calls this kernel offers;
 *  - rtk_formats_*: event classes built from ftrace's format files, named
 *    and laid out as LTTng's kernel traces have them (sched_switch's
 *    prev_tid, syscall_entry_NAME/syscall_exit_NAME, ...);
 *  - rtk_trace_*: a CTF trace directory (one stream per CPU, one packet
 *    per ftrace page, lost events as the packets' events_discarded) fed
 *    with raw pages; rtk_instance_drain feeds it from an instance.
 *
 * Errors: negative errno; functions taking `err` also write one line
 * saying what failed into it (NUL-terminated, truncated to errlen).
 *
 * Concurrency: no global state but libtracefs's own (the tracing
 * directory's path, found once). An instance, a formats table and a trace
 * are each used by one thread at a time; distinct ones are independent.
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
	/* ftrace filter expression (events/.../filter) for every enabled
	 * event, or NULL. */
	const char *filter;
	/* Processes to record (set_event_pid, their children included as they
	 * fork); nr_pids 0: every process. */
	const pid_t *pids;
	size_t nr_pids;
};

struct rtk_instance;
struct rtk_formats;
struct rtk_trace;

/*
 * Create the instance, configure it as cfg says and load the enabled
 * events' formats. Tracing is off until rtk_instance_start. Returns 0 and
 * *out, or -EEXIST (an instance of that name exists), -ENOENT (a name or
 * glob matched no event), -EINVAL (ftrace refused the filter or a
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
 * Read every page the instance's buffers hold now, partly filled ones
 * included (trace_pipe_raw, without blocking), and append them to `t`:
 * after rtk_instance_stop, everything recorded. Returns the number of
 * pages read, or -errno of a read or of rtk_trace_page, with a message in
 * err.
 */
long rtk_instance_drain(struct rtk_instance *in, struct rtk_trace *t, char *err,
			size_t errlen);
/* The CPUs whose buffers the instance has (0 when they cannot be
 * opened). */
unsigned rtk_instance_nr_cpus(struct rtk_instance *in);
/* One page of CPU `cpu`'s buffer, partly filled ones included, without
 * blocking: its size, with *page valid until the next read; 0 when there
 * is none; -errno with a message in err. */
long rtk_instance_read_page(struct rtk_instance *in, unsigned cpu, const void **page,
			    char *err, size_t errlen);
/* Events lost on CPU `cpu` so far, as the kernel counts them
 * (per_cpu/cpuN/stats: overwritten, dropped when full, lost to nesting). */
uint64_t rtk_instance_lost(struct rtk_instance *in, unsigned cpu);

/*
 * Write the state dump into the instance's buffer: every process and
 * thread of the machine (from /proc) as lttng_statedump_process_state
 * events between lttng_statedump_start and lttng_statedump_end, stamped
 * by ftrace like the instance's other events (docs/kernel.md). Tracing
 * must be on (after rtk_instance_start). Returns the number of records
 * written, or -EBADF (tracing is off, or the buffer is full in discard
 * mode), -errno of /proc or of the write, with a message in err.
 */
long rtk_instance_statedump(struct rtk_instance *in, char *err, size_t errlen);

/*
 * The same state dump, not through the instance's buffer: as ftrace pages
 * stamped now on the instance's clock, each appended to `t` (which must
 * have the instance's formats) as rtk_trace_page does, in the stream of
 * the CPU the dump began on. For a snapshot, once the buffers have been
 * read into `t`: the dump comes after their events and displaces none of
 * a flight recorder's. Returns the number of records, or -errno with a
 * message in err.
 */
long rtk_instance_statedump_into(struct rtk_instance *in, struct rtk_trace *t, char *err,
				 size_t errlen);

/* Stop, remove the instance from tracefs and free it. Returns 0 or -errno
 * of the removal (the memory is freed in every case). */
int rtk_instance_destroy(struct rtk_instance *in);

/* Remove the ringtrace instances whose owner process is gone. Returns the
 * number removed, or -errno when tracefs cannot be read. */
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
 * _process_state), whose records come as ftrace:raw_data events (the
 * instance's trace_marker_raw) of format `text`. Returns 0, or -EINVAL
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

/* What the trace's metadata says besides the event classes. */
struct rtk_trace_info {
	uint8_t uuid[16];
	const char *hostname;
	const char *trace_name;
	struct ctf_clock_info clock;	/* ticks of the instance's trace_clock */
};

/*
 * Create the trace directory `dir` (private: rt_dir_open's rules, made if
 * missing; it must hold no trace yet) with its metadata for the classes
 * of `f` (which must outlive the trace). `dir` NULL: no files, packets
 * only (rtk_trace_packet, for a consumer that writes them itself).
 * Returns 0 and *out, or -errno with a message in err.
 */
int rtk_trace_open(const char *dir, const struct rtk_formats *f,
		   const struct rtk_trace_info *info, struct rtk_trace **out, char *err,
		   size_t errlen);
/*
 * Append one ftrace page of CPU `cpu` (as read from trace_pipe_raw:
 * 8-byte timestamp, 8-byte commit with the missed-events flags, events)
 * as one packet of that CPU's stream file channel0_CPU. Events of unknown
 * classes are skipped and counted (rtk_trace_stats). A page that does
 * not parse is -EINVAL, and nothing is written for it. Returns the number
 * of events written, or -errno with a message in err.
 */
long rtk_trace_page(struct rtk_trace *t, unsigned cpu, const void *page, size_t size,
		    char *err, size_t errlen);

/* rtk_trace_page without the write: *pkt (the trace's buffer, valid until
 * the next call) holds the packet's *len bytes. */
long rtk_trace_packet(struct rtk_trace *t, unsigned cpu, const void *page, size_t size,
		      char **pkt, size_t *len, char *err, size_t errlen);
/* rtk_trace_lost without the write: 1 and the packet in *pkt, *len, or 0
 * (no new loss), or -errno. */
int rtk_trace_lost_packet(struct rtk_trace *t, unsigned cpu, uint64_t total, char **pkt,
			  size_t *len, char *err, size_t errlen);

/*
 * The kernel counts `total` events lost on CPU `cpu` so far (overwritten
 * or dropped: per_cpu/cpuN/stats): when that is more than the stream's
 * packets said, an empty packet carrying the new count is appended.
 * Returns 0 or -errno with a message in err.
 */
int rtk_trace_lost(struct rtk_trace *t, unsigned cpu, uint64_t total, char *err,
		   size_t errlen);

struct rtk_trace_stats {
	uint64_t events;	/* written */
	uint64_t lost;		/* reported lost by ftrace (at least) */
	uint64_t unknown;	/* skipped: class not in the formats */
	uint64_t packets;
};
void rtk_trace_stats(const struct rtk_trace *t, struct rtk_trace_stats *s);
/* Write the metadata again with `clock` (the clock as calibrated over the
 * whole run), replacing the file whole. Returns 0 or -errno with a message
 * in err; -EINVAL for a trace opened without a directory. */
int rtk_trace_set_clock(struct rtk_trace *t, const struct ctf_clock_info *clock, char *err,
			size_t errlen);
/* Close the stream files and free. Returns 0 or -errno of a close. */
int rtk_trace_close(struct rtk_trace *t);

#endif /* RINGTRACE_KERNEL_H */
