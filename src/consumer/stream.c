/*
 * stream.c - from sub-buffers to stream files: file rotation, and
 * the reading of one buffer set (each packet checked by
 * packet.c; a sub-buffer whose writer died mid-commit given up).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/fs_util.h"
#include "../ringbuffer/ringbuffer.h"
#include "consumer_internal.h"

void cons_write_failed(struct cons_trace *ct, const char *what, int err, uint64_t packets,
		       uint64_t events)
{
	pthread_mutex_lock(&ct->err_lock);
	if (!ct->err_failing)
		fprintf(stderr, "ringtraced: cannot write %s in %s: %s; events are being lost\n",
			what, ct->t->dir, strerror(-err));
	ct->err_failing = true;
	if (!ct->err_pending) {
		ct->err_pending = err;
		snprintf(ct->err_pending_what, sizeof(ct->err_pending_what), "%s", what);
	}
	ct->err_last = err;
	snprintf(ct->err_last_what, sizeof(ct->err_last_what), "%s", what);
	ct->err_packets += packets;
	ct->err_events += events;
	pthread_mutex_unlock(&ct->err_lock);
}

void cons_write_ok(struct cons_trace *ct)
{
	pthread_mutex_lock(&ct->err_lock);
	if (ct->err_failing)
		fprintf(stderr, "ringtraced: writing in %s again; %llu events in %llu packets "
			"could not be written\n", ct->t->dir,
			(unsigned long long)ct->err_events, (unsigned long long)ct->err_packets);
	ct->err_failing = false;
	pthread_mutex_unlock(&ct->err_lock);
}

void cons_stream_close(struct cons_stream *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

/* The name of a stream file (consumer_internal.h). */
static int stream_name(char *out, size_t len, const struct rtd_channel *ch, uint32_t cpu,
		       bool rotate, uint64_t index)
{
	int n = rotate ? snprintf(out, len, "%s_%u_%llu", ch->name, cpu,
				  (unsigned long long)index)
		       : snprintf(out, len, "%s_%u", ch->name, cpu);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Create the stream's current file: a new file (O_EXCL, no symbolic
 * link followed) in the checked directory (fs_util.h), never another
 * trace's file. */
static int stream_open(const char *dir, const struct rtd_channel *ch, uint32_t cpu,
		       struct cons_stream *s)
{
	char name[NAME_MAX + 1];
	int ret = stream_name(name, sizeof(name), ch, cpu, ch->tracefile_size > 0,
			      s->file_index);
	if (ret < 0)
		return ret;
	s->fd = rt_file_create(dir, name, false, NULL, 0);
	if (s->fd < 0)
		return s->fd;
	s->out.size = 0;
	s->out.torn = false;
	return 0;
}

/* Rotation: the next packet does not fit in the current file. */
static int stream_rotate(const char *dir, const struct rtd_channel *ch, uint32_t cpu,
			 struct cons_stream *s)
{
	cons_stream_close(s);
	s->file_index++;
	/* LTTng's tracefile_count: keep the `count` newest files. Deleting
	 * the oldest leaves a packet_seq_num gap at the start of the stream,
	 * which readers report as lost packets. */
	while (ch->tracefile_count &&
	       s->file_index - s->oldest_index >= ch->tracefile_count) {
		char name[NAME_MAX + 1];
		if (stream_name(name, sizeof(name), ch, cpu, true, s->oldest_index) == 0)
			rt_file_remove(dir, name);
		s->oldest_index++;
	}
	return stream_open(dir, ch, cpu, s);
}

/* Whether the stream's file is still in the file system (a removed
 * trace directory leaves open files writable, and what is written lost). */
static int stream_linked(const struct cons_stream *s)
{
	struct stat st;
	if (fstat(s->fd, &st) < 0)
		return -errno;
	return st.st_nlink ? 0 : -ENOENT;
}

int cons_stream_write(const char *dir, const struct rtd_channel *ch, uint32_t cpu,
		      struct cons_stream *s, char *data, uint64_t len, uint64_t events)
{
	int ret = 0;
	if (s->fd < 0)
		ret = stream_open(dir, ch, cpu, s);
	if (!ret && ch->tracefile_size && s->out.size > 0 &&
	    s->out.size + len > ch->tracefile_size)
		ret = stream_rotate(dir, ch, cpu, s);
	if (!ret)
		ret = stream_linked(s);
	if (ret < 0) {
		ctf_out_lose(&s->out, data, events);
		return ret;
	}
	return ctf_out_append(&s->out, s->fd, data, len, events);
}

/* A sub-buffer whose writer reserved a slot and never committed it is
 * given up after stuck_ms and counted (rb_skip_stuck). */
static void maybe_skip_stuck(struct cons_bufset *cb, uint32_t cpu, uint64_t stuck_ms)
{
	rb_skip_stuck(&cb->b->rb, cpu, &cb->streams[cpu].stuck, cons_now_ns(),
		      stuck_ms * 1000000ull);
}

/* Write one sub-buffer taken from the CPU's buffer: its checked private
 * copy, or nothing (counted) if the program damaged it. */
static void write_subbuf(struct cons_trace *ct, struct cons_bufset *cb, uint32_t cpu,
			 const struct rb_read *r)
{
	struct cons_stream *s = &cb->streams[cpu];
	uint64_t len, n;
	if (r->data_size > ct->copy_size ||
	    cons_packet_check(cb, cpu, &s->prev, r->data, ct->copy, r->data_size, r->seq,
			      &len, &n) < 0) {
		/* Relaxed: statistics only (consumer_bufset_stats). */
		__atomic_fetch_add(&cb->packets_corrupt, 1, __ATOMIC_RELAXED);
		return;
	}
	/* The packet may use event ids registered after our last metadata
	 * write: rewrite it first, or the packet cannot go out. */
	int ret = cons_metadata_update(ct, false);
	if (ret < 0) {
		ctf_out_lose(&s->out, ct->copy, n);
		cons_write_failed(ct, "the metadata", ret, 1, n);
		/* Relaxed: statistics only. */
		__atomic_fetch_add(&cb->events_unwritten, n, __ATOMIC_RELAXED);
		return;
	}
	ret = cons_stream_write(ct->t->dir, cb->b->channel, cpu, s, ct->copy, len, n);
	if (ret < 0) {
		cons_write_failed(ct, "a stream file", ret, 1, n);
		__atomic_fetch_add(&cb->events_unwritten, n, __ATOMIC_RELAXED);
		return;
	}
	cons_write_ok(ct);
	/* Relaxed: statistics only. */
	__atomic_fetch_add(&cb->events, n, __ATOMIC_RELAXED);
	__atomic_fetch_add(&cb->packets, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&cb->bytes, len, __ATOMIC_RELAXED);
}

uint32_t cons_read_bufset(struct cons_trace *ct, struct cons_bufset *cb, uint64_t stuck_ms)
{
	struct rb *rb = &cb->b->rb;
	uint32_t most = 0;
	for (uint32_t cpu = 0; cpu < rb->nr_cpus; cpu++) {
		struct rb_read r;
		/* At most one buffer's worth per CPU and call, so that a
		 * program that keeps its buffer full cannot hold us on one
		 * CPU (or a drain past its deadline). */
		uint32_t k = 0;
		for (; k < rb->num_subbuf && rb_get_subbuf(rb, cpu, &r) == 0; k++) {
			write_subbuf(ct, cb, cpu, &r);
			rb_put_subbuf(rb, cpu, &r);
		}
		if (k > most)
			most = k;
		maybe_skip_stuck(cb, cpu, stuck_ms);
	}
	return most;
}
