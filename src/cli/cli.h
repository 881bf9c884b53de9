/*
 * cli.h - the `ringtrace` command: sub-commands and shared helpers.
 *
 * Exit codes: 0 success; 1 runtime failure; 2 bad usage (unknown option,
 * invalid value); `record` passes the traced command's own status through
 * (127 if it could not be started).
 */
#ifndef RINGTRACE_CLI_H
#define RINGTRACE_CLI_H

#include <stdbool.h>
#include <stdio.h>

#define CLI_EXIT_FAILURE 1
#define CLI_EXIT_USAGE 2

int cmd_record(int argc, char **argv);
int cmd_summary(int argc, char **argv);
int cmd_view(int argc, char **argv);

/* Print the summary of the trace in `dir` to `out`: events recorded and
 * lost per channel, bytes, most frequent events. Returns 0 or -errno (the
 * message is printed). */
int cli_print_summary(FILE *out, const char *dir, unsigned top);

void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* RINGTRACE_CLI_H */
