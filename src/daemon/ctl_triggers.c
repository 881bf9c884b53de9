/*
 * ctl_triggers.c - the trigger registry: add-trigger, list-triggers,
 * remove-trigger, and the triggers' lines in saved configurations
 * (docs/triggers.md).
 *
 * Triggers are per user: each has the uid of the peer that added it
 * (SO_PEERCRED), or the one root names with --owner-uid. A user sees,
 * fires into notifications and removes only its own; root sees everyone's.
 * Names are unique per owner. Triggers name their sessions by name: they
 * outlive a session's destroy and apply to a session created later with
 * that name.
 *
 * Concurrency: main thread, rtd_lock held (ctl.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/array.h"
#include "../filter/filter.h"
#include "../proto/app_proto.h"
#include "ctl.h"

struct ctl_trigger *ctl_triggers;

bool ctl_trigger_visible(uid_t uid, uid_t owner)
{
	return uid == 0 || uid == owner;
}

static struct ctl_trigger *find(uid_t owner, const char *name)
{
	for (struct ctl_trigger *t = ctl_triggers; t; t = t->next)
		if (t->owner == owner && !strcmp(t->t.name, name))
			return t;
	return NULL;
}

/* The trigger's words from the request's arg= entries, parsed. */
static int parse_request(const struct ctl_req *r, struct rt_trigger *t, char *err,
			 size_t errlen)
{
	char **argv = NULL;
	size_t cap = 0;
	int argc = 0, ret;
	for (uint32_t pos = 0;;) {
		const char *k, *v;
		size_t kl;
		if (!rtp_kv_next(r->p, r->len, &pos, &k, &kl, &v))
			break;
		if (kl != 3 || memcmp(k, "arg", 3))
			continue;
		if (RT_ARRAY_GROW(argv, cap, (size_t)argc + 1, 16) < 0) {
			free(argv);
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		argv[argc++] = (char *)(uintptr_t)v;
	}
	ret = rt_trigger_parse(argc, argv, t, err, errlen);
	free(argv);
	return ret;
}

/* An event-rule-matches condition on user events: the programs evaluate
 * it (ctl_trigger_ring.c); its rule, filter (compiled once, as bytes) and
 * captures go to rtd_user_triggers. 0, or -ENOMEM / -EINVAL (the filter,
 * which the parser compiled already) with err. */
static int make_user_rule(struct ctl_trigger *ct, char *err, size_t errlen)
{
	const struct rt_trigger_cond *c = &ct->t.cond;
	struct rtd_user_trigger *ut = &ct->ut;
	*ut = (struct rtd_user_trigger){
		.token = ct->id,
		.owner = ct->owner,
		.rule = {
			.pattern = c->pattern ? c->pattern : "*",
			.excludes = (const char *const *)c->excludes,
			.nr_excludes = c->nr_excludes,
			.level_match = c->level_match,
			.level = c->level,
		},
		.captures = (const char *const *)c->captures,
		.nr_captures = (uint32_t)c->nr_captures,
	};
	if (!c->filter)
		return 0;
	struct rtf_program *prog;
	size_t len;
	int ret = rtf_compile(c->filter, NULL, &prog, err, errlen);
	if (ret < 0)
		return ret;
	ret = rtf_save(prog, &ct->filter_bytes, &len);
	rtf_free(prog);
	if (ret < 0 || len > RTP_APP_FILTER_MAX) {
		snprintf(err, errlen, ret < 0 ? "out of memory" : "--filter: too long");
		return ret < 0 ? ret : -EINVAL;
	}
	ut->filter = ct->filter_bytes;
	ut->filter_len = (uint32_t)len;
	return 0;
}

static bool user_rule(const struct ctl_trigger *ct)
{
	return ct->t.cond.type == RT_COND_EVENT_RULE && ct->t.cond.er_type == RT_ER_USER;
}

/* "triggerN": the first N that owner does not use. */
static int auto_name(struct rt_trigger *t, uid_t owner)
{
	char name[RT_TRIGGER_NAME_MAX];
	for (unsigned n = 0;; n++) {
		snprintf(name, sizeof(name), "trigger%u", n);
		if (!find(owner, name))
			break;
	}
	t->name = strdup(name);
	return t->name ? 0 : -ENOMEM;
}

/* A kernel or syscall event rule: watched in the kernel (kernel_triggers.c),
 * by a daemon that has the kernel domain, for an owner who may see every
 * process's kernel events (root, or the daemon's own user). */
static int watch_kernel(struct ctl_trigger *ct, char *err, size_t errlen)
{
	char why[CTL_ERRLEN];
	int ret = dp_kernel_access(why, sizeof(why));
	if (ret < 0) {
		snprintf(err, errlen, "trigger %s: kernel and syscall event rules are watched by "
			 "root's session daemon only: %s", ct->t.name, why);
		return ret;
	}
	if (ct->owner != 0 && ct->owner != geteuid()) {
		snprintf(err, errlen, "trigger %s: kernel and syscall event rules are root's "
			 "(they see every process's kernel events): uid %u may not own one",
			 ct->t.name, (unsigned)ct->owner);
		return -EPERM;
	}
	ret = dp_kernel_trigger_add(ct->id, ct->t.name, &ct->t.cond, &ct->kernel, why,
				    sizeof(why));
	if (ret < 0)
		snprintf(err, errlen, "trigger %s: %s", ct->t.name, why);
	return ret;
}

int ctl_add_trigger(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err,
		    size_t errlen)
{
	struct ctl_trigger *ct = calloc(1, sizeof(*ct));
	if (!ct) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	int ret = parse_request(r, &ct->t, err, errlen);
	if (ret < 0) {
		free(ct);
		return ret == -ENOTSUP ? -EOPNOTSUPP : ret;
	}
	ct->owner = r->uid;
	if (ct->t.has_owner && ct->t.owner_uid != r->uid) {
		if (r->uid != 0) {
			snprintf(err, errlen, "--owner-uid=%u: only root may add a trigger for "
				 "another user", ct->t.owner_uid);
			ret = -EPERM;
			goto fail;
		}
		ct->owner = ct->t.owner_uid;
	}
	ct->t.has_owner = false;
	if (!ct->t.name && auto_name(&ct->t, ct->owner) < 0) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto fail;
	}
	if (find(ct->owner, ct->t.name)) {
		snprintf(err, errlen, "a trigger named '%s' exists already (of uid %u)",
			 ct->t.name, (unsigned)ct->owner);
		ret = -EEXIST;
		goto fail;
	}
	static uint64_t last_id;
	ct->id = ++last_id;
	if (ct->t.cond.type == RT_COND_EVENT_RULE && ct->t.cond.er_type != RT_ER_USER &&
	    (ret = watch_kernel(ct, err, errlen)) < 0)
		goto fail;
	if (user_rule(ct) && (ret = make_user_rule(ct, err, errlen)) < 0)
		goto fail;
	struct ctl_trigger **tail = &ctl_triggers;
	while (*tail)
		tail = &(*tail)->next;
	*tail = ct;
	ctl_trigger_timer_update();
	if (user_rule(ct)) {
		struct rtd_user_trigger **ut = &rtd_user_triggers;
		while (*ut)
			ut = &(*ut)->next;
		*ut = &ct->ut;
		ct->evaluated = true;
		dp_user_triggers_changed();
		ctl_trigger_ring_update();
	}
	rtp_kv_add(reply, "trigger", ct->t.name);
	rtp_kv_addf(reply, "owner", "%u", (unsigned)ct->owner);
	fprintf(out, "Trigger %s added.\n", ct->t.name);
	return 0;
fail:
	free(ct->filter_bytes);
	rt_trigger_free(&ct->t);
	free(ct);
	return ret;
}

int ctl_list_triggers(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err,
		      size_t errlen)
{
	(void)reply;
	(void)err;
	(void)errlen;
	unsigned n = 0;
	for (const struct ctl_trigger *t = ctl_triggers; t; t = t->next) {
		if (!ctl_trigger_visible(r->uid, t->owner))
			continue;
		n++;
		fprintf(out, "- name: %s\n  owner uid: %u\n  condition: ", t->t.name,
			(unsigned)t->owner);
		rt_trigger_describe_cond(&t->t, out);
		fprintf(out, "\n  fired: %llu\n", (unsigned long long)t->fired);
		if (t->t.cond.type != RT_COND_EVENT_RULE)
			fprintf(out, "  satisfied at the last check: %s\n", t->was_true ? "yes" : "no");
		if (t->kernel)
			fprintf(out, "  events lost: %llu\n",
				(unsigned long long)dp_kernel_trigger_lost(t->kernel));
		fprintf(out, "  actions:\n");
		for (size_t i = 0; i < t->t.nr_actions; i++) {
			fprintf(out, "    ");
			rt_trigger_describe_action(&t->t.actions[i], out);
			fprintf(out, ": requested %llu, run %llu, failed %llu\n",
				(unsigned long long)t->requests[i], (unsigned long long)t->runs[i],
				(unsigned long long)t->errors[i]);
		}
	}
	if (!n)
		fprintf(out, "No trigger.\n");
	return 0;
}

/* The uid of the request's owner-uid (default: the peer's); only root
 * names another user. */
static int owner_of(const struct ctl_req *r, uid_t *owner, char *err, size_t errlen)
{
	uint64_t u = r->uid;
	bool given;
	int ret = ctl_get_u64(r, "owner-uid", UINT32_MAX - 1, &u, &given, err, errlen);
	if (ret < 0)
		return ret;
	if (given && u != r->uid && r->uid != 0) {
		snprintf(err, errlen, "--owner-uid=%llu: only root may name another user's "
			 "triggers", (unsigned long long)u);
		return -EPERM;
	}
	*owner = (uid_t)u;
	return 0;
}

/* Take t out of the programs' rules (if it is there). */
static void unevaluate(struct ctl_trigger *t)
{
	if (!t->evaluated)
		return;
	for (struct rtd_user_trigger **p = &rtd_user_triggers; *p; p = &(*p)->next)
		if (*p == &t->ut) {
			*p = t->ut.next;
			break;
		}
	t->evaluated = false;
	dp_user_triggers_changed();
	ctl_trigger_ring_update();
}

static void trigger_free(struct ctl_trigger *t)
{
	dp_kernel_trigger_remove(t->kernel);
	unevaluate(t);
	free(t->filter_bytes);
	rt_trigger_free(&t->t);
	free(t);
}

void ctl_trigger_remove(uid_t owner, const char *name)
{
	for (struct ctl_trigger **p = &ctl_triggers; *p; p = &(*p)->next) {
		if ((*p)->owner == owner && !strcmp((*p)->t.name, name)) {
			struct ctl_trigger *t = *p;
			*p = t->next;
			trigger_free(t);
			ctl_trigger_timer_update();
			return;
		}
	}
}

int ctl_remove_trigger(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err,
		       size_t errlen)
{
	(void)reply;
	const char *name = ctl_get(r, "name");
	uid_t owner;
	int ret = owner_of(r, &owner, err, errlen);
	if (ret < 0)
		return ret;
	if (!name || !find(owner, name)) {
		snprintf(err, errlen, "no trigger named '%s'%s", name ? name : "",
			 owner == r->uid ? "" : " of that user");
		return -ENOENT;
	}
	ctl_trigger_remove(owner, name);
	fprintf(out, "Trigger %s removed.\n", name);
	return 0;
}

void ctl_triggers_save(FILE *out, uid_t uid)
{
	for (const struct ctl_trigger *t = ctl_triggers; t; t = t->next) {
		if (!ctl_trigger_visible(uid, t->owner))
			continue;
		struct rt_trigger copy = t->t;
		copy.has_owner = true;
		copy.owner_uid = (uint32_t)t->owner;
		fprintf(out, "add-trigger");
		rt_trigger_words(&copy, ctl_save_word, out);
		fputc('\n', out);
	}
}

void ctl_triggers_fini(void)
{
	while (ctl_triggers) {
		struct ctl_trigger *t = ctl_triggers;
		ctl_triggers = t->next;
		trigger_free(t);
	}
}
