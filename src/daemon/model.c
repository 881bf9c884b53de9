/*
 * model.c - the model's shared state and the queries the data plane
 * makes: does a rule or a channel want an event, does a session track a
 * process. Callers hold rtd_lock.
 */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <string.h>

#include "rtd.h"

pthread_mutex_t rtd_lock = PTHREAD_MUTEX_INITIALIZER;
struct rtd_session *rtd_sessions;

const char *const rtd_context_names[RTD_CTX_COUNT] = {
	[RTD_CTX_VPID] = "vpid",
	[RTD_CTX_VTID] = "vtid",
	[RTD_CTX_PROCNAME] = "procname",
	[RTD_CTX_CPU_ID] = "cpu_id",
	[RTD_CTX_IP] = "ip",
	[RTD_CTX_PRIO] = "prio",
	[RTD_CTX_HOSTNAME] = "hostname",
};

/* Log levels: smaller is more severe (EMERG = 0 ... DEBUG = 14). */
bool rtd_rule_matches(const struct rtd_rule *r, const char *full_name, int loglevel)
{
	if (!r->enabled || fnmatch(r->pattern, full_name, 0) != 0)
		return false;
	for (size_t i = 0; i < r->nr_excludes; i++)
		if (fnmatch(r->excludes[i], full_name, 0) == 0)
			return false;
	switch (r->loglevel_type) {
	case RTD_LOGLEVEL_RANGE:
		return loglevel <= r->loglevel;
	case RTD_LOGLEVEL_SINGLE:
		return loglevel == r->loglevel;
	case RTD_LOGLEVEL_ALL:
	default:
		return true;
	}
}

bool rtd_channel_wants(const struct rtd_channel *c, const char *full_name, int loglevel)
{
	if (!c->enabled)
		return false;
	for (const struct rtd_rule *r = c->rules; r; r = r->next)
		if (rtd_rule_matches(r, full_name, loglevel))
			return true;
	return false;
}

bool rtd_session_tracks(const struct rtd_session *s, pid_t pid)
{
	if (s->track_all)
		return true;
	for (size_t i = 0; i < s->nr_tracked; i++)
		if (s->tracked[i] == pid)
			return true;
	return false;
}
