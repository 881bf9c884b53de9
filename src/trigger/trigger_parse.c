/*
 * trigger_parse.c - the words of `add-trigger` into a struct rt_trigger
 * (trigger.h), in the syntax of `lttng add-trigger` 2.13.
 *
 * The words are read left to right in three states: before --condition
 * (the trigger's own options), inside the condition (its options; for
 * event-rule-matches --name is the rule's event name pattern), and inside
 * an action (its SESSION word and --rate-policy). --name (outside an event
 * rule) and --owner-uid are the trigger's wherever they come. An option's
 * value is given as --opt=VALUE or --opt VALUE.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "../common/array.h"
#include "../common/config_parse.h"
#include "../common/context.h"
#include "../filter/filter.h"
#include "trigger.h"

struct parser {
	struct rt_trigger *t;
	bool in_cond, in_action;
	bool seen_type, seen_log_level, seen_session, seen_channel, seen_domain, seen_ratio,
		seen_size, seen_rate;
	size_t cap_excludes, cap_captures;	/* of the lists being read */
	char *err;
	size_t errlen;
};

static int fail(struct parser *p, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct parser *p, int ret, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->err, p->errlen, fmt, ap);
	va_end(ap);
	return ret;
}

static int set_str(struct parser *p, char **dst, const char *opt, const char *v)
{
	if (*dst)
		return fail(p, -EINVAL, "%s given twice", opt);
	if (!*v)
		return fail(p, -EINVAL, "%s: empty value", opt);
	*dst = strdup(v);
	return *dst ? 0 : fail(p, -ENOMEM, "out of memory");
}

static int add_str(struct parser *p, char ***list, size_t *n, size_t *cap, const char *opt,
		   const char *v)
{
	if (!*v)
		return fail(p, -EINVAL, "%s: empty value", opt);
	if (*n >= RT_TRIGGER_MAX_LIST)
		return fail(p, -EINVAL, "%s: more than %d of them", opt, RT_TRIGGER_MAX_LIST);
	if (RT_ARRAY_GROW(*list, *cap, *n + 1, 4) < 0)
		return fail(p, -ENOMEM, "out of memory");
	if (!((*list)[*n] = strdup(v)))
		return fail(p, -ENOMEM, "out of memory");
	(*n)++;
	return 0;
}

/* Session names in conditions and actions: what sessions may be called
 * (the daemon looks them up when the trigger fires). */
static int set_session(struct parser *p, char **dst, const char *opt, const char *v)
{
	if (strlen(v) >= RT_TRIGGER_NAME_MAX || strpbrk(v, " \t\n/"))
		return fail(p, -EINVAL, "%s: '%.80s' is not a session name", opt, v);
	return set_str(p, dst, opt, v);
}

bool rt_trigger_name_ok(const char *name)
{
	size_t n = strlen(name);
	if (!n || n >= RT_TRIGGER_NAME_MAX || name[0] == '-')
		return false;
	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		if (*c <= ' ' || *c >= 0x7f)
			return false;
	return true;
}

static int parse_count(struct parser *p, const char *what, const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long n = strtoull(s, &end, 10);
	if (!*s || *s == '-' || *s == '+' || *end || errno || n == 0)
		return fail(p, -EINVAL, "--rate-policy: '%s' in '%s' is not a count (an integer "
			    "from 1)", s, what);
	*out = n;
	return 0;
}

/* --type of an event rule: LTTng's names and their short forms. */
static int parse_type(struct parser *p, const char *v)
{
	struct rt_trigger_cond *c = &p->t->cond;
	static const struct {
		const char *name;
		enum rt_er_type type;
		unsigned sides;
	} types[] = {
		{ "user", RT_ER_USER, 0 },
		{ "user:tracepoint", RT_ER_USER, 0 },
		{ "kernel", RT_ER_KERNEL, 0 },
		{ "kernel:tracepoint", RT_ER_KERNEL, 0 },
		{ "syscall", RT_ER_SYSCALL, RT_SYSCALL_ENTRY | RT_SYSCALL_EXIT },
		{ "syscall:entry+exit", RT_ER_SYSCALL, RT_SYSCALL_ENTRY | RT_SYSCALL_EXIT },
		{ "syscall:entry", RT_ER_SYSCALL, RT_SYSCALL_ENTRY },
		{ "syscall:exit", RT_ER_SYSCALL, RT_SYSCALL_EXIT },
		{ "kernel:syscall", RT_ER_SYSCALL, RT_SYSCALL_ENTRY | RT_SYSCALL_EXIT },
		{ "kernel:syscall:entry+exit", RT_ER_SYSCALL, RT_SYSCALL_ENTRY | RT_SYSCALL_EXIT },
		{ "kernel:syscall:entry", RT_ER_SYSCALL, RT_SYSCALL_ENTRY },
		{ "kernel:syscall:exit", RT_ER_SYSCALL, RT_SYSCALL_EXIT },
	};
	if (p->seen_type)
		return fail(p, -EINVAL, "--type given twice");
	p->seen_type = true;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		if (!strcmp(v, types[i].name)) {
			c->er_type = types[i].type;
			c->syscall_sides = types[i].sides;
			return 0;
		}
	}
	static const char *const other[] = { "kprobe", "uprobe", "jul", "log4j", "python" };
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		if (strstr(v, other[i]))
			return fail(p, -ENOTSUP, "--type=%.64s: ringtrace traces user space "
				    "tracepoints and the kernel's tracepoints and system calls only "
				    "(user, kernel, syscall)", v);
	return fail(p, -EINVAL, "--type: unknown event rule type '%.64s' (user, kernel, "
		    "syscall, syscall:entry, syscall:exit)", v);
}

/* --filter: kept as text, once LTTng's filter language (src/filter)
 * compiles it. */
static int set_filter(struct parser *p, const char *v)
{
	struct rtf_program *prog;
	char why[RT_TRIGGER_ERRLEN];
	if (*v) {
		int ret = rtf_compile(v, NULL, &prog, why, sizeof(why));
		if (ret < 0)
			return ret == -ENOMEM ? fail(p, ret, "out of memory")
					      : fail(p, -EINVAL, "--filter: %s", why);
		rtf_free(prog);
	}
	return set_str(p, &p->t->cond.filter, "--filter", v);
}

/* --log-level: LEVEL.. (at least as severe), LEVEL (exactly), .. (any). */
static int parse_log_level(struct parser *p, const char *v)
{
	struct rt_trigger_cond *c = &p->t->cond;
	if (p->seen_log_level)
		return fail(p, -EINVAL, "--log-level given twice");
	p->seen_log_level = true;
	if (!strcmp(v, "..")) {
		c->level_match = RT_LEVEL_ANY;
		return 0;
	}
	size_t n = strlen(v);
	bool range = n > 2 && !strcmp(v + n - 2, "..");
	if (!range && strstr(v, ".."))
		return fail(p, -EINVAL, "--log-level=%.64s: the forms are LEVEL.. (at least as "
			    "severe), LEVEL (exactly) and .. (any)", v);
	char name[64], why[RT_ERRLEN];
	snprintf(name, sizeof(name), "%.*s", (int)(range ? n - 2 : n), v);
	if (rt_parse_loglevel(name, &c->level, why) < 0)
		return fail(p, -EINVAL, "--log-level: %s", why);
	c->level_match = range ? RT_LEVEL_RANGE : RT_LEVEL_ONLY;
	return 0;
}

/* A capture descriptor: FIELD or $ctx.NAME, optionally [INDEX]. */
static int check_capture(struct parser *p, const char *v)
{
	const char *s = v, *name_end;
	if (!strncmp(s, "$app.", 5))
		return fail(p, -ENOTSUP, "--capture=%.64s: ringtrace has no application "
			    "contexts ($app.*)", v);
	bool ctx = !strncmp(s, "$ctx.", 5);
	if (ctx)
		s += 5;
	name_end = s;
	while ((*name_end >= 'a' && *name_end <= 'z') || (*name_end >= 'A' && *name_end <= 'Z') ||
	       *name_end == '_' || (name_end > s && *name_end >= '0' && *name_end <= '9'))
		name_end++;
	const char *q = name_end;
	if (*q == '[') {
		const char *d = ++q;
		while (*q >= '0' && *q <= '9')
			q++;
		if (q == d || *q != ']')
			q = "!";
		else
			q++;
	}
	if (name_end == s || *q)
		return fail(p, -EINVAL, "--capture: '%.64s' is not a field name or $ctx.NAME, "
			    "with an optional [INDEX]", v);
	return add_str(p, &p->t->cond.captures, &p->t->cond.nr_captures, &p->cap_captures,
		       "--capture", v);
}

static int parse_ratio(struct parser *p, const char *v)
{
	char *end;
	errno = 0;
	double r = strtod(v, &end);
	if (!*v || *end || errno || !isfinite(r) || r < 0 || r > 1)
		return fail(p, -EINVAL, "--threshold-ratio: '%.64s' is not a ratio from 0 to 1", v);
	p->t->cond.ratio = r;
	return 0;
}

static int start_condition(struct parser *p, const char *v)
{
	static const enum rt_cond_type all[] = {
		RT_COND_EVENT_RULE, RT_COND_BUFFER_USAGE_GE, RT_COND_BUFFER_USAGE_LE,
		RT_COND_CONSUMED_SIZE_GE,
	};
	if (p->in_cond || p->in_action)
		return fail(p, -EINVAL, "only one --condition per trigger");
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		if (!strcmp(v, rt_trigger_cond_name(all[i]))) {
			p->t->cond.type = all[i];
			p->in_cond = true;
			return 0;
		}
	}
	return fail(p, -EINVAL, "--condition: unknown condition type '%.64s' "
		    "(event-rule-matches, channel-buffer-usage-ge, channel-buffer-usage-le, "
		    "session-consumed-size-ge)", v);
}

static int start_action(struct parser *p, const char *v)
{
	static const enum rt_action_type all[] = {
		RT_ACT_NOTIFY, RT_ACT_START_SESSION, RT_ACT_STOP_SESSION, RT_ACT_ROTATE_SESSION,
		RT_ACT_SNAPSHOT_SESSION,
	};
	struct rt_trigger *t = p->t;
	if (!p->in_cond && !p->in_action)
		return fail(p, -EINVAL, "--action=%.64s before --condition: give the condition "
			    "first", v);
	if (t->nr_actions >= RT_TRIGGER_MAX_ACTIONS)
		return fail(p, -EINVAL, "more than %d actions", RT_TRIGGER_MAX_ACTIONS);
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		if (strcmp(v, rt_trigger_action_name(all[i])))
			continue;
		t->actions[t->nr_actions++] = (struct rt_trigger_action){
			.type = all[i], .rate = RT_RATE_EVERY, .count = 1,
		};
		p->in_cond = false;
		p->in_action = true;
		p->seen_rate = false;
		return 0;
	}
	return fail(p, -EINVAL, "--action: unknown action type '%.64s' (notify, "
		    "start-session, stop-session, rotate-session, snapshot-session)", v);
}

static int parse_rate(struct parser *p, const char *v)
{
	struct rt_trigger_action *a = &p->t->actions[p->t->nr_actions - 1];
	if (p->seen_rate)
		return fail(p, -EINVAL, "--rate-policy given twice for one action");
	p->seen_rate = true;
	if (!strncmp(v, "every:", 6)) {
		a->rate = RT_RATE_EVERY;
		return parse_count(p, v, v + 6, &a->count);
	}
	if (!strncmp(v, "once-after:", 11)) {
		a->rate = RT_RATE_ONCE_AFTER;
		return parse_count(p, v, v + 11, &a->count);
	}
	return fail(p, -EINVAL, "--rate-policy: '%.64s' is not every:COUNT or "
		    "once-after:COUNT", v);
}

/* An option of the condition being read: 1 if it took it, 0 if the
 * option is not the condition's, or a negative errno. */
static int cond_option(struct parser *p, const char *opt, const char *v)
{
	struct rt_trigger_cond *c = &p->t->cond;
	uint64_t size;
	char why[RT_ERRLEN];
	if (c->type == RT_COND_EVENT_RULE) {
		if (!strcmp(opt, "--type"))
			return parse_type(p, v) ?: 1;
		if (!strcmp(opt, "--name"))
			return set_str(p, &c->pattern, opt, v) ?: 1;
		if (!strcmp(opt, "--filter"))
			return set_filter(p, v) ?: 1;
		if (!strcmp(opt, "--log-level"))
			return parse_log_level(p, v) ?: 1;
		if (!strcmp(opt, "--exclude-name"))
			return add_str(p, &c->excludes, &c->nr_excludes, &p->cap_excludes, opt,
				       v) ?: 1;
		if (!strcmp(opt, "--capture"))
			return check_capture(p, v) ?: 1;
		return 0;
	}
	if (!strcmp(opt, "--session")) {
		p->seen_session = true;
		return set_session(p, &c->session, opt, v) ?: 1;
	}
	if (c->type == RT_COND_CONSUMED_SIZE_GE) {
		if (strcmp(opt, "--threshold-size"))
			return 0;
		if (p->seen_size)
			return fail(p, -EINVAL, "--threshold-size given twice");
		p->seen_size = true;
		if (rt_parse_size(v, &size, why) < 0)
			return fail(p, -EINVAL, "--threshold-size: %s", why);
		c->size = size;
		return 1;
	}
	if (!strcmp(opt, "--channel")) {
		p->seen_channel = true;
		return set_session(p, &c->channel, opt, v) ?: 1;
	}
	if (!strcmp(opt, "--domain")) {
		if (p->seen_domain)
			return fail(p, -EINVAL, "--domain given twice");
		p->seen_domain = true;
		if (strcmp(v, "user") && strcmp(v, "kernel"))
			return fail(p, -EINVAL, "--domain: '%.64s' is not user or kernel", v);
		c->kernel = !strcmp(v, "kernel");
		return 1;
	}
	if (!strcmp(opt, "--threshold-ratio")) {
		if (p->seen_ratio)
			return fail(p, -EINVAL, "--threshold-ratio given twice");
		p->seen_ratio = true;
		return parse_ratio(p, v) ?: 1;
	}
	return 0;
}

static int one_option(struct parser *p, const char *opt, const char *v)
{
	struct rt_trigger *t = p->t;
	if (!strcmp(opt, "--condition"))
		return start_condition(p, v);
	if (!strcmp(opt, "--action"))
		return start_action(p, v);
	if (p->in_cond) {
		int r = cond_option(p, opt, v);
		if (r)
			return r < 0 ? r : 0;
	}
	if (p->in_action && !strcmp(opt, "--rate-policy"))
		return parse_rate(p, v);
	if (!strcmp(opt, "--cluster")) {
		struct rt_trigger_action *a = p->in_action ? &t->actions[t->nr_actions - 1] : NULL;
		if (!a || a->type != RT_ACT_SNAPSHOT_SESSION)
			return fail(p, -EINVAL, "--cluster goes after --action=snapshot-session");
		if (v)
			return fail(p, -EINVAL, "--cluster takes no value");
		if (a->cluster)
			return fail(p, -EINVAL, "--cluster given twice for one action");
		a->cluster = true;
		return 0;
	}
	if (!strcmp(opt, "--name")) {
		if (t->name)
			return fail(p, -EINVAL, "--name given twice");
		if (!rt_trigger_name_ok(v))
			return fail(p, -EINVAL, "--name: '%.80s' is not a trigger name (1-63 "
				    "printable characters, no space, not starting with '-')", v);
		return set_str(p, &t->name, opt, v);
	}
	if (!strcmp(opt, "--owner-uid")) {
		char *end;
		errno = 0;
		unsigned long u = strtoul(v, &end, 10);
		if (t->has_owner)
			return fail(p, -EINVAL, "--owner-uid given twice");
		if (!*v || *v == '-' || *end || errno || u >= UINT32_MAX)
			return fail(p, -EINVAL, "--owner-uid: '%.64s' is not a user id", v);
		t->has_owner = true;
		t->owner_uid = (uint32_t)u;
		return 0;
	}
	if (!strcmp(opt, "--rate-policy"))
		return fail(p, -EINVAL, "--rate-policy goes after an --action");
	if (p->in_cond)
		return fail(p, -EINVAL, "%.64s is not an option of the %s condition", opt,
			    rt_trigger_cond_name(t->cond.type));
	if (p->in_action)
		return fail(p, -EINVAL, "%.64s is not an option of the %s action", opt,
			    rt_trigger_action_name(t->actions[t->nr_actions - 1].type));
	return fail(p, -EINVAL, "unknown option %.64s", opt);
}

static int positional(struct parser *p, const char *w)
{
	struct rt_trigger *t = p->t;
	if (p->in_action) {
		struct rt_trigger_action *a = &t->actions[t->nr_actions - 1];
		if (a->type != RT_ACT_NOTIFY && !a->session)
			return set_session(p, &a->session, rt_trigger_action_name(a->type), w);
	}
	return fail(p, -EINVAL, "unexpected argument '%.64s'", w);
}

/* What the whole trigger must have, once every word is read. */
static int check_complete(struct parser *p)
{
	struct rt_trigger *t = p->t;
	struct rt_trigger_cond *c = &t->cond;
	if (!p->in_cond && !p->in_action)
		return fail(p, -EINVAL, "missing --condition");
	if (!t->nr_actions)
		return fail(p, -EINVAL, "missing --action after the condition");
	if (c->type == RT_COND_EVENT_RULE) {
		if (!p->seen_type)
			return fail(p, -EINVAL, "event-rule-matches needs --type=user|kernel|syscall");
		if (c->er_type != RT_ER_USER && p->seen_log_level)
			return fail(p, -EINVAL, "--log-level applies to user space rules only "
				    "(--type=user)");
		/* The user space contexts are the library's; the kernel's
		 * (tid, pid, procname, prio, cpu_id) are checked by the daemon
		 * that has the kernel domain. */
		for (size_t i = 0; c->er_type == RT_ER_USER && i < c->nr_captures; i++) {
			const char *v = c->captures[i];
			if (strncmp(v, "$ctx.", 5))
				continue;
			char cname[64];
			snprintf(cname, sizeof(cname), "%.*s", (int)strcspn(v + 5, "["), v + 5);
			if (rt_context_by_name(cname) < 0)
				return fail(p, -EINVAL, "--capture=%.64s: unknown context '%s' (%s)",
					    v, cname, rt_context_names);
		}
	} else {
		const char *need = !p->seen_session ? "--session" :
			c->type == RT_COND_CONSUMED_SIZE_GE ? (p->seen_size ? NULL : "--threshold-size") :
			!p->seen_channel ? "--channel" : !p->seen_domain ? "--domain" :
			!p->seen_ratio ? "--threshold-ratio" : NULL;
		if (need)
			return fail(p, -EINVAL, "%s needs %s", rt_trigger_cond_name(c->type), need);
	}
	for (size_t i = 0; i < t->nr_actions; i++)
		if (t->actions[i].type != RT_ACT_NOTIFY && !t->actions[i].session)
			return fail(p, -EINVAL, "--action=%s needs a session name: --action=%s "
				    "SESSION", rt_trigger_action_name(t->actions[i].type),
				    rt_trigger_action_name(t->actions[i].type));
	return 0;
}

int rt_trigger_parse(int argc, char *const *argv, struct rt_trigger *t, char *err,
		     size_t errlen)
{
	memset(t, 0, sizeof(*t));
	struct parser p = { .t = t, .err = err, .errlen = errlen };
	int ret = 0;
	for (int i = 0; i < argc && !ret; i++) {
		const char *w = argv[i];
		if (strncmp(w, "--", 2) || !w[2]) {
			ret = w[0] == '-' && w[1] ? fail(&p, -EINVAL, "unknown option %.64s", w)
						  : positional(&p, w);
			continue;
		}
		char opt[64];
		const char *eq = strchr(w, '='), *v;
		size_t ol = eq ? (size_t)(eq - w) : strlen(w);
		if (ol >= sizeof(opt)) {
			ret = fail(&p, -EINVAL, "unknown option %.64s", w);
			continue;
		}
		memcpy(opt, w, ol);
		opt[ol] = '\0';
		if (eq) {
			v = eq + 1;
		} else if (!strcmp(opt, "--cluster")) {
			v = NULL;	/* a flag */
		} else if (i + 1 < argc) {
			v = argv[++i];
		} else {
			ret = fail(&p, -EINVAL, "%s needs a value", opt);
			continue;
		}
		ret = one_option(&p, opt, v);
	}
	if (!ret)
		ret = check_complete(&p);
	if (ret)
		rt_trigger_free(t);
	return ret;
}

static void free_list(char **l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(l[i]);
	free(l);
}

void rt_trigger_free(struct rt_trigger *t)
{
	free(t->name);
	free(t->cond.pattern);
	free(t->cond.filter);
	free_list(t->cond.excludes, t->cond.nr_excludes);
	free_list(t->cond.captures, t->cond.nr_captures);
	free(t->cond.session);
	free(t->cond.channel);
	for (size_t i = 0; i < t->nr_actions; i++)
		free(t->actions[i].session);
	memset(t, 0, sizeof(*t));
}
