/*
 * record.h - `ringtrace record`, shared between its embedded mode
 * (record.c) and its daemon mode (ctl_record.c).
 */
#ifndef RINGTRACE_CLI_RECORD_H
#define RINGTRACE_CLI_RECORD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct record_opts {
	const char *output;
	bool overwrite, quiet, embedded;
	bool no_inherit;				/* trace CMD only, not its children */
	uint64_t subbuf_size;
	uint32_t num_subbuf, switch_timer, read_timer;	/* timers in ms */
	int32_t loglevel;
	bool have_switch, have_read, have_loglevel;
	const char *clock;
	char events[4096];				/* comma-separated globs */
	char contexts[128];				/* comma-separated context
							 * names, "" for none */
	/* -k, --syscall: kernel tracepoint and system call globs,
	 * comma-separated ("all": every one); record_kernel.c. */
	char kernel_events[4096];
	char syscalls[4096];
	char probes[4096];				/* --probe: PATH:FUNC, elf:...,
							 * sdt:..., comma-separated */
	bool kernel;					/* any of the three was given */
	bool all_processes;				/* kernel events of every
							 * process, not CMD's tree */
	unsigned kernel_contexts;			/* --kernel-context: enum
							 * rtk_context bits */
	bool have_kernel_contexts;
	char preload[4096];				/* --preload: the helpers'
							 * paths, ':'-separated */
	uint8_t trace_uuid[16];				/* embedded mode's trace (and
							 * its clock's) uuid */
	const char *shm_path;				/* --shm-path as given, or NULL */
	char shm_abs[4096];				/* its absolute path */
};

/* The contexts `record` records unless -t says otherwise: each event's
 * process id, thread id and thread name (a traced process tree's
 * children share the trace). */
#define RECORD_DEFAULT_CONTEXTS "vpid,vtid,procname"
/* The state dump's events, which --preload adds to the patterns. */
#define RECORD_PRELOAD_STATEDUMP "lttng_ust_statedump:*,lttng_ust_dl:*"

/*
 * Start CMD. In the child: when `hold` (a pipe) is given, wait until a
 * byte arrives on hold[0] (EOF: exit 127 without running CMD), then, when `embedded_dir` is set,
 * export the embedded mode's environment (with `done_fd`, when not -1, as
 * RINGTRACE_DONE_FD: the library writes a byte there after its final
 * flush), and exec. *exec_fd receives the read end of a
 * close-on-exec pipe on which an exec failure's errno arrives. Returns the
 * child's pid or -errno (message printed).
 */
pid_t record_spawn(char **cmd, const struct record_opts *o, const char *embedded_dir,
		   int done_fd, const int *hold, int *exec_fd);
/*
 * Wait for the child (forwarding SIGINT/SIGTERM/SIGHUP/SIGQUIT to it).
 * Returns 0 with its wait status, or the exec errno (> 0) when CMD could
 * not be started, or -errno.
 */
int record_wait(pid_t pid, int exec_fd, int *status);
/*
 * Daemon mode: record CMD through ringtraced into `dir` (absolute, empty).
 * Returns 0 with CMD's wait status in *status, *incomplete set when some
 * of the trace could not be written (the daemon's message printed) and,
 * when CMD could not be started, the exec errno in *exec_err; -EAGAIN
 * when no daemon answers or
 * it could not record (nothing was run: the caller falls back to
 * embedded mode); -errno on other failures (message printed).
 */
int record_via_daemon(const struct record_opts *o, char **cmd, const char *dir,
		      int *status, int *exec_err, bool *incomplete);

/*
 * --preload (record_preload.c): add the helpers of `list` (comma
 * separated: libc, pthread, dl, func) to o->preload, found beside this
 * program. 0, or -errno with the message in err.
 */
int record_preload_add(struct record_opts *o, const char *list, char *err, size_t errlen);
/* In CMD's process: LD_PRELOAD = the user's entries, then o->preload's.
 * 0 or -errno. */
int record_preload_env(const struct record_opts *o);

/*
 * The kernel side of `record -k` (record_kernel.c): a private tracefs
 * instance recording `pid` and its descendants (every process with
 * o->all_processes) into DIR/kernel, read by a thread of its own until
 * record_kernel_finish. Returns 0, or -errno with the message printed; in
 * both cases *k is to be given to record_kernel_finish.
 */
struct record_kernel;
int record_kernel_start(struct record_kernel **k, const struct record_opts *o, pid_t pid,
			const char *dir);
/* Stop the instance, read it to the end, write the final metadata, remove
 * the instance, free. Returns 0 or -errno (message printed). */
int record_kernel_finish(struct record_kernel *k);

#endif /* RINGTRACE_CLI_RECORD_H */
