/*
 * trigger_format.c - a struct rt_trigger back into words (what is sent
 * and saved) and into the lines `list-triggers` prints.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/config_parse.h"
#include "trigger.h"

const char *rt_trigger_cond_name(enum rt_cond_type c)
{
	switch (c) {
	case RT_COND_EVENT_RULE: return "event-rule-matches";
	case RT_COND_BUFFER_USAGE_GE: return "channel-buffer-usage-ge";
	case RT_COND_BUFFER_USAGE_LE: return "channel-buffer-usage-le";
	case RT_COND_CONSUMED_SIZE_GE: return "session-consumed-size-ge";
	}
	return "?";
}

const char *rt_trigger_action_name(enum rt_action_type a)
{
	switch (a) {
	case RT_ACT_NOTIFY: return "notify";
	case RT_ACT_START_SESSION: return "start-session";
	case RT_ACT_STOP_SESSION: return "stop-session";
	case RT_ACT_ROTATE_SESSION: return "rotate-session";
	case RT_ACT_SNAPSHOT_SESSION: return "snapshot-session";
	}
	return "?";
}

static const char *type_word(const struct rt_trigger_cond *c)
{
	if (c->er_type == RT_ER_USER)
		return "user";
	if (c->er_type == RT_ER_KERNEL)
		return "kernel";
	if (c->syscall_sides == RT_SYSCALL_ENTRY)
		return "syscall:entry";
	if (c->syscall_sides == RT_SYSCALL_EXIT)
		return "syscall:exit";
	return "syscall";
}

/* fn("--opt=VALUE"). */
static void opt(void (*fn)(const char *, void *), void *arg, const char *o, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void opt(void (*fn)(const char *, void *), void *arg, const char *o, const char *fmt, ...)
{
	char *v = NULL, *w = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&v, fmt, ap);
	va_end(ap);
	if (n >= 0 && asprintf(&w, "%s=%s", o, v) >= 0)
		fn(w, arg);
	free(v);
	free(w);
}

void rt_trigger_words(const struct rt_trigger *t, void (*fn)(const char *word, void *arg),
		      void *arg)
{
	const struct rt_trigger_cond *c = &t->cond;
	if (t->name)
		opt(fn, arg, "--name", "%s", t->name);
	if (t->has_owner)
		opt(fn, arg, "--owner-uid", "%u", t->owner_uid);
	opt(fn, arg, "--condition", "%s", rt_trigger_cond_name(c->type));
	switch (c->type) {
	case RT_COND_EVENT_RULE:
		opt(fn, arg, "--type", "%s", type_word(c));
		if (c->pattern)
			opt(fn, arg, "--name", "%s", c->pattern);
		if (c->filter)
			opt(fn, arg, "--filter", "%s", c->filter);
		if (c->level_match != RT_LEVEL_ANY)
			opt(fn, arg, "--log-level", "%s%s", rt_loglevel_name(c->level),
			    c->level_match == RT_LEVEL_RANGE ? ".." : "");
		for (size_t i = 0; i < c->nr_excludes; i++)
			opt(fn, arg, "--exclude-name", "%s", c->excludes[i]);
		for (size_t i = 0; i < c->nr_captures; i++)
			opt(fn, arg, "--capture", "%s", c->captures[i]);
		break;
	case RT_COND_BUFFER_USAGE_GE:
	case RT_COND_BUFFER_USAGE_LE:
		opt(fn, arg, "--session", "%s", c->session);
		opt(fn, arg, "--channel", "%s", c->channel);
		opt(fn, arg, "--domain", "%s", c->kernel ? "kernel" : "user");
		opt(fn, arg, "--threshold-ratio", "%.17g", c->ratio);
		break;
	case RT_COND_CONSUMED_SIZE_GE:
		opt(fn, arg, "--session", "%s", c->session);
		opt(fn, arg, "--threshold-size", "%llu", (unsigned long long)c->size);
		break;
	}
	for (size_t i = 0; i < t->nr_actions; i++) {
		const struct rt_trigger_action *a = &t->actions[i];
		opt(fn, arg, "--action", "%s", rt_trigger_action_name(a->type));
		if (a->session)
			fn(a->session, arg);
		if (a->cluster)
			fn("--cluster", arg);
		opt(fn, arg, "--rate-policy", "%s:%llu",
		    a->rate == RT_RATE_EVERY ? "every" : "once-after", (unsigned long long)a->count);
	}
}

void rt_trigger_describe_cond(const struct rt_trigger *t, FILE *out)
{
	const struct rt_trigger_cond *c = &t->cond;
	switch (c->type) {
	case RT_COND_EVENT_RULE:
		fprintf(out, "event rule matches: %s (type: %s", c->pattern ? c->pattern : "*",
			type_word(c));
		if (c->level_match == RT_LEVEL_RANGE)
			fprintf(out, ", log level at least %s", rt_loglevel_name(c->level));
		else if (c->level_match == RT_LEVEL_ONLY)
			fprintf(out, ", log level %s", rt_loglevel_name(c->level));
		for (size_t i = 0; i < c->nr_excludes; i++)
			fprintf(out, ", excluding %s", c->excludes[i]);
		if (c->filter)
			fprintf(out, ", filter: %s", c->filter);
		fprintf(out, ")");
		for (size_t i = 0; i < c->nr_captures; i++)
			fprintf(out, "%s%s", i ? ", " : "; captures: ", c->captures[i]);
		break;
	case RT_COND_BUFFER_USAGE_GE:
	case RT_COND_BUFFER_USAGE_LE:
		fprintf(out, "buffer usage %s %g of channel %s (%s) of session %s",
			c->type == RT_COND_BUFFER_USAGE_GE ? ">=" : "<=", c->ratio, c->channel,
			c->kernel ? "kernel" : "user", c->session);
		break;
	case RT_COND_CONSUMED_SIZE_GE:
		fprintf(out, "session %s consumed size >= %llu bytes", c->session,
			(unsigned long long)c->size);
		break;
	}
}

void rt_trigger_describe_action(const struct rt_trigger_action *a, FILE *out)
{
	switch (a->type) {
	case RT_ACT_NOTIFY: fprintf(out, "notify"); break;
	case RT_ACT_START_SESSION: fprintf(out, "start session %s", a->session); break;
	case RT_ACT_STOP_SESSION: fprintf(out, "stop session %s", a->session); break;
	case RT_ACT_ROTATE_SESSION: fprintf(out, "rotate session %s", a->session); break;
	case RT_ACT_SNAPSHOT_SESSION:
		fprintf(out, "snapshot session %s%s", a->session,
			a->cluster ? " on every host of its relay" : "");
		break;
	}
	fprintf(out, " (rate policy: %s %llu)", a->rate == RT_RATE_EVERY ? "every" : "once after",
		(unsigned long long)a->count);
}
