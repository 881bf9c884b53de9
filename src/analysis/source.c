/*
 * source.c - interned strings, and several trace directories read as one
 * stream of events in timestamp order (ties: lower directory index first).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "../common/array.h"
#include "../common/escape.h"

static uint32_t hash_str(const char *s)
{
	uint32_t h = 2166136261u;	/* FNV-1a */
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

int64_t ra_strtab_find(const struct ra_strtab *tab, const char *s)
{
	if (!tab->nr_slots)
		return -ENOENT;
	uint32_t mask = tab->nr_slots - 1;
	for (uint32_t i = hash_str(s) & mask;; i = (i + 1) & mask) {
		uint32_t v = tab->slots[i];
		if (!v)
			return -ENOENT;
		if (!strcmp(tab->str[v - 1], s))
			return v - 1;
	}
}

__attribute__((noinline)) static int strtab_grow(struct ra_strtab *tab)
{
	uint32_t nr_slots = tab->nr_slots ? tab->nr_slots * 2 : 64;
	uint32_t *slots = calloc(nr_slots, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (uint32_t k = 0; k < tab->nr; k++) {
		uint32_t i = hash_str(tab->str[k]) & (nr_slots - 1);
		while (slots[i])
			i = (i + 1) & (nr_slots - 1);
		slots[i] = k + 1;
	}
	free(tab->slots);
	tab->slots = slots;
	tab->nr_slots = nr_slots;
	return 0;
}

int64_t ra_strtab_intern(struct ra_strtab *tab, const char *s)
{
	int64_t found = ra_strtab_find(tab, s);
	if (found >= 0)
		return found;
	if ((uint64_t)(tab->nr + 1) * 2 > tab->nr_slots && strtab_grow(tab) < 0)
		return -ENOMEM;
	if (RT_ARRAY_GROW(tab->str, tab->cap, (size_t)tab->nr + 1, 32) < 0)
		return -ENOMEM;
	char *copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	uint32_t i = hash_str(s) & (tab->nr_slots - 1);
	while (tab->slots[i])
		i = (i + 1) & (tab->nr_slots - 1);
	tab->str[tab->nr] = copy;
	tab->slots[i] = ++tab->nr;
	return tab->nr - 1;
}

void ra_strtab_free(struct ra_strtab *tab)
{
	for (uint32_t i = 0; i < tab->nr; i++)
		free(tab->str[i]);
	free(tab->str);
	free(tab->slots);
	memset(tab, 0, sizeof(*tab));
}

/* Trace i's host name (env hostname; "" when it has none). */
static const char *trace_host(const struct rtr_trace *t, uint32_t i)
{
	const struct rtr_env *e = rtr_trace_env_get(t, i, "hostname");
	return e && e->is_string ? e->s : "";
}

/* The context fields an event's key and thread come from. */
enum { CTX_VTID, CTX_TID, CTX_PROCNAME, NR_CTX };
static const char *const ctx_names[NR_CTX] = { "vtid", "tid", "procname" };

/* What the first event of an event class taught (constant per class: its
 * contexts' layout and its name), so that later events of the class look
 * nothing up by name. */
struct class_info {
	bool known;		/* the fields below are filled */
	bool sched_switch;	/* its name ends in "sched_switch" */
	uint32_t name;		/* index in ra_source.names */
	int8_t scope[NR_CTX];	/* where ra_event_context finds the field:
				 * an enum rtr_scope, -1 when it has none */
	uint32_t field[NR_CTX];
	/* The bytes of both context scopes (rtr_scope_bytes: the stream
	 * event context's, then the event context's) of the class's last
	 * event whose key came from an integer vtid, and what they gave:
	 * the same bytes give the same key, thread and procname. */
	bool have_last;
	bool no_context;	/* the class has no event context scope */
	uint8_t len[2];
	uint8_t bytes[48];
	uint32_t key;
	int64_t tid;
	int8_t proc;		/* the procname string's scope (0, 1), -1 none */
	uint8_t proc_off, proc_len;	/* its bytes in that scope's */
};

/* A thread's key by its integer vtid (and, with several hosts, its
 * trace): direct-mapped; key is the index + 1, 0 empty. */
#define KEY_SLOTS 256
struct key_slot {
	int64_t tid;
	uint32_t trace;
	uint32_t key;
};

/* The procname context a key's thread name was last set from: its first
 * bytes, as many as ra_printable reads into a 64-byte name (len: their
 * number + 1, 0 none). */
struct name_seen {
	uint8_t len;
	char raw[63];
};

struct ra_source_cache {
	const struct rtr_event_class *classes;	/* rtr_event_classes' list */
	size_t nr_classes;
	struct class_info *cls;			/* parallel to classes */
	struct class_info other;		/* a class outside the list */
	struct key_slot keys[KEY_SLOTS];
	struct name_seen *seen;			/* per key */
	size_t nr_seen;
};

int ra_source_open(struct ra_source *src, const char *const *dirs, size_t nr,
		   const char *key_field, char *err, size_t errlen)
{
	memset(src, 0, sizeof(*src));
	src->dirs = dirs;
	src->nr = nr;
	src->default_key = !key_field;
	src->key_field = key_field ? key_field : RA_DEFAULT_KEY;
	src->first_ns = INT64_MAX;
	src->last_ns = INT64_MIN;
	if (!nr) {
		snprintf(err, errlen, "no trace directory given");
		return -EINVAL;
	}
	char msg[512];
	int ret = rtr_open_many(dirs, nr, &src->t, msg, sizeof(msg));
	if (ret < 0) {
		snprintf(err, errlen, "cannot read the trace in %s%s: %s", dirs[0],
			 nr > 1 ? " ..." : "", msg);
		return ret;
	}
	for (uint32_t i = 1; src->default_key && !src->hosts && i < rtr_trace_count(src->t); i++)
		src->hosts = strcmp(trace_host(src->t, 0), trace_host(src->t, i)) != 0;
	src->cache = calloc(1, sizeof(*src->cache));
	if (src->cache) {
		src->cache->nr_classes = rtr_event_classes(src->t, &src->cache->classes);
		src->cache->cls = calloc(src->cache->nr_classes + 1, sizeof(*src->cache->cls));
	}
	if (!src->cache || !src->cache->cls || ra_strtab_intern(&src->keys, RA_UNKNOWN_KEY) < 0) {
		snprintf(err, errlen, "out of memory");
		ra_source_close(src);
		return -ENOMEM;
	}
	/* Threads the events do not name (no procname context): the state
	 * dump's names (a snapshot's threads named long before it). */
	if (src->default_key && (ret = ra_symbols_load(dirs, nr, &src->syms, msg,
						       sizeof(msg))) < 0) {
		snprintf(err, errlen, "cannot read the trace in %s%s: %s", dirs[0],
			 nr > 1 ? " ..." : "", msg);
		ra_source_close(src);
		return ret;
	}
	return 0;
}

int ra_event_context(const struct rtr_event *raw, const char *name,
		     struct rtr_value *v)
{
	static const enum rtr_scope scopes[] = {
		RTR_SCOPE_EVENT_CONTEXT, RTR_SCOPE_STREAM_EVENT_CONTEXT,
	};
	for (size_t s = 0; s < sizeof(scopes) / sizeof(scopes[0]); s++) {
		uint32_t n = rtr_scope_count(raw, scopes[s]);
		for (uint32_t i = 0; i < n; i++) {
			const char *fname = NULL;
			if (rtr_scope_field(raw, scopes[s], i, v, &fname) < 0 || !fname)
				continue;
			if (!strcmp(fname, name))
				return 0;
		}
	}
	return -ENOENT;
}

int ra_event_field(const struct rtr_event *raw, const char *name,
		   struct rtr_value *v)
{
	if (ra_event_context(raw, name, v) == 0 || rtr_field_by_name(raw, name, v) == 0)
		return 0;
	return -ENOENT;
}

/* The class of the current event, learnt from it if it is the first of
 * its class: NULL when out of memory. */
static struct class_info *class_of(struct ra_source *src)
{
	struct ra_source_cache *c = src->cache;
	const struct rtr_event *raw = &src->cur;
	size_t k = (size_t)(raw->cls - c->classes);
	struct class_info *ci = raw->cls >= c->classes && k < c->nr_classes ? &c->cls[k] : &c->other;
	if (ci->known)
		return ci;
	int64_t name = ra_strtab_intern(&src->names, raw->cls->name);
	if (name < 0)
		return NULL;
	size_t n = strlen(raw->cls->name);
	ci->name = (uint32_t)name;
	ci->sched_switch = n >= 12 && !strcmp(raw->cls->name + n - 12, "sched_switch");
	if (ci == &c->other)
		return ci;
	/* The fields ra_event_context would find, in its order; a field that
	 * cannot be decoded (damaged data) leaves the class to be learnt from
	 * a later event, this one looked up field by field. */
	static const enum rtr_scope scopes[] = {
		RTR_SCOPE_EVENT_CONTEXT, RTR_SCOPE_STREAM_EVENT_CONTEXT,
	};
	memset(ci->scope, -1, sizeof(ci->scope));
	const uint8_t *p;
	size_t len;
	ci->no_context = rtr_scope_bytes(raw, RTR_SCOPE_EVENT_CONTEXT, &p, &len) == 0 && !p;
	for (size_t s = 0; s < sizeof(scopes) / sizeof(scopes[0]); s++) {
		uint32_t nf = rtr_scope_count(raw, scopes[s]);
		for (uint32_t i = 0; i < nf; i++) {
			struct rtr_value v;
			const char *fname = NULL;
			if (rtr_scope_field(raw, scopes[s], i, &v, &fname) < 0)
				return ci;
			for (int w = 0; fname && w < NR_CTX; w++) {
				if (ci->scope[w] < 0 && !strcmp(fname, ctx_names[w])) {
					ci->scope[w] = (int8_t)scopes[s];
					ci->field[w] = i;
				}
			}
		}
	}
	ci->known = true;
	return ci;
}

/* ra_event_context(raw, ctx_names[w], v) through the class's positions. */
static int ctx_get(const struct class_info *ci, const struct rtr_event *raw, int w,
		   struct rtr_value *v)
{
	if (ci->known) {
		if (ci->scope[w] < 0)
			return -ENOENT;
		if (rtr_scope_field(raw, (enum rtr_scope)ci->scope[w], ci->field[w], v, NULL) == 0)
			return 0;
	}
	return ra_event_context(raw, ctx_names[w], v);
}

/* The key of an event as text (see ra_source_open). */
static void key_text(const struct ra_source *src, const struct class_info *ci,
		     const struct rtr_event *ev, char *out, size_t len)
{
	struct rtr_value v;
	snprintf(out, len, "%s", RA_UNKNOWN_KEY);
	if (!(src->default_key && ctx_get(ci, ev, CTX_VTID, &v) == 0) &&
	    ra_event_field(ev, src->key_field, &v) < 0)
		return;
	switch (v.type) {
	case RTR_INT:
		snprintf(out, len, "%" PRId64, v.i);
		break;
	case RTR_UINT:
		snprintf(out, len, "%" PRIu64, v.u);
		break;
	case RTR_ENUM:
		if (v.label)
			snprintf(out, len, "%s", v.label);
		else if (v.is_signed)
			snprintf(out, len, "%" PRId64, v.i);
		else
			snprintf(out, len, "%" PRIu64, v.u);
		break;
	case RTR_STRING:
		snprintf(out, len, "%.*s", (int)(v.s.len < len ? v.s.len : len), v.s.p);
		break;
	case RTR_BOOL:
		snprintf(out, len, "%s", v.b ? "true" : "false");
		break;
	case RTR_FLOAT:
	case RTR_DOUBLE:
		snprintf(out, len, "%g", v.d);
		break;
	case RTR_BYTES:
	case RTR_STRUCT:
	case RTR_ARRAY:
		break;
	}
}

/* Key `key`'s thread name from the current event's procname context
 * (its string's bytes in ps[0..plen), ps NULL when it has none), else
 * (none named yet) from the state dump, for the thread of its vtid
 * context (*vtid when the caller knows it is an integer, else looked
 * up). */
static int name_thread(struct ra_source *src, const struct class_info *ci, uint32_t key,
		       const char *ps, size_t plen, const int64_t *vtid)
{
	struct rtr_value v;
	const char *s;
	size_t slen;
	struct ra_source_cache *c = src->cache;
	if (RT_ARRAY_GROW_ZEROED(c->seen, c->nr_seen, (size_t)key + 1, 64) < 0)
		return -ENOMEM;
	struct name_seen *seen = &c->seen[key];
	size_t n = 0;
	if (ps) {
		s = ps;
		slen = plen;
		/* The bytes the key's name was last set from: the same name. */
		n = slen < sizeof(seen->raw) ? slen : sizeof(seen->raw);
		if (seen->len == n + 1 && !memcmp(seen->raw, s, n))
			return 0;
	} else if ((key >= src->nr_key_thread || !src->key_thread[key]) &&
		   (vtid ? (v.i = *vtid, true)
			 : ctx_get(ci, &src->cur, CTX_VTID, &v) == 0 &&
				   (v.type == RTR_INT || v.type == RTR_UINT)) &&
		   (s = ra_symbols_thread_name(src->syms, ra_event_vpid(src->t, &src->cur),
					       v.i))) {
		slen = strlen(s);
	} else {
		return 0;
	}
	/* As printable text: the trace is untrusted, and the name goes to
	 * terminals and tables. */
	char name[64];
	ra_printable(s, slen, name, sizeof(name));
	int64_t t = ra_strtab_intern(&src->threads, name);
	if (t < 0)
		return (int)t;
	if (RT_ARRAY_GROW_ZEROED(src->key_thread, src->nr_key_thread, (size_t)key + 1, 64) < 0)
		return -ENOMEM;
	src->key_thread[key] = (uint32_t)t + 1;
	seen->len = (uint8_t)(n ? n + 1 : 0);
	memcpy(seen->raw, s, n);
	return 0;
}

/* name_thread with the current event's procname and vtid contexts, when
 * keys are threads (the default key; a --key field may be anything); *ps
 * and *plen: the procname string used (*ps NULL: none). */
static int set_thread_name(struct ra_source *src, const struct class_info *ci, uint32_t key,
			   const char **ps, size_t *plen)
{
	struct rtr_value v;
	*ps = NULL;
	*plen = 0;
	if (!src->default_key)
		return 0;
	if (ctx_get(ci, &src->cur, CTX_PROCNAME, &v) == 0 && v.type == RTR_STRING) {
		*ps = v.s.p;
		*plen = v.s.len;
	}
	return name_thread(src, ci, key, *ps, *plen, NULL);
}

void ra_printable(const char *s, size_t slen, char *out, size_t len)
{
	size_t max = slen < len ? slen : len - 1;
	const uint8_t *in = (const uint8_t *)s;
	size_t o = 0;
	for (size_t i = 0; i < max;) {
		size_t n = rt_utf8_len(in + i, max - i);
		if (!n || (n == 1 && (in[i] < 0x20 || in[i] == 0x7f))) {
			out[o++] = '?';
			i++;
			continue;
		}
		memcpy(out + o, in + i, n);
		o += n;
		i += n;
	}
	out[o] = '\0';
}

const char *ra_source_thread_name(const struct ra_source *src, uint32_t key)
{
	if (key >= src->nr_key_thread || !src->key_thread[key])
		return NULL;
	return src->threads.str[src->key_thread[key] - 1];
}

void ra_source_thread_label(const struct ra_source *src, uint32_t key, char *out,
			    size_t len)
{
	const char *name = ra_source_thread_name(src, key);
	if (name)
		snprintf(out, len, "%s %s (%s)", src->key_field, src->keys.str[key], name);
	else
		snprintf(out, len, "%s %s", src->key_field, src->keys.str[key]);
}

/* An integer value as int64_t: 0, or -EINVAL for another type. */
static int int_value(const struct rtr_value *v, int64_t *out)
{
	if (v->type == RTR_INT)
		*out = v->i;
	else if (v->type == RTR_UINT && v->u <= INT64_MAX)
		*out = (int64_t)v->u;
	else
		return -EINVAL;
	return 0;
}

/* The event's thread (ra_event.tid). */
static void event_thread(const struct ra_source *src, const struct class_info *ci,
			 const struct rtr_event *raw, int64_t *tid)
{
	struct rtr_value v;
	uint32_t cpu = raw->cpu;
	*tid = -1;
	if ((ctx_get(ci, raw, CTX_VTID, &v) == 0 || ctx_get(ci, raw, CTX_TID, &v) == 0) &&
	    int_value(&v, tid) == 0)
		;
	else if (cpu < src->nr_cpu_tid && src->cpu_tid[cpu])
		*tid = src->cpu_tid[cpu] - 1;
}

/* For a sched_switch, the thread its CPU runs from now on: 0, or -ENOMEM. */
static int switch_thread(struct ra_source *src, const struct class_info *ci,
			 const struct rtr_event *raw)
{
	struct rtr_value v;
	uint32_t cpu = raw->cpu;
	int64_t next;
	if (ci->sched_switch && cpu != UINT32_MAX &&
	    rtr_field_by_name(raw, "next_tid", &v) == 0 && int_value(&v, &next) == 0 &&
	    next >= 0 && cpu < 65536) {
		if (RT_ARRAY_GROW_ZEROED(src->cpu_tid, src->nr_cpu_tid, (size_t)cpu + 1, 8) < 0)
			return -ENOMEM;
		src->cpu_tid[cpu] = next + 1;
	}
	return 0;
}

/* The event's key (its index in src->keys; see ra_source_open) and
 * thread (ra_event.tid): the index, or -ENOMEM. */
static int64_t event_key(struct ra_source *src, const struct class_info *ci, int64_t *tid,
			 bool *by_vtid)
{
	const struct rtr_event *raw = &src->cur;
	struct key_slot *slot = NULL;
	*by_vtid = false;
	uint32_t trace = src->hosts ? raw->trace : 0;
	struct rtr_value v;
	/* Threads named by an integer vtid, the usual case: their key is its
	 * decimal text (after the host's), found again in the cache. */
	if (src->default_key && ctx_get(ci, raw, CTX_VTID, &v) == 0 &&
	    (v.type == RTR_INT || v.type == RTR_UINT) && int_value(&v, tid) == 0) {
		*by_vtid = true;
		uint64_t h = ((uint64_t)*tid ^ ((uint64_t)trace << 32)) * 0x9e3779b97f4a7c15ull;
		slot = &src->cache->keys[h >> 56];
		if (slot->key && slot->tid == *tid && slot->trace == trace)
			return slot->key - 1;
	}
	char key[128];
	key_text(src, ci, raw, key, sizeof(key));
	event_thread(src, ci, raw, tid);
	if (src->default_key && !strcmp(key, RA_UNKNOWN_KEY) && *tid >= 0)
		snprintf(key, sizeof(key), "%" PRId64, *tid);
	if (src->hosts) {
		char k[sizeof(key)];
		snprintf(k, sizeof(k), "%s", key);
		snprintf(key, sizeof(key), "%.63s/%.63s", trace_host(src->t, raw->trace), k);
	}
	int64_t k = ra_strtab_intern(&src->keys, key);
	if (k >= 0 && slot)
		*slot = (struct key_slot){ .tid = *tid, .trace = trace, .key = (uint32_t)k + 1 };
	return k;
}

/* Whether p[0..2) with len[0..2) are the bytes ci kept. */
static bool same_bytes(const struct class_info *ci, const uint8_t *const p[2], const size_t len[2])
{
	return ci->have_last && ci->len[0] == len[0] && ci->len[1] == len[1] &&
	       (!len[0] || !memcmp(ci->bytes, p[0], len[0])) &&
	       (!len[1] || !memcmp(ci->bytes + len[0], p[1], len[1]));
}

/* Keep the current event's context bytes p, len and what they gave in
 * ci (procname: ps[0..plen) inside them, or NULL). */
static void keep_bytes(struct class_info *ci, const uint8_t *const p[2], const size_t len[2],
		       uint32_t key, int64_t tid, const char *ps, size_t plen)
{
	ci->proc = -1;
	if (ps) {
		int j = ci->scope[CTX_PROCNAME] == RTR_SCOPE_STREAM_EVENT_CONTEXT ? 0 : 1;
		const uint8_t *u = (const uint8_t *)ps;
		if (!len[j] || u < p[j] || (size_t)(u - p[j]) > len[j] || plen > len[j] - (size_t)(u - p[j]))
			return;
		ci->proc = (int8_t)j;
		ci->proc_off = (uint8_t)(u - p[j]);
		ci->proc_len = (uint8_t)plen;
	}
	ci->len[0] = (uint8_t)len[0];
	ci->len[1] = (uint8_t)len[1];
	if (len[0])
		memcpy(ci->bytes, p[0], len[0]);
	if (len[1])
		memcpy(ci->bytes + len[0], p[1], len[1]);
	ci->key = key;
	ci->tid = tid;
	ci->have_last = true;
}

/* The current event's key (*key) and thread (*tid), and its key's
 * thread name: from the previous event of its class when their contexts
 * have the same bytes. 0 or -ENOMEM. */
static int event_context(struct ra_source *src, struct class_info *ci, int64_t *tid,
			 uint32_t *key)
{
	const struct rtr_event *raw = &src->cur;
	const uint8_t *p[2];
	size_t len[2];
	p[1] = NULL;
	len[1] = 0;
	bool bytes = src->default_key && ci->known && ci->scope[CTX_VTID] >= 0 &&
		     rtr_scope_bytes(raw, RTR_SCOPE_STREAM_EVENT_CONTEXT, &p[0], &len[0]) == 0 &&
		     (ci->no_context ||
		      rtr_scope_bytes(raw, RTR_SCOPE_EVENT_CONTEXT, &p[1], &len[1]) == 0) &&
		     len[0] + len[1] <= sizeof(ci->bytes);
	if (bytes && same_bytes(ci, p, len)) {
		*key = ci->key;
		*tid = ci->tid;
		const char *ps = ci->proc >= 0 ? (const char *)p[ci->proc] + ci->proc_off : NULL;
		if (switch_thread(src, ci, raw) < 0 ||
		    name_thread(src, ci, *key, ps, ci->proc_len, tid) < 0)
			return -ENOMEM;
		return 0;
	}
	bool by_vtid;
	const char *ps;
	size_t plen;
	int64_t k = event_key(src, ci, tid, &by_vtid);
	if (k < 0 || switch_thread(src, ci, raw) < 0 ||
	    set_thread_name(src, ci, (uint32_t)k, &ps, &plen) < 0)
		return -ENOMEM;
	*key = (uint32_t)k;
	ci->have_last = false;
	if (bytes && by_vtid)
		keep_bytes(ci, p, len, *key, *tid, ps, plen);
	return 0;
}

int ra_source_next(struct ra_source *src, struct ra_event *ev, char *err,
		   size_t errlen)
{
	int ret = rtr_next(src->t, &src->cur);
	if (ret <= 0) {
		if (ret < 0)
			snprintf(err, errlen, "%s", rtr_error(src->t));
		return ret;
	}
	struct class_info *ci = class_of(src);
	if (!ci || event_context(src, ci, &ev->tid, &ev->key) < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ev->ns = src->cur.ns;
	ev->cpu = src->cur.cpu;
	ev->trace = src->cur.trace;
	ev->name = ci->name;
	ev->raw = &src->cur;
	if (ev->ns < src->first_ns)
		src->first_ns = ev->ns;
	if (ev->ns > src->last_ns)
		src->last_ns = ev->ns;
	src->events++;
	return 1;
}

void ra_source_lost(const struct ra_source *src, uint64_t *events,
		    uint64_t *packets)
{
	*events = 0;
	*packets = 0;
	const struct rtr_stream_stats *st;
	size_t n = src->t ? rtr_streams(src->t, &st) : 0;
	for (size_t j = 0; j < n; j++) {
		*events += st[j].events_discarded;
		*packets += st[j].packets_lost;
	}
}

const char *ra_source_trace_path(const struct ra_source *src, uint32_t trace)
{
	const char *p = rtr_trace_path(src->t, trace);
	return p ? p : "?";
}

void ra_source_close(struct ra_source *src)
{
	ra_strtab_free(&src->keys);
	ra_strtab_free(&src->names);
	ra_strtab_free(&src->threads);
	free(src->key_thread);
	free(src->cpu_tid);
	if (src->cache) {
		free(src->cache->cls);
		free(src->cache->seen);
		free(src->cache);
	}
	ra_symbols_free(src->syms);
	if (src->t)
		rtr_close(src->t);
	memset(src, 0, sizeof(*src));
}

#define JSON_MAX_DEPTH 32

static void json_value(FILE *f, const struct rtr_value *v, unsigned depth)
{
	switch (v->type) {
	case RTR_INT:
		fprintf(f, "%" PRId64, v->i);
		break;
	case RTR_UINT:
		fprintf(f, "%" PRIu64, v->u);
		break;
	case RTR_ENUM:
		if (v->label)
			ra_json_string(f, v->label, strlen(v->label));
		else if (v->is_signed)
			fprintf(f, "%" PRId64, v->i);
		else
			fprintf(f, "%" PRIu64, v->u);
		break;
	case RTR_FLOAT:
	case RTR_DOUBLE:
		if (isfinite(v->d))
			fprintf(f, "%.17g", v->d);
		else
			fputs("null", f);	/* JSON has no NaN or infinity */
		break;
	case RTR_BOOL:
		fputs(v->b ? "true" : "false", f);
		break;
	case RTR_STRING:
		ra_json_string(f, v->s.p, v->s.len);
		break;
	case RTR_BYTES:
		fputc('[', f);
		for (size_t b = 0; b < v->bytes.len; b++)
			fprintf(f, b ? ",%u" : "%u", v->bytes.p[b]);
		fputc(']', f);
		break;
	case RTR_STRUCT:
	case RTR_ARRAY: {
		if (depth >= JSON_MAX_DEPTH) {
			fputs("null", f);
			break;
		}
		bool obj = v->type == RTR_STRUCT;
		uint32_t n = rtr_value_count(v);
		fputc(obj ? '{' : '[', f);
		for (uint32_t i = 0, out = 0; i < n; i++) {
			struct rtr_value child;
			const char *name = NULL;
			if (rtr_value_child(v, i, &child, &name) < 0)
				continue;
			if (out++)
				fputc(',', f);
			if (obj) {
				name = name ? name : "";
				ra_json_string(f, name, strlen(name));
				fputc(':', f);
			}
			json_value(f, &child, depth + 1);
		}
		fputc(obj ? '}' : ']', f);
		break;
	}
	}
}

size_t ra_write_payload_json(FILE *f, const struct rtr_event *raw)
{
	size_t written = 0;
	uint32_t n = rtr_scope_count(raw, RTR_SCOPE_PAYLOAD);
	for (uint32_t i = 0; i < n; i++) {
		struct rtr_value v;
		const char *name = NULL;
		if (rtr_scope_field(raw, RTR_SCOPE_PAYLOAD, i, &v, &name) < 0)
			continue;
		if (written++)
			fputc(',', f);
		name = name ? name : "";
		ra_json_string(f, name, strlen(name));
		fputc(':', f);
		json_value(f, &v, 0);
	}
	return written;
}
