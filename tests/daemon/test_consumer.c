/*
 * test_consumer.c - the daemon's consumers (dp.h consumer_*) on buffer
 * sets filled in this process: producer threads write CTF events through
 * ringbuffer_api.h exactly as traced programs do (header, the channel's
 * contexts, payload), the consumer writes the trace, and the trace is read
 * back with rt_reader and with babeltrace2 (check_consumer_bt2.py, given
 * as argv[1]) and checked event by event.
 *
 *  - streaming: every event, in order, with its values; a new event class
 *    registered while tracing (extended header id); event statistics.
 *  - contexts: a channel with every context of rtd.h (babeltrace2).
 *  - rotation: tracefile_size/count (file names, count, sizes, readable).
 *  - snapshot: while producers write (a contiguous most recent run per
 *    CPU), non-destructive (two snapshots of a paused session are equal),
 *    max_size.
 *  - drain with a slot reserved and never committed (a program killed in
 *    the middle of an event): the drain returns, the sub-buffer is counted
 *    as lost, everything before it is in the trace.
 *  - a packet whose header its program damaged: dropped and counted.
 *  - each header and context field, the sizes and the events of one
 *    packet damaged in turn (what a program that scribbles on its mapping
 *    does): that packet alone is dropped and counted, every other event is
 *    read back by rt_reader and babeltrace2.
 *  - the counters of a buffer damaged (write_count, the commit counts):
 *    the drain returns without error, the buffer's usage stays within its
 *    size, what was given up is counted.
 *  - a drain of full buffers (prints the write rate).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#include "../unit/unit.h"
#include "rt_test.h"
#include "reader/reader.h"
#include "daemon/dp.h"
#include "ringbuffer/ringbuffer_api.h"

#define EV_ID 0u	/* "test:ev" (seq u64, tid u32, msg string) */
#define LATE_ID 40u	/* "test:late" (x u32): extended header */
#define CTX_NAME "cons-test"
#define CTX_HOST "testhost"
#define CTX_PRIO 20

static const char *checker;
static char *tmp_root;

/* Not const: dp_event_class points at them like at the registry's copies. */
static struct rt_field_desc ev_fields[] = {
	{ "seq", RT_TYPE_U64 }, { "tid", RT_TYPE_U32 }, { "msg", RT_TYPE_STRING },
};
static struct rt_field_desc late_fields[] = { { "x", RT_TYPE_U32 } };

static uint64_t clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A session, its channels and one trace with its buffer sets. */
struct fixture {
	struct rtd_session s;
	struct rtd_channel ch[2];
	struct dp_trace t;
	struct dp_bufset sets[2];
	struct dp_event_class classes[4];
};

static void fx_init(struct fixture *f, const char *name, bool snapshot)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->s.name, sizeof(f->s.name), "%s", name);
	f->s.snapshot = snapshot;
	f->t.session = &f->s;
	snprintf(f->t.dir, sizeof(f->t.dir), "%s/%s", tmp_root, name);
	for (int i = 0; i < 16; i++)
		f->t.uuid[i] = (uint8_t)(i * 17 + 3);
	f->t.clock = (struct ctf_clock_info){
		.name = "monotonic", .description = "CLOCK_MONOTONIC",
		.freq = 1000000000ull, .precision = 1,
	};
	f->t.bufsets = f->sets;
	pthread_mutex_init(&f->t.lock, NULL);
	f->t.events = f->classes;
}

static void fx_channel(struct fixture *f, const char *name, uint64_t S, uint32_t N,
		       bool overwrite, bool contexts)
{
	uint32_t id = f->t.nr_bufsets++;
	struct rtd_channel *ch = &f->ch[id];
	snprintf(ch->name, sizeof(ch->name), "%s", name);
	ch->id = id;
	ch->overwrite = overwrite;
	ch->subbuf_size = S;
	ch->num_subbuf = N;
	ch->read_timer_ms = 5;
	if (contexts)
		for (int c = 0; c < RT_CTX_COUNT; c++)
			ch->contexts[ch->nr_contexts++] = (enum rt_context)c;
	f->s.nr_channels++;
	struct dp_bufset *b = &f->sets[id];
	b->trace = &f->t;
	b->channel = ch;
	memcpy(b->stream.uuid, f->t.uuid, 16);
	b->stream.stream_id = id;
	b->stream.subbuf_size = S;
	struct rb_config cfg = {
		.subbuf_size = S, .num_subbuf = N, .nr_cpus = (uint32_t)get_nprocs_conf(),
		.mode = overwrite ? RB_MODE_OVERWRITE : RB_MODE_DISCARD,
		.tsc_bits = CTF_COMPACT_TSC_BITS, .subbuf_header_size = CTF_PACKET_HEADER_SIZE,
		.use_rseq = true,
	};
	struct rb_client client = {
		.subbuf_begin = ctf_packet_begin, .subbuf_end = ctf_packet_end,
		.clock_read = clock_ns, .priv = &b->stream,
	};
	int ret = rb_create(&b->rb, &cfg, &client);
	if (ret < 0) {
		fprintf(stderr, "rb_create: %s\n", strerror(-ret));
		exit(1);
	}
}

/* What the app registry does when a program registers an event. */
static void fx_event(struct fixture *f, uint32_t channel, uint32_t id, char *name,
		     struct rt_field_desc *fields, uint32_t nr)
{
	pthread_mutex_lock(&f->t.lock);
	f->classes[f->t.nr_events++] = (struct dp_event_class){
		.id = id, .channel_id = channel, .provider = (char *)"test",
		.name = (char *)name, .nr_fields = nr, .fields = fields,
	};
	f->t.generation++;
	pthread_mutex_unlock(&f->t.lock);
}

static void fx_fini(struct fixture *f)
{
	for (uint32_t i = 0; i < f->t.nr_bufsets; i++)
		rb_destroy(&f->sets[i].rb);
	pthread_mutex_destroy(&f->t.lock);
}

static void msg_of(uint64_t seq, char out[16])
{
	snprintf(out, 16, "m%llu", (unsigned long long)(seq % 1000));
}

/* Write one event like a traced program; `commit` false leaves the slot
 * reserved forever. Returns 0 or the rb_reserve error; *cpu_out = buffer. */
static int write_event(struct dp_bufset *b, uint32_t id, uint64_t seq, uint32_t tid,
		       bool commit, uint32_t *cpu_out)
{
	const struct rtd_channel *ch = b->channel;
	char msg[16];
	msg_of(seq, msg);
	uint32_t payload = id == LATE_ID ? 4 : 12 + (uint32_t)strlen(msg) + 1;
	uint32_t ctx_size = 0;
	for (uint32_t c = 0; c < ch->nr_contexts; c++)
		ctx_size += ch->contexts[c] == RT_CTX_PROCNAME ? sizeof(CTX_NAME)
			    : ch->contexts[c] == RT_CTX_HOSTNAME ? sizeof(CTX_HOST)
			    : ch->contexts[c] == RT_CTX_IP	  ? 8 : 4;
	struct rb_ctx ctx = {
		.payload_size = payload + ctx_size,
		.hdr_compact = ctf_event_header_size(id, 0),
		.hdr_full = CTF_EVENT_HEADER_EXTENDED,
	};
	int ret = rb_reserve(&b->rb, &ctx, clock_ns);
	if (ret < 0)
		return ret;
	char *p = ctx.r.addr + ctf_write_event_header(ctx.r.addr, id, ctx.r.tsc, ctx.full_tsc);
	for (uint32_t c = 0; c < ch->nr_contexts; c++) {
		int32_t i32;
		uint32_t u32;
		uint64_t u64;
		switch (ch->contexts[c]) {
		case RT_CTX_VPID: i32 = getpid(); memcpy(p, &i32, 4); p += 4; break;
		case RT_CTX_VTID: i32 = gettid(); memcpy(p, &i32, 4); p += 4; break;
		case RT_CTX_PROCNAME: memcpy(p, CTX_NAME, sizeof(CTX_NAME)); p += sizeof(CTX_NAME); break;
		case RT_CTX_CPU_ID: u32 = (uint32_t)ctx.r.cpu; memcpy(p, &u32, 4); p += 4; break;
		case RT_CTX_IP: u64 = 0x400000 + seq; memcpy(p, &u64, 8); p += 8; break;
		case RT_CTX_PRIO: i32 = CTX_PRIO; memcpy(p, &i32, 4); p += 4; break;
		default: memcpy(p, CTX_HOST, sizeof(CTX_HOST)); p += sizeof(CTX_HOST); break;
		}
	}
	if (id == LATE_ID) {
		uint32_t x = (uint32_t)seq * 7;
		memcpy(p, &x, 4);
	} else {
		memcpy(p, &seq, 8);
		memcpy(p + 8, &tid, 4);
		memcpy(p + 12, msg, strlen(msg) + 1);
	}
	if (cpu_out)
		*cpu_out = (uint32_t)ctx.r.cpu;
	if (commit)
		rb_commit(&b->rb, &ctx);
	return 0;
}

static int run_checker(const char *dir, const char *expected, bool subset)
{
	char cmd[3 * PATH_MAX];
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 '%s' '%s' '%s'%s", checker, dir,
		 expected, subset ? " --subset" : "");
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* babeltrace2 reads the whole trace without an error. */
static int run_babeltrace2(const char *dir)
{
	char cmd[PATH_MAX + 64];
	snprintf(cmd, sizeof(cmd), "babeltrace2 '%s' > /dev/null", dir);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ---- streaming (and contexts) ---- */

#define NR_WRITERS 4
#define EVENTS_PER_WRITER 3000
#define NR_LATE 100

struct writer {
	struct fixture *f;
	uint32_t tid;
	uint32_t n;		/* events to write (streaming) */
	uint32_t ctx_cpu[EVENTS_PER_WRITER];	/* buffer of each ctx event */
	int32_t vtid;
	uint32_t lost;
};

static void *streaming_writer(void *arg)
{
	struct writer *w = arg;
	struct fixture *f = w->f;
	w->vtid = gettid();
	for (uint32_t i = 0; i < w->n; i++) {
		if (write_event(&f->sets[0], EV_ID, i, w->tid, true, NULL) < 0)
			w->lost++;
		if (f->t.nr_bufsets > 1 && i % 3 == 0 &&
		    write_event(&f->sets[1], EV_ID, i, w->tid, true, &w->ctx_cpu[i]) < 0)
			w->lost++;
		if (w->tid == 0 && i == w->n / 2) {
			/* A program registers a new event while tracing. */
			fx_event(f, 0, LATE_ID, "late", late_fields, 1);
			consumer_metadata_changed(&f->t);
			for (uint32_t k = 0; k < NR_LATE; k++)
				if (write_event(&f->sets[0], LATE_ID, k, 0, true, NULL) < 0)
					w->lost++;
		}
		if (i % 256 == 0)
			sched_yield();
	}
	return NULL;
}

static void write_expected(const char *path, struct fixture *f, struct writer *w, int nw)
{
	FILE *out = fopen(path, "w");
	if (!out) {
		perror(path);
		exit(1);
	}
	char host_line[256];
	snprintf(host_line, sizeof(host_line), "procname=%s", CTX_NAME);
	for (int t = 0; t < nw; t++) {
		for (uint32_t i = 0; i < w[t].n; i++) {
			char msg[16];
			msg_of(i, msg);
			fprintf(out, "test:ev seq=%u tid=%u msg=%s\n", i, w[t].tid, msg);
			if (f->t.nr_bufsets > 1 && i % 3 == 0)
				fprintf(out,
					"test:ctx vpid=%d vtid=%d %s cpu_id=%u ip=%llu prio=%d hostname=%s seq=%u tid=%u msg=%s\n",
					getpid(), w[t].vtid, host_line, w[t].ctx_cpu[i],
					0x400000ull + i, CTX_PRIO, CTX_HOST, i, w[t].tid, msg);
		}
	}
	if (f->t.nr_events > 1 && w[0].n)
		for (uint32_t k = 0; k < NR_LATE; k++)
			fprintf(out, "test:late x=%u\n", k * 7);
	fclose(out);
}

/* Every event of the trace, exactly, in each writer's order (rt_reader). */
static void check_streaming_reader_n(const char *dir, uint32_t nw, uint32_t n,
				     uint64_t nr_late)
{
	struct rtr_trace *r;
	char err[512];
	if (!CHECK(rtr_open(dir, &r, err, sizeof(err)) == 0, "rtr_open: %s", err))
		return;
	uint64_t next[NR_WRITERS] = { 0 }, late = 0, bad = 0;
	struct rtr_event ev;
	int ret;
	while ((ret = rtr_next(r, &ev)) > 0) {
		struct rtr_value v;
		if (strcmp(ev.cls->name, "test:late") == 0) {
			rtr_field_by_name(&ev, "x", &v);
			bad += v.u != late * 7;
			late++;
			continue;
		}
		struct rtr_value seq, tid, msg;
		if (rtr_field_by_name(&ev, "seq", &seq) || rtr_field_by_name(&ev, "tid", &tid) ||
		    rtr_field_by_name(&ev, "msg", &msg) || tid.u >= nw) {
			bad++;
			continue;
		}
		char want[16];
		msg_of(seq.u, want);
		if (seq.u != next[tid.u] || strcmp(msg.s.p, want) != 0) {
			if (bad++ < 5)
				fprintf(stderr, "writer %llu: seq %llu, expected %llu (msg %s)\n",
					(unsigned long long)tid.u, (unsigned long long)seq.u,
					(unsigned long long)next[tid.u], msg.s.p);
		}
		next[tid.u] = seq.u + 1;
	}
	CHECK(ret == 0, "rtr_next: %s", rtr_error(r));
	CHECK_EQ(bad, 0);
	for (uint32_t t = 0; t < nw; t++)
		CHECK_EQ(next[t], n);
	CHECK_EQ(late, nr_late);
	rtr_close(r);
}

/* env: procname and vpid in per-pid traces only. */
static void check_env(const char *dir, pid_t pid)
{
	char path[PATH_MAX + 16], text[8192] = "", want[128];
	snprintf(path, sizeof(path), "%s/metadata", dir);
	FILE *in = fopen(path, "r");
	if (!CHECK(in != NULL, "open %s", path))
		return;
	size_t n = fread(text, 1, sizeof(text) - 1, in);
	text[n] = '\0';
	fclose(in);
	CHECK(strstr(text, "domain = \"ust\";") && strstr(text, "tracer_name = \"ringtrace\";"),
	      "env domain and tracer");
	snprintf(want, sizeof(want), "procname = \"%s\";\n\tvpid = %d;", CTX_NAME, (int)pid);
	if (pid)
		CHECK(strstr(text, want) != NULL, "env of a per-pid trace: %s", want);
	else
		CHECK(strstr(text, "procname") == NULL, "no procname in a per-uid trace");
}

static void test_streaming(bool contexts)
{
	unit_case = contexts ? "contexts" : "streaming";
	struct fixture *f = calloc(1, sizeof(*f));
	fx_init(f, unit_case, false);
	fx_channel(f, "chan", 64 * 1024, 8, false, false);
	fx_event(f, 0, EV_ID, "ev", ev_fields, 3);
	if (contexts) {
		/* A per-pid trace: env names the program. */
		f->t.pid = getpid();
		snprintf(f->t.procname, sizeof(f->t.procname), "%s", CTX_NAME);
		fx_channel(f, "ctxchan", 64 * 1024, 8, false, true);
		fx_event(f, 1, EV_ID, "ctx", ev_fields, 3);
	}
	char err[256] = "";
	if (!CHECK(consumer_trace_add(&f->t, err, sizeof(err)) == 0, "add: %s", err))
		return;
	struct writer *w = calloc(NR_WRITERS, sizeof(*w));
	pthread_t th[NR_WRITERS];
	for (uint32_t i = 0; i < NR_WRITERS; i++) {
		w[i] = (struct writer){ .f = f, .tid = i, .n = EVENTS_PER_WRITER };
		pthread_create(&th[i], NULL, streaming_writer, &w[i]);
	}
	uint32_t lost = 0;
	for (uint32_t i = 0; i < NR_WRITERS; i++) {
		pthread_join(th[i], NULL);
		lost += w[i].lost;
	}
	CHECK(lost == 0, "%u events could not be reserved (buffers too small?)", lost);
	CHECK_EQ(consumer_trace_drain(&f->t), 0);

	struct rtd_channel_stats st = { 0 };
	CHECK_EQ(consumer_bufset_stats(&f->sets[0], &st), 0);
	CHECK_EQ(st.events, NR_WRITERS * EVENTS_PER_WRITER + NR_LATE);
	CHECK_EQ(st.events_lost, 0);
	CHECK_EQ(st.used_bytes, 0);
	CHECK(st.bytes_written > 0, "bytes written");
	CHECK_EQ(st.nr_buffer_sets, 1);

	char expected[PATH_MAX];
	snprintf(expected, sizeof(expected), "%s/%s.expected", tmp_root, unit_case);
	write_expected(expected, f, w, NR_WRITERS);
	if (!contexts)
		check_streaming_reader_n(f->t.dir, NR_WRITERS, EVENTS_PER_WRITER, NR_LATE);
	check_env(f->t.dir, contexts ? getpid() : 0);
	CHECK(run_checker(f->t.dir, expected, false) == 0, "babeltrace2 check of %s", f->t.dir);

	consumer_trace_remove(&f->t);
	CHECK(f->t.consumer == NULL && f->sets[0].consumer == NULL, "remove forgets the trace");
	fx_fini(f);
	free(w);
	free(f);
}

/* ---- rotation ---- */

#define ROT_SIZE 8192u
#define ROT_COUNT 3u

static void check_rotation_files(const char *dir, uint32_t nr_cpus)
{
	uint32_t deleted_streams = 0, streams = 0;
	for (uint32_t cpu = 0; cpu < nr_cpus; cpu++) {
		uint32_t present = 0, lowest = UINT32_MAX, highest = 0;
		for (uint32_t n = 0; n < 10000; n++) {
			char path[PATH_MAX + 64];
			struct stat sb;
			snprintf(path, sizeof(path), "%s/chan_%u_%u", dir, cpu, n);
			if (stat(path, &sb) < 0)
				continue;
			present++;
			lowest = n < lowest ? n : lowest;
			highest = n;
			CHECK(sb.st_size > 0 && (uint64_t)sb.st_size <= ROT_SIZE,
			      "%s: %lld bytes", path, (long long)sb.st_size);
		}
		char plain[PATH_MAX + 64];
		snprintf(plain, sizeof(plain), "%s/chan_%u", dir, cpu);
		CHECK(access(plain, F_OK) != 0, "no unrotated file %s", plain);
		if (!present)
			continue;
		streams++;
		CHECK(present <= ROT_COUNT, "cpu %u: %u files", cpu, present);
		CHECK_EQ(highest - lowest + 1, present); /* the newest, contiguous */
		deleted_streams += lowest > 0;
	}
	CHECK(streams > 0, "some stream files");
	CHECK(deleted_streams > 0, "old files were deleted");
}

static void test_rotation(void)
{
	unit_case = "rotation";
	struct fixture *f = calloc(1, sizeof(*f));
	fx_init(f, unit_case, false);
	fx_channel(f, "chan", 4096, 64, false, false);
	f->ch[0].tracefile_size = ROT_SIZE;
	f->ch[0].tracefile_count = ROT_COUNT;
	f->ch[0].read_timer_ms = 2;
	fx_event(f, 0, EV_ID, "ev", ev_fields, 3);
	char err[256] = "";
	if (!CHECK(consumer_trace_add(&f->t, err, sizeof(err)) == 0, "add: %s", err))
		return;
	struct writer *w = calloc(2, sizeof(*w));
	pthread_t th[2];
	for (uint32_t i = 0; i < 2; i++) {
		w[i] = (struct writer){ .f = f, .tid = i, .n = EVENTS_PER_WRITER };
		pthread_create(&th[i], NULL, streaming_writer, &w[i]);
	}
	for (uint32_t i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ(consumer_trace_drain(&f->t), 0);
	check_rotation_files(f->t.dir, f->sets[0].rb.nr_cpus);

	/* rt_reader: values intact, the deleted files show as packet gaps. */
	struct rtr_trace *r;
	if (CHECK(rtr_open(f->t.dir, &r, err, sizeof(err)) == 0, "rtr_open: %s", err)) {
		struct rtr_event ev;
		uint64_t n = 0, bad = 0;
		int ret;
		while ((ret = rtr_next(r, &ev)) > 0) {
			struct rtr_value seq, msg;
			if (strcmp(ev.cls->name, "test:ev"))
				continue;
			rtr_field_by_name(&ev, "seq", &seq);
			rtr_field_by_name(&ev, "msg", &msg);
			char want[16];
			msg_of(seq.u, want);
			bad += strcmp(want, msg.s.p) != 0;
			n++;
		}
		CHECK(ret == 0, "rtr_next: %s", rtr_error(r));
		CHECK(n > 0 && n < 2 * EVENTS_PER_WRITER, "%llu events kept", (unsigned long long)n);
		CHECK_EQ(bad, 0);
		const struct rtr_gap *gaps;
		CHECK(rtr_gaps(r, &gaps) > 0, "lost packets reported");
		rtr_close(r);
	}
	char expected[PATH_MAX];
	snprintf(expected, sizeof(expected), "%s/rotation.expected", tmp_root);
	write_expected(expected, f, w, 2);
	CHECK(run_checker(f->t.dir, expected, true) == 0, "babeltrace2 check of %s", f->t.dir);
	consumer_trace_remove(&f->t);
	fx_fini(f);
	free(w);
	free(f);
}

/* ---- snapshot ---- */

#define SNAP_WRITERS_MAX 4

struct snap_writer {
	struct fixture *f;
	uint32_t tid;
	int cpu;			/* pinned to it, -1: could not pin */
	uint64_t committed;		/* events committed (release store) */
	int pause;			/* 1: stop writing; 2: stop for good */
	int paused;
};

static void *snapshot_writer(void *arg)
{
	struct snap_writer *w = arg;
	w->cpu = rt_test_pin_nth_cpu((int)w->tid);
	uint64_t seq = 0;
	for (;;) {
		/* Acquire/release: the main thread's pause request and our
		 * acknowledgement, after which it reads `committed`. */
		int p = __atomic_load_n(&w->pause, __ATOMIC_ACQUIRE);
		if (p) {
			__atomic_store_n(&w->paused, 1, __ATOMIC_RELEASE);
			if (p == 2)
				return NULL;
			struct timespec ts = { 0, 1000000 };
			nanosleep(&ts, NULL);
			continue;
		}
		__atomic_store_n(&w->paused, 0, __ATOMIC_RELEASE);
		if (w->cpu < 0)
			return NULL;
		if (write_event(&w->f->sets[0], EV_ID, seq, w->tid, true, NULL) == 0)
			seq++;
		__atomic_store_n(&w->committed, seq, __ATOMIC_RELEASE);
		if (seq % 32 == 0) {
			struct timespec ts = { 0, 20000 };
			nanosleep(&ts, NULL);
		}
	}
}

struct snap_run {
	uint64_t first[SNAP_WRITERS_MAX], last[SNAP_WRITERS_MAX], n[SNAP_WRITERS_MAX];
	uint64_t bytes;
};

/* A snapshot: each writer's events are consecutive (one run per CPU, the
 * writers are pinned), values intact, and the run ends at or after the
 * last event committed before the snapshot started (`before`). */
static void check_snapshot(const char *dir, uint32_t nw, const uint64_t *before,
			   struct snap_run *run, bool require_all)
{
	memset(run, 0, sizeof(*run));
	struct rtr_trace *r;
	char err[512];
	if (!CHECK(rtr_open(dir, &r, err, sizeof(err)) == 0, "rtr_open %s: %s", dir, err))
		return;
	struct rtr_event ev;
	int ret;
	uint64_t bad = 0;
	while ((ret = rtr_next(r, &ev)) > 0) {
		struct rtr_value seq, tid, msg;
		if (rtr_field_by_name(&ev, "seq", &seq) || rtr_field_by_name(&ev, "tid", &tid) ||
		    rtr_field_by_name(&ev, "msg", &msg) || tid.u >= nw) {
			bad++;
			continue;
		}
		char want[16];
		msg_of(seq.u, want);
		bad += strcmp(want, msg.s.p) != 0;
		if (run->n[tid.u] && seq.u != run->last[tid.u] + 1 && bad++ < 5)
			fprintf(stderr, "%s: writer %llu jumps from %llu to %llu\n", dir,
				(unsigned long long)tid.u, (unsigned long long)run->last[tid.u],
				(unsigned long long)seq.u);
		if (!run->n[tid.u])
			run->first[tid.u] = seq.u;
		run->last[tid.u] = seq.u;
		run->n[tid.u]++;
	}
	CHECK(ret == 0, "rtr_next: %s", rtr_error(r));
	CHECK_EQ(bad, 0);
	const struct rtr_stream_stats *ss;
	size_t ns = rtr_streams(r, &ss);
	for (size_t i = 0; i < ns; i++)
		run->bytes += ss[i].bytes;
	for (uint32_t t = 0; t < nw; t++) {
		CHECK(run->n[t] > 0 || !require_all, "%s: writer %u has events", dir, t);
		CHECK(!run->n[t] || run->last[t] + 1 >= before[t], "%s: writer %u ends at %llu, committed %llu",
		      dir, t, (unsigned long long)run->last[t], (unsigned long long)before[t]);
	}
	rtr_close(r);
}

static void set_pause(struct snap_writer *w, uint32_t nw, int p)
{
	for (uint32_t i = 0; i < nw; i++)
		__atomic_store_n(&w[i].pause, p, __ATOMIC_RELEASE);
	for (uint32_t i = 0; i < nw && p; i++)
		while (!__atomic_load_n(&w[i].paused, __ATOMIC_ACQUIRE))
			sched_yield();
}

static void test_snapshot(void)
{
	unit_case = "snapshot";
	struct fixture *f = calloc(1, sizeof(*f));
	fx_init(f, unit_case, true);
	fx_channel(f, "chan", 16 * 1024, 8, true, false);
	f->ch[0].switch_timer_ms = 50;
	fx_event(f, 0, EV_ID, "ev", ev_fields, 3);
	char err[256] = "";
	if (!CHECK(consumer_trace_add(&f->t, err, sizeof(err)) == 0, "add: %s", err))
		return;
	cpu_set_t set;
	sched_getaffinity(0, sizeof(set), &set);
	uint32_t nw = (uint32_t)CPU_COUNT(&set);
	nw = nw > SNAP_WRITERS_MAX ? SNAP_WRITERS_MAX : nw;
	struct snap_writer w[SNAP_WRITERS_MAX] = { 0 };
	pthread_t th[SNAP_WRITERS_MAX];
	for (uint32_t i = 0; i < nw; i++) {
		w[i] = (struct snap_writer){ .f = f, .tid = i };
		pthread_create(&th[i], NULL, snapshot_writer, &w[i]);
	}
	/* Let every writer wrap its buffer several times (each, not only the
	 * last: on a loaded machine one pinned writer may start or run much
	 * later than the others). */
	for (uint32_t i = 0; i < nw; i++)
		while (__atomic_load_n(&w[i].committed, __ATOMIC_ACQUIRE) < 20000)
			sched_yield();

	uint64_t before[SNAP_WRITERS_MAX];
	struct snap_run live[2], a, b, small;
	char d[4][PATH_MAX];
	for (int k = 0; k < 4; k++)
		snprintf(d[k], sizeof(d[k]), "%s/snap-%d", tmp_root, k);
	for (int k = 0; k < 2; k++) {
		for (uint32_t i = 0; i < nw; i++)
			before[i] = __atomic_load_n(&w[i].committed, __ATOMIC_ACQUIRE);
		uint64_t t0 = clock_ns();
		CHECK(consumer_snapshot(&f->t, d[k], 0, err, sizeof(err)) == 0, "snapshot: %s", err);
		uint64_t dt = clock_ns() - t0;
		check_snapshot(d[k], nw, before, &live[k], true);
		printf("snapshot while writing: %llu bytes in %.2f ms\n",
		       (unsigned long long)live[k].bytes, (double)dt / 1e6);
		CHECK(run_babeltrace2(d[k]) == 0, "babeltrace2 reads %s", d[k]);
	}
	for (uint32_t i = 0; i < nw; i++)
		CHECK(live[1].last[i] > live[0].last[i], "writer %u: the second snapshot is newer", i);

	/* Paused: two snapshots hold the same events (nothing consumed). */
	set_pause(w, nw, 1);
	for (uint32_t i = 0; i < nw; i++)
		before[i] = __atomic_load_n(&w[i].committed, __ATOMIC_ACQUIRE);
	CHECK(consumer_snapshot(&f->t, d[2], 0, err, sizeof(err)) == 0, "snapshot: %s", err);
	check_snapshot(d[2], nw, before, &a, true);
	snprintf(d[2] + strlen(d[2]), 8, "b");
	CHECK(consumer_snapshot(&f->t, d[2], 0, err, sizeof(err)) == 0, "snapshot: %s", err);
	check_snapshot(d[2], nw, before, &b, true);
	for (uint32_t i = 0; i < nw; i++) {
		CHECK_EQ(a.first[i], b.first[i]);
		CHECK_EQ(a.last[i], b.last[i]);
		CHECK_EQ(a.last[i] + 1, before[i]);
	}
	/* max_size: the newest packets only. */
	uint64_t max = 3 * 16 * 1024;
	CHECK(consumer_snapshot(&f->t, d[3], max, err, sizeof(err)) == 0, "snapshot: %s", err);
	check_snapshot(d[3], nw, before, &small, false);
	CHECK(run_babeltrace2(d[3]) == 0, "babeltrace2 reads %s", d[3]);
	CHECK(small.bytes > 0 && small.bytes <= max, "max_size: %llu bytes",
	      (unsigned long long)small.bytes);
	CHECK(a.bytes > max, "the full snapshot is larger (%llu)", (unsigned long long)a.bytes);

	set_pause(w, nw, 2);
	for (uint32_t i = 0; i < nw; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ(consumer_trace_drain(&f->t), 0);
	consumer_trace_remove(&f->t);
	fx_fini(f);
	free(f);
}

/* ---- drain with a slot never committed ---- */

struct stuck_writer {
	struct fixture *f;
	uint32_t before_hole;
};

static void *stuck_writer_main(void *arg)
{
	struct stuck_writer *w = arg;
	rt_test_pin_nth_cpu(0);
	for (uint32_t i = 0; i < w->before_hole; i++)
		write_event(&w->f->sets[0], EV_ID, i, 0, true, NULL);
	/* Killed between reserve and commit, as far as the buffer knows. */
	write_event(&w->f->sets[0], EV_ID, w->before_hole, 0, false, NULL);
	for (uint32_t i = 1; i <= 10; i++)
		write_event(&w->f->sets[0], EV_ID, w->before_hole + i, 0, true, NULL);
	return NULL;
}

static void test_drain_stuck(void)
{
	unit_case = "drain-stuck";
	struct fixture *f = calloc(1, sizeof(*f));
	fx_init(f, unit_case, false);
	fx_channel(f, "chan", 4096, 8, false, false);
	fx_event(f, 0, EV_ID, "ev", ev_fields, 3);
	char err[256] = "";
	if (!CHECK(consumer_trace_add(&f->t, err, sizeof(err)) == 0, "add: %s", err))
		return;
	struct stuck_writer sw = { .f = f, .before_hole = 500 };
	pthread_t th;
	pthread_create(&th, NULL, stuck_writer_main, &sw);
	pthread_join(th, NULL);
	uint64_t t0 = clock_ns();
	CHECK_EQ(consumer_trace_drain(&f->t), 0);
	printf("drain with a hole: %.1f ms\n", (double)(clock_ns() - t0) / 1e6);
	struct rtd_channel_stats st = { 0 };
	consumer_bufset_stats(&f->sets[0], &st);
	CHECK(st.subbufs_lost >= 1, "the sub-buffer with the hole is counted as lost");
	CHECK_EQ(st.used_bytes, 0);

	/* The events of the complete sub-buffers, in order, nothing else. */
	struct rtr_trace *r;
	if (CHECK(rtr_open(f->t.dir, &r, err, sizeof(err)) == 0, "rtr_open: %s", err)) {
		struct rtr_event ev;
		uint64_t next = 0;
		int ret;
		while ((ret = rtr_next(r, &ev)) > 0) {
			struct rtr_value seq;
			rtr_field_by_name(&ev, "seq", &seq);
			CHECK_EQ(seq.u, next);
			next = seq.u + 1;
		}
		CHECK(ret == 0, "rtr_next: %s", rtr_error(r));
		/* ~180 events per 4 KiB packet: at least two full packets. */
		CHECK(next >= 300 && next < sw.before_hole, "%llu events before the hole",
		      (unsigned long long)next);
		CHECK_EQ(st.events, next);
		rtr_close(r);
	}
	consumer_trace_remove(&f->t);
	fx_fini(f);
	free(f);
}

/* ---- a packet damaged by its program ---- */

static void *damage_writer(void *arg)
{
	struct fixture *f = arg;
	int cpu = rt_test_pin_nth_cpu(0);
	for (uint32_t i = 0; i < 500; i++)
		write_event(&f->sets[0], EV_ID, i, 0, true, NULL);
	/* Scribble on the first packet's magic, as a broken program could. */
	if (cpu >= 0)
		memset(f->sets[0].rb.cpus[cpu].data, 0xAB, 4);
	return NULL;
}

static void test_damaged_packet(void)
{
	unit_case = "damaged-packet";
	struct fixture *f = calloc(1, sizeof(*f));
	fx_init(f, unit_case, false);
	fx_channel(f, "chan", 4096, 8, false, false);
	f->ch[0].read_timer_ms = 600000; /* only the drain reads */
	fx_event(f, 0, EV_ID, "ev", ev_fields, 3);
	char err[256] = "";
	if (!CHECK(consumer_trace_add(&f->t, err, sizeof(err)) == 0, "add: %s", err))
		return;
	pthread_t th;
	pthread_create(&th, NULL, damage_writer, f);
	pthread_join(th, NULL);
	CHECK_EQ(consumer_trace_drain(&f->t), 0);
	struct rtd_channel_stats st = { 0 };
	consumer_bufset_stats(&f->sets[0], &st);
	CHECK_EQ(st.packets_corrupt, 1);
	CHECK_EQ(st.subbufs_lost, 0);
	/* The other packets are all there, and readable. */
	struct rtr_trace *r;
	if (CHECK(rtr_open(f->t.dir, &r, err, sizeof(err)) == 0, "rtr_open: %s", err)) {
		struct rtr_event ev;
		uint64_t first = UINT64_MAX, next = 0, n = 0;
		int ret;
		while ((ret = rtr_next(r, &ev)) > 0) {
			struct rtr_value seq;
			rtr_field_by_name(&ev, "seq", &seq);
			if (first == UINT64_MAX)
				first = next = seq.u;
			CHECK_EQ(seq.u, next);
			next = seq.u + 1;
			n++;
		}
		CHECK(ret == 0, "rtr_next: %s", rtr_error(r));
		CHECK(first > 0 && next == 500, "events %llu..%llu",
		      (unsigned long long)first, (unsigned long long)next);
		CHECK_EQ(st.events, n);
		rtr_close(r);
	}
	CHECK(run_babeltrace2(f->t.dir) == 0, "babeltrace2 reads %s", f->t.dir);
	consumer_trace_remove(&f->t);
	fx_fini(f);
	free(f);
}

/* ---- each field of one packet damaged in turn ---- */

enum damage {
	DMG_UUID, DMG_STREAM_ID, DMG_INSTANCE, DMG_CPU_ID, DMG_CONTENT_HUGE,
	DMG_CONTENT_SHORT, DMG_CONTENT_CUT, DMG_SEQ, DMG_TS_BACK, DMG_TS_END,
	DMG_DISCARDED, DMG_EVENT_ID, DMG_RANDOM_HEADER, DMG_COUNT
};

static const char *const damage_names[DMG_COUNT] = {
	"uuid", "stream_id", "stream_instance_id", "cpu_id", "content_size huge",
	"content_size < header", "content_size cuts an event", "packet_seq_num",
	"timestamp_begin before the previous packet", "timestamp_end before the events",
	"events_discarded beyond the buffer's count", "unknown event id", "random header",
};

/* Damage sub-buffer 1 (the second packet, complete) of `data`. */
static void damage_packet(char *sb, enum damage d)
{
	struct ctf_packet_header h;
	memcpy(&h, sb, sizeof(h));
	switch (d) {
	case DMG_UUID: h.uuid[7] ^= 1; break;
	case DMG_STREAM_ID: h.stream_id = 1; break;
	case DMG_INSTANCE: h.stream_instance_id += 1; break;
	case DMG_CPU_ID: h.cpu_id += 1; break;
	case DMG_CONTENT_HUGE: h.content_size = 1ull << 40; break;
	case DMG_CONTENT_SHORT: h.content_size = 8 * 8; break;
	case DMG_CONTENT_CUT: h.content_size -= 2 * 8; break;
	case DMG_SEQ: h.packet_seq_num = 0; break;
	case DMG_TS_BACK: h.timestamp_begin = 1; break;
	case DMG_TS_END: h.timestamp_end = h.timestamp_begin; break;
	case DMG_DISCARDED: h.events_discarded = 1ull << 50; break;
	case DMG_EVENT_ID: sb[CTF_PACKET_HEADER_SIZE] = 29; break;
	case DMG_RANDOM_HEADER:
		for (size_t i = 0; i < sizeof(h); i++)
			((unsigned char *)&h)[i] = (unsigned char)(rand() >> 7);
		break;
	default: break;
	}
	if (d != DMG_EVENT_ID)
		memcpy(sb, &h, sizeof(h));
}

struct scribbler {
	struct fixture *f;
	enum damage d;
	int cpu;
};

static void *scribble_writer(void *arg)
{
	struct scribbler *w = arg;
	w->cpu = rt_test_pin_nth_cpu(0);
	for (uint32_t i = 0; i < 500; i++)
		write_event(&w->f->sets[0], EV_ID, i, 0, true, NULL);
	if (w->cpu >= 0)
		damage_packet(w->f->sets[0].rb.cpus[w->cpu].data + 4096, w->d);
	return NULL;
}

/* 500 events written by `writer` on one CPU's 8 x 4 KiB buffer (only the
 * drain reads), the damage `d` done; NULL if the consumer did not start. */
static struct fixture *scribbled_trace(const char *prefix, int d, void *(*writer)(void *))
{
	struct fixture *f = calloc(1, sizeof(*f));
	char name[64];
	snprintf(name, sizeof(name), "%s-%d", prefix, d);
	fx_init(f, name, false);
	fx_channel(f, "chan", 4096, 8, false, false);
	f->ch[0].read_timer_ms = 600000;
	fx_event(f, 0, EV_ID, "ev", ev_fields, 3);
	char err[256] = "";
	if (!CHECK(consumer_trace_add(&f->t, err, sizeof(err)) == 0, "add: %s", err)) {
		fx_fini(f);
		free(f);
		return NULL;
	}
	struct scribbler w = { .f = f, .d = (enum damage)d };
	pthread_t th;
	pthread_create(&th, NULL, writer, &w);
	pthread_join(th, NULL);
	return f;
}

static void test_scribbled_packet(enum damage d)
{
	unit_case = damage_names[d];
	char err[256] = "";
	struct fixture *f = scribbled_trace("scribbled", (int)d, scribble_writer);
	if (!f)
		return;
	CHECK_EQ(consumer_trace_drain(&f->t), 0);
	struct rtd_channel_stats st = { 0 };
	consumer_bufset_stats(&f->sets[0], &st);
	CHECK_EQ(st.packets_corrupt, 1);
	CHECK_EQ(st.subbufs_lost, 0);
	/* Every event but those of the second packet, in order. */
	struct rtr_trace *r;
	if (CHECK(rtr_open(f->t.dir, &r, err, sizeof(err)) == 0, "rtr_open: %s", err)) {
		struct rtr_event ev;
		uint64_t next = 0, n = 0, gaps = 0;
		int ret;
		while ((ret = rtr_next(r, &ev)) > 0) {
			struct rtr_value seq;
			rtr_field_by_name(&ev, "seq", &seq);
			gaps += seq.u != next;
			CHECK(seq.u >= next, "seq %llu after %llu", (unsigned long long)seq.u,
			      (unsigned long long)next);
			next = seq.u + 1;
			n++;
		}
		CHECK(ret == 0, "rtr_next: %s", rtr_error(r));
		CHECK(gaps == 1 && next == 500 && n > 200 && n < 400,
		      "%llu events, %llu gaps, last %llu", (unsigned long long)n,
		      (unsigned long long)gaps, (unsigned long long)next);
		CHECK_EQ(st.events, n);
		rtr_close(r);
	}
	CHECK(run_babeltrace2(f->t.dir) == 0, "babeltrace2 reads %s", f->t.dir);
	consumer_trace_remove(&f->t);
	fx_fini(f);
	free(f);
}

/* ---- a buffer's counters damaged ---- */

enum counter_damage { CNT_WRITE_COUNT, CNT_ANNOUNCED, CNT_COMMIT_SEQ, CNT_COUNT };

static const char *const counter_names[CNT_COUNT] = {
	"write_count", "announced", "commit_seq",
};

static void *counter_writer(void *arg)
{
	struct scribbler *w = arg;
	w->cpu = rt_test_pin_nth_cpu(0);
	for (uint32_t i = 0; i < 500; i++)
		write_event(&w->f->sets[0], EV_ID, i, 0, true, NULL);
	if (w->cpu < 0)
		return NULL;
	struct rb_cpu_ctl *c = rb_cpu(&w->f->sets[0].rb, (uint32_t)w->cpu);
	switch ((enum counter_damage)w->d) {
	case CNT_WRITE_COUNT: c->write_count += 1ull << 40; break;
	case CNT_ANNOUNCED: c->announced += 12345; break;
	default: c->sb[2].commit_seq = 0x5555; break;
	}
	return NULL;
}

static void test_scribbled_counters(enum counter_damage d)
{
	unit_case = counter_names[d];
	char err[256] = "";
	struct fixture *f = scribbled_trace("counters", (int)d, counter_writer);
	if (!f)
		return;
	uint64_t t0 = clock_ns();
	CHECK_EQ(consumer_trace_drain(&f->t), 0);
	printf("drain with damaged %s: %.1f ms\n", counter_names[d],
	       (double)(clock_ns() - t0) / 1e6);
	struct rtd_channel_stats st = { 0 };
	consumer_bufset_stats(&f->sets[0], &st);
	CHECK(st.used_bytes <= st.buffer_bytes, "used %llu of %llu",
	      (unsigned long long)st.used_bytes, (unsigned long long)st.buffer_bytes);
	CHECK(st.subbufs_lost + st.packets_corrupt >= 1, "what was given up is counted");
	/* The complete packets before the damage are readable. */
	CHECK(run_babeltrace2(f->t.dir) == 0, "babeltrace2 reads %s", f->t.dir);
	struct rtr_trace *r;
	if (CHECK(rtr_open(f->t.dir, &r, err, sizeof(err)) == 0, "rtr_open: %s", err)) {
		struct rtr_event ev;
		uint64_t next = 0;
		int ret;
		while ((ret = rtr_next(r, &ev)) > 0) {
			struct rtr_value seq;
			rtr_field_by_name(&ev, "seq", &seq);
			CHECK_EQ(seq.u, next);
			next = seq.u + 1;
		}
		CHECK(ret == 0, "rtr_next: %s", rtr_error(r));
		CHECK_EQ(st.events, next);
		rtr_close(r);
	}
	consumer_trace_remove(&f->t);
	fx_fini(f);
	free(f);
}

/* ---- a drain of full buffers (prints the consumer's write rate) ---- */

#define BULK_EVENTS 150000u	/* ~3.1 MB: fits in one CPU's 4 MiB */

static void *bulk_writer(void *arg)
{
	struct fixture *f = arg;
	rt_test_pin_nth_cpu(0);
	for (uint32_t i = 0; i < BULK_EVENTS; i++)
		write_event(&f->sets[0], EV_ID, i, 0, true, NULL);
	return NULL;
}

static void test_bulk_drain(void)
{
	unit_case = "bulk-drain";
	struct fixture *f = calloc(1, sizeof(*f));
	fx_init(f, unit_case, false);
	fx_channel(f, "chan", 256 * 1024, 16, false, false);
	f->ch[0].read_timer_ms = 600000; /* only the drain reads */
	fx_event(f, 0, EV_ID, "ev", ev_fields, 3);
	char err[256] = "";
	if (!CHECK(consumer_trace_add(&f->t, err, sizeof(err)) == 0, "add: %s", err))
		return;
	pthread_t th;
	pthread_create(&th, NULL, bulk_writer, f);
	pthread_join(th, NULL);
	uint64_t t0 = clock_ns();
	CHECK_EQ(consumer_trace_drain(&f->t), 0);
	uint64_t dt = clock_ns() - t0;
	struct rtd_channel_stats st = { 0 };
	consumer_bufset_stats(&f->sets[0], &st);
	printf("drain of %.1f MB (%llu events): %.1f ms, %.0f MB/s\n",
	       (double)st.bytes_written / 1e6, (unsigned long long)st.events, (double)dt / 1e6,
	       (double)st.bytes_written / 1e6 / ((double)dt / 1e9));
	CHECK_EQ(st.events, BULK_EVENTS);
	CHECK_EQ(st.events_lost, 0);
	check_streaming_reader_n(f->t.dir, 1, BULK_EVENTS, 0);
	consumer_trace_remove(&f->t);
	fx_fini(f);
	free(f);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s CHECK_CONSUMER_BT2_PY\n", argv[0]);
		return 2;
	}
	checker = argv[1];
	tmp_root = rt_test_tmpdir("test_consumer");
	test_streaming(false);
	test_streaming(true);
	test_rotation();
	test_snapshot();
	test_drain_stuck();
	test_damaged_packet();
	for (int d = 0; d < DMG_COUNT; d++)
		test_scribbled_packet((enum damage)d);
	for (int d = 0; d < CNT_COUNT; d++)
		test_scribbled_counters((enum counter_damage)d);
	test_bulk_drain();
	int ret = unit_finish();
	/* RINGTRACE_TEST_KEEP=1 keeps the traces for a look by hand. */
	if (!ret && !getenv("RINGTRACE_TEST_KEEP")) {
		if (rt_test_rmtree(tmp_root) < 0)
			fprintf(stderr, "cannot remove %s\n", tmp_root);
	} else {
		fprintf(stderr, "traces kept in %s\n", tmp_root);
	}
	free(tmp_root);
	return ret;
}
