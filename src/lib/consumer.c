/*
 * consumer.c - the embedded consumer: a thread of the traced process that
 * takes complete sub-buffers from every CPU's buffer (rb_get_subbuf),
 * writes each as one CTF packet to the channel's stream file for that CPU
 * and gives it back (rb_put_subbuf). It wakes on its read timer (Desnoyers & Dagenais 2012
 * Algorithm 8: delivery is polled, the fast path never wakes anyone),
 * flushes on its switch timer (Algorithm 4), and rewrites the metadata
 * when new events register.
 *
 * A packet that cannot be written (disk full, ...) is cut off its file
 * again, so the file always ends on a whole packet, and counted as lost
 * in the trace itself (ctf_walk.h's struct ctf_out: a header-only packet
 * in its place, events_discarded of later packets), so readers see how
 * many events are missing; writing resumes when space returns. Under
 * `ringtrace record`, RINGTRACE_ERROR_FD names a pipe on which the
 * consumer reports such errors in one line each (non-blocking: the
 * program never waits for it), so that record can say the trace is
 * incomplete and exit non-zero.
 *
 * Concurrency: one consumer thread; rt_consumer_stop may be called from
 * any other thread (once, under the session's stop lock);
 * rt_consumer_signal_stop from a signal handler.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include "../ctf/ctf_walk.h"
#include "../common/fs_util.h"
#include "../common/config_parse.h"
#include "rt_internal.h"
#include "../consumer/trace_dir.h"
#include "owned_fd.h"

struct rt_consumer {
	struct rt_channel *ch;
	pthread_t thread;
	bool running;
	/* Stop requests: the flag, then a byte on the pipe to wake the
	 * poll (owned_fd.h: the program may close them under us). */
	int stop_requested;
	struct rt_owned_fd wake_r, wake_w;
	/* Per-CPU stream files: fd -1 until created; RT_STREAM_REOPEN once
	 * the program closed it under us (then appended to by name). */
	struct rt_owned_fd *fds;
	struct ctf_out *outs;		/* per-CPU: whole packets, losses */
	uint64_t generation;		/* registry generation in the metadata */
	uint64_t packets, bytes;
	bool failing;			/* the last write failed */
	int first_err;			/* -errno of the first failure */
	char first_what[24];
	uint64_t lost_packets, lost_events;
	int error_fd;			/* record's pipe, -1: none */
	int stop_signal;		/* set by the signal handler */
};

#define RT_STREAM_REOPEN (-2)

static struct rt_consumer cons = { .wake_r = RT_OWNED_FD_NONE, .wake_w = RT_OWNED_FD_NONE,
				   .error_fd = -1 };

/* One line to `ringtrace record`, if it listens (never blocks). */
static void tell_record(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void tell_record(const char *fmt, ...)
{
	if (cons.error_fd < 0)
		return;
	char line[PATH_MAX + 256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	ssize_t w = write(cons.error_fd, line, (size_t)n);
	(void)w;
}

/* A write of `what` failed with -err, losing `events` events of one
 * packet (0, 0 for the metadata): warn once per failing stretch. */
static void write_failed(const char *what, int err, uint64_t packets, uint64_t events)
{
	if (!cons.failing) {
		rt_warn("cannot write %s in %s: %s; events are being lost", what,
			rt_cfg.output, strerror(-err));
		tell_record("cannot write %s in %s: %s", what, rt_cfg.output, strerror(-err));
	}
	cons.failing = true;
	if (!cons.first_err) {
		cons.first_err = err;
		snprintf(cons.first_what, sizeof(cons.first_what), "%s", what);
	}
	cons.lost_packets += packets;
	cons.lost_events += events;
}

static void write_ok(void)
{
	if (cons.failing)
		rt_warn("writing in %s again; %llu events in %llu packets could not be written",
			rt_cfg.output, (unsigned long long)cons.lost_events,
			(unsigned long long)cons.lost_packets);
	cons.failing = false;
}

/* ctf_class_fn over the registry (caller holds rt_registry_lock): an
 * event's id is its index there. */
static bool registry_fields(void *arg, uint32_t id, const struct rt_field_desc **fields,
			    uint32_t *nr)
{
	(void)arg;
	struct rt_event_class **cls;
	size_t n = rt_registry_classes(&cls);
	if (id >= n)
		return false;
	*fields = cls[id]->fields;
	*nr = cls[id]->nr_fields;
	return true;
}

/* Events in a trimmed packet of ours (0 if it does not decode). */
static uint64_t packet_events(const char *data, uint64_t used)
{
	struct ctf_packet_header h;
	memcpy(&h, data, sizeof(h));
	uint32_t ctx[RT_CTX_COUNT];
	for (uint32_t i = 0; i < cons.ch->nr_ctx; i++)
		ctx[i] = rt_context_type(cons.ch->ctx[i]);
	pthread_mutex_lock(&rt_registry_lock);
	int64_t n = ctf_walk_events(data + CTF_PACKET_HEADER_SIZE, data + used, ctx,
				    cons.ch->nr_ctx, registry_fields, NULL, h.timestamp_begin,
				    h.timestamp_end);
	pthread_mutex_unlock(&rt_registry_lock);
	return n > 0 ? (uint64_t)n : 0;
}

/* channel0_CPU, or channel0_CPU-SLOT for the other processes of a
 * traced process tree (trace_dir.h). */
static void stream_name(uint32_t cpu, char *name, size_t len)
{
	if (cons.ch->slot)
		snprintf(name, len, "%s_%u-%u", cons.ch->name, cpu, cons.ch->slot);
	else
		snprintf(name, len, "%s_%u", cons.ch->name, cpu);
}

/* Append the packet (len bytes) to CPU cpu's stream file: created at the
 * first packet, written through its struct ctf_out (a packet that cannot
 * be written is cut off and accounted for there, as a packet of 0 events:
 * the caller adds them); when the program closed our descriptor (and may
 * use the number for its own file), appended by name from then on (a
 * failure there cannot be cut off). Returns 0 or -errno. */
static int stream_write(uint32_t cpu, char *data, size_t len)
{
	struct ctf_out *out = &cons.outs[cpu];
	struct rt_owned_fd *o = &cons.fds[cpu];
	char name[64];
	stream_name(cpu, name, sizeof(name));
	if (o->fd >= 0 && !rt_owned_fd_ok(o))
		o->fd = RT_STREAM_REOPEN;
	int ret = 0;
	if (o->fd == RT_STREAM_REOPEN) {
		ret = rt_file_append(rt_cfg.output, name, data, len);
	} else if (o->fd < 0) {
		int fd = rt_trace_dir_create_file(rt_cfg.output, name);
		ret = fd < 0 ? fd : rt_owned_fd_take(o, fd);
	}
	if (ret < 0)
		ctf_out_lose(out, data, 0);
	if (ret < 0 || o->fd == RT_STREAM_REOPEN)
		return ret;
	return ctf_out_append(out, o->fd, data, len, 0);
}

/* Write one packet: trim packet_size to the content (rounded up to 8
 * bytes; the sub-buffer is ours until rb_put_subbuf) and append it. */
static void write_packet(uint32_t cpu, const struct rb_read *r)
{
	struct ctf_packet_header *h = (struct ctf_packet_header *)r->data;
	uint64_t content_bits;
	memcpy(&content_bits, &h->content_size, 8);
	uint64_t bytes = (content_bits + 7) / 8;
	if (bytes < CTF_PACKET_HEADER_SIZE || bytes > r->data_size)
		bytes = r->data_size; /* cannot happen; keep the packet whole */
	uint64_t used = bytes;
	bytes = (bytes + 7) & ~7ULL;
	if (bytes > r->data_size)
		bytes = r->data_size;
	/* The padding up to the 8-byte boundary holds stale bytes of an
	 * earlier pass: zero it so traces are deterministic. */
	memset(r->data + used, 0, bytes - used);
	uint64_t packet_bits = bytes * 8;
	memcpy(&h->packet_size, &packet_bits, 8);
	int ret = stream_write(cpu, r->data, bytes);
	if (ret < 0) {
		/* The events are counted only when they are lost: a walk of
		 * every packet would cost the consumer time for nothing. */
		uint64_t n = packet_events(r->data, used);
		cons.outs[cpu].lost_events += n;
		write_failed("a stream file", ret, 1, n);
		return;
	}
	write_ok();
	cons.packets++;
	cons.bytes += bytes;
}

static void write_metadata(bool final)
{
	struct rt_clock_desc clk;
	rt_clock_describe(&clk, final);
	int ret = rt_trace_dir_write_metadata(rt_cfg.output, cons.ch, &clk,
					      &cons.generation);
	if (ret < 0)
		write_failed("the metadata", ret, 0, 0);
}

/* Move every complete sub-buffer to disk. Returns the most packets
 * written for one CPU. */
static uint32_t drain(void)
{
	uint32_t most = 0;
	for (uint32_t cpu = 0; cpu < cons.ch->rb.nr_cpus; cpu++) {
		struct rb_read r;
		uint32_t n = 0;
		while (rb_get_subbuf(&cons.ch->rb, cpu, &r) == 0) {
			/* The metadata goes to disk before a packet whose
			 * events may be of classes it lacks, so that a
			 * program dying right after still leaves a readable
			 * trace. Every event of the packet was recorded after
			 * its class's registration incremented the generation
			 * (release); this acquire load pairs with it. */
			if (__atomic_load_n(&rt_registry_generation, __ATOMIC_ACQUIRE) !=
			    cons.generation)
				write_metadata(false);
			write_packet(cpu, &r);
			rb_put_subbuf(&cons.ch->rb, cpu, &r);
			n++;
		}
		if (n > most)
			most = n;
	}
	return most;
}

/* Everything reserved has been consumed on every CPU. */
static bool all_consumed(void)
{
	for (uint32_t cpu = 0; cpu < cons.ch->rb.nr_cpus; cpu++) {
		struct rb_stats st;
		rb_get_stats(&cons.ch->rb, cpu, &st);
		if (st.bytes_consumed != st.bytes_reserved)
			return false;
	}
	return true;
}

static void final_flush(void)
{
	/* Bounded: a thread stopped between reserve and commit (killed by
	 * a signal, or still running at exit) must not hang us. */
	for (int round = 0; round < 200; round++) {
		/* -EAGAIN: the flush could not finish, e.g. a full buffer
		 * (discard mode) had no room for the packet that carries the
		 * last lost events: drain and flush again, even if everything
		 * reserved so far is consumed. */
		bool pending = false;
		for (uint32_t cpu = 0; cpu < cons.ch->rb.nr_cpus; cpu++)
			pending |= rb_flush_cpu(&cons.ch->rb, cpu, true) == -EAGAIN;
		drain();
		if (!pending && all_consumed())
			break;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	for (uint32_t cpu = 0; cpu < cons.ch->rb.nr_cpus; cpu++) {
		struct rt_owned_fd *o = &cons.fds[cpu];
		int ret = o->fd >= 0 && rt_owned_fd_ok(o) ? ctf_out_settle(&cons.outs[cpu], o->fd)
							   : 0;
		if (ret < 0)
			write_failed("a stream file", ret, 0, 0);
	}
	write_metadata(true);
	if (cons.first_err)
		tell_record("cannot write %s in %s: %s; %llu events in %llu packets could not "
			    "be written%s", cons.first_what, rt_cfg.output,
			    strerror(-cons.first_err), (unsigned long long)cons.lost_events,
			    (unsigned long long)cons.lost_packets,
			    cons.failing ? "" : " (written again since)");
	/* No fsync: the program's exit must not wait for the disk; the
	 * page cache has the data. */
	for (uint32_t cpu = 0; cpu < cons.ch->rb.nr_cpus; cpu++)
		rt_owned_fd_close(&cons.fds[cpu]);
}

/* CLOCK_MONOTONIC in milliseconds. */
static uint64_t now_ms(void)
{
	return rt_clock_monotonic_ns() / 1000000;
}

static void *consumer_main(void *arg)
{
	(void)arg;
	/* The read timer's period, shorter while buffers fill (rb_read_wait).
	 * With the default timer the first read comes after a millisecond (a
	 * program often traces most right after it starts), with a timer the
	 * user gave after that whole period. */
	const uint64_t max_wait = rt_cfg.read_timer_ms;
	uint64_t wait = rt_cfg.read_timer_set ? max_wait : 1, last_switch = now_ms();
	write_metadata(false);
	for (;;) {
		/* Without our wake pipe (closed by the program), the stop
		 * flag is seen at the next read timer. */
		struct pollfd p = { .fd = cons.wake_r.fd, .events = POLLIN };
		bool wake_ok = rt_owned_fd_ok(&cons.wake_r);
		poll(&p, wake_ok ? 1 : 0, (int)wait);
		/* Acquire: pairs with the release store of a stop request. */
		if (__atomic_load_n(&cons.stop_requested, __ATOMIC_ACQUIRE))
			break;
		uint64_t now = now_ms();
		if (rt_cfg.switch_timer_ms && now - last_switch >= rt_cfg.switch_timer_ms) {
			last_switch = now;
			for (uint32_t cpu = 0; cpu < cons.ch->rb.nr_cpus; cpu++)
				rb_flush_cpu(&cons.ch->rb, cpu, false);
		}
		wait = rb_read_wait(wait, max_wait, 1, drain(), cons.ch->rb.num_subbuf);
		/* Acquire: pairs with the registry's release increment. */
		if (__atomic_load_n(&rt_registry_generation, __ATOMIC_ACQUIRE) !=
		    cons.generation)
			write_metadata(false);
	}
	int sig = __atomic_load_n(&cons.stop_signal, __ATOMIC_ACQUIRE);
	if (sig)
		/* Release: pairs with the probes' acquire load; stop
		 * recording before the final flush, as rt_session_stop does. */
		__atomic_store_n(&rt_active_channel, NULL, __ATOMIC_RELEASE);
	final_flush();
	if (sig) {
		/* The process got SIGINT/SIGTERM: the trace is complete, now
		 * let the signal do what it would have done. */
		signal(sig, SIG_DFL);
		kill(getpid(), sig);
	}
	return NULL;
}

int rt_consumer_start(struct rt_channel *ch)
{
	cons.ch = ch;
	cons.fds = malloc(sizeof(*cons.fds) * ch->rb.nr_cpus);
	cons.outs = calloc(ch->rb.nr_cpus, sizeof(*cons.outs));
	if (!cons.fds || !cons.outs)
		return -ENOMEM;
	for (uint32_t i = 0; i < ch->rb.nr_cpus; i++)
		cons.fds[i] = RT_OWNED_FD_NONE;
	int wake[2], ret;
	if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	if ((ret = rt_owned_fd_take(&cons.wake_r, wake[0])) < 0 ||
	    (ret = rt_owned_fd_take(&cons.wake_w, wake[1])) < 0)
		return ret;

	/* The consumer never takes the program's signals. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&cons.thread, NULL, consumer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		return -ret;
	pthread_setname_np(cons.thread, "ringtrace-cons");
	cons.running = true;
	return 0;
}

void rt_consumer_fork_child(void)
{
	for (uint32_t cpu = 0; cons.fds && cpu < cons.ch->rb.nr_cpus; cpu++)
		rt_owned_fd_close(&cons.fds[cpu]);
	free(cons.fds);
	free(cons.outs);
	rt_owned_fd_close(&cons.wake_r);
	rt_owned_fd_close(&cons.wake_w);
	/* The child reports its own write errors to `record` too. */
	int error_fd = cons.error_fd;
	cons = (struct rt_consumer){ .wake_r = RT_OWNED_FD_NONE, .wake_w = RT_OWNED_FD_NONE,
				     .error_fd = error_fd };
}

void rt_consumer_stop(void)
{
	if (!cons.running)
		return;
	/* Release: pairs with the consumer's acquire load. */
	__atomic_store_n(&cons.stop_requested, 1, __ATOMIC_RELEASE);
	char c = 's';
	if (rt_owned_fd_ok(&cons.wake_w) && write(cons.wake_w.fd, &c, 1) < 0 &&
	    errno != EAGAIN)
		rt_warn("cannot wake the consumer: %s", strerror(errno));
	if (pthread_equal(pthread_self(), cons.thread))
		return;
	pthread_join(cons.thread, NULL);
	cons.running = false;
}

void rt_consumer_signal_stop(int sig)
{
	int saved = errno;
	int expected = 0;
	/* Release: pairs with the consumer's acquire load after its final
	 * flush. Only the first signal counts. */
	__atomic_compare_exchange_n(&cons.stop_signal, &expected, sig, false,
				    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	/* Release: pairs with the consumer's acquire load. */
	__atomic_store_n(&cons.stop_requested, 1, __ATOMIC_RELEASE);
	char c = 'S';
	if (rt_owned_fd_ok(&cons.wake_w)) {
		ssize_t n = write(cons.wake_w.fd, &c, 1);
		(void)n;
	}
	errno = saved;
}

/* RINGTRACE_ERROR_FD (set by `ringtrace record`): read before the
 * session's constructor clears the RINGTRACE_ variables, so this one runs
 * first. The descriptor must be a pipe; it moves to a close-on-exec,
 * non-blocking descriptor above the ones programs usually use, and the
 * variable is removed so programs this one runs do not write to it. */
__attribute__((constructor(101))) static void error_fd_init(void)
{
	const char *v = getenv("RINGTRACE_ERROR_FD");
	if (!v)
		return;
	char *end;
	long fd = strtol(v, &end, 10);
	unsetenv("RINGTRACE_ERROR_FD");
	struct stat st;
	if (*end || fd < 0 || fd > INT_MAX || fstat((int)fd, &st) < 0 || !S_ISFIFO(st.st_mode))
		return;
	int high = fcntl((int)fd, F_DUPFD_CLOEXEC, 512);
	if (high < 0)
		return;
	close((int)fd);
	fcntl(high, F_SETFL, O_NONBLOCK);
	cons.error_fd = high;
}
