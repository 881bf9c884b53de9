/*
 * ctl_client.c - talking to ringtraced: connect (starting the daemon on
 * demand), send one request, wait for its reply with a bounded time, and
 * turn failures into messages and exit codes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../proto/proto.h"
#include "cli.h"

#define CONNECT_TIMEOUT_MS 1000
#define START_WAIT_MS 5000

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Run `ringtraced --daemonize`: $RINGTRACED, else next to this program,
 * else from PATH. It returns once the socket listens (or it failed). */
static void start_daemon(void)
{
	char self[PATH_MAX], next_to[PATH_MAX + 16];
	const char *env = getenv("RINGTRACED");
	next_to[0] = '\0';
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		snprintf(next_to, sizeof(next_to), "%s/ringtraced", dirname(self));
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return;
	if (pid == 0) {
		char *argv[] = { (char *)(uintptr_t)"ringtraced", (char *)(uintptr_t)"--daemonize",
				 NULL };
		if (env && *env)
			execv(env, argv);
		if (next_to[0] && access(next_to, X_OK) == 0)
			execv(next_to, argv);
		execvp("ringtraced", argv);
		_exit(127);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
}

static int no_daemon(int err, bool autostart, const char *why)
{
	char path[PATH_MAX];
	if (rtp_socket_path(path, sizeof(path)) < 0)
		snprintf(path, sizeof(path), "(run directory path too long)");
	if (why[0])
		cli_error("%s", why);
	else if (err == -EACCES || err == -EPERM)
		cli_error("permission denied: cannot connect to the session daemon at %s", path);
	else if (autostart)
		cli_error("cannot start or reach the session daemon (ringtraced) at %s: %s",
			  path, strerror(-err));
	else
		cli_error("no session daemon (nothing listens at %s); commands that change "
			  "something start one", path);
	return CLI_EXIT_FAILURE;
}

/* A connected socket, or an exit code (> 0) with the message printed.
 * A run directory or daemon that is not to be trusted (rtp_connect's
 * message) is refused, never replaced by a daemon of ours. */
static int connect_daemon(bool autostart, int *fdp)
{
	char why[PATH_MAX + 256];
	int fd = rtp_connect(CONNECT_TIMEOUT_MS, why, sizeof(why));
	if (fd >= 0 || !autostart || (fd != -ENOENT && fd != -ECONNREFUSED)) {
		if (fd < 0)
			return no_daemon(fd, autostart, why);
		*fdp = fd;
		return 0;
	}
	start_daemon();
	/* Another command may be starting one at the same time: retry. */
	for (int waited = 0; waited < START_WAIT_MS; waited += 50) {
		fd = rtp_connect(CONNECT_TIMEOUT_MS, why, sizeof(why));
		if (fd >= 0) {
			*fdp = fd;
			return 0;
		}
		if (fd != -ENOENT && fd != -ECONNREFUSED)
			break;
		sleep_ms(50);
	}
	return no_daemon(fd, true, why);
}

int cli_ctl_request(const struct rtp_kv *req, bool autostart, int timeout_ms,
		    struct rtp_msg *reply)
{
	if (req->err) {
		cli_error("request too large or out of memory");
		return CLI_EXIT_FAILURE;
	}
	int r, q;
	for (int attempt = 0;; attempt++) {
		int fd = -1, ret = connect_daemon(autostart, &fd);
		if (ret)
			return ret;
		r = rtp_send(fd, RTP_CTL_REQUEST, 0, req->data, req->len, NULL, 0,
			     timeout_ms);
		/* A refused peer gets an error reply and a close: read it
		 * even when the send failed. */
		q = rtp_recv(fd, reply, NULL, 0, NULL, timeout_ms);
		close(fd);
		/* Closed without a word: a daemon that was dying (killed a
		 * moment ago) accepted us. It answers every request it
		 * handles, so nothing was done: try once more, which starts
		 * a new daemon if need be. */
		if (q != -ECONNRESET || attempt > 0)
			break;
		sleep_ms(100);
	}
	if (q == -ETIMEDOUT || (q < 0 && r == -ETIMEDOUT)) {
		cli_error("ringtraced does not answer (waited %d s)", timeout_ms / 1000);
		return CLI_EXIT_FAILURE;
	}
	if (q < 0 || reply->type != RTP_CTL_REPLY ||
	    rtp_kv_validate(reply->payload, reply->length) < 0) {
		if (q == 0)
			rtp_msg_free(reply);
		cli_error("ringtraced closed the connection or sent a bad reply (%s)",
			  strerror(q < 0 ? -q : EPROTO));
		return CLI_EXIT_FAILURE;
	}
	for (uint32_t pos = 0;;) {
		const char *k, *v;
		size_t kl;
		if (!rtp_kv_next(reply->payload, reply->length, &pos, &k, &kl, &v))
			break;
		if (kl == 7 && !memcmp(k, "warning", 7))
			cli_error("warning: %s", v);
	}
	if (reply->status < 0) {
		const char *e = rtp_kv_get(reply->payload, reply->length, "error");
		cli_error("%s", e ? e : strerror(-reply->status));
		int code = reply->status == -EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
		rtp_msg_free(reply);
		return code;
	}
	return 0;
}

/* Whether `a` is `b` or a directory below it. */
static bool path_within(const char *a, const char *b)
{
	size_t n = strlen(b);
	return !strncmp(a, b, n) && (a[n] == '\0' || a[n] == '/' || (n && b[n - 1] == '/'));
}

bool cli_active_session_at(const char *dir, char *name, size_t len)
{
	char real[PATH_MAX];
	const char *no = getenv("RINGTRACE_NO_DAEMON");
	if ((no && !strcmp(no, "1")) || !realpath(dir, real))
		return false;
	char why[256];
	int fd = rtp_connect(200, why, sizeof(why));
	if (fd < 0)
		return false;	/* quietly: the note is a courtesy */
	struct rtp_kv kv = { 0 };
	struct rtp_msg reply;
	bool found = false;
	rtp_kv_add(&kv, "cmd", "list");
	if (kv.err || rtp_send(fd, RTP_CTL_REQUEST, 0, kv.data, kv.len, NULL, 0, 1000) < 0 ||
	    rtp_recv(fd, &reply, NULL, 0, NULL, 1000) < 0)
		goto out;
	const char *out = reply.type == RTP_CTL_REPLY && reply.status == 0 &&
			  rtp_kv_validate(reply.payload, reply.length) == 0
			  ? rtp_kv_get(reply.payload, reply.length, "out") : NULL;
	/* "  N) NAME [active]..." then "      Trace output: PATH" */
	char session[128] = "";
	bool active = false;
	for (const char *line = out; line && *line && !found;) {
		const char *nl = strchr(line, '\n');
		size_t l = nl ? (size_t)(nl - line) : strlen(line);
		char buf[PATH_MAX + 64];
		snprintf(buf, sizeof(buf), "%.*s", (int)(l < sizeof(buf) ? l : sizeof(buf) - 1), line);
		const char *p = strstr(buf, ") ");
		const char *t = strstr(buf, "Trace output: ");
		if (t) {
			t += strlen("Trace output: ");
			found = active && *t && (path_within(real, t) || path_within(t, real));
		} else if (p && strchr(buf, '[')) {
			snprintf(session, sizeof(session), "%.*s", (int)(strchr(p, '[') - p - 3),
				 p + 2);
			active = strstr(buf, "[active]") != NULL;
		}
		line = nl ? nl + 1 : NULL;
	}
	if (found)
		snprintf(name, len, "%s", session);
	rtp_msg_free(&reply);
out:
	rtp_kv_free(&kv);
	close(fd);
	return found;
}
