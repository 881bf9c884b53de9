/*
 * ctl_triggers.c - `ringtrace add-trigger` (words parsed with the daemon's
 * own parser, src/trigger, so that a mistake is reported at once, then
 * sent as they are) and `ringtrace notifications` (the notifications of
 * triggers as JSON lines, through the public API of
 * <ringtrace/notification.h>).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ringtrace/notification.h>

#include "../analysis/analysis.h"
#include "../common/hex.h"
#include "../proto/proto.h"
#include "../trigger/trigger.h"
#include "cli.h"
#include "ctl_table.h"

int ctl_run_add_trigger(const struct ctl_cmd *c, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			ctl_print_help(c, stdout);
			return 0;
		}
	}
	struct rt_trigger t;
	char err[RT_TRIGGER_ERRLEN];
	int ret = rt_trigger_parse(argc - 1, argv + 1, &t, err, sizeof(err));
	if (ret == -ENOTSUP) {
		cli_error("%s", err);
		return CLI_EXIT_FAILURE;
	}
	if (ret < 0) {
		cli_usage_error("%s", err);
		return CLI_EXIT_USAGE;
	}
	rt_trigger_free(&t);
	struct rtp_kv kv = { 0 };
	struct rtp_msg reply;
	rtp_kv_add(&kv, "cmd", c->name);
	for (int i = 1; i < argc; i++)
		rtp_kv_add(&kv, "arg", argv[i]);
	ret = cli_ctl_request(&kv, true, c->timeout_ms, &reply);
	if (ret == 0) {
		const char *out = rtp_kv_get(reply.payload, reply.length, "out");
		if (out)
			fputs(out, stdout);
		rtp_msg_free(&reply);
	}
	rtp_kv_free(&kv);
	return ret;
}

/* Keys whose values are numbers in the JSON line. */
static bool numeric_key(const char *k)
{
	static const char *const keys[] = {
		"owner-uid", "time-ns", "fired", "pid", "tid", "cpu", "consumed-size", "buffer-usage",
		"event-time-ns", "lost",
	};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(k, keys[i]))
			return true;
	return false;
}

static bool is_number(const char *v)
{
	char *end;
	if (!*v)
		return false;
	strtod(v, &end);
	return !*end && strcspn(v, "xXnN") == strlen(v);	/* no hex, inf, nan */
}

static void json_key(const char *k, bool *first)
{
	fputs(*first ? "{" : ",", stdout);
	*first = false;
	fputc('"', stdout);
	for (const char *p = k; *p; p++)
		fputc(*p == '-' ? '_' : *p, stdout);
	fputs("\":", stdout);
}

static void json_value(const char *v, bool number)
{
	if (number && is_number(v))
		fputs(v, stdout);
	else
		ra_json_string(stdout, v, strlen(v));
}

/*
 * One notification as one JSON line: every entry under its key ('-' as
 * '_'), numbers as numbers, pid and tid null when the condition has no
 * program (the daemon's own conditions), the time also as UTC text
 * ("time"), and the captures as an object "captures" {FIELD: value}.
 */
static void print_json(const struct rt_notification *n)
{
	bool first = true, have_pid = false, have_tid = false;
	size_t pos = 0;
	const char *k, *v;
	while (rt_notification_next(n, &pos, &k, &v)) {
		if (!strcmp(k, "capture") || !strcmp(k, "capture-bytes"))
			continue;
		have_pid |= !strcmp(k, "pid");
		have_tid |= !strcmp(k, "tid");
		json_key(k, &first);
		json_value(v, numeric_key(k));
		if (!strcmp(k, "time-ns")) {
			unsigned long long ns = strtoull(v, NULL, 10);
			time_t sec = (time_t)(ns / 1000000000ull);
			struct tm tm;
			char buf[64];
			gmtime_r(&sec, &tm);
			strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
			printf(",\"time\":\"%s.%09lluZ\"", buf, ns % 1000000000ull);
		}
	}
	if (!have_pid) {
		json_key("pid", &first);
		fputs("null", stdout);
	}
	if (!have_tid) {
		json_key("tid", &first);
		fputs("null", stdout);
	}
	json_key("captures", &first);
	fputc('{', stdout);
	bool cfirst = true;
	pos = 0;
	while (rt_notification_next(n, &pos, &k, &v)) {
		bool bytes = !strcmp(k, "capture-bytes");
		const char *eq = strcmp(k, "capture") && !bytes ? NULL : strchr(v, '=');
		if (!eq)
			continue;
		fputs(cfirst ? "" : ",", stdout);
		cfirst = false;
		ra_json_string(stdout, v, (size_t)(eq - v));
		fputc(':', stdout);
		if (!bytes) {
			json_value(eq + 1, true);
			continue;
		}
		/* A byte sequence: an array of its bytes (hexadecimal on
		 * the wire). */
		fputc('[', stdout);
		for (const char *h = eq + 1; rt_hex_digit(h[0]) >= 0 && rt_hex_digit(h[1]) >= 0;
		     h += 2)
			printf("%s%d", h == eq + 1 ? "" : ",",
			       rt_hex_digit(h[0]) * 16 + rt_hex_digit(h[1]));
		fputc(']', stdout);
	}
	fputs("}}\n", stdout);
	fflush(stdout);
}

int ctl_run_notifications(const struct ctl_cmd *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "trigger", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char **names = calloc((size_t)argc, sizeof(*names));
	size_t nr = 0;
	int ch, ret = CLI_EXIT_USAGE;
	if (!names) {
		cli_error("out of memory");
		return CLI_EXIT_FAILURE;
	}
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":t:h", opts, NULL)) != -1) {
		if (ch == 'h') {
			ctl_print_help(c, stdout);
			ret = 0;
			goto out;
		}
		if (ch != 't') {
			cli_usage_error("option '%s' %s", argv[optind - 1],
					ch == ':' ? "needs a value" : "is unknown");
			goto out;
		}
		if (!rt_trigger_name_ok(optarg)) {
			cli_usage_error("--trigger: '%s' is not a trigger name", optarg);
			goto out;
		}
		names[nr++] = optarg;
	}
	if (optind < argc) {
		cli_usage_error("too many arguments: %s", c->synopsis);
		goto out;
	}
	struct rt_notification_channel *nc;
	char err[512];
	int r = rt_notification_channel_open(names, nr, &nc, err, sizeof(err));
	if (r < 0) {
		cli_error("%s", err);
		ret = CLI_EXIT_FAILURE;
		goto out;
	}
	/* On stderr, so that stdout has only the JSON lines: from here on,
	 * no notification is missed. */
	fprintf(stderr, "Waiting for the notifications of %s.\n",
		nr ? "the triggers named" : "every trigger you may see");
	/* A reader of our output that goes away ends us quietly. */
	signal(SIGPIPE, SIG_DFL);
	for (;;) {
		struct rt_notification *n;
		r = rt_notification_channel_read(nc, -1, &n);
		if (r < 0)
			break;
		print_json(n);
		rt_notification_free(n);
	}
	cli_error("%s", r == -ECONNRESET ? "ringtraced closed the connection (it exited, or "
		  "this reader did not keep up)" : strerror(-r));
	rt_notification_channel_close(nc);
	ret = CLI_EXIT_FAILURE;
out:
	free(names);
	return ret;
}
