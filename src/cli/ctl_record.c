/*
 * ctl_record.c - `ringtrace record` through ringtraced: a hidden session
 * (".record-PID", flat output: DIR/metadata and DIR/channel0_CPU like
 * embedded mode) with one channel, the options mapped onto it (contexts
 * by add-context), tracking
 * only CMD's pid. The channel uses per-user buffers: with only CMD
 * tracked they hold CMD's events alone, and the data plane writes such a
 * trace directly in the session's output (per-pid traces always get a
 * directory of their own). CMD is held on a pipe before
 * exec until the session is started, so it registers with an active
 * session and records from its first event. After CMD exits: stop (which
 * returns once everything is written) and destroy.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../proto/proto.h"
#include "cli.h"
#include "record.h"

#define STEP_TIMEOUT_MS 10000
#define STOP_TIMEOUT_MS 60000
#define RECORD_READ_TIMER_MS 10	/* embedded mode's default */

/* One request; the reply is not needed. Consumes kv. 0 or an exit code. */
static int step(struct rtp_kv *kv, int timeout_ms)
{
	struct rtp_msg m;
	int ret = cli_ctl_request(kv, false, timeout_ms, &m);
	rtp_kv_free(kv);
	if (ret == 0)
		rtp_msg_free(&m);
	return ret;
}

static int simple(const char *cmd, const char *session, int timeout_ms)
{
	struct rtp_kv kv = { 0 };
	rtp_kv_add(&kv, "cmd", cmd);
	rtp_kv_add(&kv, "session", session);
	return step(&kv, timeout_ms);
}

static int create(const char *name, const char *dir)
{
	struct rtp_kv kv = { 0 };
	rtp_kv_add(&kv, "cmd", "create");
	rtp_kv_add(&kv, "name", name);
	rtp_kv_add(&kv, "output", dir);
	rtp_kv_add(&kv, "flat", "1");
	return step(&kv, STEP_TIMEOUT_MS);
}

/* The session's channel and rules. 0 or an exit code. */
static int setup(const struct record_opts *o, const char *name)
{
	struct rtp_kv kv = { 0 };
	int ret;
	rtp_kv_add(&kv, "cmd", "enable-channel");
	rtp_kv_add(&kv, "session", name);
	rtp_kv_add(&kv, "channel", "channel0");
	rtp_kv_add(&kv, "overwrite", o->overwrite ? "1" : "0");
	rtp_kv_addf(&kv, "subbuf-size", "%llu", (unsigned long long)o->subbuf_size);
	rtp_kv_addf(&kv, "num-subbuf", "%u", o->num_subbuf);
	if (o->have_switch)
		rtp_kv_addf(&kv, "switch-timer-us", "%llu", (unsigned long long)o->switch_timer * 1000);
	rtp_kv_addf(&kv, "read-timer-us", "%llu",
		    (unsigned long long)(o->have_read ? o->read_timer : RECORD_READ_TIMER_MS) * 1000);
	rtp_kv_add(&kv, "buffers", "uid");
	if ((ret = step(&kv, STEP_TIMEOUT_MS)) != 0)
		return ret;
	if (o->contexts[0]) {
		rtp_kv_add(&kv, "cmd", "add-context");
		rtp_kv_add(&kv, "session", name);
		rtp_kv_add(&kv, "channel", "channel0");
		rtp_kv_add(&kv, "type", o->contexts);
		if ((ret = step(&kv, STEP_TIMEOUT_MS)) != 0)
			return ret;
	}
	rtp_kv_add(&kv, "cmd", "enable-event");
	rtp_kv_add(&kv, "session", name);
	rtp_kv_add(&kv, "channel", "channel0");
	if (o->events[0])
		rtp_kv_add(&kv, "pattern", o->events);
	else
		rtp_kv_add(&kv, "all", "1");
	if (o->have_loglevel)
		rtp_kv_addf(&kv, "loglevel", "%d", (int)o->loglevel);
	return step(&kv, STEP_TIMEOUT_MS);
}

static int track_and_start(const char *name, pid_t pid, bool tree)
{
	struct rtp_kv kv = { 0 };
	rtp_kv_add(&kv, "cmd", "track");
	rtp_kv_add(&kv, "session", name);
	if (tree) {
		/* Our descendants: CMD, its children, and the orphans among
		 * them, which become ours (PR_SET_CHILD_SUBREAPER). */
		rtp_kv_addf(&kv, "pid", "%d", (int)getpid());
		rtp_kv_add(&kv, "descendants", "1");
	} else {
		rtp_kv_addf(&kv, "pid", "%d", (int)pid);
	}
	int ret = step(&kv, STEP_TIMEOUT_MS);
	return ret ? ret : simple("start", name, STOP_TIMEOUT_MS);
}

static bool daemon_runs(void)
{
	const char *no = getenv("RINGTRACE_NO_DAEMON");
	if (no && !strcmp(no, "1"))
		return false;
	char why[1024];
	int fd = rtp_connect(200, why, sizeof(why));
	if (fd < 0 && why[0])
		fprintf(stderr, "ringtrace: warning: %s; recording without the daemon\n", why);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

int record_via_daemon(const struct record_opts *o, char **cmd, const char *dir,
		      int *status, int *exec_err, bool *incomplete)
{
	/* --clock is honoured in embedded mode only: the daemon picks the
	 * clock of the traces it writes. */
	if (o->clock || !daemon_runs())
		return -EAGAIN;
	char name[64];
	snprintf(name, sizeof(name), ".record-%d", (int)getpid());
	if (create(name, dir) != 0)
		goto fallback;
	if (setup(o, name) != 0)
		goto fallback_destroy;

	int hold[2], exec_fd;
	if (pipe2(hold, O_CLOEXEC) < 0)
		goto fallback_destroy;
	pid_t pid = record_spawn(cmd, o, NULL, -1, hold, &exec_fd);
	close(hold[0]);
	if (pid < 0) {
		close(hold[1]);
		goto fallback_destroy;
	}
	if (!o->no_inherit)
		prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	if (track_and_start(name, pid, !o->no_inherit) != 0) {
		kill(pid, SIGKILL);	/* still held before exec */
		close(hold[1]);
		close(exec_fd);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		goto fallback_destroy;
	}
	ssize_t n = write(hold[1], "g", 1);
	(void)n;
	close(hold[1]);
	int ret = record_wait(pid, exec_fd, status);
	*incomplete = simple("stop", name, STOP_TIMEOUT_MS) != 0;
	simple("destroy", name, STOP_TIMEOUT_MS);
	if (ret < 0)
		return ret;
	*exec_err = ret;
	return 0;

fallback_destroy:
	simple("destroy", name, STEP_TIMEOUT_MS);
fallback:
	cli_error("warning: ringtraced could not record; recording in embedded mode instead");
	return -EAGAIN;
}
