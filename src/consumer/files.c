/*
 * files.c - the stream-file sink (consumer.h): one file per stream,
 * CHANNEL_STREAM, or with tracefile_size CHANNEL_STREAM_N (N = 0, 1, ...,
 * a new file when the next packet would make the current one larger than
 * tracefile_size; a file always holds at least one packet) of which
 * tracefile_count are kept (the oldest deleted when a new one opens); the
 * channel's file suffix last (embedded mode's other processes: "-K").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include "../common/fs_util.h"
#include "consumer.h"

int cons_files_init(struct cons_files *fs, const char *dir, const struct cons_channel_desc *ch,
		    uint32_t nr)
{
	*fs = (struct cons_files){ .dir = dir, .ch = ch, .nr = nr };
	fs->f = calloc(nr ? nr : 1, sizeof(*fs->f));
	if (!fs->f)
		return -ENOMEM;
	for (uint32_t i = 0; i < nr; i++)
		fs->f[i].fd = RT_OWNED_FD_NONE;
	return 0;
}

void cons_files_close(struct cons_files *fs)
{
	for (uint32_t i = 0; fs->f && i < fs->nr; i++)
		rt_owned_fd_close(&fs->f[i].fd);
}

void cons_files_free(struct cons_files *fs)
{
	cons_files_close(fs);
	free(fs->f);
	fs->f = NULL;
}

static int file_name(char *out, size_t len, const struct cons_channel_desc *ch,
		     uint32_t stream, uint64_t index)
{
	const char *suffix = ch->file_suffix ? ch->file_suffix : "";
	int n = ch->tracefile_size ? snprintf(out, len, "%s_%u_%llu%s", ch->name, stream,
					      (unsigned long long)index, suffix)
				   : snprintf(out, len, "%s_%u%s", ch->name, stream, suffix);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Create the stream's current file: a new file (O_EXCL, no symbolic link
 * followed) in the checked directory (fs_util.h), never another trace's
 * file. */
static int file_open(struct cons_files *fs, uint32_t stream)
{
	struct cons_file *f = &fs->f[stream];
	char name[NAME_MAX + 1];
	int ret = file_name(name, sizeof(name), fs->ch, stream, f->file_index);
	if (ret < 0)
		return ret;
	int fd = rt_file_create(fs->dir, name, false, NULL, 0);
	if (fd < 0)
		return fd;
	f->out.size = 0;
	f->out.torn = false;
	return rt_owned_fd_take(&f->fd, fd);
}

/* Rotation: the next packet does not fit in the current file. */
static int file_rotate(struct cons_files *fs, uint32_t stream)
{
	struct cons_file *f = &fs->f[stream];
	const struct cons_channel_desc *ch = fs->ch;
	rt_owned_fd_close(&f->fd);
	f->file_index++;
	/* LTTng's tracefile_count: keep the `count` newest files. Deleting
	 * the oldest leaves a packet_seq_num gap at the start of the stream,
	 * which readers report as lost packets. */
	while (ch->tracefile_count && f->file_index - f->oldest_index >= ch->tracefile_count) {
		char name[NAME_MAX + 1];
		if (file_name(name, sizeof(name), ch, stream, f->oldest_index) == 0)
			rt_file_remove(fs->dir, name);
		f->oldest_index++;
	}
	return file_open(fs, stream);
}

/* The program closed our descriptor (and may use the number for a file
 * of its own): the stream's file opened by name for one write, its whole
 * packets being what it holds now. Returns the fd or -errno. */
static int open_by_name(struct cons_files *fs, uint32_t stream)
{
	struct cons_file *f = &fs->f[stream];
	char name[NAME_MAX + 1];
	int ret = file_name(name, sizeof(name), fs->ch, stream, f->file_index);
	int fd = ret < 0 ? ret : rt_file_open_append(fs->dir, name);
	struct stat st;
	if (fd >= 0 && fstat(fd, &st) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	if (fd >= 0) {
		f->out.size = (uint64_t)st.st_size;
		f->out.torn = false;
	}
	return fd;
}

static int files_write(void *arg, uint32_t stream, char *data, uint64_t len, uint64_t events)
{
	struct cons_files *fs = arg;
	struct cons_file *f = &fs->f[stream];
	int ret = 0;
	if (f->by_name) {
		/* Through ctf_out like any other write: a failure is cut off
		 * and a header-only packet takes the lost packet's place. */
		int fd = open_by_name(fs, stream);
		if (fd < 0) {
			ctf_out_lose(&f->out, data, events);
			return fd;
		}
		ret = ctf_out_append(&f->out, fd, data, len, events);
		close(fd);
		return ret;
	}
	if (f->fd.fd < 0)
		ret = file_open(fs, stream);
	if (!ret && fs->ch->tracefile_size && f->out.size > 0 &&
	    f->out.size + len > fs->ch->tracefile_size)
		ret = file_rotate(fs, stream);
	if (!ret) {
		ret = rt_owned_fd_check(&f->fd);
		if (ret == -EBADF) {
			f->by_name = true;
			f->fd.fd = -1;
			return files_write(arg, stream, data, len, events);
		}
	}
	if (ret < 0) {
		ctf_out_lose(&f->out, data, events);
		return ret;
	}
	return ctf_out_append(&f->out, f->fd.fd, data, len, events);
}

static void files_lose(void *arg, uint32_t stream, const char *data, uint64_t events)
{
	struct cons_files *fs = arg;
	ctf_out_lose(&fs->f[stream].out, data, events);
}

static void files_lost_events(void *arg, uint32_t stream, uint64_t events)
{
	struct cons_files *fs = arg;
	fs->f[stream].out.lost_events += events;
}

static int files_settle(void *arg, uint32_t stream)
{
	struct cons_files *fs = arg;
	struct cons_file *f = &fs->f[stream];
	if (f->by_name && f->out.tomb) {
		int fd = open_by_name(fs, stream);
		if (fd < 0)
			return fd;
		int ret = ctf_out_settle(&f->out, fd);
		close(fd);
		return ret;
	}
	return f->fd.fd >= 0 && rt_owned_fd_ok(&f->fd) ? ctf_out_settle(&f->out, f->fd.fd) : 0;
}

/* Session rotation: the files of the chunk that ends are complete; the
 * next packet of each stream starts CHANNEL_STREAM (or _0) in `dir`. What
 * ctf_out counts (lost events still to report) goes on. */
static int files_rotate(void *arg, const char *dir)
{
	struct cons_files *fs = arg;
	cons_files_close(fs);
	fs->dir = dir;
	for (uint32_t i = 0; i < fs->nr; i++) {
		struct cons_file *f = &fs->f[i];
		f->by_name = false;
		f->file_index = 0;
		f->oldest_index = 0;
		f->out.size = 0;
		f->out.torn = false;
	}
	return 0;
}

static const struct cons_sink_ops files_ops = {
	.write = files_write,
	.lose = files_lose,
	.lost_events = files_lost_events,
	.settle = files_settle,
	.rotate = files_rotate,
};

void cons_files_sink(struct cons_sink *s, struct cons_files *fs)
{
	*s = (struct cons_sink){ .ops = &files_ops, .arg = fs };
}

/* Copy `len` bytes (fewer if the file is shorter) of the stream file
 * `name` of `from` (an open directory) into a new file of `dir`. */
static int copy_file(int from, const char *name, uint64_t len, const char *dir, char *err,
		     size_t errlen)
{
	int in = openat(from, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return errno == ENOENT ? 0 : -errno;	/* rotated away meanwhile */
	int out = rt_file_create(dir, name, false, err, errlen);
	int ret = out < 0 ? out : 0;
	char buf[65536];
	for (uint64_t off = 0; ret == 0 && off < len;) {
		ssize_t n = pread(in, buf, len - off < sizeof(buf) ? (size_t)(len - off) : sizeof(buf),
				  (off_t)off);
		if (n <= 0) {
			ret = n < 0 ? -errno : 0;
			break;
		}
		ret = rt_write_all(out, buf, (size_t)n);
		off += (uint64_t)n;
	}
	if (ret < 0 && out >= 0)
		snprintf(err, errlen, "cannot copy %s to %s: %s", name, dir, strerror(-ret));
	if (out >= 0)
		close(out);
	close(in);
	return ret;
}

int cons_files_copy(const struct cons_files *fs, const char *dir, char *err, size_t errlen)
{
	int from = rt_dir_open(fs->dir, 0, NULL, err, errlen);
	if (from < 0)
		return from;
	int ret = 0;
	for (uint32_t s = 0; ret == 0 && s < fs->nr; s++) {
		const struct cons_file *f = &fs->f[s];
		for (uint64_t i = f->oldest_index; ret == 0 && i <= f->file_index; i++) {
			char name[NAME_MAX + 1];
			ret = file_name(name, sizeof(name), fs->ch, s, i);
			/* The current file up to its last whole packet. */
			if (ret == 0)
				ret = copy_file(from, name, i == f->file_index ? f->out.size
									: UINT64_MAX, dir, err, errlen);
		}
	}
	close(from);
	return ret;
}
