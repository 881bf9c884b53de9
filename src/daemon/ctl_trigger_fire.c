/*
 * ctl_trigger_fire.c - the conditions the daemon evaluates itself, and
 * what a firing trigger does (docs/triggers.md).
 *
 * Polled conditions: every CTL_TRIGGER_POLL_MS (a timerfd in the loop,
 * armed only while such a trigger exists) each channel-buffer-usage-ge|le
 * and session-consumed-size-ge condition is evaluated from the
 * consumer's counters (dp_channel_stats, dp_kernel_stats). A condition
 * fires when it becomes satisfied: at the first poll where it holds after
 * one where it did not (or where its session or channel did not exist or
 * was not active), like LTTng's, so a buffer that stays full fires once,
 * and again after it drained below the threshold.
 *
 * Event-rule-matches conditions on kernel and system call events fire
 * at each match that kernel_triggers.c queues (the loop's eventfd): the
 * values are the event's (name, pid, tid, captures).
 *
 * A firing runs the trigger's actions in order. Each action counts its
 * execution requests and runs when the count meets its rate policy
 * (every:N: N, 2N, ...; once-after:N: the Nth only). start-session,
 * stop-session, snapshot-session and rotate-session do what the commands
 * do (a missing session, one already in that state: nothing, logged);
 * snapshot-session --cluster asks the session's relay for a snapshot of
 * every host with a session of that name (ctl_cluster.c), fired at the
 * program's event (user rules) or now; a
 * failure is logged, counted (list-triggers) and does not stop the next
 * actions. notify sends the notification to the subscribers
 * (ctl_notify.c), with the condition's values and the path of a snapshot
 * taken or a trace chunk archived by an earlier action of the same
 * firing.
 *
 * Concurrency: main thread, rtd_lock held.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/warn.h"
#include "ctl.h"

/* Kernel matches fired by one call of kernel_matches: at most this many,
 * and no more once this long has passed (one at least). */
#define CTL_KERNEL_BATCH 16
#define CTL_KERNEL_BATCH_NS 50000000ull	/* 50 ms */

static int timer_fd = -1;
static bool timer_armed;

static bool polled(const struct ctl_trigger *t)
{
	return t->t.cond.type != RT_COND_EVENT_RULE;
}

/* The condition's state now: 1 satisfied, 0 not (or its session or
 * channel does not exist or is not active); the values go to kv. */
static int evaluate(const struct ctl_trigger *t, struct rtp_kv *kv)
{
	const struct rt_trigger_cond *c = &t->t.cond;
	struct rtd_session *s = model_session_find(c->session);
	if (!s || !s->ever_started)
		return 0;
	rtp_kv_add(kv, "session", s->name);
	if (c->type == RT_COND_CONSUMED_SIZE_GE) {
		uint64_t bytes = ctl_session_bytes_written(s);
		rtp_kv_addf(kv, "consumed-size", "%llu", (unsigned long long)bytes);
		return bytes >= c->size;
	}
	if (!s->active)
		return 0;
	struct rtd_channel *ch =
		model_channel_find(s, c->kernel ? RTD_DOMAIN_KERNEL : RTD_DOMAIN_USER, c->channel);
	struct rtd_channel_stats st = { 0 };
	if (!ch || (c->kernel ? dp_kernel_stats(s, &st) : dp_channel_stats(s, ch, &st)) < 0 ||
	    !st.buffer_bytes)
		return 0;
	double ratio = (double)st.used_bytes / (double)st.buffer_bytes;
	rtp_kv_add(kv, "channel", ch->name);
	rtp_kv_add(kv, "domain", c->kernel ? "kernel" : "user");
	rtp_kv_addf(kv, "buffer-usage", "%.6f", ratio);
	return c->type == RT_COND_BUFFER_USAGE_GE ? ratio >= c->ratio : ratio <= c->ratio;
}

static void poll_triggers(int fd, short revents, void *arg)
{
	(void)revents;
	(void)arg;
	uint64_t ticks;
	if (read(fd, &ticks, sizeof(ticks)) < 0)
		return;
	for (struct ctl_trigger *t = ctl_triggers; t; t = t->next) {
		if (!polled(t))
			continue;
		struct rtp_kv kv = { 0 };
		bool now = evaluate(t, &kv) > 0;
		if (now && !t->was_true)
			ctl_trigger_fire(t, &kv);
		/* ctl_trigger_fire runs no request: t is still listed. */
		t->was_true = now;
		rtp_kv_free(&kv);
	}
}

/* The kernel triggers' matches (kernel_triggers.c), oldest first: each
 * fires its trigger, unless it was removed since. At most
 * CTL_KERNEL_BATCH per call, and none started after CTL_KERNEL_BATCH_NS,
 * then back to the loop, which answers the commands and signals waiting
 * meanwhile: the reader queues the matches of a frequent event faster
 * than a slow action (a snapshot: a kernel flight recorder's converts its
 * whole window, tens of ms) runs, and emptying the queue would never
 * return. Every match taken fires (the rate policies count each one);
 * when the batch ends with matches left the eventfd is made readable
 * again, so the loop's next round takes the rest. */
static void kernel_matches(int fd, short revents, void *arg)
{
	(void)revents;
	(void)arg;
	uint64_t n, id;
	struct rtp_kv values;
	if (read(fd, &n, sizeof(n)) < 0)
		(void)0;	/* the queue says what there is */
	unsigned fired = 0;
	bool more = false;
	uint64_t until = rt_clock_monotonic_ns() + CTL_KERNEL_BATCH_NS;
	while ((more = fired < CTL_KERNEL_BATCH && (!fired || rt_clock_monotonic_ns() < until)) &&
	       dp_kernel_trigger_take(&id, &values)) {
		struct ctl_trigger *t = ctl_triggers;
		while (t && t->id != id)
			t = t->next;
		if (t)
			ctl_trigger_fire(t, &values);
		rtp_kv_free(&values);
		fired++;
	}
	uint64_t one = 1;
	if (!more && write(fd, &one, sizeof(one)) < 0)
		(void)0;	/* a full counter is readable too */
}

int ctl_trigger_timer_init(void)
{
	int ret = timer_fd = rtd_loop_add_timer(poll_triggers, NULL);
	if (ret < 0)
		return ret;
	int kfd = dp_kernel_triggers_init();
	if ((ret = kfd) < 0 || (ret = rtd_loop_add(kfd, kernel_matches, NULL)) < 0)
		goto fail;
	return 0;
fail:
	dp_kernel_triggers_fini();
	close(timer_fd);
	timer_fd = -1;
	return ret;
}

void ctl_trigger_timer_update(void)
{
	bool want = false;
	for (const struct ctl_trigger *t = ctl_triggers; t && !want; t = t->next)
		want = polled(t);
	if (timer_fd < 0 || want == timer_armed)
		return;
	if (rtd_loop_timer_set(timer_fd, want ? CTL_TRIGGER_POLL_MS : 0) == 0)
		timer_armed = want;
}

void ctl_trigger_timer_fini(void)
{
	dp_kernel_triggers_fini();
	if (timer_fd >= 0)
		close(timer_fd);
	timer_fd = -1;
	timer_armed = false;
}

static bool rate_allows(const struct rt_trigger_action *a, uint64_t requests)
{
	return a->rate == RT_RATE_EVERY ? requests % a->count == 0 : requests == a->count;
}

/* One action. 0, or -errno with the message in err. */
static int run_action(const struct ctl_trigger *t, const struct rt_trigger_action *a,
		      uint64_t fired_ns, struct rtp_kv *n, char *err, size_t errlen)
{
	if (a->type == RT_ACT_NOTIFY) {
		if (n->err) {
			snprintf(err, errlen, "out of memory");
			return n->err;
		}
		ctl_notify_send(t->owner, t->t.name, n);
		return 0;
	}
	struct rtd_session *s = model_session_find(a->session);
	if (!s) {
		rt_warn("trigger %s: %s: no session named %s: nothing done", t->t.name,
			rt_trigger_action_name(a->type), a->session);
		return 0;
	}
	char path[PATH_MAX] = "";
	int ret = 0;
	switch (a->type) {
	case RT_ACT_START_SESSION:
		if (!s->active)
			ret = ctl_session_start(s, err, errlen);
		break;
	case RT_ACT_STOP_SESSION:
		if (s->active)
			ret = ctl_session_stop(s, err, errlen);
		break;
	case RT_ACT_ROTATE_SESSION:
		ret = ctl_session_rotate(s, path, sizeof(path), err, errlen);
		if (path[0]) {
			rt_warn("trigger %s: trace chunk of session %s archived in %s", t->t.name,
				s->name, path);
			rtp_kv_add(n, "archive", path);
		}
		break;
	case RT_ACT_SNAPSHOT_SESSION:
		if (a->cluster) {
			ret = ctl_cluster_trigger(s, fired_ns, n, err, errlen);
			if (ret == 0)
				rt_warn("trigger %s: cluster snapshot %s of session %s asked of %s "
					"hosts", t->t.name, rtp_kv_get(n->data, n->len,
					"cluster-request"), s->name,
					rtp_kv_get(n->data, n->len, "cluster-hosts"));
			break;
		}
		ret = ctl_session_snapshot(s, NULL, 0, path, sizeof(path), err, errlen);
		if (ret == 0) {
			rt_warn("trigger %s: snapshot of session %s recorded in %s", t->t.name,
				s->name, path);
			rtp_kv_add(n, "snapshot", path);
		}
		break;
	default:
		snprintf(err, errlen, "action not supported");
		ret = -EOPNOTSUPP;
		break;
	}
	return ret;
}

void ctl_trigger_fire(struct ctl_trigger *t, const struct rtp_kv *values)
{
	t->fired++;
	/* The notification: who fired, when, where, then the condition's
	 * values (docs/triggers.md lists the keys). */
	struct rtp_kv n = { 0 };
	struct timespec now;
	char host[HOST_NAME_MAX + 1] = "";
	clock_gettime(CLOCK_REALTIME, &now);
	gethostname(host, sizeof(host) - 1);
	rtp_kv_add(&n, "trigger", t->t.name);
	rtp_kv_addf(&n, "owner-uid", "%u", (unsigned)t->owner);
	rtp_kv_add(&n, "condition", rt_trigger_cond_name(t->t.cond.type));
	rtp_kv_addf(&n, "time-ns", "%llu",
		    (unsigned long long)now.tv_sec * 1000000000ull + (unsigned long long)now.tv_nsec);
	rtp_kv_add(&n, "host", host);
	rtp_kv_addf(&n, "fired", "%llu", (unsigned long long)t->fired);
	if (values && !values->err && values->len) {
		for (uint32_t pos = 0;;) {
			const char *k, *v;
			size_t kl;
			char key[RTP_KEY_MAX + 1];
			if (!rtp_kv_next(values->data, values->len, &pos, &k, &kl, &v))
				break;
			snprintf(key, sizeof(key), "%.*s", (int)kl, k);
			rtp_kv_add(&n, key, v);
		}
	}
	/* When it fired: at the program's event (user rules), else now. */
	uint64_t fired_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	const char *ev = values && !values->err ? rtp_kv_get(values->data, values->len,
							     "event-time-ns") : NULL;
	if (ev)
		fired_ns = strtoull(ev, NULL, 10);
	for (size_t i = 0; i < t->t.nr_actions; i++) {
		const struct rt_trigger_action *a = &t->t.actions[i];
		if (!rate_allows(a, ++t->requests[i]))
			continue;
		char err[CTL_ERRLEN] = "";
		t->runs[i]++;
		if (run_action(t, a, fired_ns, &n, err, sizeof(err)) < 0) {
			t->errors[i]++;
			rt_warn("trigger %s: %s failed: %s", t->t.name,
				rt_trigger_action_name(a->type), err);
		}
	}
	rtp_kv_free(&n);
}
