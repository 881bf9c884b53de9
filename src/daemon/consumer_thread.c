/*
 * consumer_thread.c - the consumer_* entry points of dp.h: each trace
 * and buffer set described to src/consumer (consumer.h), one thread per
 * trace reading its buffer sets on each channel's read timer and
 * flushing them on its switch timer, the drain, snapshots, errors and
 * statistics. Threading model: consumer_daemon.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "consumer_daemon.h"
#include "../common/warn.h"
#include "../consumer/recovery.h"

static bool bufset_live(const struct dp_bufset *b)
{
	return b->channel && b->rb.cpus && b->rb.nr_cpus > 0;
}

static uint64_t read_period_ns(const struct rtd_channel *ch)
{
	return (uint64_t)(ch->read_timer_ms ? ch->read_timer_ms : CONS_DEFAULT_READ_MS) *
	       1000000ull;
}

/* The switch timer's period of buffer set cb, 0 for none: its channel's
 * --switch-timer, and for a live session on a relay at most the live
 * delay (LTTng's live timer), so that an event reaches live viewers
 * within about that delay even when no sub-buffer fills. The flush
 * closes only a packet that holds events (rb_flush_cpu). */
static uint32_t live_delay_us(const struct cons_dtrace *ct)
{
	return ct->net && ct->t->session ? ct->t->session->live_delay_us : 0;
}

static uint64_t switch_period_ns(const struct cons_dtrace *ct, const struct cons_bufset *cb)
{
	uint64_t ns = (uint64_t)cb->b->channel->switch_timer_ms * 1000000ull;
	if (live_delay_us(ct)) {
		uint64_t live = (uint64_t)live_delay_us(ct) * 1000ull;
		if (!ns || live < ns)
			ns = live;
	}
	return ns;
}

static bool is_snapshot(const struct dp_trace *t)
{
	return t->session && t->session->snapshot;
}

/* Whether buffer set cb's packets go to its stream files as they come:
 * every channel of a normal session; in a snapshot session, a discard
 * channel (a hybrid session: the overwrite channels stay in memory for
 * the snapshots, the discard ones stream, and each snapshot copies what
 * they wrote). */
static bool streams(const struct cons_dtrace *ct, const struct cons_bufset *cb)
{
	return !is_snapshot(ct->t) || !cb->b->channel->overwrite;
}

/* Whether the trace has stream files (and so its metadata on disk). */
static bool writes_files(const struct cons_dtrace *ct)
{
	for (uint32_t i = 0; i < ct->t->nr_bufsets; i++)
		if (ct->sets[i].b && ct->sets[i].b->channel && streams(ct, &ct->sets[i]))
			return true;
	return false;
}

/* Before each packet: the metadata describes every class it may use. */
static int metadata_update(struct cons_dtrace *ct, bool force)
{
	/* On a relay the metadata is sent again whole with each new
	 * connection, and only then. */
	if (ct->net)
		return cons_net_metadata(ct->net, &ct->desc, ct->descs, ct->nr_descs);
	return cons_metadata_update(&ct->meta, &ct->desc, ct->descs, ct->nr_descs, force);
}

static int metadata_before_packet(void *arg)
{
	return metadata_update(arg, false);
}

/* A live session's switch timer, after its flush and read: each stream
 * of cb with nothing unread (all it reserved consumed, so sent) gets a
 * beacon saying it has no event before `t`, the trace clock read before
 * the flush (a later event's timestamp is not below it), so that live
 * viewers are told it is inactive instead of waiting for it (LTTng's
 * live timer). Stream s says t - s, as true: streams never tell the
 * same time (babeltrace2 warns, each period, that it cannot order two
 * inactive streams of the same time). */
static void send_beacons(struct cons_bufset *cb, uint64_t t)
{
	const struct cons_source *src = &cb->ch.src;
	for (uint32_t s = 0; src->ops->counts && s < src->nr_streams && s < t; s++) {
		struct cons_counts c;
		src->ops->counts(src->arg, s, &c);
		if (c.bytes_reserved == c.bytes_consumed)
			cons_net_sink_beacon(&cb->net, s, t - s);
	}
}

/* One pass of the timers whose time has come; returns the next deadline.
 * Caller holds io_lock. Snapshot sessions keep their overwrite channels'
 * data in the buffers (written by consumer_snapshot): only the switch
 * timer runs for those, so that a snapshot sees recent events. */
static uint64_t run_timers(struct cons_dtrace *ct)
{
	uint64_t now = cons_now_ns(), next = now + 1000000000ull;
	for (uint32_t i = 0; i < ct->t->nr_bufsets; i++) {
		struct cons_bufset *cb = &ct->sets[i];
		if (!cb->live)
			continue;
		const struct rtd_channel *ch = cb->b->channel;
		bool beacons = false;
		uint64_t t = 0;
		if (cb->next_switch_ns && now >= cb->next_switch_ns) {
			beacons = live_delay_us(ct) && streams(ct, cb);
			if (beacons)
				t = cb->b->rb.client.clock_read();
			/* rb_flush_cpu pins this thread to the CPU for a
			 * moment in rseq mode and restores its affinity. */
			cons_channel_flush(&cb->ch);
			cb->next_switch_ns = now + switch_period_ns(ct, cb);
			/* The packets just closed go out now, not a read
			 * period later. */
			cb->next_read_ns = now;
		}
		bool stream = streams(ct, cb);
		if (stream && now >= cb->next_read_ns) {
			/* The read timer's period, shorter while buffers
			 * fill (0: the first read, after the whole period). */
			const uint64_t max = read_period_ns(ch);
			uint32_t most = cons_channel_read(&cb->ch, CONS_STUCK_MS);
			cb->read_wait_ns = rb_read_wait(cb->read_wait_ns ? cb->read_wait_ns : max,
							max, CONS_READ_MIN_NS, most,
							cb->b->rb.num_subbuf);
			cb->next_read_ns = now + cb->read_wait_ns;
		}
		if (beacons)
			send_beacons(cb, t);
		if (stream && cb->next_read_ns < next)
			next = cb->next_read_ns;
		if (cb->next_switch_ns && cb->next_switch_ns < next)
			next = cb->next_switch_ns;
	}
	return next;
}

static void *consumer_main(void *arg)
{
	struct cons_dtrace *ct = arg;
	for (;;) {
		pthread_mutex_lock(&ct->io_lock);
		uint64_t next = run_timers(ct);
		if (writes_files(ct)) {
			int ret = metadata_update(ct, false);
			if (ret < 0)
				cons_errors_failed(&ct->errors, "the metadata", ret, 0, 0);
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

static void wake_thread(struct cons_dtrace *ct, bool stop)
{
	pthread_mutex_lock(&ct->wake_lock);
	ct->woken = true;
	if (stop)
		ct->stop = true;
	pthread_cond_signal(&ct->wake);
	pthread_mutex_unlock(&ct->wake_lock);
}

static void free_trace(struct cons_dtrace *ct)
{
	for (uint32_t i = 0; ct->sets && i < ct->t->nr_bufsets; i++) {
		struct cons_bufset *cb = &ct->sets[i];
		if (!cb->b)
			break; /* consumer_trace_add failed before this one */
		cons_files_free(&cb->files);
		cons_net_sink_free(&cb->net);
		cons_channel_fini(&cb->ch);
		cons_rb_source_fini(&cb->rs);
		consumer_classes_free(cb);
		cb->b->consumer = NULL;
	}
	free(ct->sets);
	free(ct->descs);
	free(ct->live);
	free(ct->net);
	cons_errors_fini(&ct->errors);
	pthread_cond_destroy(&ct->wake);
	pthread_mutex_destroy(&ct->wake_lock);
	pthread_mutex_destroy(&ct->io_lock);
	ct->t->consumer = NULL;
	free(ct);
}

static void log_error(void *arg, int err, const char *what, const char *line)
{
	(void)arg;
	(void)err;
	(void)what;
	rt_warn("%s", line);
}

/* The channel as the consumer needs it. */
static void describe_channel(struct cons_channel_desc *d, const struct rtd_channel *ch)
{
	*d = (struct cons_channel_desc){
		.name = ch->name, .stream_id = ch->id,
		.tracefile_size = ch->tracefile_size, .tracefile_count = ch->tracefile_count,
		.switch_timer_ms = ch->switch_timer_ms, .read_timer_ms = ch->read_timer_ms,
		.overwrite = ch->overwrite,
	};
	for (uint32_t k = 0; k < ch->nr_contexts && k < RT_CTX_COUNT; k++)
		d->contexts[d->nr_contexts++] = (uint32_t)ch->contexts[k];
}

/* The buffer set's source, sink and channel (a live one). 0 or -ENOMEM. */
static int setup_bufset(struct cons_dtrace *ct, struct cons_bufset *cb, uint64_t now)
{
	struct cons_source src;
	struct cons_sink sink;
	int ret = cons_rb_source_init(&cb->rs, &cb->b->rb, &src);
	if (cb->b->accts) {
		cb->rs.gone = dp_acct_gone;
		cb->rs.gone_arg = cb->b;
	}
	if (!ret && ct->net) {
		ret = cons_net_sink_init(&cb->net, ct->net, &cb->desc, cb->b->rb.nr_cpus);
		cons_net_sink(&sink, &cb->net);
	} else if (!ret) {
		ret = cons_files_init(&cb->files, ct->desc.dir, &cb->desc, cb->b->rb.nr_cpus);
		cons_files_sink(&sink, &cb->files);
	}
	if (!ret)
		ret = cons_channel_init(&cb->ch, &cb->desc, &ct->desc, &src, &sink, &ct->errors,
					true);
	if (ret < 0)
		return ret;
	cb->ch.metadata = metadata_before_packet;
	cb->ch.metadata_arg = ct;
	cb->live = true;
	ct->live[ct->nr_live++] = &cb->ch;
	cb->next_read_ns = now + read_period_ns(cb->b->channel);
	uint64_t period = switch_period_ns(ct, cb);
	if (period)
		cb->next_switch_ns = now + period;
	return 0;
}

/* A session streamed to a relay: the trace's place there, its directory
 * in the session (cons_net_relay_path of t->dir under the session's
 * output). 0, -ENOMEM, -EINVAL, -ENAMETOOLONG. */
static int relay_trace(struct cons_dtrace *ct)
{
	const struct rtd_session *s = ct->t->session;
	ct->net = malloc(sizeof(*ct->net));
	if (!ct->net)
		return -ENOMEM;
	/* On the relay's clock, as estimated by the session's connection
	 * (the first one's estimate stays the trace's: its metadata says
	 * it once). */
	struct cons_net *net = s->relay;
	pthread_mutex_lock(&net->lock);
	ct->desc.hostname = net->host;
	ct->desc.relay_clock = net->clock_error_ns != 0;
	ct->desc.relay_offset_ns = net->clock_offset_ns;
	ct->desc.relay_error_ns = net->clock_error_ns;
	pthread_mutex_unlock(&net->lock);
	if (ct->desc.relay_clock)
		ctf_clock_shift(&ct->desc.clock, ct->desc.relay_offset_ns);
	return cons_net_trace_open(ct->net, net, s->output, ct->t->dir);
}

/* --shm-path: each buffer set's description beside its file (recovery.h),
 * from the trace's classes now, so that `ringtrace recover` can decode
 * every event a program may record with the ids it was given. Called when
 * the trace starts and by the registry before it hands out new ids (one
 * thread: the registry's). 0 or the first -errno with a message in err. */
static int describe_bufsets(struct cons_dtrace *ct, char *err, size_t errlen)
{
	int ret = 0;
	for (uint32_t i = 0; i < ct->t->nr_bufsets; i++) {
		const struct dp_bufset *b = &ct->t->bufsets[i];
		if (!b->shm_name[0])
			continue;
		int r = cons_recovery_describe(ct->t->session->shm_path, b->shm_name, &ct->desc,
					       &ct->sets[i].desc, err, errlen);
		if (r < 0 && !ret)
			ret = r;
	}
	return ret;
}

/* Errors: -ENOMEM; -errno of pthread_create or of the metadata's first
 * write (mkdir, open, write, rename), of the buffers' descriptions. */
int consumer_trace_add(struct dp_trace *t, char *err, size_t errlen)
{
	struct cons_dtrace *ct = calloc(1, sizeof(*ct));
	if (!ct) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ct->t = t;
	t->consumer = ct;
	snprintf(ct->dirs[0], sizeof(ct->dirs[0]), "%s", t->dir);
	pthread_mutex_init(&ct->io_lock, NULL);
	pthread_mutex_init(&ct->wake_lock, NULL);
	cons_errors_init(&ct->errors, ct->dirs[0], log_error, ct);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ct->wake, &ca);
	pthread_condattr_destroy(&ca);

	ct->desc = (struct cons_trace_desc){
		.dir = ct->dirs[0], .clock = t->clock,
		.procname = t->pid ? t->procname : NULL, .vpid = t->pid,
		.trace_name = t->session ? t->session->name : "ringtrace",
	};
	memcpy(ct->desc.uuid, t->uuid, sizeof(ct->desc.uuid));
	consumer_classes(ct, &ct->desc.classes);

	int ret = -ENOMEM;
	if (t->session && t->session->net && (!t->session->relay || relay_trace(ct) < 0)) {
		snprintf(err, errlen, "cannot stream %s to the relay", t->dir);
		ret = -EINVAL;
		goto fail;
	}
	size_t n = t->nr_bufsets ? t->nr_bufsets : 1;
	ct->sets = calloc(n, sizeof(*ct->sets));
	ct->descs = calloc(n, sizeof(*ct->descs));
	ct->live = calloc(n, sizeof(*ct->live));
	if (!ct->sets || !ct->descs || !ct->live)
		goto fail_msg;
	uint64_t now = cons_now_ns();
	for (uint32_t i = 0; i < t->nr_bufsets; i++) {
		struct cons_bufset *cb = &ct->sets[i];
		cb->b = &t->bufsets[i];
		cb->b->consumer = cb;
		/* Channels are immutable once the session started (rtd.h). */
		if (!cb->b->channel)
			continue;
		describe_channel(&cb->desc, cb->b->channel);
		ct->descs[ct->nr_descs++] = &cb->desc;
		if (bufset_live(cb->b) && setup_bufset(ct, cb, now) < 0)
			goto fail_msg;
	}
	ret = describe_bufsets(ct, err, errlen);
	if (ret < 0)
		goto fail;
	/* A relay that is away now gets the metadata when it is back. */
	if (writes_files(ct) && !ct->net) {
		ret = metadata_update(ct, true);
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

/*
 * Final flush of every CPU, then read until everything reserved is
 * consumed (cons_drain: bounded, what is given up counted in
 * subbufs_lost), then the header-only packets that stand for packets
 * that could not be written, and the metadata. In snapshot sessions the
 * data stays in the buffers: only the flush is done (a later snapshot
 * then holds the last events). Write errors are counted and kept for
 * consumer_trace_error. Returns 0 (-EINVAL: not consumed).
 */
int consumer_trace_drain(struct dp_trace *t)
{
	struct cons_dtrace *ct = t->consumer;
	if (!ct)
		return -EINVAL;
	/* Streaming channels are read to the end, a snapshot session's
	 * overwrite channels only flushed (their data stays for a later
	 * snapshot): two drains, each with its bound. */
	struct cons_channel **part = calloc(ct->nr_live ? ct->nr_live : 1, sizeof(*part));
	pthread_mutex_lock(&ct->io_lock);
	for (int read = 1; part && read >= 0; read--) {
		size_t n = 0;
		for (uint32_t i = 0; i < t->nr_bufsets; i++)
			if (ct->sets[i].live && streams(ct, &ct->sets[i]) == (read == 1))
				part[n++] = &ct->sets[i].ch;
		if (n)
			cons_drain(part, n, read == 1);
	}
	if (!part)	/* out of memory: one drain, read as the session's kind says */
		cons_drain(ct->live, ct->nr_live, !is_snapshot(t));
	free(part);
	/* On a relay, written means stored there: sent is not enough. */
	if (ct->net && cons_net_sync(ct->net->net) < 0 && ct->nr_live)
		cons_errors_failed(&ct->errors, "packets to the relay", -ENOTCONN, 0, 0);
	if (writes_files(ct)) {
		int r = metadata_update(ct, true);
		if (r < 0)
			cons_errors_failed(&ct->errors, "the metadata", r, 0, 0);
	}
	pthread_mutex_unlock(&ct->io_lock);
	return 0;
}

int consumer_trace_error(struct dp_trace *t, bool take, char *msg, size_t len)
{
	struct cons_dtrace *ct = t->consumer;
	return ct ? cons_errors_message(&ct->errors, take, msg, len) : 0;
}

/* Errors: -EINVAL (not consumed). */
int consumer_trace_sync(struct dp_trace *t)
{
	struct cons_dtrace *ct = t->consumer;
	if (!ct)
		return -EINVAL;
	pthread_mutex_lock(&ct->io_lock);
	for (uint32_t i = 0; i < t->nr_bufsets; i++) {
		struct cons_bufset *cb = &ct->sets[i];
		if (!cb->live || !streams(ct, cb))
			continue;
		cons_channel_flush(&cb->ch);
		cons_channel_read(&cb->ch, CONS_STUCK_MS);
	}
	if (ct->net)
		cons_net_sync(ct->net->net);
	pthread_mutex_unlock(&ct->io_lock);
	return 0;
}

void consumer_trace_remove(struct dp_trace *t)
{
	struct cons_dtrace *ct = t->consumer;
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
	struct cons_dtrace *ct = t->consumer;
	char err[PATH_MAX + 256];
	if (ct && describe_bufsets(ct, err, sizeof(err)) < 0)
		rt_warn("%s (ringtrace recover will not decode the new events)", err);
	/* The thread rewrites the metadata on its next pass; packets that
	 * use the new ids bring it up to date before they are written
	 * (cons_channel_read), so waking it early only saves time. */
	if (ct)
		wake_thread(ct, false);
}

/* Errors: -EINVAL (the trace is not being consumed), -ENOMEM, -errno of
 * mkdir/open/write/rename in dir (cons_snapshot). */
int consumer_snapshot(struct dp_trace *t, const char *dir, uint64_t max_size,
		      char *err, size_t errlen)
{
	struct cons_dtrace *ct = t->consumer;
	if (!ct) {
		snprintf(err, errlen, "no consumer for the trace in %s", t->dir);
		return -EINVAL;
	}
	/* The overwrite channels' buffers are copied; a hybrid session's
	 * streaming channels write out what they hold, then their files are
	 * copied beside (max_size is for the former). */
	struct cons_channel **mem = calloc(ct->nr_live ? ct->nr_live : 1, sizeof(*mem));
	if (!mem) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	size_t nr_mem = 0;
	pthread_mutex_lock(&ct->io_lock);
	for (uint32_t i = 0; i < t->nr_bufsets; i++) {
		struct cons_bufset *cb = &ct->sets[i];
		if (!cb->live)
			continue;
		if (!streams(ct, cb)) {
			mem[nr_mem++] = &cb->ch;
			continue;
		}
		cons_channel_flush(&cb->ch);
		cons_channel_read(&cb->ch, CONS_STUCK_MS);
	}
	int ret = cons_snapshot(mem, nr_mem, &ct->desc, ct->descs, ct->nr_descs, dir, max_size,
				err, errlen);
	for (uint32_t i = 0; ret == 0 && i < t->nr_bufsets; i++)
		if (ct->sets[i].live && streams(ct, &ct->sets[i]))
			ret = cons_files_copy(&ct->sets[i].files, dir, err, errlen);
	pthread_mutex_unlock(&ct->io_lock);
	free(mem);
	return ret;
}

/*
 * The streaming channels end their packets at the rotation point and
 * what began before is written in the current directory (cons_rotate),
 * whose metadata is then rewritten whole (every class registered, the
 * clock's last calibration); the trace goes on in `dir`, its metadata
 * written there at once. Errors: -EINVAL (not consumed), -ENAMETOOLONG,
 * -ENOMEM, -errno of the first metadata write in dir, with a message.
 */
int consumer_trace_rotate(struct dp_trace *t, const char *dir, char *err, size_t errlen)
{
	struct cons_dtrace *ct = t->consumer;
	if (!ct) {
		snprintf(err, errlen, "no consumer for the trace in %s", t->dir);
		return -EINVAL;
	}
	if (strlen(dir) >= sizeof(ct->dirs[0]) || strlen(dir) >= sizeof(t->dir)) {
		snprintf(err, errlen, "trace chunk path too long: %s", dir);
		return -ENAMETOOLONG;
	}
	struct cons_channel **part = calloc(ct->nr_live ? ct->nr_live : 1, sizeof(*part));
	if (!part) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	pthread_mutex_lock(&ct->io_lock);
	unsigned next = !ct->cur;
	snprintf(ct->dirs[next], sizeof(ct->dirs[next]), "%s", dir);
	size_t n = 0;
	for (uint32_t i = 0; i < t->nr_bufsets; i++)
		if (ct->sets[i].live && streams(ct, &ct->sets[i]))
			part[n++] = &ct->sets[i].ch;
	int ret = cons_rotate(part, n, ct->dirs[next]);
	if (ret < 0)
		cons_errors_failed(&ct->errors, "a stream file", ret, 0, 0);
	if (writes_files(ct) && (ret = metadata_update(ct, true)) < 0)
		cons_errors_failed(&ct->errors, "the metadata", ret, 0, 0);
	/* The next chunk. */
	ct->cur = next;
	ct->desc.dir = ct->dirs[next];
	pthread_mutex_lock(&ct->errors.lock);
	ct->errors.dir = ct->dirs[next];
	pthread_mutex_unlock(&ct->errors.lock);
	ct->meta = (struct cons_metadata_state){ 0 };
	memcpy(t->dir, dir, strlen(dir) + 1);
	ret = writes_files(ct) ? metadata_update(ct, true) : 0;
	if (ret < 0)
		snprintf(err, errlen, "cannot write the metadata in %s: %s", dir, strerror(-ret));
	pthread_mutex_unlock(&ct->io_lock);
	free(part);
	return ret;
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
	if (!bufset_live(b))
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
	if (cb && cb->live) {
		struct cons_stats cs = { 0 };
		cons_channel_stats(&cb->ch, &cs);
		/* Packets the relay went away with were counted written. */
		uint64_t unstored = cons_net_sink_unstored(&cb->net);
		st->events += cs.events - (unstored < cs.events ? unstored : cs.events);
		st->bytes_written += cs.bytes;
		st->subbufs_lost += cs.subbufs_skipped;
		st->packets_corrupt += cs.packets_corrupt;
		st->events_lost += cs.events_unwritten + unstored;
	}
	st->nr_buffer_sets++;
	return 0;
}
