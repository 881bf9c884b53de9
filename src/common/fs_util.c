/*
 * fs_util.c - creating directories and files safely (see fs_util.h).
 */
#define _GNU_SOURCE
#include "fs_util.h"
#include "warn.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_LINKS 40	/* symbolic links followed in one walk (the kernel's) */

/* Check the directory open as fd, `shown` in messages (fs_util.h's
 * rules). Returns 0 or -EPERM. */
static int check_dir(int fd, const char *shown, bool last, unsigned flags, char *err,
		     size_t errlen)
{
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		rt_errf(err, errlen, "cannot examine %s: %s", shown, strerror(e));
		return -e;
	}
	uid_t me = geteuid();
	if (flags & RT_DIR_SHARED)
		return 0;
	if (!last) {
		if (st.st_uid == me || st.st_uid == 0)
			return 0;
		rt_errf(err, errlen, "%s is owned by uid %u, not by you (uid %u) or root", shown,
		    (unsigned)st.st_uid, (unsigned)me);
		return -EPERM;
	}
	if (st.st_uid != me) {
		rt_errf(err, errlen, "%s is owned by uid %u, not by you (uid %u)", shown,
		    (unsigned)st.st_uid, (unsigned)me);
		return -EPERM;
	}
	mode_t bad = (flags & RT_DIR_PRIVATE) ? 077 : 022;
	if (st.st_mode & bad) {
		rt_errf(err, errlen, "%s has mode %04o: it must not be %s by group or others", shown,
		    (unsigned)(st.st_mode & 07777),
		    (flags & RT_DIR_PRIVATE) ? "accessible" : "writable");
		return -EPERM;
	}
	return 0;
}

/* A symbolic link met at `comp` of dirfd, not the last component: may it
 * be followed? Reads its target into `target`. Returns 0 or -errno. */
static int read_link(int dirfd, const char *comp, const char *shown, char *target,
		     size_t tlen, char *err, size_t errlen)
{
	struct stat st;
	if (fstatat(dirfd, comp, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		int e = errno;
		rt_errf(err, errlen, "cannot examine %s: %s", shown, strerror(e));
		return -e;
	}
	if (!S_ISLNK(st.st_mode)) {
		rt_errf(err, errlen, "%s is not a directory", shown);
		return -ENOTDIR;
	}
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		rt_errf(err, errlen, "%s is a symbolic link owned by uid %u, not by you or root",
		    shown, (unsigned)st.st_uid);
		return -ELOOP;
	}
	ssize_t n = readlinkat(dirfd, comp, target, tlen - 1);
	if (n < 0 || (size_t)n >= tlen - 1) {
		int e = n < 0 ? errno : ENAMETOOLONG;
		rt_errf(err, errlen, "cannot read the symbolic link %s: %s", shown, strerror(e));
		return -e;
	}
	target[n] = '\0';
	return 0;
}

int rt_dir_open(const char *path, unsigned flags, bool *created, char *err, size_t errlen)
{
	char rest[PATH_MAX], shown[PATH_MAX], target[PATH_MAX];
	mode_t mode = (flags & RT_DIR_PRIVATE) ? 0700 : RT_DIR_MODE;
	if (created)
		*created = false;
	if (!path || !*path || strlen(path) >= sizeof(rest)) {
		rt_errf(err, errlen, "%s", path && *path ? "path too long" : "empty path");
		return path && *path ? -ENAMETOOLONG : -ENOENT;
	}
	strcpy(rest, path);
	strcpy(shown, path[0] == '/' ? "" : ".");
	int fd = open(path[0] == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		rt_errf(err, errlen, "cannot open %s: %s", path[0] == '/' ? "/" : ".", strerror(e));
		return -e;
	}
	int ret, links = 0;
	bool any = false;
	size_t pos = 0;
	for (;;) {
		while (rest[pos] == '/')
			pos++;
		if (!rest[pos])
			break;
		size_t end = pos;
		while (rest[end] && rest[end] != '/')
			end++;
		size_t next = end;
		while (rest[next] == '/')
			next++;
		bool last = !rest[next];
		char comp[NAME_MAX + 1];
		size_t shown_len = strlen(shown);
		if (end - pos > NAME_MAX ||
		    shown_len + 1 + (end - pos) >= sizeof(shown)) {
			rt_errf(err, errlen, "path too long: %s", path);
			ret = -ENAMETOOLONG;
			goto fail;
		}
		memcpy(comp, rest + pos, end - pos);
		comp[end - pos] = '\0';
		/* "." as the first component of a relative path is shown as
		 * the path's start already. */
		if (!strcmp(shown, "."))
			shown[0] = '\0';
		else
			strcat(shown, "/");
		strcat(shown, comp);

		bool made = false;
		if ((flags & RT_DIR_CREATE) && mkdirat(fd, comp, mode) == 0)
			made = true;
		else if ((flags & RT_DIR_CREATE) && errno != EEXIST) {
			ret = -errno;
			rt_errf(err, errlen, "cannot create directory %s: %s", shown, strerror(-ret));
			goto fail;
		}
		int nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0 && (errno == ELOOP || errno == ENOTDIR)) {
			if (last) {
				struct stat st;
				bool link = fstatat(fd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
					    S_ISLNK(st.st_mode);
				rt_errf(err, errlen, link ? "%s is a symbolic link" : "%s is not a directory",
				    shown);
				ret = link ? -ELOOP : -ENOTDIR;
				goto fail;
			}
			if ((ret = read_link(fd, comp, shown, target, sizeof(target), err,
					     errlen)) < 0)
				goto fail;
			if (++links > MAX_LINKS) {
				rt_errf(err, errlen, "too many symbolic links in %s", path);
				ret = -ELOOP;
				goto fail;
			}
			/* Walk the link's target, then what followed it. */
			size_t tl = strlen(target), rl = strlen(rest + next);
			if (tl + 1 + rl >= sizeof(rest)) {
				rt_errf(err, errlen, "path too long: %s", path);
				ret = -ENAMETOOLONG;
				goto fail;
			}
			memmove(rest + tl + 1, rest + next, rl + 1);
			memcpy(rest, target, tl);
			rest[tl] = '/';
			pos = 0;
			if (target[0] == '/') {
				close(fd);
				fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
				if (fd < 0) {
					ret = -errno;
					rt_errf(err, errlen, "cannot open /: %s", strerror(-ret));
					return ret;
				}
				shown[0] = '\0';
			} else {
				shown[shown_len] = '\0';
			}
			continue;
		}
		if (nfd < 0) {
			ret = -errno;
			if (ret == -ENOENT)
				rt_errf(err, errlen, "%s does not exist", shown);
			else
				rt_errf(err, errlen, "cannot open %s: %s", shown, strerror(-ret));
			goto fail;
		}
		close(fd);
		fd = nfd;
		if ((ret = check_dir(fd, shown, last, flags, err, errlen)) < 0)
			goto fail;
		if (last && created)
			*created = made;
		any = true;
		pos = next;
	}
	if (!any && (ret = check_dir(fd, path, true, flags, err, errlen)) < 0)
		goto fail;
	return fd;

fail:
	close(fd);
	return ret;
}

int rt_mkdir_p(const char *dir, char *err, size_t errlen)
{
	bool created;
	int fd = rt_dir_open(dir, RT_DIR_CREATE, &created, err, errlen);
	if (fd < 0)
		return fd;
	close(fd);
	return created ? 0 : -EEXIST;
}

int rt_dir_is_empty(int dirfd)
{
	/* A descriptor of its own: readdir moves the file offset. */
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		int e = errno;
		close(fd);
		return -e;
	}
	struct dirent *e;
	int empty = 1;
	while (empty && (e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			empty = 0;
	closedir(d);
	return empty;
}

/* rt_remove_traces in the directory dfd; in_trace: dfd is inside a trace
 * (everything goes). Returns the traces removed or -errno. */
static int remove_traces_at(int dfd, int depth, bool in_trace)
{
	struct stat st;
	bool is_trace = !in_trace && fstatat(dfd, "metadata", &st, AT_SYMLINK_NOFOLLOW) == 0;
	in_trace = in_trace || is_trace;
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return -e;
	}
	int removed = 0, ret = 0;
	struct dirent *e;
	while (ret >= 0 && (e = readdir(d)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (!S_ISDIR(st.st_mode)) {
			if (in_trace && unlinkat(dfd, e->d_name, 0) < 0)
				ret = -ENOTEMPTY;
			continue;
		}
		if (depth <= 0 || st.st_uid != geteuid()) {
			if (in_trace)
				ret = -ENOTEMPTY;
			continue;
		}
		int sub = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int r = sub < 0 ? -errno : remove_traces_at(sub, depth - 1, in_trace);
		if (sub >= 0)
			close(sub);
		if (r < 0) {
			ret = r;
			continue;
		}
		removed += r;
		/* Directories of traces, and those that held only traces. */
		if ((in_trace || r > 0) && unlinkat(dfd, e->d_name, AT_REMOVEDIR) < 0 && in_trace)
			ret = -ENOTEMPTY;
	}
	closedir(d);
	return ret < 0 ? ret : removed + is_trace;
}

int rt_remove_traces(int dirfd, int depth)
{
	return remove_traces_at(dirfd, depth, false);
}

/* A file name of one component. */
static bool name_ok(const char *name)
{
	return *name && !strchr(name, '/') && strcmp(name, ".") && strcmp(name, "..");
}

int rt_file_create_at(int dirfd, const char *name, bool replace)
{
	if (!name_ok(name))
		return -EINVAL;
	/* unlinkat removes the entry itself (a symbolic link is not
	 * followed); a directory stays (-EISDIR). */
	if (replace && unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
		return errno == EPERM ? -EISDIR : -errno;
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			RT_FILE_MODE);
	return fd < 0 ? -errno : fd;
}

int rt_file_create(const char *dir, const char *name, bool replace, char *err,
		   size_t errlen)
{
	int dfd = rt_dir_open(dir, RT_DIR_CREATE, NULL, err, errlen);
	if (dfd < 0)
		return dfd;
	int fd = rt_file_create_at(dfd, name, replace);
	if (fd == -EEXIST)
		rt_errf(err, errlen, "%s/%s already exists: not overwriting it", dir, name);
	else if (fd < 0)
		rt_errf(err, errlen, "cannot create %s/%s: %s", dir, name, strerror(-fd));
	close(dfd);
	return fd;
}

int rt_file_remove(const char *dir, const char *name)
{
	if (!name_ok(name))
		return -EINVAL;
	int dfd = rt_dir_open(dir, 0, NULL, NULL, 0);
	if (dfd < 0)
		return dfd;
	int ret = unlinkat(dfd, name, 0) < 0 ? -errno : 0;
	close(dfd);
	return ret;
}

/* Create a new temporary file ".NAME.XXXXXX" (name shortened to fit) in
 * dirfd; its name goes to tmp[64]. Returns an fd or -errno. */
static int temp_create(int dirfd, const char *name, char tmp[64])
{
	static const char chars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	for (int attempt = 0; attempt < 100; attempt++) {
		unsigned char r[6];
		if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
			return -EIO;
		char suffix[7];
		for (int i = 0; i < 6; i++)
			suffix[i] = chars[r[i] % (sizeof(chars) - 1)];
		suffix[6] = '\0';
		snprintf(tmp, 64, ".%.48s.%s", name, suffix);
		int fd = rt_file_create_at(dirfd, tmp, false);
		if (fd != -EEXIST)
			return fd;
	}
	return -EEXIST;
}

int rt_file_write_atomic(const char *dir, const char *name, const void *data, size_t len,
			 bool is_new, char *err, size_t errlen)
{
	if (!name_ok(name)) {
		rt_errf(err, errlen, "bad file name '%s'", name);
		return -EINVAL;
	}
	int dfd = rt_dir_open(dir, RT_DIR_CREATE, NULL, err, errlen);
	if (dfd < 0)
		return dfd;
	char tmp[64];
	int ret, fd = temp_create(dfd, name, tmp);
	if (fd < 0) {
		ret = fd;
		rt_errf(err, errlen, "cannot create a temporary file in %s: %s", dir, strerror(-ret));
		goto out;
	}
	ret = rt_write_all(fd, data, len);
	if (close(fd) < 0 && !ret)
		ret = -errno;
	if (!ret && (is_new ? renameat2(dfd, tmp, dfd, name, RENAME_NOREPLACE)
			    : renameat(dfd, tmp, dfd, name)) < 0)
		ret = -errno;
	if (ret) {
		unlinkat(dfd, tmp, 0);
		if (ret == -EEXIST)
			rt_errf(err, errlen, "%s/%s already exists: not overwriting it", dir, name);
		else
			rt_errf(err, errlen, "cannot write %s/%s: %s", dir, name, strerror(-ret));
	}
out:
	close(dfd);
	return ret;
}

int rt_file_open_append(const char *dir, const char *name)
{
	if (!name_ok(name))
		return -EINVAL;
	int dfd = rt_dir_open(dir, 0, NULL, NULL, 0);
	if (dfd < 0)
		return dfd;
	/* O_NONBLOCK: a FIFO in its place must not block the open. */
	int ret, fd = openat(dfd, name,
			     O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	close(dfd);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0)
		ret = -errno;
	else
		ret = S_ISREG(st.st_mode) ? 0 : -EINVAL;
	if (ret < 0) {
		close(fd);
		return ret;
	}
	return fd;
}

int rt_file_append(const char *dir, const char *name, const void *data, size_t len)
{
	int fd = rt_file_open_append(dir, name);
	if (fd < 0)
		return fd;
	int ret = rt_write_all(fd, data, len);
	if (close(fd) < 0 && !ret)
		ret = -errno;
	return ret;
}

static const char *file_kind(mode_t m)
{
	return S_ISDIR(m) ? "a directory" : S_ISLNK(m) ? "a symbolic link" :
	       S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device" :
	       S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

int rt_out_open(struct rt_out *out, const char *path, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	out->dirfd = -1;
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	if (!name_ok(base)) {
		rt_errf(err, errlen, "%s: not a file name", path);
		return -EINVAL;
	}
	char dir[PATH_MAX];
	size_t dl = slash ? (size_t)(slash - path) : 1;
	if (dl >= sizeof(dir)) {
		rt_errf(err, errlen, "%s: path too long", path);
		return -ENAMETOOLONG;
	}
	if (!slash)
		strcpy(dir, ".");
	else if (dl == 0)
		strcpy(dir, "/");
	else {
		memcpy(dir, path, dl);
		dir[dl] = '\0';
	}
	int ret, fd = -1;
	char why[PATH_MAX + 128];
	out->dirfd = rt_dir_open(dir, RT_DIR_SHARED, NULL, why, sizeof(why));
	if (out->dirfd < 0) {
		rt_errf(err, errlen, "cannot create %s: %s", path, why);
		return out->dirfd;
	}
	struct stat st;
	if (fstatat(out->dirfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode)) {
		rt_errf(err, errlen, "%s is %s, not a regular file: give a file name (or - for the "
		    "standard output)", path, file_kind(st.st_mode));
		ret = -EINVAL;
		goto fail;
	}
	if (!(out->path = strdup(path))) {
		ret = -ENOMEM;
		rt_errf(err, errlen, "out of memory");
		goto fail;
	}
	out->name = out->path + (base - path);
	fd = temp_create(out->dirfd, base, out->tmp);
	if (fd < 0) {
		ret = fd;
		rt_errf(err, errlen, "cannot create a file in %s: %s", dir, strerror(-ret));
		goto fail;
	}
	if (!(out->f = fdopen(fd, "w"))) {
		ret = -errno;
		rt_errf(err, errlen, "cannot write %s: %s", path, strerror(-ret));
		close(fd);
		unlinkat(out->dirfd, out->tmp, 0);
		goto fail;
	}
	return 0;

fail:
	free(out->path);
	out->path = NULL;
	close(out->dirfd);
	out->dirfd = -1;
	return ret;
}

int rt_out_commit(struct rt_out *out, char *err, size_t errlen)
{
	int ret = 0;
	errno = 0;
	if (fflush(out->f) != 0 || ferror(out->f))
		ret = errno ? -errno : -EIO;
	if (fclose(out->f) != 0 && !ret)
		ret = -errno;
	out->f = NULL;
	if (!ret && renameat(out->dirfd, out->tmp, out->dirfd, out->name) < 0)
		ret = -errno;
	if (ret) {
		unlinkat(out->dirfd, out->tmp, 0);
		rt_errf(err, errlen, "cannot write %s: %s", out->path, strerror(-ret));
	}
	close(out->dirfd);
	out->dirfd = -1;
	free(out->path);
	out->path = NULL;
	return ret;
}

void rt_out_abort(struct rt_out *out)
{
	if (out->f)
		fclose(out->f);
	out->f = NULL;
	if (out->dirfd >= 0) {
		unlinkat(out->dirfd, out->tmp, 0);
		close(out->dirfd);
	}
	out->dirfd = -1;
	free(out->path);
	out->path = NULL;
}

int rt_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}
