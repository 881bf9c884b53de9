/*
 * ctl_table.c - the session commands, their options and help texts
 * (docs/commands/ has the same with examples).
 */
#include <stddef.h>

#include "ctl_table.h"

#define OPT_U { "userspace", 'u', ARG_SET, "domain", "user", NULL, \
		"user-space domain (the default)" }
#define OPT_K { "kernel", 'k', ARG_SET, "domain", "kernel", NULL, \
		"kernel domain (ftrace; root only)" }
#define OPT_S { "session", 's', ARG_STR, "session", NULL, "SESSION", \
		"the session (default: the current one)" }
#define OPT_C { "channel", 'c', ARG_STR, "channel", NULL, "CHANNEL", \
		"the channel (default: channel0)" }
#define SHORT_MS 5000
#define LONG_MS 30000

const struct ctl_cmd ctl_cmds[] = {
{ "create", "create a tracing session",
  "ringtrace create [NAME] [-o DIR | --snapshot [-o DIR] | --set-url=URL [--live[=US]]]\n"
  "       [--force] [--shm-path DIR]",
  "Create a session and make it the current one. Without NAME the session is called\n"
  "auto-DATE. Traces go to DIR (default ~/ringtrace-traces/NAME-DATE), created now;\n"
  "a DIR that is not empty is refused unless --force, and so is the DIR of another\n"
  "session. A snapshot session keeps its buffers in memory (overwrite mode) and\n"
  "writes them only with 'ringtrace snapshot record'. With --set-url (or --ctrl-url\n"
  "and --data-url, or --live alone: the relay on this machine) the traces are\n"
  "streamed to ringtrace-relayd instead, authenticated with the relay's secret\n"
  "(docs/relay.md). With --shm-path the programs' buffers are files of DIR, which\n"
  "outlive a crash of the daemon or of the programs: 'ringtrace recover DIR -o OUT'\n"
  "then writes what they hold (docs/recovery.md).",
  "name", ARG_STR, 0, 1, false, LONG_MS, {
	{ "output", 'o', ARG_PATH, "output", NULL, "DIR", "trace output directory" },
	{ "snapshot", 0, ARG_SET, "snapshot", "1", NULL, "snapshot (flight recorder) session" },
	{ "force", 0, ARG_SET, "force", "1", NULL,
	  "use DIR even if not empty: the traces it holds are removed" },
	{ "set-url", 'U', ARG_STR, "set-url", NULL, "URL",
	  "stream to the relay at net://HOST[:CTRL[:DATA]] (ports 5342, 5343)" },
	{ "ctrl-url", 'C', ARG_STR, "ctrl-url", NULL, "URL",
	  "the relay's control port, tcp://HOST[:PORT] (with --data-url)" },
	{ "data-url", 'D', ARG_STR, "data-url", NULL, "URL",
	  "the relay's data port, tcp://HOST[:PORT] (with --ctrl-url)" },
	{ "live", 0, ARG_OPTNUM, "live", "", "[=US]",
	  "a live session: the relay serves it to live viewers; US: the live timer in\n"
	  "                                   microseconds (default 1000000)" },
	{ "shm-path", 0, ARG_PATH, "shm-path", NULL, "DIR",
	  "keep the buffers in files under DIR (created 0700), for ringtrace recover" },
} },
{ "destroy", "stop and destroy a session", "ringtrace destroy [SESSION | -a]",
  "Stop the session if it is active (the trace is complete on disk afterwards), then\n"
  "forget it. Without SESSION, the current session.",
  "session", ARG_STR, 0, 1, false, LONG_MS, {
	{ "all", 'a', ARG_SET, "all", "1", NULL, "destroy every session" },
} },
{ "start", "start tracing", "ringtrace start [SESSION]",
  "Start tracing in the session (default: the current one): programs already running\n"
  "and programs started later record the enabled events.",
  "session", ARG_STR, 0, 1, false, LONG_MS, { { NULL, 0, 0, NULL, NULL, NULL, NULL } } },
{ "stop", "stop tracing", "ringtrace stop [SESSION]",
  "Stop tracing; returns once everything recorded before is written.",
  "session", ARG_STR, 0, 1, false, LONG_MS, { { NULL, 0, 0, NULL, NULL, NULL, NULL } } },
{ "set-session", "set the current session", "ringtrace set-session SESSION",
  "Make SESSION the one commands use when -s is omitted.",
  "session", ARG_STR, 1, 1, false, SHORT_MS, { { NULL, 0, 0, NULL, NULL, NULL, NULL } } },
{ "list", "list sessions, a session's setup, or programs' events",
  "ringtrace list [SESSION] | ringtrace list -u | ringtrace list -k [--syscall]",
  "Without argument: every session. With SESSION: its channels, attributes, contexts,\n"
  "event rules and tracked processes. With -u: the events of the registered programs\n"
  "(pid, process name, event, log level). With -k: the kernel's tracepoints, or with\n"
  "--syscall its system calls (root, or write access to tracefs; no daemon needed).",
  "session", ARG_STR, 0, 1, true, SHORT_MS, {
	{ "userspace", 'u', ARG_SET, "events", "1", NULL, "list the events of running programs" },
	{ "kernel", 'k', ARG_SET, "kernel", "1", NULL, "list the kernel's tracepoints" },
	{ "syscall", 0, ARG_SET, "syscall", "1", NULL, "with -k: list the system calls" },
} },
{ "status", "show a session and its statistics", "ringtrace status [SESSION]",
  "Per channel: buffer usage, events recorded (while the session runs, what the\n"
  "buffers hold is written first, so the count is current), events and sub-buffers\n"
  "lost, corrupt packets dropped (damaged by a program), bytes written; for the\n"
  "kernel channel, its ftrace buffers, events written and lost, the buffers' usage\n"
  "(the bytes of events they hold now) and bytes written; write errors; then the\n"
  "session's setup as 'list SESSION' prints it.",
  "session", ARG_STR, 0, 1, true, SHORT_MS, { OPT_S } },
{ "enable-channel", "create (or re-enable) a channel",
  "ringtrace enable-channel (-u | -k) NAME [-s SESSION] [OPTIONS]",
  "Create channel NAME in the session (before its first start). Naming an existing\n"
  "channel without options re-enables it. Sizes accept k, M, G suffixes; timers are\n"
  "in microseconds. Defaults: discard mode (overwrite in snapshot sessions), 512k\n"
  "sub-buffers, 4 of them, no switch timer, read timer 100000 us, per-user buffers.\n"
  "A session has one kernel channel (-k): ftrace's buffer of --subbuf-size times\n"
  "--num-subbuf bytes per CPU (default 1M x 4), --overwrite or --discard, and\n"
  "--read-timer; the other options are user space's.",
  "channel", ARG_STR, 1, 1, false, SHORT_MS, {
	OPT_U, OPT_K, OPT_S,
	{ "overwrite", 0, ARG_SET, "overwrite", "1", NULL, "overwrite the oldest data when full" },
	{ "discard", 0, ARG_SET, "overwrite", "0", NULL, "drop new events when full (count them)" },
	{ "subbuf-size", 0, ARG_SIZE, "subbuf-size", NULL, "SIZE",
	  "sub-buffer size: a power of two from 4k to 1G" },
	{ "num-subbuf", 0, ARG_NUM, "num-subbuf", NULL, "N",
	  "sub-buffers per CPU: a power of two from 2 to 65536" },
	{ "switch-timer", 0, ARG_NUM, "switch-timer-us", NULL, "US",
	  "flush partly filled sub-buffers every US microseconds" },
	{ "read-timer", 0, ARG_NUM, "read-timer-us", NULL, "US", "consumer polling period" },
	{ "tracefile-size", 0, ARG_SIZE, "tracefile-size", NULL, "SIZE",
	  "start a new stream file past SIZE bytes" },
	{ "tracefile-count", 0, ARG_NUM, "tracefile-count", NULL, "N",
	  "keep at most N files per stream (the oldest are removed)" },
	{ "buffers-uid", 0, ARG_SET, "buffers", "uid", NULL,
	  "one buffer set per user, shared by its programs (default)" },
	{ "buffers-pid", 0, ARG_SET, "buffers", "pid", NULL, "one buffer set per program" },
} },
{ "enable-event", "enable an event rule",
  "ringtrace enable-event -u [-s SESSION] [-c CHANNEL] (PATTERN[,PATTERN...] | -a)\n"
  "       [--exclude NAME[,NAME...]] [--loglevel LEVEL | --loglevel-only LEVEL]\n"
  "       [--filter EXPR]\n"
  "       ringtrace enable-event -k [--syscall] [-s SESSION] [-c CHANNEL]\n"
  "       (NAME[,NAME...] | -a) [--filter EXPR]\n"
  "       ringtrace enable-event -k --userspace-probe=PROBE [-s SESSION] [-c CHANNEL] NAME\n"
  "       [--filter EXPR]",
  "Record the events whose 'provider:event' name matches a PATTERN (a glob), except\n"
  "those matching an exclusion, at the given log level: --loglevel LEVEL means LEVEL\n"
  "or more severe, --loglevel-only exactly LEVEL. Levels: EMERG ALERT CRIT ERR\n"
  "WARNING NOTICE INFO DEBUG_SYSTEM ... DEBUG_LINE DEBUG (optionally TRACE_...), or\n"
  "0-14. The rule applies to running programs and to those started later. Without\n"
  "-c, channel0 (created with the defaults when missing).\n"
  "With -k: the kernel's tracepoints whose 'system:event' or 'event' name matches a\n"
  "NAME (a glob; see 'ringtrace list -k'), or with --syscall the system calls whose\n"
  "name matches (entry and exit); -a: every tracepoint and every system call (with\n"
  "--syscall: every system call). Kernel rules are fixed at the session's first\n"
  "start.\n"
  "--userspace-probe=PROBE: event NAME at each hit of a uprobe in any binary:\n"
  "elf:PATH:FUNCTION (its entry, with its first integer arguments),\n"
  "elf:PATH:FUNCTION%return (its return, with the value), sdt:PATH:PROVIDER:NAME\n"
  "(an SDT probe, with its arguments); a --filter tests the fields it captures.\n"
  "--filter EXPR: only the events for which EXPR (LTTng's filter language, see\n"
  "ringtrace-filter(7)) is true: payload fields, $ctx.NAME, comparisons, globs,\n"
  "&& || !. A user event is judged in the traced program before anything is\n"
  "written (a field it lacks makes EXPR false); a kernel event by ftrace. An event\n"
  "two rules of a channel match is recorded when either's filter passes (or one\n"
  "has none).",
  "pattern", ARG_STR, 0, 64, false, SHORT_MS, {
	OPT_U, OPT_K, OPT_S, OPT_C,
	{ "all", 'a', ARG_SET, "all", "1", NULL, "every event" },
	{ "syscall", 0, ARG_SET, "syscall", "1", NULL, "kernel: system calls by name" },
	{ "userspace-probe", 0, ARG_STR, "userspace-probe", NULL, "PROBE",
	  "kernel: a uprobe, elf:PATH:FUNC[%return] or sdt:PATH:PROVIDER:NAME" },
	{ "filter", 'f', ARG_STR, "filter", NULL, "EXPR", "record only events for which EXPR holds" },
	{ "exclude", 'x', ARG_STR, "exclude", NULL, "NAME[,NAME]", "globs to leave out" },
	{ "loglevel", 0, ARG_LOGLEVEL, "loglevel", NULL, "LEVEL", "LEVEL or more severe" },
	{ "loglevel-only", 0, ARG_LOGLEVEL, "loglevel-only", NULL, "LEVEL", "exactly LEVEL" },
} },
{ "disable-event", "disable event rules",
  "ringtrace disable-event (-u | -k [--syscall]) [-s SESSION] [-c CHANNEL]\n"
  "       (PATTERN[,PATTERN...] | -a)",
  "Disable the rules of the channel whose pattern is exactly PATTERN (or all of them\n"
  "with -a). 'enable-event' with the same rule enables it again. With -k, the\n"
  "kernel tracepoint rules (with --syscall, the system call rules), before the\n"
  "session's first start.",
  "pattern", ARG_STR, 0, 64, false, SHORT_MS, {
	OPT_U, OPT_K, OPT_S, OPT_C,
	{ "all", 'a', ARG_SET, "all", "1", NULL, "every rule of the channel" },
	{ "syscall", 0, ARG_SET, "syscall", "1", NULL, "kernel: the system call rules" },
} },
{ "add-context", "add context fields to events",
  "ringtrace add-context (-u | -k) -t TYPE [-t TYPE...] [-s SESSION] [-c CHANNEL]",
  "Write TYPE in every event of the channel (default: every channel of the session),\n"
  "before the session's first start. Types: vpid vtid procname cpu_id ip prio\n"
  "hostname. Kernel types (-k): tid (always there) pid procname prio.",
  NULL, ARG_STR, 0, 0, false, SHORT_MS, {
	OPT_U, OPT_K, OPT_S,
	{ "channel", 'c', ARG_STR, "channel", NULL, "CHANNEL", "only this channel" },
	{ "type", 't', ARG_STR, "type", NULL, "TYPE", "context type (repeatable)" },
} },
{ "track", "record only some processes",
  "ringtrace track -u (--pid PID[,PID...] | --all) [-s SESSION]",
  "A session records every process until 'track --pid' restricts it to the listed\n"
  "ones; 'track --all' goes back to every process. The kernel domain records the\n"
  "processes tracked at the session's first start, with the threads and children\n"
  "they start (ftrace's set_event_pid); -u and -k name the same list.",
  NULL, ARG_STR, 0, 0, false, SHORT_MS, {
	OPT_U, OPT_K, OPT_S,
	{ "pid", 'p', ARG_STR, "pid", NULL, "PID[,PID]", "process ids" },
	{ "all", 'a', ARG_SET, "all", "1", NULL, "every process" },
} },
{ "untrack", "stop recording some processes",
  "ringtrace untrack -u (--pid PID[,PID...] | --all) [-s SESSION]",
  "Remove processes from the tracked list; --all tracks none (then 'track --pid').",
  NULL, ARG_STR, 0, 0, false, SHORT_MS, {
	OPT_U, OPT_K, OPT_S,
	{ "pid", 'p', ARG_STR, "pid", NULL, "PID[,PID]", "process ids" },
	{ "all", 'a', ARG_SET, "all", "1", NULL, "every process" },
} },
{ "snapshot", "write a snapshot of a snapshot session",
  "ringtrace snapshot record [-s SESSION] [-o DIR] [--max-size SIZE]",
  "Write the current content of every buffer of the snapshot session as a complete CTF\n"
  "trace in a new directory under DIR (default: the session's output), at most SIZE\n"
  "bytes in all, shared by its traces, the kernel's included (newest data kept). Tracing\n"
  "goes on. The kernel's buffers go to its kernel/ (what they recorded since the\n"
  "previous snapshot, then a state dump).",
  NULL, ARG_STR, 0, 0, false, LONG_MS, {
	OPT_S,
	{ "output", 'o', ARG_PATH, "output", NULL, "DIR", "where the snapshot goes" },
	{ "max-size", 'm', ARG_SIZE, "max-size", NULL, "SIZE", "size limit (k/M/G)" },
} },
{ "rotate", "archive the current trace chunk of a session",
  "ringtrace rotate [SESSION]",
  "Archive the session's current trace chunk while it keeps recording (LTTng's session\n"
  "rotation): every stream ends its packet there, what was recorded before is a\n"
  "complete trace in OUTPUT/archives/BEGIN-END-INDEX, readable alone, and the session\n"
  "goes on in the next chunk. Prints the archive's path. Any time the session is\n"
  "active, once after it stopped; not for snapshot sessions. See docs/rotation.md.",
  "session", ARG_STR, 0, 1, false, LONG_MS, { { NULL, 0, 0, NULL, NULL, NULL, NULL } } },
{ "enable-rotation", "rotate a session automatically",
  "ringtrace enable-rotation (--timer=PERIOD | --size=SIZE) [-s SESSION]",
  "Rotate the session every PERIOD (microseconds, or with a unit: ms s m h) and/or\n"
  "each time its current trace chunk holds SIZE bytes written (k, M, G), checked\n"
  "every 100 ms while it is active. 'list' and 'status' show the schedule; 'save'\n"
  "keeps it.",
  NULL, ARG_STR, 0, 0, false, SHORT_MS, {
	OPT_S,
	{ "timer", 0, ARG_USEC, "timer-us", NULL, "PERIOD", "rotate every PERIOD" },
	{ "size", 0, ARG_SIZE, "size", NULL, "SIZE", "rotate when the chunk holds SIZE bytes" },
} },
{ "disable-rotation", "stop rotating a session automatically",
  "ringtrace disable-rotation (--timer | --size) [-s SESSION]",
  "Remove the periodic (--timer) and/or size-based (--size) rotation schedule.",
  NULL, ARG_STR, 0, 0, false, SHORT_MS, {
	OPT_S,
	{ "timer", 0, ARG_SET, "timer", "1", NULL, "the periodic schedule" },
	{ "size", 0, ARG_SET, "size", "1", NULL, "the size-based schedule" },
} },
{ "save", "save session configurations", "ringtrace save [SESSION | -a] [-o FILE]",
  "Write the session's configuration (channels, rules, contexts, tracking; see\n"
  "docs/sessions.md) to FILE, or to stdout.",
  "session", ARG_STR, 0, 1, false, SHORT_MS, {
	{ "all", 'a', ARG_SET, "all", "1", NULL, "every session" },
	{ "output", 'o', ARG_LOCAL, "output", NULL, "FILE", "write to FILE" },
} },
{ "load", "create sessions from a saved configuration",
  "ringtrace load FILE [--override-name NAME] [--force]",
  "Check FILE completely, then create its sessions (none when any line is wrong: the\n"
  "error names the line). The last session loaded becomes the current one.",
  "file", ARG_LOCAL, 1, 1, false, LONG_MS, {
	{ "override-name", 0, ARG_STR, "override-name", NULL, "NAME",
	  "name of the (single) session of FILE" },
	{ "force", 0, ARG_SET, "force", "1", NULL,
	  "outputs that are not empty: remove the traces they hold (see create)" },
} },
{ "add-trigger", "add a trigger: a condition and actions (lttng add-trigger's syntax)",
  "ringtrace add-trigger [--name=NAME] [--owner-uid=UID] --condition=CONDTYPE ARGS\n"
  "        --action=ACTTYPE ARGS [--action=ACTTYPE ARGS]...",
  "Add a trigger for your user (root: for UID with --owner-uid): when its condition\n"
  "fires, the daemon runs its actions in order. Conditions: channel-buffer-usage-ge\n"
  "or channel-buffer-usage-le --session=S --channel=C --domain=user|kernel\n"
  "--threshold-ratio=R; session-consumed-size-ge --session=S --threshold-size=SIZE;\n"
  "event-rule-matches --type=user|kernel|syscall[:entry|:exit] [--name=PATTERN]\n"
  "[--filter=EXPR] [--log-level=LEVEL..] [--exclude-name=PATTERN] [--capture=FIELD]\n"
  "(user: evaluated in the traced programs; kernel and syscall: root's daemon).\n"
  "Actions: notify, snapshot-session S [--cluster] (--cluster: on every host of\n"
  "S's relay), stop-session S, start-session S, rotate-session S, each with\n"
  "[--rate-policy=every:N|once-after:N]. See docs/triggers.md.",
  NULL, ARG_STR, 0, 0, false, SHORT_MS, { { NULL, 0, 0, NULL, NULL, NULL, NULL } } },
{ "list-triggers", "list the triggers (yours; root: everyone's)", "ringtrace list-triggers",
  "List the triggers: name, owner, condition, how often it fired, and per action its\n"
  "rate policy and how often it was requested, run and failed.",
  NULL, ARG_STR, 0, 0, true, SHORT_MS, { { NULL, 0, 0, NULL, NULL, NULL, NULL } } },
{ "remove-trigger", "remove a trigger", "ringtrace remove-trigger NAME [--owner-uid UID]",
  "Remove your trigger NAME (root: UID's with --owner-uid).",
  "name", ARG_STR, 1, 1, false, SHORT_MS, {
	{ "owner-uid", 0, ARG_NUM, "owner-uid", NULL, "UID", "the trigger's owner (root)" },
} },
{ "notifications", "print the notifications of triggers as JSON lines",
  "ringtrace notifications [--trigger NAME]...",
  "Subscribe to the notifications of the triggers you may see (or only those named)\n"
  "and print each as one JSON line as it comes, until interrupted or the daemon\n"
  "exits (exit status 1 then). See docs/triggers.md for the fields.",
  NULL, ARG_STR, 0, 0, true, SHORT_MS, {
	{ "trigger", 't', ARG_STR, "trigger", NULL, "NAME", "this trigger (repeatable)" },
} },
};

const unsigned ctl_nr_cmds = sizeof(ctl_cmds) / sizeof(ctl_cmds[0]);
