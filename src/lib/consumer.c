/*
 * consumer.c - the embedded consumer: a thread of the traced process that
 * takes complete sub-buffers from every CPU's buffer (rb_get_subbuf),
 * writes each as one CTF packet to the channel's stream file for that CPU
 * and gives it back (rb_put_subbuf). It wakes on its read timer (Desnoyers & Dagenais 2012
 * Algorithm 8: delivery is polled, the fast path never wakes anyone),
 * flushes on its switch timer (Algorithm 4), and rewrites the metadata
 * when new events register.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../fs/fs_util.h"
#include "rt_internal.h"
#include "trace_dir.h"

struct rt_consumer {
	struct rt_channel *ch;
	pthread_t thread;
	bool running;
	int wake[2];			/* pipe: stop requests */
	int *fds;			/* per-CPU stream files, -1 until used */
	uint64_t generation;		/* registry generation in the metadata */
	uint64_t packets, bytes;
	bool write_error_reported;
	int stop_signal;		/* set by the signal handler */
};

static struct rt_consumer cons = { .wake = { -1, -1 } };

static void report_write_error(const char *what, int err)
{
	if (cons.write_error_reported)
		return;
	cons.write_error_reported = true;
	rt_warn("cannot write %s in %s: %s; events are being lost", what,
		rt_cfg.output, strerror(-err));
}

static int stream_fd(uint32_t cpu)
{
	if (cons.fds[cpu] >= 0)
		return cons.fds[cpu];
	/* channel0_CPU, or channel0_CPU-SLOT for the other processes of a
	 * traced process tree (trace_dir.h). */
	char name[64];
	if (cons.ch->slot)
		snprintf(name, sizeof(name), "%s_%u-%u", cons.ch->name, cpu, cons.ch->slot);
	else
		snprintf(name, sizeof(name), "%s_%u", cons.ch->name, cpu);
	cons.fds[cpu] = rt_trace_dir_create_file(rt_cfg.output, name);
	return cons.fds[cpu];
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
	int fd = stream_fd(cpu);
	int ret = fd < 0 ? fd : rt_write_all(fd, r->data, bytes);
	if (ret < 0) {
		report_write_error("a stream file", ret);
		return;
	}
	cons.packets++;
	cons.bytes += bytes;
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
			write_packet(cpu, &r);
			rb_put_subbuf(&cons.ch->rb, cpu, &r);
			n++;
		}
		if (n > most)
			most = n;
	}
	return most;
}

static void write_metadata(bool final)
{
	struct rt_clock_desc clk;
	rt_clock_describe(&clk, final);
	int ret = rt_trace_dir_write_metadata(rt_cfg.output, cons.ch, &clk,
					      &cons.generation, cons.ch->fragment_fd);
	if (ret < 0)
		report_write_error("the metadata", ret);
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
	write_metadata(true);
	for (uint32_t cpu = 0; cpu < cons.ch->rb.nr_cpus; cpu++) {
		if (cons.fds[cpu] >= 0) {
			/* No fsync: the program's exit must not wait for the
			 * disk; the page cache has the data. */
			close(cons.fds[cpu]);
			cons.fds[cpu] = -1;
		}
	}
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
		struct pollfd p = { .fd = cons.wake[0], .events = POLLIN };
		int r = poll(&p, 1, (int)wait);
		if (r > 0)
			break; /* stop requested */
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
	cons.fds = malloc(sizeof(int) * ch->rb.nr_cpus);
	if (!cons.fds)
		return -ENOMEM;
	for (uint32_t i = 0; i < ch->rb.nr_cpus; i++)
		cons.fds[i] = -1;
	if (pipe2(cons.wake, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;

	/* The consumer never takes the program's signals. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int ret = pthread_create(&cons.thread, NULL, consumer_main, NULL);
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
		if (cons.fds[cpu] >= 0)
			close(cons.fds[cpu]);
	free(cons.fds);
	for (int i = 0; i < 2; i++)
		if (cons.wake[i] >= 0)
			close(cons.wake[i]);
	cons = (struct rt_consumer){ .wake = { -1, -1 } };
}

void rt_consumer_stop(void)
{
	if (!cons.running)
		return;
	char c = 's';
	if (write(cons.wake[1], &c, 1) < 0 && errno != EAGAIN)
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
	char c = 'S';
	ssize_t n = write(cons.wake[1], &c, 1);
	(void)n;
	errno = saved;
}
