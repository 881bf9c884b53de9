/*
 * rundir.c - where the daemon listens, and whom the two ends trust: the
 * run directory's location and checks, and the peer check of a
 * connection's other end (proto.h, docs/security.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../common/fs_util.h"
#include "proto.h"

int rtp_rundir(char *buf, size_t len)
{
	const char *env = getenv("RINGTRACE_RUNDIR");
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n;
	if (env && *env)
		n = snprintf(buf, len, "%s", env);
	else if (geteuid() == 0)
		n = snprintf(buf, len, "/run/ringtrace");
	else if (xdg && *xdg)
		n = snprintf(buf, len, "%s/ringtrace", xdg);
	else
		n = snprintf(buf, len, "/tmp/ringtrace-%u", (unsigned)geteuid());
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int rtp_socket_path(char *buf, size_t len)
{
	char dir[4096];
	if (rtp_rundir(dir, sizeof(dir)) < 0)
		return -ENAMETOOLONG;
	int n = snprintf(buf, len, "%s/ringtraced.sock", dir);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int rtp_rundir_open(bool create, char *err, size_t errlen)
{
	char dir[PATH_MAX], why[PATH_MAX + 128];
	if (rtp_rundir(dir, sizeof(dir)) < 0) {
		snprintf(err, errlen, "run directory path too long");
		return -ENAMETOOLONG;
	}
	int fd = rt_dir_open(dir, RT_DIR_PRIVATE | (create ? RT_DIR_CREATE : 0), NULL, why,
			     sizeof(why));
	if (fd == -ENOENT && !create)
		err[0] = '\0';	/* no daemon yet: not an error of trust */
	else if (fd < 0)
		snprintf(err, errlen, "unsafe run directory: %s; another user could "
			 "impersonate the session daemon: remove it, or make it yours with mode 0700",
			 why);
	return fd;
}

int rtp_peer_check(int fd, char *err, size_t errlen)
{
	struct ucred peer;
	socklen_t len = sizeof(peer);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot tell who serves the daemon's socket: %s", strerror(e));
		return -e;
	}
	if (peer.uid != geteuid() && peer.uid != 0) {
		char path[PATH_MAX];
		if (rtp_socket_path(path, sizeof(path)) < 0)
			snprintf(path, sizeof(path), "the daemon's socket");
		snprintf(err, errlen, "%s is served by uid %u (pid %d), not by you (uid %u) or "
			 "root: refusing to talk to it", path, (unsigned)peer.uid, (int)peer.pid,
			 (unsigned)geteuid());
		return -EPERM;
	}
	return 0;
}
