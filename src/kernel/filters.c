/*
 * filters.c - the kernel rules' filters (kernel.h, rtk_config's
 * event_filters and syscall_filters) as ftrace's filter text per event.
 *
 * Each rule's expression (LTTng's language, src/filter) is compiled once;
 * for each event, the filters of the rules that match it are translated
 * with the event's field names (LTTng's names mapped back to ftrace's by
 * formats.c) and joined with ||, so that an event two rules match is
 * recorded when either rule's filter passes, as LTTng does. A rule whose
 * filter names a field the event lacks does not record it (LTTng's rule:
 * the expression is false); a rule without a filter records every event
 * it matches.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../filter/filter.h"
#include "kernel_internal.h"

struct rtk_filters {
	size_t n;
	const char *const *globs;	/* the rules' patterns (borrowed) */
	const char *const *texts;	/* their expressions (borrowed) */
	struct rtf_program **progs;	/* NULL: the rule has no filter */
	bool *matched;			/* the rule matched an event */
	bool *passed;			/* its filter can pass on one of them */
};

int rtk_filters_new(const char *const *globs, const char *const *texts, size_t n,
		    struct rtk_filters **out, char *err, size_t errlen)
{
	struct rtk_filters *fl = calloc(1, sizeof(*fl));
	*out = NULL;
	if (!fl || !(fl->progs = calloc(n + 1, sizeof(*fl->progs))) ||
	    !(fl->matched = calloc(n + 1, sizeof(bool))) ||
	    !(fl->passed = calloc(n + 1, sizeof(bool)))) {
		rtk_filters_free(fl);
		rt_errf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	fl->n = n;
	fl->globs = globs;
	fl->texts = texts;
	for (size_t i = 0; texts && i < n; i++) {
		char why[256];
		if (!texts[i])
			continue;
		int ret = rtf_compile(texts[i], NULL, &fl->progs[i], why, sizeof(why));
		if (ret < 0) {
			rt_errf(err, errlen, "the filter of kernel rule '%s': %s", globs[i], why);
			rtk_filters_free(fl);
			return ret;
		}
	}
	*out = fl;
	return 0;
}

void rtk_filters_free(struct rtk_filters *fl)
{
	if (!fl)
		return;
	for (size_t i = 0; fl->progs && i < fl->n; i++)
		rtf_free(fl->progs[i]);
	free(fl->progs);
	free(fl->matched);
	free(fl->passed);
	free(fl);
}

struct field_map {
	const struct rtk_formats *f;
	size_t cls;
};

static int map_field(void *arg, const char *name, struct rtf_ftrace_field *out)
{
	struct field_map *m = arg;
	bool text;
	int ret = rtk_formats_ftrace_field(m->f, m->cls, name, &out->name, &text, &out->offset);
	if (ret < 0)
		return ret;
	out->kind = text ? RTF_FTRACE_STRING : RTF_FTRACE_INT;
	return 0;
}

int rtk_filters_event(struct rtk_filters *fl, const bool *now, const struct rtk_formats *f,
		      size_t cls, const char *event, char **text, char *err, size_t errlen)
{
	struct field_map m = { .f = f, .cls = cls };
	char *all = NULL;
	bool any = false, unfiltered = false;
	*text = NULL;
	for (size_t i = 0; i < fl->n; i++) {
		if (!now[i])
			continue;
		fl->matched[i] = true;
		if (!fl->progs[i]) {	/* a rule without a filter: every event */
			fl->passed[i] = true;
			unfiltered = true;
			continue;
		}
		char *one, why[256], *joined;
		int ret = rtf_to_ftrace(fl->progs[i], map_field, &m, &one, why, sizeof(why));
		if (ret < 0) {
			rt_errf(err, errlen, "the filter of kernel rule '%s' on %s: %s",
				fl->globs[i], event, why);
			free(all);
			return ret;
		}
		if (ret == 1)	/* a field the event lacks: this rule records none */
			continue;
		fl->passed[i] = true;
		ret = asprintf(&joined, "%s%s(%s)", any ? all : "", any ? " || " : "", one);
		free(one);
		if (ret < 0) {
			free(all);
			rt_errf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		free(all);
		all = joined;
		any = true;
	}
	if (unfiltered) {
		free(all);
		return 0;
	}
	if (!any)
		return 1;
	*text = all;
	return 0;
}

int rtk_filters_check(const struct rtk_filters *fl, char *err, size_t errlen)
{
	for (size_t i = 0; i < fl->n; i++) {
		if (fl->matched[i] && !fl->passed[i]) {
			rt_errf(err, errlen, "the filter '%s' of kernel rule '%s' names a field that "
				"none of the events the rule matches has", fl->texts[i], fl->globs[i]);
			return -EINVAL;
		}
	}
	return 0;
}
