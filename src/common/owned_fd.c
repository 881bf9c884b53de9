/*
 * owned_fd.c - descriptors checked before use (owned_fd.h).
 */
#define _GNU_SOURCE
#include "owned_fd.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

int rt_owned_fd_take(struct rt_owned_fd *o, int fd)
{
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int ret = -errno;
		close(fd);
		*o = RT_OWNED_FD_NONE;
		return ret;
	}
	*o = (struct rt_owned_fd){ .fd = fd, .dev = st.st_dev, .ino = st.st_ino };
	return 0;
}

int rt_owned_fd_check(const struct rt_owned_fd *o)
{
	struct stat st;
	if (o->fd < 0 || fstat(o->fd, &st) < 0 || st.st_dev != o->dev || st.st_ino != o->ino)
		return -EBADF;
	return st.st_nlink ? 0 : -ENOENT;
}

bool rt_owned_fd_ok(const struct rt_owned_fd *o)
{
	return rt_owned_fd_check(o) != -EBADF;
}

void rt_owned_fd_close(struct rt_owned_fd *o)
{
	if (rt_owned_fd_ok(o))
		close(o->fd);
	o->fd = -1;
}
