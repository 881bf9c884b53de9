/*
 * model_alloc.c - creating, finding and freeing sessions, channels and
 * rules. Main thread, rtd_lock held.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

struct rtd_session *model_current;
static uint64_t next_session_id = 1;

bool model_name_ok(const char *name, bool allow_hidden)
{
	size_t n = strlen(name);
	if (n == 0 || n >= RTD_NAME_MAX || name[0] == '-' ||
	    (name[0] == '.' && !allow_hidden) || !strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
			return false;
	}
	return true;
}

struct rtd_session *model_session_find(const char *name)
{
	for (struct rtd_session *s = rtd_sessions; s; s = s->next)
		if (!strcmp(s->name, name))
			return s;
	return NULL;
}

struct rtd_session *model_session_new(const char *name)
{
	struct rtd_session *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->id = next_session_id++;
	s->track_all = true;
	struct rtd_session **pp = &rtd_sessions;
	while (*pp)
		pp = &(*pp)->next;
	*pp = s;
	return s;
}

static void rule_free(struct rtd_rule *r)
{
	for (size_t i = 0; i < r->nr_excludes; i++)
		free(r->excludes[i]);
	free(r->excludes);
	free(r->filter);
	free(r->filter_bin);
	free(r->probe);
	free(r);
}

static void channels_free(struct rtd_channel *c)
{
	while (c) {
		struct rtd_channel *cn = c->next;
		struct rtd_rule *r = c->rules;
		while (r) {
			struct rtd_rule *rn = r->next;
			rule_free(r);
			r = rn;
		}
		free(c);
		c = cn;
	}
}

void model_session_free(struct rtd_session *s)
{
	for (struct rtd_session **pp = &rtd_sessions; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	if (model_current == s)
		model_current = NULL;
	channels_free(s->channels);
	channels_free(s->kchannels);
	free(s->tracked);
	free(s);
}

struct rtd_channel *model_channel_find(const struct rtd_session *s, enum rtd_domain d,
				       const char *name)
{
	for (struct rtd_channel *c = d == RTD_DOMAIN_KERNEL ? s->kchannels : s->channels; c;
	     c = c->next)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

struct rtd_channel *model_channel_new(struct rtd_session *s, enum rtd_domain d,
				      const char *name)
{
	struct rtd_channel *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	bool kernel = d == RTD_DOMAIN_KERNEL;
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->domain = d;
	c->overwrite = s->snapshot;
	c->subbuf_size = kernel ? CTL_DEFAULT_KERNEL_SUBBUF_SIZE : CTL_DEFAULT_SUBBUF_SIZE;
	c->num_subbuf = kernel ? CTL_DEFAULT_KERNEL_NUM_SUBBUF : CTL_DEFAULT_NUM_SUBBUF;
	c->read_timer_ms = CTL_DEFAULT_READ_TIMER_MS;
	c->buffers = RTD_BUFFERS_PER_UID;
	c->enabled = true;
	struct rtd_channel **pp = kernel ? &s->kchannels : &s->channels;
	while (*pp)
		pp = &(*pp)->next;
	*pp = c;
	/* Stream class ids number the user-space channels only. */
	if (!kernel)
		c->id = s->nr_channels++;
	return c;
}

struct rtd_rule *model_rule_new(struct rtd_channel *c, const char *pattern,
				char *const *excludes, size_t nr_excludes,
				enum rt_level_match lt, int loglevel, bool syscall,
				const char *filter)
{
	struct rtd_rule *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	snprintf(r->pattern, sizeof(r->pattern), "%s", pattern);
	r->syscall = syscall;
	if (filter && !(r->filter = strdup(filter)))
		goto fail;
	if (nr_excludes) {
		r->excludes = calloc(nr_excludes, sizeof(char *));
		if (!r->excludes)
			goto fail;
		for (size_t i = 0; i < nr_excludes; i++) {
			r->excludes[i] = strdup(excludes[i]);
			if (!r->excludes[i])
				goto fail;
			r->nr_excludes = i + 1;
		}
	}
	r->loglevel_type = lt;
	r->loglevel = loglevel;
	r->enabled = true;
	struct rtd_rule **pp = &c->rules;
	while (*pp)
		pp = &(*pp)->next;
	*pp = r;
	return r;
fail:
	rule_free(r);
	return NULL;
}

