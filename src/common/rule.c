/*
 * rule.c - the event rule matcher (see rule.h).
 */
#include "rule.h"

#include <fnmatch.h>
#include <string.h>

bool rt_level_matches(enum rt_level_match how, int32_t level, int32_t event_level)
{
	switch (how) {
	case RT_LEVEL_RANGE:
		return event_level <= level;
	case RT_LEVEL_ONLY:
		return event_level == level;
	case RT_LEVEL_ANY:
	default:
		return true;
	}
}

bool rt_glob_any(const char *const *globs, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (fnmatch(globs[i], name, 0) == 0)
			return true;
	return false;
}

bool rt_is_statedump_event(const char *name)
{
	return !strncmp(name, "lttng_ust_statedump:", 20) || !strncmp(name, "lttng_ust_dl:", 13);
}

bool rt_rule_matches(const struct rt_rule *r, const char *name, int32_t event_level)
{
	if (rt_is_statedump_event(name) && strncmp(r->pattern, "lttng_ust_", 10))
		return false;
	return fnmatch(r->pattern, name, 0) == 0 &&
	       !rt_glob_any(r->excludes, r->nr_excludes, name) &&
	       rt_level_matches(r->level_match, r->level, event_level);
}
