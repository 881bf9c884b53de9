/*
 * record_kernel.c - the kernel side of `ringtrace record -k`: a private
 * tracefs instance recording CMD's process tree (or every process)
 * into DIR/kernel (src/kernel) while CMD runs, after a state dump of
 * every process of the machine: a reader thread per CPU moves the
 * pages out of the kernel's buffers as they fill
 * (rtk_instance_readers_start) and a converter thread per CPU converts
 * them into the trace through the consumer (rtk_writer_start) when its
 * reader's queue is a quarter full, and at least every
 * RECORD_KERNEL_POLL_MS;
 * after CMD ends the instance is stopped, drained (rtk_writer_drain) and
 * removed, and the metadata written again
 * with the clock as calibrated over the whole run. The kernel trace's
 * clock names the user-space trace's uuid
 * (record_opts.trace_uuid): it is the same clock, and babeltrace2 merges
 * traces whose clocks have the same uuid only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../kernel/kernel.h"
#include "cli.h"
#include "record.h"

#define RECORD_KERNEL_POLL_MS 20
#define RECORD_KERNEL_BUFFER_KB 4096	/* per CPU */
#define RECORD_KERNEL_MAX_GLOBS 256

struct record_kernel {
	struct rtk_instance *in;
	struct rtk_writer *trace;
	bool running;		/* converters started */
	bool quiet;		/* no account of the readers at the end */
	uint8_t clock_uuid[16];
	char *lists;		/* the globs' storage */
	struct rtk_probe *probes;
	char *probe_text;	/* the probes' names and specs */
	size_t nr_probes;
};

/* Split the comma list `s` into out[]; returns the count or -E2BIG. */
static int split(char *s, const char **out, size_t max)
{
	size_t n = 0;
	for (char *save = NULL, *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (n == max)
			return -E2BIG;
		out[n++] = t;
	}
	return (int)n;
}

/* Room for the probes' names and specs: a probe's name (at most
 * RTK_PROBE_NAME_MAX) and spec (PATH_MAX and the function) each. */
#define PROBE_TEXT (RTK_PROBE_NAME_MAX + 1 + PATH_MAX + 512)

/* Add probe `name` at `spec` (printf-formatted into k's storage). */
static int add_probe(struct record_kernel *k, const char *name, size_t name_len,
		     const char *suffix, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int add_probe(struct record_kernel *k, const char *name, size_t name_len,
		     const char *suffix, const char *fmt, ...)
{
	char *t = k->probe_text + k->nr_probes * 2 * PROBE_TEXT;
	int n = snprintf(t, PROBE_TEXT, "%.*s%s", (int)name_len, name, suffix);
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(t + PROBE_TEXT, PROBE_TEXT, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= PROBE_TEXT || m < 0 || m >= PROBE_TEXT) {
		cli_error("probe '%.*s' is too long", (int)name_len, name);
		return -E2BIG;
	}
	k->probes[k->nr_probes++] = (struct rtk_probe){ .name = t, .spec = t + PROBE_TEXT };
	return 0;
}

/* --probe's list: PATH:FUNC (entry FUNC_entry and return FUNC_return, PATH
 * relative to the current directory), elf:PATH:FUNC[%return] (FUNC,
 * FUNC_return), sdt:PATH:PROVIDER:NAME (PROVIDER_NAME). Each probe is
 * resolved now, so that a bad one stops record before CMD runs. */
static int probes_of(struct record_kernel *k, const char *list)
{
	char *copy = strdup(list), *save = NULL;
	size_t max = 2;	/* two per item at most */
	for (const char *c = list; *c; c++)
		max += 2 * (*c == ',');
	k->probes = calloc(max, sizeof(*k->probes));
	k->probe_text = calloc(max, 2 * PROBE_TEXT);
	int ret = copy && k->probes && k->probe_text ? 0 : -ENOMEM;
	for (char *p = copy ? strtok_r(copy, ",", &save) : NULL; p && !ret;
	     p = strtok_r(NULL, ",", &save)) {
		const char *func = strrchr(p, ':');
		if (!strncmp(p, "elf:", 4) && func) {
			size_t n = strcspn(func + 1, "%");
			ret = add_probe(k, func + 1, n, func[1 + n] ? "_return" : "", "%s", p);
		} else if (!strncmp(p, "sdt:", 4) && func) {
			const char *prov = func;
			while (prov > p + 4 && prov[-1] != ':')
				prov--;
			ret = add_probe(k, prov, strlen(prov), "", "%s", p);
			if (!ret)
				k->probe_text[(k->nr_probes - 1) * 2 * PROBE_TEXT + (func - prov)] =
					'_';
		} else if (func && func != p && func[1]) {
			/* Absolute, as given (the messages name it so). */
			char cwd[PATH_MAX] = "";
			if (p[0] != '/' && !getcwd(cwd, sizeof(cwd))) {
				cli_error("probe '%s': the current directory: %s", p, strerror(errno));
				ret = -errno;
				break;
			}
			const char *rel = p;
			while (*cwd && !strncmp(rel, "./", 2))
				rel += 2;
			char path[PATH_MAX];
			snprintf(path, sizeof(path), "%s%s%.*s", cwd, *cwd ? "/" : "",
				 (int)(func - rel), rel);
			ret = add_probe(k, func + 1, strlen(func + 1), "_entry", "elf:%s:%s", path,
					func + 1);
			if (!ret)
				ret = add_probe(k, func + 1, strlen(func + 1), "_return",
						"elf:%s:%s%%return", path, func + 1);
		} else {
			cli_error("probe '%s': expected PATH:FUNCTION, elf:PATH:FUNCTION[%%return] "
				  "or sdt:PATH:PROVIDER:NAME", p);
			ret = -EINVAL;
		}
	}
	char err[1024];
	for (size_t i = 0; !ret && i < k->nr_probes; i++)
		if ((ret = rtk_probe_check(k->probes[i].name, k->probes[i].spec, err,
					   sizeof(err))) < 0)
			cli_error("%s", err);
	free(copy);
	return ret;
}

static struct ctf_clock_info clock_info(const struct record_kernel *k, bool final)
{
	struct rt_clock_desc d;
	rt_clock_describe(&d, final);
	struct ctf_clock_info c = { .name = d.name, .description = d.description,
				    .freq = d.freq, .offset_s = d.offset_s, .offset = d.offset,
				    .precision = d.precision, .has_uuid = true };
	memcpy(c.uuid, k->clock_uuid, sizeof(c.uuid));
	return c;
}

static int configure(struct record_kernel *k, const struct record_opts *o, pid_t *pid,
		     const char *dir)
{
	const char **globs = calloc(2 * RECORD_KERNEL_MAX_GLOBS, sizeof(*globs));
	k->lists = malloc(2 * sizeof(o->kernel_events));
	if (!globs || !k->lists) {
		free(globs);
		return -ENOMEM;
	}
	char *ev = k->lists, *sc = k->lists + sizeof(o->kernel_events);
	snprintf(ev, sizeof(o->kernel_events), "%s", o->kernel_events);
	snprintf(sc, sizeof(o->kernel_events), "%s", o->syscalls);
	int ne = split(ev, globs, RECORD_KERNEL_MAX_GLOBS);
	int ns = split(sc, globs + RECORD_KERNEL_MAX_GLOBS, RECORD_KERNEL_MAX_GLOBS);
	if (ne < 0 || ns < 0) {
		cli_error("too many kernel event patterns");
		free(globs);
		return -E2BIG;
	}
	int ret = probes_of(k, o->probes);
	if (ret < 0) {
		free(globs);
		return ret;
	}
	rt_clock_init(o->clock && !strcmp(o->clock, "monotonic"));
	bool all_ev = ne == 1 && !strcmp(globs[0], "all");
	bool all_sc = ns == 1 && !strcmp(globs[RECORD_KERNEL_MAX_GLOBS], "all");
	struct rtk_config cfg = {
		.session = "record", .clock_tsc = rt_clock_tsc(),
		.buffer_size_kb = RECORD_KERNEL_BUFFER_KB, .overwrite = o->overwrite,
		.events = globs, .nr_events = all_ev ? 0 : (size_t)ne, .all_events = all_ev,
		.syscalls = globs + RECORD_KERNEL_MAX_GLOBS,
		.nr_syscalls = all_sc ? 0 : (size_t)ns, .all_syscalls = all_sc,
		.pids = pid, .nr_pids = o->all_processes ? 0 : 1,
		.contexts = o->kernel_contexts,
		.probes = k->probes, .nr_probes = k->nr_probes,
	};
	char err[1024];
	rtk_instances_remove_stale();
	ret = rtk_instance_create(&cfg, &k->in, err, sizeof(err));
	free(globs);
	if (ret < 0) {
		cli_error("%s", err);
		return ret;
	}
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/kernel", dir);
	struct rtk_writer_opts wo = { .dir = path, .trace_name = "kernel",
				      .clock = clock_info(k, false),
				      .buffer_size_kb = RECORD_KERNEL_BUFFER_KB,
				      .contexts = o->kernel_contexts };
	ctf_uuid_generate(wo.uuid);
	struct rtk_pages pages;
	ret = rtk_instance_pages(k->in, &pages, err, sizeof(err));
	if (!ret)
		ret = rtk_writer_open(&pages, rtk_instance_formats(k->in), &wo, &k->trace, err,
				      sizeof(err));
	if (ret < 0)
		cli_error("%s", err);
	return ret;
}

int record_kernel_start(struct record_kernel **out, const struct record_opts *o, pid_t pid,
			const char *dir)
{
	struct record_kernel *k = calloc(1, sizeof(*k));
	*out = k;
	if (!k)
		return -ENOMEM;
	memcpy(k->clock_uuid, o->trace_uuid, sizeof(k->clock_uuid));
	/* RINGTRACE_KERNEL_STATS=1: the readers' account even with -q (for
	 * benchmarks: docs/kernel.md). */
	const char *st = getenv("RINGTRACE_KERNEL_STATS");
	k->quiet = o->quiet && !(st && !strcmp(st, "1"));
	int ret = configure(k, o, &pid, dir);
	if (ret < 0)
		return ret;
	ret = rtk_instance_start(k->in);
	if (ret < 0) {
		cli_error("cannot start the tracefs instance %s: %s", rtk_instance_name(k->in),
			  strerror(-ret));
		return ret;
	}
	/* Before CMD runs (it waits on the caller's pipe): every process and
	 * thread there is then, CMD's forked process included. */
	char why[1024];
	if (rtk_instance_statedump(k->in, why, sizeof(why)) < 0)
		cli_error("the kernel trace has no state dump: %s", why);
	ret = rtk_instance_readers_start(k->in, RECORD_KERNEL_POLL_MS, false, why, sizeof(why));
	if (ret < 0) {
		cli_error("%s", why);
		return ret;
	}
	ret = rtk_writer_start(k->trace, RECORD_KERNEL_POLL_MS, why, sizeof(why));
	if (ret < 0) {
		cli_error("%s", why);
		return ret;
	}
	k->running = true;
	return 0;
}

/* Where each CPU's events went: out of the kernel's buffer by the
 * reader (into its queue, or its backlog when the queue was full), or
 * lost in the kernel's buffer (on stderr, with the summary). */
static void print_readers(struct record_kernel *k)
{
	for (unsigned c = 0; c < rtk_instance_nr_cpus(k->in); c++) {
		struct rtk_reader_stats st;
		rtk_instance_reader_stats(k->in, c, &st);
		fprintf(stderr,
			"ringtrace: kernel CPU %u: %llu pages read, %llu through the backlog (at "
			"most %llu at once), %llu waits on a full backlog, at most %llu ms between "
			"passes; ftrace's buffer: %llu events read, %llu overwritten, %llu "
			"dropped\n",
			c, (unsigned long long)st.pages, (unsigned long long)st.backlog_pages,
			(unsigned long long)st.backlog_peak, (unsigned long long)st.full_waits,
			(unsigned long long)(st.longest_gap_ns / 1000000),
			(unsigned long long)st.kernel_read, (unsigned long long)st.kernel_overrun,
			(unsigned long long)st.kernel_dropped);
	}
}

int record_kernel_finish(struct record_kernel *k)
{
	if (!k)
		return 0;
	int ret = 0;
	if (k->in) {
		rtk_instance_stop(k->in);
		rtk_instance_readers_stop(k->in);
	}
	if (k->running) {
		rtk_writer_stop(k->trace);
		struct ctf_clock_info c = clock_info(k, true);
		rtk_writer_drain(k->trace, &c);
		char msg[1024];
		/* The first error: a write that failed is cut back and its
		 * events counted lost in the trace, which stays readable. */
		if (rtk_writer_error(k->trace, true, msg, sizeof(msg)) < 0) {
			cli_error("the kernel trace is incomplete: %s", msg);
			ret = -EIO;
		}
		struct rtk_writer_stats st;
		rtk_writer_stats(k->trace, &st);
		if (st.unknown)
			cli_error("%llu kernel events of unknown classes were left out",
				  (unsigned long long)st.unknown);
	}
	rtk_writer_close(k->trace);
	if (k->running && !k->quiet)
		print_readers(k);
	if (k->in && rtk_instance_destroy(k->in) < 0) {
		cli_error("cannot remove the tracefs instance");
		ret = ret ? ret : -EIO;
	}
	free(k->lists);
	free(k->probes);
	free(k->probe_text);
	free(k);
	return ret;
}
