/*
 * record.c - `ringtrace record [OPTIONS] -- CMD [ARGS]`: run CMD (linked
 * with libringtrace) with tracing on. Through ringtraced when one runs
 * (ctl_record.c: a hidden session writes the same layout), else in
 * embedded mode: the library's consumer thread writes the trace. This
 * process checks the options, prepares the directory, forwards signals,
 * prints the summary on stderr and exits with CMD's status.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/context.h"
#include "../kernel/kernel.h"
#include "../ctf/ctf_metadata.h"
#include "../ctf/ctf_walk.h"
#include "../common/config_parse.h"
#include "../common/fs_util.h"
#include "../common/hex.h"
#include "cli.h"
#include "record.h"

static void record_usage(FILE *f)
{
	fprintf(f,
		"usage: ringtrace record [OPTIONS] -- CMD [ARGS...]\n"
		"\n"
		"Run CMD with tracing on; CMD must be linked with libringtrace\n"
		"(or traced through --preload).\n"
		"The trace is written as CTF to DIR, and a summary is printed on\n"
		"stderr when CMD ends. CMD's exit status is passed through.\n"
		"\n"
		"  -o, --output DIR        trace directory (default: a new directory\n"
		"                          under ./ringtrace-traces/); must not exist\n"
		"                          or be empty\n"
		"      --overwrite         flight-recorder mode: when the buffers are\n"
		"                          full, the oldest data is overwritten (the\n"
		"                          default discards new events and counts them)\n"
		"      --subbuf-size SIZE  sub-buffer size, a power of two >= 4k\n"
		"                          (default 256k)\n"
		"      --num-subbuf N      sub-buffers per CPU, a power of two >= 2\n"
		"                          (default 4)\n"
		"      --switch-timer MS   flush partly filled sub-buffers every MS ms\n"
		"      --read-timer MS     consumer polling period (default 10)\n"
		"  -t, --context TYPE      record context TYPE with each event (repeatable,\n"
		"                          comma lists; vpid vtid procname cpu_id ip prio\n"
		"                          hostname; 'none': no context). Default:\n"
		"                          vpid,vtid,procname (process id, thread id\n"
		"                          and thread name)\n"
		"  -e, --event PATTERN     record only events matching the glob on\n"
		"                          'provider:event' (repeatable)\n"
		"      --loglevel LEVEL    record only events of LEVEL or more severe\n"
		"                          (EMERG ... INFO ... DEBUG)\n"
		"      --clock CLOCK       tsc or monotonic (default: tsc when usable;\n"
		"                          embedded mode only: the daemon picks its clock)\n"
		"      --no-inherit        trace CMD only (default: CMD's whole process\n"
		"                          tree: fork children and the programs they\n"
		"                          exec that are linked with libringtrace)\n"
		"      --embedded          record in embedded mode even when ringtraced\n"
		"                          runs (default: through the daemon if one answers)\n"
		"  -k, --kernel NAME       also record these kernel tracepoints (globs,\n"
		"                          comma lists, repeatable; 'all': every one) of\n"
		"                          CMD's process tree (root; embedded mode):\n"
		"                          DIR/kernel, and CMD's events in\n"
		"                          DIR/ust/uid/UID/64-bit\n"
		"      --syscall NAME      also record these system calls (globs, comma\n"
		"                          lists, repeatable; 'all': every one)\n"
		"      --probe PATH:FUNC   also record each call of FUNC in the binary\n"
		"                          PATH (no ringtrace needed in it): its entry\n"
		"                          as FUNC_entry with the first integer\n"
		"                          arguments, its return as FUNC_return with\n"
		"                          the value (uprobes; comma lists, repeatable;\n"
		"                          also elf:PATH:FUNC[%%return] as FUNC or\n"
		"                          FUNC_return, sdt:PATH:PROVIDER:NAME as\n"
		"                          PROVIDER_NAME; root)\n"
		"      --all-processes     kernel events of every process, not only\n"
		"                          CMD's tree\n"
		"      --kernel-context TYPE  record context TYPE with each kernel event\n"
		"                          (repeatable, comma lists; pid procname prio;\n"
		"                          tid: always)\n"
		"      --shm-path DIR      keep the buffers in files under DIR (created,\n"
		"                          private), where `ringtrace recover` finds what\n"
		"                          a program that died had not written out\n"
		"                          (embedded mode)\n"
		"      --preload HELPERS   run CMD with these LD_PRELOAD helpers (comma\n"
		"                          lists, repeatable): libc (malloc...), pthread\n"
		"                          (mutexes), dl (dlopen), func (functions built\n"
		"                          with -finstrument-functions); CMD then need not\n"
		"                          be linked with libringtrace\n"
		"  -q, --quiet             no summary\n"
		"  -h, --help              this help\n");
}

enum { OPT_OVERWRITE = 256, OPT_SUBBUF_SIZE, OPT_NUM_SUBBUF, OPT_SWITCH_TIMER,
       OPT_READ_TIMER, OPT_LOGLEVEL, OPT_CLOCK, OPT_EMBEDDED, OPT_NO_INHERIT,
       OPT_SYSCALL, OPT_ALL_PROCESSES, OPT_KERNEL_CONTEXT, OPT_PROBE, OPT_SHM_PATH,
       OPT_PRELOAD };

static const struct option record_opts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "overwrite", no_argument, NULL, OPT_OVERWRITE },
	{ "subbuf-size", required_argument, NULL, OPT_SUBBUF_SIZE },
	{ "num-subbuf", required_argument, NULL, OPT_NUM_SUBBUF },
	{ "switch-timer", required_argument, NULL, OPT_SWITCH_TIMER },
	{ "read-timer", required_argument, NULL, OPT_READ_TIMER },
	{ "event", required_argument, NULL, 'e' },
	{ "context", required_argument, NULL, 't' },
	{ "loglevel", required_argument, NULL, OPT_LOGLEVEL },
	{ "clock", required_argument, NULL, OPT_CLOCK },
	{ "embedded", no_argument, NULL, OPT_EMBEDDED },
	{ "no-inherit", no_argument, NULL, OPT_NO_INHERIT },
	{ "kernel", required_argument, NULL, 'k' },
	{ "syscall", required_argument, NULL, OPT_SYSCALL },
	{ "probe", required_argument, NULL, OPT_PROBE },
	{ "preload", required_argument, NULL, OPT_PRELOAD },
	{ "all-processes", no_argument, NULL, OPT_ALL_PROCESSES },
	{ "kernel-context", required_argument, NULL, OPT_KERNEL_CONTEXT },
	{ "shm-path", required_argument, NULL, OPT_SHM_PATH },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static pid_t child = -1;
static bool created_traces_root;	/* ./ringtrace-traces, by this run */

/* Forward signals sent to us (not the terminal's, which reach the whole
 * process group, CMD included) to CMD. */
static void forward_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (child > 0 && si->si_code != SI_KERNEL)
		kill(child, sig);
}

int cli_output_dir(const char *out)
{
	char err[PATH_MAX + 256];
	bool created;
	int fd = rt_dir_open(out, RT_DIR_CREATE, &created, err, sizeof(err));
	if (fd < 0) {
		cli_error("cannot use output directory %s: %s", out, err);
		return fd;
	}
	int ret = created ? 1 : rt_dir_is_empty(fd);
	if (ret == 1 && faccessat(fd, ".", W_OK, AT_EACCESS) < 0)
		ret = -errno;
	close(fd);
	if (ret == 0) {
		cli_error("output directory %s is not empty; not overwriting it", out);
		return -EEXIST;
	}
	if (ret < 0)
		cli_error("cannot use output directory %s: %s", out, strerror(-ret));
	return ret < 0 ? ret : 0;
}

/* Create the trace directory (never reusing one that holds anything). */
static int prepare_dir(const char *want, const char *cmd, char *out, size_t len)
{
	if (want) {
		if (snprintf(out, len, "%s", want) >= (int)len)
			return -ENAMETOOLONG;
		return cli_output_dir(out);
	}
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	const char *base = strrchr(cmd, '/');
	base = base ? base + 1 : cmd;
	char err[PATH_MAX + 256];
	int ret = rt_mkdir_p("ringtrace-traces", err, sizeof(err));
	created_traces_root = ret == 0;
	if (ret < 0 && ret != -EEXIST) {
		cli_error("cannot use ./ringtrace-traces: %s", err);
		return ret;
	}
	for (int n = 0; n < 1000; n++) {
		int w = n ? snprintf(out, len, "ringtrace-traces/%s-%s-%d", base, stamp, n)
			  : snprintf(out, len, "ringtrace-traces/%s-%s", base, stamp);
		if (w >= (int)len)
			return -ENAMETOOLONG;
		if (mkdir(out, RT_DIR_MODE) == 0)
			return 0;
		if (errno != EEXIST) {
			ret = -errno;
			cli_error("cannot create output directory %s: %s", out, strerror(errno));
			return ret;
		}
	}
	cli_error("too many traces named %s-%s", base, stamp);
	return -EEXIST;
}

static int parse_opts(int argc, char **argv, struct record_opts *o)
{
	char err[RT_ERRLEN];
	int c;
	o->subbuf_size = 256 * 1024;
	o->num_subbuf = 4;
	bool have_contexts = false;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:o:e:t:k:qh", record_opts, NULL)) != -1) {
		switch (c) {
		case 'o': o->output = optarg; break;
		case 'q': o->quiet = true; break;
		case 'h': record_usage(stdout); exit(0);
		case OPT_OVERWRITE: o->overwrite = true; break;
		case OPT_SUBBUF_SIZE:
			if (rt_parse_size(optarg, &o->subbuf_size, err) < 0)
				goto bad;
			break;
		case OPT_NUM_SUBBUF:
			if (rt_parse_u32(optarg, &o->num_subbuf, err) < 0)
				goto bad;
			break;
		case OPT_SWITCH_TIMER:
			if (rt_parse_u32(optarg, &o->switch_timer, err) < 0)
				goto bad;
			o->have_switch = true;
			break;
		case OPT_READ_TIMER:
			if (rt_parse_u32(optarg, &o->read_timer, err) < 0)
				goto bad;
			if (o->read_timer == 0 || o->read_timer > 60000) {
				snprintf(err, sizeof(err), "read timer must be 1 to 60000 ms");
				goto bad;
			}
			o->have_read = true;
			break;
		case 'e': {
			size_t l = strlen(o->events);
			if (strchr(optarg, ',') ||
			    snprintf(o->events + l, sizeof(o->events) - l, "%s%s",
				     l ? "," : "", optarg) >= (int)(sizeof(o->events) - l)) {
				snprintf(err, sizeof(err), "bad or too many event patterns at '%s'", optarg);
				goto bad;
			}
			break;
		}
		case 't': {
			size_t l = strlen(o->contexts);
			uint8_t ctx[RT_CTX_COUNT];
			uint32_t nr;
			have_contexts = true;
			if (rt_parse_contexts(optarg, ctx, &nr, err) < 0)
				goto bad;
			if (!nr) {	/* "none" */
				o->contexts[0] = '\0';
				break;
			}
			if (snprintf(o->contexts + l, sizeof(o->contexts) - l, "%s%s",
				     l ? "," : "", optarg) >=
				    (int)(sizeof(o->contexts) - l) ||
			    rt_parse_contexts(o->contexts, ctx, &nr, err) < 0)
				goto bad;
			break;
		}
		case OPT_LOGLEVEL:
			if (rt_parse_loglevel(optarg, &o->loglevel, err) < 0)
				goto bad;
			o->have_loglevel = true;
			break;
		case OPT_CLOCK:
			if (strcmp(optarg, "tsc") && strcmp(optarg, "monotonic")) {
				snprintf(err, sizeof(err), "clock '%s' is not tsc or monotonic", optarg);
				goto bad;
			}
			o->clock = optarg;
			break;
		case OPT_EMBEDDED:
			o->embedded = true;
			break;
		case OPT_PRELOAD:
			if (record_preload_add(o, optarg, err, sizeof(err)) < 0)
				goto bad;
			break;
		case OPT_NO_INHERIT:
			o->no_inherit = true;
			break;
		case 'k':
		case OPT_PROBE:
		case OPT_SYSCALL: {
			char *list = c == 'k' ? o->kernel_events
					      : c == OPT_PROBE ? o->probes : o->syscalls;
			size_t l = strlen(list);
			if (!*optarg || snprintf(list + l, sizeof(o->kernel_events) - l, "%s%s",
						 l ? "," : "", optarg) >=
						(int)(sizeof(o->kernel_events) - l)) {
				snprintf(err, sizeof(err), "bad or too many kernel event patterns at "
					 "'%s'", optarg);
				goto bad;
			}
			o->kernel = true;
			break;
		}
		case OPT_ALL_PROCESSES:
			o->all_processes = true;
			break;
		case OPT_SHM_PATH:
			o->shm_path = optarg;
			o->embedded = true;	/* the daemon's sessions: not yet */
			break;
		case OPT_KERNEL_CONTEXT: {
			char list[256], *save = NULL;
			snprintf(list, sizeof(list), "%s", optarg);
			const char *t = strtok_r(list, ",", &save);
			if (!t) {
				snprintf(err, sizeof(err), "--kernel-context needs a type");
				goto bad;
			}
			for (; t; t = strtok_r(NULL, ",", &save)) {
				int bit = rtk_context_by_name(t);
				if (bit < 0) {
					snprintf(err, sizeof(err), "unknown kernel context '%s' (tid, "
						 "pid, procname, prio)", t);
					goto bad;
				}
				o->kernel_contexts |= (unsigned)bit;
			}
			o->have_kernel_contexts = true;
			break;
		}
		default:
			cli_bad_option(c, argv);
			return -EINVAL;
		}
	}
	if (rt_check_subbuf(o->subbuf_size, o->num_subbuf, err) < 0)
		goto bad;
	if (o->all_processes && !o->kernel) {
		snprintf(err, sizeof(err), "--all-processes goes with -k or --syscall");
		goto bad;
	}
	if (o->have_kernel_contexts && !o->kernel) {
		snprintf(err, sizeof(err), "--kernel-context goes with -k or --syscall");
		goto bad;
	}
	if (!have_contexts)
		snprintf(o->contexts, sizeof(o->contexts), "%s", RECORD_DEFAULT_CONTEXTS);
	/* The helpers' addresses (callers, functions, loaded objects) are
	 * resolved with the state dump: record it too (rule.h). */
	if (o->preload[0]) {
		size_t l = strlen(o->events);
		if (snprintf(o->events + l, sizeof(o->events) - l, "%s%s",
			     l ? "," : "*,", RECORD_PRELOAD_STATEDUMP) >=
		    (int)(sizeof(o->events) - l)) {
			snprintf(err, sizeof(err), "too many event patterns with --preload");
			goto bad;
		}
	}
	if (optind >= argc) {
		cli_usage_error("no command to run: ringtrace record [OPTIONS] -- CMD [ARGS]");
		return -EINVAL;
	}
	return optind;
bad:
	cli_usage_error("%s", err);
	return -EINVAL;
}

static void set_child_env(const struct record_opts *o, const char *dir)
{
	char v[64];
	setenv("RINGTRACE_OUTPUT", dir, 1);
	snprintf(v, sizeof(v), "%llu", (unsigned long long)o->subbuf_size);
	setenv("RINGTRACE_SUBBUF_SIZE", v, 1);
	snprintf(v, sizeof(v), "%u", o->num_subbuf);
	setenv("RINGTRACE_NUM_SUBBUF", v, 1);
	setenv("RINGTRACE_OVERWRITE", o->overwrite ? "1" : "0", 1);
	if (o->have_switch) {
		snprintf(v, sizeof(v), "%u", o->switch_timer);
		setenv("RINGTRACE_SWITCH_TIMER_MS", v, 1);
	}
	if (o->have_read) {
		snprintf(v, sizeof(v), "%u", o->read_timer);
		setenv("RINGTRACE_READ_TIMER_MS", v, 1);
	}
	if (o->events[0])
		setenv("RINGTRACE_EVENTS", o->events, 1);
	if (o->have_loglevel) {
		snprintf(v, sizeof(v), "%d", o->loglevel);
		setenv("RINGTRACE_LOGLEVEL", v, 1);
	}
	if (o->clock)
		setenv("RINGTRACE_CLOCK", o->clock, 1);
	/* Every traced program of CMD's tree joins the one trace, even those
	 * not descended from the first one (a shell running two); the kernel
	 * trace's clock names the same uuid (record_kernel.c), so that
	 * babeltrace2 merges the two. */
	char hex[33];
	if (!o->no_inherit || o->kernel) {
		rt_hex_encode(o->trace_uuid, sizeof(o->trace_uuid), hex);
		setenv("RINGTRACE_TRACE_UUID", hex, 1);
	}
	setenv("RINGTRACE_CONTEXTS", o->contexts[0] ? o->contexts : "none", 1);
	if (o->shm_path)
		setenv("RINGTRACE_SHM_PATH", o->shm_abs, 1);
}

/* --shm-path: the directory created (private) or checked now, so that a
 * bad one is our error, not the program's; its absolute path (the
 * program may change directory). Returns 0 or -errno (message printed). */
static int prepare_shm_path(struct record_opts *o)
{
	char err[PATH_MAX + 256];
	int fd = rt_dir_open(o->shm_path, RT_DIR_CREATE | RT_DIR_PRIVATE, NULL, err, sizeof(err));
	if (fd < 0) {
		cli_error("cannot use --shm-path %s: %s", o->shm_path, err);
		return fd;
	}
	close(fd);
	if (!realpath(o->shm_path, o->shm_abs)) {
		int e = errno;
		cli_error("cannot resolve %s: %s", o->shm_path, strerror(e));
		return -e;
	}
	return 0;
}

pid_t record_spawn(char **cmd, const struct record_opts *o, const char *embedded_dir,
		   int done_fd, const int *hold, int *exec_fd)
{
	/* exec failures come back through a close-on-exec pipe. */
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		int e = errno;
		cli_error("pipe: %s", strerror(e));
		return -e;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		cli_error("fork: %s", strerror(e));
		close(pfd[0]);
		close(pfd[1]);
		return -e;
	}
	if (pid == 0) {
		close(pfd[0]);
		if (hold) {
			/* Our copy of the write end goes first: if the parent
			 * dies, read sees EOF instead of waiting forever, and
			 * CMD is not run at all. */
			char go;
			ssize_t n;
			close(hold[1]);
			do
				n = read(hold[0], &go, 1);
			while (n < 0 && errno == EINTR);
			if (n != 1)
				_exit(127);
			close(hold[0]);
		}
		if (embedded_dir) {
			set_child_env(o, embedded_dir);
			if (done_fd >= 0 && fcntl(done_fd, F_SETFD, 0) == 0) {
				char v[16];
				snprintf(v, sizeof(v), "%d", done_fd);
				setenv("RINGTRACE_DONE_FD", v, 1);
			}
		} else {
			unsetenv("RINGTRACE_OUTPUT");
			/* A session waits for CMD: on a loaded machine its
			 * registration may take more than the 50 ms default. */
			setenv("RINGTRACE_DAEMON_TIMEOUT_MS", "1000", 0);
		}
		if (o->no_inherit)
			setenv("RINGTRACE_NO_INHERIT", "1", 1);
		else
			unsetenv("RINGTRACE_NO_INHERIT");
		/* (Fails only without memory: reported as exec's error.) */
		int e = -record_preload_env(o);
		if (!e) {
			execvp(cmd[0], cmd);
			e = errno;
		}
		ssize_t n = write(pfd[1], &e, sizeof(e));
		(void)n;
		_exit(127);
	}
	close(pfd[1]);
	*exec_fd = pfd[0];
	return pid;
}

int record_wait(pid_t pid, int exec_fd, int *status)
{
	child = pid;
	struct sigaction sa = { .sa_sigaction = forward_signal, .sa_flags = SA_SIGINFO | SA_RESTART };
	sigemptyset(&sa.sa_mask);
	static const int fwd[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	for (size_t i = 0; i < sizeof(fwd) / sizeof(fwd[0]); i++)
		sigaction(fwd[i], &sa, NULL);

	int exec_err = 0;
	ssize_t n;
	do
		n = read(exec_fd, &exec_err, sizeof(exec_err));
	while (n < 0 && errno == EINTR);
	close(exec_fd);

	while (waitpid(pid, status, 0) < 0) {
		if (errno != EINTR) {
			int e = errno;
			cli_error("waitpid: %s", strerror(e));
			return -e;
		}
	}
	child = -1;
	return n == (ssize_t)sizeof(exec_err) ? exec_err : 0;
}

/* The last line the library wrote on the error pipe (RINGTRACE_ERROR_FD),
 * into msg; false when it wrote nothing. */
static bool last_error_line(int fd, char *msg, size_t len)
{
	char buf[8192];
	size_t have = 0;
	ssize_t n;
	while ((n = read(fd, buf + have, sizeof(buf) - 1 - have)) > 0 ||
	       (n < 0 && errno == EINTR)) {
		if (n > 0)
			have += (size_t)n;
		if (have == sizeof(buf) - 1) {
			/* Keep the tail: the final report comes last. */
			memmove(buf, buf + have / 2, have - have / 2);
			have -= have / 2;
		}
	}
	while (have && buf[have - 1] == '\n')
		have--;
	if (!have)
		return false;
	buf[have] = '\0';
	const char *last = strrchr(buf, '\n');
	last = last ? last + 1 : buf;
	size_t k = strlen(last) < len - 1 ? strlen(last) : len - 1;
	memcpy(msg, last, k);
	msg[k] = '\0';
	return true;
}

/* Embedded mode, the user-space trace in user_dir (the kernel's, with -k,
 * in dir/kernel): *lost tells whether CMD's library started tracing but
 * its final flush did not run (RINGTRACE_DONE_FD: more 's' marks than
 * 'd' marks with CMD's pid; the rest of the tree may still run). The
 * library reports write errors on another pipe (RINGTRACE_ERROR_FD): its
 * last line goes to incomplete_msg ("" when none). */
static int record_embedded(const struct record_opts *o, char **cmd, const char *dir,
			   const char *user_dir, int *status, bool *lost, char *incomplete_msg, size_t len)
{
	int exec_fd, done[2], efd[2], hold[2] = { -1, -1 };
	if (o->kernel && pipe2(hold, O_CLOEXEC) < 0) {
		int e = errno;
		cli_error("pipe: %s", strerror(e));
		return -e;
	}
	if (pipe2(done, O_CLOEXEC) < 0) {
		int e = errno;
		cli_error("pipe: %s", strerror(e));
		return -e;
	}
	if (pipe2(efd, O_NONBLOCK) < 0) {
		int e = errno;
		cli_error("pipe: %s", strerror(e));
		close(done[0]);
		close(done[1]);
		return -e;
	}
	fcntl(efd[0], F_SETFD, FD_CLOEXEC);
	char v[16];
	snprintf(v, sizeof(v), "%d", efd[1]);
	setenv("RINGTRACE_ERROR_FD", v, 1);
	pid_t pid = record_spawn(cmd, o, user_dir, done[1], o->kernel ? hold : NULL, &exec_fd);
	unsetenv("RINGTRACE_ERROR_FD");
	close(done[1]);
	close(efd[1]);
	if (hold[0] >= 0)
		close(hold[0]);
	if (pid < 0) {
		close(done[0]);
		close(efd[0]);
		if (hold[1] >= 0)
			close(hold[1]);
		return pid;
	}
	/* The kernel instance records CMD's tree from its exec on: CMD waits
	 * on `hold` until the instance runs (EOF: it exits 127 unrun). */
	struct record_kernel *k = NULL;
	int kret = 0;
	if (o->kernel) {
		kret = record_kernel_start(&k, o, pid, dir);
		if (kret == 0 && write(hold[1], "g", 1) != 1)
			kret = -errno;
		close(hold[1]);
	}
	int ret = record_wait(pid, exec_fd, status);
	if (o->kernel) {
		int r = record_kernel_finish(k);
		kret = kret ? kret : r;
	}
	if (kret < 0 && ret == 0)
		ret = kret;
	if (!last_error_line(efd[0], incomplete_msg, len))
		incomplete_msg[0] = '\0';
	close(efd[0]);
	/* Non-blocking: the program's fork children may still hold the
	 * write end; the byte, if any, was written before it exited. */
	int balance = 0;
	char m[5 * 64];
	ssize_t n = 0;
	if (fcntl(done[0], F_SETFL, O_NONBLOCK) == 0) {
		while ((n = read(done[0], m, sizeof(m))) > 0) {
			/* 5-byte marks, each written at once (pipe atomicity). */
			for (ssize_t i = 0; i + 5 <= n; i += 5) {
				int32_t who;
				memcpy(&who, m + i + 1, sizeof(who));
				if (who == (int32_t)pid)
					balance += m[i] == 's' ? 1 : m[i] == 'd' ? -1 : 0;
			}
		}
	}
	*lost = balance > 0;
	close(done[0]);
	return ret;
}

/*
 * With -k, DIR is a collection of two traces laid out as LTTng's sessions
 * are, so that `babeltrace2 DIR` reads both (it does not look for traces
 * below a directory that is one): CMD's tree's events in
 * DIR/ust/uid/UID/BITS-bit (LTTng's default, per-user buffers, which
 * also holds the events of several processes in one trace, as the
 * embedded mode's trace does; the daemon writes per-user channels there)
 * and the kernel's in DIR/kernel. Without -k, DIR is the user-space trace
 * itself, as before. Writes the user-space trace's directory into out
 * and creates it. Returns 0 or -errno (message printed).
 */
static int user_trace_dir(const struct record_opts *o, const char *dir, char *out, size_t len)
{
	int n = o->kernel ? snprintf(out, len, "%s/ust/uid/%u/%u-bit", dir, (unsigned)geteuid(),
				     (unsigned)(sizeof(long) * CHAR_BIT))
			  : snprintf(out, len, "%s", dir);
	if (n < 0 || (size_t)n >= len) {
		cli_error("output directory %s: name too long", dir);
		return -ENAMETOOLONG;
	}
	if (!o->kernel)
		return 0;
	char err[PATH_MAX + 256];
	int ret = rt_mkdir_p(out, err, sizeof(err));
	if (ret < 0 && ret != -EEXIST) {
		cli_error("cannot create %s: %s", out, err);
		return ret;
	}
	return 0;
}

/* Remove the trace directory `dir` that nothing was written to (and
 * `user_dir` below it, with the directories between them, when -k made
 * them), and ./ringtrace-traces when this run created it and it is empty
 * now. */
static void remove_empty_output(const char *dir, const char *user_dir)
{
	char p[PATH_MAX];
	size_t top = strlen(dir);
	snprintf(p, sizeof(p), "%s", user_dir);
	for (char *slash; strlen(p) > top && (slash = strrchr(p, '/')); *slash = '\0')
		rmdir(p);
	rmdir(dir);
	if (created_traces_root)
		rmdir("ringtrace-traces");
}

/* Embedded mode: CMD ended without the library's final flush, maybe while
 * its consumer thread was writing a packet. Its own stream files
 * (CHANNEL_CPU, without the -SLOT of the other processes of the tree,
 * which may still be writing theirs) are cut back to their last whole
 * packet, so that readers take what was written before (a torn packet at
 * the end made babeltrace2 and view refuse the whole trace). */
static void cut_torn_streams(const char *dir)
{
	char why[512];
	int dfd = rt_dir_open(dir, 0, NULL, why, sizeof(why));
	if (dfd < 0)
		return;
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || !strcmp(e->d_name, "metadata") ||
		    strchr(e->d_name, '-'))
			continue;
		int fd = openat(dfd, e->d_name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		struct stat st;
		uint64_t cut = 0;
		int ret = fd < 0 ? -errno : fstat(fd, &st) < 0 ? -errno
			: !S_ISREG(st.st_mode) ? 0 : ctf_stream_cut_torn(fd, &cut);
		if (ret < 0)
			cli_error("cannot check %s/%s for a torn packet: %s", dir, e->d_name,
				  strerror(-ret));
		else if (cut)
			cli_error("%s/%s: cut off %llu bytes of a packet being written when the "
				  "program ended", dir, e->d_name, (unsigned long long)cut);
		if (fd >= 0)
			close(fd);
	}
	closedir(d);
}

/* Embedded mode: say what a program that ended without the library's
 * final flush (killed by a signal the library does not catch, _exit)
 * lost. */
static void report_lost(const struct record_opts *o, const char *cmd, int status)
{
	char what[96];
	if (WIFSIGNALED(status))
		snprintf(what, sizeof(what), "was killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(what, sizeof(what), "ended without stopping the trace (_exit?)");
	if (o->shm_path) {
		cli_error("'%s' %s: the events still in its buffers are kept in %s: "
			  "'ringtrace recover %s -o DIR' writes them out", cmd, what, o->shm_abs,
			  o->shm_abs);
		return;
	}
	cli_error("'%s' %s: in embedded mode, the events still in its buffers (up to "
		  "%u x %llu bytes per CPU) were lost; the trace keeps what was written "
		  "before. Through ringtraced (daemon mode) they are kept.", cmd, what,
		  o->num_subbuf, (unsigned long long)o->subbuf_size);
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o = { 0 };
	int first = parse_opts(argc, argv, &o);
	if (first < 0)
		return CLI_EXIT_USAGE;
	char **cmd = argv + first;
	ctf_uuid_generate(o.trace_uuid);
	if (o.shm_path && prepare_shm_path(&o) < 0)
		return CLI_EXIT_FAILURE;

	char dir[PATH_MAX];
	if (prepare_dir(o.output, cmd[0], dir, sizeof(dir)) < 0)
		return CLI_EXIT_FAILURE;
	char abs_dir[PATH_MAX];
	if (!realpath(dir, abs_dir)) {
		cli_error("cannot resolve %s: %s", dir, strerror(errno));
		return CLI_EXIT_FAILURE;
	}

	char user_dir[PATH_MAX];
	if (user_trace_dir(&o, abs_dir, user_dir, sizeof(user_dir)) < 0) {
		remove_empty_output(abs_dir, abs_dir);
		return CLI_EXIT_FAILURE;
	}

	int status = 0, ret = -EAGAIN;
	bool lost = false;
	char incomplete[1024] = "";
	if (!o.embedded && !o.kernel) {
		int exec_err = 0;
		bool bad = false;
		ret = record_via_daemon(&o, cmd, abs_dir, &status, &exec_err, &bad);
		if (ret == 0 && exec_err)
			ret = exec_err;
		if (bad)
			snprintf(incomplete, sizeof(incomplete), "see the message above");
	}
	if (ret == -EAGAIN)
		ret = record_embedded(&o, cmd, abs_dir, user_dir, &status, &lost, incomplete,
				      sizeof(incomplete));
	if (ret < 0) {
		remove_empty_output(abs_dir, user_dir);
		return CLI_EXIT_FAILURE;
	}
	if (ret > 0) {
		cli_error("cannot run '%s': %s", cmd[0], strerror(ret));
		remove_empty_output(abs_dir, user_dir);
		return 127;
	}

	/* SIGINT, SIGTERM and SIGHUP: the library's handler flushed before
	 * the signal took its course (no 'd' on that path). */
	int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	if (lost && sig != SIGINT && sig != SIGTERM && sig != SIGHUP) {
		report_lost(&o, cmd[0], status);
		cut_torn_streams(user_dir);
	} else
		lost = false;
	char meta[PATH_MAX + 16];
	snprintf(meta, sizeof(meta), "%s/metadata", user_dir);
	bool user_trace = access(meta, F_OK) == 0;
	if (!user_trace && o.kernel && !lost &&
	    !(WIFEXITED(status) && WEXITSTATUS(status) == 127)) {
		/* A program without ringtrace's library: the kernel's events
		 * of its run are the trace. */
		remove_empty_output(abs_dir, user_dir);
		if (!o.quiet) {
			fprintf(stderr, "ringtrace: '%s' recorded no user-space events (it is not "
				"linked with libringtrace): the trace holds the kernel's events\n",
				cmd[0]);
			cli_print_summary(stderr, dir, 10, true);
		}
	} else if (!user_trace) {
		if (lost)
			cli_error("no trace was written in %s (it ended before the library "
				  "wrote the metadata)", dir);
		else if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
			cli_error("'%s' exited with status 127 before it wrote a trace: it could "
				  "not start (see the loader's or the shell's message above, e.g. "
				  "a shared library it needs is missing)", cmd[0]);
		else
			cli_error("'%s' wrote no trace in %s: is it linked with libringtrace "
				  "(pkg-config --libs ringtrace)?", cmd[0], dir);
		remove_empty_output(abs_dir, user_dir);
	} else if (!o.quiet) {
		cli_print_summary(stderr, dir, 10, true);
	}

	if (incomplete[0])
		cli_error("the trace in %s is incomplete: %s", dir, incomplete);
	if (sig) {
		signal(sig, SIG_DFL);
		kill(getpid(), sig);
		return 128 + sig;
	}
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : CLI_EXIT_FAILURE;
	/* CMD's own failure first; else the trace's. */
	return !code && incomplete[0] ? CLI_EXIT_FAILURE : code;
}
