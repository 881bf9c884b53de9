/*
 * ctl_report.c - what `ringtrace list` and `ringtrace status` print: the
 * sessions, one session's channels/rules/contexts/tracking, the events of
 * registered programs, per-channel statistics.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "../common/config_parse.h"
#include "../kernel/kernel.h"
#include "ctl.h"

static const char *state_of(const struct rtd_session *s)
{
	return s->active ? "active" : "inactive";
}

static void print_limit(FILE *out, const char *what, uint64_t v, const char *unit)
{
	if (v)
		fprintf(out, "      %-18s%llu%s\n", what, (unsigned long long)v, unit);
	else
		fprintf(out, "      %-18sunlimited\n", what);
}

static void describe_rule(FILE *out, const struct rtd_rule *r)
{
	fprintf(out, "      %s", r->pattern);
	if (r->loglevel_type == RT_LEVEL_RANGE)
		fprintf(out, " (loglevel <= %s)", rt_loglevel_name(r->loglevel));
	else if (r->loglevel_type == RT_LEVEL_ONLY)
		fprintf(out, " (loglevel == %s)", rt_loglevel_name(r->loglevel));
	for (size_t i = 0; i < r->nr_excludes; i++)
		fprintf(out, "%s%s", i ? "," : " excluding ", r->excludes[i]);
	if (r->filter)
		fprintf(out, " [filter: %s]", r->filter);
	fprintf(out, " [%s]\n", r->enabled ? "enabled" : "disabled");
}

/* A kernel rule, as LTTng lists them. */
static void describe_kernel_rule(FILE *out, const struct rtd_rule *r)
{
	if (r->probe)
		fprintf(out, "      %s (type: userspace-probe: %s)", r->pattern, r->probe);
	else
		fprintf(out, "      %s (type: %s)", r->pattern,
			r->syscall ? "syscall" : "tracepoint");
	if (r->filter)
		fprintf(out, " [filter: %s]", r->filter);
	fprintf(out, " [%s]\n", r->enabled ? "enabled" : "disabled");
}

/* A channel; a kernel channel has ftrace's buffer (no switch timer, trace
 * files or buffer sharing) and the thread id as its one context. */
static void describe_channel(FILE *out, const struct rtd_channel *c)
{
	bool kernel = c->domain == RTD_DOMAIN_KERNEL;
	fprintf(out, "- %s: [%s]\n", c->name, c->enabled ? "enabled" : "disabled");
	fprintf(out, "    Attributes:\n");
	fprintf(out, "      %-18s%s\n", "Event-loss mode:", c->overwrite ? "overwrite" : "discard");
	fprintf(out, "      %-18s%llu bytes\n", "Sub-buffer size:",
		(unsigned long long)c->subbuf_size);
	fprintf(out, "      %-18s%u\n", "Sub-buffer count:", c->num_subbuf);
	if (!kernel)
		fprintf(out, "      %-18s%u ms\n", "Switch timer:", c->switch_timer_ms);
	fprintf(out, "      %-18s%u ms\n", "Read timer:", c->read_timer_ms);
	if (!kernel) {
		print_limit(out, "Trace file size:", c->tracefile_size, " bytes");
		print_limit(out, "Trace file count:", c->tracefile_count, "");
		fprintf(out, "      %-18s%s\n", "Buffers:",
			c->buffers == RTD_BUFFERS_PER_PID ? "per-pid" : "per-uid");
	}
	fprintf(out, "    Contexts:");
	if (kernel)
		fprintf(out, " tid");
	for (unsigned bit = 1; kernel && rtk_context_name(bit); bit <<= 1)
		if (c->kcontexts & bit)
			fprintf(out, ", %s", rtk_context_name(bit));
	if (!kernel && !c->nr_contexts)
		fprintf(out, " none");
	for (uint32_t i = 0; i < c->nr_contexts; i++)
		fprintf(out, "%s%s", i ? ", " : " ", rt_context_name(c->contexts[i]));
	fprintf(out, "\n    Event rules:\n");
	if (!c->rules)
		fprintf(out, "      none\n");
	for (const struct rtd_rule *r = c->rules; r; r = r->next) {
		if (kernel)
			describe_kernel_rule(out, r);
		else
			describe_rule(out, r);
	}
}

static void ctl_describe_session(FILE *out, const struct rtd_session *s)
{
	fprintf(out, "Tracing session %s: [%s]%s\n", s->name, state_of(s),
		s->snapshot ? " snapshot" : "");
	fprintf(out, "    Trace output: %s\n", s->output);
	if (s->shm_path[0])
		fprintf(out, "    Buffers in files: %s (ringtrace recover)\n", s->shm_path);
	ctl_rotation_describe(out, s);
	fprintf(out, "    Tracked processes:");
	if (s->track_all)
		fprintf(out, " all");
	else if (!s->nr_tracked)
		fprintf(out, " none");
	for (size_t i = 0; i < (s->track_all ? 0 : s->nr_tracked); i++)
		fprintf(out, "%s%d", i ? ", " : " ", (int)s->tracked[i]);
	fprintf(out, "\n");
	if (s->kchannels) {
		fprintf(out, "\n=== Domain: Linux kernel ===\n\nChannels:\n");
		for (const struct rtd_channel *c = s->kchannels; c; c = c->next)
			describe_channel(out, c);
	}
	fprintf(out, "\n=== Domain: User space ===\n\nChannels:\n");
	if (!s->channels)
		fprintf(out, "  none\n");
	for (const struct rtd_channel *c = s->channels; c; c = c->next)
		describe_channel(out, c);
}

static void print_app_event(const struct rtd_app_event *e, void *arg)
{
	FILE *out = arg;
	fprintf(out, "  pid %d %-16s %s (loglevel: %s (%d))\n", (int)e->pid,
		e->procname ? e->procname : "?", e->name ? e->name : "?",
		rt_loglevel_name(e->loglevel), e->loglevel);
}

/* list: session (one session in detail) | events=1 (programs' events). */
int ctl_list(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err, size_t errlen)
{
	(void)reply;
	const char *ev = ctl_get(r, "events");
	if (ev && !strcmp(ev, "1")) {
		fprintf(out, "User space events of registered programs:\n");
		long pos = ftell(out);
		dp_list_events(print_app_event, out);
		if (ftell(out) == pos)
			fprintf(out, "  none (no registered program)\n");
		return 0;
	}
	if (ctl_get(r, "session")) {
		struct rtd_session *s = ctl_session_of(r, err, errlen);
		if (!s)
			return -ENOENT;
		ctl_describe_session(out, s);
		return 0;
	}
	unsigned n = 0;
	for (const struct rtd_session *s = rtd_sessions; s; s = s->next) {
		if (s->flat)
			continue;
		if (!n)
			fprintf(out, "Available tracing sessions:\n");
		fprintf(out, "  %u) %s [%s]%s%s\n      Trace output: %s\n", ++n, s->name, state_of(s),
			s->snapshot ? " snapshot" : "", s == model_current ? " (current)" : "",
			s->output);
		if (s->shm_path[0])
			fprintf(out, "      Buffers in files: %s\n", s->shm_path);
	}
	if (!n)
		fprintf(out, "Currently no available tracing session.\n");
	return 0;
}

/* status: session. The session's description, preceded by the counters of
 * each channel. */
int ctl_status(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err, size_t errlen)
{
	(void)reply;
	struct rtd_session *s = ctl_session_of(r, err, errlen);
	if (!s)
		return -ENOENT;
	fprintf(out, "Session %s: [%s]%s\nStatistics:\n", s->name, state_of(s),
		s->snapshot ? " snapshot" : "");
	/* While it runs, count what the buffers hold too. */
	if (s->active)
		dp_session_sync(s);
	if (!s->channels && !s->kchannels)
		fprintf(out, "  no channel\n");
	for (const struct rtd_channel *c = s->channels; c; c = c->next) {
		struct rtd_channel_stats st = { 0 };
		if (!s->ever_started) {
			fprintf(out, "  %s: not started yet\n", c->name);
			continue;
		}
		int ret = dp_channel_stats(s, c, &st);
		if (ret < 0) {
			fprintf(out, "  %s: statistics unavailable (%s)\n", c->name,
				ret == -ENOSYS ? "data plane not available" : strerror(-ret));
			continue;
		}
		double pct = st.buffer_bytes ? 100.0 * (double)st.used_bytes /
			(double)st.buffer_bytes : 0.0;
		fprintf(out, "  %s: buffer usage %.1f%% (%llu of %llu bytes, %u buffer set%s), "
			"events %llu, lost %llu, sub-buffers lost %llu, corrupt packets dropped %llu, "
			"bytes written %llu\n",
			c->name, pct, (unsigned long long)st.used_bytes,
			(unsigned long long)st.buffer_bytes, st.nr_buffer_sets,
			st.nr_buffer_sets == 1 ? "" : "s", (unsigned long long)st.events,
			(unsigned long long)st.events_lost, (unsigned long long)st.subbufs_lost,
			(unsigned long long)st.packets_corrupt, (unsigned long long)st.bytes_written);
	}
	for (const struct rtd_channel *c = s->kchannels; c; c = c->next) {
		struct rtd_channel_stats st;
		if (!s->ever_started || dp_kernel_stats(s, &st) < 0 || !st.nr_buffer_sets) {
			fprintf(out, "  kernel %s: not started yet\n", c->name);
			continue;
		}
		double pct = st.buffer_bytes ? 100.0 * (double)st.used_bytes /
			(double)st.buffer_bytes : 0.0;
		if (s->snapshot)
			fprintf(out, "  kernel %s: ftrace buffers %llu bytes, a flight recorder "
				"('snapshot record' writes what they hold), buffer usage %.1f%% "
				"(%llu bytes)\n", c->name, (unsigned long long)st.buffer_bytes, pct,
				(unsigned long long)st.used_bytes);
		else
			fprintf(out, "  kernel %s: ftrace buffers %llu bytes, events %llu, lost "
				"%llu, buffer usage %.1f%% (%llu bytes), bytes written %llu\n",
				c->name, (unsigned long long)st.buffer_bytes,
				(unsigned long long)st.events, (unsigned long long)st.events_lost, pct,
				(unsigned long long)st.used_bytes,
				(unsigned long long)st.bytes_written);
	}
	char msg[RTD_ERRLEN];
	if (s->net) {
		dp_relay_status(s, msg, sizeof(msg));
		fprintf(out, "Relay: %s\n", msg);
	}
	if (dp_session_errors(s, false, msg, sizeof(msg)) < 0 ||
	    dp_kernel_errors(s, false, msg, sizeof(msg)) < 0)
		fprintf(out, "Write errors: %s\n", msg);
	const char *log = ctl_log_path();
	fprintf(out, "Daemon log: %s\n", log ? log : "the daemon's standard error "
						      "(it runs in the foreground)");
	fprintf(out, "\n");
	ctl_describe_session(out, s);
	return 0;
}
