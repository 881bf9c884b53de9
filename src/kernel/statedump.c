/*
 * statedump.c - the kernel domain's state dump: every thread of the
 * machine as read from /proc, one record each (layout in
 * kernel_internal.h), framed by a start and an end record, as LTTng's
 * lttng_statedump_process_state events between lttng_statedump_start and
 * lttng_statedump_end. The field values are LTTng's (lttng-modules'
 * lttng-statedump-impl.c): type from the kernel-thread flag, mode
 * unknown, submode none, status from the thread's state letter. Each
 * thread's record is followed by one lttng_statedump_process_pid_ns
 * record per pid namespace it is in, its own first (its ids from
 * /proc/PID/task/TID/status's NSpid and NStgid, the namespaces' inodes
 * from its ns/pid and their parents).
 *
 * Two ways to the trace: records written into the instance's
 * trace_marker_raw (rtk_instance_statedump: ftrace stamps and stores
 * them with the other events), or ftrace pages of the same records built
 * here, stamped with the instance's clock as the walk goes
 * (rtk_instance_statedump_pages, for a snapshot: appended after what was
 * read from the buffers, without displacing a flight recorder's newest
 * events). A built page is what ftrace's are (trace.c's header): 16-byte
 * header (timestamp, commit), then per record a 32-bit header (type_len =
 * length in 4-byte words, 1..28; time_delta 27 bits) and the record:
 * raw_data's common fields (type, flags 0, preempt count 0, the walking
 * thread's tid) and the dump's record at raw_data's `id` offset. A delta
 * too large for 27 bits starts a new page.
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
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/nsfs.h>

#include "../common/clock.h"
#include "../common/proc_stat.h"
#include "kernel_internal.h"

#define LTTNG_USER_THREAD 0
#define LTTNG_KERNEL_THREAD 1
#define LTTNG_MODE_UNKNOWN 5
#define LTTNG_SUBMODE_NONE 0
/* The pid namespace levels a thread's records go down to (LTTng's
 * LTTNG_MAX_PID_NS_LEVEL). */
#define RTK_MAX_PID_NS 32

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

/* The inodes of thread `tid`'s pid namespaces (the directory tfd's
 * TID/ns/pid, then each parent's through NS_GET_PARENT), its own first,
 * `levels` of them; 0 for those that cannot be known. */
static void ns_inums(int tfd, int tid, uint32_t *inum, int levels)
{
	memset(inum, 0, (size_t)levels * sizeof(*inum));
	char path[64];
	snprintf(path, sizeof(path), "%d/ns/pid", tid);
	int fd = openat(tfd, path, O_RDONLY | O_CLOEXEC);
	for (int i = 0; i < levels && fd >= 0; i++) {
		struct stat st;
		if (fstat(fd, &st) == 0)
			inum[i] = (uint32_t)st.st_ino;
		int parent = i + 1 < levels ? ioctl(fd, NS_GET_PARENT) : -1;
		close(fd);
		fd = parent;
	}
	if (fd >= 0)
		close(fd);
}

/* The pid namespace records of thread `tid` (of process `pid`, whose
 * parent is `ppid`): its ids in each pid namespace it is in (NSpid,
 * NStgid of its status; the parent's NStgid for vppid), its own
 * namespace first, as LTTng's statedump. A thread gone meanwhile has
 * none. 0 or put's negative value. */
static int put_pid_ns(int tfd, int tid, int pid, int ppid,
		      int (*put)(const void *, size_t, void *), void *arg)
{
	char path[64], text[4096];
	int vtid[RTK_MAX_PID_NS], vpid[RTK_MAX_PID_NS], pvpid[RTK_MAX_PID_NS];
	uint32_t inum[RTK_MAX_PID_NS];
	snprintf(path, sizeof(path), "%d/status", tid);
	if (rt_proc_status_read(tfd, path, text, sizeof(text)) < 0)
		return 0;	/* gone */
	int n = rt_proc_status_ids(text, "NSpid", vtid, RTK_MAX_PID_NS);
	int m = rt_proc_status_ids(text, "NStgid", vpid, RTK_MAX_PID_NS);
	if (n <= 0 || m != n) {
		/* A kernel without NSpid (before 4.1): the root's only. */
		n = 1;
		vtid[0] = tid;
		vpid[0] = pid;
	}
	if (n > RTK_MAX_PID_NS)
		n = RTK_MAX_PID_NS;
	/* The parent's ids in the namespaces below the root's (none when
	 * the thread is in the root's only). */
	int pn = 0;
	snprintf(path, sizeof(path), "/proc/%d/status", ppid);
	if (n > 1 && ppid > 0 && rt_proc_status_read(AT_FDCWD, path, text, sizeof(text)) == 0)
		pn = rt_proc_status_ids(text, "NStgid", pvpid, RTK_MAX_PID_NS);
	ns_inums(tfd, tid, inum, n);
	for (int level = n - 1; level >= 0; level--) {
		struct rtk_dump_pid_ns r = {
			.h = { RTK_DUMP_ID, RTK_DUMP_PID_NS },
			.tid = tid, .vtid = vtid[level], .vpid = vpid[level],
			.vppid = level == 0 ? ppid : (level < pn ? pvpid[level] : 0),
			.ns_level = level, .ns_inum = inum[n - 1 - level],
		};
		int ret = put(&r, sizeof(r), arg);
		if (ret < 0)
			return ret;
	}
	return 0;
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
		if (!ret)
			ret = put_pid_ns(tfd, tid, pid, st.ppid, put, arg);
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
	return ret < 0 ? ret : n + 2;
}

#define PAGE_BYTES 4096u
#define PAGE_HEADER 16u
#define DELTA_LIMIT (1u << 27)

struct page_builder {
	char page[PAGE_BYTES];
	size_t used;		/* bytes of records after the header */
	uint64_t last;		/* the previous record's stamp */
	bool tsc;		/* the instance's clock: x86-tsc, else mono */
	int type, base, tid;	/* raw_data's type id, `id` offset; our tid */
	unsigned cpu;
	int (*fn)(unsigned cpu, const void *page, size_t size, void *arg);
	void *arg;
};

static int flush_page(struct page_builder *b)
{
	if (!b->used)
		return 0;
	uint64_t commit = b->used;
	memcpy(b->page + 8, &commit, 8);
	int ret = b->fn(b->cpu, b->page, PAGE_BYTES, b->arg);
	b->used = 0;
	return ret;
}

static int put_page_record(const void *rec, size_t len, void *arg)
{
	struct page_builder *b = arg;
	size_t rlen = (size_t)b->base + len, words = (rlen + 3) / 4;
	if (words > 28)
		return -EINVAL;	/* no dump record is that long */
	uint64_t now = b->tsc ? rt_rdtsc() : rt_clock_monotonic_ns();
	if (now < b->last)
		now = b->last;
	if (b->used && (PAGE_HEADER + b->used + 4 + words * 4 > PAGE_BYTES ||
			now - b->last >= DELTA_LIMIT)) {
		int ret = flush_page(b);
		if (ret < 0)
			return ret;
	}
	uint32_t delta = 0;
	if (!b->used) {
		memset(b->page, 0, PAGE_BYTES);
		memcpy(b->page, &now, 8);
	} else {
		delta = (uint32_t)(now - b->last);
	}
	char *p = b->page + PAGE_HEADER + b->used;
	uint32_t h = (uint32_t)words | delta << 5;
	uint16_t type = (uint16_t)b->type;
	memcpy(p, &h, 4);
	memset(p + 4, 0, words * 4);
	memcpy(p + 4, &type, 2);
	memcpy(p + 8, &b->tid, 4);
	memcpy(p + 4 + b->base, rec, len);
	b->used += 4 + words * 4;
	b->last = now;
	return 0;
}

long rtk_statedump_pages(const struct rtk_formats *f, bool clock_tsc,
			 int (*fn)(unsigned cpu, const void *page, size_t size, void *arg),
			 void *arg, char *err, size_t errlen)
{
	struct page_builder *b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	int cpu = sched_getcpu();
	*b = (struct page_builder){ .tsc = clock_tsc, .tid = (int)gettid(),
				    .cpu = cpu > 0 ? (unsigned)cpu : 0, .fn = fn, .arg = arg };
	long n = -EINVAL;
	if (rtk_formats_dump_layout(f, &b->type, &b->base) < 0 || b->base < 8)
		rt_errf(err, errlen, "the kernel trace has no state dump classes");
	else
		n = rtk_statedump_walk(put_page_record, b, err, errlen);
	if (n >= 0) {
		int ret = flush_page(b);
		if (ret < 0)
			n = ret;
	}
	free(b);
	return n;
}
