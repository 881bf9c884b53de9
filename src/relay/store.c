/*
 * store.c - the relay's table of sessions and streams, and their files
 * (relay.h): directories, stream files, metadata and CTF indexes, found
 * again after a reconnect or a restart.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/stat.h>

#include "../common/be.h"
#include "../common/fs_util.h"
#include "relay.h"

pthread_mutex_t relay_lock = PTHREAD_MUTEX_INITIALIZER;
struct relay_session *relay_sessions;
struct relay_config relay_cfg;

static uint64_t next_session_id = 1, next_stream_id = 1;	/* relay_lock */
static uint32_t nr_sessions, nr_streams;			/* relay_lock */

struct relay_session *relay_session_find(uint64_t id)
{
	for (struct relay_session *s = relay_sessions; s; s = s->next)
		if (s->id == id)
			return s;
	return NULL;
}

struct relay_stream *relay_stream_find(uint64_t id)
{
	for (struct relay_session *s = relay_sessions; s; s = s->next)
		for (struct relay_stream *st = s->streams; st; st = st->next)
			if (st->id == id)
				return st;
	return NULL;
}

/* OUTPUT/HOST/NAME-YYYYMMDD-HHMMSS (the creation time in the relay's
 * local time zone, as lttng-relayd names them). */
static int session_dir(char *out, size_t len, const char *host, const char *name,
		       uint64_t created)
{
	time_t t = (time_t)created;
	struct tm tm;
	char date[32];
	if (!localtime_r(&t, &tm) || !strftime(date, sizeof(date), "%Y%m%d-%H%M%S", &tm))
		return -EINVAL;
	int n = snprintf(out, len, "%s/%s/%s-%s", relay_cfg.output, host, name, date);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int relay_session_open(const char *host, const char *name, uint64_t created,
		       uint32_t live_delay_us, bool snapshot, struct relay_session **out,
		       char *err, size_t errlen)
{
	char dir[PATH_MAX], why[PATH_MAX + 128];
	int ret;
	if (rnet_check_name(host, RNET_HOST_MAX) < 0 || rnet_check_name(name, RNET_NAME_MAX) < 0) {
		snprintf(err, errlen, "refused session name '%s'", name);
		return -EINVAL;
	}
	ret = session_dir(dir, sizeof(dir), host, name, created);
	if (ret < 0) {
		snprintf(err, errlen, "session directory name too long");
		return ret;
	}
	pthread_mutex_lock(&relay_lock);
	struct relay_session *s;
	for (s = relay_sessions; s; s = s->next)
		if (!strcmp(s->host, host) && !strcmp(s->name, name) && s->created == created)
			break;
	if (!s && nr_sessions >= RELAY_SESSIONS_MAX) {
		snprintf(err, errlen, "the relay holds %u sessions already", RELAY_SESSIONS_MAX);
		ret = -ENOSPC;
		goto out;
	}
	ret = rt_mkdir_p(dir, why, sizeof(why));
	if (ret < 0 && ret != -EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", dir, why);
		goto out;
	}
	ret = 0;
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s) {
			ret = -ENOMEM;
			snprintf(err, errlen, "out of memory");
			goto out;
		}
		s->id = next_session_id++;
		snprintf(s->host, sizeof(s->host), "%s", host);
		snprintf(s->name, sizeof(s->name), "%s", name);
		s->created = created;
		snprintf(s->dir, sizeof(s->dir), "%s", dir);
		struct relay_session **pp = &relay_sessions;
		while (*pp)
			pp = &(*pp)->next;
		*pp = s;
		nr_sessions++;
	}
	s->live_delay_us = live_delay_us;
	s->snapshot = snapshot;
	s->connected = true;
	*out = s;
out:
	pthread_mutex_unlock(&relay_lock);
	return ret;
}

/* A stream that is in no list (any more): its files closed, freed. */
static void stream_free(struct relay_stream *st)
{
	if (st->data_fd >= 0)
		close(st->data_fd);
	if (st->index_fd >= 0)
		close(st->index_fd);
	free(st->index);
	pthread_mutex_destroy(&st->lock);
	free(st);
}

void relay_table_free(void)
{
	pthread_mutex_lock(&relay_lock);
	while (relay_sessions) {
		struct relay_session *s = relay_sessions;
		relay_sessions = s->next;
		while (s->streams) {
			struct relay_stream *st = s->streams;
			s->streams = st->next;
			stream_free(st);
		}
		free(s);
	}
	next_session_id = next_stream_id = 1;
	nr_sessions = nr_streams = 0;
	pthread_mutex_unlock(&relay_lock);
}

void relay_session_end(struct relay_session *s)
{
	pthread_mutex_lock(&relay_lock);
	s->connected = false;
	for (struct relay_stream *st = s->streams; st; st = st->next) {
		pthread_mutex_lock(&st->lock);
		if (!st->closed)
			s->generation++;
		st->closed = true;
		pthread_mutex_unlock(&st->lock);
	}
	pthread_mutex_unlock(&relay_lock);
}

static void index_encode(const struct relay_index *ix, uint8_t *b)
{
	const uint64_t f[9] = { ix->offset, ix->packet_size, ix->content_size, ix->ts_begin,
				ix->ts_end, ix->events_discarded, ix->stream_id,
				ix->stream_instance_id, ix->packet_seq_num };
	for (int i = 0; i < 9; i++)
		rt_put_be64(b + 8 * i, f[i]);
}

static void index_decode(const uint8_t *b, struct relay_index *ix)
{
	*ix = (struct relay_index){
		.offset = rt_get_be64(b), .packet_size = rt_get_be64(b + 8),
		.content_size = rt_get_be64(b + 16), .ts_begin = rt_get_be64(b + 24),
		.ts_end = rt_get_be64(b + 32), .events_discarded = rt_get_be64(b + 40),
		.stream_id = rt_get_be64(b + 48), .stream_instance_id = rt_get_be64(b + 56),
		.packet_seq_num = rt_get_be64(b + 64),
	};
}

static int index_push(struct relay_stream *st, const struct relay_index *ix)
{
	if (st->nr_index == st->cap_index) {
		uint64_t cap = st->cap_index ? 2 * st->cap_index : 64;
		struct relay_index *n = realloc(st->index, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		st->index = n;
		st->cap_index = cap;
	}
	st->index[st->nr_index++] = *ix;
	return 0;
}

/* A stream file found on disk (the relay restarted): its index read
 * back, entries whose packet is not whole in the data file dropped, and
 * both files cut back to what is indexed. */
static int stream_recover(struct relay_stream *st)
{
	struct stat sd, si;
	if (fstat(st->data_fd, &sd) < 0 || fstat(st->index_fd, &si) < 0)
		return -errno;
	uint8_t hdr[RELAY_INDEX_HEADER_SIZE];
	if (si.st_size >= (off_t)sizeof(hdr) &&
	    pread(st->index_fd, hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr)) {
		uint32_t w[4];
		memcpy(w, hdr, sizeof(w));
		if (be32toh(w[0]) != RELAY_INDEX_MAGIC ||
		    be32toh(w[3]) != RELAY_INDEX_ENTRY_SIZE)
			return -EBADMSG;
		uint64_t n = ((uint64_t)si.st_size - sizeof(hdr)) / RELAY_INDEX_ENTRY_SIZE;
		for (uint64_t i = 0; i < n; i++) {
			uint8_t b[RELAY_INDEX_ENTRY_SIZE];
			struct relay_index ix;
			if (pread(st->index_fd, b, sizeof(b),
				  (off_t)(sizeof(hdr) + i * sizeof(b))) != (ssize_t)sizeof(b))
				break;
			index_decode(b, &ix);
			/* An entry live viewers could not follow ends it too. */
			if (ix.offset != st->size || ix.packet_size % 8 || !ix.packet_size ||
			    ix.content_size > ix.packet_size ||
			    ix.packet_size / 8 > (uint64_t)sd.st_size - st->size)
				break;
			int ret = index_push(st, &ix);
			if (ret < 0)
				return ret;
			st->size += ix.packet_size / 8;
		}
	}
	if (ftruncate(st->index_fd, (off_t)(sizeof(hdr) + st->nr_index * RELAY_INDEX_ENTRY_SIZE))
	    < 0 || ftruncate(st->data_fd, (off_t)st->size) < 0)
		return -errno;
	return 0;
}

static int index_header(int fd)
{
	uint32_t w[4] = { htobe32(RELAY_INDEX_MAGIC), htobe32(1), htobe32(1),
			  htobe32(RELAY_INDEX_ENTRY_SIZE) };
	return pwrite(fd, w, sizeof(w), 0) == (ssize_t)sizeof(w) ? 0 : -EIO;
}

/* Open (creating when missing) the stream's files in the checked
 * directory of its trace. */
static int stream_files(struct relay_stream *st, char *err, size_t errlen)
{
	char dir[PATH_MAX], why[PATH_MAX + 128], name[RNET_NAME_MAX + 32];
	int n = snprintf(dir, sizeof(dir), "%s/%s%s", st->session->dir, st->path,
			 st->metadata ? "" : "/index");
	if (n < 0 || (size_t)n >= sizeof(dir)) {
		snprintf(err, errlen, "stream path too long");
		return -ENAMETOOLONG;
	}
	int dirfd = rt_dir_open(dir, RT_DIR_CREATE, NULL, why, sizeof(why));
	if (dirfd < 0) {
		snprintf(err, errlen, "cannot create %s: %s", dir, why);
		return dirfd;
	}
	int ret = 0;
	if (st->metadata) {
		st->data_fd = openat(dirfd, "metadata", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
				     RT_FILE_MODE);
		if (st->data_fd < 0)
			ret = -errno;
		struct stat sb;
		if (!ret && fstat(st->data_fd, &sb) == 0)
			st->size = (uint64_t)sb.st_size;
		goto out;
	}
	snprintf(name, sizeof(name), "%s_%u.idx", st->channel, st->cpu);
	st->index_fd = openat(dirfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
			      RT_FILE_MODE);
	if (st->index_fd < 0) {
		ret = -errno;
		goto out;
	}
	snprintf(name, sizeof(name), "../%s_%u", st->channel, st->cpu);
	st->data_fd = openat(dirfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
			     RT_FILE_MODE);
	if (st->data_fd < 0) {
		ret = -errno;
		goto out;
	}
	ret = stream_recover(st);
	if (!ret)
		ret = index_header(st->index_fd);
out:
	close(dirfd);
	if (ret < 0 && !err[0])
		snprintf(err, errlen, "cannot open the files of stream %s/%s_%u in %s: %s",
			 st->path, st->channel, st->cpu, st->session->dir, strerror(-ret));
	return ret;
}

int relay_stream_open(struct relay_session *s, const char *path, const char *channel,
		      uint32_t cpu, bool metadata, struct relay_stream **out, char *err,
		      size_t errlen)
{
	err[0] = 0;
	if (rnet_check_path(path) < 0 || rnet_check_name(channel, RNET_NAME_MAX) < 0 ||
	    (metadata && strcmp(channel, "metadata")) || (!metadata && !strcmp(channel, "metadata")) ||
	    !strcmp(channel, "index")) {
		snprintf(err, errlen, "refused stream name '%s/%s'", path, channel);
		return -EINVAL;
	}
	int ret = 0;
	pthread_mutex_lock(&relay_lock);
	struct relay_stream *st, *same_trace = NULL;
	for (st = s->streams; st; st = st->next) {
		if (!strcmp(st->path, path))
			same_trace = st;
		if (!strcmp(st->path, path) && !strcmp(st->channel, channel) && st->cpu == cpu)
			break;
	}
	if (st) {
		pthread_mutex_lock(&st->lock);
		if (st->closed)
			s->generation++;
		st->closed = false;
		pthread_mutex_unlock(&st->lock);
		goto done;
	}
	if (nr_streams >= RELAY_STREAMS_MAX) {
		snprintf(err, errlen, "the relay holds %u streams already", RELAY_STREAMS_MAX);
		ret = -ENOSPC;
		goto done;
	}
	st = calloc(1, sizeof(*st));
	if (!st) {
		ret = -ENOMEM;
		goto done;
	}
	pthread_mutex_init(&st->lock, NULL);
	st->session = s;
	snprintf(st->path, sizeof(st->path), "%s", path);
	snprintf(st->channel, sizeof(st->channel), "%s", channel);
	st->cpu = cpu;
	st->metadata = metadata;
	st->data_fd = st->index_fd = -1;
	ret = stream_files(st, err, errlen);
	if (ret < 0) {
		stream_free(st);
		st = NULL;
		goto done;
	}
	st->id = next_stream_id++;
	st->trace_id = same_trace ? same_trace->trace_id : st->id;
	struct relay_stream **pp = &s->streams;
	while (*pp)
		pp = &(*pp)->next;
	*pp = st;
	nr_streams++;
	s->nr_streams++;
	s->generation++;
done:
	pthread_mutex_unlock(&relay_lock);
	if (ret < 0 && !err[0])
		snprintf(err, errlen, "%s", strerror(-ret));
	*out = st;
	return ret;
}

int relay_chunk_archive(struct relay_session *s, const char *chunk, const char *name,
			char *err, size_t errlen)
{
	if ((chunk[0] && (rnet_check_name(chunk, RNET_NAME_MAX) < 0 || !strcmp(chunk, "archives"))) ||
	    rnet_check_name(name, RNET_NAME_MAX) < 0) {
		snprintf(err, errlen, "refused trace chunk names '%s', '%s'", chunk, name);
		return -EINVAL;
	}
	char why[PATH_MAX + 128];
	int afd = -1, nfd = -1, ret = 0;
	int dfd = rt_dir_open(s->dir, 0, NULL, why, sizeof(why));
	if (dfd < 0) {
		snprintf(err, errlen, "cannot open %s: %s", s->dir, why);
		return dfd;
	}
	if (mkdirat(dfd, "archives", RT_DIR_MODE) < 0 && errno != EEXIST)
		goto fail;
	if ((afd = openat(dfd, "archives", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		goto fail;
	if (chunk[0]) {
		if (renameat(dfd, chunk, afd, name) < 0)
			goto fail;
		goto out;
	}
	/* The first chunk is the session's directory itself: its domains
	 * move. */
	if (mkdirat(afd, name, RT_DIR_MODE) < 0 ||
	    (nfd = openat(afd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		goto fail;
	static const char *const domains[] = { "ust", "kernel" };
	for (size_t i = 0; i < sizeof(domains) / sizeof(domains[0]); i++)
		if (renameat(dfd, domains[i], nfd, domains[i]) < 0 && errno != ENOENT)
			goto fail;
	goto out;
fail:
	ret = -errno;
	snprintf(err, errlen, "cannot archive trace chunk '%s' of %s as archives/%s: %s", chunk,
		 s->dir, name, strerror(errno));
out:
	if (nfd >= 0)
		close(nfd);
	if (afd >= 0)
		close(afd);
	close(dfd);
	return ret;
}

void relay_stream_close(struct relay_stream *st)
{
	pthread_mutex_lock(&relay_lock);
	pthread_mutex_lock(&st->lock);
	if (!st->closed)
		st->session->generation++;
	st->closed = true;
	pthread_mutex_unlock(&st->lock);
	pthread_mutex_unlock(&relay_lock);
}

static int pwrite_all(int fd, const void *p, uint64_t len, uint64_t off)
{
	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p = (const char *)p + n;
		len -= (uint64_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

int relay_stream_append(struct relay_stream *st, struct relay_index *ix, const void *data,
			uint64_t len)
{
	if (st->metadata || !len || ix->packet_size != len * 8 ||
	    ix->content_size > ix->packet_size)
		return -EINVAL;
	pthread_mutex_lock(&st->lock);
	ix->offset = st->size;
	uint8_t b[RELAY_INDEX_ENTRY_SIZE];
	index_encode(ix, b);
	int ret = pwrite_all(st->data_fd, data, len, st->size);
	if (!ret)
		ret = pwrite_all(st->index_fd, b, sizeof(b),
				 RELAY_INDEX_HEADER_SIZE + st->nr_index * sizeof(b));
	if (!ret)
		ret = index_push(st, ix);
	if (ret < 0) {
		/* Nothing of it stays: the files end on the last packet. */
		if (ftruncate(st->data_fd, (off_t)st->size) < 0 ||
		    ftruncate(st->index_fd,
			      (off_t)(RELAY_INDEX_HEADER_SIZE + st->nr_index * sizeof(b))) < 0)
			ret = -errno;
	} else {
		if (st->nr_index > 1) {
			uint64_t prev = st->index[st->nr_index - 2].packet_seq_num;
			if (ix->packet_seq_num > prev + 1)
				st->packets_lost += ix->packet_seq_num - prev - 1;
		}
		st->size += len;
	}
	pthread_mutex_unlock(&st->lock);
	return ret;
}

int relay_metadata_write(struct relay_stream *st, uint64_t offset, const void *data,
			 uint64_t len)
{
	if (!st->metadata)
		return -EINVAL;
	pthread_mutex_lock(&st->lock);
	int ret = offset > st->size ? -EINVAL
		  : offset > RELAY_METADATA_FILE_MAX || len > RELAY_METADATA_FILE_MAX - offset
		  ? -EFBIG : 0;
	if (!ret)
		ret = pwrite_all(st->data_fd, data, len, offset);
	if (!ret && offset + len > st->size)
		st->size = offset + len;
	pthread_mutex_unlock(&st->lock);
	return ret;
}

int relay_stream_index(struct relay_stream *st, uint64_t n, struct relay_index *out)
{
	pthread_mutex_lock(&st->lock);
	int ret = n < st->nr_index ? 0 : st->closed ? -ENODATA : -EAGAIN;
	if (!ret)
		*out = st->index[n];
	pthread_mutex_unlock(&st->lock);
	return ret;
}

uint64_t relay_stream_size(struct relay_stream *st)
{
	pthread_mutex_lock(&st->lock);
	uint64_t n = st->size;
	pthread_mutex_unlock(&st->lock);
	return n;
}

ssize_t relay_stream_read(struct relay_stream *st, uint64_t off, void *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = pread(st->data_fd, (char *)buf + got, len - got, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}
