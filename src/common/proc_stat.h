/*
 * proc_stat.h - what /proc/PID/stat and /proc/PID/task/TID/stat say of a
 * thread: its name (comm), state, parent process, flags, priority and
 * CPU; and the ids of the status file's lines (Tgid, NSpid, NStgid). The name is whatever the thread set (prctl PR_SET_NAME: any bytes
 * but NUL, spaces and parentheses included): it is taken between the
 * first '(' and the last ')', the fields after it being numbers and one
 * state letter.
 *
 * Concurrency: pure functions on the caller's memory, and reads of /proc;
 * callable from any thread.
 */
#ifndef RINGTRACE_COMMON_PROC_STAT_H
#define RINGTRACE_COMMON_PROC_STAT_H

#include <stddef.h>

/* The kernel's TASK_COMM_LEN: 15 bytes and a NUL. */
#define RT_COMM_LEN 16

struct rt_proc_stat {
	char comm[RT_COMM_LEN];	/* NUL-terminated, cut to 15 bytes */
	char state;		/* R, S, D, I, Z, X, T, t, P, ... */
	int ppid;		/* the parent process (0: none) */
	unsigned long flags;	/* PF_* (PF_KTHREAD: a kernel thread) */
	int priority;		/* field 18: nice + 20, or -1 - the RT priority */
	int processor;		/* the CPU it last ran on */
};

/* The kernel's PF_KTHREAD flag (include/linux/sched.h). */
#define RT_PF_KTHREAD 0x00200000ul

/* Parse the text of a stat file (`len` bytes, no NUL needed). Returns 0,
 * or -EINVAL when it is not one (out undefined). */
int rt_proc_stat_parse(const char *text, size_t len, struct rt_proc_stat *out);

/* Read and parse the stat file `path` (relative to the directory `dirfd`,
 * or AT_FDCWD). Returns 0, -errno of open or read (-ENOENT or -ESRCH:
 * the thread is gone), or -EINVAL. */
int rt_proc_stat_read(int dirfd, const char *path, struct rt_proc_stat *out);

/* Read the status file `path` (/proc/PID/status,
 * /proc/PID/task/TID/status; relative to `dirfd` or AT_FDCWD) into buf,
 * NUL-terminated (cut to len - 1 bytes). Returns 0, -EINVAL (len 0),
 * -errno of open or read (-ENOENT, -ESRCH: gone). */
int rt_proc_status_read(int dirfd, const char *path, char *buf, size_t len);

/*
 * The numbers of the line "KEY:\tN N ..." of a status file's text: Tgid,
 * or NSpid/NStgid (the thread's ids from the root pid namespace down to
 * its own). Writes at most `max` into ids. Returns how many the line
 * holds (0: no such line), or -EINVAL (not a number).
 */
int rt_proc_status_ids(const char *text, const char *key, int *ids, int max);

#endif /* RINGTRACE_COMMON_PROC_STAT_H */
