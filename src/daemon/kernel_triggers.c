/*
 * kernel_triggers.c - event-rule-matches conditions on kernel and system
 * call events (the dp_kernel_trigger_* hooks of rtd.h), evaluated in the
 * kernel source whether or not a session records the events.
 *
 * Each such trigger has its own tracefs instance (src/kernel, named
 * "ringtrace-PID-trigger-ID_NAME": removed with the trigger, at exit, and
 * as stale at the next start after a kill -9), with the rule's events
 * enabled (its --name glob less its --exclude-name globs, the syscall
 * sides asked for) and the rule's --filter translated into each event's
 * ftrace filter (src/filter's rtf_to_ftrace through rtk_config's filters),
 * so that the kernel keeps only the events that match: every event the
 * instance holds is a match of its trigger. The thread table that names
 * the matches' processes (pid, procname, prio) is fed by one more
 * instance shared by all the triggers ("ringtrace-PID-trigger-threads",
 * made with the first trigger and removed with the last): it holds the
 * events of threads that start, are renamed, exec and are freed, which
 * are frequent on a busy machine, so it is not polled (ftrace's default
 * wake-up) but read at the start of each round, before the trigger
 * instances, which hold only their rule's events and so wake the reader
 * at their matches only. A match's thread may be newer than that read
 * (it started after it): the table is read again for it. Or older than
 * the thread's end: a thread the table saw freed is kept one round more
 * (rtk_trace_keep_freed, swept at each round's start), so that a match
 * of it read after the table is still named. One reader thread
 * ("rtd-ktriggers", started with the first trigger and ended with the
 * last) polls every trigger instance's per-CPU buffers
 * (rtk_instance_poll_fd; the instances wake it as soon as they hold one
 * event), at most once per
 * KT_GAP_NS and at least every KT_FALLBACK_MS, whether a session is
 * started or not, reads them and converts the pages with src/kernel's
 * conversion (rtk_trace_packet, the one page decoder); its watcher
 * (rtk_trace_watch) turns each event into a match: the trigger's id, the
 * event's name, pid, tid, cpu and the captured values. The matches are
 * queued for the main loop in event time order: the CPUs are read one
 * after another, so an event written on a CPU just after it was read
 * comes in the next round, after a later event of a CPU read after it;
 * a round therefore queues its matches up to the time it began (the
 * watermark: rt_clock_read, the instances' trace clock) and keeps the
 * later ones for the next round, sorted with its matches. The main
 * loop is woken through an eventfd
 * (dp_kernel_trigger_fd), which takes them (dp_kernel_trigger_take) and
 * runs the triggers' actions (ctl_trigger_fire).
 *
 * Instances are in overwrite mode: if the reader fell behind, the oldest
 * unread events are lost, counted from the pages' missed-events flags
 * (dp_kernel_trigger_lost, list-triggers' "events lost") and logged. The queue holds at
 * most KT_QUEUE_MAX matches: while the main loop is behind (a long
 * action), the reader leaves the events in the kernel's buffers.
 *
 * Concurrency: the hooks run on the main thread (rtd_lock held); the
 * reader never takes rtd_lock. `kt.lock` guards the trigger list (the
 * reader uses the instances under it: add and remove wait for a round to
 * end) and the match queue.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "../common/array.h"
#include "../common/clock.h"
#include "../common/hex.h"
#include "../common/warn.h"
#include "../filter/filter.h"
#include "../kernel/kernel.h"
#include "app.h"
#include "rtd.h"

#define KT_FALLBACK_MS 100	/* a read even without a wake-up */
#define KT_GAP_NS 1000000L	/* at least between two reads: 1 ms */
#define KT_PAGES_MAX 256	/* pages read from one CPU in one round */
#define KT_QUEUE_MAX 16384	/* matches waiting for the main loop */
/* The most events one ftrace page may hold: each takes at least its 4-byte
 * header and the 8 bytes of ftrace's common fields. */
#define KT_EVENT_MIN 12
#define KT_BUFFER_KB 256	/* per CPU, of each trigger instance */
#define KT_TABLE_KB 512		/* per CPU, of the thread-table instance */

struct kdp_trigger {
	uint64_t id;
	char *name;			/* for messages */
	struct rtk_instance *in;
	struct rtk_pages pages;
	struct rtk_trace *t;
	int *poll_fds;			/* per CPU (the instance's): readable when it holds events */
	char **captures;		/* the rule's --capture descriptors (copies) */
	size_t nr_captures;
	uint64_t kernel_lost;		/* ftrace's count of the instance's lost events */
	uint64_t flagged_lost;		/* what the pages said, when it was last read */
	uint64_t dropped;		/* matches not queued: out of memory */
	uint64_t lost_logged;		/* kernel_lost + dropped reported so far */
	bool bad_logged;		/* a page that did not parse was reported */
	struct kdp_trigger *next;
};

struct kt_match {
	uint64_t id;
	uint64_t time;
	struct rtp_kv values;
};

/* The thread-table instance: its conversion (with contexts) keeps the
 * table that names every trigger's matches (rtk_trace_thread). */
struct kt_table {
	struct rtk_instance *in;
	struct rtk_pages pages;
	struct rtk_trace *t;
	uint64_t read_at;	/* the trace clock when its last read began */
	bool bad_logged;
};

static struct {
	pthread_mutex_t lock;		/* triggers (and their counts), queue, round,
					 * table */
	struct kdp_trigger *triggers;
	struct kt_table *table;		/* while there are triggers */
	struct kt_match *queue;		/* for the main loop, in time order */
	size_t nr_queue, cap_queue, head;
	struct kt_match *round;		/* the reader's matches of one round */
	size_t nr_round, cap_round;
	bool polling;			/* under lock: the reader polls a set built under it */
	uint64_t polls;			/* under lock: polls ended */
	pthread_cond_t polled;		/* signalled when a poll ends */
	pthread_t reader;
	bool reading;			/* main thread only */
	bool quit;			/* under lock */
	int ready;			/* eventfd: matches are queued */
	int wake;			/* eventfd: the reader returns */
} kt = { .lock = PTHREAD_MUTEX_INITIALIZER, .polled = PTHREAD_COND_INITIALIZER, .ready = -1,
	  .wake = -1 };

/* Capture `cap` of event e as an entry of kv: "capture" FIELD=VALUE (a
 * number or a string; FIELD[INDEX]: that byte of an array of bytes) or
 * "capture-bytes" FIELD=HEX (an array of bytes); nothing when the event
 * has no such field, context or element. */
static void add_capture(struct rtp_kv *kv, const struct rtk_event *e, const char *cap)
{
	char buf[4096];
	if (!strncmp(cap, "$ctx.", 5)) {
		const char *c = cap + 5;
		if (!strcmp(c, "tid") || !strcmp(c, "vtid"))
			snprintf(buf, sizeof(buf), "%d", (int)e->tid);
		else if ((!strcmp(c, "pid") || !strcmp(c, "vpid")) && e->pid >= 0)
			snprintf(buf, sizeof(buf), "%d", (int)e->pid);
		else if (!strcmp(c, "procname") && e->procname[0])
			snprintf(buf, sizeof(buf), "%s", e->procname);
		else if (!strcmp(c, "prio") && e->prio != RTK_PRIO_UNKNOWN)
			snprintf(buf, sizeof(buf), "%d", (int)e->prio);
		else if (!strcmp(c, "cpu_id"))
			snprintf(buf, sizeof(buf), "%u", e->cpu);
		else
			return;
		rtp_kv_addf(kv, "capture", "%s=%s", cap, buf);
		return;
	}
	const uint8_t *b;
	size_t n;
	const char *open = strchr(cap, '[');
	if (open) {
		/* FIELD[INDEX] (trigger_parse checked the digits). */
		char name[256];
		char *end;
		unsigned long long i = strtoull(open + 1, &end, 10);
		if ((size_t)(open - cap) >= sizeof(name))
			return;
		memcpy(name, cap, (size_t)(open - cap));
		name[open - cap] = '\0';
		if (*end == ']' && rtk_event_bytes(e, name, &b, &n) == 0 && i < n)
			rtp_kv_addf(kv, "capture", "%s=%u", cap, (unsigned)b[i]);
		return;
	}
	struct rtf_value v;
	int ret = rtk_event_field(e, cap, &v);
	if (ret == -EINVAL && rtk_event_bytes(e, cap, &b, &n) == 0) {
		if (n > (sizeof(buf) - 1) / 2)
			n = (sizeof(buf) - 1) / 2;
		rt_hex_encode(b, n, buf);
		rtp_kv_addf(kv, "capture-bytes", "%s=%s", cap, buf);
		return;
	}
	if (ret < 0)
		return;
	if (v.type == RTF_INT)
		rtp_kv_addf(kv, "capture", "%s=%lld", cap, (long long)v.i);
	else if (v.type == RTF_UINT)
		rtp_kv_addf(kv, "capture", "%s=%llu", cap, (unsigned long long)v.u);
	else
		rtp_kv_addf(kv, "capture", "%s=%.*s", cap, (int)v.s.len, v.s.p);
}

static void read_table(struct kt_table *tb);

/* rtk_trace_watch's callback: every event of a trigger's instance is a
 * match of it (the kernel applied the rule), its thread named by the
 * shared table. Reader thread, kt.lock held. */
static void on_event(void *arg, const struct rtk_event *ev)
{
	struct kdp_trigger *k = arg;
	struct rtk_thread th = { .pid = -1, .prio = RTK_PRIO_UNKNOWN };
	if (kt.table) {
		rtk_trace_thread(kt.table->t, ev->tid, &th);
		/* Unknown, and the match is later than the table's last read
		 * (the thread may have started after it, and be gone from
		 * /proc): its start is in the table's buffers now. */
		if ((th.pid < 0 || !th.comm[0]) && ev->tid > 0 && ev->time > kt.table->read_at) {
			read_table(kt.table);
			rtk_trace_thread(kt.table->t, ev->tid, &th);
		}
	}
	struct rtk_event named = *ev;
	named.pid = th.pid;
	named.procname = th.comm;
	named.prio = th.prio;
	const struct rtk_event *e = &named;
	if (RT_ARRAY_GROW(kt.round, kt.cap_round, kt.nr_round + 1, 64) < 0) {
		k->dropped++;
		return;
	}
	struct kt_match *m = &kt.round[kt.nr_round++];
	*m = (struct kt_match){ .id = k->id, .time = e->time };
	rtp_kv_add(&m->values, "event", e->name);
	if (e->pid >= 0)
		rtp_kv_addf(&m->values, "pid", "%d", (int)e->pid);
	rtp_kv_addf(&m->values, "tid", "%d", (int)e->tid);
	if (e->procname[0])
		rtp_kv_add(&m->values, "procname", e->procname);
	rtp_kv_addf(&m->values, "cpu", "%u", e->cpu);
	for (size_t i = 0; i < k->nr_captures; i++)
		add_capture(&m->values, e, k->captures[i]);
}

/* Whether the queue has room for one more page's matches. When the main
 * loop is behind, the events wait in the kernel's buffer instead, whose
 * overwrite counts what is lost. kt.lock held. */
static bool room(size_t page_size)
{
	return kt.nr_queue - kt.head + kt.nr_round + page_size / KT_EVENT_MIN <= KT_QUEUE_MAX;
}

/* Read what the trigger's buffers hold. Reader thread, kt.lock held. */
static void read_trigger(struct kdp_trigger *k)
{
	char err[RTD_ERRLEN];
	for (unsigned cpu = 0; cpu < k->pages.nr_cpus; cpu++) {
		for (unsigned n = 0; n < KT_PAGES_MAX && room(k->pages.page_size); n++) {
			const void *page;
			long size = k->pages.read(k->pages.arg, cpu, &page, err, sizeof(err));
			if (size <= 0) {
				if (size < 0 && !k->bad_logged) {
					rt_warn("trigger %s: %s", k->name, err);
					k->bad_logged = true;
				}
				break;
			}
			char *pkt;
			size_t len;
			if (rtk_trace_packet(k->t, cpu, page, (size_t)size, &pkt, &len, err,
					     sizeof(err)) < 0 && !k->bad_logged) {
				rt_warn("trigger %s: a page of its events is lost: %s", k->name, err);
				k->bad_logged = true;
			}
		}
	}
	/* A page says that events were lost before it, not always how many:
	 * then the instance's statistics files give the count. */
	struct rtk_trace_stats st;
	rtk_trace_stats(k->t, &st);
	if (st.lost > k->flagged_lost) {
		uint64_t total = 0;
		for (unsigned cpu = 0; cpu < k->pages.nr_cpus; cpu++)
			total += k->pages.lost(k->pages.arg, cpu);
		k->flagged_lost = st.lost;
		k->kernel_lost = total > st.lost ? total : st.lost;
	}
	if (k->kernel_lost + k->dropped > k->lost_logged) {
		rt_warn("trigger %s: %llu events of its instance lost (the daemon fell behind)",
			k->name,
			(unsigned long long)(k->kernel_lost + k->dropped - k->lost_logged));
		k->lost_logged = k->kernel_lost + k->dropped;
	}
}

/* Feed the thread table with what its instance holds (the pages are
 * converted for the table only). Reader thread, kt.lock held. */
static void read_table(struct kt_table *tb)
{
	char err[RTD_ERRLEN];
	tb->read_at = rt_clock_read();
	for (unsigned cpu = 0; cpu < tb->pages.nr_cpus; cpu++) {
		for (unsigned n = 0; n < KT_PAGES_MAX; n++) {
			const void *page;
			long size = tb->pages.read(tb->pages.arg, cpu, &page, err, sizeof(err));
			char *pkt;
			size_t len;
			if (size > 0 && rtk_trace_packet(tb->t, cpu, page, (size_t)size, &pkt, &len,
							 err, sizeof(err)) >= 0)
				continue;
			if (size != 0 && !tb->bad_logged) {
				rt_warn("kernel triggers: the thread table misses events: %s", err);
				tb->bad_logged = true;
			}
			if (size <= 0)
				break;
		}
	}
}

static int by_time(const void *a, const void *b)
{
	const struct kt_match *x = a, *y = b;
	return x->time < y->time ? -1 : x->time > y->time;
}

/* The round's matches up to `upto` (the time the round began), in time
 * order, onto the queue; the later ones stay in kt.round for the next
 * round. kt.lock held. */
static bool queue_round(uint64_t upto)
{
	if (!kt.nr_round)
		return false;
	qsort(kt.round, kt.nr_round, sizeof(*kt.round), by_time);
	size_t ready = 0;
	while (ready < kt.nr_round && kt.round[ready].time <= upto)
		ready++;
	if (kt.head) {
		memmove(kt.queue, kt.queue + kt.head, (kt.nr_queue - kt.head) * sizeof(*kt.queue));
		kt.nr_queue -= kt.head;
		kt.head = 0;
	}
	bool queued = false;
	for (size_t i = 0; i < ready; i++) {
		if (RT_ARRAY_GROW(kt.queue, kt.cap_queue, kt.nr_queue + 1, 64) < 0) {
			rtp_kv_free(&kt.round[i].values);
			for (struct kdp_trigger *k = kt.triggers; k; k = k->next)
				k->dropped += k->id == kt.round[i].id;
			continue;
		}
		kt.queue[kt.nr_queue++] = kt.round[i];
		queued = true;
	}
	memmove(kt.round, kt.round + ready, (kt.nr_round - ready) * sizeof(*kt.round));
	kt.nr_round -= ready;
	return queued;
}

/* The descriptors to wait on, in *pfds: the wake-up eventfd, then every
 * trigger instance's CPUs; how many (fewer when out of memory: the
 * fallback period reads the rest; 0: *pfds has no room). kt.lock held. */
static size_t poll_set(struct pollfd **pfds, size_t *cap)
{
	size_t n = 1;
	for (const struct kdp_trigger *k = kt.triggers; k; k = k->next)
		n += k->pages.nr_cpus;
	if (RT_ARRAY_GROW(*pfds, *cap, n, 16) < 0)
		n = *cap ? 1 : 0;
	if (!n)
		return 0;
	(*pfds)[0] = (struct pollfd){ .fd = kt.wake, .events = POLLIN };
	size_t i = 1;
	for (const struct kdp_trigger *k = kt.triggers; k && i < n; k = k->next)
		for (unsigned c = 0; c < k->pages.nr_cpus && i < n; c++)
			(*pfds)[i++] = (struct pollfd){ .fd = k->poll_fds[c], .events = POLLIN };
	return i;
}

static void *reader_main(void *arg)
{
	(void)arg;
	struct pollfd *pfds = NULL, one = { .fd = kt.wake, .events = POLLIN };
	size_t cap = 0;
	for (;;) {
		/* Woken by the kernel as soon as a trigger instance records an
		 * event (buffer_percent 0), by add, remove and quit, else at
		 * KT_FALLBACK_MS. The set is built again each time: a removed
		 * trigger's descriptors are closed after the wake-up. */
		pthread_mutex_lock(&kt.lock);
		size_t n = poll_set(&pfds, &cap);
		kt.polling = true;
		/* Matches kept for the next round: no waiting for it. */
		int wait = kt.nr_round ? 0 : KT_FALLBACK_MS;
		pthread_mutex_unlock(&kt.lock);
		if (poll(n ? pfds : &one, n ? n : 1, wait) > 0 &&
		    ((n ? pfds : &one)[0].revents & POLLIN)) {
			uint64_t v;
			if (read(kt.wake, &v, sizeof(v)) < 0)
				(void)0;	/* a wake-up only */
		}
		pthread_mutex_lock(&kt.lock);
		kt.polling = false;
		kt.polls++;
		pthread_cond_broadcast(&kt.polled);
		bool quit = kt.quit, queued = false;
		if (!quit) {
			uint64_t upto = rt_clock_read();
			if (kt.table) {
				rtk_trace_sweep(kt.table->t);
				read_table(kt.table);
			}
			for (struct kdp_trigger *k = kt.triggers; k; k = k->next)
				read_trigger(k);
			queued = queue_round(upto);
		}
		pthread_mutex_unlock(&kt.lock);
		if (quit) {
			free(pfds);
			return NULL;
		}
		uint64_t inc = 1;
		if (queued && write(kt.ready, &inc, sizeof(inc)) < 0)
			(void)0;	/* the counter is only full when the loop is far behind */
		/* At most one read per KT_GAP_NS: a trigger whose event is
		 * frequent costs a read per millisecond, not a wake-up per
		 * event. */
		struct timespec gap = { .tv_nsec = KT_GAP_NS };
		nanosleep(&gap, NULL);
	}
}

int dp_kernel_triggers_init(void)
{
	kt.ready = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	kt.wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (kt.ready < 0 || kt.wake < 0) {
		int ret = -errno;
		dp_kernel_triggers_fini();
		return ret;
	}
	return kt.ready;
}

bool dp_kernel_trigger_take(uint64_t *id, struct rtp_kv *values)
{
	pthread_mutex_lock(&kt.lock);
	bool any = kt.head < kt.nr_queue;
	if (any) {
		*id = kt.queue[kt.head].id;
		*values = kt.queue[kt.head].values;
		kt.head++;
	}
	pthread_mutex_unlock(&kt.lock);
	return any;
}

static void table_free(struct kt_table *tb)
{
	if (!tb)
		return;
	rtk_trace_close(tb->t);
	rtk_instance_destroy(tb->in);
	free(tb);
}

static void wake_reader(void)
{
	uint64_t one = 1;
	if (kt.wake >= 0 && write(kt.wake, &one, sizeof(one)) < 0)
		(void)0;	/* it wakes at KT_FALLBACK_MS anyway */
}

static void reader_stop(void)
{
	if (!kt.reading)
		return;
	pthread_mutex_lock(&kt.lock);
	kt.quit = true;
	pthread_mutex_unlock(&kt.lock);
	wake_reader();
	pthread_join(kt.reader, NULL);
	kt.reading = false;
	kt.quit = false;
	table_free(kt.table);
	kt.table = NULL;
}

/* The thread-table instance: the events of this kernel among those that
 * keep the table, in overwrite mode, with ftrace's default wake-up (it is
 * never polled). 0 and *out, or -errno with one line in err. */
static int table_create(struct kt_table **out, char *err, size_t errlen)
{
	static const char *const table_events[] = {
		"task:task_newtask", "task:task_rename", "sched:sched_process_exec",
		"sched:sched_process_free",
	};
	const char *events[sizeof(table_events) / sizeof(table_events[0])];
	size_t n = 0;
	char why[RTD_ERRLEN];
	for (size_t i = 0; i < sizeof(table_events) / sizeof(table_events[0]); i++)
		if (dp_kernel_rule_matches(table_events[i], false, why, sizeof(why)) == 0)
			events[n++] = table_events[i];
	struct kt_table *tb = calloc(1, sizeof(*tb));
	if (!tb) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	struct rtk_config cfg = {
		.session = "threads",
		.trigger = true,
		.clock_tsc = app_clock_kind() == RTP_APP_CLOCK_TSC,
		.buffer_size_kb = KT_TABLE_KB,
		.overwrite = true,
		.events = events,
		.nr_events = n,
		.contexts = RTK_CTX_ALL,
	};
	uint8_t uuid[16] = { 0 };
	int ret;
	if ((ret = rtk_instance_create(&cfg, &tb->in, why, sizeof(why))) < 0 ||
	    (ret = rtk_instance_pages(tb->in, &tb->pages, why, sizeof(why))) < 0) {
		snprintf(err, errlen, "the kernel triggers' thread table: %s", why);
		goto fail;
	}
	if ((ret = rtk_trace_open(rtk_instance_formats(tb->in), uuid, RTK_CTX_ALL, &tb->t)) < 0) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	rtk_trace_keep_freed(tb->t);
	if ((ret = rtk_instance_start(tb->in)) < 0) {
		snprintf(err, errlen, "cannot start the tracefs instance %s: %s",
			 rtk_instance_name(tb->in), strerror(-ret));
		goto fail;
	}
	*out = tb;
	return 0;
fail:
	table_free(tb);
	return ret;
}

static void trigger_free(struct kdp_trigger *k)
{
	if (!k)
		return;
	rtk_trace_close(k->t);
	rtk_instance_destroy(k->in);	/* closes the poll descriptors */
	free(k->poll_fds);
	for (size_t i = 0; i < k->nr_captures; i++)
		free(k->captures[i]);
	free(k->captures);
	free(k->name);
	free(k);
}

/* Check the rule's $ctx captures against the kernel's contexts. */
static int check_captures(const struct rt_trigger_cond *c, char *err, size_t errlen)
{
	static const char *const ok[] = { "tid", "pid", "procname", "prio", "cpu_id", "vtid",
					  "vpid" };
	for (size_t i = 0; i < c->nr_captures; i++) {
		const char *v = c->captures[i];
		if (strncmp(v, "$ctx.", 5))
			continue;
		bool found = false;
		for (size_t j = 0; j < sizeof(ok) / sizeof(ok[0]) && !found; j++)
			found = !strcmp(v + 5, ok[j]);
		if (!found) {
			snprintf(err, errlen, "--capture=%s: a kernel event has the contexts tid, "
				 "pid, procname, prio and cpu_id (vtid and vpid: tid and pid)", v);
			return -EINVAL;
		}
	}
	return 0;
}

int dp_kernel_trigger_add(uint64_t id, const char *name, const struct rt_trigger_cond *c,
			  struct kdp_trigger **out, char *err, size_t errlen)
{
	char why[RTD_ERRLEN], inst[128];
	int ret = check_captures(c, err, errlen);
	if (ret < 0)
		return ret;
	struct kdp_trigger *k = calloc(1, sizeof(*k));
	if (!k || !(k->name = strdup(name)) ||
	    !(k->captures = calloc(c->nr_captures + 1, sizeof(char *)))) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	k->id = id;
	for (; k->nr_captures < c->nr_captures; k->nr_captures++)
		if (!(k->captures[k->nr_captures] = strdup(c->captures[k->nr_captures]))) {
			ret = -ENOMEM;
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
	bool syscall = c->er_type == RT_ER_SYSCALL;
	const char *pattern = c->pattern, *filter = c->filter;
	snprintf(inst, sizeof(inst), "%llu_%s", (unsigned long long)id, name);
	struct rtk_config cfg = {
		.session = inst,
		.trigger = true,
		.clock_tsc = app_clock_kind() == RTP_APP_CLOCK_TSC,
		.buffer_size_kb = KT_BUFFER_KB,
		.overwrite = true,
		.events = syscall ? NULL : &pattern,
		.nr_events = !syscall && pattern,
		.all_events = !syscall && !pattern,
		.event_filters = syscall ? NULL : &filter,
		.syscalls = syscall ? &pattern : NULL,
		.nr_syscalls = syscall && pattern,
		.all_syscalls = syscall && !pattern,
		.syscall_filters = syscall ? &filter : NULL,
		.excludes = (const char *const *)c->excludes,
		.nr_excludes = c->nr_excludes,
		.syscall_sides = syscall ? c->syscall_sides : 0,
		/* No contexts: the thread-table events are the shared
		 * instance's, not this one's. */
		.wake_on_event = true,
	};
	uint8_t uuid[16] = { 0 };
	if ((ret = rtk_instance_create(&cfg, &k->in, why, sizeof(why))) < 0 ||
	    (ret = rtk_instance_pages(k->in, &k->pages, why, sizeof(why))) < 0) {
		snprintf(err, errlen, "%s", why);
		goto fail;
	}
	if (!(k->poll_fds = calloc(k->pages.nr_cpus + 1, sizeof(int)))) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	for (unsigned cpu = 0; cpu < k->pages.nr_cpus; cpu++)
		if ((ret = k->poll_fds[cpu] = rtk_instance_poll_fd(k->in, cpu)) < 0 &&
		    ret != -ENOENT) {	/* a CPU that is not there: poll skips -1 */
			snprintf(err, errlen, "cannot open the buffer of CPU %u of %s: %s", cpu,
				 rtk_instance_name(k->in), strerror(-ret));
			goto fail;
		}
	if ((ret = rtk_trace_open(rtk_instance_formats(k->in), uuid, 0, &k->t)) < 0) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	rtk_trace_watch(k->t, on_event, k);
	if ((ret = rtk_instance_start(k->in)) < 0) {
		snprintf(err, errlen, "cannot start the tracefs instance %s: %s",
			 rtk_instance_name(k->in), strerror(-ret));
		goto fail;
	}
	if (!kt.reading) {
		/* The first trigger: the table, then the reader (neither
		 * exists without triggers). */
		if ((ret = table_create(&kt.table, err, errlen)) < 0)
			goto fail;
		int e = pthread_create(&kt.reader, NULL, reader_main, NULL);
		if (e) {
			ret = -e;
			snprintf(err, errlen, "cannot start the kernel triggers' reader: %s",
				 strerror(e));
			table_free(kt.table);
			kt.table = NULL;
			goto fail;
		}
		pthread_setname_np(kt.reader, "rtd-ktriggers");
		kt.reading = true;
	}
	pthread_mutex_lock(&kt.lock);
	k->next = kt.triggers;
	kt.triggers = k;
	pthread_mutex_unlock(&kt.lock);
	wake_reader();
	*out = k;
	return 0;
fail:
	trigger_free(k);
	return ret;
}

uint64_t dp_kernel_trigger_lost(struct kdp_trigger *k)
{
	pthread_mutex_lock(&kt.lock);
	uint64_t n = k->kernel_lost + k->dropped;
	pthread_mutex_unlock(&kt.lock);
	return n;
}

void dp_kernel_trigger_remove(struct kdp_trigger *k)
{
	if (!k)
		return;
	pthread_mutex_lock(&kt.lock);
	for (struct kdp_trigger **p = &kt.triggers; *p; p = &(*p)->next)
		if (*p == k) {
			*p = k->next;
			break;
		}
	/* A poll under way may hold its descriptors (the files stay open,
	 * and the instance cannot be removed, until it returns): wake it and
	 * wait for its end; the next set is built without them. */
	if (kt.polling) {
		uint64_t seen = kt.polls;
		wake_reader();
		while (kt.polls == seen)
			pthread_cond_wait(&kt.polled, &kt.lock);
	}
	/* Its matches still queued name its id, which no trigger has now:
	 * the main loop drops them. */
	bool last = !kt.triggers;
	pthread_mutex_unlock(&kt.lock);
	/* No trigger left: the reader ends (the next add starts one), rather
	 * than wake every KT_FALLBACK_MS for nothing. It never takes
	 * rtd_lock, which this thread holds: joining it is safe. */
	if (last)
		reader_stop();
	trigger_free(k);
}

void dp_kernel_triggers_fini(void)
{
	reader_stop();
	while (kt.triggers) {
		struct kdp_trigger *k = kt.triggers;
		kt.triggers = k->next;
		trigger_free(k);
	}
	for (size_t i = kt.head; i < kt.nr_queue; i++)
		rtp_kv_free(&kt.queue[i].values);
	for (size_t i = 0; i < kt.nr_round; i++)
		rtp_kv_free(&kt.round[i].values);
	free(kt.queue);
	free(kt.round);
	kt.queue = kt.round = NULL;
	kt.nr_queue = kt.cap_queue = kt.head = kt.nr_round = kt.cap_round = 0;
	if (kt.ready >= 0)
		close(kt.ready);
	if (kt.wake >= 0)
		close(kt.wake);
	kt.ready = kt.wake = -1;
}
