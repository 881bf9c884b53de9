/*
 * writer.c - a kernel trace written by src/consumer (kernel.h): the pages'
 * source (source.c) read into a consumer channel "channel0" whose sink is
 * the consumer's stream files, with its write errors, its one metadata
 * builder (the formats' classes, the trace's `tid` context, env domain
 * "kernel") and its snapshots. Everything that decides how packets reach
 * the disk is the consumer's: this file only describes the kernel trace to
 * it.
 *
 * Converters (rtk_writer_start): a thread per CPU that sleeps until its
 * CPU's reader has queued pages (pages.wait) and then has the consumer
 * read that CPU's stream alone (cons_channel_read_stream), so that each
 * CPU's pages are converted with a CPU share of their own, as trace-cmd's
 * reader per CPU: one converting thread for every CPU lost events beside
 * CPU hogs (docs/performance.md). Each stream is read under its lock
 * (slock[cpu]), so that rtk_writer_read, the drain and snapshots, which
 * take them in CPU order, never read a stream at once with its
 * converter; the metadata file is brought up to date under meta_lock
 * (before any stream's packet).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "kernel_internal.h"

struct rtk_converter {
	struct rtk_writer *w;
	unsigned cpu;
	pthread_t thread;
	bool started;
};

struct rtk_writer {
	struct rtk_trace *trace;	/* the converter (packets only) */
	struct rtk_source src;
	struct cons_trace_desc desc;
	struct cons_channel_desc ch;
	struct cons_files files;
	struct cons_errors errors;
	struct cons_channel chan;
	struct cons_metadata_state meta;	/* under meta_lock */
	pthread_mutex_t meta_lock;
	pthread_mutex_t *slock;		/* [nr_cpus]: a stream's reads */
	unsigned nr_cpus;
	struct rtk_converter *conv;	/* [nr_cpus] while converters run */
	unsigned period_ms;
	int stop_fd;			/* eventfd: converters return */
	char *dir;
	char *name;
	void (*log)(void *arg, int err, const char *line);
	void *log_arg;
};

static void log_adapter(void *arg, int err, const char *what, const char *line)
{
	(void)what;
	struct rtk_writer *w = arg;
	if (w->log)
		w->log(w->log_arg, err, line);
}

static int metadata_update(struct rtk_writer *w, bool force)
{
	const struct cons_channel_desc *ch = &w->ch;
	pthread_mutex_lock(&w->meta_lock);
	int ret = cons_metadata_update(&w->meta, &w->desc, &ch, 1, force);
	pthread_mutex_unlock(&w->meta_lock);
	return ret;
}

static void lock_all(struct rtk_writer *w)
{
	for (unsigned c = 0; c < w->nr_cpus; c++)
		pthread_mutex_lock(&w->slock[c]);
}

static void unlock_all(struct rtk_writer *w)
{
	for (unsigned c = w->nr_cpus; c-- > 0;)
		pthread_mutex_unlock(&w->slock[c]);
}

/* Before each packet: the metadata is on disk (written once: the classes
 * are those of the instance's formats). */
static int metadata_before_packet(void *arg)
{
	return metadata_update(arg, false);
}

int rtk_writer_open(const struct rtk_pages *pages, const struct rtk_formats *f,
		    const struct rtk_writer_opts *o, struct rtk_writer **out, char *err,
		    size_t errlen)
{
	struct rtk_writer *w = calloc(1, sizeof(*w));
	if (!w) {
		rt_errf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* From here on rtk_writer_close undoes whatever was done. */
	w->log = o->log;
	w->log_arg = o->log_arg;
	w->stop_fd = -1;
	pthread_mutex_init(&w->meta_lock, NULL);
	w->slock = calloc(pages->nr_cpus ? pages->nr_cpus : 1, sizeof(*w->slock));
	if (w->slock) {
		w->nr_cpus = pages->nr_cpus;
		for (unsigned c = 0; c < w->nr_cpus; c++)
			pthread_mutex_init(&w->slock[c], NULL);
	}
	w->name = strdup(o->trace_name ? o->trace_name : "kernel");
	w->dir = o->dir ? strdup(o->dir) : NULL;
	cons_errors_init(&w->errors, w->dir ? w->dir : "", log_adapter, w);
	int ret = -ENOMEM;
	if (!w->slock || !w->name || (o->dir && !w->dir) ||
	    rtk_trace_open(f, o->uuid, o->contexts, &w->trace) < 0)
		goto fail_oom;
	w->desc = (struct cons_trace_desc){ .dir = w->dir, .clock = o->clock,
					    .domain = "kernel", .trace_name = w->name };
	memcpy(w->desc.uuid, o->uuid, sizeof(w->desc.uuid));
	rtk_source_classes(f, &w->desc.classes);
	w->ch = (struct cons_channel_desc){ .name = "channel0", .stream_id = 0 };
	w->ch.fields = rtk_trace_contexts(w->trace, &w->ch.nr_fields);
	struct cons_source src;
	struct cons_sink sink;
	ret = rtk_source_init(&w->src, pages, w->trace, o->buffer_size_kb, o->window, &src);
	if (!ret)
		ret = cons_files_init(&w->files, w->dir, &w->ch, pages->nr_cpus);
	cons_files_sink(&sink, &w->files);
	/* Trusted: the kernel wrote the pages and trace.c built the packets
	 * from them, checking every record against its page. */
	if (!ret)
		ret = cons_channel_init(&w->chan, &w->ch, &w->desc, &src, &sink, &w->errors,
					false);
	if (ret < 0)
		goto fail_oom;
	if (w->dir) {
		w->chan.metadata = metadata_before_packet;
		w->chan.metadata_arg = w;
		/* The directory and its metadata now: a directory that holds a
		 * trace already is refused before anything is recorded. */
		ret = metadata_update(w, true);
		if (ret < 0) {
			rt_errf(err, errlen, "cannot write the kernel trace's metadata in %s: %s",
				w->dir, strerror(-ret));
			goto fail;
		}
	}
	*out = w;
	return 0;
fail_oom:
	rt_errf(err, errlen, "out of memory");
fail:
	rtk_writer_close(w);
	return ret;
}

uint32_t rtk_writer_read(struct rtk_writer *w)
{
	uint32_t most = 0;
	for (unsigned c = 0; w->dir && c < w->nr_cpus; c++) {
		pthread_mutex_lock(&w->slock[c]);
		uint32_t k = cons_channel_read_stream(&w->chan, c, CONS_STUCK_MS);
		pthread_mutex_unlock(&w->slock[c]);
		if (k > most)
			most = k;
	}
	return most;
}

static void *converter_main(void *arg)
{
	struct rtk_converter *cv = arg;
	struct rtk_writer *w = cv->w;
	const struct rtk_pages *pg = &w->src.pages;
	/* After a full batch, more is there (a reader's backlog): no wait. */
	int wait_ms = (int)w->period_ms;
	for (;;) {
		int stop;
		if (pg->wait) {
			stop = pg->wait(pg->arg, cv->cpu, w->stop_fd, wait_ms);
		} else {
			struct pollfd p = { .fd = w->stop_fd, .events = POLLIN };
			stop = poll(&p, 1, wait_ms) > 0;
		}
		if (stop)
			return NULL;
		pthread_mutex_lock(&w->slock[cv->cpu]);
		uint32_t k = cons_channel_read_stream(&w->chan, cv->cpu, CONS_STUCK_MS);
		pthread_mutex_unlock(&w->slock[cv->cpu]);
		wait_ms = k >= w->chan.src.batch ? 0 : (int)w->period_ms;
	}
}

int rtk_writer_start(struct rtk_writer *w, unsigned period_ms, char *err, size_t errlen)
{
	if (!w->dir || w->conv)
		return 0;
	int ret;
	w->period_ms = period_ms ? period_ms : 1;
	if (w->stop_fd < 0 && (w->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
		ret = -errno;
		rt_errf(err, errlen, "eventfd: %s", strerror(errno));
		return ret;
	}
	uint64_t v;
	if (read(w->stop_fd, &v, sizeof(v)) < 0)
		(void)0;	/* not set: a first start */
	w->conv = calloc(w->nr_cpus ? w->nr_cpus : 1, sizeof(*w->conv));
	if (!w->conv) {
		rt_errf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (unsigned c = 0; c < w->nr_cpus; c++) {
		struct rtk_converter *cv = &w->conv[c];
		*cv = (struct rtk_converter){ .w = w, .cpu = c };
		ret = pthread_create(&cv->thread, NULL, converter_main, cv);
		if (ret) {
			rt_errf(err, errlen, "cannot start the kernel trace's converter of CPU %u: %s",
				c, strerror(ret));
			rtk_writer_stop(w);
			return -ret;
		}
		cv->started = true;
	}
	return 0;
}

void rtk_writer_stop(struct rtk_writer *w)
{
	if (!w || !w->conv)
		return;
	uint64_t one = 1;
	if (write(w->stop_fd, &one, sizeof(one)) < 0)
		(void)0;	/* cannot fail: the counter is far from full */
	for (unsigned c = 0; c < w->nr_cpus; c++)
		if (w->conv[c].started)
			pthread_join(w->conv[c].thread, NULL);
	free(w->conv);
	w->conv = NULL;
}

void rtk_writer_drain(struct rtk_writer *w, const struct ctf_clock_info *clock)
{
	if (!w->dir)
		return;
	struct cons_channel *c = &w->chan;
	lock_all(w);
	cons_drain(&c, 1, true);
	unlock_all(w);
	pthread_mutex_lock(&w->meta_lock);
	if (clock)
		w->desc.clock = *clock;
	pthread_mutex_unlock(&w->meta_lock);
	int ret = metadata_update(w, clock != NULL);
	if (ret < 0)
		cons_errors_failed(&w->errors, "the metadata", ret, 0, 0);
}

int rtk_writer_rotate(struct rtk_writer *w, const char *dir)
{
	if (!w->dir)
		return -EINVAL;
	char *next = strdup(dir);
	if (!next)
		return -ENOMEM;
	/* There is no flush: the rotation point is what the buffers hold
	 * now, partly filled pages included, read into the chunk that ends
	 * (rtk_writer_read's bound, a few times for a busy CPU). */
	lock_all(w);
	for (int i = 0; i < 16 && cons_channel_read(&w->chan, CONS_STUCK_MS) >= w->chan.src.batch;
	     i++)
		;
	struct cons_channel *c = &w->chan;
	int ret = cons_rotate(&c, 1, next);
	unlock_all(w);
	int r = metadata_update(w, true);
	if (r < 0)
		cons_errors_failed(&w->errors, "the metadata", r, 0, 0);
	pthread_mutex_lock(&w->errors.lock);
	w->errors.dir = next;
	pthread_mutex_unlock(&w->errors.lock);
	pthread_mutex_lock(&w->meta_lock);
	free(w->dir);
	w->dir = next;
	w->desc.dir = next;
	w->meta = (struct cons_metadata_state){ 0 };
	pthread_mutex_unlock(&w->meta_lock);
	r = metadata_update(w, true);
	return ret < 0 ? ret : r;
}

struct dump_arg {
	struct rtk_writer *w;
	char why[256];		/* a page's failure */
};

static int dump_page(unsigned cpu, const void *page, size_t size, void *arg)
{
	struct dump_arg *a = arg;
	return rtk_source_snap_page(&a->w->src, cpu, page, size, a->why, sizeof(a->why));
}

int rtk_writer_snapshot(struct rtk_writer *w, const char *dir, uint64_t max_size, char *err,
			size_t errlen)
{
	struct cons_channel *c = &w->chan;
	const struct cons_channel_desc *ch = &w->ch;
	lock_all(w);
	if (rtk_source_snap_stage(&w->src) < 0) {
		unlock_all(w);
		rt_errf(err, errlen, "out of memory reading the kernel's buffers");
		return -ENOMEM;
	}
	/* After what the buffers held (it displaces none of it): the
	 * threads as they are now, named even when the start's dump was
	 * overwritten long ago. */
	struct dump_arg a = { .w = w };
	char why[256] = "";
	long n = w->src.pages.dump ? w->src.pages.dump(w->src.pages.arg, dump_page, &a, why,
							   sizeof(why))
				   : 0;
	if (n < 0 && w->log) {
		char line[600];
		snprintf(line, sizeof(line), "the kernel snapshot has no state dump: %s",
			 a.why[0] ? a.why : why);
		w->log(w->log_arg, (int)n, line);
	}
	int ret = cons_snapshot(&c, 1, &w->desc, &ch, 1, dir, max_size, err, errlen);
	unlock_all(w);
	return ret;
}

int rtk_writer_error(struct rtk_writer *w, bool take, char *msg, size_t len)
{
	int ret = cons_errors_message(&w->errors, take, msg, len);
	return ret ? ret : rtk_source_error(&w->src, take, msg, len);
}

void rtk_writer_stats(struct rtk_writer *w, struct rtk_writer_stats *s)
{
	struct rtk_trace_stats ts;
	rtk_trace_stats(w->trace, &ts);
	struct cons_stats cs = { 0 };
	cons_channel_stats(&w->chan, &cs);
	*s = (struct rtk_writer_stats){
		.events = ts.events > cs.events_unwritten ? ts.events - cs.events_unwritten : 0,
		.lost = ts.lost + cs.events_unwritten,
		.unknown = ts.unknown,
		.pages_bad = rtk_source_bad_pages(&w->src),
		.bytes = cs.bytes,
	};
}

void rtk_writer_close(struct rtk_writer *w)
{
	if (!w)
		return;
	rtk_writer_stop(w);
	if (w->stop_fd >= 0)
		close(w->stop_fd);
	cons_channel_fini(&w->chan);
	cons_files_free(&w->files);
	cons_errors_fini(&w->errors);
	rtk_source_fini(&w->src);
	rtk_trace_close(w->trace);
	for (unsigned c = 0; c < w->nr_cpus; c++)
		pthread_mutex_destroy(&w->slock[c]);
	free(w->slock);
	pthread_mutex_destroy(&w->meta_lock);
	free(w->dir);
	free(w->name);
	free(w);
}
