/*
 * explain_find.c - the first pass of `ringtrace explain`: the interval to
 * explain, as the slowest pair of two events or as the interval that ends
 * at a matching event.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "../common/array.h"

int ra_explain_slowest(const char *const *dirs, size_t nr, const char *pair,
		       const char *key_field, struct ra_explain_target *t, char *err,
		       size_t errlen)
{
	struct ra_source src;
	struct ra_pairer p;
	struct ra_event ev;
	struct ra_pair_done done;
	bool found = false;
	int64_t best = -1;
	ra_pairer_init(&p, false);
	int ret = ra_pairer_add(&p, pair, err, errlen);
	if (ret < 0) {
		ra_pairer_free(&p);
		return ret;
	}
	ret = ra_source_open(&src, dirs, nr, key_field, err, errlen);
	if (ret < 0)
		goto free_pairer;
	uint64_t seq = 0;
	while ((ret = ra_source_next(&src, &ev, err, errlen)) > 0) {
		int r = ra_pairer_feed(&p, &src.names, &ev, seq++, &done);
		if (r < 0) {
			ret = r;
			snprintf(err, errlen, "out of memory");
			goto close;
		}
		if (r != RA_PAIR_DONE)
			continue;
		int64_t d = ra_ns_diff(ev.ns, done.begin_ns);
		if (d <= best)
			continue;
		best = d;
		found = true;
		t->begin = done.begin_ns;
		t->end = ev.ns;
		t->tid = ev.tid;
	}
	if (ret < 0)
		goto close;
	if (!found) {
		snprintf(err, errlen, "no pair %s in the traces", pair);
		ret = -ENOENT;
		goto close;
	}
	snprintf(t->how, sizeof(t->how), "the slowest %s pair%s%s", pair,
		 key_field ? " by " : "", key_field ? key_field : "");
	ret = 0;
close:
	ra_source_close(&src);
free_pairer:
	ra_pairer_free(&p);
	return ret;
}

/* Per thread: the last matching event's time (the fallback begin), its
 * last system call entry (of a syscall_exit_X's X). */
struct last_seen {
	int64_t tid, ns, entry;
};

static struct last_seen *last_of(struct last_seen **last, size_t *nr, size_t *cap, int64_t tid)
{
	for (size_t i = 0; i < *nr; i++)
		if ((*last)[i].tid == tid)
			return &(*last)[i];
	if (RT_ARRAY_GROW(*last, *cap, *nr + 1, 16) < 0)
		return NULL;
	(*last)[*nr] = (struct last_seen){ .tid = tid, .ns = INT64_MIN, .entry = INT64_MIN };
	return &(*last)[(*nr)++];
}

int ra_explain_event(const char *const *dirs, size_t nr, const char *name,
		     ra_explain_match_fn match, void *arg, struct ra_explain_target *t,
		     char *err, size_t errlen)
{
	struct ra_source src;
	struct ra_pairer p;
	struct ra_event ev;
	struct ra_pair_done done;
	struct last_seen *last = NULL;
	size_t nr_last = 0, cap_last = 0;
	uint64_t matches = 0;
	int64_t best = -1;
	char entry[512] = "";
	int ret;
	ra_pairer_init(&p, true);
	/* a system call's exit ends the interval from its entry */
	const char *exit = strstr(name, "syscall_exit_");
	if (exit && (exit == name || !strncmp(name, "compat_", 7)))
		snprintf(entry, sizeof(entry), "%.*ssyscall_entry_%s", (int)(exit - name), name,
			 exit + 13);
	ret = ra_source_open(&src, dirs, nr, NULL, err, errlen);
	if (ret < 0)
		goto free_pairer;
	uint64_t seq = 0;
	while ((ret = ra_source_next(&src, &ev, err, errlen)) > 0) {
		int r = ra_pairer_feed(&p, &src.names, &ev, seq++, &done);
		if (r < 0) {
			ret = -ENOMEM;
			snprintf(err, errlen, "out of memory");
			goto close;
		}
		const char *evname = src.names.str[ev.name];
		bool is_entry = entry[0] && !strcmp(evname, entry);
		if (!is_entry && (strcmp(evname, name) || !match(arg, &src, &ev)))
			continue;
		struct last_seen *l = last_of(&last, &nr_last, &cap_last, ev.tid);
		if (!l) {
			ret = -ENOMEM;
			snprintf(err, errlen, "out of memory");
			goto close;
		}
		if (is_entry) {
			l->entry = ev.ns;
			continue;
		}
		matches++;
		int64_t begin = r == RA_PAIR_DONE ? done.begin_ns : entry[0] ? l->entry : l->ns;
		l->ns = ev.ns;
		l->entry = INT64_MIN;
		if (begin == INT64_MIN)
			continue;
		int64_t d = ra_ns_diff(ev.ns, begin);
		if (d <= best)
			continue;
		best = d;
		t->begin = begin;
		t->end = ev.ns;
		t->tid = l->tid;
	}
	if (ret < 0)
		goto close;
	if (best < 0) {
		snprintf(err, errlen,
			 matches ? "%" PRIu64 " %s events match, but none ends an interval "
				   "(no begin before it on its thread)"
				 : "%" PRIu64 " %s events match",
			 matches, name);
		ret = -ENOENT;
		goto close;
	}
	snprintf(t->how, sizeof(t->how), "the longest interval ending at a matching %s "
		 "(%" PRIu64 " matched)", name, matches);
	ret = 0;
close:
	free(last);
	ra_source_close(&src);
free_pairer:
	ra_pairer_free(&p);
	return ret;
}
