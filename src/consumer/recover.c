/*
 * recover.c - `ringtrace recover`'s work on one buffer set (recovery.h):
 * the buffer file copied into private memory (the file is never written,
 * and a file changed meanwhile cannot fault us), attached as a ring buffer
 * whose writers are gone (cons_rb_source.dead), its open packets closed
 * where their last event ends, then read through the consumer like any
 * buffer from an untrusted program: every packet checked, a damaged one
 * dropped and counted, stream files and metadata written by the
 * consumer's own sink and metadata builder.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/fs_util.h"
#include "../ctf/ctf_packet.h"
#include "../ringbuffer/ringbuffer.h"
#include "recovery.h"

/* The read side of one recovery. */
struct recover {
	struct cons_recovered r;
	struct rb rb;
	void *map;
	size_t map_size;
	struct ctf_stream_info si;
	struct cons_channel cc;
	struct cons_metadata_state meta;
};

/* Read all of the regular file `file` of dfd into *buf (malloc'ed, or
 * an anonymous private mapping with `mapped`), at least `min` and at most
 * `max` bytes. Returns 0 or -errno (-EINVAL: not a regular file, size out
 * of range, changed while read) with a message in err. */
static int read_whole(int dfd, const char *dir, const char *file, size_t min, size_t max,
		      bool mapped, void **buf, size_t *len, char *err, size_t errlen)
{
	int fd = openat(dfd, file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "%s/%s: %s", dir, file, strerror(e));
		return -e;
	}
	struct stat st;
	int ret = 0;
	void *p = NULL;
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s/%s: %s", dir, file, strerror(-ret));
		goto out;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size < min || (uint64_t)st.st_size > max) {
		ret = -EINVAL;
		snprintf(err, errlen, "%s/%s: %s", dir, file,
			 !S_ISREG(st.st_mode) ? "not a regular file"
			 : (uint64_t)st.st_size < min ? "too short" : "too large");
		goto out;
	}
	size_t size = (size_t)st.st_size;
	if (mapped) {
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			p = NULL;
	} else {
		p = malloc(size ? size : 1);
	}
	if (!p) {
		ret = -ENOMEM;
		snprintf(err, errlen, "%s/%s: %s", dir, file, strerror(ENOMEM));
		goto out;
	}
	size_t got = 0;
	while (got < size) {
		ssize_t n = pread(fd, (char *)p + got, size - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : -EINVAL;
			snprintf(err, errlen, "%s/%s: %s", dir, file,
				 n < 0 ? strerror(-ret) : "changed while read");
			goto out;
		}
		got += (size_t)n;
	}
	*buf = p;
	*len = size;
	p = NULL;
out:
	if (p && mapped)
		munmap(p, (size_t)st.st_size);
	else
		free(p);
	close(fd);
	return ret;
}

/* The ring buffer's subbuf_end for a packet closed by recovery: its end
 * time is its last event's (the time of death is unknown), or its begin
 * time when its events do not decode (the consumer's check then drops
 * it). */
static void recover_packet_end(void *priv, uint32_t cpu, void *subbuf, uint64_t tsc,
			       uint64_t used, uint64_t lost)
{
	struct recover *rc = priv;
	(void)tsc;
	struct ctf_packet_header h;
	memcpy(&h, subbuf, sizeof(h));
	uint64_t last;
	if (cons_packet_last_time(&rc->cc, subbuf, used, &last) < 0)
		last = h.timestamp_begin;
	ctf_packet_end(&rc->si, cpu, subbuf, last, used, lost);
}

static void recover_packet_begin(void *priv, uint32_t cpu, void *subbuf, uint64_t tsc,
				 uint64_t seq)
{
	struct recover *rc = priv;
	ctf_packet_begin(&rc->si, cpu, subbuf, tsc, seq);
}

/* Only a final flush's header-only packet reads the clock, and recovery
 * closes without one. */
static uint64_t recover_clock(void)
{
	return 0;
}

static int recover_metadata(void *arg)
{
	struct recover *rc = arg;
	const struct cons_channel_desc *d = &rc->r.desc;
	return cons_metadata_update(&rc->meta, &rc->r.trace, &d, 1, false);
}

/* The buffer file and its description agree, and the packets are ours
 * (the CTF packet layout of ctf_packet.h). */
static bool belong_together(const struct recover *rc)
{
	return rc->rb.hdr_size == CTF_PACKET_HEADER_SIZE &&
	       rc->rb.tsc_bits == CTF_COMPACT_TSC_BITS &&
	       (rc->rb.mode == RB_MODE_OVERWRITE) == rc->r.desc.overwrite;
}

int cons_recover(const char *dir, const char *name, const char *out,
		 struct cons_recover_stats *st, char *err, size_t errlen)
{
	*st = (struct cons_recover_stats){ 0 };
	if (strlen(name) > CONS_RECOVERY_NAME_MAX || strchr(name, '/')) {
		snprintf(err, errlen, "%s: not a buffer set's name", name);
		return -EINVAL;
	}
	struct recover *rc = calloc(1, sizeof(*rc));
	if (!rc) {
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	rc->rb.fd = -1;
	void *desc = NULL;
	size_t dlen;
	struct cons_errors errors;
	struct cons_rb_source rs = { 0 };
	struct cons_files files = { 0 };
	char file[CONS_RECOVERY_NAME_MAX + 16];
	int dfd = rt_dir_open(dir, RT_DIR_SHARED, NULL, err, errlen);
	if (dfd < 0) {
		free(rc);
		return dfd;
	}
	cons_errors_init(&errors, out, NULL, NULL);
	snprintf(file, sizeof(file), "%s" CONS_DESC_SUFFIX, name);
	int ret = read_whole(dfd, dir, file, 0, CONS_DESC_SIZE_MAX, false, &desc, &dlen, err,
			     errlen);
	if (ret < 0)
		goto out;
	char why[256];
	ret = cons_recovery_decode(desc, dlen, &rc->r, why, sizeof(why));
	if (ret < 0) {
		snprintf(err, errlen, "%s/%s: %s", dir, file, why);
		goto out;
	}
	snprintf(file, sizeof(file), "%s" CONS_RING_SUFFIX, name);
	ret = read_whole(dfd, dir, file, RB_SHM_HEADER_SIZE, SIZE_MAX / 2, true, &rc->map,
			 &rc->map_size, err, errlen);
	if (ret < 0)
		goto out;
	ret = rb_attach(&rc->rb, rc->map, rc->map_size);
	if (ret == 0 && !belong_together(rc))
		ret = -EINVAL;
	if (ret < 0) {
		snprintf(err, errlen, "%s/%s: %s", dir, file,
			 ret == -EPROTO ? "a buffer file of another ringtrace version"
			 : rc->rb.cpus ? "its description is another buffer set's"
				       : "not a ringtrace buffer file, or damaged");
		goto out;
	}
	memcpy(rc->si.uuid, rc->r.trace.uuid, sizeof(rc->si.uuid));
	rc->si.stream_id = rc->r.desc.stream_id;
	rc->si.subbuf_size = rc->rb.subbuf_size;
	rc->rb.client = (struct rb_client){ .subbuf_begin = recover_packet_begin,
					    .subbuf_end = recover_packet_end,
					    .clock_read = recover_clock, .priv = rc };
	rc->r.trace.dir = out;
	rc->r.trace.domain = NULL;
	struct cons_source src;
	struct cons_sink sink;
	ret = cons_rb_source_init(&rs, &rc->rb, &src);
	if (!ret)
		ret = cons_files_init(&files, out, &rc->r.desc, rc->rb.nr_cpus);
	cons_files_sink(&sink, &files);
	if (!ret)
		ret = cons_channel_init(&rc->cc, &rc->r.desc, &rc->r.trace, &src, &sink, &errors,
					true);
	if (ret < 0) {
		snprintf(err, errlen, "%s", strerror(-ret));
		goto out;
	}
	rs.dead = true;
	rc->cc.metadata = recover_metadata;
	rc->cc.metadata_arg = rc;
	ret = rt_mkdir_p(out, err, errlen);
	if (ret == -EEXIST)
		ret = 0;
	if (ret < 0)
		goto out;
	/* The metadata first: an existing trace there is refused before any
	 * stream file is written. */
	ret = recover_metadata(rc);
	if (ret < 0) {
		snprintf(err, errlen, "cannot write %s/metadata: %s", out,
			 ret == -EEXIST ? "it already holds a trace" : strerror(-ret));
		goto out;
	}
	st->nr_cpus = rc->rb.nr_cpus;
	uint64_t lost_before = 0, lost_after = 0;
	for (uint32_t cpu = 0; cpu < rc->rb.nr_cpus; cpu++) {
		uint64_t outstanding = 0;
		struct rb_stats s;
		rb_close_dead(&rc->rb, cpu, &outstanding);
		st->cpus_torn += outstanding != 0;
		rb_get_stats(&rc->rb, cpu, &s);
		lost_before += s.subbufs_lost;
		st->events_discarded += s.events_lost;
	}
	struct cons_channel *ccp = &rc->cc;
	cons_drain(&ccp, 1, true);
	for (uint32_t cpu = 0; cpu < rc->rb.nr_cpus; cpu++) {
		struct rb_stats s;
		rb_get_stats(&rc->rb, cpu, &s);
		lost_after += s.subbufs_lost;
	}
	struct cons_stats cs = { 0 };
	cons_channel_stats(&rc->cc, &cs);
	st->packets = cs.packets;
	st->events = cs.events;
	st->packets_corrupt = cs.packets_corrupt;
	st->subbufs_skipped = cs.subbufs_skipped + (lost_after - lost_before);
	ret = cons_errors_message(&errors, true, err, errlen);
out:
	cons_files_close(&files);
	cons_files_free(&files);
	cons_channel_fini(&rc->cc);
	cons_rb_source_fini(&rs);
	cons_errors_fini(&errors);
	free(rc->rb.cpus);
	if (rc->map)
		munmap(rc->map, rc->map_size);
	cons_recovered_free(&rc->r);
	free(desc);
	free(rc);
	close(dfd);
	return ret;
}
