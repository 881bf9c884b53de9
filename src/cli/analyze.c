/*
 * analyze.c - `ringtrace analyze [OPTIONS] TRACE_DIR...`: event rates,
 * durations of paired events and activity per thread (src/analysis), as
 * text or JSON. Also the option handling shared with export and report.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis/analysis.h"
#include "cli.h"

void cli_bad_option(int c, char **argv)
{
	if (c == ':')
		cli_usage_error("option '%s' needs a value", argv[optind - 1]);
	else if (optopt && optopt < 0x100)
		cli_usage_error("unknown option '-%c'", optopt);
	else
		cli_usage_error("unknown option '%s'", argv[optind - 1]);
}

/* Apply shared option `code` with value `arg` to `opt`: 1 handled, 0 not
 * a shared option, -EINVAL (message printed) for a bad value. */
static int analysis_option(int code, const char *arg,
			   struct ra_options *opt, const char **pairs)
{
	char *end;
	switch (code) {
	case CLI_OPT_INTERVAL:
		if (ra_parse_duration(arg, &opt->interval_ns) < 0) {
			cli_usage_error("bad interval '%s' (a positive number with a unit: "
					"ns, us, ms or s, e.g. 10ms)", arg);
			return -EINVAL;
		}
		return 1;
	case CLI_OPT_PAIR: {
		char err[256];
		struct ra_pairer check;
		ra_pairer_init(&check, false);
		int ret = ra_pairer_add(&check, arg, err, sizeof(err));
		ra_pairer_free(&check);
		if (ret < 0) {
			cli_usage_error("%s", err);
			return -EINVAL;
		}
		if (opt->nr_pairs == CLI_MAX_PAIRS) {
			cli_usage_error("at most %d --pair options", CLI_MAX_PAIRS);
			return -EINVAL;
		}
		pairs[opt->nr_pairs++] = arg;
		opt->pairs = pairs;
		return 1;
	}
	case CLI_OPT_KEY:
		if (!*arg) {
			cli_usage_error("--key needs a field name");
			return -EINVAL;
		}
		opt->key_field = arg;
		return 1;
	case CLI_OPT_TOP: {
		errno = 0;
		unsigned long v = strtoul(arg, &end, 10);
		if (errno || end == arg || *end || v > 100000 || arg[0] == '-') {
			cli_usage_error("bad --top '%s' (0 to 100000)", arg);
			return -EINVAL;
		}
		opt->top = (unsigned)v;
		return 1;
	}
	case CLI_OPT_NO_AUTO_PAIRS:
		opt->auto_pairs = false;
		return 1;
	default:
		return 0;
	}
}

int cli_analysis_getopt(int argc, char **argv, const char *shortopts,
			const struct option *longopts, struct ra_options *opt,
			const char **pairs)
{
	for (;;) {
		int c = getopt_long(argc, argv, shortopts, longopts, NULL);
		if (c == -1)
			return -1;
		int r = analysis_option(c, optarg, opt, pairs);
		if (r < 0)
			return CLI_OPT_BAD;
		if (r == 0)
			return c;
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ringtrace analyze [OPTIONS] TRACE_DIR...\n\n"
		"Analyse one or more traces (merged by timestamp). With none of\n"
		"--rates, --durations, --threads, all three are shown.\n\n"
		"  --rates             events per interval per event name\n"
		"  --durations         durations of paired events\n"
		"  --threads           activity per key (thread)\n"
		"Kernel analyses (kernel traces: record -k), instead of those three:\n"
		"  --syscalls          system calls: latency, errors, per process and thread\n"
		"  --io                block requests, bytes per process, fsync/sync calls\n"
		"  --cpu               CPU time per CPU, process and thread\n"
		"  --irq               hard and soft interrupts\n"
		"  --sched             wakeup latency per thread and who ran instead,\n"
		"                      preemptions, migrations, CPU time over time\n"
		"  --begin T, --end T  only this window (times as view's, UTC)\n"
		"  --interval D        rate interval, e.g. 500us, 10ms, 1s (default: auto)\n"
		CLI_PAIRING_HELP
		"  --top N             outliers shown per pair (default: 10)\n"
		"  --format text|json  output format (default: text)\n");
}

static const struct option analyze_opts[] = {
	{ "rates", no_argument, NULL, CLI_OPT_RATES },
	{ "durations", no_argument, NULL, CLI_OPT_DURATIONS },
	{ "threads", no_argument, NULL, CLI_OPT_THREADS },
	{ "syscalls", no_argument, NULL, CLI_OPT_SYSCALLS },
	{ "io", no_argument, NULL, CLI_OPT_IO },
	{ "cpu", no_argument, NULL, CLI_OPT_CPU },
	{ "irq", no_argument, NULL, CLI_OPT_IRQ },
	{ "sched", no_argument, NULL, CLI_OPT_SCHED },
	{ "begin", required_argument, NULL, CLI_OPT_BEGIN },
	{ "end", required_argument, NULL, CLI_OPT_END },
	{ "interval", required_argument, NULL, CLI_OPT_INTERVAL },
	{ "top", required_argument, NULL, CLI_OPT_TOP },
	CLI_PAIRING_OPTIONS,
	{ "format", required_argument, NULL, CLI_OPT_FORMAT },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

int cmd_analyze(int argc, char **argv)
{
	struct ra_options opt = { .top = 10, .auto_pairs = true };
	const char *pairs[CLI_MAX_PAIRS];
	unsigned sections = 0, ksections = 0;
	const char *begin = NULL, *end = NULL;
	bool json = false;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = cli_analysis_getopt(argc, argv, ":h", analyze_opts, &opt,
					pairs)) != -1) {
		switch (c) {
		case CLI_OPT_BAD:
			return CLI_EXIT_USAGE;
		case CLI_OPT_RATES: sections |= RA_RATES; break;
		case CLI_OPT_DURATIONS: sections |= RA_DURATIONS; break;
		case CLI_OPT_THREADS: sections |= RA_THREADS; break;
		case CLI_OPT_SYSCALLS: ksections |= RA_K_SYSCALLS; break;
		case CLI_OPT_IO: ksections |= RA_K_IO; break;
		case CLI_OPT_CPU: ksections |= RA_K_CPU; break;
		case CLI_OPT_IRQ: ksections |= RA_K_IRQ; break;
		case CLI_OPT_SCHED: ksections |= RA_K_SCHED; break;
		case CLI_OPT_BEGIN: begin = optarg; break;
		case CLI_OPT_END: end = optarg; break;
		case CLI_OPT_FORMAT:
			if (strcmp(optarg, "text") && strcmp(optarg, "json")) {
				cli_usage_error("bad format '%s' (text or json)", optarg);
				return CLI_EXIT_USAGE;
			}
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
	if (optind == argc) {
		cli_usage_error("no trace directory given");
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (ksections && sections) {
		cli_usage_error("the kernel analyses (--syscalls, --io, --cpu, --irq, --sched) and "
				"--rates, --durations, --threads are separate runs");
		return CLI_EXIT_USAGE;
	}
	if ((begin || end) && !ksections) {
		cli_usage_error("--begin and --end go with the kernel analyses "
				"(--syscalls, --io, --cpu, --irq, --sched)");
		return CLI_EXIT_USAGE;
	}
	if (ksections)
		return cli_analyze_kernel((const char *const *)(argv + optind),
					  (size_t)(argc - optind), ksections, json, opt.top,
					  begin, end);
	if (!sections)
		sections = RA_RATES | RA_DURATIONS | RA_THREADS;

	struct ra_stats s;
	char err[1024];
	int status = CLI_EXIT_FAILURE;
	int ret = ra_stats_run(&s, (const char *const *)(argv + optind),
			       (size_t)(argc - optind), &opt, err, sizeof(err));
	if (ret < 0) {
		cli_error("%s", err);
		goto free_stats;
	}
	if (json) {
		ra_write_json(stdout, &s, sections);
		fputc('\n', stdout);
	} else {
		ra_write_text(stdout, &s, sections);
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		cli_error("cannot write the output");
		goto free_stats;
	}
	status = 0;
free_stats:
	ra_stats_free(&s);
	return status;
}
