/*
 * instance.c - a session's private tracefs instance through libtracefs
 * (see kernel.h): access check, naming, configuration (its user-space
 * probes defined by probe_events.c), per-CPU readers,
 * the state dump's writes (its trace_marker_raw), removal of stale
 * instances.
 */
#define _GNU_SOURCE
#include "kernel.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tracefs/tracefs.h>

#include "kernel_internal.h"

struct rtk_instance {
	struct tracefs_instance *tfs;
	struct rtk_formats *formats;
	size_t nr_enabled;
	unsigned nr_cpus;
	struct rtk_cpus *cpus;		/* opened by rtk_instance_pages */
	size_t page_size;
	uint64_t buffer_size_kb;	/* per CPU, as configured (0: the kernel's) */
	bool clock_tsc;			/* trace_clock x86-tsc, else mono */
	int *poll_fds;			/* per CPU, -1 until rtk_instance_poll_fd */
	unsigned nr_poll_fds;
	char probe_group[64];		/* its uprobe events' group, "" when none */
};

/* libtracefs reports through errno; a few paths leave it unset. */
static int tfs_errno(void)
{
	return errno ? -errno : -EIO;
}

int rtk_access(char *err, size_t errlen)
{
	/* Mounts tracefs at /sys/kernel/tracing when it is not mounted. */
	errno = 0;
	const char *dir = tracefs_tracing_dir();
	if (!dir || access(dir, F_OK) < 0) {
		if (geteuid() != 0) {
			rt_errf(err, errlen, "the kernel domain needs root (or write access to "
				 "tracefs, which this user cannot see)");
			return -EACCES;
		}
		rt_errf(err, errlen, "tracefs is not mounted and cannot be mounted: the kernel "
			 "domain needs ftrace");
		return -ENODEV;
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/instances", dir);
	if (access(path, W_OK) < 0) {
		rt_errf(err, errlen, "the kernel domain needs root or write access to %s",
			 path);
		return -EACCES;
	}
	return 0;
}

/* "ringtrace-PID-SESSION" with SESSION's unusual bytes replaced;
 * "ringtrace-PID-trigger-NAME" for a trigger's. */
static void instance_name(char *out, size_t len, pid_t owner, const char *session,
			  bool trigger)
{
	int n = snprintf(out, len, RTK_INSTANCE_PREFIX "%d-%s", (int)owner,
			 trigger ? "trigger-" : "");
	for (const char *s = session && *session ? session : "session";
	     *s && (size_t)n + 1 < len; s++)
		out[n++] = (isalnum((unsigned char)*s) || *s == '_' || *s == '.') ? *s : '_';
	out[n] = '\0';
}

static int write_file(struct rtk_instance *in, const char *file, const char *value,
		      char *err, size_t errlen)
{
	errno = 0;
	if (tracefs_instance_file_write(in->tfs, file, value) < 0) {
		int ret = tfs_errno();
		rt_errf(err, errlen, "cannot write '%s' to %s of instance %s: %s", value, file,
			 tracefs_instance_get_name(in->tfs), strerror(-ret));
		return ret;
	}
	return 0;
}

/* Set or clear a tracefs option of the instance (`name` for the message). */
static int set_option(struct rtk_instance *in, enum tracefs_option_id opt, bool on,
		      const char *name, char *err, size_t errlen)
{
	errno = 0;
	int r = on ? tracefs_option_enable(in->tfs, opt) : tracefs_option_disable(in->tfs, opt);
	if (r < 0) {
		int ret = tfs_errno();
		rt_errf(err, errlen, "cannot set the %s option: %s", name, strerror(-ret));
		return ret;
	}
	return 0;
}

/* The text of events/SYSTEM/EVENT/format (malloc'ed, *size bytes), or
 * NULL with the reason in *ret and err. */
static char *read_format(struct rtk_instance *in, const char *system, const char *event,
			 int *size, int *ret, char *err, size_t errlen)
{
	errno = 0;
	char *fmt = tracefs_event_file_read(in->tfs, system, event, "format", size);
	if (!fmt) {
		*ret = tfs_errno();
		rt_errf(err, errlen, "cannot read the format of %s:%s: %s", system, event,
			strerror(-*ret));
	}
	return fmt;
}

/* Whether one of the n globs matches a (or b): now[i] says which, hit[i]
 * accumulates. */
static bool matches(const char *const *globs, size_t n, const char *a, const char *b,
		    bool *hit, bool *now)
{
	bool any = false;
	for (size_t i = 0; i < n; i++) {
		now[i] = !fnmatch(globs[i], a, 0) || (b && !fnmatch(globs[i], b, 0));
		hit[i] |= now[i];
		any |= now[i];
	}
	return any;
}

/* Whether one of cfg's exclusion globs matches a (or b). */
static bool excluded(const struct rtk_config *cfg, const char *a, const char *b)
{
	for (size_t i = 0; i < cfg->nr_excludes; i++)
		if (!fnmatch(cfg->excludes[i], a, 0) || (b && !fnmatch(cfg->excludes[i], b, 0)))
			return true;
	return false;
}

/* Read the event's format into the instance's formats: 0 or -errno
 * (-EEXIST: there already) with a message in err. */
static int load_format(struct rtk_instance *in, const char *system, const char *event,
		       char *err, size_t errlen)
{
	int size = 0, ret = 0;
	char *fmt = read_format(in, system, event, &size, &ret, err, errlen);
	if (!fmt)
		return ret;
	ret = rtk_formats_add(in->formats, system, fmt, (size_t)size);
	free(fmt);
	if (ret < 0)
		rt_errf(err, errlen, "the format of %s:%s does not parse", system, event);
	return ret;
}

/* Load the event's format, set its filter (that of the rules now[] says
 * match it, fl NULL: none), enable it; left off when no matching rule's
 * filter can pass on it. */
static int enable_event(struct rtk_instance *in, struct rtk_filters *fl, const bool *now,
			const char *system, const char *event, char *err, size_t errlen)
{
	int ret = load_format(in, system, event, err, errlen);
	if (ret < 0)
		return ret;
	char *filter = NULL, full[512];
	snprintf(full, sizeof(full), "%s:%s", system, event);
	if (fl) {
		ret = rtk_filters_event(fl, now, in->formats, rtk_formats_count(in->formats) - 1,
					full, &filter, err, errlen);
		if (ret)
			return ret < 0 ? ret : 0;
	}
	errno = 0;
	if (filter && tracefs_event_file_write(in->tfs, system, event, "filter", filter) < 0) {
		ret = tfs_errno();
		rt_errf(err, errlen, "ftrace refuses the filter '%s' for %s: %s", filter, full,
			strerror(-ret));
		free(filter);
		return ret == -EIO ? -EINVAL : ret;
	}
	free(filter);
	errno = 0;
	if (tracefs_event_file_write(in->tfs, system, event, "enable", "1") < 0) {
		ret = tfs_errno();
		rt_errf(err, errlen, "cannot enable %s: %s", full, strerror(-ret));
		return ret;
	}
	in->nr_enabled++;
	return 0;
}

static int enable_tracepoints(struct rtk_instance *in, const struct rtk_config *cfg,
			      char *err, size_t errlen)
{
	if (!cfg->all_events && !cfg->nr_events)
		return 0;
	struct rtk_filters *fl = NULL;
	bool *hit = calloc(2 * (cfg->nr_events + 1), sizeof(*hit)), *now = hit + cfg->nr_events + 1;
	char **systems = tracefs_event_systems(NULL);
	int ret = 0;
	if (!hit || !systems) {
		ret = -ENOMEM;
		rt_errf(err, errlen, "cannot list the kernel's events");
		goto out;
	}
	if (!cfg->all_events && (ret = rtk_filters_new(cfg->events, cfg->event_filters,
						       cfg->nr_events, &fl, err, errlen)) < 0)
		goto out;
	for (char **s = systems; *s && !ret; s++) {
		if (!strcmp(*s, "syscalls") || !strcmp(*s, "ftrace"))
			continue;
		char **events = tracefs_system_events(NULL, *s);
		for (char **e = events; e && *e && !ret; e++) {
			char full[512];
			snprintf(full, sizeof(full), "%s:%s", *s, *e);
			if ((cfg->all_events ||
			     matches(cfg->events, cfg->nr_events, full, *e, hit, now)) &&
			    !excluded(cfg, full, *e))
				ret = enable_event(in, fl, now, *s, *e, err, errlen);
		}
		tracefs_list_free(events);
	}
	for (size_t i = 0; !ret && !cfg->all_events && i < cfg->nr_events; i++)
		if (!hit[i]) {
			rt_errf(err, errlen, "no kernel tracepoint matches '%s' (see ringtrace "
				 "list -k)", cfg->events[i]);
			ret = -ENOENT;
		}
	if (!ret && fl)
		ret = rtk_filters_check(fl, err, errlen);
out:
	rtk_filters_free(fl);
	tracefs_list_free(systems);
	free(hit);
	return ret;
}

static int enable_syscalls(struct rtk_instance *in, const struct rtk_config *cfg,
			   char *err, size_t errlen)
{
	if (!cfg->all_syscalls && !cfg->nr_syscalls)
		return 0;
	struct rtk_filters *fl = NULL;
	bool *hit = calloc(2 * (cfg->nr_syscalls + 1), sizeof(*hit)), *now = hit + cfg->nr_syscalls + 1;
	char **events = tracefs_system_events(NULL, "syscalls");
	int ret = 0;
	if (!hit || !events) {
		ret = hit ? -ENOENT : -ENOMEM;
		rt_errf(err, errlen, "this kernel has no system call events");
		goto out;
	}
	if (!cfg->all_syscalls && (ret = rtk_filters_new(cfg->syscalls, cfg->syscall_filters,
							 cfg->nr_syscalls, &fl, err, errlen)) < 0)
		goto out;
	for (char **e = events; *e && !ret; e++) {
		const char *name = NULL;
		unsigned sides = cfg->syscall_sides ? cfg->syscall_sides
						    : RTK_SYSCALL_ENTRY | RTK_SYSCALL_EXIT;
		if (!strncmp(*e, "sys_enter_", 10))
			name = (sides & RTK_SYSCALL_ENTRY) ? *e + 10 : NULL;
		else if (!strncmp(*e, "sys_exit_", 9))
			name = (sides & RTK_SYSCALL_EXIT) ? *e + 9 : NULL;
		if (name && (cfg->all_syscalls ||
			     matches(cfg->syscalls, cfg->nr_syscalls, name, NULL, hit, now)) &&
		    !excluded(cfg, name, NULL))
			ret = enable_event(in, fl, now, "syscalls", *e, err, errlen);
	}
	for (size_t i = 0; !ret && !cfg->all_syscalls && i < cfg->nr_syscalls; i++)
		if (!hit[i]) {
			rt_errf(err, errlen, "no system call matches '%s' (see ringtrace list -k "
				 "--syscall)", cfg->syscalls[i]);
			ret = -ENOENT;
		}
	if (!ret && fl)
		ret = rtk_filters_check(fl, err, errlen);
out:
	rtk_filters_free(fl);
	tracefs_list_free(events);
	free(hit);
	return ret;
}

static int set_pids(struct rtk_instance *in, const struct rtk_config *cfg, char *err,
		    size_t errlen)
{
	if (!cfg->nr_pids)
		return 0;
	char *list = malloc(cfg->nr_pids * 12 + 1);
	if (!list)
		return -ENOMEM;
	size_t n = 0;
	for (size_t i = 0; i < cfg->nr_pids; i++)
		n += (size_t)sprintf(list + n, "%s%d", i ? " " : "", (int)cfg->pids[i]);
	int ret = write_file(in, "set_event_pid", list, err, errlen);
	free(list);
	if (ret < 0)
		return ret;
	/* Children join the list as they fork (and leave it as they exit). */
	return set_option(in, TRACEFS_OPTION_EVENT_FORK, true, "event-fork", err, errlen);
}

/* The state dump's classes, and trace_marker_raw writable (the markers
 * option; on by default). */
static int prepare_statedump(struct rtk_instance *in, char *err, size_t errlen)
{
	int size = 0, ret = 0;
	char *fmt = read_format(in, "ftrace", "raw_data", &size, &ret, err, errlen);
	if (!fmt)
		return ret;
	ret = rtk_formats_add_statedump(in->formats, fmt, (size_t)size);
	free(fmt);
	if (ret < 0) {
		rt_errf(err, errlen, "the format of ftrace:raw_data is not the one expected");
		return ret;
	}
	return set_option(in, TRACEFS_OPTION_MARKERS, true, "markers", err, errlen);
}

/* With contexts: the events that tell the process table about threads
 * that start, rename, exec or are freed, enabled for the conversion only
 * (hidden) unless the rules asked for them already. The few this kernel
 * lacks are left out. */
static int enable_bookkeeping(struct rtk_instance *in, const struct rtk_config *cfg,
			      char *err, size_t errlen)
{
	static const char *const events[][2] = {
		{ "task", "task_newtask" },	   { "task", "task_rename" },
		{ "sched", "sched_process_exec" }, { "sched", "sched_process_free" },
	};
	if (!cfg->contexts)
		return 0;
	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
		const char *sys = events[i][0], *ev = events[i][1];
		if (!tracefs_event_file_exists(in->tfs, sys, ev, "format"))
			continue;
		int ret = load_format(in, sys, ev, err, errlen);
		if (ret == -EEXIST)
			continue;	/* a rule enabled it: written as asked */
		if (ret < 0)
			return ret;
		rtk_formats_hide_last(in->formats);
		errno = 0;
		if (tracefs_event_file_write(in->tfs, sys, ev, "enable", "1") < 0) {
			ret = tfs_errno();
			rt_errf(err, errlen, "cannot enable %s:%s: %s", sys, ev, strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/* Enable probe p's uprobe event (defined in the instance's group) with
 * its filter. */
static int enable_probe(struct rtk_instance *in, const struct rtk_probe *p, char *err,
			size_t errlen)
{
	if (!p->filter)
		return enable_event(in, NULL, NULL, in->probe_group, p->name, err, errlen);
	struct rtk_filters *fl;
	const bool now = true;
	int ret = rtk_filters_new(&p->name, &p->filter, 1, &fl, err, errlen);
	if (ret < 0)
		return ret;
	ret = enable_event(in, fl, &now, in->probe_group, p->name, err, errlen);
	if (!ret)
		ret = rtk_filters_check(fl, err, errlen);
	rtk_filters_free(fl);
	return ret;
}

/* Define cfg's probes as uprobe events of a group of the instance's
 * (removed with it), and enable them in the instance, each with its
 * filter (a filter naming a field the probe lacks is refused, as for
 * tracepoints: rtk_filters_check). */
static int enable_probes(struct rtk_instance *in, const struct rtk_config *cfg, char *err,
			 size_t errlen)
{
	if (!cfg->nr_probes)
		return 0;
	rtk_probe_group(in->probe_group, sizeof(in->probe_group));
	struct rtk_probe_site *site = malloc(sizeof(*site));
	int ret = site ? 0 : -ENOMEM;
	for (size_t i = 0; !ret && i < cfg->nr_probes; i++) {
		const struct rtk_probe *p = &cfg->probes[i];
		ret = rtk_probe_check_name(p->name, err, errlen);
		if (!ret)
			ret = rtk_probe_resolve(p->spec, site, err, errlen);
		if (!ret)
			ret = rtk_probe_define(in->probe_group, p->name, site, err, errlen);
		if (!ret)
			ret = enable_probe(in, p, err, errlen);
	}
	free(site);
	return ret;
}

static int configure(struct rtk_instance *in, const struct rtk_config *cfg, char *err,
		     size_t errlen)
{
	/* A new instance records at once: off until rtk_instance_start. */
	int ret = write_file(in, "tracing_on", "0", err, errlen);
	if (!ret)
		ret = write_file(in, "trace_clock", cfg->clock_tsc ? "x86-tsc" : "mono", err,
				 errlen);
	if (!ret && cfg->buffer_size_kb) {
		char v[32];
		snprintf(v, sizeof(v), "%llu", (unsigned long long)cfg->buffer_size_kb);
		ret = write_file(in, "buffer_size_kb", v, err, errlen);
	}
	if (!ret)
		ret = set_option(in, TRACEFS_OPTION_OVERWRITE, cfg->overwrite, "overwrite", err,
				 errlen);
	if (!ret && cfg->wake_on_event)
		ret = write_file(in, "buffer_percent", "0", err, errlen);
	if (!ret)
		ret = prepare_statedump(in, err, errlen);
	if (!ret)
		ret = set_pids(in, cfg, err, errlen);
	if (!ret)
		ret = enable_tracepoints(in, cfg, err, errlen);
	if (!ret)
		ret = enable_syscalls(in, cfg, err, errlen);
	if (!ret)
		ret = enable_probes(in, cfg, err, errlen);
	if (!ret)
		ret = enable_bookkeeping(in, cfg, err, errlen);
	return ret;
}

int rtk_instance_create(const struct rtk_config *cfg, struct rtk_instance **out,
			char *err, size_t errlen)
{
	int ret = rtk_access(err, errlen);
	if (ret < 0)
		return ret;
	struct rtk_instance *in = calloc(1, sizeof(*in));
	if (!in)
		return -ENOMEM;
	char name[128];
	instance_name(name, sizeof(name), getpid(), cfg->session, cfg->trigger);
	if (tracefs_instance_exists(name)) {
		rt_errf(err, errlen, "the tracefs instance %s exists already", name);
		free(in);
		return -EEXIST;
	}
	errno = 0;
	in->tfs = tracefs_instance_create(name);
	if (!in->tfs) {
		ret = tfs_errno();
		rt_errf(err, errlen, "cannot create the tracefs instance %s: %s", name,
			 strerror(-ret));
		free(in);
		return ret;
	}
	in->clock_tsc = cfg->clock_tsc;
	in->buffer_size_kb = cfg->buffer_size_kb;
	in->formats = rtk_formats_new();
	if (!in->formats) {
		ret = -ENOMEM;
		goto fail;
	}
	ret = configure(in, cfg, err, errlen);
	if (ret < 0)
		goto fail;
	if (!in->nr_enabled) {
		rt_errf(err, errlen, "no kernel event to record");
		ret = -ENOENT;
		goto fail;
	}
	*out = in;
	return 0;
fail:
	rtk_instance_destroy(in);
	return ret;
}

int rtk_instance_start(struct rtk_instance *in)
{
	errno = 0;
	return tracefs_trace_on(in->tfs) < 0 ? tfs_errno() : 0;
}

int rtk_instance_stop(struct rtk_instance *in)
{
	errno = 0;
	return tracefs_trace_off(in->tfs) < 0 ? tfs_errno() : 0;
}

const char *rtk_instance_name(const struct rtk_instance *in)
{
	return tracefs_instance_get_name(in->tfs);
}

const struct rtk_formats *rtk_instance_formats(const struct rtk_instance *in)
{
	return in->formats;
}

size_t rtk_instance_nr_events(const struct rtk_instance *in)
{
	return in->nr_enabled;
}

/* The CPU's page-sized reads of trace_pipe_raw (rtk_cpus_open's path). */
static int cpu_path(unsigned cpu, char *buf, size_t len, void *arg)
{
	struct rtk_instance *in = arg;
	char file[64];
	snprintf(file, sizeof(file), "per_cpu/cpu%u/trace_pipe_raw", cpu);
	errno = 0;
	char *p = tracefs_instance_get_file(in->tfs, file);
	if (!p)
		return tfs_errno();
	int n = snprintf(buf, len, "%s", p);
	tracefs_put_tracing_file(p);
	return n >= (int)len ? -ENAMETOOLONG : 0;
}

/* The ring buffer's sub-buffer (page) size: buffer_subbuf_size_kb where
 * the kernel has it, else the system's page. */
static size_t subbuf_size(struct rtk_instance *in)
{
	char *text = tracefs_instance_file_read(in->tfs, "buffer_subbuf_size_kb", NULL);
	unsigned long kb = text ? strtoul(text, NULL, 10) : 0;
	free(text);
	long page = sysconf(_SC_PAGESIZE);
	return kb ? kb * 1024 : (page > 0 ? (size_t)page : 4096);
}

static int open_cpus(struct rtk_instance *in, char *err, size_t errlen)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);
	if (n < 1)
		n = 1;
	in->nr_cpus = (unsigned)n;
	in->page_size = subbuf_size(in);
	return rtk_cpus_open(&in->cpus, in->nr_cpus, in->page_size, cpu_path, in, err, errlen);
}

/* CPU `cpu`'s per_cpu/cpuN/stats (the caller frees it), or NULL. */
static char *cpu_stats(struct rtk_instance *in, unsigned cpu)
{
	char file[64];
	snprintf(file, sizeof(file), "per_cpu/cpu%u/stats", cpu);
	return tracefs_instance_file_read(in->tfs, file, NULL);
}

/* The value of the line "KEY VALUE" of a stats file (0 when absent). */
static uint64_t stats_value(const char *text, const char *key)
{
	const char *p = text ? strstr(text, key) : NULL;
	/* "overrun:" also ends "commit overrun:": take a line start. */
	while (p && p != text && p[-1] != '\n')
		p = strstr(p + 1, key);
	return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

/* CPU `cpu`'s counts in per_cpu/cpuN/stats (0 when unknown): events
 * read, overwritten or lost to nesting (overrun), dropped when full. */
static void kernel_counts(struct rtk_instance *in, unsigned cpu, struct rtk_reader_stats *st)
{
	char *text = cpu_stats(in, cpu);
	st->kernel_read = stats_value(text, "read events:");
	st->kernel_overrun = stats_value(text, "overrun:") + stats_value(text, "commit overrun:");
	st->kernel_dropped = stats_value(text, "dropped events:");
	free(text);
}

/* Events the kernel lost on CPU `cpu` so far, 0 when unknown. */
static uint64_t cpu_lost(struct rtk_instance *in, unsigned cpu)
{
	struct rtk_reader_stats st;
	kernel_counts(in, cpu, &st);
	return st.kernel_overrun + st.kernel_dropped;
}

uint64_t rtk_instance_buffer_used(struct rtk_instance *in)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);
	uint64_t used = 0, cap = in->buffer_size_kb * 1024;
	for (long c = 0; c < (n > 0 ? n : 1); c++) {
		char *text = cpu_stats(in, (unsigned)c);
		/* What the readers queued is not read yet either (a flight
		 * recorder's window is there): at most the buffer's size. */
		uint64_t u = stats_value(text, "bytes:") + rtk_cpus_queued(in->cpus, (unsigned)c);
		used += cap && u > cap ? cap : u;
		free(text);
	}
	return used;
}

static long pages_read(void *arg, unsigned cpu, const void **page, char *err, size_t errlen)
{
	struct rtk_instance *in = arg;
	return rtk_cpus_read(in->cpus, cpu, page, err, errlen);
}

static long pages_peek(void *arg, unsigned cpu, size_t i, void *buf)
{
	struct rtk_instance *in = arg;
	return rtk_cpus_peek(in->cpus, cpu, i, buf);
}

/* A sweep waits this long at most (a reader whose queue and backlog are
 * full waits for its converter). */
#define RTK_SWEEP_MS 100

static void pages_sweep(void *arg)
{
	struct rtk_instance *in = arg;
	rtk_cpus_sweep(in->cpus, RTK_SWEEP_MS);
}

static int pages_wait(void *arg, unsigned cpu, int fd, int timeout_ms)
{
	struct rtk_instance *in = arg;
	return rtk_cpus_wait(in->cpus, cpu, fd, timeout_ms);
}

static uint64_t pages_lost(void *arg, unsigned cpu)
{
	struct rtk_instance *in = arg;
	return cpu_lost(in, cpu) + rtk_cpus_dropped(in->cpus, cpu);
}

static long pages_dump(void *arg, int (*fn)(unsigned cpu, const void *page, size_t size,
					    void *fn_arg),
		       void *fn_arg, char *err, size_t errlen)
{
	struct rtk_instance *in = arg;
	return rtk_statedump_pages(in->formats, in->clock_tsc, fn, fn_arg, err, errlen);
}

int rtk_instance_pages(struct rtk_instance *in, struct rtk_pages *p, char *err, size_t errlen)
{
	if (!in->cpus) {
		int ret = open_cpus(in, err, errlen);
		if (ret < 0)
			return ret;
	}
	*p = (struct rtk_pages){ .read = pages_read, .lost = pages_lost, .dump = pages_dump,
				 .peek = pages_peek, .wait = pages_wait, .sweep = pages_sweep,
				 .arg = in,
				 .nr_cpus = in->nr_cpus,
				 .page_size = in->page_size };
	return 0;
}

/*
 * The kernel wakes a reader when its CPU's buffer holds this many pages,
 * or a quarter of the buffer when that is less (the instance's
 * buffer_percent): early, so that a reader kept waiting for a CPU after
 * its wake-up still has most of the buffer to go (at a quarter of 4 MiB,
 * events were lost beside other work where trace-cmd, which polls every
 * millisecond, lost none), but not at every page: each wake-up ends on a
 * partly filled page, which takes a page of the queue (a flight
 * recorder's window is counted in pages: its readers wake at a quarter)
 * and a packet of the trace.
 */
#define RTK_READERS_WAKE_PAGES 16u

static unsigned wake_percent(uint64_t kb, size_t page_size, bool ring)
{
	uint64_t pages = kb * 1024 / page_size;
	if (ring || !pages)
		return 25;
	uint64_t pct = (100 * RTK_READERS_WAKE_PAGES + pages - 1) / pages;
	return pct > 25 ? 25 : (unsigned)pct;
}

int rtk_instance_readers_start(struct rtk_instance *in, unsigned period_ms, bool ring,
			       char *err, size_t errlen)
{
	if (!in->cpus) {
		rt_errf(err, errlen, "the buffers of %s are not open", rtk_instance_name(in));
		return -EINVAL;
	}
	uint64_t kb = in->buffer_size_kb;
	if (!kb) {
		char *text = tracefs_instance_file_read(in->tfs, "buffer_size_kb", NULL);
		kb = text ? strtoull(text, NULL, 10) : 0;
		free(text);
	}
	if (!kb)
		kb = 1024;
	char pct[16];
	snprintf(pct, sizeof(pct), "%u", wake_percent(kb, in->page_size, ring));
	int ret = write_file(in, "buffer_percent", pct, err, errlen);
	if (ret < 0)
		return ret;
	/* The backlog: RTK_BACKLOG_MAX_MB per CPU, an eighth of the memory
	 * over all CPUs at most. */
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	uint64_t backlog_kb = (uint64_t)RTK_BACKLOG_MAX_MB * 1024;
	if (pages > 0 && psize > 0) {
		uint64_t share = (uint64_t)pages * (uint64_t)psize / 1024 / 8 / in->nr_cpus;
		if (share < backlog_kb)
			backlog_kb = share;
	}
	return rtk_cpus_start(in->cpus, kb, backlog_kb, period_ms, ring, err, errlen);
}

void rtk_instance_reader_stats(struct rtk_instance *in, unsigned cpu,
			       struct rtk_reader_stats *st)
{
	rtk_cpus_stats(in->cpus, cpu, st);
	kernel_counts(in, cpu, st);
}

unsigned rtk_instance_nr_cpus(const struct rtk_instance *in)
{
	return in->nr_cpus;
}

void rtk_instance_readers_stop(struct rtk_instance *in)
{
	rtk_cpus_stop(in->cpus);
}

static int put_marker(const void *rec, size_t len, void *arg)
{
	struct rtk_instance *in = arg;
	errno = 0;
	return tracefs_binary_write(in->tfs, (void *)(uintptr_t)rec, (int)len) < 0 ? tfs_errno()
										   : 0;
}

long rtk_instance_statedump(struct rtk_instance *in, char *err, size_t errlen)
{
	char why[256] = "";
	long n = rtk_statedump_walk(put_marker, in, why, sizeof(why));
	tracefs_binary_close(in->tfs);
	if (n < 0 && why[0])
		rt_errf(err, errlen, "%s", why);
	else if (n < 0)
		rt_errf(err, errlen, "cannot write the state dump into the buffers of %s: %s",
			rtk_instance_name(in),
			n == -EBADF ? "tracing is off or the buffer is full" : strerror((int)-n));
	return n;
}

int rtk_instance_poll_fd(struct rtk_instance *in, unsigned cpu)
{
	if (!in->poll_fds) {
		long n = sysconf(_SC_NPROCESSORS_CONF);
		in->nr_poll_fds = n > 0 ? (unsigned)n : 1;
		if (!(in->poll_fds = malloc(in->nr_poll_fds * sizeof(int))))
			return -ENOMEM;
		for (unsigned c = 0; c < in->nr_poll_fds; c++)
			in->poll_fds[c] = -1;
	}
	if (cpu >= in->nr_poll_fds)
		return -ENOENT;
	if (in->poll_fds[cpu] >= 0)
		return in->poll_fds[cpu];
	char file[64];
	snprintf(file, sizeof(file), "per_cpu/cpu%u/trace_pipe_raw", cpu);
	char *path = tracefs_instance_get_file(in->tfs, file);
	if (!path)
		return -ENOMEM;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	tracefs_put_tracing_file(path);
	if (fd < 0)
		return -errno;
	return in->poll_fds[cpu] = fd;
}

int rtk_instance_destroy(struct rtk_instance *in)
{
	if (!in)
		return 0;
	for (unsigned c = 0; c < in->nr_poll_fds; c++)
		if (in->poll_fds[c] >= 0)
			close(in->poll_fds[c]);
	free(in->poll_fds);
	rtk_cpus_close(in->cpus);
	int ret = 0;
	if (in->tfs) {
		tracefs_trace_off(in->tfs);
		errno = 0;
		if (tracefs_instance_destroy(in->tfs) < 0)
			ret = tfs_errno();
		tracefs_instance_free(in->tfs);
	}
	if (in->probe_group[0])
		rtk_probes_remove(in->probe_group);
	rtk_formats_free(in->formats);
	free(in);
	return ret;
}

int rtk_instances_remove_stale(void)
{
	errno = 0;
	char **names = tracefs_instances(NULL);
	if (!names) {
		int ret = errno && errno != ENOENT ? -errno : 0;
		rtk_probes_remove_stale();
		return ret;
	}
	int removed = 0;
	for (char **n = names; *n; n++) {
		size_t plen = strlen(RTK_INSTANCE_PREFIX);
		char *end;
		if (strncmp(*n, RTK_INSTANCE_PREFIX, plen))
			continue;
		long pid = strtol(*n + plen, &end, 10);
		/* Only an owner that is gone: a live pid (ours, another
		 * daemon's, or a reused one) keeps its instance. */
		if (pid <= 0 || *end != '-' || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		struct tracefs_instance *t = tracefs_instance_alloc(NULL, *n);
		if (!t)
			continue;
		tracefs_trace_off(t);
		if (tracefs_instance_destroy(t) == 0)
			removed++;
		tracefs_instance_free(t);
	}
	tracefs_list_free(names);
	rtk_probes_remove_stale();
	return removed;
}

static int list_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int rtk_list_tracepoints(int (*fn)(const char *system, const char *event, void *arg),
			 void *arg, char *err, size_t errlen)
{
	int ret = rtk_access(err, errlen);
	if (ret < 0)
		return ret;
	char **systems = tracefs_event_systems(NULL);
	if (!systems) {
		rt_errf(err, errlen, "cannot list the kernel's events");
		return -EIO;
	}
	qsort(systems, (size_t)tracefs_list_size(systems), sizeof(*systems), list_cmp);
	for (char **s = systems; *s && !ret; s++) {
		if (!strcmp(*s, "syscalls") || !strcmp(*s, "ftrace"))
			continue;
		char **events = tracefs_system_events(NULL, *s);
		if (events)
			qsort(events, (size_t)tracefs_list_size(events), sizeof(*events),
			      list_cmp);
		for (char **e = events; e && *e && !ret; e++)
			ret = fn(*s, *e, arg);
		tracefs_list_free(events);
	}
	tracefs_list_free(systems);
	return ret;
}

int rtk_list_syscalls(int (*fn)(const char *name, void *arg), void *arg, char *err,
		      size_t errlen)
{
	int ret = rtk_access(err, errlen);
	if (ret < 0)
		return ret;
	char **events = tracefs_system_events(NULL, "syscalls");
	if (!events) {
		rt_errf(err, errlen, "this kernel has no system call events");
		return -ENOENT;
	}
	qsort(events, (size_t)tracefs_list_size(events), sizeof(*events), list_cmp);
	for (char **e = events; *e && !ret; e++)
		if (!strncmp(*e, "sys_enter_", 10))
			ret = fn(*e + 10, arg);
	tracefs_list_free(events);
	return ret;
}
