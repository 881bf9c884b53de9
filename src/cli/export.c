/*
 * export.c - `ringtrace export --format=chrome TRACE_DIR... -o FILE.json`:
 * Chrome trace-event JSON (src/analysis/chrome.c), streamed to FILE.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../analysis/analysis.h"
#include "cli.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ringtrace export --format=chrome [OPTIONS] TRACE_DIR... -o FILE.json\n\n"
		"Write the traces (merged by timestamp) as Chrome trace-event JSON,\n"
		"which Perfetto (ui.perfetto.dev) and chrome://tracing open.\n"
		"Paired events become complete events; all others are instants.\n\n"
		"  -o, --output FILE   where to write ('-': standard output)\n"
		"  --format chrome     the output format (the only one so far)\n"
		CLI_PAIRING_HELP);
}

static const struct option export_opts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "format", required_argument, NULL, CLI_OPT_FORMAT },
	CLI_PAIRING_OPTIONS,
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

int cmd_export(int argc, char **argv)
{
	struct ra_options opt = { .auto_pairs = true };
	const char *pairs[CLI_MAX_PAIRS];
	const char *output = NULL, *format = NULL;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = cli_analysis_getopt("export", argc, argv, ":ho:", export_opts, &opt,
					pairs)) != -1) {
		switch (c) {
		case CLI_OPT_BAD:
			return CLI_EXIT_USAGE;
		case 'o': output = optarg; break;
		case CLI_OPT_FORMAT: format = optarg; break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			cli_bad_option("export", c, argv);
			return CLI_EXIT_USAGE;
		}
	}
	if (!format || strcmp(format, "chrome")) {
		cli_error("export: %s (only --format=chrome is supported)",
			  format ? "unknown format" : "no --format given");
		return CLI_EXIT_USAGE;
	}
	if (!output) {
		cli_error("export: no output file given (-o FILE.json)");
		return CLI_EXIT_USAGE;
	}
	if (optind == argc) {
		cli_error("export: no trace directory given");
		return CLI_EXIT_USAGE;
	}
	bool to_stdout = !strcmp(output, "-");
	FILE *f = to_stdout ? stdout : fopen(output, "w");
	if (!f) {
		cli_error("export: cannot create %s: %s", output, strerror(errno));
		return CLI_EXIT_FAILURE;
	}
	char err[1024];
	int ret = ra_export_chrome(f, (const char *const *)(argv + optind),
				   (size_t)(argc - optind), &opt, err, sizeof(err));
	if (ret == 0 && (fflush(f) != 0 || ferror(f))) {
		snprintf(err, sizeof(err), "cannot write %s: %s", output, strerror(errno));
		ret = -EIO;
	}
	if (!to_stdout && fclose(f) != 0 && ret == 0) {
		snprintf(err, sizeof(err), "cannot write %s: %s", output, strerror(errno));
		ret = -EIO;
	}
	if (ret < 0) {
		cli_error("export: %s", err);
		if (!to_stdout)
			unlink(output);
		return CLI_EXIT_FAILURE;
	}
	return 0;
}
