/*
 * consumer.c - embedded mode's consumer: a thread of the traced process
 * that reads the channel's buffers through src/consumer (consumer.h: the
 * ring buffer as source, the stream files `channel0_CPU[-SLOT]` as sink,
 * every packet trimmed, write errors cut back and counted in the trace,
 * stuck sub-buffers given up, the bounded drain) and writes this process's
 * metadata fragment (trace_dir.h). It wakes on its read timer (Desnoyers &
 * Dagenais 2012 Algorithm 8: delivery is polled, the fast path never wakes
 * anyone), flushes on its switch timer (Algorithm 4), and rewrites the
 * metadata when new events register.
 *
 * Under `ringtrace record`, RINGTRACE_ERROR_FD names a pipe on which the
 * consumer reports write errors in one line each (non-blocking: the
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

#include "../common/config_parse.h"
#include "../common/owned_fd.h"
#include "../consumer/consumer.h"
#include "../consumer/recovery.h"
#include "../consumer/trace_dir.h"
#include "rt_internal.h"
#include "tracer_thread.h"

extern char *program_invocation_short_name;

struct rt_consumer {
	struct rt_channel *ch;
	pthread_t thread;
	bool running;
	/* Stop requests: the flag, then a byte on the pipe to wake the
	 * poll (owned_fd.h: the program may close them under us). */
	int stop_requested;
	struct rt_owned_fd wake_r, wake_w;
	/* The channel and trace as the consumer sees them. */
	struct cons_channel_desc desc;
	char suffix[16];
	struct cons_trace_desc trace;
	struct cons_rb_source rs;
	struct cons_files files;
	struct cons_channel cc;
	struct cons_errors errors;
	uint64_t generation;		/* registry generation in the metadata */
	int error_fd;			/* record's pipe, -1: none */
	int stop_signal;		/* set by the signal handler */
	/* A fork child's state dump is the thread's (set before it is
	 * created; the first process dumps at its start, session.c). */
	bool dump_pending;
	/* --shm-path: held while cons.trace's clock is set and the
	 * description written (the consumer thread, rt_consumer_start and
	 * rt_consumer_new_events on the registering thread); `described`:
	 * the first description is written. */
	pthread_mutex_t desc_lock;
	bool described;
};

static struct rt_consumer cons = { .wake_r = RT_OWNED_FD_NONE, .wake_w = RT_OWNED_FD_NONE,
				   .error_fd = -1, .desc_lock = PTHREAD_MUTEX_INITIALIZER };

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

/* cons_errors' report: writes start failing (err < 0) or work again. */
static void log_error(void *arg, int err, const char *what, const char *line)
{
	(void)arg;
	rt_warn("%s", line);
	if (err < 0)
		tell_record("cannot write %s in %s: %s", what, rt_cfg.output, strerror(-err));
}

/* struct cons_classes over the registry: an event's id is its index
 * there, and every class is of this process's stream class. */
static void registry_lock(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&rt_registry_lock);
}

static void registry_unlock(void *arg)
{
	(void)arg;
	pthread_mutex_unlock(&rt_registry_lock);
}

static bool registry_fields(void *arg, uint32_t stream_id, uint32_t id,
			    const struct rt_field_desc **fields, uint32_t *nr)
{
	(void)arg;
	(void)stream_id;
	struct rt_event_class **cls;
	size_t n = rt_registry_classes(&cls);
	if (id >= n)
		return false;
	*fields = cls[id]->fields;
	*nr = cls[id]->nr_fields;
	return true;
}

static int registry_copy(void *arg, uint32_t from, struct ctf_event_class **events,
			 uint32_t *nr, uint64_t *generation)
{
	(void)arg;
	pthread_mutex_lock(&rt_registry_lock);
	/* Acquire: pairs with the registry's release increment. */
	*generation = __atomic_load_n(&rt_registry_generation, __ATOMIC_ACQUIRE);
	struct rt_event_class **cls;
	size_t n = rt_registry_classes(&cls);
	n = n > from ? n - from : 0;
	struct ctf_event_class *ev = calloc(n ? n : 1, sizeof(*ev));
	for (size_t i = 0; ev && i < n; i++) {
		const struct rt_event_class *c = cls[from + i];
		ev[i] = (struct ctf_event_class){
			.id = c->id, .stream_id = cons.desc.stream_id,
			.provider = c->provider, .name = c->name,
			.loglevel = c->loglevel, .nr_fields = c->nr_fields,
			.fields = c->fields,
		};
	}
	pthread_mutex_unlock(&rt_registry_lock);
	*events = ev;
	*nr = ev ? (uint32_t)n : 0;
	return ev ? 0 : -ENOMEM;
}

static uint64_t registry_generation(void *arg)
{
	(void)arg;
	/* Acquire: pairs with the registry's release increment. */
	return __atomic_load_n(&rt_registry_generation, __ATOMIC_ACQUIRE);
}

/* With --shm-path: the buffer set's description beside its file, for
 * `ringtrace recover` (recovery.h), from cons.trace as write_metadata
 * last set it. 0 or -errno (reported here). */
static int describe_buffers(void)
{
	if (!rt_cfg.shm_path)
		return 0;
	char err[PATH_MAX + 256];
	int ret = cons_recovery_describe(rt_cfg.shm_path, cons.ch->shm_name, &cons.trace,
					 &cons.desc, err, sizeof(err));
	if (ret < 0)
		rt_warn("%s", err);
	return ret;
}

/* The clock's calibration now (`final`: at the end) and this process
 * in cons.trace. */
static void describe_clock(bool final)
{
	struct rt_clock_desc clk;
	rt_clock_describe(&clk, final);
	cons.trace.clock = (struct ctf_clock_info){
		.name = clk.name, .description = clk.description, .freq = clk.freq,
		.offset_s = clk.offset_s, .offset = clk.offset, .precision = clk.precision,
	};
	cons.trace.vpid = getpid();
}

/* This process's declarations and the trace's metadata (trace_dir.h),
 * with the clock's calibration now (`final`: at the end). 0 or -errno. */
static int write_metadata(bool final)
{
	pthread_mutex_lock(&cons.desc_lock);
	describe_clock(final);
	int ret = cons_trace_dir_metadata(&cons.trace, &cons.desc, cons.ch->slot,
					  &cons.ch->fragment, &cons.generation);
	if (ret == 0)
		ret = describe_buffers();
	pthread_mutex_unlock(&cons.desc_lock);
	return ret;
}

void rt_consumer_new_events(void)
{
	pthread_mutex_lock(&cons.desc_lock);
	if (cons.described)
		describe_buffers();
	pthread_mutex_unlock(&cons.desc_lock);
}

static void write_metadata_or_report(bool final)
{
	int ret = write_metadata(final);
	if (ret < 0)
		cons_errors_failed(&cons.errors, "the metadata", ret, 0, 0);
}

/* Before a packet: the metadata goes to disk first when the packet's
 * events may be of classes it lacks, so that a program dying right after
 * still leaves a readable trace. Every event of the packet was recorded
 * after its class's registration incremented the generation (release);
 * registry_generation's acquire load pairs with it. */
static int metadata_before_packet(void *arg)
{
	(void)arg;
	return registry_generation(NULL) != cons.generation ? write_metadata(false) : 0;
}

static void final_flush(void)
{
	struct cons_channel *c = &cons.cc;
	cons_drain(&c, 1, true);
	write_metadata_or_report(true);
	char msg[PATH_MAX + 256];
	if (cons_errors_message(&cons.errors, true, msg, sizeof(msg)))
		tell_record("%s", msg);
	/* No fsync: the program's exit must not wait for the disk; the
	 * page cache has the data. */
	cons_files_close(&cons.files);
	/* --shm-path: the buffers are no longer needed once everything in
	 * them was written out; a drain that gave some up keeps them for
	 * `ringtrace recover`. */
	struct cons_stats st = { 0 };
	cons_channel_stats(c, &st);
	if (rt_cfg.shm_path && st.subbufs_skipped == 0)
		cons_recovery_remove(rt_cfg.shm_path, cons.ch->shm_name);
	else if (rt_cfg.shm_path)
		rt_warn("buffers kept in %s/%s" CONS_RING_SUFFIX " for ringtrace recover",
			rt_cfg.shm_path, cons.ch->shm_name);
}

/* CLOCK_MONOTONIC in milliseconds. */
static uint64_t now_ms(void)
{
	return rt_clock_monotonic_ns() / 1000000;
}

static void *consumer_main(void *arg)
{
	(void)arg;
	rt__tracer_thread = 1;
	/* The read timer's period, shorter while buffers fill (rb_read_wait).
	 * With the default timer the first read comes after a millisecond (a
	 * program often traces most right after it starts), with a timer the
	 * user gave after that whole period. */
	const uint64_t max_wait = rt_cfg.read_timer_ms;
	uint64_t wait = rt_cfg.read_timer_set ? max_wait : 1, last_switch = now_ms();
	write_metadata_or_report(false);
	for (;;) {
		/* A fork child's state dump, once its channel records
		 * (channel_start publishes it after starting this thread);
		 * acquire: pairs with that release store. */
		if (cons.dump_pending &&
		    __atomic_load_n(&rt_active_channel, __ATOMIC_ACQUIRE) == cons.ch) {
			cons.dump_pending = false;
			rt_statedump_run();
		}
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
			cons_channel_flush(&cons.cc);
		}
		wait = rb_read_wait(wait, max_wait, 1, cons_channel_read(&cons.cc, CONS_STUCK_MS),
				    cons.ch->rb.num_subbuf);
		/* registry_generation's acquire load pairs with the
		 * registry's release increment. */
		if (registry_generation(NULL) != cons.generation)
			write_metadata_or_report(false);
	}
	int sig = __atomic_load_n(&cons.stop_signal, __ATOMIC_ACQUIRE);
	/* A flight recorder stopped by a signal: its start's dump is
	 * overwritten by now (rt_session_stop does the same). */
	if (sig && (rt_cfg.overwrite || !rt_statedump_done()))
		rt_statedump_run();
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

static const struct cons_classes registry_classes = {
	.lock = registry_lock, .unlock = registry_unlock, .fields = registry_fields,
	.copy = registry_copy, .generation = registry_generation,
};

int rt_consumer_start(struct rt_channel *ch)
{
	cons.ch = ch;
	const char *slash = strrchr(rt_cfg.output, '/');
	cons.trace = (struct cons_trace_desc){
		.dir = rt_cfg.output, .procname = program_invocation_short_name,
		.trace_name = slash ? slash + 1 : rt_cfg.output, .classes = registry_classes,
	};
	memcpy(cons.trace.uuid, ch->stream.uuid, sizeof(cons.trace.uuid));
	/* channel0_CPU, or channel0_CPU-SLOT for the other processes of a
	 * traced process tree (trace_dir.h). */
	if (ch->slot)
		snprintf(cons.suffix, sizeof(cons.suffix), "-%u", ch->slot);
	cons.desc = (struct cons_channel_desc){
		.name = ch->name, .stream_id = ch->stream.stream_id,
		.nr_contexts = ch->nr_ctx, .switch_timer_ms = rt_cfg.switch_timer_ms,
		.read_timer_ms = (uint32_t)rt_cfg.read_timer_ms,
		.overwrite = ch->rb.mode == RB_MODE_OVERWRITE,
		.file_suffix = ch->slot ? cons.suffix : NULL,
	};
	for (uint32_t i = 0; i < ch->nr_ctx && i < RT_CTX_COUNT; i++)
		cons.desc.contexts[i] = ch->ctx[i];
	cons_errors_init(&cons.errors, rt_cfg.output, log_error, NULL);
	struct cons_source src;
	struct cons_sink sink;
	int ret = cons_rb_source_init(&cons.rs, &ch->rb, &src);
	if (!ret)
		ret = cons_files_init(&cons.files, rt_cfg.output, &cons.desc, ch->rb.nr_cpus);
	cons_files_sink(&sink, &cons.files);
	/* The buffers are this process's own memory: packets are trimmed in
	 * place, not checked. */
	if (!ret)
		ret = cons_channel_init(&cons.cc, &cons.desc, &cons.trace, &src, &sink,
					&cons.errors, false);
	if (ret < 0)
		goto fail;
	/* The description is there before the first event can be: a
	 * program that dies at once still leaves recoverable buffers. */
	if (rt_cfg.shm_path) {
		pthread_mutex_lock(&cons.desc_lock);
		describe_clock(false);
		ret = describe_buffers();
		cons.described = ret == 0;
		pthread_mutex_unlock(&cons.desc_lock);
		if (ret < 0)
			goto fail;
	}
	cons.cc.metadata = metadata_before_packet;
	int wake[2];
	if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) < 0) {
		ret = -errno;
		goto fail;
	}
	/* rt_owned_fd_take consumes its fd even when it fails. */
	ret = rt_owned_fd_take(&cons.wake_r, wake[0]);
	int ret_w = rt_owned_fd_take(&cons.wake_w, wake[1]);
	if (ret < 0 || (ret = ret_w) < 0)
		goto fail;

	/* The consumer never takes the program's signals. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = -pthread_create(&cons.thread, NULL, consumer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret < 0)
		goto fail;
	pthread_setname_np(cons.thread, "ringtrace-cons");
	cons.running = true;
	return 0;

fail:
	/* Nothing of a consumer that never ran is kept: no descriptor, no
	 * memory (the program goes on untraced, session.c). */
	rt_owned_fd_close(&cons.wake_w);
	rt_owned_fd_close(&cons.wake_r);
	cons_channel_fini(&cons.cc);
	cons_files_free(&cons.files);
	cons_rb_source_fini(&cons.rs);
	return ret;
}

void rt_consumer_fork_child(void)
{
	/* The parent's consumer thread may have held the errors' lock at the
	 * fork: rt_consumer_start initialises them anew. */
	cons_files_free(&cons.files);
	cons_channel_fini(&cons.cc);
	cons_rb_source_fini(&cons.rs);
	rt_owned_fd_close(&cons.wake_r);
	rt_owned_fd_close(&cons.wake_w);
	/* The child reports its own write errors to `record` too. */
	int error_fd = cons.error_fd;
	cons = (struct rt_consumer){ .wake_r = RT_OWNED_FD_NONE, .wake_w = RT_OWNED_FD_NONE,
				     .error_fd = error_fd, .dump_pending = true,
				     .desc_lock = PTHREAD_MUTEX_INITIALIZER };
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
