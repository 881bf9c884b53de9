/*
 * model.c - the model's shared state and the queries the data plane
 * makes: does a rule or a channel want an event, does a session track a
 * process. Callers hold rtd_lock.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "../common/proc_stat.h"
#include "rtd.h"

pthread_mutex_t rtd_lock = PTHREAD_MUTEX_INITIALIZER;
struct rtd_session *rtd_sessions;

const char *rtd_session_chunk(const struct rtd_session *s)
{
	return s->rot.dir[0] ? s->rot.dir : s->output;
}

bool rtd_rule_matches(const struct rtd_rule *r, const char *full_name, int loglevel)
{
	const struct rt_rule m = {
		.pattern = r->pattern,
		.excludes = (const char *const *)r->excludes,
		.nr_excludes = r->nr_excludes,
		.level_match = r->loglevel_type,
		.level = r->loglevel,
	};
	return r->enabled && rt_rule_matches(&m, full_name, loglevel);
}

/* The state dump resolves the channel's ip context (rule.h): wanted,
 * unfiltered, whatever the rules say. */
static bool statedump_wanted(const struct rtd_channel *c, const char *full_name)
{
	if (rt_is_statedump_event(full_name))
		for (uint32_t i = 0; i < c->nr_contexts; i++)
			if (c->contexts[i] == RT_CTX_IP)
				return true;
	return false;
}

bool rtd_channel_wants(const struct rtd_channel *c, const char *full_name, int loglevel)
{
	if (!c->enabled)
		return false;
	if (statedump_wanted(c, full_name))
		return true;
	for (const struct rtd_rule *r = c->rules; r; r = r->next)
		if (rtd_rule_matches(r, full_name, loglevel))
			return true;
	return false;
}

bool rtd_channel_unfiltered(const struct rtd_channel *c, const char *full_name, int loglevel)
{
	if (statedump_wanted(c, full_name))
		return true;
	for (const struct rtd_rule *r = c->rules; r; r = r->next)
		if (!r->filter_bin && rtd_rule_matches(r, full_name, loglevel))
			return true;
	return false;
}

/* The parent of `pid` (/proc/PID/stat), or 0 when it cannot be read. */
static pid_t parent_of(pid_t pid)
{
	char path[64];
	struct rt_proc_stat st;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (rt_proc_stat_read(AT_FDCWD, path, &st) < 0 || st.ppid < 0)
		return 0;
	return (pid_t)st.ppid;
}

bool rtd_session_lists(const struct rtd_session *s, pid_t pid)
{
	for (size_t i = 0; i < s->nr_tracked; i++)
		if (s->tracked[i] == pid)
			return true;
	return false;
}

bool rtd_session_tracks(const struct rtd_session *s, pid_t pid)
{
	if (s->track_all || rtd_session_lists(s, pid))
		return true;
	/* Ancestors, up to init (bounded: a pid read as its own ancestor,
	 * a cycle through reuse, cannot loop for ever). */
	for (int depth = 0; s->track_descendants && depth < 256 && pid > 1; depth++) {
		pid = parent_of(pid);
		if (pid > 0 && rtd_session_lists(s, pid))
			return true;
	}
	return false;
}
