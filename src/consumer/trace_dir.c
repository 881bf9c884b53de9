/*
 * trace_dir.c - the metadata of an embedded-mode trace, which every
 * traced process of a process tree writes into (each its own stream
 * class and fragment, see trace_dir.h), built by metadata.c.
 */
#define _GNU_SOURCE
#include "trace_dir.h"

#include "../common/array.h"
#include "../common/fs_util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define RT_FRAGMENT_PREFIX ".proc-"
#define RT_FRAGMENT_MAX (64u << 20)	/* bytes of one process's declarations */

int cons_trace_dir_claim(const char *dir, uint32_t first, uint32_t tries, uint32_t *slot)
{
	for (uint32_t k = first; k - first < tries && k < UINT32_MAX; k++) {
		char name[32];
		snprintf(name, sizeof(name), RT_FRAGMENT_PREFIX "%u", k);
		int fd = rt_file_create(dir, name, false, NULL, 0);
		if (fd >= 0) {
			*slot = k;
			return fd;
		}
		if (fd != -EEXIST)
			return fd;
	}
	return -ENOSPC;
}

/* Replace the content of fd with len bytes of data. 0 or -errno. */
static int rewrite_fd(int fd, const char *data, size_t len)
{
	if (ftruncate(fd, 0) < 0)
		return -errno;
	size_t done = 0;
	while (done < len) {
		ssize_t n = pwrite(fd, data + done, len - done, (off_t)done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += (size_t)n;
	}
	return 0;
}

/* Append the content of DIR/name (a fragment) to b. 0 or -errno. */
static int append_file(int dfd, const char *name, struct ctf_buf *b)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	int ret = 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > RT_FRAGMENT_MAX) {
		ret = -EINVAL;
		goto out;
	}
	char *p = malloc((size_t)st.st_size + 1);
	if (!p) {
		ret = -ENOMEM;
		goto out;
	}
	ssize_t n = pread(fd, p, (size_t)st.st_size, 0);
	if (n < 0)
		ret = -errno;
	else if (n > 0)
		ctf_buf_printf(b, "%.*s", (int)n, p);
	free(p);
out:
	close(fd);
	return ret;
}

static int slot_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* Append every process's fragment, by slot, to b. Caller holds the
 * directory's lock. 0 or -errno. */
static int append_fragments(int dfd, struct ctf_buf *b)
{
	int dup_fd = dup(dfd);
	DIR *d = dup_fd < 0 ? NULL : fdopendir(dup_fd);
	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		return -errno;
	}
	uint32_t *slots = NULL;
	size_t n = 0, cap = 0;
	int ret = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		char *end;
		if (strncmp(de->d_name, RT_FRAGMENT_PREFIX, strlen(RT_FRAGMENT_PREFIX)))
			continue;
		const char *num = de->d_name + strlen(RT_FRAGMENT_PREFIX);
		unsigned long k = strtoul(num, &end, 10);
		if (!*num || *end || k >= UINT32_MAX)
			continue;
		if (RT_ARRAY_GROW(slots, cap, n + 1, 64) < 0) {
			ret = -ENOMEM;
			break;
		}
		slots[n++] = (uint32_t)k;
	}
	closedir(d);
	if (n)
		qsort(slots, n, sizeof(slots[0]), slot_cmp);
	for (size_t i = 0; i < n && ret == 0; i++) {
		char name[32];
		snprintf(name, sizeof(name), RT_FRAGMENT_PREFIX "%u", slots[i]);
		ret = append_file(dfd, name, b);
	}
	free(slots);
	return ret;
}

int cons_trace_dir_metadata(const struct cons_trace_desc *t, const struct cons_channel_desc *ch,
			    uint32_t slot, struct rt_owned_fd *fragment, uint64_t *generation)
{
	struct ctf_buf b = { 0 }, frag = { 0 };
	const char *dir = t->dir;
	/* *generation is what the file describes: set only once it is
	 * written, so that a failed write is tried again. */
	uint64_t gen = 0;
	int ret = cons_metadata_build(&frag, t, &ch, 1, CONS_META_STREAMS | CONS_META_EVENTS, 0,
				      NULL, &gen);
	if (!ret)
		ret = cons_metadata_build(&b, t, NULL, 0, CONS_META_HEADER, 0, NULL, NULL);
	if (ret)
		goto out;
	/* This process's declarations go to its fragment, then the metadata
	 * is the header plus every process's fragment; under the directory's
	 * lock so that the last writer's metadata has everyone's latest. */
	int dfd = rt_dir_open(dir, 0, NULL, NULL, 0);
	if (dfd < 0) {
		ret = dfd;
		goto out;
	}
	while (flock(dfd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			ret = -errno;
			goto close_dir;
		}
	}
	if (!rt_owned_fd_ok(fragment)) {
		/* The program closed it under us: made anew (ours to
		 * replace, under the directory's lock). */
		char name[32];
		snprintf(name, sizeof(name), RT_FRAGMENT_PREFIX "%u", slot);
		int fd = rt_file_create(dir, name, true, NULL, 0);
		ret = fd < 0 ? fd : rt_owned_fd_take(fragment, fd);
	}
	if (!ret)
		ret = rewrite_fd(fragment->fd, frag.data, frag.len);
	if (!ret)
		ret = append_fragments(dfd, &b);
	if (!ret)
		ret = b.err;
	if (!ret)
		ret = rt_file_write_atomic(dir, "metadata", b.data, b.len, false, NULL, 0);
	if (!ret)
		*generation = gen;
	flock(dfd, LOCK_UN);
close_dir:
	close(dfd);
out:
	ctf_buf_free(&b);
	ctf_buf_free(&frag);
	return ret;
}
