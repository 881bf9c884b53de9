/*
 * triggers.c - event-rule-matches triggers evaluated in this program
 * (daemon mode, docs/triggers.md): the rules of RTP_APP_TRIGGERS (which
 * events, as the daemon matched them on our event list; a compiled
 * filter; captures), bound to each event class they select, and the
 * notification ring (src/proto/trig_ring.h) a match is written to.
 *
 * A class with triggers has a trigger table (`trigs`, struct
 * rt_trig_set) published like its target table (daemon_client.h): built
 * by the listener under rt_registry_lock, published with a release store,
 * loaded with acquire by the probe, never freed while the process runs
 * (replaced tables stay reachable from a retired list; the total is
 * bounded by RT_TRIG_RETIRED_MAX, past which the client disconnects as
 * it does for targets). Its call sites are enabled, and record through
 * the library (no inline fast site), whether or not any session records
 * the event: the probe evaluates each trigger after writing the event
 * wherever it goes (rt_triggers_eval).
 *
 * The ring comes with the connection's first TRIGGERS; a lost connection
 * or a fork drops every trigger and the ring pointer (the ring stays
 * mapped: a probe may still be writing to it; at most one per
 * connection, RT_DC_MAX_CONNECTIONS in the process's life).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../filter/filter.h"
#include "../proto/trig_ring.h"
#include "daemon_client.h"
#include "filter_fetch.h"

/* Bytes of trigger tables, bound filters and programs this process may
 * have replaced over its life. */
#define RT_TRIG_RETIRED_MAX (16u << 20)

/* One decoded trigger, while a TRIGGERS message is applied. */
struct trig_rule {
	uint64_t token;
	const struct rtf_program *prog;	/* loaded; kept for ever once bound */
	uint32_t nr_captures;
	struct rtf_ref caps[RTP_APP_MAX_CAPTURES];
	bool cap_has_index[RTP_APP_MAX_CAPTURES];	/* FIELD[INDEX] */
	uint32_t cap_index[RTP_APP_MAX_CAPTURES];
	char *cap_names;		/* the refs' names point here */
	uint8_t *selects;		/* by class index: 1 if the rule selects it */
	uint32_t nr_selects;
};

/* Under rt_registry_lock. */
static struct rt_trig_set *retired;
static size_t retired_bytes;
static struct rttr_ring *rings[RT_DC_MAX_CONNECTIONS + 1];	/* never unmapped */
static uint32_t nr_rings;
static bool ring_this_connection;
/* The current connection's ring: release store here, acquire load in
 * rt_triggers_eval. */
static struct rttr_ring *ring_now;

static bool keep(struct rt_trig_set *old, size_t bytes)
{
	if (old) {
		old->retired = retired;
		retired = old;
	}
	retired_bytes += bytes;
	return retired_bytes <= RT_TRIG_RETIRED_MAX;
}

static void publish(struct rt_event_class *c, struct rt_trig_set *s)
{
	struct rt_trig_set *old = c->trigs;
	/* Release: the table, its bound filters and captures are complete
	 * before a probe can load it (acquire in probe.c). */
	__atomic_store_n(&c->trigs, s, __ATOMIC_RELEASE);
	keep(old, 0);
}

void rt_triggers_drop_all(void)
{
	struct rt_event_class **classes;
	size_t n = rt_registry_classes(&classes);
	for (size_t i = 0; i < n; i++)
		if (classes[i]->trigs)
			publish(classes[i], NULL);
	/* Release: pairs with the probe's acquire load (nothing to order
	 * for NULL, kept for symmetry with the store that published it). */
	__atomic_store_n(&ring_now, NULL, __ATOMIC_RELEASE);
	ring_this_connection = false;
}

/* "$ctx.NAME" is a context, anything else a payload field; a trailing
 * "[N]" (decimal, below 2^32) is an element's index, cut off the name
 * (*has_index); any other '[' leaves a name no field has: not
 * available. */
static void cap_ref(char *name, struct rtf_ref *r, bool *has_index, uint32_t *index)
{
	*has_index = false;
	char *open = strchr(name, '['), *end;
	if (open && open[1] >= '0' && open[1] <= '9' && strlen(open) <= 12) {
		errno = 0;
		unsigned long long n = strtoull(open + 1, &end, 10);
		if (!errno && end[0] == ']' && !end[1] && n <= UINT32_MAX) {
			*open = '\0';
			*has_index = true;
			*index = (uint32_t)n;
		}
	}
	if (!strncmp(name, "$ctx.", 5)) {
		r->scope = RTF_SCOPE_CTX;
		r->name = name + 5;
	} else {
		r->scope = RTF_SCOPE_FIELD;
		r->name = name;
	}
}

static int decode_rule(const struct rtp_app_trigger_in *in, struct trig_rule *r,
		       uint32_t nr_classes, char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	r->token = in->token;
	if (in->filter_len) {
		struct rtf_program *p;
		char ferr[128];
		int ret = rtf_load(in->filter, in->filter_len, &p, ferr, sizeof(ferr));
		if (ret < 0) {
			snprintf(err, errlen, "a trigger's filter: %s", ferr);
			return ret == -ENOMEM ? ret : -EPROTO;
		}
		r->prog = p;
	}
	size_t total = 0;
	for (uint32_t i = 0; i < in->nr_captures; i++)
		total += strlen(in->captures[i]) + 1;
	r->cap_names = malloc(total ? total : 1);
	r->selects = calloc(nr_classes ? nr_classes : 1, 1);
	if (!r->cap_names || !r->selects) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r->nr_selects = nr_classes;
	char *p = r->cap_names;
	for (uint32_t i = 0; i < in->nr_captures; i++) {
		size_t n = strlen(in->captures[i]) + 1;
		memcpy(p, in->captures[i], n);
		cap_ref(p, &r->caps[i], &r->cap_has_index[i], &r->cap_index[i]);
		p += n;
	}
	r->nr_captures = in->nr_captures;
	for (uint32_t i = 0; i < in->nr_events; i++) {
		uint32_t idx = rtp_app_trigger_event(in, i);
		if (idx < nr_classes)	/* a class we do not have: nothing */
			r->selects[idx] = 1;
	}
	return 0;
}

static void free_rule(struct trig_rule *r, bool keep_prog)
{
	if (!keep_prog)
		rtf_free((struct rtf_program *)(uintptr_t)r->prog);
	free(r->cap_names);
	free(r->selects);
}

/* Class c's table for the rules, or NULL when none selects it. Each
 * use's captures follow the uses in the same block. 0, or -ENOMEM. */
static int build(const struct rt_event_class *c, const struct trig_rule *rules, uint32_t n,
		 bool *used, struct rt_trig_set **out, size_t *bytes)
{
	uint32_t nr = 0, caps = 0;
	*out = NULL;
	for (uint32_t i = 0; i < n; i++)
		if (c->id < rules[i].nr_selects && rules[i].selects[c->id]) {
			nr++;
			caps += rules[i].nr_captures;
		}
	if (!nr)
		return 0;
	size_t size = sizeof(struct rt_trig_set) + nr * sizeof(struct rt_trig_use) +
		      caps * sizeof(struct rt_fref);
	struct rt_trig_set *s = calloc(1, size);
	if (!s)
		return -ENOMEM;
	*bytes += size;
	struct rt_fref *cap = (struct rt_fref *)(void *)&s->u[nr];
	for (uint32_t i = 0; i < n; i++) {
		const struct trig_rule *r = &rules[i];
		if (c->id >= r->nr_selects || !r->selects[c->id])
			continue;
		struct rt_trig_use *u = &s->u[s->nr++];
		u->token = r->token;
		if (r->prog) {
			struct rt_filter *f;
			if (rt_filter_bind(c, r->prog, &f) < 0) {
				for (uint32_t k = 0; k + 1 < s->nr; k++)
					free((void *)(uintptr_t)s->u[k].filter);
				free(s);
				return -ENOMEM;
			}
			u->filter = f;
			used[i] = true;
			*bytes += sizeof(*f) + f->nr_refs * sizeof(f->refs[0]);
		}
		u->captures = cap;
		u->nr_captures = r->nr_captures;
		for (uint32_t k = 0; k < r->nr_captures; k++)
			rt_fref_bind_capture(c, &r->caps[k], r->cap_has_index[k], r->cap_index[k],
					     cap++);
	}
	*out = s;
	return 0;
}

static int take_ring(int fd, char *err, size_t errlen)
{
	if ((fd >= 0) == ring_this_connection) {
		snprintf(err, errlen, fd >= 0 ? "a second trigger notification ring"
					      : "triggers without a notification ring");
		return -EPROTO;
	}
	if (fd < 0)
		return 0;
	if (nr_rings == sizeof(rings) / sizeof(rings[0])) {
		snprintf(err, errlen, "too many trigger notification rings");
		return -EPROTO;
	}
	struct rttr_ring *r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	int ret = rttr_attach(r, fd);
	if (ret < 0) {
		free(r);
		snprintf(err, errlen, "the trigger notification ring is not one (sealed, "
			 "with a matching header): %s", strerror(-ret));
		return -EPROTO;
	}
	rings[nr_rings++] = r;
	ring_this_connection = true;
	/* Release: the ring's geometry is set before a probe loads it. */
	__atomic_store_n(&ring_now, r, __ATOMIC_RELEASE);
	return 0;
}

int rt_triggers_apply(struct rtp_app_cursor *c, int fd, char *err, size_t errlen)
{
	uint32_t n;
	int ret = take_ring(fd, err, errlen);
	if (ret < 0)
		return ret;
	if (rtp_app_triggers_decode(c, &n) < 0) {
		snprintf(err, errlen, "malformed TRIGGERS message");
		return -EPROTO;
	}
	struct rt_event_class **classes;
	size_t nr_classes = rt_registry_classes(&classes);
	struct rtp_app_trigger_in *in = malloc(sizeof(*in));
	struct trig_rule *rules = calloc(n ? n : 1, sizeof(*rules));
	bool *used = calloc(n ? n : 1, sizeof(*used));
	uint32_t nr_rules = 0;
	if (!in || !rules || !used) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	for (; nr_rules < n; nr_rules++) {
		if (rtp_app_trigger_decode(c, in) < 0) {
			snprintf(err, errlen, "malformed TRIGGERS message");
			ret = -EPROTO;
			goto out;
		}
		ret = decode_rule(in, &rules[nr_rules], (uint32_t)nr_classes, err, errlen);
		if (ret < 0) {
			free_rule(&rules[nr_rules], false);
			goto out;
		}
	}
	if (rtp_app_end(c) < 0) {
		snprintf(err, errlen, "malformed TRIGGERS message");
		ret = -EPROTO;
		goto out;
	}
	size_t bytes = 0;
	for (size_t i = 0; i < nr_classes && ret == 0; i++) {
		struct rt_trig_set *s;
		ret = build(classes[i], rules, nr_rules, used, &s, &bytes);
		if (s || classes[i]->trigs)
			publish(classes[i], s);
	}
	if (ret == 0 && !keep(NULL, bytes)) {
		snprintf(err, errlen, "too many trigger changes");
		ret = -E2BIG;
	}
	if (ret == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	rt_registry_apply_sites_locked();
out:
	for (uint32_t i = 0; i < nr_rules; i++)
		free_rule(&rules[i], used[i]);
	free(rules);
	free(used);
	free(in);
	return ret;
}

void rt_triggers_eval(const struct rt_trig_set *s, const struct rt_filter_event *e)
{
	/* Acquire: pairs with the release store in take_ring. */
	const struct rttr_ring *ring = __atomic_load_n(&ring_now, __ATOMIC_ACQUIRE);
	if (!ring)
		return;
	for (uint32_t i = 0; i < s->nr; i++) {
		const struct rt_trig_use *u = &s->u[i];
		if (u->filter && !rt_filter_pass(u->filter, e))
			continue;
		struct rttr_record rec;
		struct timespec ts;
		int32_t pid, tid, prio;
		char tname[RT_THREAD_NAME_LEN];
		/* CLOCK_REALTIME through the vDSO: no system call. */
		clock_gettime(CLOCK_REALTIME, &ts);
		rt_probe_thread_ids(&pid, &tid, &prio);
		rec.token = u->token;
		rec.time_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
		rec.pid = (uint32_t)pid;
		rec.tid = (uint32_t)tid;
		rec.nr_captures = u->nr_captures;
		for (uint32_t k = 0; k < u->nr_captures && k < RTTR_MAX_CAPTURES; k++) {
			struct rttr_value *out = &rec.captures[k];
			struct rtf_value v;
			out->type = RTTR_NONE;
			if (u->captures[k].kind == RT_FREF_BYTES) {
				const uint8_t *b;
				uint32_t n;
				if (rt_fref_bytes(&u->captures[k], e, &b, &n) == 0) {
					out->type = RTTR_BYTES;
					out->s.p = (const char *)b;
					out->s.len = n;
				}
				continue;
			}
			if (rt_fref_fetch(&u->captures[k], e, tname, &v) < 0)
				continue;
			switch (v.type) {
			case RTF_INT:
				out->type = RTTR_S64;
				out->i = v.i;
				break;
			case RTF_UINT:
				out->type = RTTR_U64;
				out->u = v.u;
				break;
			case RTF_DOUBLE:
				out->type = RTTR_DOUBLE;
				out->d = v.d;
				break;
			case RTF_STRING:
				out->type = RTTR_STRING;
				out->s.p = v.s.p;
				out->s.len = v.s.len;
				break;
			default:
				break;
			}
		}
		rttr_write(ring, &rec);
	}
}
