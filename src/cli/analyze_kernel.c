/*
 * analyze_kernel.c - `ringtrace analyze --syscalls|--io|--cpu|--irq`: the
 * kernel analyses of src/analysis (ra_kernel_run) over a --begin/--end
 * window, as text or JSON, with a progress line on a terminal.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../analysis/analysis.h"
#include "cli.h"
#include "view.h"

struct window {
	struct view_time begin, end;
	bool has_begin, has_end;
};

static void resolve_window(void *arg, int64_t first_ns, int64_t *begin, int64_t *end)
{
	const struct window *w = arg;
	if (w->has_begin)
		*begin = view_time_resolve(&w->begin, first_ns, true);
	if (w->has_end)
		*end = view_time_resolve(&w->end, first_ns, true);
}

struct progress {
	struct timespec start, last;
	int64_t first_ns;
	bool shown;
};

static double since(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

/* A line on stderr (a terminal), redrawn at most 4 times a second after
 * the first second. */
static void show_progress(void *arg, uint64_t events, int64_t ns)
{
	struct progress *p = arg;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (!p->first_ns)
		p->first_ns = ns;
	if (since(&p->start, &now) < 1.0 || (p->shown && since(&p->last, &now) < 0.25))
		return;
	p->last = now;
	p->shown = true;
	char at[32];
	ra_format_duration(ra_ns_diff(ns, p->first_ns), at, sizeof(at));
	fprintf(stderr, "\ranalyze: %.1fM events read, +%s into the trace, %.0fs ",
		(double)events / 1e6, at, since(&p->start, &now));
	fflush(stderr);
}

int cli_analyze_kernel(const char *const *dirs, size_t nr, unsigned sections, bool json,
		       unsigned top, const char *begin, const char *end)
{
	struct window w = { 0 };
	char err[1024];
	if ((begin && view_time_parse(begin, &w.begin, err, sizeof(err)) < 0) ||
	    (end && view_time_parse(end, &w.end, err, sizeof(err)) < 0)) {
		cli_usage_error("%s", err);
		return CLI_EXIT_USAGE;
	}
	w.has_begin = begin != NULL;
	w.has_end = end != NULL;
	struct progress prog = { 0 };
	clock_gettime(CLOCK_MONOTONIC, &prog.start);
	struct ra_kopts opt = {
		.sections = sections, .top = top,
		.window = resolve_window, .window_arg = &w,
		.progress = isatty(STDERR_FILENO) ? show_progress : NULL, .progress_arg = &prog,
	};
	struct ra_kernel *k;
	int ret = ra_kernel_run(dirs, nr, &opt, &k, err, sizeof(err));
	if (prog.shown)
		fputs("\r\033[K", stderr);
	if (ret < 0) {
		cli_error("%s", err);
		return CLI_EXIT_FAILURE;
	}
	if (json) {
		ra_kernel_write_json(stdout, k);
		fputc('\n', stdout);
	} else {
		ra_kernel_write_text(stdout, k);
	}
	ra_kernel_free(k);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		cli_error("cannot write the output");
		return CLI_EXIT_FAILURE;
	}
	return 0;
}
