/*
 * main.c - `ringtrace COMMAND ...`: dispatch to the sub-commands.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "ctl_table.h"

void cli_error(const char *fmt, ...)
{
	va_list ap;
	fputs("ringtrace: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *help;
} commands[] = {
	{ "record", cmd_record, "run a command with tracing on and write its trace" },
	{ "summary", cmd_summary, "print the summary of a trace directory" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: ringtrace COMMAND [OPTIONS] [ARGS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-15s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\nsession commands (through the session daemon, ringtraced):\n");
	for (unsigned i = 0; i < ctl_nr_cmds; i++)
		fprintf(f, "  %-15s %s\n", ctl_cmds[i].name, ctl_cmds[i].summary);
	fprintf(f, "\n'ringtrace COMMAND --help' describes a command.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("ringtrace %s\n", RINGTRACE_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	for (unsigned i = 0; i < ctl_nr_cmds; i++)
		if (!strcmp(argv[1], ctl_cmds[i].name))
			return cmd_ctl(argc - 1, argv + 1);
	cli_error("unknown command '%s' (see 'ringtrace --help')", argv[1]);
	return CLI_EXIT_USAGE;
}
