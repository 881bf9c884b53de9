/*
 * ctl_rules.c - the requests that shape a session: enable-channel,
 * enable-event, disable-event, add-context, track, untrack. Every change
 * of rules or tracking is passed on with ctl_rules_changed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "../common/array.h"
#include "../common/config_parse.h"
#include "../filter/filter.h"
#include "../kernel/kernel.h"
#include "../proto/app_proto.h"
#include "ctl.h"

/* Every value of `key` in the request, split at commas; empty items are
 * an error. */
struct strlist {
	char **v;
	size_t n, cap;
};

static void strlist_free(struct strlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
	l->cap = 0;
}

static int strlist_get(const struct ctl_req *r, const char *key, struct strlist *l,
		       char *err, size_t errlen)
{
	uint32_t pos = 0;
	const char *k, *v;
	size_t kl, want = strlen(key);
	l->v = NULL;
	l->n = 0;
	l->cap = 0;
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
			if (RT_ARRAY_GROW(l->v, l->cap, l->n + 1, 4) < 0)
				goto nomem;
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

/* The domain of the request: domain=user (-u, the default) or kernel
 * (-k), each named at most once; the kernel domain only when this daemon
 * may use it. */
static int domain_of(const struct ctl_req *r, enum rtd_domain *d, char *err, size_t errlen)
{
	uint32_t pos = 0;
	const char *k, *v;
	size_t kl;
	bool user = false, kernel = false;
	while (rtp_kv_next(r->p, r->len, &pos, &k, &kl, &v)) {
		if (kl != 6 || memcmp(k, "domain", 6))
			continue;
		if (!strcmp(v, "kernel")) {
			kernel = true;
		} else if (!strcmp(v, "user")) {
			user = true;
		} else {
			snprintf(err, errlen, "unknown domain '%s' (user or kernel)", v);
			return -EINVAL;
		}
	}
	if (user && kernel) {
		snprintf(err, errlen, "-u and -k exclude each other: one domain per command");
		return -EINVAL;
	}
	*d = kernel ? RTD_DOMAIN_KERNEL : RTD_DOMAIN_USER;
	return kernel ? dp_kernel_access(err, errlen) : 0;
}

/* Kernel channels and rules configure the session's ftrace instance, made
 * at the first start: from then on they are fixed. */
static int kernel_fixed(const struct rtd_session *s, char *err, size_t errlen)
{
	if (!s->ever_started)
		return 0;
	snprintf(err, errlen, "session %s has been started: its kernel channel and rules are "
		 "fixed at the first start (its ftrace instance was configured then)", s->name);
	return -EBUSY;
}

/* The channel of domain d named by "channel" (or channel0); created when
 * `create` and the session has never been started. A session has one
 * kernel channel at most. */
static struct rtd_channel *channel_of(const struct ctl_req *r, struct rtd_session *s,
				      enum rtd_domain d, bool create, char *err, size_t errlen)
{
	const char *name = ctl_get(r, "channel");
	if (!name)
		name = CTL_DEFAULT_CHANNEL;
	struct rtd_channel *c = model_channel_find(s, d, name);
	if (c)
		return c;
	if (!create || strcmp(name, CTL_DEFAULT_CHANNEL)) {
		snprintf(err, errlen, "%s channel '%s' not found in session %s",
			 d == RTD_DOMAIN_KERNEL ? "kernel" : "user-space", name, s->name);
		return NULL;
	}
	if (s->ever_started) {
		snprintf(err, errlen, "session %s has been started: it cannot get a new channel "
			 "(channels are fixed at the first start)", s->name);
		return NULL;
	}
	if (d == RTD_DOMAIN_KERNEL && s->kchannels) {
		snprintf(err, errlen, "session %s has kernel channel %s already: a session has one "
			 "kernel channel (one ftrace instance)", s->name, s->kchannels->name);
		return NULL;
	}
	c = model_channel_new(s, d, name);
	if (!c)
		snprintf(err, errlen, "out of memory");
	return c;
}

static const char *const channel_attrs[] = {
	"overwrite", "subbuf-size", "num-subbuf", "switch-timer-us", "read-timer-us",
	"tracefile-size", "tracefile-count", "buffers",
};

/* The attributes a kernel channel takes (ftrace has one buffer per CPU,
 * written by the kernel: no switch timer, no trace file rotation, no
 * per-user or per-program buffers). */
static bool kernel_attr(const char *a)
{
	return !strcmp(a, "overwrite") || !strcmp(a, "subbuf-size") || !strcmp(a, "num-subbuf") ||
	       !strcmp(a, "read-timer-us");
}

/* ftrace allocates the buffer of every CPU at the first start. */
#define KERNEL_BUFFER_MAX (1ull << 30)

/* enable-channel: domain, channel, overwrite=0|1, subbuf-size,
 * num-subbuf, switch-timer-us, read-timer-us, tracefile-size,
 * tracefile-count, buffers=uid|pid (kernel channels: the first four
 * only). An existing channel named without attributes is re-enabled. */
int ctl_enable_channel(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err,
		       size_t errlen)
{
	struct rtd_session *s = ctl_session_of(r, err, errlen);
	if (!s)
		return -ENOENT;
	enum rtd_domain d;
	int ret = domain_of(r, &d, err, errlen);
	if (ret < 0)
		return ret;
	bool kernel = d == RTD_DOMAIN_KERNEL;
	const char *name = ctl_get(r, "channel");
	if (!name || !model_name_ok(name, false)) {
		snprintf(err, errlen, "invalid channel name '%s' (1-63 letters, digits, '_', "
			 "'.', '-')", name ? name : "");
		return -EINVAL;
	}
	bool attrs = false;
	for (size_t i = 0; i < sizeof(channel_attrs) / sizeof(channel_attrs[0]); i++) {
		bool has = ctl_get(r, channel_attrs[i]) != NULL;
		if (has && kernel && !kernel_attr(channel_attrs[i])) {
			snprintf(err, errlen, "%s does not apply to kernel channels (they take "
				 "--overwrite/--discard, --subbuf-size, --num-subbuf, --read-timer)",
				 channel_attrs[i]);
			return -EINVAL;
		}
		attrs |= has;
	}
	if (kernel && (ret = kernel_fixed(s, err, errlen)) < 0)
		return ret;
	struct rtd_channel *c = model_channel_find(s, d, name);
	if (c) {
		if (attrs) {
			snprintf(err, errlen, "channel %s already exists in session %s; its "
				 "attributes cannot change", name, s->name);
			return -EEXIST;
		}
		c->enabled = true;
		ctl_rules_changed(s, reply);
		fprintf(out, "%s %s enabled in session %s.\n", kernel ? "Kernel channel" : "Channel",
			name, s->name);
		return 0;
	}
	if (kernel && s->kchannels) {
		snprintf(err, errlen, "session %s has kernel channel %s already: a session has one "
			 "kernel channel (one ftrace instance)", s->name, s->kchannels->name);
		return -EEXIST;
	}
	if (s->ever_started) {
		snprintf(err, errlen, "session %s has been started: it cannot get a new channel "
			 "(channels are fixed at the first start)", s->name);
		return -EBUSY;
	}
	struct rtd_channel t = {
		.overwrite = s->snapshot,
		.subbuf_size = kernel ? CTL_DEFAULT_KERNEL_SUBBUF_SIZE : CTL_DEFAULT_SUBBUF_SIZE,
		.num_subbuf = kernel ? CTL_DEFAULT_KERNEL_NUM_SUBBUF : CTL_DEFAULT_NUM_SUBBUF,
		.read_timer_ms = CTL_DEFAULT_READ_TIMER_MS,
		.buffers = RTD_BUFFERS_PER_UID,
	};
	uint64_t v;
	bool has;
	char perr[RT_ERRLEN];
	const char *ow = ctl_get(r, "overwrite");
	if (ow) {
		if (strcmp(ow, "0") && strcmp(ow, "1")) {
			snprintf(err, errlen, "overwrite must be 0 or 1");
			return -EINVAL;
		}
		t.overwrite = ow[0] == '1';
		/* A discard channel of a snapshot session streams to the
		 * session's output, and each snapshot takes a copy
		 * (docs/sessions.md, hybrid sessions). */
		if (s->snapshot && !t.overwrite && kernel) {
			snprintf(err, errlen, "snapshot session %s: kernel channels are in "
				 "overwrite mode (--discard is not possible)", s->name);
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
	if (kernel && t.subbuf_size * t.num_subbuf > KERNEL_BUFFER_MAX) {
		snprintf(err, errlen, "a kernel buffer of %llu bytes per CPU is too large (at most "
			 "%llu: --subbuf-size times --num-subbuf)",
			 (unsigned long long)(t.subbuf_size * t.num_subbuf), KERNEL_BUFFER_MAX);
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
	c = model_channel_new(s, d, name);
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
	fprintf(out, "%s %s enabled in session %s.\n", kernel ? "Kernel channel" : "Channel", name,
		s->name);
	return 0;
}

static bool same_filter(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static bool same_rule(const struct rtd_rule *a, const char *pattern, const struct strlist *ex,
		      enum rt_level_match lt, int ll, bool syscall, const char *filter)
{
	if (strcmp(a->pattern, pattern) || a->loglevel_type != lt ||
	    (lt != RT_LEVEL_ANY && a->loglevel != ll) || a->nr_excludes != ex->n ||
	    a->syscall != syscall || !same_filter(a->filter, filter))
		return false;
	for (size_t i = 0; i < ex->n; i++)
		if (strcmp(a->excludes[i], ex->v[i]))
			return false;
	return true;
}

static int loglevel_of(const struct ctl_req *r, enum rt_level_match *lt, int32_t *ll,
		       char *err, size_t errlen)
{
	const char *range = ctl_get(r, "loglevel"), *single = ctl_get(r, "loglevel-only");
	char perr[RT_ERRLEN];
	*lt = RT_LEVEL_ANY;
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
	*lt = range ? RT_LEVEL_RANGE : RT_LEVEL_ONLY;
	return 0;
}

/* What a rule's domain allows: syscall is the kernel's, excludes and
 * log levels user space's (filter: both). */
static int check_domain_keys(const struct ctl_req *r, enum rtd_domain d, char *err,
			     size_t errlen)
{
	static const char *const user_only[] = { "exclude", "loglevel", "loglevel-only" };
	static const char *const kernel_only[] = { "syscall", "userspace-probe" };
	if (d == RTD_DOMAIN_KERNEL) {
		for (size_t i = 0; i < sizeof(user_only) / sizeof(user_only[0]); i++) {
			if (ctl_get(r, user_only[i])) {
				snprintf(err, errlen, "--%s does not apply to kernel rules (-k)",
					 user_only[i]);
				return -EINVAL;
			}
		}
		return 0;
	}
	for (size_t i = 0; i < sizeof(kernel_only) / sizeof(kernel_only[0]); i++) {
		if (ctl_get(r, kernel_only[i])) {
			snprintf(err, errlen, "--%s is for kernel rules (-k)", kernel_only[i]);
			return -EINVAL;
		}
	}
	return 0;
}

/* Any field, of a type not known yet (the rule's events are known at the
 * session's start). */
static int any_field(void *arg, const char *name, struct rtf_ftrace_field *out)
{
	(void)arg;
	*out = (struct rtf_ftrace_field){ .name = name, .kind = RTF_FTRACE_ANY };
	return 0;
}

/*
 * A rule's filter: LTTng's language (src/filter), and for a kernel rule
 * an expression ftrace can run (fields compared with constants, see
 * filter.h). Checked now, so that a mistake is reported by enable-event
 * with its column; a kernel rule's field names are checked against the
 * events at the session's start. A user rule's filter is compiled here,
 * once: *bin and *len (malloc'ed, rtf_save) are what programs get
 * (kernel: NULL). 0, -EINVAL or -ENOMEM.
 */
static int check_filter(const char *filter, bool kernel, void **bin, size_t *len, char *err,
			size_t errlen)
{
	struct rtf_program *p;
	char why[RTD_ERRLEN], *text;
	*bin = NULL;
	*len = 0;
	int ret = rtf_compile(filter, NULL, &p, why, sizeof(why));
	if (ret < 0) {
		snprintf(err, errlen, "%s", why);
		return ret;
	}
	if (kernel) {
		ret = rtf_to_ftrace(p, any_field, NULL, &text, why, sizeof(why));
		if (ret < 0)
			snprintf(err, errlen, "%s", why);
		else
			free(text);
	} else if ((ret = rtf_save(p, bin, len)) < 0 || *len > RTP_APP_FILTER_MAX) {
		snprintf(err, errlen, ret < 0 ? "out of memory" : "the filter compiles to more "
			 "than %u bytes", RTP_APP_FILTER_MAX);
		ret = ret < 0 ? ret : -EINVAL;
		free(*bin);
		*bin = NULL;
	}
	rtf_free(p);
	return ret < 0 ? ret : 0;
}

/* The patterns of an enable-event -a: every event; in the kernel domain
 * every tracepoint and every system call (LTTng's -k -a), or with
 * --syscall every system call. */
static int all_patterns(struct strlist *pats, size_t n, char *err, size_t errlen)
{
	pats->v = calloc(n, sizeof(char *));
	for (size_t i = 0; pats->v && i < n; i++, pats->n++) {
		if (!(pats->v[i] = strdup("*")))
			break;
	}
	if (pats->n == n)
		return 0;
	snprintf(err, errlen, "out of memory");
	strlist_free(pats);
	return -ENOMEM;
}

/* A user-space probe rule (enable-event -k --userspace-probe=SPEC NAME):
 * one event name, no --syscall or -a (a --filter is on the probe's
 * fields, checked when the session starts, as a tracepoint rule's); the
 * probe resolves now (the file, its function or note, its debug
 * information). */
static int check_probe(const struct ctl_req *r, const char *spec, const struct strlist *pats,
		       char *err, size_t errlen)
{
	if (flag(r, "syscall") || flag(r, "all")) {
		snprintf(err, errlen, "--userspace-probe goes with one event name, not with "
			 "--syscall or -a");
		return -EINVAL;
	}
	if (pats->n != 1) {
		snprintf(err, errlen, "--userspace-probe names one event: enable-event -k "
			 "--userspace-probe=SPEC NAME");
		return -EINVAL;
	}
	if (strlen(spec) >= PATH_MAX + 512) {
		snprintf(err, errlen, "the probe is too long");
		return -EINVAL;
	}
	char why[RTD_ERRLEN];
	int ret = rtk_probe_check(pats->v[0], spec, why, sizeof(why));
	if (ret < 0)
		snprintf(err, errlen, "%s", why);
	return ret;
}

/* enable-event: domain, channel, pattern (repeated, comma lists), all=1
 * (every event), exclude (repeated, comma lists), loglevel |
 * loglevel-only, enabled=0, filter; kernel rules: syscall=1, or
 * userspace-probe=SPEC (pattern: the event's name). */
int ctl_enable_event(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err,
		     size_t errlen)
{
	struct strlist pats = { 0 }, ex = { 0 };
	struct rtd_session *s = ctl_session_of(r, err, errlen);
	if (!s)
		return -ENOENT;
	enum rtd_domain d;
	int ret = domain_of(r, &d, err, errlen);
	if (ret < 0)
		return ret;
	bool kernel = d == RTD_DOMAIN_KERNEL, syscall = flag(r, "syscall");
	const char *filter = ctl_get(r, "filter");
	if ((ret = check_domain_keys(r, d, err, errlen)) < 0)
		return ret;
	if (kernel && (ret = kernel_fixed(s, err, errlen)) < 0)
		return ret;
	if (filter && (!*filter || strlen(filter) >= RTD_FILTER_MAX)) {
		snprintf(err, errlen, "a filter is 1 to %d characters", RTD_FILTER_MAX - 1);
		return -EINVAL;
	}
	/* One line for ftrace's filter files (and for the saved text). */
	for (const unsigned char *c = (const unsigned char *)filter; c && *c; c++) {
		if (*c < ' ' || *c == 0x7f) {
			snprintf(err, errlen, "a filter is one line of printable characters "
				 "(byte 0x%02x)", *c);
			return -EINVAL;
		}
	}
	void *bin = NULL;
	size_t bin_len = 0;
	if (filter && (ret = check_filter(filter, kernel, &bin, &bin_len, err, errlen)) < 0)
		return ret;
	enum rt_level_match lt;
	int32_t ll;
	ret = -EINVAL;
	if (loglevel_of(r, &lt, &ll, err, errlen) < 0)
		goto out_bin;
	if (strlist_get(r, "pattern", &pats, err, errlen) < 0)
		goto out_bin;
	if (strlist_get(r, "exclude", &ex, err, errlen) < 0)
		goto out_pats;
	/* -k -a: two rules, every tracepoint and every system call. */
	bool both = kernel && flag(r, "all") && !syscall;
	if (flag(r, "all")) {
		if (pats.n) {
			snprintf(err, errlen, "-a and event patterns exclude each other");
			goto out_ex;
		}
		if ((ret = all_patterns(&pats, both ? 2 : 1, err, errlen)) < 0)
			goto out_ex;
		ret = -EINVAL;
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
	const char *probe = ctl_get(r, "userspace-probe");
	if (probe && (ret = check_probe(r, probe, &pats, err, errlen)) < 0)
		goto out_ex;
	/* A kernel name that matches nothing is refused now, as LTTng does,
	 * rather than at the start. */
	for (size_t i = 0; kernel && !probe && i < pats.n; i++) {
		ret = dp_kernel_rule_matches(pats.v[i], syscall || (both && i == 1), err, errlen);
		if (ret < 0)
			goto out_ex;
	}
	ret = -EINVAL;
	struct rtd_channel *c = channel_of(r, s, d, true, err, errlen);
	if (!c) {
		ret = -ENOENT;
		goto out_ex;
	}
	/* enabled=0 (saved configurations): the rule exists, disabled. */
	const char *en = ctl_get(r, "enabled");
	bool enable = !en || strcmp(en, "0");
	for (size_t i = 0; i < pats.n; i++) {
		bool sc = syscall || (both && i == 1);
		struct rtd_rule *rule = c->rules;
		while (rule && !(same_rule(rule, pats.v[i], &ex, lt, ll, sc, filter) &&
				 same_filter(rule->probe, probe)))
			rule = rule->next;
		/* One probe per event name: its uprobe event's. */
		for (struct rtd_rule *o = c->rules; probe && !rule && o; o = o->next) {
			if (o->probe && !strcmp(o->pattern, pats.v[i])) {
				snprintf(err, errlen, "channel %s has a probe named %s already",
					 c->name, pats.v[i]);
				ret = -EEXIST;
				goto out_ex;
			}
		}
		if (!rule) {
			/* Each rule its own copy of the compiled filter, made
			 * first: a user rule with a filter never lacks it. */
			void *copy = bin ? malloc(bin_len) : NULL;
			char *pcopy = probe ? strdup(probe) : NULL;
			if ((!bin || copy) && (!probe || pcopy))
				rule = model_rule_new(c, pats.v[i], ex.v, ex.n, lt, ll, sc,
						      filter);
			if (rule)
				rule->probe = pcopy;
			else
				free(pcopy);
			if (rule && copy) {
				memcpy(copy, bin, bin_len);
				rule->filter_bin = copy;
				rule->filter_len = (uint32_t)bin_len;
			} else {
				free(copy);
			}
		}
		if (!rule) {
			snprintf(err, errlen, "out of memory");
			ret = -ENOMEM;
			goto out_ex;
		}
		rule->enabled = enable;
		if (kernel)
			fprintf(out, "Kernel %s rule '%s' %s in channel %s of session %s.\n",
				probe ? "user-space probe" : sc ? "system call" : "tracepoint", pats.v[i],
				enable ? "enabled" : "added (disabled)", c->name, s->name);
		else
			fprintf(out, "Event rule '%s' %s in channel %s of session %s.\n",
				pats.v[i], enable ? "enabled" : "added (disabled)", c->name,
				s->name);
	}
	ctl_rules_changed(s, reply);
	ret = 0;
out_ex:
	strlist_free(&ex);
out_pats:
	strlist_free(&pats);
out_bin:
	free(bin);
	return ret;
}

/* A disable-event pattern names this rule: in the kernel domain, of the
 * kind (tracepoint or syscall) the request names. */
static bool names_rule(const struct rtd_rule *rule, const char *pattern, enum rtd_domain d,
		       bool syscall)
{
	return !strcmp(rule->pattern, pattern) && (d != RTD_DOMAIN_KERNEL || rule->syscall == syscall);
}

/* disable-event: domain, channel, pattern (repeated, comma lists) | all=1;
 * kernel: syscall=1 (the system call rules). A pattern disables every
 * rule with exactly that pattern. */
int ctl_disable_event(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err,
		      size_t errlen)
{
	struct strlist pats = { 0 };
	struct rtd_session *s = ctl_session_of(r, err, errlen);
	if (!s)
		return -ENOENT;
	enum rtd_domain d;
	int ret = domain_of(r, &d, err, errlen);
	if (ret < 0)
		return ret;
	bool syscall = flag(r, "syscall");
	if (syscall && d != RTD_DOMAIN_KERNEL) {
		snprintf(err, errlen, "--syscall is for kernel rules (-k)");
		return -EINVAL;
	}
	if (d == RTD_DOMAIN_KERNEL && (ret = kernel_fixed(s, err, errlen)) < 0)
		return ret;
	struct rtd_channel *c = channel_of(r, s, d, false, err, errlen);
	if (!c)
		return -ENOENT;
	if (flag(r, "all")) {
		/* -k --syscall -a: the system call rules only (LTTng's). */
		for (struct rtd_rule *rule = c->rules; rule; rule = rule->next)
			if (!syscall || rule->syscall)
				rule->enabled = false;
		ctl_rules_changed(s, reply);
		fprintf(out, "All %s rules of %schannel %s of session %s disabled.\n",
			syscall ? "system call" : "event", d == RTD_DOMAIN_KERNEL ? "kernel " : "",
			c->name, s->name);
		return 0;
	}
	if (strlist_get(r, "pattern", &pats, err, errlen) < 0)
		return -EINVAL;
	ret = -EINVAL;
	if (!pats.n) {
		snprintf(err, errlen, "no event pattern (name one, or -a for every rule)");
		goto out;
	}
	for (size_t i = 0; i < pats.n; i++) {
		bool found = false;
		for (struct rtd_rule *rule = c->rules; rule; rule = rule->next)
			found |= names_rule(rule, pats.v[i], d, syscall);
		if (!found) {
			snprintf(err, errlen, "no %s rule '%s' in channel %s of session %s",
				 d != RTD_DOMAIN_KERNEL ? "event" :
				 syscall ? "kernel system call" : "kernel tracepoint",
				 pats.v[i], c->name, s->name);
			ret = -ENOENT;
			goto out;
		}
	}
	for (size_t i = 0; i < pats.n; i++) {
		for (struct rtd_rule *rule = c->rules; rule; rule = rule->next)
			if (names_rule(rule, pats.v[i], d, syscall))
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

/* The kernel contexts (src/kernel's): the thread id (common_pid), in
 * every kernel event's context already, and its process, name and
 * priority (pid, procname, prio), which the conversion adds. */
static int kernel_add_context(const struct ctl_req *r, struct rtd_session *s, FILE *out,
			      char *err, size_t errlen)
{
	struct strlist types = { 0 };
	int ret = kernel_fixed(s, err, errlen);
	if (ret < 0)
		return ret;
	if (strlist_get(r, "type", &types, err, errlen) < 0)
		return -EINVAL;
	ret = -EINVAL;
	if (!types.n) {
		snprintf(err, errlen, "name a context type with -t");
		goto out;
	}
	unsigned bits = 0;
	for (size_t i = 0; i < types.n; i++) {
		int bit = rtk_context_by_name(types.v[i]);
		if (bit < 0) {
			snprintf(err, errlen, "kernel context '%s' is not available (tid, pid, "
				 "procname, prio)", types.v[i]);
			goto out;
		}
		bits |= (unsigned)bit;
	}
	struct rtd_channel *c = channel_of(r, s, RTD_DOMAIN_KERNEL, true, err, errlen);
	if (!c) {
		ret = -ENOENT;
		goto out;
	}
	c->kcontexts |= bits;
	for (size_t i = 0; i < types.n; i++)
		fprintf(out, "Context %s added to kernel channel %s of session %s%s.\n", types.v[i],
			c->name, s->name, strcmp(types.v[i], "tid") ? "" : " (every kernel event "
			"has it)");
	ret = 0;
out:
	strlist_free(&types);
	return ret;
}

/* add-context: domain, type (repeated, comma lists), channel (default:
 * every channel; channel0 is created when the session has none). Only
 * before the session's first start. */
int ctl_add_context(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err,
		    size_t errlen)
{
	struct strlist types = { 0 };
	int ids[RT_CTX_COUNT];
	struct rtd_session *s = ctl_session_of(r, err, errlen);
	if (!s)
		return -ENOENT;
	enum rtd_domain d;
	int ret = domain_of(r, &d, err, errlen);
	if (ret < 0)
		return ret;
	if (d == RTD_DOMAIN_KERNEL)
		return kernel_add_context(r, s, out, err, errlen);
	ret = -EINVAL;
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
		only = channel_of(r, s, RTD_DOMAIN_USER, true, err, errlen);
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
		if (RT_ARRAY_GROW(s->tracked, s->cap_tracked, s->nr_tracked + l.n, 8) < 0) {
			snprintf(err, errlen, "out of memory");
			ret = -ENOMEM;
			goto out;
		}
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
