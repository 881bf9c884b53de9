/*
 * statedump.c - the kernel domain's state dump: every thread of the
 * machine as read from /proc, one record each (layout in
 * kernel_internal.h), framed by a start and an end record, as LTTng's
 * lttng_statedump_process_state events between lttng_statedump_start and
 * lttng_statedump_end. The field values are LTTng's (lttng-modules'
 * lttng-statedump-impl.c): type from the kernel-thread flag, mode
 * unknown, submode none, status from the thread's state letter.
 *
 * /proc changes during the walk: a process or thread that is gone
 * between its directory entry and its stat file is left out; one that
 * appears after its directory was listed is not in the dump (its fork is
 * after the dump's start).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/proc_stat.h"
#include "kernel_internal.h"

#define LTTNG_USER_THREAD 0
#define LTTNG_KERNEL_THREAD 1
#define LTTNG_MODE_UNKNOWN 5
#define LTTNG_SUBMODE_NONE 0

/* A positive decimal number, all of the name; else -1. */
static int number(const char *name)
{
	char *end;
	errno = 0;
	long v = strtol(name, &end, 10);
	if (*name < '0' || *name > '9' || *end || errno || v <= 0 || v > 0x7fffffff)
		return -1;
	return (int)v;
}

static int32_t status_of(char state)
{
	switch (state) {
	case 'R':
		/* LTTng: every runnable thread waits for a CPU; the viewer
		 * sorts out which one ran. */
		return RTK_STATUS_WAIT_CPU;
	case 'S': case 'D': case 'I':
		return RTK_STATUS_WAIT;
	case 'Z':
		return RTK_STATUS_ZOMBIE;
	case 'X': case 'x':
		return RTK_STATUS_DEAD;
	default:
		return RTK_STATUS_UNNAMED;
	}
}

/* The threads of process `pid`, whose /proc directory is `pfd`. Returns
 * the records written or a negative value of put. */
static long walk_threads(int pfd, int pid, int (*put)(const void *, size_t, void *),
			 void *arg)
{
	int tfd = openat(pfd, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (tfd < 0)
		return 0;	/* gone */
	DIR *d = fdopendir(tfd);
	if (!d) {
		close(tfd);
		return 0;
	}
	long n = 0;
	for (struct dirent *e; (e = readdir(d));) {
		int tid = number(e->d_name);
		if (tid < 0)
			continue;
		char path[64];
		struct rt_proc_stat st;
		snprintf(path, sizeof(path), "%d/stat", tid);
		if (rt_proc_stat_read(tfd, path, &st) < 0)
			continue;	/* gone, or not what proc(5) says */
		struct rtk_dump_process r = {
			.h = { RTK_DUMP_ID, RTK_DUMP_PROCESS },
			.tid = tid, .pid = pid, .ppid = st.ppid,
			.type = (st.flags & RT_PF_KTHREAD) ? LTTNG_KERNEL_THREAD : LTTNG_USER_THREAD,
			.mode = LTTNG_MODE_UNKNOWN, .submode = LTTNG_SUBMODE_NONE,
			.status = status_of(st.state),
			.cpu = st.processor >= 0 ? (uint32_t)st.processor : 0,
			.prio = st.priority,
		};
		memcpy(r.name, st.comm, sizeof(r.name));
		int ret = put(&r, sizeof(r), arg);
		if (ret < 0) {
			closedir(d);
			return ret;
		}
		n++;
	}
	closedir(d);
	return n;
}

long rtk_statedump_walk(int (*put)(const void *rec, size_t len, void *arg), void *arg,
			char *err, size_t errlen)
{
	DIR *proc = opendir("/proc");
	if (!proc) {
		int ret = -errno;
		rt_errf(err, errlen, "cannot list /proc: %s", strerror(errno));
		return ret;
	}
	struct rtk_dump_header h = { RTK_DUMP_ID, RTK_DUMP_START };
	long n = 0;
	int ret = put(&h, sizeof(h), arg);
	for (struct dirent *e; !ret && (e = readdir(proc));) {
		int pid = number(e->d_name);
		if (pid < 0)
			continue;
		int pfd = openat(dirfd(proc), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (pfd < 0)
			continue;	/* gone */
		long t = walk_threads(pfd, pid, put, arg);
		close(pfd);
		if (t < 0)
			ret = (int)t;
		else
			n += t;
	}
	closedir(proc);
	if (!ret) {
		h.kind = RTK_DUMP_END;
		ret = put(&h, sizeof(h), arg);
	}
	if (ret < 0) {
		rt_errf(err, errlen, "cannot write the state dump into the kernel's buffer: %s",
			ret == -EBADF ? "tracing is off or the buffer is full" : strerror(-ret));
		return ret;
	}
	return n + 2;
}
