/*
 * fs_util.h - small file-system helpers shared by the library and the
 * command. Not for the fast path.
 */
#ifndef RINGTRACE_FS_UTIL_H
#define RINGTRACE_FS_UTIL_H

#include <stddef.h>

/* mkdir -p with mode 0755. Returns 0, -EEXIST if the last component
 * already existed, or -errno (-ENAMETOOLONG for a path over PATH_MAX). */
int rt_mkdir_p(const char *dir);

/* Write all of buf (retrying short writes and EINTR). Returns 0 or
 * -errno. */
int rt_write_all(int fd, const void *buf, size_t len);

#endif /* RINGTRACE_FS_UTIL_H */
