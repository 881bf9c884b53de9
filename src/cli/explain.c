/*
 * explain.c - `ringtrace explain TRACE_DIR...`: why a slow interval of a
 * thread was slow (src/analysis: ra_explain_*), with the interval given as
 * the slowest pair of two events, as the interval that ends at an event
 * matching a filter (view's --filter language), or by its times and
 * thread.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis/analysis.h"
#include "cli.h"
#include "view.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ringtrace explain (--slowest BEGIN,END [--key FIELD] |\n"
		"                          --event NAME [--where EXPR] |\n"
		"                          --interval A,B --tid TID) [OPTIONS] TRACE_DIR...\n\n"
		"Explain a slow interval of a thread from the kernel events of the\n"
		"traces (merged by time): where its time went (running, waiting for a\n"
		"CPU and who ran instead, blocked in which system calls and what woke\n"
		"it, waiting on I/O), and what the rest of the system did then against\n"
		"the rest of the trace. The first line names the most likely culprit.\n\n"
		"  --slowest BEGIN,END  the slowest pair of these events (full names),\n"
		"                       paired per thread, or per --key FIELD\n"
		"  --event NAME         the longest interval ending at an event NAME that\n"
		"                       matches --where EXPR (view's --filter language),\n"
		"                       from its thread's begin (P:X_begin for P:X_end,\n"
		"                       syscall_entry_X for syscall_exit_X), else from its\n"
		"                       thread's previous matching NAME\n"
		"  --interval A,B       from A to B (view's --begin/--end times: ns since\n"
		"                       the epoch, +1.5s after the first event, HH:MM:SS.f)\n"
		"  --tid TID            the thread of --interval\n"
		"  --top N              entries per list (default: 5)\n"
		"  --format text|json   output format (default: text)\n");
}

enum {
	OPT_SLOWEST = 0x200,
	OPT_KEY,
	OPT_EVENT,
	OPT_WHERE,
	OPT_INTERVAL,
	OPT_TID,
	OPT_TOP,
	OPT_FORMAT,
};

static const struct option explain_opts[] = {
	{ "slowest", required_argument, NULL, OPT_SLOWEST },
	{ "key", required_argument, NULL, OPT_KEY },
	{ "event", required_argument, NULL, OPT_EVENT },
	{ "where", required_argument, NULL, OPT_WHERE },
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "tid", required_argument, NULL, OPT_TID },
	{ "top", required_argument, NULL, OPT_TOP },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* --where over the events of a source: view's filter, its per-class
 * caches indexed like rtr_event_classes. */
struct where {
	struct view_filter *f;
	const struct rtr_event_class *base;
	size_t nr;
	bool bound;
};

static bool where_match(void *arg, const struct ra_source *src, const struct ra_event *ev)
{
	struct where *w = arg;
	if (!w->f)
		return true;
	if (!w->bound) {
		w->nr = rtr_event_classes(src->t, &w->base);
		if (view_filter_bind(w->f, NULL, w->nr) < 0)
			return false;
		w->bound = true;
	}
	const struct rtr_event_class *cls = ev->raw->cls;
	if (cls < w->base || cls >= w->base + w->nr)
		return false;
	struct view_event e = { .ev = ev->raw, .source = ev->trace,
				.gclass = (uint32_t)(cls - w->base) };
	return view_filter_match(w->f, &e);
}

/* The first event's time of the traces (times relative to it). */
static int first_time(const char *const *dirs, size_t nr, int64_t *ns, char *err, size_t len)
{
	struct ra_source src;
	struct ra_event ev;
	int ret = ra_source_open(&src, dirs, nr, NULL, err, len);
	if (ret < 0)
		return ret;
	ret = ra_source_next(&src, &ev, err, len);
	if (ret == 0) {
		snprintf(err, len, "the traces hold no event");
		ret = -ENOENT;
	} else if (ret > 0) {
		*ns = ev.ns;
		ret = 0;
	}
	ra_source_close(&src);
	return ret;
}

static int parse_interval(const char *arg, struct view_time *a, struct view_time *b)
{
	const char *comma = strchr(arg, ',');
	char err[256], first[128];
	if (!comma || (size_t)(comma - arg) >= sizeof(first)) {
		cli_usage_error("bad --interval '%s' (A,B: two times)", arg);
		return -EINVAL;
	}
	snprintf(first, sizeof(first), "%.*s", (int)(comma - arg), arg);
	if (view_time_parse(first, a, err, sizeof(err)) < 0 ||
	    view_time_parse(comma + 1, b, err, sizeof(err)) < 0) {
		cli_usage_error("bad --interval '%s': %s", arg, err);
		return -EINVAL;
	}
	return 0;
}

int cli_explain_interval(const char *const *dirs, size_t nr, const char *interval,
			 int64_t tid, struct ra_explain_target *t, char *err, size_t len)
{
	struct view_time ta, tb;
	int64_t first;
	if (parse_interval(interval, &ta, &tb) < 0)
		return -EINVAL;
	int ret = first_time(dirs, nr, &first, err, len);
	if (ret < 0)
		return ret;
	t->begin = view_time_resolve(&ta, first, false);
	t->end = view_time_resolve(&tb, first, false);
	t->tid = tid;
	snprintf(t->how, sizeof(t->how), "the interval given");
	if (t->end <= t->begin) {
		cli_usage_error("the --interval ends before it begins");
		return -EINVAL;
	}
	return 0;
}

int cmd_explain(int argc, char **argv)
{
	const char *slowest = NULL, *key = NULL, *event = NULL, *where_expr = NULL;
	const char *interval = NULL;
	int64_t tid = -1;
	unsigned top = 5;
	bool json = false;
	char *end;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", explain_opts, NULL)) != -1) {
		switch (c) {
		case OPT_SLOWEST: slowest = optarg; break;
		case OPT_KEY:
			if (!*optarg)
				return cli_usage_error("--key needs a field name");
			key = optarg;
			break;
		case OPT_EVENT: event = optarg; break;
		case OPT_WHERE: where_expr = optarg; break;
		case OPT_INTERVAL: interval = optarg; break;
		case OPT_TID:
			errno = 0;
			tid = strtoll(optarg, &end, 10);
			if (errno || end == optarg || *end || tid < 0)
				return cli_usage_error("bad --tid '%s' (a thread id)", optarg);
			break;
		case OPT_TOP: {
			errno = 0;
			unsigned long v = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-' || v == 0 || v > 10000)
				return cli_usage_error("bad --top '%s' (1 to 10000)", optarg);
			top = (unsigned)v;
			break;
		}
		case OPT_FORMAT:
			if (strcmp(optarg, "text") && strcmp(optarg, "json"))
				return cli_usage_error("bad format '%s' (text or json)", optarg);
			json = !strcmp(optarg, "json");
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			cli_bad_option(c, argv);
			return CLI_EXIT_USAGE;
		}
	}
	int modes = !!slowest + !!event + !!interval;
	if (modes != 1)
		return cli_usage_error("give one of --slowest, --event and --interval");
	if (key && !slowest)
		return cli_usage_error("--key goes with --slowest");
	if (where_expr && !event)
		return cli_usage_error("--where goes with --event");
	if ((tid >= 0) != !!interval)
		return cli_usage_error("--interval and --tid go together");
	if (optind == argc) {
		cli_usage_error("no trace directory given");
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	const char *const *dirs = (const char *const *)(argv + optind);
	size_t nr = (size_t)(argc - optind);

	struct where w = { 0 };
	struct view_time ta, tb;
	char err[1024];
	if (where_expr && view_filter_parse(where_expr, &w.f, err, sizeof(err)) < 0)
		return cli_usage_error("bad --where: %s", err);
	if (interval && parse_interval(interval, &ta, &tb) < 0) {
		view_filter_free(w.f);
		return CLI_EXIT_USAGE;
	}

	struct ra_explain_target t = { 0 };
	struct ra_explain *x = NULL;
	int status = CLI_EXIT_FAILURE;
	int ret;
	if (slowest) {
		ret = ra_explain_slowest(dirs, nr, slowest, key, &t, err, sizeof(err));
		if (ret == -EINVAL && strstr(err, "pair")) {
			status = cli_usage_error("%s", err);
			goto out;
		}
	} else if (event) {
		ret = ra_explain_event(dirs, nr, event, where_match, &w, &t, err, sizeof(err));
	} else {
		ret = cli_explain_interval(dirs, nr, interval, tid, &t, err, sizeof(err));
		if (ret == -EINVAL) {
			status = CLI_EXIT_USAGE;
			goto out;
		}
	}
	if (ret < 0) {
		cli_error("%s", err);
		goto out;
	}
	if (t.tid < 0) {
		cli_error("the interval's event has no thread (no vtid or tid context)");
		goto out;
	}
	ret = ra_explain_run(dirs, nr, &t, top, &x, err, sizeof(err));
	if (ret < 0) {
		cli_error("%s", err);
		goto out;
	}
	if (json) {
		ra_explain_write_json(stdout, x);
		fputc('\n', stdout);
	} else {
		ra_explain_write_text(stdout, x);
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		cli_error("cannot write the output");
		goto out;
	}
	status = 0;
out:
	ra_explain_free(x);
	view_filter_free(w.f);
	return status;
}
