/*
 * test_kernel_pages.c - src/kernel's formats and page conversion on pages
 * recorded from this kernel's ftrace (tests/kernel/data):
 *  - pages_cpu0.bin: two pages of CPU 0 (x86-tsc clock) with sched_switch,
 *    sched_waking and the write system call's entries and exits;
 *    trace_cpu0.txt is ftrace's own text of the same buffer (its `trace`
 *    file, read before the pages were consumed): every event converted
 *    must match it one by one, timestamp (raw TSC), name, tid and fields;
 *    the same pages converted with a watcher (rtk_trace_watch, what the
 *    daemon's kernel triggers use) give it every event in order with the
 *    text's time, tid and fields (rtk_event_field, typed as the formats);
 *  - pages_missed.bin: three pages of a full 8 KiB overwrite buffer, the
 *    first flagged "events missed";
 *  - damaged pages: never a crash, -EINVAL or a trace that still reads;
 *  - the state dump's records (ftrace:raw_data events, format in
 *    ftrace.raw_data.format) in pages built here: well-formed ones become
 *    lttng_statedump_* events; those of another writer, short, of an
 *    unknown kind or random are skipped and counted, never a crash.
 *  - the per-CPU readers (readers.c) over FIFOs standing for the CPUs'
 *    trace_pipe_raw: order, queues, stop;
 *  - a thread named from its creation on another CPU, converted later
 *    (pages looked at ahead);
 *  - a converter per CPU: one CPU's pages are written while another's
 *    converter is held.
 * The pages are written as the kernel's are, through the consumer
 * (rtk_writer over pages read from memory instead of an instance), and the
 * traces read back with ringtrace's reader.
 *
 *   test_kernel_pages DATA_DIR
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/kernel.h"
#include "filter/filter.h"
#include "kernel/kernel_internal.h"
#include "reader/reader.h"
#include "rt_test.h"

static int failures;

#define CHECK(cond, ...)                                                    \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);     \
			fprintf(stderr, __VA_ARGS__);                       \
			fprintf(stderr, "\n");                              \
			failures++;                                         \
		}                                                           \
	} while (0)

static const char *data_dir;

static char *slurp(const char *name, size_t *len)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", data_dir, name);
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "cannot open %s\n", path);
		exit(1);
	}
	char *buf = NULL;
	size_t n = 0, cap = 0, r;
	do {
		if (n + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 65536;
			buf = realloc(buf, cap);
			if (!buf)
				exit(1);
		}
		r = fread(buf + n, 1, 4096, f);
		n += r;
	} while (r == 4096);
	fclose(f);
	buf[n] = '\0';
	*len = n;
	return buf;
}

static struct rtk_formats *load_formats(void)
{
	static const char *const files[][2] = {
		{ "sched", "sched.sched_switch.format" },
		{ "sched", "sched.sched_waking.format" },
		{ "syscalls", "syscalls.sys_enter_write.format" },
		{ "syscalls", "syscalls.sys_exit_write.format" },
	};
	struct rtk_formats *f = rtk_formats_new();
	for (size_t i = 0; i < 4; i++) {
		size_t len;
		char *text = slurp(files[i][1], &len);
		CHECK(rtk_formats_add(f, files[i][0], text, len) == 0, "format %s", files[i][1]);
		CHECK(rtk_formats_add(f, files[i][0], text, len) == -EEXIST, "twice %s",
		      files[i][1]);
		free(text);
	}
	CHECK(rtk_formats_add(f, "sched", "no id", 5) == -EINVAL, "no ID");
	return f;
}

/* A new directory's path for a trace (the trace writer creates it), in a
 * private temporary directory. */
static char *tmpdir(const char *tag)
{
	char *base = rt_test_tmpdir("rt-kpages");
	char *out;
	if (asprintf(&out, "%s/%s", base, tag) < 0)
		exit(2);
	free(base);
	return out;
}

/* Remove what tmpdir made and the trace in it. */
static void rmtrace(char *dir)
{
	*strrchr(dir, '/') = '\0';
	rt_test_rmtree(dir);
	free(dir);
}

/* Open the trace written in dir with our reader (the test ends when
 * something failed so far). */
static struct rtr_trace *reopen(const char *dir)
{
	char err[512];
	struct rtr_trace *r = NULL;
	CHECK(rtr_open(dir, &r, err, sizeof(err)) == 0, "rtr_open: %s", err);
	if (failures)
		exit(1);
	return r;
}

/* Recorded pages as the writer reads an instance's: CPU `cpu`'s, 4096
 * bytes each, then none; `lost` as the stats file said. */
struct mem_pages {
	const char *data;
	size_t len, off;
	unsigned cpu;
	uint64_t lost;
};

static long mem_read(void *arg, unsigned cpu, const void **page, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	struct mem_pages *m = arg;
	if (cpu != m->cpu || m->off + 4096 > m->len)
		return 0;
	*page = m->data + m->off;
	m->off += 4096;
	return 4096;
}

static uint64_t mem_lost(void *arg, unsigned cpu)
{
	struct mem_pages *m = arg;
	return cpu == m->cpu ? m->lost : 0;
}

/* The contexts write_trace's traces carry besides tid. */
static unsigned write_contexts;

/* A writer of `pages` into dir (exits when it cannot be opened). */
static struct rtk_writer *open_writer(const struct rtk_pages *pages, const struct rtk_formats *f,
				      const char *dir, unsigned contexts)
{
	/* Ticks are the TSC; 1 GHz keeps the test free of calibration. */
	struct rtk_writer_opts o = {
		.dir = dir, .uuid = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 },
		.trace_name = "kpages",
		.clock = { .name = "tsc", .description = "test", .freq = 1000000000 },
		.contexts = contexts,
	};
	struct rtk_writer *w;
	char err[512];
	if (rtk_writer_open(pages, f, &o, &w, err, sizeof(err)) < 0) {
		fprintf(stderr, "rtk_writer_open: %s\n", err);
		exit(1);
	}
	return w;
}

/* Write the pages of CPU `cpu` as a trace in dir; its writer's
 * statistics in *st. */
static void write_trace(const struct rtk_formats *f, const char *dir, unsigned cpu,
			const char *data, size_t len, uint64_t lost, struct rtk_writer_stats *st)
{
	struct mem_pages m = { .data = data, .len = len, .cpu = cpu, .lost = lost };
	struct rtk_pages pages = { .read = mem_read, .lost = mem_lost, .arg = &m,
				   .nr_cpus = cpu + 1, .page_size = 4096 };
	struct rtk_writer *w = open_writer(&pages, f, dir, write_contexts);
	rtk_writer_drain(w, NULL);
	CHECK(m.off == len - len % 4096, "pages read: %zu of %zu bytes", m.off, len);
	rtk_writer_stats(w, st);
	rtk_writer_close(w);
}

/* A trace that converts pages without writing them. */
static struct rtk_trace *packet_trace(const struct rtk_formats *f)
{
	static const uint8_t uuid[16] = { 1 };
	struct rtk_trace *t;
	if (rtk_trace_open(f, uuid, 0, &t) < 0) {
		fprintf(stderr, "rtk_trace_open: out of memory\n");
		exit(1);
	}
	return t;
}

/* One event of ftrace's text. */
struct text_event {
	unsigned long long ts;
	int tid;
	char name[64];
	char comm[2][32];
	int tids[2];
	int prios[2];			/* ftrace's (the kernel's p->prio) */
	unsigned long long value;	/* count, ret or target_cpu */
};

static int between(const char *s, const char *from, const char *to, char *out, size_t n)
{
	const char *a = strstr(s, from);
	if (!a)
		return -1;
	a += strlen(from);
	const char *b = strstr(a, to);
	if (!b || (size_t)(b - a) >= n)
		return -1;
	memcpy(out, a, (size_t)(b - a));
	out[b - a] = '\0';
	return 0;
}

static int parse_line(char *line, struct text_event *e)
{
	memset(e, 0, sizeof(*e));
	char *br = strstr(line, " [");
	if (!br)
		return -1;
	char *dash = br;
	while (dash > line && *dash != '-')
		dash--;
	e->tid = atoi(dash + 1);
	char *p = strchr(br, ']');
	if (!p || sscanf(p + 1, " %*s %llu:", &e->ts) != 1)
		return -1;
	p = strchr(strchr(p + 1, ':') ? strstr(p + 1, ": ") : p, ' ');
	if (!p)
		return -1;
	p++;
	char num[64];
	if (!strncmp(p, "sys_write(", 10)) {
		strcpy(e->name, "syscall_entry_write");
		if (between(p, "count: ", ")", num, sizeof(num)) < 0)
			return -1;
		e->value = strtoull(num, NULL, 16);
	} else if (!strncmp(p, "sys_write -> ", 13)) {
		strcpy(e->name, "syscall_exit_write");
		e->value = strtoull(p + 13, NULL, 16);
	} else if (!strncmp(p, "sched_switch: ", 14)) {
		strcpy(e->name, "sched_switch");
		if (between(p, "prev_comm=", " prev_pid=", e->comm[0], 32) < 0 ||
		    between(p, "next_comm=", " next_pid=", e->comm[1], 32) < 0)
			return -1;
		e->tids[0] = atoi(strstr(p, "prev_pid=") + 9);
		e->tids[1] = atoi(strstr(p, "next_pid=") + 9);
		e->prios[0] = atoi(strstr(p, "prev_prio=") + 10);
		e->prios[1] = atoi(strstr(p, "next_prio=") + 10);
	} else if (!strncmp(p, "sched_waking: ", 14)) {
		strcpy(e->name, "sched_waking");
		if (between(p, "comm=", " pid=", e->comm[0], 32) < 0)
			return -1;
		e->tids[0] = atoi(strstr(p, " pid=") + 5);
		e->prios[0] = atoi(strstr(p, " prio=") + 6);
		e->value = strtoull(strstr(p, "target_cpu=") + 11, NULL, 10);
	} else {
		return -1;
	}
	return 0;
}

static int64_t field_i(const struct rtr_event *ev, const char *name)
{
	struct rtr_value v;
	if (rtr_field_by_name(ev, name, &v) < 0)
		return -999999;
	return v.type == RTR_INT ? v.i : (int64_t)v.u;
}

static int field_s(const struct rtr_event *ev, const char *name, char *out, size_t n)
{
	struct rtr_value v;
	if (rtr_field_by_name(ev, name, &v) < 0 || v.type != RTR_STRING || v.s.len >= n)
		return -1;
	memcpy(out, v.s.p, v.s.len);
	out[v.s.len] = '\0';
	return 0;
}

static int64_t context_tid(const struct rtr_event *ev)
{
	struct rtr_value v;
	const char *name;
	if (rtr_scope_count(ev, RTR_SCOPE_STREAM_EVENT_CONTEXT) != 1 ||
	    rtr_scope_field(ev, RTR_SCOPE_STREAM_EVENT_CONTEXT, 0, &v, &name) < 0 ||
	    strcmp(name, "tid"))
		return -999999;
	return v.i;
}

static void test_names(const struct rtk_formats *f)
{
	static const char *const want[] = { "sched_switch", "sched_waking",
					    "syscall_entry_write", "syscall_exit_write" };
	CHECK(rtk_formats_count(f) == 4, "4 classes, got %zu", rtk_formats_count(f));
	for (size_t i = 0; i < 4; i++)
		CHECK(rtk_formats_name(f, i) && !strcmp(rtk_formats_name(f, i), want[i]),
		      "class %zu is %s", i, rtk_formats_name(f, i));
}

static void test_pages(const struct rtk_formats *f)
{
	size_t len, tlen;
	char *pages = slurp("pages_cpu0.bin", &len);
	char *text = slurp("trace_cpu0.txt", &tlen);
	char *dir = tmpdir("kernel");
	struct rtk_writer_stats st;
	write_trace(f, dir, 0, pages, len, 0, &st);
	long total = (long)st.events;
	CHECK(st.lost == 0 && st.unknown == 0 && st.pages_bad == 0, "stats %llu %llu %llu",
	      (unsigned long long)st.lost, (unsigned long long)st.unknown,
	      (unsigned long long)st.pages_bad);
	struct rtr_trace *r = reopen(dir);
	const struct rtr_env *dom = rtr_trace_env_get(r, 0, "domain");
	CHECK(dom && dom->is_string && !strcmp(dom->s, "kernel"), "env domain");
	struct rtr_event ev;
	long n = 0, writes = 0, switches = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		struct text_event e;
		if (parse_line(line, &e) < 0) {
			CHECK(0, "unparsed text line: %s", line);
			continue;
		}
		int rr = rtr_next(r, &ev);
		CHECK(rr == 1, "event %ld missing (%s)", n, rtr_error(r));
		if (rr != 1)
			break;
		n++;
		CHECK(ev.ticks == e.ts, "event %ld: ts %llu, text %llu", n,
		      (unsigned long long)ev.ticks, e.ts);
		CHECK(!strcmp(ev.cls->name, e.name), "event %ld: %s, text %s", n, ev.cls->name,
		      e.name);
		CHECK(context_tid(&ev) == e.tid, "event %ld: tid %lld, text %d", n,
		      (long long)context_tid(&ev), e.tid);
		CHECK(ev.cpu == 0, "cpu");
		char comm[32];
		if (!strcmp(e.name, "syscall_entry_write")) {
			CHECK(field_i(&ev, "count") == (int64_t)e.value, "event %ld: count", n);
			CHECK(field_i(&ev, "__syscall_nr") == -999999, "no __syscall_nr");
			writes++;
		} else if (!strcmp(e.name, "syscall_exit_write")) {
			CHECK(field_i(&ev, "ret") == (int64_t)e.value, "event %ld: ret %lld, %llu",
			      n, (long long)field_i(&ev, "ret"), e.value);
		} else if (!strcmp(e.name, "sched_switch")) {
			CHECK(field_i(&ev, "prev_tid") == e.tids[0] &&
			      field_i(&ev, "next_tid") == e.tids[1], "event %ld: tids", n);
			/* LTTng's priorities: the kernel's minus 100. */
			CHECK(field_i(&ev, "prev_prio") == e.prios[0] - 100 &&
			      field_i(&ev, "next_prio") == e.prios[1] - 100,
			      "event %ld: prev_prio %lld, next_prio %lld, text %d, %d", n,
			      (long long)field_i(&ev, "prev_prio"),
			      (long long)field_i(&ev, "next_prio"), e.prios[0], e.prios[1]);
			CHECK(field_s(&ev, "prev_comm", comm, sizeof(comm)) == 0 &&
			      !strcmp(comm, e.comm[0]), "event %ld: prev_comm %s", n, comm);
			CHECK(field_s(&ev, "next_comm", comm, sizeof(comm)) == 0 &&
			      !strcmp(comm, e.comm[1]), "event %ld: next_comm %s", n, comm);
			switches++;
		} else {
			CHECK(field_i(&ev, "tid") == e.tids[0], "event %ld: waking tid", n);
			CHECK(field_i(&ev, "prio") == e.prios[0] - 100, "event %ld: waking prio %lld, "
			      "text %d", n, (long long)field_i(&ev, "prio"), e.prios[0]);
			CHECK(field_s(&ev, "comm", comm, sizeof(comm)) == 0 &&
			      !strcmp(comm, e.comm[0]), "event %ld: comm %s", n, comm);
			CHECK(field_i(&ev, "target_cpu") == (int64_t)e.value, "target_cpu");
		}
	}
	CHECK(rtr_next(r, &ev) == 0, "more events than ftrace's text");
	CHECK(n == total && n > 100 && writes >= 15 && switches > 10,
	      "%ld events (%ld written), %ld writes, %ld switches", n, total, writes, switches);
	rtr_close(r);
	free(pages);
	free(text);
	rmtrace(dir);
}

static void test_missed(const struct rtk_formats *f)
{
	size_t len;
	char *pages = slurp("pages_missed.bin", &len);
	char *dir = tmpdir("kernel");
	/* The stats file's count (per_cpu/cpu0/stats said 3729 overrun). */
	struct rtk_writer_stats st;
	write_trace(f, dir, 0, pages, len, 3729, &st);
	CHECK(st.lost == 3729 && st.pages_bad == 0, "lost %llu, bad pages %llu",
	      (unsigned long long)st.lost, (unsigned long long)st.pages_bad);
	struct rtr_trace *r = reopen(dir);
	struct rtr_event ev;
	long n = 0, entries = 0;
	int rr;
	while ((rr = rtr_next(r, &ev)) == 1) {
		n++;
		if (!strcmp(ev.cls->name, "syscall_entry_write") && field_i(&ev, "count") == 123)
			entries++;
	}
	CHECK(rr == 0, "read: %s", rtr_error(r));
	const struct rtr_stream_stats *ss;
	CHECK(rtr_streams(r, &ss) == 1 && ss[0].events_discarded == 3729 &&
	      ss[0].packets == 4, "discarded %llu",
	      (unsigned long long)ss[0].events_discarded);
	CHECK(n > 100 && entries > 50, "%ld events, %ld writes of 123 bytes", n, entries);
	rtr_close(r);
	free(pages);
	rmtrace(dir);
}

static void test_damage(const struct rtk_formats *f)
{
	size_t len;
	char *pages = slurp("pages_cpu0.bin", &len);
	struct rtk_trace *t = packet_trace(f);
	char err[512], page[4096], *pkt;
	size_t plen;
	CHECK(rtk_trace_packet(t, 0, pages, 10, &pkt, &plen, err, sizeof(err)) == -EINVAL,
	      "short page");
	memcpy(page, pages, sizeof(page));
	uint64_t big = 5000;
	memcpy(page + 8, &big, 8);
	CHECK(rtk_trace_packet(t, 0, page, sizeof(page), &pkt, &plen, err, sizeof(err)) ==
	      -EINVAL, "commit past the page");
	CHECK(strstr(err, "commit") != NULL, "message: %s", err);
	CHECK(rtk_trace_packet(t, 5000, pages, 4096, &pkt, &plen, err, sizeof(err)) == -EINVAL,
	      "cpu");
	/* Random damage: flipped bytes anywhere in the page. */
	enum { NR_DAMAGED = 3000 };
	char *damaged = malloc((size_t)NR_DAMAGED * 4096);
	if (!damaged)
		exit(2);
	unsigned seed = 12345;
	long ok = 0, refused = 0;
	for (int i = 0; i < NR_DAMAGED; i++) {
		char *p = damaged + (size_t)i * 4096;
		memcpy(p, pages + (i % 2) * 4096, 4096);
		int flips = 1 + (int)(rand_r(&seed) % 8);
		for (int k = 0; k < flips; k++)
			p[16 + rand_r(&seed) % (4096 - 16)] = (char)rand_r(&seed);
		if (i % 7 == 0)
			p[8 + rand_r(&seed) % 8] = (char)rand_r(&seed);
		long r = rtk_trace_packet(t, 0, p, 4096, &pkt, &plen, err, sizeof(err));
		CHECK(r >= 0 || r == -EINVAL, "damaged page %d: %ld", i, r);
		if (r >= 0)
			ok++;
		else
			refused++;
	}
	rtk_trace_close(t);
	/* The same pages through the writer: the refused ones skipped and
	 * counted, the others a trace that reads. */
	char *dir = tmpdir("kernel");
	struct rtk_writer_stats st;
	write_trace(f, dir, 0, damaged, (size_t)NR_DAMAGED * 4096, 0, &st);
	CHECK(st.pages_bad == (uint64_t)refused, "%llu pages skipped, %ld refused",
	      (unsigned long long)st.pages_bad, refused);
	struct rtr_trace *r;
	CHECK(rtr_open(dir, &r, err, sizeof(err)) == 0, "damaged input, trace: %s", err);
	if (!failures) {
		struct rtr_event ev;
		int rr;
		while ((rr = rtr_next(r, &ev)) == 1)
			;
		CHECK(rr == 0, "the trace of damaged pages reads: %s", rtr_error(r));
		rtr_close(r);
	}
	CHECK(ok > 0, "%ld pages converted, %ld refused", ok, refused);
	free(damaged);
	free(pages);
	rmtrace(dir);
}

/* Pages built by hand: ftrace's layout (trace.c's header comment). */
struct page_builder {
	char page[4096];
	size_t used;		/* bytes of events after the 16-byte header */
};

static void page_begin(struct page_builder *b, uint64_t ts)
{
	memset(b->page, 0, sizeof(b->page));
	memcpy(b->page, &ts, 8);
	b->used = 0;
}

/* One record of `len` bytes (rounded up to 4, at most 112: type_len is
 * the length in words), `delta` ticks after the previous one. */
static void page_add(struct page_builder *b, uint32_t delta, const void *rec, size_t len)
{
	size_t words = (len + 3) / 4;
	if (words < 1 || words > 28 || 16 + b->used + 4 + words * 4 > sizeof(b->page)) {
		fprintf(stderr, "page_add: %zu bytes do not fit\n", len);
		exit(2);
	}
	uint32_t h = (uint32_t)words | delta << 5;
	memcpy(b->page + 16 + b->used, &h, 4);
	memcpy(b->page + 16 + b->used + 4, rec, len);
	b->used += 4 + words * 4;
	uint64_t commit = b->used;
	memcpy(b->page + 8, &commit, 8);
}

/* A raw_data record as ftrace stores a write to trace_marker_raw: its
 * common fields (type 19 in ftrace.raw_data.format, pid), then what was
 * written. */
static size_t raw_record(char *out, int pid, const void *written, size_t len)
{
	uint16_t type = 19;
	memset(out, 0, 8);
	memcpy(out, &type, 2);
	memcpy(out + 4, &pid, 4);
	memcpy(out + 8, written, len);
	return 8 + len;
}

struct dump_rec {
	uint32_t id, kind;
	int32_t tid, pid, ppid, type, mode, submode, status;
	uint32_t cpu;
	int32_t prio;
	char name[16];
};

static void test_statedump(void)
{
	struct rtk_formats *f = load_formats();
	size_t len;
	char *text = slurp("ftrace.raw_data.format", &len);
	CHECK(rtk_formats_add_statedump(f, text, len) == 0, "raw_data format");
	CHECK(rtk_formats_add_statedump(f, text, len) == -EEXIST, "twice");
	CHECK(rtk_formats_count(f) == 8 && !strcmp(rtk_formats_name(f, 4), "lttng_statedump_start") &&
	      !strcmp(rtk_formats_name(f, 6), "lttng_statedump_process_state") &&
	      !strcmp(rtk_formats_name(f, 7), "lttng_statedump_process_pid_ns"), "classes");
	struct rtk_formats *other = rtk_formats_new();
	CHECK(rtk_formats_add_statedump(other, "ID: 19\nformat:\n", 16) == -EINVAL, "no fields");
	rtk_formats_free(other);
	free(text);

	/* Each page converted alone (its events counted), then all of them
	 * written as CPU 1's through the writer and read back. */
	enum { NR_PAGES = 2001 };
	char *all = malloc((size_t)NR_PAGES * 4096);
	if (!all)
		exit(2);
	struct rtk_trace *t = packet_trace(f);
	char *pkt;
	size_t plen;
	struct page_builder b;
	page_begin(&b, 1000);
	char rec[128];
	uint32_t start[2] = { 0x6b747272u, 1 }, end[2] = { 0x6b747272u, 2 };
	page_add(&b, 0, rec, raw_record(rec, 77, start, sizeof(start)));
	struct dump_rec d = { 0x6b747272u, 3, 500, 400, 1, 0, 5, 0, 2, 1, 20, "worker (x) 1" };
	page_add(&b, 10, rec, raw_record(rec, 77, &d, sizeof(d)));
	/* Another writer's record (its own id), a short one of ours, one of
	 * an unknown kind, one too short for its header: skipped. */
	char foreign[24] = { 0x34, 0x12, 0, 0, 'h', 'i' };
	page_add(&b, 10, rec, raw_record(rec, 66, foreign, sizeof(foreign)));
	page_add(&b, 10, rec, raw_record(rec, 77, &d, 30));
	uint32_t odd[2] = { 0x6b747272u, 9 };
	page_add(&b, 10, rec, raw_record(rec, 77, odd, sizeof(odd)));
	page_add(&b, 10, rec, raw_record(rec, 77, start, 2));
	/* A name of 16 bytes without a NUL: cut at the record's field. */
	struct dump_rec full = d;
	full.tid = 501;
	memset(full.name, 'n', sizeof(full.name));
	page_add(&b, 10, rec, raw_record(rec, 77, &full, sizeof(full)));
	page_add(&b, 10, rec, raw_record(rec, 77, end, sizeof(end)));
	char err[512];
	long n = rtk_trace_packet(t, 1, b.page, sizeof(b.page), &pkt, &plen, err, sizeof(err));
	CHECK(n == 4, "4 events of 8 records: %ld (%s)", n, err);
	struct rtk_trace_stats st;
	rtk_trace_stats(t, &st);
	CHECK(st.unknown == 4, "4 skipped: %llu", (unsigned long long)st.unknown);
	memcpy(all, b.page, 4096);

	/* Random records of ours and random bytes: converted or skipped. */
	unsigned seed = 4242;
	for (int i = 0; i < NR_PAGES - 1; i++) {
		page_begin(&b, 2000 + (uint64_t)i * 1000);
		for (int k = 0; k < 20; k++) {
			char w[104];
			size_t wl = 1 + rand_r(&seed) % sizeof(w);
			for (size_t j = 0; j < wl; j++)
				w[j] = (char)rand_r(&seed);
			if (rand_r(&seed) % 2) {
				uint32_t hdr[2] = { 0x6b747272u, 1 + (uint32_t)rand_r(&seed) % 4 };
				memcpy(w, hdr, wl < 8 ? wl : 8);
			}
			page_add(&b, 1, rec, raw_record(rec, 77, w, wl));
		}
		long r = rtk_trace_packet(t, 1, b.page, sizeof(b.page), &pkt, &plen, err,
					  sizeof(err));
		CHECK(r >= 0 && r <= 20, "random records %d: %ld (%s)", i, r, err);
		memcpy(all + (size_t)(i + 1) * 4096, b.page, 4096);
	}
	rtk_trace_close(t);
	char *dir = tmpdir("kernel");
	struct rtk_writer_stats wst;
	write_trace(f, dir, 1, all, (size_t)NR_PAGES * 4096, 0, &wst);
	CHECK(wst.pages_bad == 0, "%llu pages skipped", (unsigned long long)wst.pages_bad);
	free(all);
	struct rtr_trace *r = reopen(dir);
	struct rtr_event ev;
	const char *want[] = { "lttng_statedump_start", "lttng_statedump_process_state",
			       "lttng_statedump_process_state", "lttng_statedump_end" };
	for (int i = 0; i < 4; i++) {
		CHECK(rtr_next(r, &ev) == 1 && !strcmp(ev.cls->name, want[i]), "event %d", i);
		CHECK(context_tid(&ev) == 77 && ev.cpu == 1, "event %d: writer's tid", i);
		if (i == 1 || i == 2) {
			char name[32];
			CHECK(field_i(&ev, "tid") == 500 + i - 1 && field_i(&ev, "pid") == 400 &&
			      field_i(&ev, "ppid") == 1 && field_i(&ev, "type") == 0 &&
			      field_i(&ev, "mode") == 5 && field_i(&ev, "submode") == 0 &&
			      field_i(&ev, "status") == 2 && field_i(&ev, "cpu") == 1 &&
			      field_i(&ev, "prio") == -999999, "event %d: fields", i);
			CHECK(field_s(&ev, "name", name, sizeof(name)) == 0 &&
			      !strcmp(name, i == 1 ? "worker (x) 1" : "nnnnnnnnnnnnnnnn"),
			      "event %d: name %s", i, name);
		}
	}
	int rr;
	long more = 0;
	while ((rr = rtr_next(r, &ev)) == 1)
		more++;
	CHECK(rr == 0, "the random records' trace reads: %s", rtr_error(r));
	CHECK(more > 0, "some random records were ours and whole");
	rtr_close(r);
	rmtrace(dir);
	rtk_formats_free(f);
}

/* The process table (procs.c) against a plain array, through random
 * inserts, moves and removals: the hash's deletion shifts entries back,
 * and none may be lost or duplicated. */
static void test_procs(void)
{
	enum { N = 5000 };
	static int32_t ref[N + 1];	/* tid -> pid, 0: absent */
	struct rtk_procs p = { 0 };
	unsigned seed = 99;
	for (int i = 0; i < 200000; i++) {
		int32_t tid = 1 + (int32_t)(rand_r(&seed) % N);
		int op = rand_r(&seed) % 10;
		if (op < 5) {
			struct rtk_proc *e = rtk_procs_get(&p, tid);
			CHECK(e && e->tid == tid, "get %d", tid);
			if (!ref[tid])
				CHECK(e->pid == -1 && !e->comm[0] && e->prio == RTK_PRIO_UNKNOWN,
				      "new entry %d unknown", tid);
			else
				CHECK(e->pid == ref[tid], "entry %d kept its pid", tid);
			e->pid = ref[tid] = tid * 7;
		} else if (op < 9) {
			rtk_procs_remove(&p, tid);
			ref[tid] = 0;
		} else {
			int32_t to = 1 + (int32_t)(rand_r(&seed) % N);
			rtk_procs_move(&p, tid, to);
			if (ref[tid] && to != tid) {
				ref[to] = ref[tid];
				ref[tid] = 0;
			}
		}
	}
	size_t n = 0;
	for (int32_t tid = 1; tid <= N; tid++)
		n += ref[tid] != 0;
	CHECK(p.used == n, "%zu entries, %zu expected", p.used, n);
	size_t seen = 0;
	for (size_t i = 0; i < p.cap; i++) {
		if (!p.slots[i].tid)
			continue;
		seen++;
		CHECK(ref[p.slots[i].tid] == p.slots[i].pid, "slot of %d", p.slots[i].tid);
	}
	CHECK(seen == n, "%zu slots used", seen);
	rtk_procs_free(&p);
}

/* The contexts pid, procname and prio from the process table: a state
 * dump, then events of the dumped thread, a sched_switch that says its
 * name and priority changed, a thread /proc cannot know (its id is above
 * any pid_max), the idle task. */
static void test_contexts(void)
{
	struct rtk_formats *f = load_formats();
	size_t len;
	char *text = slurp("ftrace.raw_data.format", &len);
	CHECK(rtk_formats_add_statedump(f, text, len) == 0, "raw_data format");
	free(text);
	const int32_t ghost = 0x7ffffff0;
	struct page_builder b;
	page_begin(&b, 1000);
	char rec[128];
	struct dump_rec d = { 0x6b747272u, 3, 500, 400, 1, 0, 5, 0, 2, 1, 21, "dumped" };
	/* Written by a thread /proc cannot know either. */
	page_add(&b, 0, rec, raw_record(rec, ghost + 1, &d, sizeof(d)));
	/* syscalls:sys_exit_write (ID 839): __syscall_nr at 8, ret at 16. */
	char exit_rec[24];
	uint16_t exit_id = 839;
	int64_t ret = 5;
	int32_t tids[] = { 500, 500, ghost, 0, 500 };
	for (int i = 0; i < 5; i++) {
		if (i == 1) {
			/* sched:sched_switch (ID 372), prev 500 renamed, prio 125. */
			char sw[64] = { 0 };
			uint16_t id = 372;
			int32_t prev = 500, pprio = 125, next = ghost, nprio = 110;
			memcpy(sw, &id, 2);
			memcpy(sw + 4, &prev, 4);
			strcpy(sw + 8, "renamed");
			memcpy(sw + 24, &prev, 4);
			memcpy(sw + 28, &pprio, 4);
			strcpy(sw + 40, "ghost");
			memcpy(sw + 56, &next, 4);
			memcpy(sw + 60, &nprio, 4);
			page_add(&b, 10, sw, sizeof(sw));
		}
		memset(exit_rec, 0, sizeof(exit_rec));
		memcpy(exit_rec, &exit_id, 2);
		memcpy(exit_rec + 4, &tids[i], 4);
		memcpy(exit_rec + 16, &ret, 8);
		page_add(&b, 10, exit_rec, sizeof(exit_rec));
	}
	char *dir = tmpdir("kernel");
	struct rtk_writer_stats wst;
	write_contexts = RTK_CTX_ALL;
	write_trace(f, dir, 1, b.page, sizeof(b.page), 0, &wst);
	write_contexts = 0;
	struct rtr_trace *r = reopen(dir);
	static const struct {
		const char *name;
		int32_t tid, pid;
		const char *comm;
		int32_t prio;
	} want[] = {
		{ "lttng_statedump_process_state", 0x7ffffff1, -1, "", -1000 },
		{ "syscall_exit_write", 500, 400, "dumped", 21 },
		{ "sched_switch", 500, 400, "renamed", 25 },
		{ "syscall_exit_write", 500, 400, "renamed", 25 },
		{ "syscall_exit_write", 0x7ffffff0, -1, "ghost", 10 },
		{ "syscall_exit_write", 0, 0, "swapper/1", 20 },
		{ "syscall_exit_write", 500, 400, "renamed", 25 },
	};
	struct rtr_event ev;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		if (rtr_next(r, &ev) != 1) {
			CHECK(0, "event %zu missing: %s", i, rtr_error(r));
			break;
		}
		CHECK(!strcmp(ev.cls->name, want[i].name), "event %zu: %s", i, ev.cls->name);
		static const char *const names[] = { "tid", "pid", "procname", "prio" };
		CHECK(rtr_scope_count(&ev, RTR_SCOPE_STREAM_EVENT_CONTEXT) == 4, "4 contexts");
		for (size_t k = 0; k < 4; k++) {
			struct rtr_value v;
			const char *n;
			if (rtr_scope_field(&ev, RTR_SCOPE_STREAM_EVENT_CONTEXT, k, &v, &n) < 0 ||
			    strcmp(n, names[k])) {
				CHECK(0, "event %zu: context %zu is not %s", i, k, names[k]);
				continue;
			}
			if (k == 2)
				CHECK(v.type == RTR_STRING && v.s.len == strlen(want[i].comm) &&
				      !memcmp(v.s.p, want[i].comm, v.s.len), "event %zu: procname %.*s",
				      i, (int)v.s.len, v.s.p);
			else
				CHECK(v.i == (k == 0 ? want[i].tid : k == 1 ? want[i].pid : want[i].prio),
				      "event %zu: %s = %lld", i, names[k], (long long)v.i);
		}
	}
	CHECK(rtr_next(r, &ev) == 0, "no more events");
	rtr_close(r);
	rmtrace(dir);
	rtk_formats_free(f);
}

/* What the watcher saw of each event: the text line's values as
 * rtk_event_field and the event give them. */
struct watched {
	long n;
	struct text_event ev[4096];
	int kinds_ok;		/* every field had the type its format says */
	int missing_ok;		/* an unknown field is -ENOENT */
};

static void watch_one(void *arg, const struct rtk_event *e)
{
	struct watched *w = arg;
	struct rtf_value v;
	if (w->n >= 4096)
		return;
	struct text_event *t = &w->ev[w->n++];
	memset(t, 0, sizeof(*t));
	t->ts = e->time;
	t->tid = e->tid;
	snprintf(t->name, sizeof(t->name), "%s", e->name);
	w->missing_ok &= rtk_event_field(e, "no_such_field", &v) == -ENOENT;
	const char *ints[2] = { NULL, NULL }, *strs[2] = { NULL, NULL }, *val = NULL;
	enum rtf_type val_type = RTF_UINT;
	if (!strcmp(e->name, "syscall_entry_write")) {
		val = "count";		/* size_t */
	} else if (!strcmp(e->name, "syscall_exit_write")) {
		val = "ret";		/* long */
		val_type = RTF_INT;
	} else if (!strcmp(e->name, "sched_switch")) {
		ints[0] = "prev_tid", ints[1] = "next_tid";
		strs[0] = "prev_comm", strs[1] = "next_comm";
	} else {
		ints[0] = "tid", strs[0] = "comm", val = "target_cpu";
		val_type = RTF_INT;
	}
	for (int k = 0; k < 2; k++) {
		if (ints[k] && rtk_event_field(e, ints[k], &v) == 0 && v.type == RTF_INT)
			t->tids[k] = (int)v.i;
		else if (ints[k])
			w->kinds_ok = 0;
		if (strs[k] && rtk_event_field(e, strs[k], &v) == 0 && v.type == RTF_STRING &&
		    v.s.len < sizeof(t->comm[k]) && !memchr(v.s.p, '\0', v.s.len))
			memcpy(t->comm[k], v.s.p, v.s.len);
		else if (strs[k])
			w->kinds_ok = 0;
	}
	if (val && rtk_event_field(e, val, &v) == 0 && v.type == val_type)
		t->value = val_type == RTF_INT ? (unsigned long long)v.i : v.u;
	else if (val)
		w->kinds_ok = 0;
}

/* rtk_trace_watch hands every converted event, in order, with its time,
 * tid and fields (rtk_event_field) as ftrace's text has them. */
static void test_watch(const struct rtk_formats *f)
{
	size_t len, tlen;
	char *pages = slurp("pages_cpu0.bin", &len);
	char *text = slurp("trace_cpu0.txt", &tlen);
	struct watched *w = calloc(1, sizeof(*w));
	w->kinds_ok = w->missing_ok = 1;
	struct rtk_trace *t = packet_trace(f);
	rtk_trace_watch(t, watch_one, w);
	long converted = 0;
	for (size_t off = 0; off + 4096 <= len; off += 4096) {
		char *pkt, err[256];
		size_t plen;
		long r = rtk_trace_packet(t, 0, pages + off, 4096, &pkt, &plen, err, sizeof(err));
		CHECK(r >= 0, "page at %zu: %s", off, err);
		converted += r > 0 ? r : 0;
	}
	rtk_trace_close(t);
	CHECK(w->n == converted && w->n > 100, "watched %ld of %ld events", w->n, converted);
	CHECK(w->kinds_ok, "a field of the wrong type or absent");
	CHECK(w->missing_ok, "an unknown field found");
	long i = 0;
	for (char *line = strtok(text, "\n"); line && i < w->n; line = strtok(NULL, "\n"), i++) {
		struct text_event e;
		if (parse_line(line, &e) < 0)
			continue;
		const struct text_event *g = &w->ev[i];
		CHECK(g->ts == e.ts && g->tid == e.tid && !strcmp(g->name, e.name),
		      "event %ld: %s %llu tid %d, text %s %llu tid %d", i, g->name, g->ts, g->tid,
		      e.name, e.ts, e.tid);
		if (!strcmp(e.name, "sched_switch") || !strcmp(e.name, "sched_waking")) {
			CHECK(g->tids[0] == e.tids[0] && !strcmp(g->comm[0], e.comm[0]),
			      "event %ld: %d %s, text %d %s", i, g->tids[0], g->comm[0], e.tids[0],
			      e.comm[0]);
			if (!strcmp(e.name, "sched_switch"))
				CHECK(g->tids[1] == e.tids[1] && !strcmp(g->comm[1], e.comm[1]),
				      "event %ld: next %d %s", i, g->tids[1], g->comm[1]);
		}
		if (strcmp(e.name, "sched_switch")) {
			CHECK(g->value == e.value, "event %ld %s: %llu, text %llu", i, e.name,
			      g->value, e.value);
		}
	}
	CHECK(i == w->n, "%ld text lines for %ld events", i, w->n);
	free(w);
	free(pages);
	free(text);
}

/* ---- a thread created on another CPU than its events (trace.c's
 * lookahead): CPU 0's page, converted first, holds a write(2) of a
 * child that /proc cannot know; CPU 1's page, converted after it, holds
 * the child's creation (task_newtask, earlier in time). With pages that
 * can be looked at ahead (rtk_pages' peek) the child's write carries its
 * pid and name; without, pid -1 and no name (what the readers' queues
 * avoid). ---- */

struct two_cpus {
	const char *page[2];
	bool taken[2];
	bool in_kernel;		/* CPU 1's page is not queued until a sweep */
};

static long two_read(void *arg, unsigned cpu, const void **page, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	struct two_cpus *m = arg;
	if (cpu > 1 || m->taken[cpu])
		return 0;
	m->taken[cpu] = true;
	*page = m->page[cpu];
	return 4096;
}

static long two_peek(void *arg, unsigned cpu, size_t i, void *buf)
{
	struct two_cpus *m = arg;
	if (cpu > 1 || i > 0 || m->taken[cpu] || (cpu == 1 && m->in_kernel))
		return 0;
	memcpy(buf, m->page[cpu], 4096);
	return 4096;
}

static void two_sweep(void *arg)
{
	struct two_cpus *m = arg;
	m->in_kernel = false;
}

static uint64_t two_lost(void *arg, unsigned cpu)
{
	(void)arg;
	(void)cpu;
	return 0;
}

/* Write CPU 0's page p0 and CPU 1's p1 as a trace with the contexts,
 * looking ahead or not, and check the child's write(2); in_kernel: p1 is
 * still in its CPU's buffer, queued by a sweep (none without `sweep`). */
static void lookahead_trace(const struct rtk_formats *f, const char *p0, const char *p1,
			    bool ahead, bool in_kernel, bool sweep, int32_t child)
{
	struct two_cpus m = { .page = { p0, p1 }, .in_kernel = in_kernel };
	struct rtk_pages pages = { .read = two_read, .lost = two_lost,
				   .peek = ahead ? two_peek : NULL,
				   .sweep = sweep ? two_sweep : NULL, .arg = &m,
				   .nr_cpus = 2, .page_size = 4096 };
	char *dir = tmpdir("ahead");
	struct rtk_writer *w = open_writer(&pages, f, dir, RTK_CTX_ALL);
	rtk_writer_drain(w, NULL);
	rtk_writer_close(w);
	struct rtr_trace *r = reopen(dir);
	struct rtr_event ev;
	int found = 0;
	while (rtr_next(r, &ev) == 1) {
		if (strcmp(ev.cls->name, "syscall_exit_write"))
			continue;
		found++;
		struct rtr_value pid, name;
		const char *n;
		CHECK(rtr_scope_field(&ev, RTR_SCOPE_STREAM_EVENT_CONTEXT, 1, &pid, &n) == 0 &&
		      !strcmp(n, "pid") &&
		      rtr_scope_field(&ev, RTR_SCOPE_STREAM_EVENT_CONTEXT, 2, &name, &n) == 0 &&
		      !strcmp(n, "procname"), "contexts");
		if (ahead && (!in_kernel || sweep))
			CHECK(pid.i == child && name.s.len == 3 && !memcmp(name.s.p, "kid", 3),
			      "looked ahead: pid %lld, procname %.*s", (long long)pid.i,
			      (int)name.s.len, name.s.p);
		else
			CHECK(pid.i == -1 && name.s.len == 0, "no lookahead: pid %lld",
			      (long long)pid.i);
	}
	CHECK(found == 1, "the child's write: %d", found);
	rtr_close(r);
	rmtrace(dir);
}

static void test_lookahead(void)
{
	struct rtk_formats *f = load_formats();
	size_t len;
	char *text = slurp("task.task_newtask.format", &len);
	CHECK(rtk_formats_add(f, "task", text, len) == 0, "task_newtask format");
	free(text);
	/* Ids above any pid_max: /proc knows neither. */
	const int32_t child = 0x7ffffff2, parent = 0x7ffffff3;
	struct page_builder b0, b1;
	/* syscalls:sys_exit_write (ID 839): common_pid at 4, ret at 16. */
	page_begin(&b0, 2000);
	char exit_rec[24] = { 0 };
	uint16_t exit_id = 839;
	int64_t ret = 5;
	memcpy(exit_rec, &exit_id, 2);
	memcpy(exit_rec + 4, &child, 4);
	memcpy(exit_rec + 16, &ret, 8);
	page_add(&b0, 0, exit_rec, sizeof(exit_rec));
	/* task:task_newtask (ID 205): pid at 8, comm at 12, clone_flags at
	 * 32 (SIGCHLD: a process). */
	page_begin(&b1, 1000);
	char nt[44] = { 0 };
	uint16_t nt_id = 205;
	uint64_t flags = 0x11;
	memcpy(nt, &nt_id, 2);
	memcpy(nt + 4, &parent, 4);
	memcpy(nt + 8, &child, 4);
	memcpy(nt + 12, "kid", 4);
	memcpy(nt + 32, &flags, 8);
	page_add(&b1, 0, nt, sizeof(nt));
	lookahead_trace(f, b0.page, b1.page, false, false, false, child);
	lookahead_trace(f, b0.page, b1.page, true, false, false, child);
	/* The creation still in CPU 1's buffer (its reader has not woken
	 * yet): the readers' sweep queues it (before, pid -1). */
	lookahead_trace(f, b0.page, b1.page, true, true, true, child);
	rtk_formats_free(f);
}

/* ---- a converter per CPU (rtk_writer_start): while CPU 0's converter
 * is held inside a read of its pages (a CPU whose conversion gets no CPU
 * time), CPU 1's converter still writes CPU 1's pages into its stream
 * file; once released, every page of both CPUs is in the trace, in order,
 * with the contexts (the process table both converters feed). With one
 * converting thread for every CPU, CPU 1's pages waited for CPU 0's. ---- */

#define CONV_PAGES 6

struct held_pages {
	const char *page[2][CONV_PAGES];
	int next[2];			/* pages read: the CPU's converter writes it */
	int entered;			/* eventfd: CPU 0's read is held */
	int release;			/* eventfd: CPU 0's read goes on */
	bool held;			/* CPU 0's converter only */
};

static long held_read(void *arg, unsigned cpu, const void **page, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	struct held_pages *m = arg;
	/* Relaxed: this CPU's converter is the only writer. */
	int next = cpu > 1 ? CONV_PAGES : __atomic_load_n(&m->next[cpu], __ATOMIC_RELAXED);
	if (next == CONV_PAGES)
		return 0;
	if (cpu == 0 && !m->held) {
		m->held = true;
		uint64_t one = 1;
		CHECK(write(m->entered, &one, 8) == 8, "signal the hold");
		/* Blocks until the test releases it (which waits 10 s at most
		 * for CPU 1: 60 s here, so that the test fails rather than
		 * hangs, and not because this gave up first). */
		struct pollfd p = { .fd = m->release, .events = POLLIN };
		CHECK(poll(&p, 1, 60000) == 1, "CPU 0's read was never released");
	}
	*page = m->page[cpu][next];
	/* Relaxed: the test waits for the count, nothing is published. */
	__atomic_store_n(&m->next[cpu], next + 1, __ATOMIC_RELAXED);
	return 4096;
}

static uint64_t held_lost(void *arg, unsigned cpu)
{
	(void)arg;
	(void)cpu;
	return 0;
}

static off_t file_size(const char *dir, const char *name)
{
	char path[4096];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) < 0 ? -1 : st.st_size;
}

static void test_converters(void)
{
	struct rtk_formats *f = load_formats();
	size_t len;
	char *text = slurp("task.task_newtask.format", &len);
	CHECK(rtk_formats_add(f, "task", text, len) == 0, "task_newtask format");
	free(text);
	/* Each CPU's pages: write(2) exits of a thread /proc does not know
	 * (an id above any pid_max), ret = CPU * 1000 + the event's number;
	 * CPU 1's first page creates CPU 0's thread first (task_newtask,
	 * named "kid"). */
	const int32_t tid[2] = { 0x7ffffff4, 0x7ffffff5 }, parent = 0x7ffffff6;
	static struct page_builder b[2][CONV_PAGES];
	struct held_pages m = { .entered = eventfd(0, EFD_CLOEXEC),
				.release = eventfd(0, EFD_CLOEXEC) };
	CHECK(m.entered >= 0 && m.release >= 0, "eventfd");
	for (unsigned c = 0; c < 2; c++)
		for (int i = 0; i < CONV_PAGES; i++) {
			page_begin(&b[c][i], 1000000 * (uint64_t)(i + 1) + 1000 * c);
			if (c == 1 && i == 0) {
				char nt[44] = { 0 };
				uint16_t nt_id = 205;
				uint64_t flags = 0x11;
				memcpy(nt, &nt_id, 2);
				memcpy(nt + 4, &parent, 4);
				memcpy(nt + 8, &tid[0], 4);
				memcpy(nt + 12, "kid", 4);
				memcpy(nt + 32, &flags, 8);
				page_add(&b[c][i], 0, nt, sizeof(nt));
			}
			for (int e = 0; e < 10; e++) {
				char rec[24] = { 0 };
				uint16_t id = 839;
				int64_t ret = (int64_t)c * 1000 + i * 10 + e;
				memcpy(rec, &id, 2);
				memcpy(rec + 4, &tid[c], 4);
				memcpy(rec + 16, &ret, 8);
				page_add(&b[c][i], 100, rec, sizeof(rec));
			}
			m.page[c][i] = b[c][i].page;
		}
	struct rtk_pages pages = { .read = held_read, .lost = held_lost, .arg = &m,
				   .nr_cpus = 2, .page_size = 4096 };
	char *dir = tmpdir("conv");
	struct rtk_writer *w = open_writer(&pages, f, dir, RTK_CTX_ALL);
	char err[256];
	CHECK(rtk_writer_start(w, 1, err, sizeof(err)) == 0, "rtk_writer_start: %s", err);
	/* CPU 0's converter is held: CPU 1's pages reach their file anyway
	 * (10 s at most: a failure, not a measure). */
	struct pollfd p = { .fd = m.entered, .events = POLLIN };
	CHECK(poll(&p, 1, 10000) == 1, "CPU 0's converter never read");
	off_t one = -1;
	for (int i = 0; i < 10000 && (one = file_size(dir, "channel0_1")) <= 0; i++)
		usleep(1000);
	CHECK(one > 0, "CPU 1's stream file while CPU 0's converter is held: %lld bytes",
	      (long long)one);
	CHECK(file_size(dir, "channel0_0") <= 0, "CPU 0's stream file before its release");
	uint64_t go = 1;
	CHECK(write(m.release, &go, 8) == 8, "release CPU 0");
	for (int i = 0; i < 10000 && (__atomic_load_n(&m.next[0], __ATOMIC_RELAXED) < CONV_PAGES ||
				      __atomic_load_n(&m.next[1], __ATOMIC_RELAXED) < CONV_PAGES);
	     i++)
		usleep(1000);
	rtk_writer_stop(w);
	rtk_writer_drain(w, NULL);
	CHECK(rtk_writer_error(w, true, err, sizeof(err)) == 0, "writer error: %s", err);
	rtk_writer_close(w);
	/* Every event of both CPUs, each CPU's in order; CPU 0's thread named
	 * from its creation on CPU 1 (by whichever converter met it first:
	 * the lookahead when CPU 0's came first). */
	struct rtr_trace *r = reopen(dir);
	struct rtr_event ev;
	int64_t want[2] = { 0, 1000 };
	int n[2] = { 0, 0 };
	while (r && rtr_next(r, &ev) == 1) {
		if (strcmp(ev.cls->name, "syscall_exit_write"))
			continue;
		struct rtr_value t, pid, name, ret;
		const char *nm;
		CHECK(rtr_scope_field(&ev, RTR_SCOPE_STREAM_EVENT_CONTEXT, 0, &t, &nm) == 0 &&
		      rtr_scope_field(&ev, RTR_SCOPE_STREAM_EVENT_CONTEXT, 1, &pid, &nm) == 0 &&
		      rtr_scope_field(&ev, RTR_SCOPE_STREAM_EVENT_CONTEXT, 2, &name, &nm) == 0 &&
		      rtr_field_by_name(&ev, "ret", &ret) == 0, "fields");
		unsigned c = t.i == tid[1];
		CHECK(t.i == tid[c], "tid %lld", (long long)t.i);
		CHECK(ret.i == want[c], "CPU %u: ret %lld, not %lld", c, (long long)ret.i,
		      (long long)want[c]);
		want[c] = ret.i + 1;
		if (c == 0)
			CHECK(pid.i == tid[0] && name.s.len == 3 && !memcmp(name.s.p, "kid", 3),
			      "CPU 0's thread: pid %lld, procname %.*s", (long long)pid.i,
			      (int)name.s.len, name.s.p);
		n[c]++;
	}
	CHECK(n[0] == 10 * CONV_PAGES && n[1] == 10 * CONV_PAGES, "events: %d and %d", n[0], n[1]);
	rtr_close(r);
	rmtrace(dir);
	close(m.entered);
	close(m.release);
	rtk_formats_free(f);
}

/* ---- the per-CPU readers (readers.c), over FIFOs standing for the
 * CPUs' trace_pipe_raw: pages come out in the order written, through
 * the queues while the readers run (they take pages without a read of
 * ours, up to their queue's size, and refill it as it is read) and from
 * the file after they stop; a reader sleeping in poll() with a period of
 * an hour stops at once; a missing CPU has no pages. ---- */

#define RD_PAGE 4096u

static int fifo_path(unsigned cpu, char *buf, size_t len, void *arg)
{
	snprintf(buf, len, "%s/cpu%u", (const char *)arg, cpu);
	return 0;
}

static void put_page(int fd, unsigned cpu, uint32_t seq)
{
	static char page[RD_PAGE];
	uint32_t tag[2] = { cpu, seq };
	memcpy(page, tag, sizeof(tag));
	CHECK(write(fd, page, RD_PAGE) == (ssize_t)RD_PAGE, "write page %u of CPU %u", seq, cpu);
}

/* The next page of cpu, waiting for the reader to queue it (10 s at
 * most: a failure, not a measure); its sequence number or -1. */
static long take_page(struct rtk_cpus *cs, unsigned cpu)
{
	char err[256];
	for (int i = 0; i < 10000; i++) {
		const void *p;
		long n = rtk_cpus_read(cs, cpu, &p, err, sizeof(err));
		if (n < 0) {
			CHECK(0, "read CPU %u: %s", cpu, err);
			return -1;
		}
		if (n > 0) {
			uint32_t tag[2];
			memcpy(tag, p, sizeof(tag));
			CHECK(n == RD_PAGE && tag[0] == cpu, "CPU %u: page of %ld bytes, CPU %u", cpu,
			      n, tag[0]);
			return tag[1];
		}
		usleep(1000);
	}
	return -1;
}

static size_t fifo_bytes(int fd)
{
	int n = 0;
	return ioctl(fd, FIONREAD, &n) < 0 ? 0 : (size_t)n;
}

static void test_readers(void)
{
	char dir[] = "/tmp/rtk-readers-XXXXXX";
	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	char path[64];
	for (unsigned c = 0; c < 2; c++) {
		fifo_path(c, path, sizeof(path), dir);
		CHECK(mkfifo(path, 0600) == 0, "mkfifo %s", path);
	}
	struct rtk_cpus *cs = NULL;
	char err[256];
	/* CPU 2 has no file. */
	int ret = rtk_cpus_open(&cs, 3, RD_PAGE, fifo_path, dir, err, sizeof(err));
	CHECK(ret == 0, "rtk_cpus_open: %s", err);
	if (ret < 0)
		return;
	int w[2];
	for (unsigned c = 0; c < 2; c++) {
		fifo_path(c, path, sizeof(path), dir);
		w[c] = open(path, O_WRONLY | O_NONBLOCK);
		CHECK(w[c] >= 0, "open %s", path);
	}
	/* No readers: the file directly. */
	put_page(w[0], 0, 0);
	CHECK(take_page(cs, 0) == 0, "direct read");
	const void *p;
	CHECK(rtk_cpus_read(cs, 0, &p, err, sizeof(err)) == 0, "nothing left");
	CHECK(rtk_cpus_read(cs, 2, &p, err, sizeof(err)) == 0, "no CPU 2");
	/* Readers with queues of 8 pages and a period of an hour. */
	ret = rtk_cpus_start(cs, 8 * RD_PAGE / 1024, 0, 3600 * 1000, false, err, sizeof(err));
	CHECK(ret == 0, "rtk_cpus_start: %s", err);
	for (unsigned c = 0; c < 2; c++)
		for (uint32_t seq = 1; seq <= 12; seq++)
			put_page(w[c], c, seq);
	/* The readers take 8 pages each on their own (poll() wakes them);
	 * 4 stay in each file. */
	for (unsigned c = 0; c < 2; c++) {
		for (int i = 0; i < 10000 && fifo_bytes(w[c]) != 4 * RD_PAGE; i++)
			usleep(1000);
		CHECK(fifo_bytes(w[c]) == 4 * RD_PAGE, "CPU %u: %zu bytes left in the file", c,
		      fifo_bytes(w[c]));
	}
	/* Read back in order: the readers refill their queue as it empties. */
	for (unsigned c = 0; c < 2; c++)
		for (long seq = 1; seq <= 12; seq++) {
			long got = take_page(cs, c);
			CHECK(got == seq, "CPU %u: page %ld, not %ld", c, got, seq);
		}
	/* A sweep wakes the readers (asleep for an hour) and returns when
	 * each has moved what its file holds (1: every one answered). */
	CHECK(rtk_cpus_sweep(cs, 10000) == 1, "a sweep is answered by every reader");
	/* Sleeping in poll() for an hour: the stop wakes them (the test's
	 * timeout would end it otherwise). */
	rtk_cpus_stop(cs);
	put_page(w[1], 1, 13);
	put_page(w[1], 1, 14);
	CHECK(take_page(cs, 1) == 13, "after the stop, the file");
	CHECK(take_page(cs, 1) == 14, "after the stop, in order");
	CHECK(rtk_cpus_read(cs, 1, &p, err, sizeof(err)) == 0, "nothing left after the stop");
	/* A second start and stop (a session started again). */
	ret = rtk_cpus_start(cs, 8 * RD_PAGE / 1024, 0, 3600 * 1000, false, err, sizeof(err));
	CHECK(ret == 0, "second rtk_cpus_start: %s", err);
	put_page(w[0], 0, 15);
	CHECK(take_page(cs, 0) == 15, "second start");
	rtk_cpus_close(cs);
	for (unsigned c = 0; c < 2; c++) {
		close(w[c]);
		fifo_path(c, path, sizeof(path), dir);
		unlink(path);
	}
	rmdir(dir);
}

/* Wait until the FIFO holds `bytes` (10 s at most: a failure, not a
 * measure). */
static void wait_fifo(int fd, size_t bytes, const char *what)
{
	for (int i = 0; i < 10000 && fifo_bytes(fd) != bytes; i++)
		usleep(1000);
	CHECK(fifo_bytes(fd) == bytes, "%s: %zu bytes left in the file, not %zu", what,
	      fifo_bytes(fd), bytes);
}

/* The i-th page from the converter's on (rtk_cpus_peek): its sequence
 * number, -1 when there is none. */
static long peek_seq(struct rtk_cpus *cs, unsigned cpu, size_t i)
{
	static char page[RD_PAGE];
	if (rtk_cpus_peek(cs, cpu, i, page) != (long)RD_PAGE)
		return -1;
	uint32_t tag[2];
	memcpy(tag, page, sizeof(tag));
	return tag[1];
}

/* ---- a reader whose queue is full moves the pages on into its backlog
 * (a converter that does not run takes nothing): the kernel's buffer is
 * emptied up to the backlog's size; the pages come out in the order
 * written, queue first, the backlog's chunks freed as they are passed;
 * while the backlog holds pages, new ones go after them even when the
 * queue has room again; peeks see the backlog after the queue. ---- */
static void test_backlog(void)
{
	char dir[] = "/tmp/rtk-backlog-XXXXXX";
	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	char path[64];
	fifo_path(0, path, sizeof(path), dir);
	CHECK(mkfifo(path, 0600) == 0, "mkfifo %s", path);
	struct rtk_cpus *cs = NULL;
	char err[256];
	int ret = rtk_cpus_open(&cs, 1, RD_PAGE, fifo_path, dir, err, sizeof(err));
	CHECK(ret == 0, "rtk_cpus_open: %s", err);
	if (ret < 0)
		return;
	int w = open(path, O_WRONLY | O_NONBLOCK);
	CHECK(w >= 0, "open %s", path);
	/* Room for 256 pages in the FIFO (the test writes ahead of the
	 * reader). */
	CHECK(fcntl(w, F_SETPIPE_SZ, 256 * RD_PAGE) >= 256 * (int)RD_PAGE, "F_SETPIPE_SZ");
	/* A queue of 8 pages, a backlog of 150 (three chunks). */
	ret = rtk_cpus_start(cs, 8 * RD_PAGE / 1024, 150 * RD_PAGE / 1024, 3600 * 1000, false,
			     err, sizeof(err));
	CHECK(ret == 0, "rtk_cpus_start: %s", err);
	uint32_t seq = 1;
	for (; seq <= 170; seq++)
		put_page(w, 0, seq);
	/* 8 in the queue, 150 in the backlog, 12 left: the backlog is full. */
	wait_fifo(w, 12 * RD_PAGE, "a full backlog");
	struct rtk_reader_stats st;
	rtk_cpus_stats(cs, 0, &st);
	CHECK(st.pages == 158 && st.backlog_pages == 150 && st.backlog_peak == 150,
	      "stats: %llu pages, %llu through the backlog, at most %llu",
	      (unsigned long long)st.pages, (unsigned long long)st.backlog_pages,
	      (unsigned long long)st.backlog_peak);
	CHECK(rtk_cpus_queued(cs, 0) == 158 * RD_PAGE, "queued: %llu bytes",
	      (unsigned long long)rtk_cpus_queued(cs, 0));
	/* Peeks: the queue's pages, then the backlog's, across its chunks. */
	for (size_t i = 0; i < 158; i++) {
		long got = peek_seq(cs, 0, i);
		CHECK(got == (long)i + 1, "peek %zu: page %ld", i, got);
	}
	CHECK(peek_seq(cs, 0, 158) == -1, "no page past the backlog");
	/* Two pages taken from the queue: it has room, but the backlog holds
	 * pages, so the next ones go after them (and the 12 left too). */
	CHECK(take_page(cs, 0) == 1 && take_page(cs, 0) == 2, "the queue's first pages");
	for (; seq <= 175; seq++)
		put_page(w, 0, seq);
	/* Page 2 is held (peek 0) until the next read. */
	CHECK(peek_seq(cs, 0, 0) == 2 && peek_seq(cs, 0, 1) == 3, "peek after two reads");
	/* In order: queue, backlog (its chunks freed as passed), and what the
	 * reader moved on as the backlog emptied. */
	for (long want = 3; want <= 175; want++) {
		long got = take_page(cs, 0);
		CHECK(got == want, "page %ld, not %ld", got, want);
		if (got != want)
			break;
	}
	/* The backlog is empty: pages go into the queue again. */
	for (; seq <= 180; seq++)
		put_page(w, 0, seq);
	for (long want = 176; want <= 180; want++) {
		long got = take_page(cs, 0);
		CHECK(got == want, "after the backlog emptied: page %ld, not %ld", got, want);
	}
	/* Into the backlog again (its last chunk goes on), left there for
	 * the close to free. */
	for (; seq <= 200; seq++)
		put_page(w, 0, seq);
	wait_fifo(w, 0, "a second backlog");
	CHECK(peek_seq(cs, 0, 19) == 199, "peek into the second backlog: %ld", peek_seq(cs, 0, 19));
	rtk_cpus_close(cs);
	close(w);
	unlink(path);
	rmdir(dir);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_kernel_pages DATA_DIR\n");
		return 2;
	}
	data_dir = argv[1];
	struct rtk_formats *f = load_formats();
	test_names(f);
	test_pages(f);
	test_watch(f);
	test_missed(f);
	test_damage(f);
	rtk_formats_free(f);
	test_statedump();
	test_procs();
	test_contexts();
	test_readers();
	test_backlog();
	test_lookahead();
	test_converters();
	if (failures) {
		fprintf(stderr, "%d failures\n", failures);
		return 1;
	}
	printf("test_kernel_pages: ok\n");
	return 0;
}
