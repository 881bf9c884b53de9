/*
 * trace_dir.c - stream files and metadata of an embedded-mode trace,
 * which every traced process of a process tree writes into (each its own
 * stream class, see trace_dir.h).
 */
#define _GNU_SOURCE
#include "trace_dir.h"

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

#include "../common/config_parse.h"

extern char *program_invocation_short_name;

int rt_trace_dir_create_file(const char *dir, const char *name)
{
	return rt_file_create(dir, name, false, NULL, 0);
}

#define RT_FRAGMENT_PREFIX ".proc-"
#define RT_FRAGMENT_MAX (64u << 20)	/* bytes of one process's declarations */

int rt_trace_dir_claim(const char *dir, uint32_t first, uint32_t tries, uint32_t *slot)
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
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			uint32_t *p = realloc(slots, nc * sizeof(*p));
			if (!p) {
				ret = -ENOMEM;
				break;
			}
			slots = p;
			cap = nc;
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

int rt_trace_dir_write_metadata(const char *dir, struct rt_channel *ch,
				const struct rt_clock_desc *clk,
				uint64_t *generation)
{
	char host[256] = "unknown";
	gethostname(host, sizeof(host) - 1);
	const char *slash = strrchr(dir, '/');

	struct ctf_trace_info t = {
		.hostname = host,
		.procname = program_invocation_short_name,
		.vpid = getpid(),
		.trace_name = slash ? slash + 1 : dir,
		.tracer_version = RINGTRACE_VERSION,
		.clock = {
			.name = clk->name,
			.description = clk->description,
			.freq = clk->freq,
			.offset_s = clk->offset_s,
			.offset = clk->offset,
			.precision = clk->precision,
		},
	};
	memcpy(t.uuid, ch->stream.uuid, sizeof(t.uuid));
	struct rt_field_desc ctx[RT_CTX_COUNT];
	for (uint32_t i = 0; i < ch->nr_ctx; i++)
		ctx[i] = (struct rt_field_desc){ .name = rt_context_name(ch->ctx[i]),
						 .type = rt_context_type(ch->ctx[i]) };
	struct ctf_stream_class sc = { .id = ch->stream.stream_id, .name = ch->name,
				       .nr_contexts = ch->nr_ctx, .contexts = ctx };

	struct ctf_buf b = { 0 }, frag = { 0 };
	struct ctf_event_class *ev = NULL;
	int ret;

	pthread_mutex_lock(&rt_registry_lock);
	/* Acquire: pairs with the registry's release increment. */
	*generation = __atomic_load_n(&rt_registry_generation, __ATOMIC_ACQUIRE);
	struct rt_event_class **cls;
	size_t n = rt_registry_classes(&cls);
	ev = calloc(n ? n : 1, sizeof(*ev));
	if (!ev) {
		pthread_mutex_unlock(&rt_registry_lock);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		ev[i] = (struct ctf_event_class){
			.id = cls[i]->id,
			.stream_id = sc.id,
			.provider = cls[i]->provider,
			.name = cls[i]->name,
			.loglevel = cls[i]->loglevel,
			.nr_fields = cls[i]->nr_fields,
			.fields = cls[i]->fields,
		};
	}
	ret = ctf_metadata_streams(&frag, &sc, 1);
	if (!ret)
		ret = ctf_metadata_events(&frag, ev, n);
	pthread_mutex_unlock(&rt_registry_lock);
	if (!ret)
		ret = ctf_metadata_build(&b, &t, NULL, 0, NULL, 0);
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
	if (!rt_owned_fd_ok(&ch->fragment)) {
		/* The program closed it under us: made anew (ours to
		 * replace, under the directory's lock). */
		char name[32];
		snprintf(name, sizeof(name), RT_FRAGMENT_PREFIX "%u", ch->slot);
		int fd = rt_file_create(dir, name, true, NULL, 0);
		ret = fd < 0 ? fd : rt_owned_fd_take(&ch->fragment, fd);
	}
	if (!ret)
		ret = rewrite_fd(ch->fragment.fd, frag.data, frag.len);
	if (!ret)
		ret = append_fragments(dfd, &b);
	if (!ret)
		ret = b.err;
	if (!ret)
		ret = rt_file_write_atomic(dir, "metadata", b.data, b.len, false, NULL, 0);
	flock(dfd, LOCK_UN);
close_dir:
	close(dfd);
out:
	ctf_buf_free(&b);
	ctf_buf_free(&frag);
	free(ev);
	return ret;
}
