/*
 * app_session.c - the session hooks of rtd.h (start, stop, destroy, rule
 * changes, snapshots, statistics, shutdown) on top of the app registry:
 * every connected program gets its enablement updated, every trace of the
 * session is drained or snapshotted through the consumers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/array.h"
#include "../common/fs_util.h"
#include "app.h"

int dp_session_start(struct rtd_session *s, char *err, size_t errlen)
{
	if (!app_session_of(s)) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	app_clock_prepare();
	/* The last stop's drain closed the buffers (rb_close_cpu): open
	 * them before any program records again. */
	for (struct dp_trace *t = ((struct app_session *)s->dp)->traces; t; t = t->next)
		for (uint32_t i = 0; i < t->nr_bufsets; i++)
			if (t->bufsets[i].rb.cpus)
				rb_reopen(&t->bufsets[i].rb);
	int ret = 0;
	for (struct app *a = app_list; a; a = a->next)
		if (app_sync_session(a, s, true) < 0)
			ret = -ENOMEM;
	/* Each program applies its enablement, then dumps its state into
	 * the buffers it now has (the answer waits for both). */
	app_statedump_all();
	if (ret < 0)
		snprintf(err, errlen, "some programs could not get buffers (see the daemon's log)");
	return ret;
}

int dp_session_stop(struct rtd_session *s, char *err, size_t errlen)
{
	for (struct app *a = app_list; a; a = a->next)
		app_disable_session(a, s);
	/* Once every program applied the disabling, what they recorded is
	 * reserved, but for probes already past their target lookup: the
	 * drain closes the buffers first, so those never land after it
	 * (rb_close_cpu: they are counted as discarded). */
	app_sync_all();
	struct app_session *as = s->dp;
	for (struct dp_trace *t = as ? as->traces : NULL; t; t = t->next)
		if (t->consumer)
			consumer_trace_drain(t);
	return dp_session_errors(s, true, err, errlen);
}

int dp_session_errors(struct rtd_session *s, bool take, char *err, size_t errlen)
{
	struct app_session *as = s->dp;
	int ret = 0;
	char msg[RTD_ERRLEN];
	for (struct dp_trace *t = as ? as->traces : NULL; t; t = t->next) {
		int r = consumer_trace_error(t, take, msg, sizeof(msg));
		if (r < 0 && !ret) {
			ret = r;
			snprintf(err, errlen, "%s", msg);
		}
	}
	if (!ret && as && as->gone_err) {
		ret = as->gone_err;
		snprintf(err, errlen, "%s", as->gone_msg);
	}
	if (take && as)
		as->gone_err = 0;
	return ret;
}

int dp_session_rules_changed(struct rtd_session *s, char *err, size_t errlen)
{
	int ret = 0;
	for (struct app *a = app_list; a; a = a->next)
		if (app_sync_session(a, s, s->active) < 0)
			ret = -ENOMEM;
	app_sync_all();
	if (ret < 0)
		snprintf(err, errlen, "some programs could not get buffers (see the daemon's log)");
	return ret;
}

void dp_session_destroy(struct rtd_session *s)
{
	struct app_session *as = s->dp;
	if (!as)
		return;
	uint8_t msg[RTP_APP_DISABLE_SESSION_SIZE];
	rtp_app_disable_session_encode(msg, s->id);
	for (struct app *a = app_list; a; a = a->next) {
		app_send(a, RTP_APP_DISABLE_SESSION, 0, msg, sizeof(msg), -1);
		app_forget_session(a, s);
	}
	while (as->traces) {
		struct dp_trace *t = as->traces;
		as->traces = t->next;
		app_trace_free(t);
	}
	free(as->gone);
	free(as);
	s->dp = NULL;
}

void app_session_keep_stats(struct dp_trace *t)
{
	struct app_session *as = t->session ? t->session->dp : NULL;
	if (!as)
		return;
	if (RT_ARRAY_GROW_ZEROED(as->gone, as->nr_gone, t->nr_bufsets, 8) < 0)
		return; /* status then counts without this trace */
	char msg[sizeof(as->gone_msg)];
	int err = consumer_trace_error(t, true, msg, sizeof(msg));
	if (err && !as->gone_err) {
		as->gone_err = err;
		memcpy(as->gone_msg, msg, sizeof(msg));
	}
	for (uint32_t i = 0; i < t->nr_bufsets; i++) {
		struct rtd_channel_stats one = { 0 };
		if (!t->bufsets[i].channel || consumer_bufset_stats(&t->bufsets[i], &one) < 0)
			continue;
		struct rtd_channel_stats *g = &as->gone[i];
		g->events += one.events;
		g->events_lost += one.events_lost;
		g->subbufs_lost += one.subbufs_lost;
		g->packets_corrupt += one.packets_corrupt;
		g->bytes_written += one.bytes_written;
	}
}

void dp_session_sync(struct rtd_session *s)
{
	struct app_session *as = s->dp;
	for (struct dp_trace *t = as ? as->traces : NULL; t; t = t->next)
		if (t->consumer)
			consumer_trace_sync(t);
}

/* The trace's directory relative to the session's current chunk (its
 * output until the first rotation; "" when flat). */
static const char *relative_dir(const struct rtd_session *s, const struct dp_trace *t)
{
	const char *root = rtd_session_chunk(s);
	size_t n = strlen(root);
	if (n && !strncmp(t->dir, root, n) && (t->dir[n] == '/' || !t->dir[n]))
		return t->dir + n + (t->dir[n] == '/');
	return t->dir;
}

int dp_session_rotate(struct rtd_session *s, const char *root, char *err, size_t errlen)
{
	struct app_session *as = s->dp;
	int ret = 0;
	for (struct dp_trace *t = as ? as->traces : NULL; t; t = t->next) {
		if (!t->consumer)
			continue;
		char path[PATH_MAX], e[RTD_ERRLEN];
		const char *rel = relative_dir(s, t);
		int n = snprintf(path, sizeof(path), "%s%s%s", root, *rel ? "/" : "", rel);
		int r = n < 0 || (size_t)n >= sizeof(path) ? -ENAMETOOLONG
							     : consumer_trace_rotate(t, path, e, sizeof(e));
		if (r == -ENAMETOOLONG && n >= 0 && (size_t)n >= sizeof(path))
			snprintf(e, sizeof(e), "trace chunk path too long under %s", root);
		if (r < 0 && !ret) {
			ret = r;
			snprintf(err, errlen, "%s", e);
		}
	}
	/* The new chunk names the programs' threads and objects too. */
	if (s->active)
		app_statedump_all();
	return ret;
}

int dp_snapshot_record(struct rtd_session *s, const char *dir, uint64_t max_size,
		       uint32_t others, uint64_t *share, char *out_path, size_t out_len,
		       char *err, size_t errlen)
{
	struct app_session *as = app_session_of(s);
	const char *base = dir && *dir ? dir : s->output;
	if (!as) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (!base[0]) {
		snprintf(err, errlen, "session %s has no snapshot output: give one with -o DIR",
			 s->name);
		return -EINVAL;
	}
	char date[32];
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	strftime(date, sizeof(date), "%Y%m%d-%H%M%S", &tm);
	int n = snprintf(out_path, out_len, "%s/snapshot-%u-%s", base, as->nr_snapshots, date);
	if (n < 0 || (size_t)n >= out_len) {
		snprintf(err, errlen, "snapshot directory name too long");
		return -ENAMETOOLONG;
	}
	char why[PATH_MAX + 256];
	int ret = rt_mkdir_p(out_path, why, sizeof(why));
	if (ret < 0 && ret != -EEXIST) {
		snprintf(err, errlen, "cannot create the snapshot directory: %s", why);
		return ret;
	}
	as->nr_snapshots++;
	/* The programs' state dumps go into the buffers first (the
	 * snapshot's flush closes the packets that hold them). */
	app_statedump_all();
	uint32_t nr = others;
	for (struct dp_trace *t = as->traces; t; t = t->next)
		nr++;
	*share = max_size / (nr ? nr : 1);
	for (struct dp_trace *t = as->traces; t; t = t->next) {
		char path[PATH_MAX];
		const char *rel = relative_dir(s, t);
		n = snprintf(path, sizeof(path), "%s%s%s", out_path, *rel ? "/" : "", rel);
		if (n < 0 || (size_t)n >= sizeof(path)) {
			snprintf(err, errlen, "snapshot directory name too long");
			return -ENAMETOOLONG;
		}
		ret = consumer_snapshot(t, path, *share, err, errlen);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int dp_channel_stats(const struct rtd_session *s, const struct rtd_channel *c,
		     struct rtd_channel_stats *st)
{
	memset(st, 0, sizeof(*st));
	const struct app_session *as = s->dp;
	if (as && c->id < as->nr_gone) {
		const struct rtd_channel_stats *g = &as->gone[c->id];
		st->events = g->events;
		st->events_lost = g->events_lost;
		st->subbufs_lost = g->subbufs_lost;
		st->packets_corrupt = g->packets_corrupt;
		st->bytes_written = g->bytes_written;
	}
	for (const struct dp_trace *t = as ? as->traces : NULL; t; t = t->next) {
		if (c->id >= t->nr_bufsets || !t->bufsets[c->id].channel)
			continue;
		struct rtd_channel_stats one;
		memset(&one, 0, sizeof(one));
		int r = consumer_bufset_stats(&t->bufsets[c->id], &one);
		if (r < 0)
			return r;
		st->buffer_bytes += one.buffer_bytes;
		st->used_bytes += one.used_bytes;
		st->events += one.events;
		st->events_lost += one.events_lost;
		st->subbufs_lost += one.subbufs_lost;
		st->packets_corrupt += one.packets_corrupt;
		st->bytes_written += one.bytes_written;
		st->nr_buffer_sets++;
	}
	return 0;
}

void dp_shutdown(void)
{
	for (struct rtd_session *s = rtd_sessions; s; s = s->next)
		dp_session_destroy(s);
	while (app_list)
		app_drop(app_list);
}
