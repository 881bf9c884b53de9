/*
 * summary.c - what `ringtrace record` prints when the command ends, and
 * `ringtrace summary DIR`: events recorded and lost per channel, bytes
 * written, the trace's path and its most frequent events. Everything is
 * read back from the trace itself. In a collection (traces below DIR: a
 * session's ust/uid/UID/64-bit and kernel, `record -k`'s), a channel is
 * named with its trace's directory under DIR (`kernel/channel0`), so that
 * channels of the same name in different traces are counted apart.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../reader/reader.h"
#include "../analysis/analysis.h"
#include "cli.h"

struct chan_sum {
	char name[256];
	uint64_t events, discarded, packets_lost, bytes;
	unsigned streams;
};

static int by_count_desc(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;	/* {count, index} pairs */
	if (x[0] != y[0])
		return x[0] < y[0] ? 1 : -1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* Channel name of the stream file `path` found under `dir`: its path
 * below dir (the trace's directory, none for a trace that is dir itself)
 * without the base name's _CPU suffix. */
static void channel_of(const char *dir, const char *path, char *out, size_t len)
{
	size_t dl = strlen(dir);
	const char *rel = path;
	if (!strncmp(path, dir, dl) && (path[dl] == '/' || (dl && dir[dl - 1] == '/')))
		rel = path + dl;
	while (*rel == '/')
		rel++;
	snprintf(out, len, "%s", rel);
	char *base = strrchr(out, '/');
	char *us = strrchr(base ? base : out, '_');
	if (us)
		*us = '\0';
}

int cli_print_summary(FILE *out, const char *dir, unsigned top, bool recorded)
{
	char err[512];
	struct rtr_trace *t;
	int ret = rtr_open(dir, &t, err, sizeof(err));
	if (ret < 0) {
		cli_error("cannot read the trace in %s: %s", dir, err);
		return ret;
	}
	/* Counted by class (ids are per stream class: a trace written by a
	 * process tree has one stream class per process), then by name. */
	const struct rtr_event_class *classes;
	size_t nr_classes = rtr_event_classes(t, &classes);
	uint64_t *counts = calloc(nr_classes ? nr_classes : 1, sizeof(uint64_t));
	if (!counts) {
		rtr_close(t);
		return -ENOMEM;
	}
	/* At once when the trace allows (rtr_count), else event by event. */
	struct rtr_count_result cr;
	ret = rtr_count(t, counts, NULL, &cr);
	struct rtr_event ev;
	if (ret < 0)
		while ((ret = rtr_next(t, &ev)) > 0)
			if (ev.cls >= classes && ev.cls < classes + nr_classes)
				counts[ev.cls - classes]++;
	if (ret < 0)
		cli_error("trace %s is damaged: %s (summary of what could be read)",
			  dir, rtr_error(t));

	const struct rtr_stream_stats *st;
	size_t nr_streams = rtr_streams(t, &st);
	struct chan_sum ch[16];
	size_t nr_ch = 0;
	uint64_t total_bytes = 0;
	for (size_t i = 0; i < nr_streams; i++) {
		char name[sizeof(ch[0].name)];
		channel_of(dir, st[i].path, name, sizeof(name));
		size_t c = 0;
		while (c < nr_ch && strcmp(ch[c].name, name))
			c++;
		if (c == nr_ch) {
			if (nr_ch == sizeof(ch) / sizeof(ch[0]))
				c--;
			else
				memset(&ch[nr_ch++], 0, sizeof(ch[0]));
			snprintf(ch[c].name, sizeof(ch[c].name), "%s", name);
		}
		ch[c].events += st[i].events;
		ch[c].discarded += st[i].events_discarded;
		ch[c].packets_lost += st[i].packets_lost;
		ch[c].bytes += st[i].bytes;
		ch[c].streams++;
		total_bytes += st[i].bytes;
	}

	char hb[32];
	ra_format_bytes(total_bytes, hb, sizeof(hb));
	if (recorded)
		fprintf(out, "ringtrace: trace written to %s (%s)\n", dir, hb);
	else
		fprintf(out, "trace %s (%s)\n", dir, hb);
	for (size_t c = 0; c < nr_ch; c++) {
		ra_format_bytes(ch[c].bytes, hb, sizeof(hb));
		fprintf(out, "  %s: %" PRIu64 " events recorded, %" PRIu64 " lost",
			ch[c].name, ch[c].events, ch[c].discarded);
		if (ch[c].packets_lost)
			fprintf(out, " + %" PRIu64 " packets overwritten", ch[c].packets_lost);
		fprintf(out, ", %s in %u stream%s\n", hb, ch[c].streams,
			ch[c].streams == 1 ? "" : "s");
	}

	uint64_t (*order)[2] = calloc(nr_classes ? nr_classes : 1, sizeof(*order));
	size_t n = 0;
	for (size_t i = 0; order && i < nr_classes; i++) {
		if (counts[i] == 0)
			continue;
		size_t j = 0;
		while (j < n && strcmp(classes[order[j][1]].name, classes[i].name))
			j++;
		if (j == n) {
			order[n][0] = 0;
			order[n][1] = i;
			n++;
		}
		order[j][0] += counts[i];
	}
	if (n) {
		qsort(order, n, sizeof(*order), by_count_desc);
		fprintf(out, "  most frequent events:\n");
		for (size_t i = 0; i < n && i < top; i++)
			fprintf(out, "  %12" PRIu64 "  %s\n", order[i][0],
				classes[order[i][1]].name);
	}
	fprintf(out, "  view it with: ringtrace view %s\n", dir);
	free(order);
	free(counts);
	rtr_close(t);
	return ret < 0 ? ret : 0;
}

int cmd_summary(int argc, char **argv)
{
	if (argc != 2 || argv[1][0] == '-') {
		if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
			printf("usage: ringtrace summary TRACE_DIR\n\n"
			       "Print events recorded and lost per channel, bytes and the\n"
			       "most frequent events of a trace.\n");
			return 0;
		}
		return cli_usage_error("%s", argc < 2   ? "no trace directory given"
					     : argc > 2 ? "too many arguments"
							: "unknown option");
	}
	return cli_print_summary(stdout, argv[1], 20, false) < 0 ? CLI_EXIT_FAILURE : 0;
}
