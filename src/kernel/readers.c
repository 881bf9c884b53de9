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
 * eventfd) or its period passed. A reader whose queue is full does not
 * wait for the converter: it moves the pages on into its backlog, a list
 * of chunks of RTK_BACKLOG_CHUNK pages it allocates as they fill (up to
 * rtk_cpus_start's backlog_kb), which the converter reads after the queue
 * and frees as it goes, so that the kernel's buffer is emptied as fast as
 * the reader runs, however late the converter is (a CPU busy with other
 * work: the converter catches up later, at the latest in the drain after
 * the stop). Pages go into the queue again once the converter has read
 * the whole backlog (order: the queue's pages are older than the
 * backlog's, which are older than any queued after it). Only a reader
 * whose backlog is full leaves the pages in the kernel's buffer (which
 * then counts its losses as without readers) and retries after
 * RTK_READERS_FULL_MS.
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
 * returned) until its next read of that CPU. The backlog's counts are
 * alike: `btail` (reader) counts the pages put into it, `bhead`
 * (converter, under the lock) those given back; backlog page k lives in
 * the chunk whose `first` is k - k % RTK_BACKLOG_CHUNK. The reader appends
 * chunks (btail_chunk, the list's first one published in `bfirst`); the
 * converter frees a chunk (under the lock) when its head passed it, which
 * is never the reader's last one.
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

/* A reader whose queue and backlog are full retries after this long. */
#define RTK_READERS_FULL_MS 1
/* A queue holds at most this much per CPU (and no more than the buffer). */
#define RTK_READERS_QUEUE_MAX_KB 16384u
/* Pages per backlog chunk. */
#define RTK_BACKLOG_CHUNK 64u

struct rtk_chunk {
	struct rtk_chunk *next;		/* written once by the reader; atomic */
	uint64_t first;			/* backlog number of its first page */
	uint32_t len[RTK_BACKLOG_CHUNK];
	char pages[];			/* RTK_BACKLOG_CHUNK pages */
};

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
	/* The backlog (readers without ring). */
	struct rtk_chunk *bfirst;	/* the first chunk made; atomic (reader's) */
	struct rtk_chunk *btail_chunk;	/* reader's: where page btail goes */
	struct rtk_chunk *bhead_chunk;	/* converter's, under lock: page bhead's */
	uint64_t bhead;		/* converter's, under lock; atomic */
	uint64_t btail;		/* reader's; atomic */
	bool bholding;		/* converter's: backlog page bhead is out */
	struct rtk_reader_stats st;	/* reader's; relaxed atomics */
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
	uint64_t bcap;		/* pages per backlog (0: none) */
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

/* Relaxed: statistics (rtk_cpus_stats). */
static void stat_add(uint64_t *v, uint64_t n)
{
	__atomic_fetch_add(v, n, __ATOMIC_RELAXED);
}

static void stat_max(uint64_t *v, uint64_t n)
{
	if (n > __atomic_load_n(v, __ATOMIC_RELAXED))
		__atomic_store_n(v, n, __ATOMIC_RELAXED);
}

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The reader's slot for backlog page k (its size in *len), a chunk made
 * and linked when k starts one; NULL when out of memory. */
static char *backlog_slot(struct rtk_cpu *c, uint64_t k, uint32_t **len)
{
	struct rtk_cpus *cs = c->all;
	struct rtk_chunk *t = c->btail_chunk;
	if (!t || k >= t->first + RTK_BACKLOG_CHUNK) {
		struct rtk_chunk *n = malloc(sizeof(*n) + RTK_BACKLOG_CHUNK * cs->page_size);
		if (!n)
			return NULL;
		n->next = NULL;
		n->first = k - k % RTK_BACKLOG_CHUNK;
		/* Release: pairs with the converter's (and peek's) acquire
		 * loads of next and bfirst: the chunk is initialised first. */
		if (t)
			__atomic_store_n(&t->next, n, __ATOMIC_RELEASE);
		else
			__atomic_store_n(&c->bfirst, n, __ATOMIC_RELEASE);
		c->btail_chunk = t = n;
	}
	uint32_t o = (uint32_t)(k - t->first);
	*len = &t->len[o];
	return t->pages + (size_t)o * cs->page_size;
}

/* The reader's wait while its queue and backlog are full; true: stop. */
static bool wait_full(struct rtk_cpu *c, bool stop)
{
	struct pollfd s = { .fd = c->all->stop_fd, .events = POLLIN };
	stat_add(&c->st.full_waits, 1);
	return stop || poll(&s, 1, RTK_READERS_FULL_MS) > 0;
}

static void *reader_main(void *arg)
{
	struct rtk_cpu *c = arg;
	struct rtk_cpus *cs = c->all;
	uint32_t quarter = cs->cap / 4 ? cs->cap / 4 : 1;
	uint64_t last = now_ns();
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
		/* Every page there is now, into the queue while it has room
		 * and the backlog is empty, else into the backlog. */
		unsigned partial = 0;
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
			/* Acquire: pairs with the converter's release of
			 * bhead: the backlog's pages it gave back are read. */
			uint64_t bhead = __atomic_load_n(&c->bhead, __ATOMIC_ACQUIRE);
			uint64_t btail = c->btail;
			bool queue = tail - head < cs->cap && btail == bhead;
			char *slot;
			uint32_t *len;
			if (queue) {
				uint32_t i = (uint32_t)(tail % cs->cap);
				slot = c->slots + (size_t)i * cs->page_size;
				len = &c->len[i];
			} else if (btail - bhead >= cs->bcap ||
				   !(slot = backlog_slot(c, btail, &len))) {
				if (wait_full(c, stop))
					return NULL;
				continue;
			}
			/* The longest the buffer was left alone (between
			 * two reads, descheduled or asleep). */
			uint64_t now = now_ns();
			stat_max(&c->st.longest_gap_ns, now - last);
			long n = read_file(c->fd, slot, cs->page_size);
			last = now;
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
			*len = (uint32_t)n;
			stat_add(&c->st.pages, 1);
			/* Caught up with the kernel's writer (two pages less
			 * than half full in a row: the first can be the rest
			 * of a page the last pass read part of): the pass ends
			 * (the next wake-up takes what follows), or a reader
			 * whose own reads are traced (read(2) of every
			 * process) would read the events of its last read for
			 * ever. */
			partial = rtk_page_partial(slot, (size_t)n) ? partial + 1 : 0;
			bool caught_up = partial == 2;
			if (!queue) {
				/* Release: pairs with the converter's acquire of
				 * btail; the page and its size first. */
				__atomic_store_n(&c->btail, btail + 1, __ATOMIC_RELEASE);
				stat_add(&c->st.backlog_pages, 1);
				stat_max(&c->st.backlog_peak, btail + 1 - bhead);
				if (caught_up)
					break;
				continue;
			}
			if (cs->ring && tail != head && rtk_page_missed(slot, (size_t)n))
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
			if (caught_up)
				break;
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

int rtk_cpus_start(struct rtk_cpus *cs, uint64_t buffer_kb, uint64_t backlog_kb,
		   unsigned period_ms, bool ring, char *err, size_t errlen)
{
	if (__atomic_load_n(&cs->running, __ATOMIC_RELAXED))
		return 0;
	cs->ring = ring;
	uint64_t kb = buffer_kb < RTK_READERS_QUEUE_MAX_KB ? buffer_kb : RTK_READERS_QUEUE_MAX_KB;
	uint64_t cap = kb * 1024 / cs->page_size;
	/* The queue's size stays what the first start made it (its slots). */
	if (!cs->cap)
		cs->cap = (uint32_t)(cap < 8 ? 8 : cap);
	/* Before the readers start (pthread_create orders it). */
	cs->bcap = ring ? 0 : backlog_kb * 1024 / cs->page_size;
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

/* The converter gives back the backlog page it holds (under the lock: a
 * peek copies no page given back). */
static void backlog_give_back(struct rtk_cpu *c)
{
	pthread_mutex_lock(&c->lock);
	/* Release: pairs with the reader's acquire of bhead: the page given
	 * back was read before. Relaxed load: this thread is its only
	 * writer. */
	__atomic_store_n(&c->bhead, __atomic_load_n(&c->bhead, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELEASE);
	c->bholding = false;
	pthread_mutex_unlock(&c->lock);
}

/* The converter takes backlog page bhead: its size with *page, 0 when the
 * backlog is empty. The chunk it passed is freed then (under the lock: no
 * peek is in it), never the reader's: the reader made the next one before
 * it counted page bhead in btail. */
static long backlog_take(struct rtk_cpu *c, const void **page)
{
	uint64_t h = __atomic_load_n(&c->bhead, __ATOMIC_RELAXED);
	/* Acquire: pairs with the reader's release of btail: the page, its
	 * size and its chunk's links are written. */
	if (h == __atomic_load_n(&c->btail, __ATOMIC_ACQUIRE))
		return 0;
	struct rtk_chunk *k = c->bhead_chunk;
	if (!k || h >= k->first + RTK_BACKLOG_CHUNK) {
		pthread_mutex_lock(&c->lock);
		/* Acquire: pairs with the reader's releases of bfirst and
		 * next (made before btail passed h). */
		struct rtk_chunk *n = k ? __atomic_load_n(&k->next, __ATOMIC_ACQUIRE)
					: __atomic_load_n(&c->bfirst, __ATOMIC_ACQUIRE);
		free(k);
		c->bhead_chunk = k = n;
		pthread_mutex_unlock(&c->lock);
	}
	uint32_t o = (uint32_t)(h - k->first);
	*page = k->pages + (size_t)o * c->all->page_size;
	c->bholding = true;
	return k->len[o];
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
		if (c->bholding)
			backlog_give_back(c);
		/* Acquire: pairs with the reader's release of tail. */
		uint64_t tail = __atomic_load_n(&c->tail, __ATOMIC_ACQUIRE);
		if (head != tail) {
			uint32_t i = (uint32_t)(head % cs->cap);
			*page = c->slots + (size_t)i * cs->page_size;
			c->holding = true;
			return c->len[i];
		}
		/* The backlog after the queue: its pages are newer. */
		long n = backlog_take(c, page);
		if (n > 0)
			return n;
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
	uint64_t tail = __atomic_load_n(&c->tail, __ATOMIC_ACQUIRE);
	if (at < tail) {
		uint32_t k = (uint32_t)(at % cs->cap);
		n = c->len[k];
		memcpy(buf, c->slots + (size_t)k * cs->page_size, (size_t)n);
	} else {
		/* The backlog's pages come after the queue's (its chunks are
		 * freed by the converter, under the lock we hold). */
		uint64_t b = __atomic_load_n(&c->bhead, __ATOMIC_RELAXED) + (at - tail);
		/* Acquire: pairs with the reader's releases of btail, bfirst
		 * and next. */
		struct rtk_chunk *k = c->bhead_chunk ? c->bhead_chunk
						     : __atomic_load_n(&c->bfirst, __ATOMIC_ACQUIRE);
		if (b < __atomic_load_n(&c->btail, __ATOMIC_ACQUIRE)) {
			while (b >= k->first + RTK_BACKLOG_CHUNK)
				k = __atomic_load_n(&k->next, __ATOMIC_ACQUIRE);
			uint32_t o = (uint32_t)(b - k->first);
			n = k->len[o];
			memcpy(buf, k->pages + (size_t)o * cs->page_size, (size_t)n);
		}
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
	uint64_t btail = __atomic_load_n(&cs->c[cpu].btail, __ATOMIC_ACQUIRE);
	uint64_t bhead = __atomic_load_n(&cs->c[cpu].bhead, __ATOMIC_ACQUIRE);
	return (tail - head + btail - bhead) * cs->page_size;
}

void rtk_cpus_stats(struct rtk_cpus *cs, unsigned cpu, struct rtk_reader_stats *st)
{
	*st = (struct rtk_reader_stats){ 0 };
	if (!cs || cpu >= cs->nr)
		return;
	const struct rtk_reader_stats *s = &cs->c[cpu].st;
	/* Relaxed: counts. */
	st->pages = __atomic_load_n(&s->pages, __ATOMIC_RELAXED);
	st->backlog_pages = __atomic_load_n(&s->backlog_pages, __ATOMIC_RELAXED);
	st->backlog_peak = __atomic_load_n(&s->backlog_peak, __ATOMIC_RELAXED);
	st->full_waits = __atomic_load_n(&s->full_waits, __ATOMIC_RELAXED);
	st->longest_gap_ns = __atomic_load_n(&s->longest_gap_ns, __ATOMIC_RELAXED);
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
		/* The backlog's chunks from the converter's on (the earlier
		 * ones are freed). */
		struct rtk_chunk *k = cs->c[i].bhead_chunk ? cs->c[i].bhead_chunk : cs->c[i].bfirst;
		while (k) {
			struct rtk_chunk *next = k->next;
			free(k);
			k = next;
		}
	}
	if (cs->stop_fd >= 0)
		close(cs->stop_fd);
	pthread_cond_destroy(&cs->sweep_cond);
	pthread_mutex_destroy(&cs->sweep_lock);
	free(cs->c);
	free(cs);
}
