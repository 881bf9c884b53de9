/*
 * fs_util.h - creating directories and files safely where other local
 * users may be hostile (docs/security.md), shared by the library, the
 * command and the daemon. Nothing here is for the fast path.
 *
 * Directories are walked component by component with openat() relative
 * to the directory fd of the previous component, each opened with
 * O_NOFOLLOW | O_DIRECTORY and checked with fstat() once open, so what is
 * checked is what is used, whatever is renamed meanwhile:
 *  - a symbolic link before the last component is followed only when
 *    owned by us (the effective uid) or root (the kernel's
 *    fs.protected_symlinks rule), as another user could not have planted
 *    it; the last component must be a real directory;
 *  - every component must be owned by us or root, and the last one by us
 *    and not writable by group or others (RT_DIR_PRIVATE: no group or
 *    other permission at all), so that nobody else can add or replace
 *    entries where we create files;
 *  - RT_DIR_SHARED: no owner or mode check (only the rule on links), for
 *    directories where we only create one new file (O_EXCL) and rename
 *    it: the user's choice of /tmp or of another user's directory.
 * New directories get RT_DIR_MODE (RT_DIR_PRIVATE: 0700) and new files
 * RT_FILE_MODE; the umask can only remove permissions from these.
 * Files are created with O_CREAT | O_EXCL | O_NOFOLLOW relative to the
 * checked directory fd: a planted file or symbolic link makes the
 * creation fail instead of being written through.
 *
 * Errors: negative errno; functions taking `err` also write a message
 * naming the path and what is wrong into it (NUL-terminated, truncated to
 * errlen).
 *
 * Concurrency: no shared state; any thread. umask is never changed.
 */
#ifndef RINGTRACE_FS_UTIL_H
#define RINGTRACE_FS_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define RT_DIR_MODE 0750	/* trace directories */
#define RT_FILE_MODE 0640	/* trace files and outputs */

enum rt_dir_flags {
	RT_DIR_CREATE = 1,	/* create missing components (mkdir -p) */
	RT_DIR_PRIVATE = 2,	/* last component: mode & 077 == 0 (run dir) */
	RT_DIR_SHARED = 4,	/* no owner or mode check (see above) */
};

/*
 * Open the directory `path` (absolute, or relative to the working
 * directory) under the rules above. *created (may be NULL) tells whether
 * the last component was created by this call. Returns a directory fd
 * (O_RDONLY | O_DIRECTORY | O_CLOEXEC) or -ENOENT (missing, without
 * RT_DIR_CREATE), -ENOTDIR (a component is not a directory), -ELOOP (a
 * symbolic link that is not allowed, or too many), -EPERM (owned by
 * another user, or writable by others), -ENAMETOOLONG, -errno of mkdir or
 * open (-EACCES, -EROFS, ...).
 */
int rt_dir_open(const char *path, unsigned flags, bool *created, char *err, size_t errlen);

/* mkdir -p `dir` under the rules above (rt_dir_open with RT_DIR_CREATE).
 * Returns 0 if the last component was created, -EEXIST if it existed
 * (and passed the checks), or rt_dir_open's errors. */
int rt_mkdir_p(const char *dir, char *err, size_t errlen);

/* Whether the directory open as `dirfd` holds no entry but . and ..
 * Returns 1 (empty), 0, or -errno. */
int rt_dir_is_empty(int dirfd);

/*
 * Remove the CTF traces under the directory `dirfd` (`create --force`): in
 * every directory holding a `metadata` file, at most `depth` levels down,
 * every file and symbolic link (removed, never followed) and
 * subdirectory, then the directories left empty by that. Directories not
 * owned by us are left alone, and so is everything outside traces.
 * Returns the number of traces removed, or -errno (-ENOTEMPTY: a file of
 * a trace could not be removed).
 */
int rt_remove_traces(int dirfd, int depth);

/*
 * Create the new file `name` in the directory `dirfd` for writing
 * (O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, RT_FILE_MODE).
 * With `replace`, an existing entry of that name (a file or a symbolic
 * link, which is not followed) is removed first: for files that are ours
 * to rewrite. Returns an fd or -EEXIST (exists, without `replace`),
 * -EISDIR, -errno.
 */
int rt_file_create_at(int dirfd, const char *name, bool replace);

/* rt_dir_open(dir, RT_DIR_CREATE) then rt_file_create_at(name):
 * returns an fd, or -errno with a message in err. */
int rt_file_create(const char *dir, const char *name, bool replace, char *err,
		   size_t errlen);

/* Remove the file `name` of the directory `dir` (checked as above; a
 * symbolic link is removed, not followed). Returns 0 or -errno. */
int rt_file_remove(const char *dir, const char *name);

/*
 * Write `name` in the checked directory `dir` (created if missing) with
 * `len` bytes of `data`, atomically: the data go to a new temporary file
 * beside it (O_EXCL), which is then renamed over `name`. With `is_new`,
 * an existing `name` is an error (-EEXIST) and left alone. Readers see
 * the old or the new content, never a part. Returns 0 or -errno with a
 * message in err; the temporary file never stays behind.
 */
int rt_file_write_atomic(const char *dir, const char *name, const void *data, size_t len,
			 bool is_new, char *err, size_t errlen);

/* Append `len` bytes to the existing regular file `name` of the checked
 * directory `dir` (O_APPEND | O_NOFOLLOW: never through a symbolic link),
 * in whole writes. Returns 0 or -errno (-ENOENT: no such file, -EINVAL:
 * not a regular file). */
int rt_file_append(const char *dir, const char *name, const void *data, size_t len);
/* The same file opened for appending (O_APPEND, close-on-exec): its fd,
 * or -errno as rt_file_append. */
int rt_file_open_append(const char *dir, const char *name);

/*
 * An output file written by a command (`export -o`, `report -o`, `save
 * -o`): its content goes to a new temporary file beside the target
 * (created O_EXCL in the target's directory, walked with RT_DIR_SHARED)
 * and reaches the target's name only at rt_out_commit, by rename. A
 * failed command calls rt_out_abort, which removes only the temporary
 * file: the target, if any, is never touched. A target that exists and
 * is not a regular file (a device such as /dev/null, a directory, a
 * symbolic link, a FIFO) is refused at rt_out_open.
 */
struct rt_out {
	FILE *f;		/* write here, until commit or abort */
	int dirfd;
	char *path;		/* the target, as given */
	const char *name;	/* its name in dirfd (in path) */
	char tmp[64];		/* the temporary file's name in dirfd */
};

/* Sets out->f (RT_FILE_MODE, close on exec). Returns 0 or -errno with a
 * message in err: -EINVAL when the target is not a regular file,
 * rt_dir_open's errors for its directory, -errno of the creation. */
int rt_out_open(struct rt_out *out, const char *path, char *err, size_t errlen);
/* Flush and close out->f, then rename the temporary file over the
 * target. Returns 0 or -errno of the writes or the rename, with a message
 * in err; on error the temporary file is removed. */
int rt_out_commit(struct rt_out *out, char *err, size_t errlen);
/* Close out->f and remove the temporary file; the target is left as it
 * was. */
void rt_out_abort(struct rt_out *out);

/* Write all of buf (retrying short writes and EINTR). Returns 0 or
 * -errno. */
int rt_write_all(int fd, const void *buf, size_t len);

#endif /* RINGTRACE_FS_UTIL_H */
