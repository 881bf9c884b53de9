/*
 * trigger.h - a trigger as `ringtrace add-trigger` states it, in the
 * syntax of `lttng add-trigger` 2.13 (docs/triggers.md): one condition,
 * then one or more actions run in order, each with a rate policy.
 *
 *   add-trigger [--name=NAME] [--owner-uid=UID]
 *               --condition=CONDTYPE ARGS --action=ACTTYPE ARGS [--action=...]
 *
 * A trigger travels and is saved as its words: the command parses them
 * (to report a mistake at once), sends them as they are, and the daemon
 * parses them again (it trusts no client); `ringtrace save` writes the
 * canonical words of rt_trigger_words. One parser, so the command, the
 * daemon and a saved file can never disagree on what a trigger means.
 *
 * Concurrency: pure functions on the caller's memory; callable from any
 * thread, not from the fast path (they allocate).
 */
#ifndef RINGTRACE_TRIGGER_H
#define RINGTRACE_TRIGGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../common/rule.h"

#define RT_TRIGGER_NAME_MAX 64		/* trigger and session names, with NUL */
#define RT_TRIGGER_ERRLEN 256
#define RT_TRIGGER_MAX_ACTIONS 16
#define RT_TRIGGER_MAX_LIST 64		/* --exclude-name, --capture */

enum rt_cond_type {
	RT_COND_EVENT_RULE,		/* event-rule-matches */
	RT_COND_BUFFER_USAGE_GE,	/* channel-buffer-usage-ge */
	RT_COND_BUFFER_USAGE_LE,	/* channel-buffer-usage-le */
	RT_COND_CONSUMED_SIZE_GE,	/* session-consumed-size-ge */
};

enum rt_er_type {
	RT_ER_USER,			/* user, user:tracepoint */
	RT_ER_KERNEL,			/* kernel, kernel:tracepoint */
	RT_ER_SYSCALL,			/* syscall[:entry|:exit|:entry+exit],
					 * kernel:syscall[...] */
};

/* Which side of a system call a syscall rule matches (bits). */
#define RT_SYSCALL_ENTRY 1u
#define RT_SYSCALL_EXIT 2u

enum rt_action_type {
	RT_ACT_NOTIFY,
	RT_ACT_START_SESSION,
	RT_ACT_STOP_SESSION,
	RT_ACT_ROTATE_SESSION,		/* parsed, refused: no session rotation */
	RT_ACT_SNAPSHOT_SESSION,
};

enum rt_rate_type {
	RT_RATE_EVERY,			/* every:N: requests N, 2N, 3N... */
	RT_RATE_ONCE_AFTER,		/* once-after:N: request N only */
};

struct rt_trigger_cond {
	enum rt_cond_type type;
	/* event-rule-matches */
	enum rt_er_type er_type;
	unsigned syscall_sides;		/* RT_SYSCALL_*, syscall rules */
	char *pattern;			/* --name glob; NULL: every event */
	char *filter;			/* --filter expression, NULL: none */
	char **excludes;		/* --exclude-name globs (user) */
	size_t nr_excludes;
	enum rt_level_match level_match;	/* --log-level (user) */
	int32_t level;
	char **captures;		/* --capture descriptors */
	size_t nr_captures;
	/* channel-buffer-usage-*, session-consumed-size-ge */
	char *session;
	char *channel;			/* buffer usage */
	bool kernel;			/* buffer usage: --domain=kernel */
	double ratio;			/* buffer usage: 0..1 */
	uint64_t size;			/* consumed size: bytes */
};

struct rt_trigger_action {
	enum rt_action_type type;
	char *session;			/* all but notify */
	bool cluster;			/* snapshot-session --cluster: every host
					 * of the session's relay with a session
					 * of that name (docs/relay.md) */
	enum rt_rate_type rate;
	uint64_t count;			/* >= 1 */
};

struct rt_trigger {
	char *name;			/* NULL: the daemon names it */
	bool has_owner;
	uint32_t owner_uid;		/* --owner-uid, when has_owner */
	struct rt_trigger_cond cond;
	struct rt_trigger_action actions[RT_TRIGGER_MAX_ACTIONS];
	size_t nr_actions;
};

/*
 * Parse the words after `add-trigger` (argv[0 .. argc)) into *t (zeroed
 * here). Returns 0, or -EINVAL with one line in err (what is wrong and
 * with which word), -ENOTSUP for what the syntax has and ringtrace does
 * not do (other event rule types, $app contexts), or
 * -ENOMEM. *t is freed on error.
 */
int rt_trigger_parse(int argc, char *const *argv, struct rt_trigger *t, char *err,
		     size_t errlen);
void rt_trigger_free(struct rt_trigger *t);

/*
 * The canonical words of t, as rt_trigger_parse reads them back into the
 * same trigger: fn(word, arg) for each, in order (--name and
 * --owner-uid only when set).
 */
void rt_trigger_words(const struct rt_trigger *t, void (*fn)(const char *word, void *arg),
		      void *arg);

/* A one-line description of the condition or of action i, as
 * `list-triggers` prints it. */
void rt_trigger_describe_cond(const struct rt_trigger *t, FILE *out);
void rt_trigger_describe_action(const struct rt_trigger_action *a, FILE *out);

/* Names of the condition and action types ("event-rule-matches", ...). */
const char *rt_trigger_cond_name(enum rt_cond_type c);
const char *rt_trigger_action_name(enum rt_action_type a);

/* Trigger names: 1-63 printable ASCII bytes, no space, not starting with
 * '-'. */
bool rt_trigger_name_ok(const char *name);

#endif /* RINGTRACE_TRIGGER_H */
