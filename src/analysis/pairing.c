/*
 * pairing.c - begin/end events paired per key. Every key has a stack of
 * open begins; an end closes the nearest begin of its pair type on its
 * key's stack, and begins of other types above that one are closed as
 * unmatched (they can no longer nest properly).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../common/array.h"
#include "analysis.h"

#define ROLE_UNKNOWN INT64_MIN

/* P:X_begin/P:X_end, and the bare P:begin/P:end (type "P:begin/end"). */
static const char *const auto_suffix[][2] = {
	{ "entry", "exit" },
	{ "begin", "end" },
	{ "start", "stop" },
};

void ra_pairer_init(struct ra_pairer *p, bool auto_pairs)
{
	memset(p, 0, sizeof(*p));
	p->auto_pairs = auto_pairs;
}

/* Index of the type with these names, added if new; -ENOMEM. */
static int64_t type_for(struct ra_pairer *p, const char *label,
			const char *begin, size_t begin_len, const char *end,
			size_t end_len)
{
	for (uint32_t i = 0; i < p->nr_types; i++)
		if (strlen(p->types[i].begin) == begin_len &&
		    !strncmp(p->types[i].begin, begin, begin_len) &&
		    strlen(p->types[i].end) == end_len &&
		    !strncmp(p->types[i].end, end, end_len))
			return i;
	if (RT_ARRAY_GROW(p->types, p->cap_types, p->nr_types + 1, 8) < 0)
		return -ENOMEM;
	struct ra_pair_type *t = &p->types[p->nr_types];
	memset(t, 0, sizeof(*t));
	t->label = strdup(label);
	t->begin = strndup(begin, begin_len);
	t->end = strndup(end, end_len);
	if (!t->label || !t->begin || !t->end) {
		free(t->label);
		free(t->begin);
		free(t->end);
		return -ENOMEM;
	}
	return p->nr_types++;
}

int ra_pairer_add(struct ra_pairer *p, const char *spec, char *err, size_t errlen)
{
	const char *comma = strchr(spec, ',');
	const char *end = comma ? comma + 1 : NULL;
	size_t begin_len = comma ? (size_t)(comma - spec) : 0;
	if (!comma || strchr(end, ',') || !begin_len || !*end ||
	    !memchr(spec, ':', begin_len) || !strchr(end, ':')) {
		snprintf(err, errlen,
			 "bad pair '%s': expected BEGIN_EVENT,END_EVENT with full "
			 "event names (provider:event)", spec);
		return -EINVAL;
	}
	if (strlen(end) == begin_len && !strncmp(spec, end, begin_len)) {
		snprintf(err, errlen, "bad pair '%s': begin and end are the same event", spec);
		return -EINVAL;
	}
	int64_t t = type_for(p, spec, spec, begin_len, end, strlen(end));
	if (t < 0) {
		snprintf(err, errlen, "out of memory");
		return (int)t;
	}
	return 0;
}

/* Whether event name s ("P:E") ends in "_suffix" after a nonempty X
 * (*prefix: the length of "P:X") or is "P:suffix" (*prefix: the length
 * of "P:", *bare set). */
static bool ends_with(const char *s, size_t len, const char *suffix, size_t *prefix,
		      bool *bare)
{
	size_t n = strlen(suffix);
	if (len <= n + 1 || strcmp(s + len - n, suffix))
		return false;
	*prefix = len - n;
	*bare = s[*prefix - 1] == ':';
	if (*bare)
		return true;
	/* "P:X_end": the '_' goes too; "P:_end" and "P:Xend" do not count. */
	if (s[*prefix - 1] != '_' || s[*prefix - 2] == ':')
		return false;
	(*prefix)--;
	return true;
}

/* The role of event name `name` (see struct ra_pairer). */
static int64_t classify(struct ra_pairer *p, const char *name)
{
	for (uint32_t i = 0; i < p->nr_types; i++) {
		if (!strcmp(p->types[i].begin, name))
			return (int64_t)i * 2;
		if (!strcmp(p->types[i].end, name))
			return (int64_t)i * 2 + 1;
	}
	if (!p->auto_pairs || !strchr(name, ':'))
		return -1;
	size_t len = strlen(name), prefix;
	bool bare;
	for (size_t s = 0; s < sizeof(auto_suffix) / sizeof(auto_suffix[0]); s++) {
		for (int is_end = 0; is_end < 2; is_end++) {
			if (!ends_with(name, len, auto_suffix[s][is_end], &prefix, &bare))
				continue;
			char other[512], label[512];
			snprintf(other, sizeof(other), "%.*s%s%s", (int)prefix, name,
				 bare ? "" : "_", auto_suffix[s][!is_end]);
			if (bare)
				snprintf(label, sizeof(label), "%.*s%s/%s", (int)prefix, name,
					 auto_suffix[s][0], auto_suffix[s][1]);
			else
				snprintf(label, sizeof(label), "%.*s", (int)prefix, name);
			const char *b = is_end ? other : name;
			const char *e = is_end ? name : other;
			int64_t t = type_for(p, label, b, strlen(b), e, strlen(e));
			return t < 0 ? t : t * 2 + is_end;
		}
	}
	return -1;
}

int ra_pairer_feed(struct ra_pairer *p, const struct ra_strtab *names,
		   const struct ra_event *ev, uint64_t seq,
		   struct ra_pair_done *done)
{
	if (ev->name >= p->nr_roles) {
		uint32_t old = p->nr_roles;
		size_t n = names->nr > ev->name ? names->nr : (size_t)ev->name + 1;
		if (RT_ARRAY_GROW(p->role, p->nr_roles, n, 16) < 0)
			return -ENOMEM;
		for (uint32_t i = old; i < p->nr_roles; i++)
			p->role[i] = ROLE_UNKNOWN;
	}
	if (p->role[ev->name] == ROLE_UNKNOWN) {
		int64_t r = classify(p, names->str[ev->name]);
		if (r == -ENOMEM)
			return -ENOMEM;
		p->role[ev->name] = r;
	}
	int64_t role = p->role[ev->name];
	if (role < 0)
		return RA_PAIR_NONE;
	uint32_t type = (uint32_t)(role / 2);

	if (RT_ARRAY_GROW_ZEROED(p->stacks, p->nr_stacks, (size_t)ev->key + 1, 16) < 0)
		return -ENOMEM;
	struct ra_key_stack *st = &p->stacks[ev->key];
	if (!(role & 1)) {
		if (RT_ARRAY_GROW(st->o, st->cap, st->nr + 1, 8) < 0)
			return -ENOMEM;
		st->o[st->nr++] = (struct ra_open){ .ns = ev->ns, .type = type,
						    .name = ev->name, .seq = seq };
		return RA_PAIR_BEGIN;
	}
	uint32_t i = st->nr;
	while (i > 0 && st->o[i - 1].type != type)
		i--;
	if (!i) {
		p->types[type].unmatched_end++;
		return RA_PAIR_UNMATCHED_END;
	}
	const struct ra_open *o = &st->o[i - 1];
	*done = (struct ra_pair_done){ .type = type, .begin_ns = o->ns,
				       .end_ns = ev->ns, .begin_name = o->name,
				       .begin_seq = o->seq, .depth = i - 1,
				       .dropped = st->nr - i };
	for (uint32_t j = i; j < st->nr; j++)
		p->types[st->o[j].type].unmatched_begin++;
	st->nr = i - 1;
	return RA_PAIR_DONE;
}

void ra_pairer_finish(struct ra_pairer *p)
{
	for (uint32_t k = 0; k < p->nr_stacks; k++) {
		for (uint32_t j = 0; j < p->stacks[k].nr; j++)
			p->types[p->stacks[k].o[j].type].unmatched_begin++;
		p->stacks[k].nr = 0;
	}
}

void ra_pairer_free(struct ra_pairer *p)
{
	for (uint32_t i = 0; i < p->nr_types; i++) {
		free(p->types[i].label);
		free(p->types[i].begin);
		free(p->types[i].end);
	}
	for (uint32_t k = 0; k < p->nr_stacks; k++)
		free(p->stacks[k].o);
	free(p->stacks);
	free(p->role);
	free(p->types);
	memset(p, 0, sizeof(*p));
}
