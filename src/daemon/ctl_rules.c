/*
 * ctl_rules.c - the requests that shape a session: enable-channel,
 * enable-event, disable-event, add-context, track, untrack. Every change
 * of rules or tracking is passed on with ctl_rules_changed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../common/config_parse.h"
#include "ctl.h"

/* Every value of `key` in the request, split at commas; empty items are
 * an error. */
struct strlist {
	char **v;
	size_t n;
};

static void strlist_free(struct strlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static int strlist_get(const struct ctl_req *r, const char *key, struct strlist *l,
		       char *err, size_t errlen)
{
	uint32_t pos = 0;
	const char *k, *v;
	size_t kl, want = strlen(key);
	l->v = NULL;
	l->n = 0;
	while (rtp_kv_next(r->p, r->len, &pos, &k, &kl, &v)) {
		if (kl != want || memcmp(k, key, kl))
			continue;
		const char *s = v;
		for (;;) {
			const char *e = strchrnul(s, ',');
			if (e == s) {
				snprintf(err, errlen, "empty item in %s list '%s'", key, v);
				goto fail;
			}
			char **nv = realloc(l->v, (l->n + 1) * sizeof(char *));
			if (!nv)
				goto nomem;
			l->v = nv;
			l->v[l->n] = strndup(s, (size_t)(e - s));
			if (!l->v[l->n])
				goto nomem;
			l->n++;
			if (!*e)
				break;
			s = e + 1;
		}
	}
	return 0;
nomem:
	snprintf(err, errlen, "out of memory");
fail:
	strlist_free(l);
	return -EINVAL;
}

static bool flag(const struct ctl_req *r, const char *key)
{
	const char *v = ctl_get(r, key);
	return v && !strcmp(v, "1");
}

/* The channel named by "channel" (or channel0); created when `create` and
 * the session has never been started. */
static struct rtd_channel *channel_of(const struct ctl_req *r, struct rtd_session *s, bool create,
				      char *err, size_t errlen)
{
	const char *name = ctl_get(r, "channel");
	if (!name)
		name = CTL_DEFAULT_CHANNEL;
	struct rtd_channel *c = model_channel_find(s, name);
	if (c)
		return c;
	if (!create || strcmp(name, CTL_DEFAULT_CHANNEL)) {
		snprintf(err, errlen, "channel '%s' not found in session %s", name, s->name);
		return NULL;
	}
	if (s->ever_started) {
		snprintf(err, errlen, "session %s has been started: it cannot get a new channel "
			 "(channels are fixed at the first start)", s->name);
		return NULL;
	}
	c = model_channel_new(s, name);
	if (!c)
		snprintf(err, errlen, "out of memory");
	return c;
}

static const char *const channel_attrs[] = {
	"overwrite", "subbuf-size", "num-subbuf", "switch-timer-us", "read-timer-us",
	"tracefile-size", "tracefile-count", "buffers",
};

/* enable-channel: channel, overwrite=0|1, subbuf-size, num-subbuf,
 * switch-timer-us, read-timer-us, tracefile-size, tracefile-count,
 * buffers=uid|pid. An existing channel named without attributes is
 * re-enabled. */
int ctl_enable_channel(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err,
		       size_t errlen)
{
	struct rtd_session *s = ctl_session_of(r, err, errlen);
	if (!s)
		return -ENOENT;
	const char *name = ctl_get(r, "channel");
	if (!name || !model_name_ok(name, false)) {
		snprintf(err, errlen, "invalid channel name '%s' (1-63 letters, digits, '_', "
			 "'.', '-')", name ? name : "");
		return -EINVAL;
	}
	bool attrs = false;
	for (size_t i = 0; i < sizeof(channel_attrs) / sizeof(channel_attrs[0]); i++)
		attrs |= ctl_get(r, channel_attrs[i]) != NULL;
	struct rtd_channel *c = model_channel_find(s, name);
	if (c) {
		if (attrs) {
			snprintf(err, errlen, "channel %s already exists in session %s; its "
				 "attributes cannot change", name, s->name);
			return -EEXIST;
		}
		c->enabled = true;
		ctl_rules_changed(s, reply);
		fprintf(out, "Channel %s enabled in session %s.\n", name, s->name);
		return 0;
	}
	if (s->ever_started) {
		snprintf(err, errlen, "session %s has been started: it cannot get a new channel "
			 "(channels are fixed at the first start)", s->name);
		return -EBUSY;
	}
	struct rtd_channel t = {
		.overwrite = s->snapshot,
		.subbuf_size = CTL_DEFAULT_SUBBUF_SIZE,
		.num_subbuf = CTL_DEFAULT_NUM_SUBBUF,
		.read_timer_ms = CTL_DEFAULT_READ_TIMER_MS,
		.buffers = RTD_BUFFERS_PER_UID,
	};
	uint64_t v;
	bool has;
	char perr[RT_ERRLEN];
	int ret;
	const char *ow = ctl_get(r, "overwrite");
	if (ow) {
		if (strcmp(ow, "0") && strcmp(ow, "1")) {
			snprintf(err, errlen, "overwrite must be 0 or 1");
			return -EINVAL;
		}
		t.overwrite = ow[0] == '1';
		if (s->snapshot && !t.overwrite) {
			snprintf(err, errlen, "snapshot session %s: channels are in overwrite mode "
				 "(--discard is not possible)", s->name);
			return -EINVAL;
		}
	}
	if ((ret = ctl_get_u64(r, "subbuf-size", UINT64_MAX, &t.subbuf_size, NULL, err, errlen)) < 0)
		return ret;
	if ((ret = ctl_get_u64(r, "num-subbuf", UINT32_MAX, &v, &has, err, errlen)) < 0)
		return ret;
	if (has)
		t.num_subbuf = (uint32_t)v;
	if (rt_check_subbuf(t.subbuf_size, t.num_subbuf, perr) < 0) {
		snprintf(err, errlen, "%s", perr);
		return -EINVAL;
	}
	/* Timers come in microseconds (LTTng's unit) and run in milliseconds:
	 * rounded up, at most one hour. */
	if ((ret = ctl_get_u64(r, "switch-timer-us", 3600000000ull, &v, &has, err, errlen)) < 0)
		return ret;
	if (has)
		t.switch_timer_ms = (uint32_t)((v + 999) / 1000);
	if ((ret = ctl_get_u64(r, "read-timer-us", 3600000000ull, &v, &has, err, errlen)) < 0)
		return ret;
	if (has) {
		if (v == 0) {
			snprintf(err, errlen, "read timer must be at least 1 us");
			return -EINVAL;
		}
		t.read_timer_ms = (uint32_t)((v + 999) / 1000);
	}
	if ((ret = ctl_get_u64(r, "tracefile-size", UINT64_MAX, &t.tracefile_size, NULL,
			       err, errlen)) < 0)
		return ret;
	if ((ret = ctl_get_u64(r, "tracefile-count", UINT32_MAX, &v, &has, err, errlen)) < 0)
		return ret;
	if (has)
		t.tracefile_count = (uint32_t)v;
	if (t.tracefile_size && t.tracefile_size < t.subbuf_size) {
		snprintf(err, errlen, "tracefile size %llu is smaller than the sub-buffer size %llu",
			 (unsigned long long)t.tracefile_size, (unsigned long long)t.subbuf_size);
		return -EINVAL;
	}
	if (t.tracefile_count && !t.tracefile_size) {
		snprintf(err, errlen, "--tracefile-count needs --tracefile-size");
		return -EINVAL;
	}
	const char *buf = ctl_get(r, "buffers");
	if (buf) {
		if (!strcmp(buf, "pid"))
			t.buffers = RTD_BUFFERS_PER_PID;
		else if (strcmp(buf, "uid")) {
			snprintf(err, errlen, "buffers must be uid or pid, not '%s'", buf);
			return -EINVAL;
		}
	}
	c = model_channel_new(s, name);
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	c->overwrite = t.overwrite;
	c->subbuf_size = t.subbuf_size;
	c->num_subbuf = t.num_subbuf;
	c->switch_timer_ms = t.switch_timer_ms;
	c->read_timer_ms = t.read_timer_ms;
	c->tracefile_size = t.tracefile_size;
	c->tracefile_count = t.tracefile_count;
	c->buffers = t.buffers;
	ctl_rules_changed(s, reply);
	fprintf(out, "Channel %s enabled in session %s.\n", name, s->name);
	return 0;
}

static bool same_rule(const struct rtd_rule *a, const char *pattern, const struct strlist *ex,
		      enum rtd_loglevel_type lt, int ll)
{
	if (strcmp(a->pattern, pattern) || a->loglevel_type != lt ||
	    (lt != RTD_LOGLEVEL_ALL && a->loglevel != ll) || a->nr_excludes != ex->n)
		return false;
	for (size_t i = 0; i < ex->n; i++)
		if (strcmp(a->excludes[i], ex->v[i]))
			return false;
	return true;
}

static int loglevel_of(const struct ctl_req *r, enum rtd_loglevel_type *lt, int32_t *ll,
		       char *err, size_t errlen)
{
	const char *range = ctl_get(r, "loglevel"), *single = ctl_get(r, "loglevel-only");
	char perr[RT_ERRLEN];
	*lt = RTD_LOGLEVEL_ALL;
	*ll = 0;
	if (range && single) {
		snprintf(err, errlen, "--loglevel and --loglevel-only exclude each other");
		return -EINVAL;
	}
	if (!range && !single)
		return 0;
	if (rt_parse_loglevel(range ? range : single, ll, perr) < 0) {
		snprintf(err, errlen, "%s", perr);
		return -EINVAL;
	}
	*lt = range ? RTD_LOGLEVEL_RANGE : RTD_LOGLEVEL_SINGLE;
	return 0;
}

/* enable-event: channel, pattern (repeated, comma lists), all=1 (every
 * event), exclude (repeated, comma lists), loglevel | loglevel-only,
 * enabled=0. */
int ctl_enable_event(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err,
		     size_t errlen)
{
	struct strlist pats = { 0 }, ex = { 0 };
	int ret = -EINVAL;
	struct rtd_session *s = ctl_session_of(r, err, errlen);
	if (!s)
		return -ENOENT;
	enum rtd_loglevel_type lt;
	int32_t ll;
	if (loglevel_of(r, &lt, &ll, err, errlen) < 0)
		return -EINVAL;
	if (strlist_get(r, "pattern", &pats, err, errlen) < 0)
		return -EINVAL;
	if (strlist_get(r, "exclude", &ex, err, errlen) < 0)
		goto out_pats;
	if (flag(r, "all")) {
		if (pats.n) {
			snprintf(err, errlen, "-a and event patterns exclude each other");
			goto out_ex;
		}
		pats.v = malloc(sizeof(char *));
		if (!pats.v || !(pats.v[0] = strdup("*"))) {
			free(pats.v);
			pats.v = NULL;
			snprintf(err, errlen, "out of memory");
			ret = -ENOMEM;
			goto out_ex;
		}
		pats.n = 1;
	}
	if (!pats.n) {
		snprintf(err, errlen, "no event pattern (name one, or -a for every event)");
		goto out_ex;
	}
	for (size_t i = 0; i < pats.n; i++) {
		if (strlen(pats.v[i]) >= RTD_PATTERN_MAX) {
			snprintf(err, errlen, "event pattern longer than %d characters",
				 RTD_PATTERN_MAX - 1);
			goto out_ex;
		}
	}
	for (size_t i = 0; i < ex.n; i++) {
		if (strlen(ex.v[i]) >= RTD_PATTERN_MAX) {
			snprintf(err, errlen, "exclusion longer than %d characters",
				 RTD_PATTERN_MAX - 1);
			goto out_ex;
		}
	}
	struct rtd_channel *c = channel_of(r, s, true, err, errlen);
	if (!c) {
		ret = -ENOENT;
		goto out_ex;
	}
	/* enabled=0 (saved configurations): the rule exists, disabled. */
	const char *en = ctl_get(r, "enabled");
	bool enable = !en || strcmp(en, "0");
	for (size_t i = 0; i < pats.n; i++) {
		struct rtd_rule *rule = c->rules;
		while (rule && !same_rule(rule, pats.v[i], &ex, lt, ll))
			rule = rule->next;
		if (!rule)
			rule = model_rule_new(c, pats.v[i], ex.v, ex.n, lt, ll);
		if (!rule) {
			snprintf(err, errlen, "out of memory");
			ret = -ENOMEM;
			goto out_ex;
		}
		rule->enabled = enable;
		fprintf(out, "Event rule '%s' %s in channel %s of session %s.\n",
			pats.v[i], enable ? "enabled" : "added (disabled)", c->name, s->name);
	}
	ctl_rules_changed(s, reply);
	ret = 0;
out_ex:
	strlist_free(&ex);
out_pats:
	strlist_free(&pats);
	return ret;
}

/* disable-event: channel, pattern (repeated, comma lists) | all=1. A
 * pattern disables every rule with exactly that pattern. */
int ctl_disable_event(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err,
		      size_t errlen)
{
	struct strlist pats = { 0 };
	struct rtd_session *s = ctl_session_of(r, err, errlen);
	if (!s)
		return -ENOENT;
	struct rtd_channel *c = channel_of(r, s, false, err, errlen);
	if (!c)
		return -ENOENT;
	if (flag(r, "all")) {
		for (struct rtd_rule *rule = c->rules; rule; rule = rule->next)
			rule->enabled = false;
		ctl_rules_changed(s, reply);
		fprintf(out, "All event rules of channel %s of session %s disabled.\n",
			c->name, s->name);
		return 0;
	}
	if (strlist_get(r, "pattern", &pats, err, errlen) < 0)
		return -EINVAL;
	int ret = -EINVAL;
	if (!pats.n) {
		snprintf(err, errlen, "no event pattern (name one, or -a for every rule)");
		goto out;
	}
	for (size_t i = 0; i < pats.n; i++) {
		bool found = false;
		for (struct rtd_rule *rule = c->rules; rule; rule = rule->next)
			found |= !strcmp(rule->pattern, pats.v[i]);
		if (!found) {
			snprintf(err, errlen, "no event rule '%s' in channel %s of session %s",
				 pats.v[i], c->name, s->name);
			ret = -ENOENT;
			goto out;
		}
	}
	for (size_t i = 0; i < pats.n; i++) {
		for (struct rtd_rule *rule = c->rules; rule; rule = rule->next)
			if (!strcmp(rule->pattern, pats.v[i]))
				rule->enabled = false;
		fprintf(out, "Event rule '%s' disabled in channel %s of session %s.\n",
			pats.v[i], c->name, s->name);
	}
	ctl_rules_changed(s, reply);
	ret = 0;
out:
	strlist_free(&pats);
	return ret;
}

/* add-context: type (repeated, comma lists), channel (default: every
 * channel; channel0 is created when the session has none). Only before
 * the session's first start. */
int ctl_add_context(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err,
		    size_t errlen)
{
	struct strlist types = { 0 };
	int ids[RT_CTX_COUNT];
	int ret = -EINVAL;
	struct rtd_session *s = ctl_session_of(r, err, errlen);
	if (!s)
		return -ENOENT;
	if (s->ever_started) {
		snprintf(err, errlen, "session %s has been started: contexts are fixed at the "
			 "first start", s->name);
		return -EBUSY;
	}
	if (strlist_get(r, "type", &types, err, errlen) < 0)
		return -EINVAL;
	if (!types.n || types.n > RT_CTX_COUNT) {
		snprintf(err, errlen, "name 1 to %d context types with -t", RT_CTX_COUNT);
		goto out;
	}
	for (size_t i = 0; i < types.n; i++) {
		ids[i] = rt_context_by_name(types.v[i]);
		if (ids[i] < 0) {
			snprintf(err, errlen, "unknown context type '%s' (%s)", types.v[i],
				 rt_context_names);
			goto out;
		}
		for (size_t j = 0; j < i; j++) {
			if (ids[j] == ids[i]) {
				snprintf(err, errlen, "context %s named twice", types.v[i]);
				goto out;
			}
		}
	}
	struct rtd_channel *only = NULL;
	if (ctl_get(r, "channel") || !s->channels) {
		only = channel_of(r, s, true, err, errlen);
		if (!only) {
			ret = -ENOENT;
			goto out;
		}
	}
	for (struct rtd_channel *c = s->channels; c; c = c->next) {
		if (only && c != only)
			continue;
		for (uint32_t k = 0; k < c->nr_contexts; k++) {
			for (size_t i = 0; i < types.n; i++) {
				if ((int)c->contexts[k] == ids[i]) {
					snprintf(err, errlen, "channel %s already has context %s",
						 c->name, types.v[i]);
					ret = -EEXIST;
					goto out;
				}
			}
		}
	}
	for (struct rtd_channel *c = s->channels; c; c = c->next) {
		if (only && c != only)
			continue;
		for (size_t i = 0; i < types.n; i++) {
			c->contexts[c->nr_contexts++] = (enum rt_context)ids[i];
			fprintf(out, "Context %s added to channel %s of session %s.\n",
				types.v[i], c->name, s->name);
		}
	}
	ctl_rules_changed(s, reply);
	ret = 0;
out:
	strlist_free(&types);
	return ret;
}

static int pids_of(const struct ctl_req *r, struct strlist *l, pid_t **pids, char *err,
		   size_t errlen)
{
	if (strlist_get(r, "pid", l, err, errlen) < 0)
		return -EINVAL;
	*pids = calloc(l->n ? l->n : 1, sizeof(pid_t));
	if (!*pids) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < l->n; i++) {
		char *end;
		errno = 0;
		long v = strtol(l->v[i], &end, 10);
		if (!*l->v[i] || *end || errno || v <= 0 || v > 0x3fffffff) {
			snprintf(err, errlen, "'%s' is not a process id", l->v[i]);
			return -EINVAL;
		}
		(*pids)[i] = (pid_t)v;
	}
	return 0;
}

/* track / untrack: pid (repeated, comma lists) | all=1. A session starts
 * tracking every process; `track --pid` narrows it to the listed ones;
 * track's descendants=1 (`ringtrace record`): and their descendants. */
static int change_tracking(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err,
			   size_t errlen, bool track)
{
	struct strlist l = { 0 };
	pid_t *pids = NULL;
	struct rtd_session *s = ctl_session_of(r, err, errlen);
	if (!s)
		return -ENOENT;
	if (flag(r, "all")) {
		s->track_all = track;
		s->nr_tracked = 0;
		ctl_rules_changed(s, reply);
		fprintf(out, "%s every process in session %s.\n", track ? "Tracking" : "Not tracking",
			s->name);
		return 0;
	}
	int ret = pids_of(r, &l, &pids, err, errlen);
	if (ret < 0)
		goto out;
	ret = -EINVAL;
	if (!l.n) {
		snprintf(err, errlen, "name process ids with --pid, or use --all");
		goto out;
	}
	if (!track && s->track_all) {
		snprintf(err, errlen, "session %s tracks every process: 'untrack --all' first, "
			 "then 'track --pid'", s->name);
		goto out;
	}
	if (track) {
		if (s->track_all)
			s->nr_tracked = 0;
		pid_t *n = realloc(s->tracked, (s->nr_tracked + l.n) * sizeof(pid_t));
		if (!n) {
			snprintf(err, errlen, "out of memory");
			ret = -ENOMEM;
			goto out;
		}
		s->tracked = n;
		s->track_all = false;
		if (flag(r, "descendants"))
			s->track_descendants = true;
		for (size_t i = 0; i < l.n; i++)
			if (!rtd_session_lists(s, pids[i]))
				s->tracked[s->nr_tracked++] = pids[i];
	} else {
		for (size_t i = 0; i < l.n; i++) {
			for (size_t j = 0; j < s->nr_tracked; j++) {
				if (s->tracked[j] == pids[i]) {
					s->tracked[j] = s->tracked[--s->nr_tracked];
					break;
				}
			}
		}
	}
	for (size_t i = 0; i < l.n; i++)
		fprintf(out, "Process %d %s in session %s.\n", (int)pids[i],
			track ? "tracked" : "untracked", s->name);
	ctl_rules_changed(s, reply);
	ret = 0;
out:
	free(pids);
	strlist_free(&l);
	return ret;
}

int ctl_track(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err, size_t errlen)
{
	return change_tracking(r, out, reply, err, errlen, true);
}

int ctl_untrack(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err, size_t errlen)
{
	return change_tracking(r, out, reply, err, errlen, false);
}
