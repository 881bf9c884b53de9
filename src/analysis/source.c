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

#include "analysis.h"

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
	if (tab->nr == tab->cap) {
		uint32_t cap = tab->cap ? tab->cap * 2 : 32;
		char **str = realloc(tab->str, cap * sizeof(*str));
		if (!str)
			return -ENOMEM;
		tab->str = str;
		tab->cap = cap;
	}
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

int ra_source_open(struct ra_source *src, const char *const *dirs, size_t nr,
		   const char *key_field, char *err, size_t errlen)
{
	memset(src, 0, sizeof(*src));
	src->dirs = dirs;
	src->key_field = key_field ? key_field : RA_DEFAULT_KEY;
	src->first_ns = INT64_MAX;
	src->last_ns = INT64_MIN;
	if (!nr) {
		snprintf(err, errlen, "no trace directory given");
		return -EINVAL;
	}
	src->traces = calloc(nr, sizeof(*src->traces));
	src->head = calloc(nr, sizeof(*src->head));
	src->state = calloc(nr, sizeof(*src->state));
	if (!src->traces || !src->head || !src->state) {
		snprintf(err, errlen, "out of memory");
		ra_source_close(src);
		return -ENOMEM;
	}
	src->nr = nr;
	for (size_t i = 0; i < nr; i++) {
		char msg[512];
		int ret = rtr_open(dirs[i], &src->traces[i], msg, sizeof(msg));
		if (ret < 0) {
			snprintf(err, errlen, "cannot read the trace in %s: %s", dirs[i], msg);
			ra_source_close(src);
			return ret;
		}
		ret = rtr_next(src->traces[i], &src->head[i]);
		if (ret < 0) {
			snprintf(err, errlen, "%s", rtr_error(src->traces[i]));
			ra_source_close(src);
			return ret;
		}
		src->state[i] = ret;
	}
	if (ra_strtab_intern(&src->keys, RA_UNKNOWN_KEY) < 0) {
		snprintf(err, errlen, "out of memory");
		ra_source_close(src);
		return -ENOMEM;
	}
	return 0;
}

/* The key of an event as text (see ra_source_open). */
static void key_text(const struct ra_source *src, const struct rtr_event *ev,
		     char *out, size_t len)
{
	struct rtr_value v;
	snprintf(out, len, "%s", RA_UNKNOWN_KEY);
	if (rtr_field_by_name(ev, src->key_field, &v) < 0)
		return;
	switch (v.type) {
	case RTR_INT:
		snprintf(out, len, "%" PRId64, v.i);
		break;
	case RTR_UINT:
		snprintf(out, len, "%" PRIu64, v.u);
		break;
	case RTR_STRING:
		snprintf(out, len, "%s", v.s.p);
		break;
	case RTR_BOOL:
		snprintf(out, len, "%s", v.b ? "true" : "false");
		break;
	case RTR_FLOAT:
	case RTR_DOUBLE:
		snprintf(out, len, "%g", v.d);
		break;
	case RTR_BYTES:
		break;
	}
}

int ra_source_next(struct ra_source *src, struct ra_event *ev, char *err,
		   size_t errlen)
{
	size_t best = src->nr;
	for (size_t i = 0; i < src->nr; i++)
		if (src->state[i] > 0 &&
		    (best == src->nr || src->head[i].ns < src->head[best].ns))
			best = i;
	if (best == src->nr)
		return 0;
	src->cur = src->head[best];
	int ret = rtr_next(src->traces[best], &src->head[best]);
	if (ret < 0) {
		snprintf(err, errlen, "%s: %s", src->dirs[best],
			 rtr_error(src->traces[best]));
		return ret;
	}
	src->state[best] = ret;

	char key[128];
	key_text(src, &src->cur, key, sizeof(key));
	int64_t name = ra_strtab_intern(&src->names, src->cur.cls->name);
	int64_t k = ra_strtab_intern(&src->keys, key);
	if (name < 0 || k < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ev->ns = src->cur.ns;
	ev->cpu = src->cur.cpu;
	ev->trace = (uint32_t)best;
	ev->name = (uint32_t)name;
	ev->key = (uint32_t)k;
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
	for (size_t i = 0; i < src->nr; i++) {
		const struct rtr_stream_stats *st;
		size_t n = rtr_streams(src->traces[i], &st);
		for (size_t j = 0; j < n; j++) {
			*events += st[j].events_discarded;
			*packets += st[j].packets_lost;
		}
	}
}

void ra_source_close(struct ra_source *src)
{
	ra_strtab_free(&src->keys);
	ra_strtab_free(&src->names);
	for (size_t i = 0; src->traces && i < src->nr; i++)
		if (src->traces[i])
			rtr_close(src->traces[i]);
	free(src->state);
	free(src->head);
	free(src->traces);
	memset(src, 0, sizeof(*src));
}

static void json_double(FILE *f, double d)
{
	if (isfinite(d))
		fprintf(f, "%.17g", d);
	else
		fputs("null", f);	/* JSON has no NaN or infinity */
}

size_t ra_write_payload_json(FILE *f, const struct rtr_event *raw)
{
	size_t written = 0;
	for (uint32_t i = 0; i < raw->cls->nr_fields; i++) {
		struct rtr_value v;
		if (rtr_field(raw, i, &v) < 0)
			continue;
		if (written++)
			fputc(',', f);
		const char *name = raw->cls->fields[i].name;
		ra_json_string(f, name, strlen(name));
		fputc(':', f);
		switch (v.type) {
		case RTR_INT:
			fprintf(f, "%" PRId64, v.i);
			break;
		case RTR_UINT:
			fprintf(f, "%" PRIu64, v.u);
			break;
		case RTR_FLOAT:
		case RTR_DOUBLE:
			json_double(f, v.d);
			break;
		case RTR_BOOL:
			fputs(v.b ? "true" : "false", f);
			break;
		case RTR_STRING:
			ra_json_string(f, v.s.p, v.s.len);
			break;
		case RTR_BYTES:
			fputc('[', f);
			for (size_t b = 0; b < v.bytes.len; b++)
				fprintf(f, b ? ",%u" : "%u", v.bytes.p[b]);
			fputc(']', f);
			break;
		}
	}
	return written;
}
