/*
 * test_trigger.c - src/trigger: a trigger read from its words, written
 * back as canonical words (what `save` writes) and read again is the same
 * trigger, for every condition, option and action form; --opt VALUE and
 * --opt=VALUE mean the same; values come back exactly (ratios, sizes,
 * log levels, syscall sides, lists in order).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trigger/trigger.h"
#include "unit.h"

struct words {
	char *w[64];
	int n;
};

static void collect(const char *word, void *arg)
{
	struct words *ws = arg;
	if (ws->n < 64)
		ws->w[ws->n++] = strdup(word);
}

static void words_free(struct words *ws)
{
	for (int i = 0; i < ws->n; i++)
		free(ws->w[i]);
	ws->n = 0;
}

static void join(const struct words *ws, char *buf, size_t len)
{
	buf[0] = '\0';
	for (int i = 0; i < ws->n; i++)
		snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? " " : "", ws->w[i]);
}

/* words -> trigger -> canonical words A -> trigger -> canonical words B:
 * A == B, and A is `want` when given. Returns the trigger (caller frees). */
/* Parse copies of argv (the parser takes the mutable argv of main). */
static int parse(const char *const *argv, int argc, struct rt_trigger *t, char *err,
		 size_t errlen)
{
	struct words ws = { .n = 0 };
	for (int i = 0; i < argc; i++)
		collect(argv[i], &ws);
	int ret = rt_trigger_parse(ws.n, ws.w, t, err, errlen);
	words_free(&ws);
	return ret;
}

static int round_trip(const char *const *argv, int argc, const char *want, struct rt_trigger *t)
{
	char err[RT_TRIGGER_ERRLEN], a[4096], b[4096];
	int ret = parse(argv, argc, t, err, sizeof(err));
	CHECK(ret == 0, "%s: %s", argv[argc > 2 ? 2 : 0], err);
	if (ret)
		return ret;
	struct words wa = { .n = 0 }, wb = { .n = 0 };
	rt_trigger_words(t, collect, &wa);
	join(&wa, a, sizeof(a));
	struct rt_trigger t2;
	ret = rt_trigger_parse(wa.n, wa.w, &t2, err, sizeof(err));
	CHECK(ret == 0, "canonical words refused: %s (%s)", a, err);
	if (!ret) {
		rt_trigger_words(&t2, collect, &wb);
		join(&wb, b, sizeof(b));
		CHECK(!strcmp(a, b), "not a fixed point:\n  %s\n  %s", a, b);
		rt_trigger_free(&t2);
	}
	if (want)
		CHECK(!strcmp(a, want), "canonical words\n  %s\nwanted\n  %s", a, want);
	words_free(&wa);
	words_free(&wb);
	return ret;
}

#define RT(want, ...)                                                          \
	({                                                                     \
		static const char *const argv_[] = { __VA_ARGS__ };            \
		round_trip(argv_, (int)(sizeof(argv_) / sizeof(argv_[0])), want, &t); \
	})

int main(void)
{
	struct rt_trigger t;

	if (!RT("--condition=session-consumed-size-ge --session=s --threshold-size=1048576 "
		"--action=stop-session s --rate-policy=every:1",
		"--condition", "session-consumed-size-ge", "--session", "s",
		"--threshold-size", "1M", "--action", "stop-session", "s")) {
		CHECK(t.cond.size == 1048576, "size %llu", (unsigned long long)t.cond.size);
		CHECK(!t.name && !t.has_owner, "no name, no owner");
		rt_trigger_free(&t);
	}
	/* The same with --opt=VALUE. */
	if (!RT("--condition=session-consumed-size-ge --session=s --threshold-size=1048576 "
		"--action=stop-session s --rate-policy=every:1",
		"--condition=session-consumed-size-ge", "--session=s", "--threshold-size=1M",
		"--action=stop-session", "s"))
		rt_trigger_free(&t);
	if (!RT("--name=full --owner-uid=1000 --condition=channel-buffer-usage-ge --session=f "
		"--channel=c0 --domain=kernel --threshold-ratio=0.10000000000000001 "
		"--action=snapshot-session f --rate-policy=once-after:7 --action=notify "
		"--rate-policy=every:3",
		"--owner-uid=1000", "--condition=channel-buffer-usage-ge", "--threshold-ratio=0.1",
		"--domain=kernel", "--channel=c0", "--session=f", "--action=snapshot-session", "f",
		"--rate-policy=once-after:7", "--action=notify", "--rate-policy=every:3",
		"--name=full")) {
		CHECK(t.cond.ratio == 0.1 && t.cond.kernel, "ratio, domain");
		CHECK(t.nr_actions == 2 && t.actions[0].rate == RT_RATE_ONCE_AFTER &&
		      t.actions[0].count == 7 && t.actions[1].count == 3, "actions");
		CHECK(t.has_owner && t.owner_uid == 1000 && !strcmp(t.name, "full"), "owner, name");
		rt_trigger_free(&t);
	}
	if (!RT("--condition=channel-buffer-usage-le --session=s --channel=c --domain=user "
		"--threshold-ratio=0 --action=start-session t --rate-policy=every:1",
		"--condition=channel-buffer-usage-le", "--session=s", "--channel=c",
		"--domain=user", "--threshold-ratio=0", "--action=start-session", "t"))
		rt_trigger_free(&t);
	/* Event rules: --name after the condition is the rule's pattern. */
	if (!RT("--name=er --condition=event-rule-matches --type=user --name=app:* "
		"--filter=seq > 3 && s == \"a*\" --log-level=WARNING.. --exclude-name=app:x "
		"--exclude-name=app:y --capture=seq --capture=$ctx.vtid --capture=arr[2] "
		"--action=notify --rate-policy=every:1",
		"--name=er", "--condition=event-rule-matches", "--type=user:tracepoint",
		"--name=app:*", "--log-level=TRACE_WARNING..", "--exclude-name=app:x",
		"--exclude-name=app:y", "--filter=seq > 3 && s == \"a*\"", "--capture=seq",
		"--capture=$ctx.vtid", "--capture=arr[2]", "--action=notify")) {
		CHECK(!strcmp(t.name, "er") && !strcmp(t.cond.pattern, "app:*"), "names");
		CHECK(t.cond.level_match == RT_LEVEL_RANGE && t.cond.level == 4, "level");
		CHECK(t.cond.nr_excludes == 2 && !strcmp(t.cond.excludes[1], "app:y"), "excludes");
		CHECK(t.cond.nr_captures == 3 && !strcmp(t.cond.captures[2], "arr[2]"), "captures");
		rt_trigger_free(&t);
	}
	if (!RT("--condition=event-rule-matches --type=user --log-level=DEBUG "
		"--action=notify --rate-policy=every:1",
		"--condition=event-rule-matches", "--type=user", "--log-level=14",
		"--action=notify")) {
		CHECK(t.cond.level_match == RT_LEVEL_ONLY && t.cond.level == 14, "exact level");
		rt_trigger_free(&t);
	}
	if (!RT("--condition=event-rule-matches --type=user --action=notify "
		"--rate-policy=every:1",
		"--condition=event-rule-matches", "--type=user", "--log-level=..",
		"--action=notify"))
		rt_trigger_free(&t);
	/* Syscall sides. */
	static const char *const sides[][2] = {
		{ "syscall", "syscall" }, { "kernel:syscall:entry+exit", "syscall" },
		{ "syscall:entry", "syscall:entry" }, { "kernel:syscall:exit", "syscall:exit" },
		{ "kernel:tracepoint", "kernel" },
	};
	for (size_t i = 0; i < sizeof(sides) / sizeof(sides[0]); i++) {
		char type[64], want[256];
		snprintf(type, sizeof(type), "--type=%s", sides[i][0]);
		snprintf(want, sizeof(want), "--condition=event-rule-matches --type=%s "
			 "--name=open* --action=notify --rate-policy=every:1", sides[i][1]);
		const char *argv[] = { "--condition=event-rule-matches", type, "--name=open*",
				       "--action=notify" };
		if (!round_trip(argv, 4, want, &t))
			rt_trigger_free(&t);
	}
	/* snapshot-session --cluster: a flag of that action, anywhere after
	 * its session name, written back after it. */
	if (!RT("--condition=event-rule-matches --type=user --name=app:fire "
		"--action=snapshot-session S --cluster --rate-policy=every:2 --action=notify "
		"--rate-policy=every:1",
		"--condition=event-rule-matches", "--type=user", "--name=app:fire",
		"--action=snapshot-session", "S", "--rate-policy=every:2", "--cluster",
		"--action=notify")) {
		CHECK(t.nr_actions == 2 && t.actions[0].cluster && !t.actions[1].cluster,
		      "cluster flag");
		rt_trigger_free(&t);
	}
	static const struct {
		const char *words[5];
		const char *why;
	} cl[] = {
		{ { "--action=stop-session", "S", "--cluster" }, "after --action=snapshot-session" },
		{ { "--action=snapshot-session", "S", "--cluster=yes" }, "takes no value" },
		{ { "--action=snapshot-session", "S", "--cluster", "--cluster" }, "given twice" },
		{ { "--action=notify", "--cluster" }, "after --action=snapshot-session" },
	};
	for (size_t i = 0; i < sizeof(cl) / sizeof(cl[0]); i++) {
		char e[RT_TRIGGER_ERRLEN] = "";
		const char *argv[8] = { "--condition=event-rule-matches", "--type=user" };
		int n = 2;
		for (int j = 0; j < 5 && cl[i].words[j]; j++)
			argv[n++] = cl[i].words[j];
		CHECK(parse(argv, n, &t, e, sizeof(e)) == -EINVAL && strstr(e, cl[i].why),
		      "--cluster case %zu: %s", i, e);
	}
	/* A refusal frees what was parsed and says which word. */
	char err[RT_TRIGGER_ERRLEN];
	const char *bad[] = { "--condition=event-rule-matches", "--type=user",
			      "--exclude-name=a", "--capture=x", "--action=notify",
			      "--rate-policy=every:0" };
	CHECK(parse(bad, 6, &t, err, sizeof(err)) == -EINVAL &&
	      strstr(err, "every:0"), "refused: %s", err);
	CHECK(!t.cond.excludes && !t.cond.captures && !t.nr_actions, "freed on error");
	return unit_finish();
}
