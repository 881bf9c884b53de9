/*
 * fs_util.h - small file-system helpers shared by the library and the
 * command. Not for the fast path.
 */
#ifndef RINGTRACE_FS_UTIL_H
#define RINGTRACE_FS_UTIL_H

/* mkdir -p with mode 0755. Returns 0, -EEXIST if the last component
 * already existed, or -errno (-ENAMETOOLONG for a path over PATH_MAX). */
int rt_mkdir_p(const char *dir);

#endif /* RINGTRACE_FS_UTIL_H */
