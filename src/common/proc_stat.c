/*
 * proc_stat.c - /proc/PID/stat's fields (see proc_stat.h; the file's
 * layout is proc(5)'s: "pid (comm) state ppid pgrp session tty_nr tpgid
 * flags ... priority(18) nice(19) ... processor(39) ...").
 */
#define _GNU_SOURCE
#include "proc_stat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The 1-based number of the fields read after the comm (field 2). */
#define F_STATE 3
#define F_PPID 4
#define F_FLAGS 9
#define F_PRIORITY 18
#define F_PROCESSOR 39

int rt_proc_stat_parse(const char *text, size_t len, struct rt_proc_stat *out)
{
	const char *open = memchr(text, '(', len);
	const char *close = memrchr(text, ')', len);
	if (!open || !close || close < open)
		return -EINVAL;
	size_t n = (size_t)(close - open - 1);
	if (n >= RT_COMM_LEN)
		n = RT_COMM_LEN - 1;
	memcpy(out->comm, open + 1, n);
	out->comm[n] = '\0';
	const char *p = close + 1, *end = text + len;
	int field = 2, seen = 0;
	while (p < end && field < F_PROCESSOR) {
		while (p < end && *p == ' ')
			p++;
		const char *tok = p;
		while (p < end && *p != ' ' && *p != '\n')
			p++;
		if (p == tok)
			break;
		field++;
		char num[32];
		size_t tl = (size_t)(p - tok);
		if (field == F_STATE) {
			if (tl != 1)
				return -EINVAL;
			out->state = *tok;
			seen++;
			continue;
		}
		if (field != F_PPID && field != F_FLAGS && field != F_PRIORITY &&
		    field != F_PROCESSOR)
			continue;
		if (tl >= sizeof(num))
			return -EINVAL;
		memcpy(num, tok, tl);
		num[tl] = '\0';
		char *e;
		errno = 0;
		long long v = strtoll(num, &e, 10);
		if (*e || errno)
			return -EINVAL;
		switch (field) {
		case F_PPID: out->ppid = (int)v; break;
		case F_FLAGS: out->flags = (unsigned long)v; break;
		case F_PRIORITY: out->priority = (int)v; break;
		default: out->processor = (int)v; break;
		}
		seen++;
	}
	return seen == 5 ? 0 : -EINVAL;
}

/* The file `path` (relative to dirfd) into buf, at most len bytes: 0
 * with *n, or -errno of open or read. */
static int read_file(int dirfd, const char *path, char *buf, size_t len, size_t *n)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	ssize_t r;
	*n = 0;
	/* /proc produces the text in one read; loop for the rule's sake. */
	while (*n < len && (r = read(fd, buf + *n, len - *n)) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int ret = -errno;
			close(fd);
			return ret;
		}
		*n += (size_t)r;
	}
	close(fd);
	return 0;
}

int rt_proc_stat_read(int dirfd, const char *path, struct rt_proc_stat *out)
{
	char buf[2048];
	size_t n;
	int ret = read_file(dirfd, path, buf, sizeof(buf), &n);
	return ret < 0 ? ret : rt_proc_stat_parse(buf, n, out);
}

int rt_proc_status_read(int dirfd, const char *path, char *buf, size_t len)
{
	size_t n = 0;
	int ret = len ? read_file(dirfd, path, buf, len - 1, &n) : -EINVAL;
	if (!ret)
		buf[n] = '\0';
	return ret;
}

int rt_proc_status_ids(const char *text, const char *key, int *ids, int max)
{
	size_t klen = strlen(key);
	const char *p = text;
	while (p && (strncmp(p, key, klen) || p[klen] != ':'))
		p = (p = strchr(p, '\n')) ? p + 1 : NULL;
	if (!p)
		return 0;
	p += klen + 1;
	int count = 0;
	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\n' || !*p)
			break;
		char *e;
		errno = 0;
		long v = strtol(p, &e, 10);
		if (e == p || errno || v < 0 || v > 0x7fffffff)
			return -EINVAL;
		if (count < max)
			ids[count] = (int)v;
		count++;
		p = e;
	}
	return count;
}
