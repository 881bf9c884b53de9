/*
 * consumer_classes.c - a daemon trace's event classes as the consumer
 * sees them (struct cons_classes, consumer.h): looked up by stream class
 * (channel id) and id through a per-channel table, copied for the
 * metadata, and the trace's generation.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

#include "consumer_daemon.h"

/* Rebuild the set's id table if the trace's classes changed (t->lock). */
static void refresh_classes(struct cons_dtrace *ct, struct cons_bufset *cb)
{
	const struct dp_trace *t = ct->t;
	uint32_t chan = cb->desc.stream_id;
	if (cb->class_valid && cb->class_gen == t->generation)
		return;
	uint32_t len = 0;
	for (uint32_t i = 0; i < t->nr_events; i++)
		if (t->events[i].channel_id == chan && t->events[i].id < CONS_CLASS_TABLE_MAX &&
		    t->events[i].id >= len)
			len = t->events[i].id + 1;
	const struct dp_event_class **tab = calloc(len ? len : 1, sizeof(*tab));
	if (!tab)
		return; /* keep the old table: unknown ids are searched */
	for (uint32_t i = 0; i < t->nr_events; i++)
		if (t->events[i].channel_id == chan && t->events[i].id < len)
			tab[t->events[i].id] = &t->events[i];
	free(cb->class_by_id);
	cb->class_by_id = tab;
	cb->class_by_id_len = len;
	cb->class_gen = t->generation;
	cb->class_valid = true;
}

static bool class_fields(void *arg, uint32_t stream_id, uint32_t id,
			 const struct rt_field_desc **fields, uint32_t *nr)
{
	struct cons_dtrace *ct = arg;
	const struct dp_trace *t = ct->t;
	if (stream_id >= t->nr_bufsets)
		return false;
	struct cons_bufset *cb = &ct->sets[stream_id];
	refresh_classes(ct, cb);
	const struct dp_event_class *ec = NULL;
	if (id < cb->class_by_id_len && cb->class_by_id[id])
		ec = cb->class_by_id[id];
	for (uint32_t i = 0; !ec && i < t->nr_events; i++)
		if (t->events[i].channel_id == stream_id && t->events[i].id == id)
			ec = &t->events[i];
	if (!ec)
		return false;
	*fields = ec->fields;
	*nr = ec->nr_fields;
	return true;
}

static void classes_lock(void *arg)
{
	struct cons_dtrace *ct = arg;
	pthread_mutex_lock(&ct->t->lock);
}

static void classes_unlock(void *arg)
{
	struct cons_dtrace *ct = arg;
	pthread_mutex_unlock(&ct->t->lock);
}

/* The trace's classes from `from` on, copied under its lock (their names
 * and fields stay valid as long as the trace: the registry only appends),
 * so that the text is built without holding it. */
static int classes_copy(void *arg, uint32_t from, struct ctf_event_class **events,
			uint32_t *nr, uint64_t *generation)
{
	struct cons_dtrace *ct = arg;
	struct dp_trace *t = ct->t;
	pthread_mutex_lock(&t->lock);
	*generation = t->generation;
	uint32_t n = t->nr_events > from ? t->nr_events - from : 0;
	struct ctf_event_class *ev = calloc(n ? n : 1, sizeof(*ev));
	for (uint32_t i = 0; ev && i < n; i++) {
		const struct dp_event_class *e = &t->events[from + i];
		ev[i] = (struct ctf_event_class){
			.id = e->id, .stream_id = e->channel_id,
			.provider = e->provider, .name = e->name,
			.loglevel = e->loglevel, .nr_fields = e->nr_fields,
			.fields = e->fields,
		};
	}
	pthread_mutex_unlock(&t->lock);
	*events = ev;
	*nr = ev ? n : 0;
	return ev ? 0 : -ENOMEM;
}

static uint64_t classes_generation(void *arg)
{
	struct cons_dtrace *ct = arg;
	pthread_mutex_lock(&ct->t->lock);
	uint64_t g = ct->t->generation;
	pthread_mutex_unlock(&ct->t->lock);
	return g;
}

void consumer_classes(struct cons_dtrace *ct, struct cons_classes *cl)
{
	*cl = (struct cons_classes){ .arg = ct, .lock = classes_lock, .unlock = classes_unlock,
				     .fields = class_fields, .copy = classes_copy,
				     .generation = classes_generation };
}

void consumer_classes_free(struct cons_bufset *cb)
{
	free(cb->class_by_id);
	cb->class_by_id = NULL;
}
