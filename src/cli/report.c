/*
 * report.c - `ringtrace report [OPTIONS] TRACE_DIR... -o report.html`: one
 * self-contained HTML page with the timeline and the analyses
 * (src/analysis/report.c).
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
		"usage: ringtrace report [OPTIONS] TRACE_DIR... -o report.html\n\n"
		"Write one self-contained HTML page (no network, no other files):\n"
		"timeline per CPU and per thread, event rates, durations of paired\n"
		"events and a per-thread summary; for kernel traces, the kernel\n"
		"analyses (system calls, block I/O, CPU, interrupts) their events\n"
		"allow, and kernel lanes: the thread each CPU ran, each thread's\n"
		"state (running, runnable, blocked, in which syscall, woken by what)\n"
		"and the block requests per device. Timeline lanes keep at most %d\n"
		"events (and %d pairs or bars) each; more are downsampled (the page\n"
		"says so).\n\n"
		"  -o, --output FILE   the page to write\n"
		"  --interval D        rate interval, e.g. 10ms (default: auto)\n"
		CLI_PAIRING_HELP
		"  --top N             outliers listed per pair (default: 10)\n"
		"  --lane-cap N        events and pairs kept per lane (default: %d)\n"
		"  --explain-interval A,B --tid TID\n"
		"                      highlight that interval of thread TID with\n"
		"                      `ringtrace explain`'s breakdown (times as for\n"
		"                      explain --interval)\n",
		RA_REPORT_LANE_CAP, RA_REPORT_LANE_CAP, RA_REPORT_LANE_CAP);
}

#define OPT_LANE_CAP 0x200
#define OPT_EXPLAIN 0x201
#define OPT_TID 0x202

static const struct option report_opts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "interval", required_argument, NULL, CLI_OPT_INTERVAL },
	{ "top", required_argument, NULL, CLI_OPT_TOP },
	CLI_PAIRING_OPTIONS,
	{ "lane-cap", required_argument, NULL, OPT_LANE_CAP },
	{ "explain-interval", required_argument, NULL, OPT_EXPLAIN },
	{ "tid", required_argument, NULL, OPT_TID },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

int cmd_report(int argc, char **argv)
{
	struct ra_options opt = { .top = 10, .auto_pairs = true, .keep_events = true };
	const char *pairs[CLI_MAX_PAIRS];
	const char *output = NULL, *explain = NULL;
	int64_t tid = -1;
	unsigned long lane_cap = RA_REPORT_LANE_CAP;
	char *end;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = cli_analysis_getopt(argc, argv, ":ho:", report_opts, &opt,
					pairs)) != -1) {
		switch (c) {
		case CLI_OPT_BAD:
			return CLI_EXIT_USAGE;
		case 'o': output = optarg; break;
		case OPT_LANE_CAP:
			errno = 0;
			lane_cap = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-' ||
			    lane_cap == 0 || lane_cap > 100000000) {
				cli_usage_error("bad --lane-cap '%s' (1 to 100000000)", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case OPT_EXPLAIN: explain = optarg; break;
		case OPT_TID:
			errno = 0;
			tid = strtoll(optarg, &end, 10);
			if (errno || end == optarg || *end || tid < 0) {
				cli_usage_error("bad --tid '%s' (a thread id)", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			cli_bad_option(c, argv);
			return CLI_EXIT_USAGE;
		}
	}
	if (!output) {
		cli_usage_error("no output file given (-o report.html)");
		return CLI_EXIT_USAGE;
	}
	if (optind == argc) {
		cli_usage_error("no trace directory given");
		return CLI_EXIT_USAGE;
	}
	if ((tid >= 0) != !!explain) {
		cli_usage_error("--explain-interval and --tid go together");
		return CLI_EXIT_USAGE;
	}
	const char *const *dirs = (const char *const *)(argv + optind);
	size_t nr = (size_t)(argc - optind);
	struct ra_explain_target target = { 0 };
	char err[1024];
	if (explain) {
		int r = cli_explain_interval(dirs, nr, explain, tid, &target, err, sizeof(err));
		if (r == -EINVAL)
			return CLI_EXIT_USAGE;
		if (r < 0) {
			cli_error("%s", err);
			return CLI_EXIT_FAILURE;
		}
	}
	/* Written beside the target and renamed over it once complete
	 * (fs_util.h's rt_out): a failed report leaves the target as it
	 * was. Checked before the traces are read. */
	struct rt_out out;
	if (rt_out_open(&out, output, err, sizeof(err)) < 0) {
		cli_error("%s", err);
		return CLI_EXIT_FAILURE;
	}
	struct ra_stats s;
	struct ra_kernel *k = NULL;
	struct ra_klanes *kl = NULL;
	struct ra_explain *x = NULL;
	int status = CLI_EXIT_FAILURE;
	int ret = ra_stats_run(&s, (const char *const *)(argv + optind),
			       (size_t)(argc - optind), &opt, err, sizeof(err));
	if (ret < 0) {
		rt_out_abort(&out);
		cli_error("%s", err);
		goto free_stats;
	}
	/* The kernel analyses of the kernel traces among them, those their
	 * events allow. */
	struct ra_kopts kopt = { .sections = RA_K_SYSCALLS | RA_K_IO | RA_K_CPU | RA_K_IRQ,
				 .top = opt.top, .skip_missing = true };
	ret = ra_kernel_run((const char *const *)(argv + optind), (size_t)(argc - optind), &kopt,
			    &k, err, sizeof(err));
	if (ret < 0) {
		rt_out_abort(&out);
		cli_error("%s", err);
		goto free_stats;
	}
	/* The kernel lanes: what each CPU ran, each thread's states, the
	 * block requests (none without kernel events). */
	ret = ra_klanes_run((const char *const *)(argv + optind), (size_t)(argc - optind),
			    lane_cap, &kl, err, sizeof(err));
	if (ret < 0) {
		rt_out_abort(&out);
		cli_error("%s", err);
		goto free_stats;
	}
	if (explain) {
		ret = ra_explain_run(dirs, nr, &target, opt.top, &x, err, sizeof(err));
		if (ret < 0) {
			rt_out_abort(&out);
			cli_error("%s", err);
			goto free_stats;
		}
	}
	struct ra_report_extra extra = { .kernel = k, .klanes = kl, .explain = x };
	ret = ra_write_report(out.f, &s, &extra, argv[optind], lane_cap);
	if (ret < 0) {
		rt_out_abort(&out);
		cli_error("cannot write %s: %s", output, strerror(-ret));
		goto free_stats;
	}
	if (rt_out_commit(&out, err, sizeof(err)) < 0) {
		cli_error("%s", err);
		goto free_stats;
	}
	status = 0;
free_stats:
	ra_explain_free(x);
	ra_klanes_free(kl);
	ra_kernel_free(k);
	ra_stats_free(&s);
	return status;
}
