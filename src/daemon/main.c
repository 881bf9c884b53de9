/*
 * main.c - ringtraced, the session daemon: options, daemonizing, signals,
 * and the life of the control socket around the poll loop (ctl_loop.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <urcu.h>

#include "ctl.h"
#include "../common/warn.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ringtraced [--foreground | --daemonize]\n"
		"\n"
		"The ringtrace session daemon: it keeps the tracing sessions of one user,\n"
		"hands buffers to traced programs and writes their traces. The `ringtrace`\n"
		"command starts it when needed; there is no need to start it by hand.\n"
		"\n"
		"  -f, --foreground  stay in the foreground, log to stderr (the default)\n"
		"  -d, --daemonize   detach; return once the control socket accepts\n"
		"                    connections (exit status 1 if it could not start)\n"
		"  -h, --help        this help\n"
		"  -V, --version     print the version\n"
		"\n"
		"The control socket is RUNDIR/ringtraced.sock, RUNDIR being\n"
		"$RINGTRACE_RUNDIR, else /run/ringtrace for root, else\n"
		"$XDG_RUNTIME_DIR/ringtrace, else /tmp/ringtrace-UID. Only the same user\n"
		"(and root) may use it. SIGTERM or SIGINT: stop every session, write what\n"
		"is buffered and exit 0.\n");
}

/* Detach: the parent waits on a pipe for the child's start status. Returns
 * in the child with the pipe's write end (-1 in foreground mode). */
static int daemonize(void)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		rt_warn("pipe: %s", strerror(errno));
		exit(1);
	}
	pid_t pid = fork();
	if (pid < 0) {
		rt_warn("fork: %s", strerror(errno));
		exit(1);
	}
	if (pid > 0) {
		close(p[1]);
		int status = 1;
		ssize_t n;
		do
			n = read(p[0], &status, sizeof(status));
		while (n < 0 && errno == EINTR);
		exit(n == (ssize_t)sizeof(status) && status == 0 ? 0 : 1);
	}
	close(p[0]);
	setsid();
	return p[1];
}

static void detach_stdio(int report_fd)
{
	int status = 0;
	ssize_t n = write(report_fd, &status, sizeof(status));
	(void)n;
	close(report_fd);
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	bool logged = ctl_log_open() == 0;
	if (null >= 0) {
		dup2(null, 0);
		if (!logged) {
			dup2(null, 1);
			dup2(null, 2);
		}
		close(null);
	}
	if (chdir("/") < 0)
		return;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "daemonize", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	bool detach = false;
	int c;
	rt_warn_program("ringtraced");
	while ((c = getopt_long(argc, argv, "fdhV", opts, NULL)) != -1) {
		switch (c) {
		case 'f': detach = false; break;
		case 'd': detach = true; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("ringtraced %s\n", RINGTRACE_VERSION); return 0;
		default:
			fprintf(stderr, "(see 'ringtraced --help')\n");
			return 2;
		}
	}
	if (optind < argc) {
		rt_warn("unexpected argument '%s'", argv[optind]);
		return 2;
	}
	int report_fd = detach ? daemonize() : -1;
	/* The registry's hash tables are liburcu's: the main thread, their
	 * only user, is a registered RCU reader. */
	rcu_register_thread();

	/* SIGTERM/SIGINT arrive through a signalfd; threads created later
	 * inherit the blocked mask, so the loop is the only one to see them. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	int ret = 1;
	int sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sigfd < 0) {
		rt_warn("signalfd: %s", strerror(errno));
		goto out;
	}
	char err[CTL_ERRLEN];
	int lfd = ctl_socket_open(err, sizeof(err));
	if (lfd < 0) {
		rt_warn("%s", err);
		goto out_sig;
	}
	/* The ftrace instances of a ringtraced that was killed (kill -9)
	 * would record for ever: remove them (the run dir's lock is ours, so
	 * no other daemon of this user runs). Nothing to do without access. */
	if (dp_kernel_access(err, sizeof(err)) == 0) {
		int n = dp_kernel_remove_stale();
		if (n > 0)
			rt_warn("removed %d stale ftrace instance%s", n,
				n == 1 ? "" : "s");
	}
	if (rtd_loop_add(lfd, ctl_conn_accept, NULL) < 0) {
		rt_warn("out of memory");
		goto out_sock;
	}
	if ((ret = ctl_trigger_timer_init()) < 0) {
		rt_warn("cannot create the triggers' timer: %s", strerror(-ret));
		ret = 1;
		goto out_sock;
	}
	if (report_fd >= 0)
		detach_stdio(report_fd);
	report_fd = -1;
	ret = ctl_loop_run(sigfd) < 0 ? 1 : 0;

	pthread_mutex_lock(&rtd_lock);
	ctl_conn_close_all();
	while (rtd_sessions) {
		char derr[CTL_ERRLEN];
		ctl_session_destroy(rtd_sessions, derr, sizeof(derr));
	}
	dp_shutdown();
	ctl_io_fini();
	ctl_triggers_fini();
	ctl_trigger_timer_fini();
	ctl_trigger_ring_fini();
	ctl_rotation_fini();
	ctl_cluster_fini();
	pthread_mutex_unlock(&rtd_lock);
	ctl_loop_fini();
out_sock:
	ctl_socket_close(lfd);
out_sig:
	close(sigfd);
out:
	if (report_fd >= 0)
		close(report_fd);	/* the parent reads no status: exit 1 */
	rcu_unregister_thread();
	return ret;
}
