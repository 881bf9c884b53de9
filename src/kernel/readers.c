/*
 * readers.c - an instance's per-CPU buffers (per_cpu/cpuN/trace_pipe_raw)
 * read page by page, and the per-CPU reader threads that move pages out
 * of the kernel's buffers as they fill (kernel_internal.h, struct
 * rtk_cpus).
 *
 * Without readers, rtk_cpus_read reads the CPU's file (non-blocking,
 * partly filled pages included) into one page buffer. With readers (one
 * thread per CPU, between rtk_cpus_start and rtk_cpus_stop), each thread
 * sleeps in poll() on its CPU's file, which the kernel wakes when the
 * buffer is the instance's buffer_percent full (instance.c sets it), or
 * after the period,
 * and then reads every page the buffer holds into its queue, a
 * single-producer single-consumer ring of pages; rtk_cpus_read takes the
 * queue's pages, oldest first. The queue's pages are the kernel's, copied
 * as they were: the CPU's converter (trace.c through source.c, a thread
 * of writer.c per CPU) makes the packets, and sleeps in rtk_cpus_wait
 * until its reader says the queue is a quarter full (the CPU's ready
 * eventfd) or its period passed. A reader whose queue is full leaves the
 * pages in the kernel's buffer (which then counts its losses as without
 * readers) and retries after RTK_READERS_FULL_MS.
 *
 * A flight recorder's readers (rtk_cpus_start's `ring`) keep the newest
 * pages instead: a reader whose queue is full drops its oldest page (its
 * records counted in `dropped`, rtk_cpus_dropped) to queue the next, so
 * that the queue holds the newest buffer's worth of pages, which
 * snapshots copy (rtk_cpus_peek) without taking them: a second snapshot
 * still holds what the first did, as far as it is not older than the
 * window. A page the kernel flags "events missed before" (it overwrote
 * pages the reader was too late for) drops every older page too, so that
 * the queue holds a run of the newest pages without a hole, as the
 * kernel's buffer did. Nothing reads such a queue while its readers run.
 *
 * A sweep (rtk_cpus_sweep) kicks every reader (its kick eventfd) to move
 * what its CPU's buffer holds now into its queue, and waits until each
 * says it did (swept, under sweep_lock): what the conversion asks for
 * before it gives up looking for a thread's creation, recorded on another
 * CPU whose reader had not woken yet.
 *
 * Order: while readers run, the converter reads the queue only; after
 * rtk_cpus_stop (threads joined, each after a last sweep of its CPU's
 * buffer), the queue first and then the file, so pages come out in the
 * kernel's order. Any thread may look at a CPU's queued pages ahead of
 * its converter's reads (rtk_cpus_peek: a copy, made under the CPU's
 * lock, which the converter takes to give a page back).
 *
 * Queue slots: slot i % cap holds the page of sequence number i, len[i %
 * cap] its size. `tail` (written by the reader only) counts the pages
 * queued, `head` (written by the converter only, under the CPU's lock)
 * those given back; the converter holds page head (the page its last read
 * returned) until its next read of that CPU.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "kernel_internal.h"

/* A reader whose queue is full retries after this long. */
#define RTK_READERS_FULL_MS 1
/* A queue holds at most this much per CPU (and no more than the buffer). */
#define RTK_READERS_QUEUE_MAX_KB 16384u

struct rtk_cpu {
	int fd;			/* trace_pipe_raw, O_NONBLOCK; -1: no such CPU */
	void *page;		/* a direct read's page */
	/* The queue (readers only). */
	char *slots;		/* cap pages */
	uint32_t *len;		/* cap sizes */
	pthread_mutex_t lock;	/* head's moves against rtk_cpus_peek */
	uint64_t head;		/* converter's, under lock; atomic */
	uint64_t tail;		/* reader's; atomic */
	bool holding;		/* converter's: page head is out */
	int ready_fd;		/* eventfd: the queue passed a quarter */
	uint64_t dropped;	/* ring: records of the pages dropped; atomic */
	int kick_fd;		/* eventfd: sweep now */
	uint64_t swept;		/* the last sweep done; under all->sweep_lock */
	int err;		/* reader's first read error; atomic, message in errmsg */
	char errmsg[160];
	pthread_t thread;
	bool started;
	struct rtk_cpus *all;
	unsigned cpu;
};

struct rtk_cpus {
	unsigned nr;
	size_t page_size;
	struct rtk_cpu *c;	/* [nr] */
	uint32_t cap;		/* pages per queue */
	int stop_fd;		/* eventfd: readers return (-1: none) */
	unsigned period_ms;
	bool ring;		/* full queues drop their oldest page */
	pthread_mutex_t sweep_lock;	/* kicks, each CPU's swept */
	pthread_cond_t sweep_cond;	/* a reader swept (CLOCK_MONOTONIC) */
	uint64_t kicks;		/* sweeps asked for; atomic, written under sweep_lock */
	bool running;		/* atomic: readers started and not yet joined */
};

int rtk_cpus_open(struct rtk_cpus **out, unsigned nr, size_t page_size,
		  int (*path)(unsigned cpu, char *buf, size_t len, void *arg), void *arg,
		  char *err, size_t errlen)
{
	struct rtk_cpus *cs = calloc(1, sizeof(*cs));
	if (!cs || !(cs->c = calloc(nr ? nr : 1, sizeof(*cs->c)))) {
		/* Before its locks: nothing else to undo. */
		free(cs);
		rt_errf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	cs->page_size = page_size;
	cs->stop_fd = -1;
	pthread_mutex_init(&cs->sweep_lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cs->sweep_cond, &ca);
	pthread_condattr_destroy(&ca);
	for (unsigned i = 0; i < nr; i++) {
		cs->c[i] = (struct rtk_cpu){ .fd = -1, .ready_fd = -1, .kick_fd = -1, .all = cs,
					     .cpu = i };
		pthread_mutex_init(&cs->c[i].lock, NULL);
	}
	cs->nr = nr;
	for (unsigned i = 0; i < nr; i++) {
		if (!(cs->c[i].page = malloc(page_size))) {
			rt_errf(err, errlen, "out of memory");
			rtk_cpus_close(cs);
			return -ENOMEM;
		}
	}
	for (unsigned i = 0; i < nr; i++) {
		char file[4096];
		int ret = path(i, file, sizeof(file), arg);
		if (ret < 0) {
			rt_errf(err, errlen, "cannot name per_cpu/cpu%u/trace_pipe_raw: %s", i,
				strerror(-ret));
			rtk_cpus_close(cs);
			return ret;
		}
		cs->c[i].fd = open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		/* A CPU the kernel does not have (possible but absent). */
		if (cs->c[i].fd < 0 && errno != ENOENT) {
			ret = -errno;
			rt_errf(err, errlen, "cannot open %s: %s", file, strerror(errno));
			rtk_cpus_close(cs);
			return ret;
		}
	}
	*out = cs;
	return 0;
}

/* One page of the file: its size, 0 when there is none now. */
static long read_file(int fd, void *page, size_t size)
{
	ssize_t n = read(fd, page, size);
	if (n >= 0)
		return (long)n;
	return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -errno;
}

/* A ring's pages from head up to `to` are dropped (under the lock: no
 * peek is copying them), their records counted; the new head. */
static uint64_t drop_older(struct rtk_cpu *c, uint64_t head, uint64_t to)
{
	struct rtk_cpus *cs = c->all;
	uint64_t n = 0;
	for (uint64_t k = head; k < to; k++) {
		uint32_t o = (uint32_t)(k % cs->cap);
		long r = rtk_page_records(c->slots + (size_t)o * cs->page_size, c->len[o]);
		n += r > 0 ? (uint64_t)r : 0;
	}
	pthread_mutex_lock(&c->lock);
	/* Release: pairs with the acquire loads of head (peek's is under the
	 * lock anyway). */
	__atomic_store_n(&c->head, to, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&c->lock);
	/* Relaxed: a count, read by rtk_cpus_dropped. */
	__atomic_fetch_add(&c->dropped, n, __ATOMIC_RELAXED);
	return to;
}

static void *reader_main(void *arg)
{
	struct rtk_cpu *c = arg;
	struct rtk_cpus *cs = c->all;
	uint32_t quarter = cs->cap / 4 ? cs->cap / 4 : 1;
	for (;;) {
		struct pollfd p[3] = { { .fd = c->fd, .events = POLLIN },
				       { .fd = cs->stop_fd, .events = POLLIN },
				       { .fd = c->kick_fd, .events = POLLIN } };
		if (poll(p, 3, (int)cs->period_ms) < 0 && errno != EINTR)
			break;
		/* Stopping: a last sweep of what the buffer holds (tracing is
		 * off by then), so that the drain sees every CPU's pages in the
		 * queues (rtk_cpus_peek). */
		bool stop = p[1].revents != 0;
		uint64_t v, kick = 0;
		if (p[2].revents && read(c->kick_fd, &v, sizeof(v)) > 0)
			/* Acquire: pairs with rtk_cpus_sweep's release (a
			 * number: the sweep this one answers). */
			kick = __atomic_load_n(&cs->kicks, __ATOMIC_ACQUIRE);
		/* Every page there is now, while the queue has room. */
		for (;;) {
			/* Acquire: pairs with the converter's release of head
			 * (rtk_cpus_read): the slot it gave back is no longer
			 * read. */
			uint64_t head = __atomic_load_n(&c->head, __ATOMIC_ACQUIRE);
			uint64_t tail = c->tail;
			if (tail - head >= cs->cap && cs->ring) {
				/* The oldest page makes room. */
				drop_older(c, head, head + 1);
				continue;
			}
			if (tail - head >= cs->cap) {
				struct pollfd s = { .fd = cs->stop_fd, .events = POLLIN };
				if (stop || poll(&s, 1, RTK_READERS_FULL_MS) > 0)
					return NULL;
				continue;
			}
			uint32_t i = (uint32_t)(tail % cs->cap);
			long n = read_file(c->fd, c->slots + (size_t)i * cs->page_size,
					   cs->page_size);
			if (n < 0) {
				snprintf(c->errmsg, sizeof(c->errmsg),
					 "cannot read the pages of CPU %u: %s", c->cpu,
					 strerror((int)-n));
				/* Release: the message before the error. */
				__atomic_store_n(&c->err, (int)n, __ATOMIC_RELEASE);
				return NULL;
			}
			if (n == 0)
				break;
			c->len[i] = (uint32_t)n;
			if (cs->ring && tail != head && rtk_page_missed(c->slots + (size_t)i * cs->page_size,
								      (size_t)n))
				head = drop_older(c, head, tail);
			/* Release: pairs with the converter's acquire of tail;
			 * the page and its size are written before it is
			 * counted. */
			__atomic_store_n(&c->tail, tail + 1, __ATOMIC_RELEASE);
			if (tail + 1 - head == quarter) {
				uint64_t one = 1;
				if (write(c->ready_fd, &one, sizeof(one)) < 0)
					(void)0;	/* the converter wakes at its period */
			}
		}
		if (kick) {
			pthread_mutex_lock(&cs->sweep_lock);
			if (c->swept < kick)
				c->swept = kick;
			pthread_cond_broadcast(&cs->sweep_cond);
			pthread_mutex_unlock(&cs->sweep_lock);
		}
		if (stop)
			return NULL;
	}
	return NULL;
}

int rtk_cpus_sweep(struct rtk_cpus *cs, int timeout_ms)
{
	/* Acquire: pairs with rtk_cpus_start's release (the readers and
	 * their started flags). */
	if (!cs || !__atomic_load_n(&cs->running, __ATOMIC_ACQUIRE))
		return 1;
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	int done = 0;
	pthread_mutex_lock(&cs->sweep_lock);
	uint64_t k = cs->kicks + 1;
	/* Release: pairs with the readers' acquire load. */
	__atomic_store_n(&cs->kicks, k, __ATOMIC_RELEASE);
	uint64_t one = 1;
	for (unsigned i = 0; i < cs->nr; i++)
		if (cs->c[i].started && write(cs->c[i].kick_fd, &one, sizeof(one)) < 0)
			(void)0;	/* cannot fail: the counter is far from full */
	for (;;) {
		done = 1;
		for (unsigned i = 0; i < cs->nr; i++)
			if (cs->c[i].started && cs->c[i].swept < k)
				done = 0;
		if (done || pthread_cond_timedwait(&cs->sweep_cond, &cs->sweep_lock, &until))
			break;
	}
	pthread_mutex_unlock(&cs->sweep_lock);
	return done;
}

int rtk_cpus_start(struct rtk_cpus *cs, uint64_t buffer_kb, unsigned period_ms, bool ring,
		   char *err, size_t errlen)
{
	if (__atomic_load_n(&cs->running, __ATOMIC_RELAXED))
		return 0;
	cs->ring = ring;
	uint64_t kb = buffer_kb < RTK_READERS_QUEUE_MAX_KB ? buffer_kb : RTK_READERS_QUEUE_MAX_KB;
	uint64_t cap = kb * 1024 / cs->page_size;
	cs->cap = (uint32_t)(cap < 8 ? 8 : cap);
	cs->period_ms = period_ms ? period_ms : 1;
	int ret = -ENOMEM;
	if (cs->stop_fd < 0)
		cs->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	for (unsigned i = 0; cs->stop_fd >= 0 && i < cs->nr; i++) {
		if (cs->c[i].ready_fd < 0 &&
		    (cs->c[i].ready_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
			break;
		if (cs->c[i].kick_fd < 0 &&
		    (cs->c[i].kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
			break;
	}
	if (cs->stop_fd < 0 || (cs->nr && cs->c[cs->nr - 1].kick_fd < 0)) {
		ret = -errno;
		rt_errf(err, errlen, "eventfd: %s", strerror(errno));
		return ret;
	}
	uint64_t v;
	if (read(cs->stop_fd, &v, sizeof(v)) < 0)
		(void)0;	/* not set: a first start */
	for (unsigned i = 0; i < cs->nr; i++) {
		struct rtk_cpu *c = &cs->c[i];
		if (c->fd < 0)
			continue;
		if (!c->slots) {
			c->slots = malloc((size_t)cs->cap * cs->page_size);
			c->len = calloc(cs->cap, sizeof(*c->len));
			if (!c->slots || !c->len) {
				rt_errf(err, errlen, "out of memory for the readers' queues");
				goto fail;
			}
		}
		ret = pthread_create(&c->thread, NULL, reader_main, c);
		if (ret) {
			rt_errf(err, errlen, "cannot start the reader of CPU %u: %s", i,
				strerror(ret));
			ret = -ret;
			goto fail;
		}
		pthread_mutex_lock(&cs->sweep_lock);
		c->started = true;
		pthread_mutex_unlock(&cs->sweep_lock);
	}
	/* Release: pairs with rtk_cpus_read's acquire (whose caller the
	 * caller of this function orders after it anyway: kernel.h). */
	__atomic_store_n(&cs->running, true, __ATOMIC_RELEASE);
	return 0;
fail:
	rtk_cpus_stop(cs);
	return ret;
}

void rtk_cpus_stop(struct rtk_cpus *cs)
{
	if (!cs || cs->stop_fd < 0)
		return;
	uint64_t one = 1;
	if (write(cs->stop_fd, &one, sizeof(one)) < 0)
		(void)0;	/* cannot fail: the counter is far from full */
	for (unsigned i = 0; i < cs->nr; i++) {
		if (cs->c[i].started)
			pthread_join(cs->c[i].thread, NULL);
		/* Under the lock: a sweep waiting for it stops waiting. */
		pthread_mutex_lock(&cs->sweep_lock);
		cs->c[i].started = false;
		pthread_cond_broadcast(&cs->sweep_cond);
		pthread_mutex_unlock(&cs->sweep_lock);
	}
	/* Release: pairs with rtk_cpus_read's acquire: the joined threads'
	 * last pages are visible before the file is read directly. */
	__atomic_store_n(&cs->running, false, __ATOMIC_RELEASE);
}

long rtk_cpus_read(struct rtk_cpus *cs, unsigned cpu, const void **page, char *err,
		   size_t errlen)
{
	if (cpu >= cs->nr || cs->c[cpu].fd < 0)
		return 0;
	struct rtk_cpu *c = &cs->c[cpu];
	/* Acquire: pairs with rtk_cpus_stop's release. */
	bool running = __atomic_load_n(&cs->running, __ATOMIC_ACQUIRE);
	if (c->slots) {
		/* Relaxed: this thread is head's only writer. */
		uint64_t head = __atomic_load_n(&c->head, __ATOMIC_RELAXED);
		if (c->holding) {
			/* Under the lock: a peek copies no page given back. */
			pthread_mutex_lock(&c->lock);
			/* Release: pairs with the reader's acquire of head:
			 * the page given back was read before. */
			__atomic_store_n(&c->head, ++head, __ATOMIC_RELEASE);
			c->holding = false;
			pthread_mutex_unlock(&c->lock);
		}
		/* Acquire: pairs with the reader's release of tail. */
		uint64_t tail = __atomic_load_n(&c->tail, __ATOMIC_ACQUIRE);
		if (head != tail) {
			uint32_t i = (uint32_t)(head % cs->cap);
			*page = c->slots + (size_t)i * cs->page_size;
			c->holding = true;
			return c->len[i];
		}
		/* Acquire: pairs with the reader's release of its error. */
		int e = __atomic_load_n(&c->err, __ATOMIC_ACQUIRE);
		if (e < 0) {
			rt_errf(err, errlen, "%s", c->errmsg);
			/* Relaxed: the reader that set it has returned. */
			__atomic_store_n(&c->err, 0, __ATOMIC_RELAXED);
			return e;
		}
	}
	if (running)
		return 0;
	long n = read_file(c->fd, c->page, cs->page_size);
	if (n > 0)
		*page = c->page;
	else if (n < 0)
		rt_errf(err, errlen, "cannot read the pages of CPU %u: %s", cpu, strerror((int)-n));
	return n;
}

long rtk_cpus_peek(struct rtk_cpus *cs, unsigned cpu, size_t i, void *buf)
{
	if (cpu >= cs->nr || !cs->c[cpu].slots)
		return 0;
	struct rtk_cpu *c = &cs->c[cpu];
	long n = 0;
	/* The converter gives no page back while we copy it. */
	pthread_mutex_lock(&c->lock);
	uint64_t at = __atomic_load_n(&c->head, __ATOMIC_RELAXED) + i;
	/* Acquire: pairs with the reader's release of tail; the slots from
	 * head up to it are not written again before head passes them. */
	if (at < __atomic_load_n(&c->tail, __ATOMIC_ACQUIRE)) {
		uint32_t k = (uint32_t)(at % cs->cap);
		n = c->len[k];
		memcpy(buf, c->slots + (size_t)k * cs->page_size, (size_t)n);
	}
	pthread_mutex_unlock(&c->lock);
	return n;
}

uint64_t rtk_cpus_dropped(struct rtk_cpus *cs, unsigned cpu)
{
	/* Relaxed: a count. */
	return cs && cpu < cs->nr ? __atomic_load_n(&cs->c[cpu].dropped, __ATOMIC_RELAXED) : 0;
}

uint64_t rtk_cpus_queued(struct rtk_cpus *cs, unsigned cpu)
{
	if (!cs || cpu >= cs->nr || !cs->c[cpu].slots)
		return 0;
	/* Acquire: pairs with the releases of tail and head (a count). */
	uint64_t tail = __atomic_load_n(&cs->c[cpu].tail, __ATOMIC_ACQUIRE);
	uint64_t head = __atomic_load_n(&cs->c[cpu].head, __ATOMIC_ACQUIRE);
	return (tail - head) * cs->page_size;
}

int rtk_cpus_wait(struct rtk_cpus *cs, unsigned cpu, int fd, int timeout_ms)
{
	int ready = cs && cpu < cs->nr ? cs->c[cpu].ready_fd : -1;
	struct pollfd p[2] = { { .fd = ready, .events = POLLIN }, { .fd = fd, .events = POLLIN } };
	if (poll(p, 2, timeout_ms) <= 0)
		return 0;
	uint64_t v;
	if (p[0].revents && read(ready, &v, sizeof(v)) < 0)
		(void)0;	/* taken by an earlier wait */
	return p[1].revents ? 1 : 0;
}

void rtk_cpus_close(struct rtk_cpus *cs)
{
	if (!cs)
		return;
	rtk_cpus_stop(cs);
	for (unsigned i = 0; cs->c && i < cs->nr; i++) {
		if (cs->c[i].fd >= 0)
			close(cs->c[i].fd);
		if (cs->c[i].ready_fd >= 0)
			close(cs->c[i].ready_fd);
		if (cs->c[i].kick_fd >= 0)
			close(cs->c[i].kick_fd);
		pthread_mutex_destroy(&cs->c[i].lock);
		free(cs->c[i].page);
		free(cs->c[i].slots);
		free(cs->c[i].len);
	}
	if (cs->stop_fd >= 0)
		close(cs->stop_fd);
	pthread_cond_destroy(&cs->sweep_cond);
	pthread_mutex_destroy(&cs->sweep_lock);
	free(cs->c);
	free(cs);
}
