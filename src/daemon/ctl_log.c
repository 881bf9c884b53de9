/*
 * ctl_log.c - the daemon's log. A detached daemon (--daemonize, as
 * `ringtrace` starts it on demand) writes what it has to say (write
 * errors of traces, programs it dropped, ...) to RUNDIR/ringtraced.log
 * instead of a terminal it no longer has; `ringtrace status` says where.
 * The file is created 0600 (never through a symbolic link) and appended
 * to; past CTL_LOG_MAX bytes at start, the previous one is kept as
 * ringtraced.log.1 and a new one begins. In the foreground, messages go
 * to the daemon's stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"

#define CTL_LOG_MAX (1u << 20)

static char log_path[PATH_MAX];

int ctl_log_open(void)
{
	char dir[PATH_MAX], old[PATH_MAX + 8];
	int ret = rtp_rundir(dir, sizeof(dir));
	if (ret < 0)
		return ret;
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s/ringtraced.log", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	struct stat st;
	snprintf(old, sizeof(old), "%s.1", path);
	if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > CTL_LOG_MAX &&
	    rename(path, old) < 0)
		return -errno;
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		close(fd);
		return -EPERM;
	}
	if (dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	close(fd);
	setvbuf(stderr, NULL, _IOLBF, 0);
	snprintf(log_path, sizeof(log_path), "%s", path);
	return 0;
}

const char *ctl_log_path(void)
{
	return log_path[0] ? log_path : NULL;
}
