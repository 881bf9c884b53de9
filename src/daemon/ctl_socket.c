/*
 * ctl_socket.c - the daemon's place in the run directory (rtp_rundir):
 *   RUNDIR/             created 0700 when missing; must be ours, 0700, not a
 *                       symbolic link (rtp_rundir_open)
 *   RUNDIR/ringtraced.lock  flock'ed for the daemon's lifetime: one daemon
 *                       per run dir, even when two start at once
 *   RUNDIR/ringtraced.sock  the listening socket (bound as ringtraced.sock.new,
 *                       renamed once it listens; a stale one is replaced)
 *   RUNDIR/ringtraced.pid   the daemon's pid, newline-terminated
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "../common/fs_util.h"
#include "ctl.h"

static int lock_fd = -1;
static char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
static char pid_path[PATH_MAX + 32];

/* Another daemon listens on the socket? (It holds the lock too; this
 * catches daemons of older versions or other run-dir setups.) */
static bool socket_answers(void)
{
	char err[PATH_MAX + 256];
	int fd = rtp_connect(200, err, sizeof(err));
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

int ctl_socket_open(char *err, size_t errlen)
{
	char dir[PATH_MAX], lock_path[PATH_MAX + 32];
	int ret = rtp_rundir(dir, sizeof(dir));
	if (ret == 0)
		ret = rtp_socket_path(sock_path, sizeof(sock_path));
	if (ret < 0) {
		snprintf(err, errlen, "run directory path too long");
		return ret;
	}
	int dfd = rtp_rundir_open(true, err, errlen);
	if (dfd < 0)
		return dfd;
	snprintf(lock_path, sizeof(lock_path), "%s/ringtraced.lock", dir);
	snprintf(pid_path, sizeof(pid_path), "%s/ringtraced.pid", dir);
	/* Reopened by each daemon: O_NOFOLLOW, in our checked directory. */
	lock_fd = openat(dfd, "ringtraced.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lock_fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot open %s: %s", lock_path, strerror(-ret));
		goto fail_dir;
	}
	if (flock(lock_fd, LOCK_EX | LOCK_NB) < 0 || socket_answers()) {
		ret = -EADDRINUSE;
		snprintf(err, errlen, "another ringtraced is running for %s", dir);
		goto fail_lock;
	}
	/* Bound under a temporary name and renamed over the socket's name
	 * once it listens (which also replaces a stale socket: we hold the
	 * lock and nobody answers): a client that sees the name can connect.
	 * Bound under its own name, it appears a moment before listen() and
	 * a client then gets ECONNREFUSED. A run directory whose path leaves
	 * no room for the suffix in sun_path binds the name itself. */
	char staged[sizeof(sock_path)];
	bool stage = snprintf(staged, sizeof(staged), "%s.new", sock_path) < (int)sizeof(staged);
	const char *bind_path = stage ? staged : sock_path;
	unlink(bind_path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "socket: %s", strerror(-ret));
		goto fail_lock;
	}
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	memcpy(sa.sun_path, bind_path, strlen(bind_path) + 1);
	mode_t old = umask(0077);
	int b = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (b < 0 || listen(fd, 128) < 0 || (stage && rename(staged, sock_path) < 0)) {
		ret = -errno;
		snprintf(err, errlen, "cannot listen on %s: %s", sock_path, strerror(-ret));
		if (b == 0)
			unlink(bind_path);
		goto fail_sock;
	}
	char pid[24];
	int n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	ret = rt_file_write_atomic(dir, "ringtraced.pid", pid, (size_t)n, false, err, errlen);
	if (ret < 0)
		goto fail_bound;
	close(dfd);
	return fd;

fail_bound:
	unlink(sock_path);
fail_sock:
	close(fd);
fail_lock:
	close(lock_fd);
	lock_fd = -1;
fail_dir:
	close(dfd);
	return ret;
}

void ctl_socket_close(int lfd)
{
	unlink(sock_path);
	unlink(pid_path);
	close(lfd);
	close(lock_fd);
	lock_fd = -1;
}
