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
#include <stdint.h>
#include <stdio.h>

#define CLI_EXIT_FAILURE 1
#define CLI_EXIT_USAGE 2

int cmd_record(int argc, char **argv);
/* The session commands (ctl_table.c lists them); argv[0] is the name. */
int cmd_ctl(int argc, char **argv);
int cmd_summary(int argc, char **argv);
int cmd_view(int argc, char **argv);
int cmd_analyze(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_recover(int argc, char **argv);

/* Create the output directory `dir` (mkdir -p, fs_util.h's checks) or
 * check that it is empty and writable: a command's output never mixes
 * with what is there (record.c). Returns 0 or -errno (message printed:
 * -EEXIST when not empty). */
int cli_output_dir(const char *dir);
struct ra_explain_target;
/* The interval of `--interval A,B --tid TID` (explain's and report's
 * --explain-interval: times as view's --begin/--end, relative ones from
 * the first event of dirs) into *t. 0; -EINVAL: a usage error, already
 * said; other -errno: the traces (message in err). */
int cli_explain_interval(const char *const *dirs, size_t nr, const char *interval,
			 int64_t tid, struct ra_explain_target *t, char *err, size_t len);

/* Options shared by analyze, export and report (long options only). */
enum {
	CLI_OPT_INTERVAL = 0x100,
	CLI_OPT_PAIR,
	CLI_OPT_KEY,
	CLI_OPT_TOP,
	CLI_OPT_NO_AUTO_PAIRS,
	CLI_OPT_FORMAT,
	CLI_OPT_RATES,
	CLI_OPT_DURATIONS,
	CLI_OPT_THREADS,
	/* analyze's kernel analyses (analyze_kernel.c) */
	CLI_OPT_SYSCALLS,
	CLI_OPT_IO,
	CLI_OPT_CPU,
	CLI_OPT_IRQ,
	CLI_OPT_SCHED,
	CLI_OPT_BEGIN,
	CLI_OPT_END,
};
#define CLI_MAX_PAIRS 32
/* The pairing options all three take: their getopt_long entries and
 * their help lines. */
#define CLI_PAIRING_OPTIONS                                                    \
	{ "pair", required_argument, NULL, CLI_OPT_PAIR },                     \
	{ "no-auto-pairs", no_argument, NULL, CLI_OPT_NO_AUTO_PAIRS },         \
	{ "key", required_argument, NULL, CLI_OPT_KEY }
#define CLI_PAIRING_HELP                                                       \
	"  --pair BEGIN,END    pair these events (full names, repeatable)\n"   \
	"  --no-auto-pairs     do not pair P:X_entry/P:X_exit, P:X_begin/P:X_end,\n" \
	"                      P:X_start/P:X_stop, P:entry/P:exit, P:begin/P:end,\n" \
	"                      P:start/P:stop\n"                                \
	"  --key FIELD         field that identifies a thread (default: vtid, else tid)\n"
/* cli_analysis_getopt: a shared option had a bad value. */
#define CLI_OPT_BAD (-2)
struct ra_options;
struct option;
/* getopt_long for analyze, export and report: applies the shared options
 * to `opt` itself (pairs are stored in `pairs`, CLI_MAX_PAIRS long) and
 * returns the next other option, -1 at the end, or CLI_OPT_BAD when a
 * shared option's value was bad (the message is printed). The caller
 * resets optind before the first call. */
/* analyze's kernel analyses (enum ra_ksection bits) of dirs, text or
 * JSON on stdout; begin/end: --begin/--end arguments or NULL. Progress on
 * stderr when it is a terminal. Returns the exit status. */
int cli_analyze_kernel(const char *const *dirs, size_t nr, unsigned sections, bool json,
		       unsigned top, const char *begin, const char *end);
int cli_analysis_getopt(int argc, char **argv, const char *shortopts,
			const struct option *longopts, struct ra_options *opt,
			const char **pairs);
/* Print getopt's complaint about argv[optind - 1] (cli_usage_error). */
void cli_bad_option(int c, char **argv);

/* Print the summary of the trace in `dir` to `out`: events recorded and
 * lost per channel, bytes, most frequent events, how to view it;
 * `recorded`: `record` just wrote it ("trace written to DIR"). Returns 0
 * or -errno (the message is printed). */
int cli_print_summary(FILE *out, const char *dir, unsigned top, bool recorded);

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

/* `ringtrace list -k`: the kernel's tracepoints, or with `syscalls` its
 * system calls (src/kernel). Returns an exit status; a user without
 * access to tracefs gets one line saying so. */
int cli_list_kernel(bool syscalls);

/* Errors, in one style: "ringtrace: CMD: MESSAGE" on stderr (CMD: the
 * command running, cli_cmd, set by main before it runs the command).
 * cli_usage_error adds the hint " (see 'ringtrace CMD --help')" and
 * returns CLI_EXIT_USAGE: for bad usage (unknown option, bad value,
 * missing argument). */
extern const char *cli_cmd;
/* Whether a running ringtraced (asked without starting one, quietly) has
 * an active session writing to `dir` (or below or above it): its name
 * in name[len]. */
bool cli_active_session_at(const char *dir, char *name, size_t len);

void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* RINGTRACE_CLI_H */
