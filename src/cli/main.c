/*
 * main.c - `ringtrace COMMAND ...`: dispatch to the sub-commands.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "ctl_table.h"

const char *cli_cmd;

static void message(const char *fmt, va_list ap, bool hint)
{
	fputs("ringtrace: ", stderr);
	if (cli_cmd)
		fprintf(stderr, "%s: ", cli_cmd);
	vfprintf(stderr, fmt, ap);
	if (hint && cli_cmd)
		fprintf(stderr, " (see 'ringtrace %s --help')", cli_cmd);
	else if (hint)
		fputs(" (see 'ringtrace --help')", stderr);
	fputc('\n', stderr);
}

void cli_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	message(fmt, ap, false);
	va_end(ap);
}

int cli_usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	message(fmt, ap, true);
	va_end(ap);
	return CLI_EXIT_USAGE;
}

static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *help;
} commands[] = {
	{ "record", cmd_record, "run a command with tracing on and write its trace" },
	{ "summary", cmd_summary, "print the summary of a trace directory" },
	{ "view", cmd_view, "print the events of traces as text or JSON lines" },
	{ "analyze", cmd_analyze, "event rates, durations of paired events, activity per thread, kernel analyses" },
	{ "export", cmd_export, "convert traces to Chrome trace-event JSON (Perfetto)" },
	{ "report", cmd_report, "write a self-contained HTML report of a trace" },
	{ "explain", cmd_explain, "why a slow interval of a thread was slow (kernel events)" },
	{ "recover", cmd_recover, "write the trace a crashed program left in its --shm-path buffers" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: ringtrace COMMAND [OPTIONS] [ARGS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-17s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\nsession commands (through the session daemon, ringtraced):\n");
	for (unsigned i = 0; i < ctl_nr_cmds; i++)
		fprintf(f, "  %-17s %s\n", ctl_cmds[i].name, ctl_cmds[i].summary);
	fprintf(f, "\n'ringtrace COMMAND --help' describes a command; 'ringtrace --version'\n"
		"(-V) prints the version.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return cli_usage_error("no command given");
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("ringtrace %s\n", RINGTRACE_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (!strcmp(argv[1], commands[i].name)) {
			cli_cmd = commands[i].name;
			return commands[i].fn(argc - 1, argv + 1);
		}
	}
	for (unsigned i = 0; i < ctl_nr_cmds; i++) {
		if (!strcmp(argv[1], ctl_cmds[i].name)) {
			cli_cmd = ctl_cmds[i].name;
			return cmd_ctl(argc - 1, argv + 1);
		}
	}
	return cli_usage_error("unknown command '%s'", argv[1]);
}
