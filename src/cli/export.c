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
#include "../common/fs_util.h"
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
	while ((c = cli_analysis_getopt(argc, argv, ":ho:", export_opts, &opt,
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
			cli_bad_option(c, argv);
			return CLI_EXIT_USAGE;
		}
	}
	if (!format || strcmp(format, "chrome")) {
		cli_usage_error("%s (only --format=chrome is supported)",
			  format ? "unknown format" : "no --format given");
		return CLI_EXIT_USAGE;
	}
	if (!output) {
		cli_usage_error("no output file given (-o FILE.json)");
		return CLI_EXIT_USAGE;
	}
	if (optind == argc) {
		cli_usage_error("no trace directory given");
		return CLI_EXIT_USAGE;
	}
	/* A file is written beside FILE and renamed over it once complete
	 * (fs_util.h's rt_out): a failed export leaves FILE as it was. */
	bool to_stdout = !strcmp(output, "-");
	struct rt_out out;
	char err[1024];
	FILE *f = stdout;
	if (!to_stdout) {
		if (rt_out_open(&out, output, err, sizeof(err)) < 0) {
			cli_error("%s", err);
			return CLI_EXIT_FAILURE;
		}
		f = out.f;
	}
	int ret = ra_export_chrome(f, (const char *const *)(argv + optind),
				   (size_t)(argc - optind), &opt, err, sizeof(err));
	if (to_stdout && ret == 0 && (fflush(f) != 0 || ferror(f))) {
		snprintf(err, sizeof(err), "cannot write the standard output: %s",
			 strerror(errno));
		ret = -EIO;
	} else if (!to_stdout && ret == 0) {
		ret = rt_out_commit(&out, err, sizeof(err));
	} else if (!to_stdout) {
		rt_out_abort(&out);
	}
	if (ret < 0) {
		cli_error("%s", err);
		return CLI_EXIT_FAILURE;
	}
	return 0;
}
