/*
 * record_kernel.c - the kernel side of `ringtrace record -k`: a private
 * tracefs instance recording CMD's process tree (or every process)
 * into DIR/kernel (src/kernel) while CMD runs, after a state dump of
 * every process of the machine: a reader thread per CPU moves the
 * pages out of the kernel's buffers as they fill
 * (rtk_instance_readers_start) and a thread of `record` converts them
 * into the trace through the consumer (rtk_writer_read) when a reader's
 * queue is a quarter full, and at least every RECORD_KERNEL_POLL_MS;
 * after CMD ends the instance is stopped, drained (rtk_writer_drain) and
 * removed, and the metadata written again
 * with the clock as calibrated over the whole run. The kernel trace's
 * clock names the user-space trace's uuid
 * (record_opts.trace_uuid): it is the same clock, and babeltrace2 merges
 * traces whose clocks have the same uuid only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
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
	pthread_t thread;
	bool running;
	int stop;		/* atomic: the main thread asks the poller to end */
	uint8_t clock_uuid[16];
	char *lists;		/* the globs' storage */
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

static void *poller(void *arg)
{
	struct record_kernel *k = arg;
	/* Acquire: pairs with the release store in record_kernel_finish;
	 * nothing is published through it but the request itself. */
	while (!__atomic_load_n(&k->stop, __ATOMIC_ACQUIRE)) {
		rtk_writer_read(k->trace);
		rtk_instance_wait(k->in, -1, RECORD_KERNEL_POLL_MS);
	}
	return NULL;
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
	};
	char err[1024];
	rtk_instances_remove_stale();
	int ret = rtk_instance_create(&cfg, &k->in, err, sizeof(err));
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
	ret = rtk_instance_readers_start(k->in, RECORD_KERNEL_POLL_MS, why, sizeof(why));
	if (ret < 0) {
		cli_error("%s", why);
		return ret;
	}
	ret = pthread_create(&k->thread, NULL, poller, k);
	if (ret) {
		cli_error("cannot start the kernel trace's reader: %s", strerror(ret));
		return -ret;
	}
	k->running = true;
	return 0;
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
		/* Release: pairs with the poller's acquire load. */
		__atomic_store_n(&k->stop, 1, __ATOMIC_RELEASE);
		pthread_join(k->thread, NULL);
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
	if (k->in && rtk_instance_destroy(k->in) < 0) {
		cli_error("cannot remove the tracefs instance");
		ret = ret ? ret : -EIO;
	}
	free(k->lists);
	free(k);
	return ret;
}
