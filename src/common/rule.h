/*
 * rule.h - which events a rule selects: a glob on the event's
 * "provider:event" name, globs it excludes, and a log-level condition.
 * The daemon's enable-event rules and embedded mode's RINGTRACE_EVENTS
 * and RINGTRACE_LOGLEVEL are decided here, the same way.
 *
 * Globs are fnmatch(3)'s without flags (* ? [...]; '/' is not special).
 * Log levels are enum rt_loglevel's: smaller is more severe (EMERG = 0
 * ... DEBUG = 14).
 *
 * Concurrency: pure functions on the caller's data; callable from any
 * thread (fnmatch is thread-safe), not from the fast path.
 */
#ifndef RINGTRACE_COMMON_RULE_H
#define RINGTRACE_COMMON_RULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The log-level condition (the numbers are saved and sent as they are). */
enum rt_level_match {
	RT_LEVEL_ANY = 0,	/* any level */
	RT_LEVEL_RANGE = 1,	/* --loglevel L: L or more severe */
	RT_LEVEL_ONLY = 2,	/* --loglevel-only L: exactly L */
};

struct rt_rule {
	const char *pattern;		/* glob on "provider:event" */
	const char *const *excludes;	/* globs; nr_excludes of them */
	size_t nr_excludes;
	enum rt_level_match level_match;
	int32_t level;			/* enum rt_loglevel */
};

/* Whether an event of level `event_level` meets the condition. */
bool rt_level_matches(enum rt_level_match how, int32_t level, int32_t event_level);
/* Whether one of globs[0 .. n) matches `name`. */
bool rt_glob_any(const char *const *globs, size_t n, const char *name);
/* Whether `name` is one of the library's state dump events
 * (lttng_ust_statedump:*, lttng_ust_dl:*; docs/statedump.md). A rule
 * selects them only when its pattern names them (starts with
 * "lttng_ust_"): `*` does not, so that traces without the `ip` context
 * do not carry them unasked. A channel that records the `ip` context
 * records them whatever its rules (embedded mode's session, the daemon's
 * rtd_channel_wants). */
bool rt_is_statedump_event(const char *name);
/* Whether rule r selects the event `name` of level `event_level`: the
 * pattern matches (a state dump event: and names it), no exclude does,
 * and the level condition holds. */
bool rt_rule_matches(const struct rt_rule *r, const char *name, int32_t event_level);

#endif /* RINGTRACE_COMMON_RULE_H */
