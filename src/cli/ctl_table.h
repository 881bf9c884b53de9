/*
 * ctl_table.h - the session commands of `ringtrace` as data: each command
 * is its options, how each becomes a key of the control request, and its
 * help text. ctl_commands.c parses argv with it and prints --help from it.
 */
#ifndef RINGTRACE_CLI_CTL_TABLE_H
#define RINGTRACE_CLI_CTL_TABLE_H

#include <stdbool.h>
#include <stdio.h>

enum ctl_arg {
	ARG_SET,	/* no value: key=value as given in the table */
	ARG_STR,	/* key=ARG */
	ARG_PATH,	/* key=ARG made absolute */
	ARG_SIZE,	/* key=bytes; ARG accepts k/M/G */
	ARG_NUM,	/* key=ARG, a decimal number */
	ARG_USEC,	/* key=microseconds; ARG accepts us/ms/s/m/h */
	ARG_LOGLEVEL,	/* key=level number; ARG a name or a number */
	ARG_LOCAL,	/* handled by the command itself (key: its name) */
	ARG_OPTNUM,	/* --OPT or --OPT=N: key=N, key= without N */
};

struct ctl_opt {
	const char *lng;
	char shrt;
	enum ctl_arg arg;
	const char *key;
	const char *value;	/* ARG_SET */
	const char *metavar;
	const char *help;
};

#define CTL_MAX_OPTS 16

struct ctl_cmd {
	const char *name;
	const char *summary;
	const char *synopsis;
	const char *description;
	const char *pos_key;	/* positional arguments become this key */
	enum ctl_arg pos_arg;
	int pos_min, pos_max;
	bool read_only;		/* no daemon: say so instead of starting one */
	int timeout_ms;
	struct ctl_opt opts[CTL_MAX_OPTS];
};

/* ctl_triggers.c: add-trigger (its options depend on their place, which
 * the table cannot state) and notifications (a stream, not one reply)
 * parse argv themselves; the table gives their help. */
int ctl_run_add_trigger(const struct ctl_cmd *c, int argc, char **argv);
int ctl_run_notifications(const struct ctl_cmd *c, int argc, char **argv);
/* ctl_commands.c: a command's --help from its table entry. */
void ctl_print_help(const struct ctl_cmd *c, FILE *f);

extern const struct ctl_cmd ctl_cmds[];
extern const unsigned ctl_nr_cmds;

#endif /* RINGTRACE_CLI_CTL_TABLE_H */
