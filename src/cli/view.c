/*
 * view.c - `ringtrace view [OPTIONS] TRACE_DIR...`: print the events of
 * one or more traces, merged by time, as text or JSON lines, or their
 * statistics. Options, the merge loop and the field lookup the printer and
 * the filter share. docs/viewing.md is the user's description.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "view.h"

#define OUT_BUFFER_SIZE (1u << 20)

struct view_opts {
	bool json, stats, utc, no_delta;
	enum view_clock_mode clock_mode;
	int color;			/* -1 auto, 0 never, 1 always */
	struct view_time begin, end;
	char **patterns;		/* -e; points into argv; owned array */
	size_t nr_patterns;
	const char *filter_text;	/* points into argv */
	uint64_t limit;			/* 0: no limit */
};

/* One trace directory. */
struct view_source {
	struct rtr_trace *t;			/* owned */
	const struct rtr_event_class *classes;	/* the reader's */
	size_t nr_classes;
	uint32_t class_base;			/* its first view_class */
	struct rtr_event ev;			/* its next event, if has_ev */
	bool has_ev;
};

int view_field_index(const struct rtr_event_class *cls, enum view_scope scope,
		     const char *name)
{
	if (scope == VIEW_SCOPE_CONTEXT)
		return -1;	/* the traces ringtrace writes have no contexts */
	for (uint32_t i = 0; i < cls->nr_fields; i++)
		if (!strcmp(cls->fields[i].name, name))
			return (int)i;
	return -1;
}

int view_field_value(const struct rtr_event *ev, int index, struct rtr_value *v)
{
	return rtr_field(ev, (uint32_t)index, v);
}

static void usage(FILE *f)
{
	fputs("usage: ringtrace view [OPTIONS] TRACE_DIR...\n"
	      "\n"
	      "Print the events of the traces, merged by time, one per line.\n"
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
	      "  -h, --help           this help\n", f);
}

static int parse_args(int argc, char **argv, struct view_opts *o)
{
	enum { O_FORMAT = 256, O_CSEC, O_CDATE, O_CCYC, O_CGMT, O_NODELTA, O_COLOR,
	       O_BEGIN, O_END, O_FILTER, O_LIMIT, O_STATS };
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
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char err[256];
	int c;
	o->color = -1;
	o->patterns = calloc((size_t)argc, sizeof(char *));
	if (!o->patterns)
		return -ENOMEM;
	optind = 1;
	while ((c = getopt_long(argc, argv, "e:h", longopts, NULL)) != -1) {
		switch (c) {
		case O_FORMAT:
			if (strcmp(optarg, "text") && strcmp(optarg, "json")) {
				cli_error("view: --format must be text or json, not '%s'", optarg);
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
				cli_error("view: --color must be auto, always or never, not '%s'",
					  optarg);
				return -EINVAL;
			}
			break;
		case O_BEGIN:
		case O_END:
			if (view_time_parse(optarg, c == O_BEGIN ? &o->begin : &o->end, err,
					    sizeof(err)) < 0) {
				cli_error("view: %s: %s", c == O_BEGIN ? "--begin" : "--end", err);
				return -EINVAL;
			}
			break;
		case 'e':
			o->patterns[o->nr_patterns++] = optarg;
			break;
		case O_FILTER:
			if (o->filter_text) {
				cli_error("view: --filter given twice (combine them with &&)");
				return -EINVAL;
			}
			o->filter_text = optarg;
			break;
		case O_LIMIT: {
			char *end;
			errno = 0;
			o->limit = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-' || !o->limit) {
				cli_error("view: --limit needs a positive number, not '%s'", optarg);
				return -EINVAL;
			}
			break;
		}
		case O_STATS: o->stats = true; break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind >= argc) {
		cli_error("view: no trace directory given (see 'ringtrace view --help')");
		return -EINVAL;
	}
	return 0;
}

/* The view_class index of ev (from source s). */
static uint32_t class_of(const struct view_source *s, const struct rtr_event *ev)
{
	if (ev->cls >= s->classes && ev->cls < s->classes + s->nr_classes)
		return s->class_base + (uint32_t)(ev->cls - s->classes);
	for (size_t i = 0; i < s->nr_classes; i++)
		if (s->classes[i].id == ev->cls->id &&
		    s->classes[i].stream_id == ev->cls->stream_id)
			return s->class_base + (uint32_t)i;
	return s->class_base;	/* unreachable: the reader's own classes */
}

/* Advance source s: 1, 0 (no more events) or -1 (error, printed). */
static int source_next(struct view_source *s, const char *path)
{
	int r = rtr_next(s->t, &s->ev);
	s->has_ev = r > 0;
	if (r < 0) {
		cli_error("view: %s: %s", path, rtr_error(s->t));
		return -1;
	}
	return r;
}

/* The source with the earliest pending event, or -1 when all are done. */
static int earliest(const struct view_source *src, size_t n)
{
	int best = -1;
	for (size_t i = 0; i < n; i++)
		if (src[i].has_ev && (best < 0 || src[i].ev.ns < src[best].ev.ns))
			best = (int)i;
	return best;
}

struct view_run {
	struct view_opts opt;
	struct view_source *src;	/* owned, nr_src entries */
	struct rtr_trace **traces;	/* owned array (and traces), nr_src entries */
	size_t nr_src;
	char **paths;			/* argv entries */
	struct view_class *classes;	/* owned */
	size_t nr_classes;
	struct view_filter *filter;	/* owned */
	struct view_stats stats;
	struct fmt_out out;
	struct view_printer printer;
};

static int open_sources(struct view_run *r)
{
	size_t total = 0;
	r->src = calloc(r->nr_src, sizeof(*r->src));
	r->traces = calloc(r->nr_src, sizeof(*r->traces));
	if (!r->src || !r->traces)
		return -ENOMEM;
	for (size_t i = 0; i < r->nr_src; i++) {
		char err[512];
		int ret = rtr_open(r->paths[i], &r->traces[i], err, sizeof(err));
		if (ret < 0) {
			cli_error("view: cannot read the trace in %s: %s", r->paths[i], err);
			return ret;
		}
		r->src[i].t = r->traces[i];
		r->src[i].nr_classes = rtr_event_classes(r->src[i].t, &r->src[i].classes);
		r->src[i].class_base = (uint32_t)total;
		total += r->src[i].nr_classes;
	}
	r->classes = calloc(total ? total : 1, sizeof(*r->classes));
	if (!r->classes)
		return -ENOMEM;
	r->nr_classes = total;
	for (size_t i = 0; i < r->nr_src; i++) {
		for (size_t k = 0; k < r->src[i].nr_classes; k++) {
			struct view_class *vc = &r->classes[r->src[i].class_base + k];
			vc->cls = &r->src[i].classes[k];
			vc->source = (uint32_t)i;
			vc->selected = !r->opt.nr_patterns;
			for (size_t p = 0; p < r->opt.nr_patterns; p++)
				if (!fnmatch(r->opt.patterns[p], vc->cls->name, 0))
					vc->selected = true;
		}
	}
	return 0;
}

/* Read, filter and show every event. 0 or -1 (error printed). */
static int run_loop(struct view_run *r)
{
	const struct view_opts *o = &r->opt;
	int64_t begin = INT64_MIN, end = INT64_MAX;
	uint64_t shown = 0;
	bool first = true;
	for (size_t i = 0; i < r->nr_src; i++)
		if (source_next(&r->src[i], r->paths[i]) < 0)
			return -1;
	for (;;) {
		int si = r->nr_src == 1 ? (r->src[0].has_ev ? 0 : -1) : earliest(r->src, r->nr_src);
		if (si < 0)
			break;
		struct view_source *s = &r->src[si];
		if (first) {
			first = false;
			if (o->begin.kind != VIEW_TIME_NONE)
				begin = view_time_resolve(&o->begin, s->ev.ns, o->utc);
			if (o->end.kind != VIEW_TIME_NONE)
				end = view_time_resolve(&o->end, s->ev.ns, o->utc);
		}
		if (s->ev.ns > end)
			break;
		struct view_event e = { .ev = &s->ev, .source = (uint32_t)si,
					.gclass = class_of(s, &s->ev) };
		if (s->ev.ns >= begin && r->classes[e.gclass].selected &&
		    (!r->filter || view_filter_match(r->filter, &e))) {
			if (o->stats) {
				if (view_stats_add(&r->stats, r->classes, &e) < 0) {
					cli_error("view: out of memory");
					return -1;
				}
			} else {
				view_print(&r->printer, &e);
			}
			if (fmt_failed(&r->out))
				return 0;	/* reported by the caller */
			if (++shown == o->limit)
				break;
		}
		if (source_next(s, r->paths[si]) < 0)
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
			cli_error("view: %s\n  %s", err, r.opt.filter_text);
			status = ret == -ENOMEM ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
			goto out_opts;
		}
	}
	r.paths = argv + optind;
	r.nr_src = (size_t)(argc - optind);
	if (open_sources(&r) < 0)
		goto out_sources;
	if (r.filter && view_filter_bind(r.filter, r.classes, r.nr_classes) < 0) {
		cli_error("view: out of memory");
		goto out_sources;
	}
	if (fmt_open(&r.out, stdout, OUT_BUFFER_SIZE) < 0) {
		cli_error("view: out of memory");
		goto out_sources;
	}
	if (view_printer_init(&r.printer, r.nr_classes, r.opt.json) < 0) {
		cli_error("view: out of memory");
		fmt_close(&r.out);
		goto out_sources;
	}
	r.printer.out = &r.out;
	r.printer.clock_mode = r.opt.clock_mode;
	r.printer.delta = !r.opt.no_delta;
	r.printer.color = !r.opt.json && want_color(r.opt.color);
	r.printer.with_source = r.nr_src > 1;
	fmt_clock_init(&r.printer.clock, r.opt.utc, r.opt.clock_mode == VIEW_CLOCK_DATE);

	ret = run_loop(&r);
	if (fmt_close(&r.out) < 0 && r.out.err != -EPIPE) {
		cli_error("view: cannot write the output: %s", strerror(-r.out.err));
		ret = -1;
	}
	if (ret == 0 && r.opt.stats)
		view_stats_print(stdout, &r.stats, r.classes, r.nr_classes, r.traces, r.paths,
				 r.nr_src);
	status = ret == 0 ? 0 : CLI_EXIT_FAILURE;
out_sources:
	view_printer_free(&r.printer);
	view_stats_free(&r.stats);
	view_filter_free(r.filter);
	free(r.classes);
	for (size_t i = 0; r.traces && i < r.nr_src; i++)
		rtr_close(r.traces[i]);
	free(r.traces);
	free(r.src);
out_opts:
	free(r.opt.patterns);
	return status;
}
