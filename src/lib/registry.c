/*
 * registry.c - the events of every loaded module.
 *
 * Each executable or shared object hands its rt_events section to
 * rt__register when it is loaded. Call sites with the same provider,
 * name, log level and fields share one event class (one CTF event id).
 * Enabling is done here, off the fast path: a call site's `enabled` flag
 * is set with a relaxed store once its class is published in `priv`
 * (release), and the probe loads `priv` with acquire.
 *
 * Concurrency: all functions take rt_registry_lock; probes never do.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "../common/array.h"
#include "../proto/app_proto.h"
#include "daemon_client.h"
#include "rt_internal.h"

RT_HIDDEN pthread_mutex_t rt_registry_lock = PTHREAD_MUTEX_INITIALIZER;
RT_HIDDEN uint64_t rt_registry_generation;

static struct rt_event_class **classes;	/* by id */
static size_t nr_classes, cap_classes;
static struct rt_event_desc **sites;	/* registered call sites */
static size_t nr_sites, cap_sites;

/* The name of field i of d as the class keeps it: an rt_printf format
 * decoded into buf (desc_ok checked it decodes), else as it is. */
static const char *field_name(const struct rt_event_desc *d, uint32_t i, char *buf,
			      size_t len)
{
	if (d->fields[i].type != RT_TYPE_FORMAT)
		return d->fields[i].name;
	return rt_printf_format_decode(d->fields[i].name, buf, len) < 0 ? "" : buf;
}

static bool same_class(const struct rt_event_class *c,
		       const struct rt_event_desc *d)
{
	char fmt[RT_PRINTF_FORMAT_MAX + 1];
	if (c->loglevel != d->loglevel || c->nr_fields != d->nr_fields ||
	    strcmp(c->provider, d->provider) || strcmp(c->name, d->name))
		return false;
	for (uint32_t i = 0; i < c->nr_fields; i++)
		if (c->fields[i].type != d->fields[i].type ||
		    strcmp(c->fields[i].name, field_name(d, i, fmt, sizeof(fmt))))
			return false;
	return true;
}

static void free_class(struct rt_event_class *c)
{
	if (!c)
		return;
	for (uint32_t i = 0; i < c->nr_fields; i++)
		free(c->field_names[i]);
	free(c->field_names);
	free(c->fields);
	free(c->provider);
	free(c->name);
	free(c);
}

/* A new class, copied from the call site. Returns NULL on ENOMEM. */
static struct rt_event_class *new_class(const struct rt_event_desc *d)
{
	struct rt_event_class *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->provider = strdup(d->provider);
	c->name = strdup(d->name);
	c->fields = calloc(d->nr_fields + 1, sizeof(*c->fields));
	c->field_names = calloc(d->nr_fields + 1, sizeof(char *));
	if (!c->provider || !c->name || !c->fields || !c->field_names)
		goto err;
	c->nr_fields = d->nr_fields;
	for (uint32_t i = 0; i < d->nr_fields; i++) {
		char fmt[RT_PRINTF_FORMAT_MAX + 1];
		c->field_names[i] = strdup(field_name(d, i, fmt, sizeof(fmt)));
		if (!c->field_names[i])
			goto err;
		c->fields[i].type = d->fields[i].type;
		c->fields[i].name = c->field_names[i];
	}
	c->loglevel = d->loglevel;
	c->id = (uint32_t)nr_classes;
	c->hdr_compact = ctf_event_header_size(c->id, 0);
	return c;
err:
	free_class(c);
	return NULL;
}

/*
 * What differs in a call site built against an older header (the
 * versions are listed with RT_ABI_VERSION, ringtrace_types.h): every
 * accepted version has the members up to `priv` where this header has
 * them, with the same meaning. `fast` exists from version 3
 * (RT_ABI_FAST_FIRST) on, but only this version's call sites know the
 * layout of the site it points to: older ones find it NULL and call the
 * library, whose entry points (rt__record, rt__record_parts) they share.
 */
#if defined(__LP64__)
/* The members every accepted version shares stay where its call sites
 * have them (ringtrace_types.h's table), `fast` last. */
_Static_assert(offsetof(struct rt_event_desc, enabled) == 0 &&
		       offsetof(struct rt_event_desc, abi) == 4 &&
		       offsetof(struct rt_event_desc, provider) == 8 &&
		       offsetof(struct rt_event_desc, name) == 16 &&
		       offsetof(struct rt_event_desc, loglevel) == 24 &&
		       offsetof(struct rt_event_desc, nr_fields) == 28 &&
		       offsetof(struct rt_event_desc, fields) == 32 &&
		       offsetof(struct rt_event_desc, file) == 40 &&
		       offsetof(struct rt_event_desc, line) == 48 &&
		       offsetof(struct rt_event_desc, priv) == 56 &&
		       offsetof(struct rt_event_desc, fast) == 64 &&
		       sizeof(struct rt_event_desc) == 72,
	       "struct rt_event_desc: the layout call sites of every version have");
_Static_assert(sizeof(struct rt_field_desc) == 16 &&
		       offsetof(struct rt_field_desc, type) == 8,
	       "struct rt_field_desc: the layout call sites of every version have");
#endif

static bool desc_has_fast(const struct rt_event_desc *d)
{
	return d->abi >= RT_ABI_FAST_FIRST && d->abi <= RT_ABI_VERSION;
}

static bool desc_inline_ok(const struct rt_event_desc *d)
{
	return d->abi == RT_ABI_VERSION;
}

static bool desc_ok(const struct rt_event_desc *d)
{
	if (d->abi < RT_ABI_OLDEST || d->abi > RT_ABI_VERSION) {
		rt_warn("event %s:%s built for ABI %u, this library runs ABI %u to %u; ignored",
			d->provider, d->name, d->abi, RT_ABI_OLDEST, RT_ABI_VERSION);
		return false;
	}
	if (!d->provider || !rtp_app_identifier_ok(d->provider) ||
	    !d->name || !rtp_app_identifier_ok(d->name)) {
		rt_warn("event \"%s:%s\": provider and event must be identifiers; ignored",
			d->provider, d->name);
		return false;
	}
	for (uint32_t i = 0; i < d->nr_fields; i++) {
		/* rt_printf's format: the first field, a literal that decodes. */
		char fmt[RT_PRINTF_FORMAT_MAX + 1];
		bool format = d->fields[i].type == RT_TYPE_FORMAT;
		if (!d->fields[i].name ||
		    (format ? i || rt_printf_format_decode(d->fields[i].name, fmt, sizeof(fmt)) < 0
			    : !rtp_app_identifier_ok(d->fields[i].name)) ||
		    d->fields[i].type < RT_TYPE_S8 || d->fields[i].type > RT_TYPE_FORMAT) {
			rt_warn("event %s:%s: bad field %u; ignored", d->provider,
				d->name, i);
			return false;
		}
	}
	return true;
}

/* Where call sites of class c may record by themselves (ringtrace/internal/fast.h),
 * or NULL: in embedded mode the class's own site, in daemon mode the
 * only target's, when the fast path applies there. */
static const struct rt_fast_site *fast_site(struct rt_event_class *c)
{
	/* Relaxed: published under the lock we hold. Triggers are
	 * evaluated by the library's path. */
	if (__atomic_load_n(&c->trigs, __ATOMIC_RELAXED))
		return NULL;
	struct rt_channel *ch = __atomic_load_n(&rt_active_channel, __ATOMIC_ACQUIRE);
	if (ch) {
		if (!c->enabled || ch->nr_ctx)
			return NULL;	/* contexts: the library's path writes them */
		if (!c->site_state)
			c->site_state = rt_fast_site_init(&c->site, &ch->rb, c->id) ? 1 : 2;
		return c->site_state == 1 ? &c->site : NULL;
	}
	/* Relaxed: published under the lock we hold. */
	const struct rt_target_set *s = __atomic_load_n(&c->targets, __ATOMIC_RELAXED);
	return s && s->nr == 1 && s->t[0].fast_ok ? &s->t[0].site : NULL;
}

static void apply_site(struct rt_event_desc *d)
{
	struct rt_event_class *c = d->priv;
	bool on = c && ((c->enabled &&
			 __atomic_load_n(&rt_active_channel, __ATOMIC_ACQUIRE) != NULL) ||
			/* Relaxed: only whether a table exists; the probe
			 * loads it with acquire before use. */
			__atomic_load_n(&c->targets, __ATOMIC_RELAXED) != NULL ||
			/* Triggers: evaluated whether or not a session
			 * records the event. */
			__atomic_load_n(&c->trigs, __ATOMIC_RELAXED) != NULL);
	/* Release: the site's contents are complete before a call site can
	 * load it (acquire in rt__fast_record, ringtrace.h). Older call
	 * sites keep NULL (or have no such member). */
	if (desc_has_fast(d))
		__atomic_store_n(&d->fast, on && desc_inline_ok(d) ? fast_site(c) : NULL,
				 __ATOMIC_RELEASE);
	/* Relaxed: the call site's only load of it; the class it needs was
	 * published in priv with release before. */
	__atomic_store_n(&d->enabled, on ? 1 : 0, __ATOMIC_RELAXED);
}

/* Turn call site d off: no event, no fast site. Relaxed: a call site that
 * still sees the old values records into memory that stays valid. */
static void disable_site(struct rt_event_desc *d)
{
	__atomic_store_n(&d->enabled, 0, __ATOMIC_RELAXED);
	if (desc_has_fast(d))
		__atomic_store_n(&d->fast, NULL, __ATOMIC_RELAXED);
}

void rt__register(struct rt_event_desc *const *begin,
		  struct rt_event_desc *const *end)
{
	if (!begin || !end)
		return;
	pthread_mutex_lock(&rt_registry_lock);
	bool added = false;
	for (struct rt_event_desc *const *it = begin; it < end; it++) {
		struct rt_event_desc *d = *it;
		if (!d || d->priv || !desc_ok(d))
			continue;
		struct rt_event_class *c = NULL;
		for (size_t i = 0; i < nr_classes && !c; i++)
			if (same_class(classes[i], d))
				c = classes[i];
		if (!c) {
			if (RT_ARRAY_GROW(classes, cap_classes, nr_classes + 1, 64) < 0 ||
			    !(c = new_class(d))) {
				rt_warn("out of memory registering %s:%s", d->provider,
					d->name);
				continue;
			}
			c->enabled = rt_event_wanted(c);
			classes[nr_classes++] = c;
			added = true;
		}
		if (RT_ARRAY_GROW(sites, cap_sites, nr_sites + 1, 64) < 0)
			continue;
		sites[nr_sites++] = d;
		/* Release: the class is complete before a probe can see it. */
		__atomic_store_n(&d->priv, c, __ATOMIC_RELEASE);
		apply_site(d);
	}
	if (added)
		/* Release: pairs with the consumer's acquire load; the new
		 * classes are in the array before it rereads it. */
		__atomic_fetch_add(&rt_registry_generation, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&rt_registry_lock);
	if (added) {
		rt_consumer_new_events();
		rt_daemon_client_new_events();
	}
	/* An object loaded after the state dump: say where it is. */
	if (begin < end)
		rt_statedump_module(begin);
}

void rt__unregister(struct rt_event_desc *const *begin,
		    struct rt_event_desc *const *end)
{
	if (!begin || !end)
		return;
	pthread_mutex_lock(&rt_registry_lock);
	for (struct rt_event_desc *const *it = begin; it < end; it++) {
		struct rt_event_desc *d = *it;
		if (!d)
			continue;
		disable_site(d);
		for (size_t i = 0; i < nr_sites; i++) {
			if (sites[i] == d) {
				sites[i] = sites[--nr_sites];
				break;
			}
		}
	}
	pthread_mutex_unlock(&rt_registry_lock);
}

size_t rt_registry_classes(struct rt_event_class ***out)
{
	*out = classes;
	return nr_classes;
}

void rt_registry_apply_sites_locked(void)
{
	for (size_t i = 0; i < nr_sites; i++)
		apply_site(sites[i]);
}

void rt_registry_apply_rules(void)
{
	pthread_mutex_lock(&rt_registry_lock);
	for (size_t i = 0; i < nr_classes; i++)
		classes[i]->enabled = rt_event_wanted(classes[i]);
	rt_registry_apply_sites_locked();
	pthread_mutex_unlock(&rt_registry_lock);
}

void rt_registry_disable_all(void)
{
	/* No lock: also called by the fork child handlers (fork.c), which
	 * run with every lock of the library taken before fork and reset. */
	for (size_t i = 0; i < nr_sites; i++)
		disable_site(sites[i]);
}

void rt_registry_fork_child(void)
{
	/* Every site was disabled by the caller; the embedded fast sites
	 * describe the parent's channel: made again for the new one. */
	for (size_t i = 0; i < nr_classes; i++)
		classes[i]->site_state = 0;
}
