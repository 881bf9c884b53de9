/*
 * consumer_thread.c - the consumer_* entry points of dp.h except the
 * snapshot: one thread per trace reading its buffer sets on each
 * channel's read timer and flushing them on its switch timer, the drain,
 * and the statistics. Threading model: consumer_internal.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../consumer/consumer_internal.h"

uint64_t cons_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

bool cons_bufset_live(const struct dp_bufset *b)
{
	return b->channel && b->rb.cpus && b->rb.nr_cpus > 0;
}

static uint64_t read_period_ns(const struct rtd_channel *ch)
{
	return (uint64_t)(ch->read_timer_ms ? ch->read_timer_ms : CONS_DEFAULT_READ_MS) *
	       1000000ull;
}

/* One pass of the timers whose time has come; returns the next deadline.
 * Caller holds io_lock. Snapshot sessions keep their data in the buffers
 * (overwrite mode, written by consumer_snapshot): only the switch timer
 * runs for them, so that a snapshot sees recent events. */
static uint64_t run_timers(struct cons_trace *ct)
{
	struct dp_trace *t = ct->t;
	bool snapshot = t->session && t->session->snapshot;
	uint64_t now = cons_now_ns(), next = now + 1000000000ull;
	for (uint32_t i = 0; i < t->nr_bufsets; i++) {
		struct cons_bufset *cb = &ct->sets[i];
		if (!cons_bufset_live(cb->b))
			continue;
		const struct rtd_channel *ch = cb->b->channel;
		if (cb->next_switch_ns && now >= cb->next_switch_ns) {
			/* rb_flush_cpu pins this thread to the CPU for a
			 * moment in rseq mode and restores its affinity. */
			for (uint32_t cpu = 0; cpu < cb->b->rb.nr_cpus; cpu++)
				rb_flush_cpu(&cb->b->rb, cpu, false);
			cb->next_switch_ns = now + (uint64_t)ch->switch_timer_ms * 1000000ull;
		}
		if (!snapshot && now >= cb->next_read_ns) {
			/* The read timer's period, shorter while buffers
			 * fill (0: the first read, after the whole period). */
			const uint64_t max = read_period_ns(ch);
			uint32_t most = cons_read_bufset(ct, cb, CONS_STUCK_MS);
			cb->read_wait_ns = rb_read_wait(cb->read_wait_ns ? cb->read_wait_ns : max,
							max, CONS_READ_MIN_NS, most,
							cb->b->rb.num_subbuf);
			cb->next_read_ns = now + cb->read_wait_ns;
		}
		if (!snapshot && cb->next_read_ns < next)
			next = cb->next_read_ns;
		if (cb->next_switch_ns && cb->next_switch_ns < next)
			next = cb->next_switch_ns;
	}
	return next;
}

static void *consumer_main(void *arg)
{
	struct cons_trace *ct = arg;
	for (;;) {
		pthread_mutex_lock(&ct->io_lock);
		uint64_t next = run_timers(ct);
		if (!(ct->t->session && ct->t->session->snapshot)) {
			int ret = cons_metadata_update(ct, false);
			if (ret < 0)
				cons_write_failed(ct, "the metadata", ret, 0, 0);
		}
		pthread_mutex_unlock(&ct->io_lock);

		struct timespec ts = { .tv_sec = (time_t)(next / 1000000000ull),
				       .tv_nsec = (long)(next % 1000000000ull) };
		pthread_mutex_lock(&ct->wake_lock);
		while (!ct->stop && !ct->woken &&
		       pthread_cond_timedwait(&ct->wake, &ct->wake_lock, &ts) == 0)
			;
		ct->woken = false;
		bool stop = ct->stop;
		pthread_mutex_unlock(&ct->wake_lock);
		if (stop)
			return NULL;
	}
}

static void wake_thread(struct cons_trace *ct, bool stop)
{
	pthread_mutex_lock(&ct->wake_lock);
	ct->woken = true;
	if (stop)
		ct->stop = true;
	pthread_cond_signal(&ct->wake);
	pthread_mutex_unlock(&ct->wake_lock);
}

static void free_trace(struct cons_trace *ct)
{
	for (uint32_t i = 0; ct->sets && i < ct->t->nr_bufsets; i++) {
		struct cons_bufset *cb = &ct->sets[i];
		if (!cb->b)
			break; /* consumer_trace_add failed before this one */
		for (uint32_t cpu = 0; cb->streams && cpu < cb->b->rb.nr_cpus; cpu++)
			cons_stream_close(&cb->streams[cpu]);
		free(cb->streams);
		free(cb->class_by_id);
		cb->b->consumer = NULL;
	}
	free(ct->sets);
	free(ct->copy);
	pthread_cond_destroy(&ct->wake);
	pthread_mutex_destroy(&ct->wake_lock);
	pthread_mutex_destroy(&ct->err_lock);
	pthread_mutex_destroy(&ct->io_lock);
	ct->t->consumer = NULL;
	free(ct);
}

/* Errors: -ENOMEM; -errno of pthread_create or of the metadata's first
 * write (mkdir, open, write, rename). */
int consumer_trace_add(struct dp_trace *t, char *err, size_t errlen)
{
	struct cons_trace *ct = calloc(1, sizeof(*ct));
	if (!ct) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ct->t = t;
	t->consumer = ct;
	pthread_mutex_init(&ct->io_lock, NULL);
	pthread_mutex_init(&ct->wake_lock, NULL);
	pthread_mutex_init(&ct->err_lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ct->wake, &ca);
	pthread_condattr_destroy(&ca);

	int ret = -ENOMEM;
	ct->sets = calloc(t->nr_bufsets ? t->nr_bufsets : 1, sizeof(*ct->sets));
	if (!ct->sets)
		goto fail_msg;
	uint64_t now = cons_now_ns();
	for (uint32_t i = 0; i < t->nr_bufsets; i++) {
		struct cons_bufset *cb = &ct->sets[i];
		cb->b = &t->bufsets[i];
		cb->t = t;
		cb->b->consumer = cb;
		if (!cons_bufset_live(cb->b))
			continue;
		cb->streams = calloc(cb->b->rb.nr_cpus, sizeof(*cb->streams));
		if (!cb->streams)
			goto fail_msg;
		for (uint32_t cpu = 0; cpu < cb->b->rb.nr_cpus; cpu++)
			cb->streams[cpu].fd = -1;
		if (cb->b->rb.subbuf_size > ct->copy_size)
			ct->copy_size = cb->b->rb.subbuf_size;
		cb->next_read_ns = now + read_period_ns(cb->b->channel);
		if (cb->b->channel->switch_timer_ms)
			cb->next_switch_ns =
				now + (uint64_t)cb->b->channel->switch_timer_ms * 1000000ull;
	}
	if (ct->copy_size && !(ct->copy = malloc(ct->copy_size)))
		goto fail_msg;
	if (!(t->session && t->session->snapshot)) {
		ret = cons_metadata_update(ct, true);
		if (ret < 0) {
			snprintf(err, errlen, "cannot write the metadata in %s: %s", t->dir,
				 strerror(-ret));
			goto fail;
		}
	}
	/* The consumer never takes the daemon's signals. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = -pthread_create(&ct->thread, NULL, consumer_main, ct);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret < 0) {
		snprintf(err, errlen, "cannot start a consumer thread: %s", strerror(-ret));
		goto fail;
	}
	pthread_setname_np(ct->thread, "rtd-consumer");
	ct->thread_started = true;
	return 0;

fail_msg:
	snprintf(err, errlen, "out of memory");
fail:
	free_trace(ct);
	return ret;
}

/* Whether `used` bytes reserved and not consumed is more than a CPU's
 * buffer can hold: rb_reserve never gets that far ahead of the reader,
 * so a program wrote on the counters. */
static bool backlog_impossible(const struct rb *rb, uint64_t used)
{
	return used > ((uint64_t)rb->num_subbuf + 1) * rb->subbuf_size;
}

/*
 * One drain pass's verdict on each CPU that is not done yet: done when
 * all it reserved is consumed and its final flush finished; given up (counted in subbufs_skipped, the
 * sub-buffers it still held) when its counters are impossible, when
 * read_count has not moved for CONS_DRAIN_STUCK_MS, or at the deadline.
 * Returns whether every CPU is done.
 */
static bool drain_settle(struct cons_trace *ct, uint64_t now, bool deadline)
{
	bool all = true;
	for (uint32_t i = 0; i < ct->t->nr_bufsets; i++) {
		struct cons_bufset *cb = &ct->sets[i];
		const struct rb *rb = &cb->b->rb;
		if (!cons_bufset_live(cb->b))
			continue;
		for (uint32_t cpu = 0; cpu < rb->nr_cpus; cpu++) {
			struct cons_stream *s = &cb->streams[cpu];
			if (s->drain_done)
				continue;
			struct rb_stats st;
			rb_get_stats(rb, cpu, &st);
			uint64_t left = st.bytes_reserved - st.bytes_consumed;
			bool impossible = backlog_impossible(rb, left);
			if (!left && !s->drain_pending) {
				s->drain_done = true;
				continue;
			}
			if (st.bytes_consumed != s->drain_rcnt) {
				s->drain_rcnt = st.bytes_consumed;
				s->drain_ns = now;
			}
			if (impossible || deadline ||
			    now - s->drain_ns >= CONS_DRAIN_STUCK_MS * 1000000ull) {
				uint64_t n = impossible ? 1 : (left + rb->subbuf_size - 1) /
								    rb->subbuf_size;
				/* Relaxed: statistics only. */
				__atomic_fetch_add(&cb->subbufs_skipped, n, __ATOMIC_RELAXED);
				s->drain_done = true;
				continue;
			}
			all = false;
		}
	}
	return all;
}

/* The end of a drain: the header-only packets that stand for packets
 * that could not be written (ctf_out), and the metadata. */
static void drain_settle_files(struct cons_trace *ct)
{
	for (uint32_t i = 0; i < ct->t->nr_bufsets; i++) {
		struct cons_bufset *cb = &ct->sets[i];
		for (uint32_t cpu = 0; cons_bufset_live(cb->b) && cpu < cb->b->rb.nr_cpus; cpu++) {
			struct cons_stream *s = &cb->streams[cpu];
			int r = s->fd >= 0 ? ctf_out_settle(&s->out, s->fd) : 0;
			if (r < 0)
				cons_write_failed(ct, "a stream file", r, 0, 0);
		}
	}
	int r = cons_metadata_update(ct, true);
	if (r < 0)
		cons_write_failed(ct, "the metadata", r, 0, 0);
}

/*
 * Final flush of every CPU, then read until everything reserved is
 * consumed. Bounded, and one buffer never holds the others up: a
 * sub-buffer whose writer died between reserve and commit never
 * completes, cons_read_bufset gives it up after CONS_DRAIN_STUCK_MS; a
 * CPU that stops making progress for that long (or whose counters a
 * program overwrote) is given up as a whole (drain_settle), and the drain
 * ends after CONS_DRAIN_MAX_MS whatever happens. What is given up is
 * counted (subbufs_lost). In snapshot sessions the data stays in the
 * buffers: only the flush is done (a later snapshot then holds the last
 * events). Write errors are counted and kept for consumer_trace_error.
 * Returns 0 (-EINVAL: not consumed).
 */
int consumer_trace_drain(struct dp_trace *t)
{
	struct cons_trace *ct = t->consumer;
	if (!ct)
		return -EINVAL;
	bool snapshot = t->session && t->session->snapshot;
	pthread_mutex_lock(&ct->io_lock);
	uint64_t start = cons_now_ns(), deadline = start + CONS_DRAIN_MAX_MS * 1000000ull;
	for (uint32_t i = 0; i < t->nr_bufsets; i++) {
		struct cons_bufset *cb = &ct->sets[i];
		for (uint32_t cpu = 0; cons_bufset_live(cb->b) && cpu < cb->b->rb.nr_cpus; cpu++) {
			struct cons_stream *s = &cb->streams[cpu];
			s->drain_rcnt = UINT64_MAX;
			s->drain_ns = start;
			s->drain_done = false;
		}
	}
	for (;;) {
		/* -EAGAIN from a flush (drain_pending): it could not finish,
		 * e.g. a full buffer (discard mode) had no room for the
		 * packet carrying the last lost events. Read and flush again
		 * even when all that is reserved is consumed, or those counts
		 * are lost. */
		for (uint32_t i = 0; i < t->nr_bufsets; i++) {
			struct cons_bufset *cb = &ct->sets[i];
			if (!cons_bufset_live(cb->b))
				continue;
			for (uint32_t cpu = 0; cpu < cb->b->rb.nr_cpus; cpu++) {
				struct cons_stream *s = &cb->streams[cpu];
				if (!s->drain_done)
					s->drain_pending =
						rb_flush_cpu(&cb->b->rb, cpu, true) == -EAGAIN;
			}
			if (!snapshot)
				cons_read_bufset(ct, cb, CONS_DRAIN_STUCK_MS);
		}
		if (snapshot)
			break;
		uint64_t now = cons_now_ns();
		if (drain_settle(ct, now, now >= deadline))
			break;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	if (!snapshot)
		drain_settle_files(ct);
	pthread_mutex_unlock(&ct->io_lock);
	return 0;
}

int consumer_trace_error(struct dp_trace *t, bool take, char *msg, size_t len)
{
	struct cons_trace *ct = t->consumer;
	if (!ct)
		return 0;
	pthread_mutex_lock(&ct->err_lock);
	int err = take ? ct->err_pending : ct->err_last;
	const char *what = take ? ct->err_pending_what : ct->err_last_what;
	if (err)
		snprintf(msg, len, "cannot write %s in %s: %s; %llu events in %llu packets "
			 "could not be written%s", what, t->dir, strerror(-err),
			 (unsigned long long)ct->err_events, (unsigned long long)ct->err_packets,
			 ct->err_failing ? "" : " (written again since)");
	if (take)
		ct->err_pending = 0;
	pthread_mutex_unlock(&ct->err_lock);
	return err;
}

/* Errors: -EINVAL (not consumed). */
int consumer_trace_sync(struct dp_trace *t)
{
	struct cons_trace *ct = t->consumer;
	if (!ct)
		return -EINVAL;
	if (t->session && t->session->snapshot)
		return 0;
	pthread_mutex_lock(&ct->io_lock);
	for (uint32_t i = 0; i < t->nr_bufsets; i++) {
		struct cons_bufset *cb = &ct->sets[i];
		if (!cons_bufset_live(cb->b))
			continue;
		for (uint32_t cpu = 0; cpu < cb->b->rb.nr_cpus; cpu++)
			rb_flush_cpu(&cb->b->rb, cpu, false);
		cons_read_bufset(ct, cb, CONS_STUCK_MS);
	}
	pthread_mutex_unlock(&ct->io_lock);
	return 0;
}

void consumer_trace_remove(struct dp_trace *t)
{
	struct cons_trace *ct = t->consumer;
	if (!ct)
		return;
	if (ct->thread_started) {
		wake_thread(ct, true);
		pthread_join(ct->thread, NULL);
	}
	free_trace(ct);
}

void consumer_metadata_changed(struct dp_trace *t)
{
	struct cons_trace *ct = t->consumer;
	/* The thread rewrites the metadata on its next pass; packets that
	 * use the new ids are checked again before being written
	 * (cons_read_bufset), so waking it early only saves time. */
	if (ct)
		wake_thread(ct, false);
}

/*
 * Adds this buffer set's counters to *st (the caller zeroes it, and may
 * sum several sets): buffer memory, bytes reserved and not consumed,
 * events written (counted per packet by walking its event headers with
 * the trace's event classes), lost events (producers' count), lost
 * sub-buffers (overwritten unread, plus those given up because their
 * writer died mid-commit) and bytes written to the stream files.
 */
int consumer_bufset_stats(const struct dp_bufset *b, struct rtd_channel_stats *st)
{
	if (!cons_bufset_live(b))
		return -EINVAL;
	for (uint32_t cpu = 0; cpu < b->rb.nr_cpus; cpu++) {
		struct rb_stats s;
		rb_get_stats(&b->rb, cpu, &s);
		/* The counters are in memory the programs can write: what is
		 * used is bounded by what the buffer holds. */
		uint64_t size = b->rb.subbuf_size * b->rb.num_subbuf;
		uint64_t used = s.bytes_reserved - s.bytes_consumed;
		st->buffer_bytes += size;
		st->used_bytes += used > size ? size : used;
		st->events_lost += s.events_lost;
		st->subbufs_lost += s.subbufs_lost;
	}
	const struct cons_bufset *cb = b->consumer;
	if (cb) {
		/* Relaxed: statistics, written by the consumer thread. */
		st->events += __atomic_load_n(&cb->events, __ATOMIC_RELAXED);
		st->bytes_written += __atomic_load_n(&cb->bytes, __ATOMIC_RELAXED);
		st->subbufs_lost += __atomic_load_n(&cb->subbufs_skipped, __ATOMIC_RELAXED);
		st->packets_corrupt += __atomic_load_n(&cb->packets_corrupt, __ATOMIC_RELAXED);
		st->events_lost += __atomic_load_n(&cb->events_unwritten, __ATOMIC_RELAXED);
	}
	st->nr_buffer_sets++;
	return 0;
}
