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
/* The session commands (ctl_table.c lists them); argv[0] is the name. */
int cmd_ctl(int argc, char **argv);
int cmd_summary(int argc, char **argv);

/* Print the summary of the trace in `dir` to `out`: events recorded and
 * lost per channel, bytes, most frequent events. Returns 0 or -errno (the
 * message is printed). */
int cli_print_summary(FILE *out, const char *dir, unsigned top);

struct rtp_kv;
struct rtp_msg;
/*
 * Send one control request to ringtraced (started on demand when
 * `autostart`) and wait for its reply at most timeout_ms. Returns 0 with
 * the reply in *reply (free it with rtp_msg_free; warnings already
 * printed), or an exit code with the error printed: the daemon's error
 * (CLI_EXIT_USAGE when it rejected a value), no daemon, a daemon that
 * does not answer, permission denied.
 */
int cli_ctl_request(const struct rtp_kv *req, bool autostart, int timeout_ms,
		    struct rtp_msg *reply);

void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* RINGTRACE_CLI_H */
