/*
 * kernel_session.c - the kernel domain's data plane (the dp_kernel_*
 * hooks of rtd.h): a session's kernel channel and rules become a private
 * ftrace instance (src/kernel) at the first start, and the writer's
 * converter thread per CPU (rtk_writer_start) has the consumer write the
 * instance's buffers as CTF under OUTPUT/kernel (rtk_writer: src/consumer's
 * channel, stream files, write errors and metadata) when its CPU's reader
 * (src/kernel's per-CPU threads that empty the buffers as they fill) has
 * queued a quarter of its pages, and at least on the channel's read
 * timer. Snapshot sessions have no converters: their instance runs in
 * overwrite mode, their readers keep the newest pages (a window of the
 * buffer's size that snapshots copy without consuming it) and
 * dp_kernel_snapshot has the consumer write what it holds. A state dump
 * of every process goes into the buffer at each start, and one is
 * appended to each snapshot after what it read.
 *
 * Concurrency: the hooks run on the main thread with rtd_lock held; the
 * hooks' uses of a session's instance and writer (stop, snapshot,
 * statistics) hold the session's `lock`. The writer's converters run
 * beside them (the writer takes each CPU's stream from them in turn);
 * they read nothing of the model and never take rtd_lock, so that the
 * main thread may join them while it holds rtd_lock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/rule.h"
#include "../common/warn.h"
#include "../kernel/kernel.h"
#include "app.h"

struct kdp_session {
	pthread_mutex_t lock;		/* in, w: the hooks' uses */
	struct rtk_instance *in;
	struct rtk_writer *w;		/* snapshots only in snapshot sessions */
	bool snapshot;
	bool readers;			/* main thread: the readers run */
	uint32_t period_ms;
	uint64_t buffer_bytes;		/* all CPUs */
};

int dp_kernel_access(char *err, size_t errlen)
{
	char why[RTD_ERRLEN];
	int ret = rtk_access(why, sizeof(why));
	if (ret < 0)
		snprintf(err, errlen, "the kernel domain is not available to this session daemon: "
			 "%s (run it as root)", why);
	return ret;
}

/* A kernel rule's glob against the kernel's tracepoints ("system:event"
 * or "event") or system calls, as src/kernel enables them. */
struct rule_probe {
	const char *glob;
	bool hit;
};

static int probe_tracepoint(const char *system, const char *event, void *arg)
{
	struct rule_probe *p = arg;
	char full[512];
	snprintf(full, sizeof(full), "%s:%s", system, event);
	p->hit = rt_glob_any(&p->glob, 1, full) || rt_glob_any(&p->glob, 1, event);
	return p->hit;
}

static int probe_syscall(const char *name, void *arg)
{
	struct rule_probe *p = arg;
	p->hit = rt_glob_any(&p->glob, 1, name);
	return p->hit;
}

int dp_kernel_rule_matches(const char *glob, bool syscall, char *err, size_t errlen)
{
	struct rule_probe p = { .glob = glob };
	char why[RTD_ERRLEN];
	int ret = syscall ? rtk_list_syscalls(probe_syscall, &p, why, sizeof(why))
			  : rtk_list_tracepoints(probe_tracepoint, &p, why, sizeof(why));
	if (ret < 0) {
		snprintf(err, errlen, "cannot list the kernel's %s: %s",
			 syscall ? "system calls" : "tracepoints", why);
		return ret;
	}
	if (p.hit)
		return 0;
	if (syscall)
		snprintf(err, errlen, "no system call matches '%s' (see 'ringtrace list -k "
			 "--syscall')", glob);
	else
		snprintf(err, errlen, "no kernel tracepoint matches '%s' (see 'ringtrace list -k')",
			 glob);
	return -ENOENT;
}

int dp_kernel_remove_stale(void)
{
	return rtk_instances_remove_stale();
}

/* The consumer's word when the kernel trace's writes start failing and
 * when they work again: the daemon's log. */
static void log_error(void *arg, int err, const char *line)
{
	(void)arg;
	(void)err;
	rt_warn("kernel trace: %s", line);
}

static void kdp_free(struct kdp_session *k)
{
	rtk_writer_stop(k->w);
	rtk_writer_close(k->w);
	rtk_instance_destroy(k->in);
	pthread_mutex_destroy(&k->lock);
	free(k);
}

/* What the session's instance records: its kernel channel's enabled
 * rules. The arrays point into the rules (which outlive the call). */
struct kcfg {
	struct rtk_config cfg;
	const char **events, **event_filters;
	const char **syscalls, **syscall_filters;
	struct rtk_probe *probes;
};

static int config_of(struct rtd_session *s, const struct rtd_channel *c, struct kcfg *k,
		     char *err, size_t errlen)
{
	size_t n = 0;
	for (const struct rtd_rule *r = c->rules; r; r = r->next)
		n++;
	k->events = calloc(n + 1, sizeof(char *));
	k->syscalls = calloc(n + 1, sizeof(char *));
	k->event_filters = calloc(n + 1, sizeof(char *));
	k->syscall_filters = calloc(n + 1, sizeof(char *));
	k->probes = calloc(n + 1, sizeof(*k->probes));
	if (!k->events || !k->syscalls || !k->event_filters || !k->syscall_filters ||
	    !k->probes) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	struct rtk_config *cfg = &k->cfg;
	cfg->session = s->name;
	cfg->clock_tsc = app_clock_kind() == RTP_APP_CLOCK_TSC;
	cfg->buffer_size_kb = c->subbuf_size * c->num_subbuf / 1024;
	cfg->overwrite = c->overwrite;
	cfg->events = k->events;
	cfg->syscalls = k->syscalls;
	cfg->event_filters = k->event_filters;
	cfg->syscall_filters = k->syscall_filters;
	cfg->contexts = c->kcontexts;
	cfg->probes = k->probes;
	for (const struct rtd_rule *r = c->rules; r; r = r->next) {
		if (!r->enabled)
			continue;
		if (r->probe) {
			k->probes[cfg->nr_probes++] = (struct rtk_probe){
				.name = r->pattern, .spec = r->probe, .filter = r->filter
			};
		} else if (r->syscall) {
			k->syscall_filters[cfg->nr_syscalls] = r->filter;
			k->syscalls[cfg->nr_syscalls++] = r->pattern;
		} else {
			k->event_filters[cfg->nr_events] = r->filter;
			k->events[cfg->nr_events++] = r->pattern;
		}
	}
	if (!s->track_all) {
		if (!s->nr_tracked) {
			snprintf(err, errlen, "session %s tracks no process: its kernel events "
				 "would all be dropped ('track --pid PID' or 'track --all')", s->name);
			return -EINVAL;
		}
		cfg->pids = s->tracked;
		cfg->nr_pids = s->nr_tracked;
	}
	return 0;
}

/* The session's instance, configured, and (but in snapshot sessions) its
 * trace directory OUTPUT/kernel. */
static int kdp_create(struct rtd_session *s, const struct rtd_channel *c,
		      struct kdp_session **out, char *err, size_t errlen)
{
	struct kcfg kc = { 0 };
	struct kdp_session *k = calloc(1, sizeof(*k));
	if (!k) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	pthread_mutex_init(&k->lock, NULL);
	k->period_ms = c->read_timer_ms ? c->read_timer_ms : 100;
	long cpus = sysconf(_SC_NPROCESSORS_CONF);
	k->buffer_bytes = c->subbuf_size * c->num_subbuf * (uint64_t)(cpus > 0 ? cpus : 1);
	int ret;
	if ((ret = config_of(s, c, &kc, err, errlen)) < 0)
		goto fail;
	char why[RTD_ERRLEN];
	if ((ret = rtk_instance_create(&kc.cfg, &k->in, why, sizeof(why))) < 0) {
		snprintf(err, errlen, "kernel domain of session %s: %s", s->name, why);
		goto fail;
	}
	char dir[PATH_MAX];
	if (snprintf(dir, sizeof(dir), "%s/kernel", s->output) >= (int)sizeof(dir)) {
		snprintf(err, errlen, "output path too long");
		ret = -ENAMETOOLONG;
		goto fail;
	}
	k->snapshot = s->snapshot;
	struct rtk_writer_opts wo = { .dir = s->snapshot ? NULL : dir, .window = s->snapshot,
				      .trace_name = s->name,
				      .buffer_size_kb = kc.cfg.buffer_size_kb,
				      .contexts = c->kcontexts,
				      .log = log_error };
	ctf_uuid_generate(wo.uuid);
	app_clock_info(&wo.clock);
	struct rtk_pages pages;
	ret = rtk_instance_pages(k->in, &pages, why, sizeof(why));
	if (!ret)
		ret = rtk_writer_open(&pages, rtk_instance_formats(k->in), &wo, &k->w, why,
				      sizeof(why));
	if (ret < 0) {
		snprintf(err, errlen, "kernel trace of session %s: %s", s->name, why);
		goto fail;
	}
	*out = k;
	ret = 0;
	goto out;
fail:
	kdp_free(k);
out:
	free(kc.events);
	free(kc.syscalls);
	free(kc.event_filters);
	free(kc.syscall_filters);
	free(kc.probes);
	return ret;
}

/* The session's kernel channel when it records something. */
static const struct rtd_channel *kernel_channel(const struct rtd_session *s)
{
	const struct rtd_channel *c = s->kchannels;
	if (!c || !c->enabled)
		return NULL;
	for (const struct rtd_rule *r = c->rules; r; r = r->next)
		if (r->enabled)
			return c;
	return NULL;
}

/* The state dump into the instance's buffer (at each start, as
 * LTTng's); a failure is logged, tracing goes on. */
static void statedump(const struct rtd_session *s, struct kdp_session *k)
{
	char why[RTD_ERRLEN];
	if (rtk_instance_statedump(k->in, why, sizeof(why)) < 0)
		rt_warn("session %s: the kernel trace has no state dump: %s", s->name, why);
}

int dp_kernel_start(struct rtd_session *s, char *err, size_t errlen)
{
	struct kdp_session *k = s->kdp;
	if (!k) {
		const struct rtd_channel *c = kernel_channel(s);
		if (!c)
			return 0;
		int ret = dp_kernel_access(err, errlen);
		if (ret < 0 || (ret = kdp_create(s, c, &k, err, errlen)) < 0)
			return ret;
		s->kdp = k;
	}
	int ret = rtk_instance_start(k->in);
	if (ret < 0) {
		snprintf(err, errlen, "cannot start the kernel tracing of session %s: %s", s->name,
			 strerror(-ret));
		return ret;
	}
	statedump(s, k);
	/* Moved into the trace at once: in a small buffer in discard mode the
	 * dump would otherwise leave no room for the events until the first
	 * read. */
	pthread_mutex_lock(&k->lock);
	rtk_writer_read(k->w);
	pthread_mutex_unlock(&k->lock);
	char why[RTD_ERRLEN];
	/* A snapshot session's readers keep the newest pages (ring). */
	if ((ret = rtk_instance_readers_start(k->in, k->period_ms, k->snapshot, why,
					      sizeof(why))) < 0)
		snprintf(err, errlen, "kernel trace of session %s: %s", s->name, why);
	if (!ret && (ret = rtk_writer_start(k->w, k->period_ms, why, sizeof(why))) < 0)
		snprintf(err, errlen, "kernel trace of session %s: %s", s->name, why);
	if (ret < 0) {
		rtk_instance_stop(k->in);
		rtk_instance_readers_stop(k->in);
		rtk_writer_stop(k->w);
	}
	k->readers = ret == 0;
	return ret;
}

int dp_kernel_stop(struct rtd_session *s, char *err, size_t errlen)
{
	struct kdp_session *k = s->kdp;
	if (!k)
		return 0;
	int ret = rtk_instance_stop(k->in);
	rtk_instance_readers_stop(k->in);
	k->readers = false;
	rtk_writer_stop(k->w);
	pthread_mutex_lock(&k->lock);
	rtk_writer_drain(k->w, NULL);
	pthread_mutex_unlock(&k->lock);
	int werr = dp_kernel_errors(s, true, err, errlen);
	if (werr < 0)
		return werr;
	if (ret < 0)
		snprintf(err, errlen, "cannot stop the kernel tracing of session %s: %s", s->name,
			 strerror(-ret));
	return ret;
}

int dp_kernel_errors(struct rtd_session *s, bool take, char *err, size_t errlen)
{
	struct kdp_session *k = s->kdp;
	if (!k)
		return 0;
	char msg[RTD_ERRLEN];
	pthread_mutex_lock(&k->lock);
	int ret = rtk_writer_error(k->w, take, msg, sizeof(msg));
	pthread_mutex_unlock(&k->lock);
	if (ret)
		snprintf(err, errlen, "kernel trace: %s", msg);
	return ret;
}

void dp_kernel_destroy(struct rtd_session *s)
{
	if (s->kdp)
		kdp_free(s->kdp);
	s->kdp = NULL;
}

int dp_kernel_snapshot(struct rtd_session *s, const char *dir, uint64_t max_size, char *err,
		       size_t errlen)
{
	struct kdp_session *k = s->kdp;
	if (!k)
		return 0;
	char path[PATH_MAX], why[RTD_ERRLEN];
	if (snprintf(path, sizeof(path), "%s/kernel", dir) >= (int)sizeof(path)) {
		snprintf(err, errlen, "snapshot directory name too long");
		return -ENAMETOOLONG;
	}
	/* The readers stop (each after a last sweep of its buffer) while the
	 * snapshot copies what they keep: the window stands still. */
	if (k->snapshot)
		rtk_instance_readers_stop(k->in);
	pthread_mutex_lock(&k->lock);
	int ret = rtk_writer_snapshot(k->w, path, max_size, why, sizeof(why));
	pthread_mutex_unlock(&k->lock);
	if (ret < 0)
		snprintf(err, errlen, "kernel snapshot: %s", why);
	if (k->snapshot && k->readers &&
	    rtk_instance_readers_start(k->in, k->period_ms, true, why, sizeof(why)) < 0)
		rt_warn("session %s: the kernel's readers did not start again after the "
			"snapshot (the buffers keep the newest events): %s", s->name, why);
	return ret;
}

int dp_kernel_rotate(struct rtd_session *s, const char *root, char *err, size_t errlen)
{
	struct kdp_session *k = s->kdp;
	if (!k || k->snapshot)
		return 0;
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s/kernel", root) >= (int)sizeof(path)) {
		snprintf(err, errlen, "trace chunk path too long under %s", root);
		return -ENAMETOOLONG;
	}
	/* The rotation point: the per-CPU readers stop after a last sweep of
	 * their CPU's buffer, the converters stop, and the writer reads the
	 * readers' queues, then what the buffers hold now
	 * (rtk_instance_readers_stop's order), into the chunk that ends;
	 * then the readers and converters start again for the next. */
	bool reading = k->readers;
	rtk_instance_readers_stop(k->in);
	rtk_writer_stop(k->w);
	pthread_mutex_lock(&k->lock);
	int ret = rtk_writer_rotate(k->w, path);
	pthread_mutex_unlock(&k->lock);
	if (ret < 0)
		snprintf(err, errlen, "kernel trace: cannot go on in %s: %s", path, strerror(-ret));
	if (!reading)
		return ret;
	char why[RTD_ERRLEN];
	int r = rtk_instance_readers_start(k->in, k->period_ms, false, why, sizeof(why));
	if (!r)
		r = rtk_writer_start(k->w, k->period_ms, why, sizeof(why));
	if (r < 0) {
		snprintf(err, errlen, "kernel trace of session %s: %s", s->name, why);
		k->readers = false;
	}
	return ret < 0 ? ret : r;
}

int dp_kernel_stats(struct rtd_session *s, struct rtd_channel_stats *st)
{
	memset(st, 0, sizeof(*st));
	struct kdp_session *k = s->kdp;
	if (!k)
		return 0;
	st->buffer_bytes = k->buffer_bytes;
	st->nr_buffer_sets = 1;
	struct rtk_writer_stats ws;
	pthread_mutex_lock(&k->lock);
	if (s->active && !k->snapshot)
		rtk_writer_read(k->w);
	/* What the kernel's buffers hold (a flight recorder's fill, or what
	 * the readers have not taken yet). */
	st->used_bytes = rtk_instance_buffer_used(k->in);
	rtk_writer_stats(k->w, &ws);
	pthread_mutex_unlock(&k->lock);
	if (k->snapshot)
		return 0;
	st->events = ws.events;
	st->events_lost = ws.lost;
	st->bytes_written = ws.bytes;
	return 0;
}
