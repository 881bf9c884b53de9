/*
 * view.c - `ringtrace view [OPTIONS] TRACE_DIR...`: print the events of
 * one or more traces, merged by time, as text or JSON lines, or their
 * statistics. Options, the event loop (the reader merges the traces) and
 * the field lookup the printer and the filter share. docs/viewing.md is the
 * user's description.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../analysis/analysis.h"
#include "../common/rule.h"
#include "cli.h"
#include "view.h"

#define OUT_BUFFER_SIZE (1u << 20)

struct view_opts {
	bool json, stats, utc, no_delta, no_symbols;
	enum view_clock_mode clock_mode;
	int color;			/* -1 auto, 0 never, 1 always */
	struct view_time begin, end;
	char **patterns;		/* -e; points into argv; owned array */
	size_t nr_patterns;
	const char *filter_text;	/* points into argv */
	uint64_t limit;			/* 0: no limit */
	const char *live;		/* --live URL, points into argv */
};

/* Field indexes: the payload's as they are, the contexts' above these. */
#define INDEX_STREAM_CTX 0x10000000
#define INDEX_EVENT_CTX 0x20000000
#define INDEX_SCOPE_MASK 0x30000000

static int context_index(const struct rtr_event *ev, const char *name)
{
	static const enum rtr_scope scopes[] = { RTR_SCOPE_STREAM_EVENT_CONTEXT,
						 RTR_SCOPE_EVENT_CONTEXT };
	static const int base[] = { INDEX_STREAM_CTX, INDEX_EVENT_CTX };
	for (int s = 0; s < 2; s++) {
		uint32_t n = rtr_scope_count(ev, scopes[s]);
		for (uint32_t i = 0; i < n && i < 0x1000000; i++) {
			struct rtr_value v;
			const char *fname = NULL;
			if (rtr_scope_field(ev, scopes[s], i, &v, &fname) == 0 && fname &&
			    !strcmp(fname, name))
				return base[s] + (int)i;
		}
	}
	return -1;
}

int view_field_index(const struct rtr_event *ev, enum view_scope scope, const char *name)
{
	if (scope != VIEW_SCOPE_CONTEXT) {
		const struct rtr_event_class *cls = ev->cls;
		for (uint32_t i = 0; i < cls->nr_fields && i < INDEX_STREAM_CTX; i++)
			if (!strcmp(cls->fields[i].name, name))
				return (int)i;
		if (scope == VIEW_SCOPE_PAYLOAD)
			return -1;
	}
	return context_index(ev, name);
}

int view_field_value(const struct rtr_event *ev, int index, struct rtr_value *v)
{
	uint32_t i = (uint32_t)index & ~(uint32_t)INDEX_SCOPE_MASK;
	switch (index & INDEX_SCOPE_MASK) {
	case INDEX_STREAM_CTX:
		return rtr_scope_field(ev, RTR_SCOPE_STREAM_EVENT_CONTEXT, i, v, NULL);
	case INDEX_EVENT_CTX:
		return rtr_scope_field(ev, RTR_SCOPE_EVENT_CONTEXT, i, v, NULL);
	default:
		return rtr_field(ev, i, v);
	}
}

static void usage(FILE *f)
{
	fputs("usage: ringtrace view [OPTIONS] TRACE_DIR...\n"
	      "       ringtrace view [OPTIONS] --live net://RELAY[:PORT][/host/HOST/SESSION]\n"
	      "\n"
	      "Print the events of the traces, merged by time, one per line; with\n"
	      "--live, those of a session a relay daemon serves while it is recorded\n"
	      "(without /host/HOST/SESSION: the relay's sessions).\n"
	      "\n"
	      "  --format=text|json   output format (default text)\n"
	      "  --clock-seconds      times as seconds since the epoch\n"
	      "  --clock-date         times with their date\n"
	      "  --clock-cycles       raw clock values\n"
	      "  --clock-gmt          times in UTC instead of the local time zone\n"
	      "  --no-delta           no (+delta) since the previous event\n"
	      "  --color=auto|always|never\n"
	      "  --begin=TIME         skip events before TIME\n"
	      "  --end=TIME           stop after TIME\n"
	      "        TIME: YYYY-MM-DDTHH:MM:SS[.frac], HH:MM[:SS[.frac]] (first day),\n"
	      "              ns since the epoch, or +N[.frac][s|ms|us|ns] after the start\n"
	      "  -e, --event=GLOB     only events whose provider:event matches (repeatable)\n"
	      "  --filter=EXPR        only events for which EXPR is true, e.g.\n"
	      "                       'seq >= 10 && $name =~ \"http:*\"' (see docs/viewing.md)\n"
	      "  --limit=N            stop after N events\n"
	      "  --stats              print counts instead of the events\n"
	      "  --no-symbols         the ip context as a raw address only\n"
	      "  --live=URL           follow a live session (see docs/live.md)\n"
	      "  -h, --help           this help\n", f);
}

static int parse_args(int argc, char **argv, struct view_opts *o)
{
	enum { O_FORMAT = 256, O_CSEC, O_CDATE, O_CCYC, O_CGMT, O_NODELTA, O_COLOR,
	       O_BEGIN, O_END, O_FILTER, O_LIMIT, O_STATS, O_NOSYMS, O_LIVE };
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, O_FORMAT },
		{ "clock-seconds", no_argument, NULL, O_CSEC },
		{ "clock-date", no_argument, NULL, O_CDATE },
		{ "clock-cycles", no_argument, NULL, O_CCYC },
		{ "clock-gmt", no_argument, NULL, O_CGMT },
		{ "no-delta", no_argument, NULL, O_NODELTA },
		{ "color", required_argument, NULL, O_COLOR },
		{ "begin", required_argument, NULL, O_BEGIN },
		{ "end", required_argument, NULL, O_END },
		{ "event", required_argument, NULL, 'e' },
		{ "filter", required_argument, NULL, O_FILTER },
		{ "limit", required_argument, NULL, O_LIMIT },
		{ "stats", no_argument, NULL, O_STATS },
		{ "no-symbols", no_argument, NULL, O_NOSYMS },
		{ "live", required_argument, NULL, O_LIVE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char err[256];
	int c;
	o->color = -1;
	o->patterns = calloc((size_t)argc, sizeof(char *));
	if (!o->patterns) {
		cli_error("out of memory");
		return -ENOMEM;
	}
	optind = 1;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":e:h", longopts, NULL)) != -1) {
		switch (c) {
		case O_FORMAT:
			if (strcmp(optarg, "text") && strcmp(optarg, "json")) {
				cli_usage_error("--format must be text or json, not '%s'", optarg);
				return -EINVAL;
			}
			o->json = !strcmp(optarg, "json");
			break;
		case O_CSEC: o->clock_mode = VIEW_CLOCK_SECONDS; break;
		case O_CDATE: o->clock_mode = VIEW_CLOCK_DATE; break;
		case O_CCYC: o->clock_mode = VIEW_CLOCK_CYCLES; break;
		case O_CGMT: o->utc = true; break;
		case O_NODELTA: o->no_delta = true; break;
		case O_COLOR:
			if (!strcmp(optarg, "auto"))
				o->color = -1;
			else if (!strcmp(optarg, "always"))
				o->color = 1;
			else if (!strcmp(optarg, "never"))
				o->color = 0;
			else {
				cli_usage_error("--color must be auto, always or never, not '%s'",
					  optarg);
				return -EINVAL;
			}
			break;
		case O_BEGIN:
		case O_END:
			if (view_time_parse(optarg, c == O_BEGIN ? &o->begin : &o->end, err,
					    sizeof(err)) < 0) {
				cli_usage_error("%s: %s", c == O_BEGIN ? "--begin" : "--end", err);
				return -EINVAL;
			}
			break;
		case 'e':
			o->patterns[o->nr_patterns++] = optarg;
			break;
		case O_FILTER:
			if (o->filter_text) {
				cli_usage_error("--filter given twice (combine them with &&)");
				return -EINVAL;
			}
			o->filter_text = optarg;
			break;
		case O_LIMIT: {
			char *end;
			errno = 0;
			o->limit = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-' || !o->limit) {
				cli_usage_error("--limit needs a positive number, not '%s'", optarg);
				return -EINVAL;
			}
			break;
		}
		case O_STATS: o->stats = true; break;
		case O_NOSYMS: o->no_symbols = true; break;
		case O_LIVE: o->live = optarg; break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			cli_bad_option(c, argv);
			return -EINVAL;
		}
	}
	if (o->live && optind < argc) {
		cli_usage_error("--live reads from the relay: no trace directory ('%s')",
				argv[optind]);
		return -EINVAL;
	}
	if (!o->live && optind >= argc) {
		cli_usage_error("no trace directory given");
		return -EINVAL;
	}
	return 0;
}

struct view_run {
	struct view_opts opt;
	struct rtr_trace *t;		/* owned: every trace, merged */
	const struct rtr_event_class *cls_base;	/* the reader's classes */
	char **paths;			/* argv entries */
	size_t nr_paths;
	struct view_class *classes;	/* owned, one per reader class */
	size_t nr_classes;
	struct view_filter *filter;	/* owned */
	struct view_stats stats;
	struct fmt_out out;
	struct view_printer printer;
	struct ra_symbols *syms;	/* owned; NULL with --no-symbols */
	struct lv_viewer *live;		/* owned: --live's connection */
};

/* The view_class index of ev. */
static uint32_t class_of(const struct view_run *r, const struct rtr_event *ev)
{
	if (ev->cls >= r->cls_base && ev->cls < r->cls_base + r->nr_classes)
		return (uint32_t)(ev->cls - r->cls_base);
	for (size_t i = 0; i < r->nr_classes; i++)	/* not expected */
		if (r->cls_base[i].id == ev->cls->id && r->cls_base[i].trace == ev->cls->trace &&
		    r->cls_base[i].stream_id == ev->cls->stream_id)
			return (uint32_t)i;
	return 0;
}

/* A trace a session is still recording: what is in its buffers is not in
 * the files yet. */
static void note_active_sessions(const struct view_run *r)
{
	char name[128];
	for (size_t i = 0; i < r->nr_paths; i++)
		if (cli_active_session_at(r->paths[i], name, sizeof(name)))
			cli_error("note: session '%s' is still recording into %s: the events "
				  "still in its buffers are not shown; 'ringtrace stop %s' writes "
				  "them out (a snapshot session: 'ringtrace snapshot record -s %s')",
				  name, r->paths[i], name, name);
}

/* The view classes for the reader's current list; a class already known
 * (same trace, stream class and id: a live trace's metadata grew) keeps
 * its count, the per-class caches are rebuilt. 0 or -ENOMEM (printed). */
static int sync_classes(struct view_run *r)
{
	const struct rtr_event_class *base;
	size_t n = rtr_event_classes(r->t, &base);
	struct view_class *v = calloc(n ? n : 1, sizeof(*v));
	if (!v) {
		cli_error("out of memory");
		return -ENOMEM;
	}
	for (size_t k = 0; k < n; k++) {
		struct view_class *vc = &v[k];
		vc->cls = &base[k];
		vc->selected = !r->opt.nr_patterns ||
			       rt_glob_any((const char *const *)r->opt.patterns, r->opt.nr_patterns,
					   vc->cls->name);
		for (size_t j = 0; j < r->nr_classes; j++) {
			const struct rtr_event_class *o = r->classes[j].cls;
			if (o->trace == vc->cls->trace && o->stream_id == vc->cls->stream_id &&
			    o->id == vc->cls->id)
				vc->count = r->classes[j].count;
		}
	}
	if (r->classes && ((r->filter && view_filter_bind(r->filter, v, n) < 0) ||
			   view_printer_reset(&r->printer, n) < 0)) {
		free(v);
		cli_error("out of memory");
		return -ENOMEM;
	}
	free(r->classes);
	r->classes = v;
	r->cls_base = base;
	r->nr_classes = n;
	return 0;
}

static int open_traces(struct view_run *r)
{
	char err[512];
	if (r->opt.live) {
		int ret = view_live_open(r->opt.live, &r->live, &r->t);
		if (ret)
			return ret;
	} else {
		note_active_sessions(r);
		int ret = rtr_open_many((const char *const *)r->paths, r->nr_paths, &r->t, err,
					sizeof(err));
		if (ret < 0) {
			cli_error("cannot read the trace: %s", err);
			return ret;
		}
	}
	return sync_classes(r);
}

/* Read, filter and show every event. 0 or -1 (error printed). */
static int run_loop(struct view_run *r)
{
	const struct view_opts *o = &r->opt;
	int64_t begin = INT64_MIN, end = INT64_MAX;
	uint64_t shown = 0;
	struct rtr_event ev;
	/* Counts of everything: without merging or decoding payloads. */
	if (o->stats && !r->live && !r->filter && !o->nr_patterns && !o->limit &&
	    o->begin.kind == VIEW_TIME_NONE && o->end.kind == VIEW_TIME_NONE) {
		int c = view_stats_count(&r->stats, r->classes, r->nr_classes, r->t);
		if (c == 0)
			return 0;
		if (c == -ENOMEM) {
			cli_error("out of memory");
			return -1;
		}
	}
	int ret = rtr_next(r->t, &ev);
	if (ret > 0) {
		if (o->begin.kind != VIEW_TIME_NONE)
			begin = view_time_resolve(&o->begin, ev.ns, o->utc);
		if (o->end.kind != VIEW_TIME_NONE)
			end = view_time_resolve(&o->end, ev.ns, o->utc);
	}
	for (; ret > 0; ret = rtr_next(r->t, &ev)) {
		if (ev.ns > end)
			return 0;
		if (r->live) {
			/* New metadata adds classes. */
			const struct rtr_event_class *base;
			size_t n = rtr_event_classes(r->t, &base);
			if ((base != r->cls_base || n != r->nr_classes) && sync_classes(r) < 0)
				return -1;
		}
		struct view_event e = { .ev = &ev, .source = ev.trace,
					.gclass = class_of(r, &ev) };
		if (ev.ns < begin || !r->classes[e.gclass].selected ||
		    (r->filter && !view_filter_match(r->filter, &e)))
			continue;
		if (o->stats) {
			if (view_stats_add(&r->stats, r->classes, &e) < 0) {
				cli_error("out of memory");
				return -1;
			}
		} else {
			view_print(&r->printer, &e);
		}
		/* Live, each event is written out as it comes (the next one
		 * may take long to come). */
		if (r->live && !o->stats && fmt_flush(&r->out) == 0 && fflush(r->out.f) != 0)
			r->out.err = errno ? -errno : -EIO;
		if (fmt_failed(&r->out))
			return 0;	/* reported by the caller */
		if (++shown == o->limit)
			return 0;
	}
	if (ret == -EINTR && r->live && view_live_stopped())
		return 0;	/* asked to stop: what was read is shown */
	if (ret < 0) {
		cli_error("%s", rtr_error(r->t));
		return -1;
	}
	return 0;
}

static bool want_color(int color)
{
	if (color >= 0)
		return color;
	const char *term = getenv("TERM");
	return isatty(STDOUT_FILENO) && !getenv("NO_COLOR") && term && strcmp(term, "dumb");
}

int cmd_view(int argc, char **argv)
{
	struct view_run r;
	int status = CLI_EXIT_FAILURE;
	memset(&r, 0, sizeof(r));
	int ret = parse_args(argc, argv, &r.opt);
	if (ret) {
		status = ret > 0 ? 0 : ret == -ENOMEM ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
		goto out_opts;
	}
	if (r.opt.filter_text) {
		char err[256];
		ret = view_filter_parse(r.opt.filter_text, &r.filter, err, sizeof(err));
		if (ret < 0) {
			cli_error("%s\n  %s", err, r.opt.filter_text);
			status = ret == -ENOMEM ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
			goto out_opts;
		}
	}
	/* A reader that goes away (| head) makes fwrite fail with EPIPE: the
	 * loop stops and the command exits 0, instead of dying of SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);
	r.paths = argv + optind;
	r.nr_paths = (size_t)(argc - optind);
	ret = open_traces(&r);
	if (ret) {
		status = ret > 0 ? 0 : r.opt.live && ret == -EINVAL && !r.live ? CLI_EXIT_USAGE
									 : CLI_EXIT_FAILURE;
		goto out_sources;
	}
	if (r.filter && view_filter_bind(r.filter, r.classes, r.nr_classes) < 0) {
		cli_error("out of memory");
		goto out_sources;
	}
	if (fmt_open(&r.out, stdout, OUT_BUFFER_SIZE) < 0) {
		cli_error("out of memory");
		goto out_sources;
	}
	if (view_printer_init(&r.printer, r.nr_classes, r.opt.json) < 0) {
		cli_error("out of memory");
		fmt_close(&r.out);
		goto out_sources;
	}
	r.printer.out = &r.out;
	r.printer.clock_mode = r.opt.clock_mode;
	r.printer.delta = !r.opt.no_delta;
	r.printer.color = !r.opt.json && want_color(r.opt.color);
	r.printer.with_source = rtr_trace_count(r.t) > 1;
	r.printer.t = r.t;
	if (!r.opt.no_symbols && !r.opt.stats && !r.live) {
		char err[512];
		if (ra_symbols_load((const char *const *)r.paths, r.nr_paths, &r.syms, err,
				    sizeof(err)) < 0) {
			cli_error("%s", err);
			fmt_close(&r.out);
			goto out_sources;
		}
		r.printer.syms = r.syms;
	}
	fmt_clock_init(&r.printer.clock, r.opt.utc, r.opt.clock_mode == VIEW_CLOCK_DATE);

	ret = run_loop(&r);
	if (fmt_close(&r.out) < 0 && r.out.err != -EPIPE) {
		cli_error("cannot write the output: %s", strerror(-r.out.err));
		ret = -1;
	}
	if (ret == 0 && r.opt.stats)
		view_stats_print(stdout, &r.stats, r.classes, r.nr_classes, r.t);
	status = ret == 0 ? 0 : CLI_EXIT_FAILURE;
out_sources:
	view_printer_free(&r.printer);
	ra_symbols_free(r.syms);
	view_stats_free(&r.stats);
	view_filter_free(r.filter);
	free(r.classes);
	rtr_close(r.t);
	view_live_close(r.live);
out_opts:
	free(r.opt.patterns);
	return status;
}
