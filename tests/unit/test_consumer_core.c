/*
 * test_consumer_core.c - src/consumer through its interfaces, with a
 * source made here (what a kernel source or any other plugs in): packets
 * trimmed (padding zeroed, packet_size set) into stream files, a damaged
 * packet of an untrusted source dropped and counted, the stuck-unit skip
 * asked for when a stream has nothing, a packet whose metadata cannot be
 * written counted as lost in the trace (a header-only packet carrying its
 * events), the drain ending on streams that never settle, a snapshot
 * keeping the newest run of each stream, and contexts outside the context
 * table with an env.domain.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "consumer/consumer.h"
#include "consumer/trace_dir.h"
#include "ctf/ctf_packet.h"

static int failures;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                          \
			fputc('\n', stderr);                                   \
			failures++;                                            \
		}                                                              \
	} while (0)

#define UNIT 512u		/* the source's packet size */
#define MAX_PKTS 8u
#define EVENTS 4u		/* per packet: 84 + 4 * 8 = 116 bytes, padded to 120 */
#define STREAM_ID 3u

static const uint8_t uuid[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

/* ---- a source made here ---- */

struct fake_stream {
	char pkts[MAX_PKTS][UNIT];
	uint32_t n, next;
	uint64_t reserved, consumed;
	int stuck_calls, flush_calls;
	uint64_t stuck_after;		/* the longest `after` asked of skip_stuck */
	uint32_t late;			/* the unit at n completes after this many gets */
};

struct fake {
	struct fake_stream s[2];
	int snap_fail_at;		/* snap_copy of this unit fails (-EAGAIN) */
	bool lapping;			/* a writer overwrites the oldest unit not
					 * yet overwritten at each snap_copy */
	uint32_t overwritten;		/* units [0, overwritten) of stream 0 */
};

static void make_packet(char *p, uint32_t stream, uint64_t seq, uint32_t wrong_seq)
{
	memset(p, 0xAA, UNIT);		/* stale bytes of an earlier pass */
	uint64_t begin = 1000 * (seq + 1), used = CTF_PACKET_HEADER_SIZE + EVENTS * 8;
	struct ctf_packet_header h = {
		.magic = CTF_MAGIC, .stream_id = STREAM_ID, .stream_instance_id = stream,
		.timestamp_begin = begin, .timestamp_end = begin + EVENTS,
		.content_size = used * 8, .packet_size = UNIT * 8,
		.packet_seq_num = wrong_seq ? seq + 7 : seq, .events_discarded = 0,
		.cpu_id = stream,
	};
	memcpy(h.uuid, uuid, 16);
	memcpy(p, &h, sizeof(h));
	char *e = p + CTF_PACKET_HEADER_SIZE;
	for (uint32_t i = 0; i < EVENTS; i++) {
		e += ctf_write_event_header(e, 0, begin + i, 0);
		uint32_t v = (uint32_t)(seq * 100 + i);
		memcpy(e, &v, 4);
		e += 4;
	}
}

static void fake_fill(struct fake *f, uint32_t stream, uint32_t n, int wrong)
{
	struct fake_stream *s = &f->s[stream];
	for (uint32_t i = 0; i < n; i++)
		make_packet(s->pkts[i], stream, i, wrong == (int)i);
	s->n = n;
	s->reserved = (uint64_t)n * UNIT;
}

static int f_get(void *arg, uint32_t stream, struct cons_packet *p)
{
	struct fake_stream *s = &((struct fake *)arg)->s[stream];
	if (s->next >= s->n && s->late && --s->late == 0) {
		make_packet(s->pkts[s->n], stream, s->n, 0);
		s->n++;
	}
	if (s->next >= s->n)
		return -EAGAIN;
	*p = (struct cons_packet){ .data = s->pkts[s->next], .size = UNIT, .seq = s->next,
				   .cookie = s->next };
	return 0;
}

static void f_put(void *arg, uint32_t stream, const struct cons_packet *p)
{
	struct fake_stream *s = &((struct fake *)arg)->s[stream];
	CHECK(p->cookie == s->next, "put of %llu, next %u", (unsigned long long)p->cookie,
	      s->next);
	s->next++;
	s->consumed += UNIT;
}

static int f_skip_stuck(void *arg, uint32_t stream, uint64_t now, uint64_t after)
{
	(void)now;
	struct fake_stream *s = &((struct fake *)arg)->s[stream];
	s->stuck_calls++;
	if (after > s->stuck_after)
		s->stuck_after = after;
	return 0;
}

static int f_flush(void *arg, uint32_t stream, bool final)
{
	(void)final;
	((struct fake *)arg)->s[stream].flush_calls++;
	return 0;
}

static void f_counts(void *arg, uint32_t stream, struct cons_counts *c)
{
	struct fake_stream *s = &((struct fake *)arg)->s[stream];
	*c = (struct cons_counts){ .bytes_reserved = s->reserved, .bytes_consumed = s->consumed,
				   .events_lost = 0 };
}

static int f_snap_range(void *arg, uint32_t stream, uint64_t *first, uint64_t *end)
{
	struct fake_stream *s = &((struct fake *)arg)->s[stream];
	*first = 0;
	*end = (uint64_t)s->n * UNIT;
	return 0;
}

static int f_snap_copy(void *arg, uint32_t stream, uint64_t off, void *dst, uint64_t *seq)
{
	struct fake *f = arg;
	if (f->lapping && stream == 0 && f->overwritten < f->s[0].n)
		f->overwritten++;
	if ((int)(off / UNIT) == f->snap_fail_at ||
	    (f->lapping && stream == 0 && off / UNIT < f->overwritten))
		return -EAGAIN;
	memcpy(dst, f->s[stream].pkts[off / UNIT], UNIT);
	*seq = off / UNIT;
	return 0;
}

static const struct cons_source_ops fake_ops = {
	.get = f_get, .put = f_put, .skip_stuck = f_skip_stuck, .flush = f_flush,
	.counts = f_counts, .snap_range = f_snap_range, .snap_copy = f_snap_copy,
};

/* ---- the trace's one event class: id 0, one u32 "v" ---- */

static const struct rt_field_desc v_field = { .name = "v", .type = RT_TYPE_U32 };

static void cl_lock(void *arg)
{
	(void)arg;
}

static bool cl_fields(void *arg, uint32_t stream_id, uint32_t id,
		      const struct rt_field_desc **fields, uint32_t *nr)
{
	(void)arg;
	if (stream_id != STREAM_ID || id != 0)
		return false;
	*fields = &v_field;
	*nr = 1;
	return true;
}

static int cl_copy(void *arg, uint32_t from, struct ctf_event_class **ev, uint32_t *nr,
		   uint64_t *generation)
{
	(void)arg;
	*ev = calloc(1, sizeof(**ev));
	if (!*ev)
		return -ENOMEM;
	**ev = (struct ctf_event_class){ .id = 0, .stream_id = STREAM_ID, .provider = "t",
					 .name = "ev", .nr_fields = 1, .fields = &v_field };
	*nr = from ? 0 : 1;
	*generation = 1;
	return 0;
}

static uint64_t cl_generation(void *arg)
{
	(void)arg;
	return 1;
}

/* ---- helpers ---- */

struct setup {
	char dir[64];
	struct fake f;
	struct cons_channel_desc desc;
	struct cons_trace_desc trace;
	struct cons_files files;
	struct cons_errors errors;
	struct cons_channel ch;
	int meta_calls, meta_fail;	/* fail the first meta_fail calls */
};

static int meta_cb(void *arg)
{
	struct setup *st = arg;
	return st->meta_calls++ < st->meta_fail ? -ENOSPC : 0;
}

static void setup(struct setup *st, bool untrusted, uint32_t batch)
{
	memset(st, 0, sizeof(*st));
	snprintf(st->dir, sizeof(st->dir), "/tmp/rt-cons-XXXXXX");
	CHECK(mkdtemp(st->dir), "mkdtemp");
	chmod(st->dir, 0700);
	st->desc = (struct cons_channel_desc){ .name = "ch", .stream_id = STREAM_ID };
	st->trace = (struct cons_trace_desc){
		.dir = st->dir, .trace_name = "t",
		.classes = { .lock = cl_lock, .unlock = cl_lock, .fields = cl_fields,
			     .copy = cl_copy, .generation = cl_generation },
	};
	memcpy(st->trace.uuid, uuid, 16);
	struct cons_source src = { .ops = &fake_ops, .arg = &st->f, .nr_streams = 2,
				   .batch = batch, .packet_size = UNIT, .capacity = 4 * UNIT };
	struct cons_sink sink;
	CHECK(cons_files_init(&st->files, st->dir, &st->desc, 2) == 0, "files");
	cons_files_sink(&sink, &st->files);
	cons_errors_init(&st->errors, st->dir, NULL, NULL);
	CHECK(cons_channel_init(&st->ch, &st->desc, &st->trace, &src, &sink, &st->errors,
				untrusted) == 0, "channel");
	st->ch.metadata = meta_cb;
	st->ch.metadata_arg = st;
}

static void teardown(struct setup *st)
{
	cons_channel_fini(&st->ch);
	cons_files_free(&st->files);
	cons_errors_fini(&st->errors);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", st->dir);
	CHECK(system(cmd) == 0, "rm");
}

/* The content of DIR/name (malloc'ed), *len its size; NULL if absent. */
static char *slurp(const char *dir, const char *name, size_t *len)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	struct stat sb;
	fstat(fd, &sb);
	char *p = malloc((size_t)sb.st_size + 1);
	ssize_t n = read(fd, p, (size_t)sb.st_size);
	close(fd);
	*len = n < 0 ? 0 : (size_t)n;
	p[*len] = 0;
	return p;
}

/* The packets of a stream file: each trimmed, padding zeroed; returns how
 * many, with the headers in h[]. */
static uint32_t packets_of(const char *dir, const char *name, struct ctf_packet_header *h,
			   uint32_t max)
{
	size_t len;
	char *p = slurp(dir, name, &len);
	uint32_t n = 0;
	for (size_t off = 0; p && off + CTF_PACKET_HEADER_SIZE <= len && n < max; n++) {
		memcpy(&h[n], p + off, sizeof(h[n]));
		uint64_t used = h[n].content_size / 8, bytes = h[n].packet_size / 8;
		CHECK(bytes == ((used + 7) & ~7ull), "%s packet %u: packet_size %llu bytes, "
		      "content %llu", name, n, (unsigned long long)bytes, (unsigned long long)used);
		for (uint64_t i = used; i < bytes && off + i < len; i++)
			CHECK(p[off + i] == 0, "%s packet %u: padding byte %llu is %d", name, n,
			      (unsigned long long)i, p[off + i]);
		off += bytes;
	}
	free(p);
	return n;
}

/* ---- the tests ---- */

static void test_trusted_read(void)
{
	struct setup st;
	setup(&st, false, MAX_PKTS);
	fake_fill(&st.f, 0, 3, -1);
	fake_fill(&st.f, 1, 2, -1);
	uint32_t most = cons_channel_read(&st.ch, CONS_STUCK_MS);
	CHECK(most == 3, "most %u", most);
	struct ctf_packet_header h[8];
	CHECK(packets_of(st.dir, "ch_0", h, 8) == 3, "ch_0 packets");
	CHECK(packets_of(st.dir, "ch_1", h, 8) == 2, "ch_1 packets");
	CHECK(h[1].packet_seq_num == 1 && h[1].packet_size == 120 * 8, "ch_1 second packet");
	CHECK(st.ch.stats.packets == 5 && st.ch.stats.bytes == 5 * 120, "stats %llu %llu",
	      (unsigned long long)st.ch.stats.packets, (unsigned long long)st.ch.stats.bytes);
	/* Trusted: events are not counted (no walk of every packet). */
	CHECK(st.ch.stats.events == 0, "events %llu", (unsigned long long)st.ch.stats.events);
	CHECK(st.meta_calls == 5, "metadata before each packet: %d", st.meta_calls);
	/* Both streams ran dry: the stuck skip is asked for each. */
	CHECK(st.f.s[0].stuck_calls == 1 && st.f.s[1].stuck_calls == 1, "stuck calls %d %d",
	      st.f.s[0].stuck_calls, st.f.s[1].stuck_calls);
	teardown(&st);

	/* A stream that still has packets after `batch` is not asked. */
	setup(&st, false, 2);
	fake_fill(&st.f, 0, 3, -1);
	CHECK(cons_channel_read(&st.ch, CONS_STUCK_MS) == 2, "batch");
	CHECK(st.f.s[0].stuck_calls == 0 && st.f.s[1].stuck_calls == 1, "stuck calls %d %d",
	      st.f.s[0].stuck_calls, st.f.s[1].stuck_calls);
	teardown(&st);
}

static void test_untrusted_drops_damaged(void)
{
	struct setup st;
	setup(&st, true, MAX_PKTS);
	fake_fill(&st.f, 0, 3, 1);	/* packet 1 says another sequence number */
	cons_channel_read(&st.ch, CONS_STUCK_MS);
	struct ctf_packet_header h[8];
	CHECK(packets_of(st.dir, "ch_0", h, 8) == 2, "ch_0 packets");
	CHECK(h[0].packet_seq_num == 0 && h[1].packet_seq_num == 2, "seq %llu %llu",
	      (unsigned long long)h[0].packet_seq_num, (unsigned long long)h[1].packet_seq_num);
	CHECK(st.ch.stats.packets_corrupt == 1, "corrupt %llu",
	      (unsigned long long)st.ch.stats.packets_corrupt);
	CHECK(st.ch.stats.events == 2 * EVENTS, "events %llu",
	      (unsigned long long)st.ch.stats.events);
	/* The source's memory is left as it was: the check works on a copy. */
	struct ctf_packet_header src;
	memcpy(&src, st.f.s[0].pkts[0], sizeof(src));
	CHECK(src.packet_size == UNIT * 8, "source packet changed");
	teardown(&st);
}

static void test_metadata_failure_counted_in_trace(void)
{
	struct setup st;
	setup(&st, false, MAX_PKTS);
	st.meta_fail = 1;
	fake_fill(&st.f, 0, 3, -1);
	struct cons_channel *c = &st.ch;
	cons_drain(&c, 1, true);
	struct ctf_packet_header h[8];
	/* Packet 0 lost: a header-only packet in its place, carrying its
	 * events, then packets 1 and 2 with the loss in events_discarded. */
	CHECK(packets_of(st.dir, "ch_0", h, 8) == 3, "ch_0 packets");
	CHECK(h[0].content_size == CTF_PACKET_HEADER_SIZE * 8 && h[0].packet_seq_num == 0 &&
	      h[0].events_discarded == EVENTS, "header-only packet: %llu bits, seq %llu, %llu",
	      (unsigned long long)h[0].content_size, (unsigned long long)h[0].packet_seq_num,
	      (unsigned long long)h[0].events_discarded);
	CHECK(h[2].events_discarded == EVENTS, "later packet: %llu",
	      (unsigned long long)h[2].events_discarded);
	char msg[512];
	int err = cons_errors_message(&st.errors, true, msg, sizeof(msg));
	CHECK(err == -ENOSPC, "error %d", err);
	CHECK(strstr(msg, "cannot write the metadata in ") &&
	      strstr(msg, "4 events in 1 packets could not be written (written again since)"),
	      "%s", msg);
	CHECK(st.ch.stats.events_unwritten == EVENTS, "unwritten %llu",
	      (unsigned long long)st.ch.stats.events_unwritten);
	CHECK(st.f.s[0].flush_calls >= 1 && st.f.s[1].flush_calls >= 1, "final flush");
	teardown(&st);
}

static void test_drain_gives_up(void)
{
	struct setup st;
	setup(&st, false, MAX_PKTS);
	/* Stream 0: 2 units reserved that never complete; stream 1: counters
	 * no buffer can have. The drain still ends, and counts them. */
	st.f.s[0].reserved = 2 * UNIT;
	st.f.s[1].reserved = 100 * UNIT;
	struct cons_channel *c = &st.ch;
	cons_drain(&c, 1, true);
	CHECK(st.ch.stats.subbufs_skipped == 2 + 1, "skipped %llu",
	      (unsigned long long)st.ch.stats.subbufs_skipped);
	/* A second drain (the daemon's stop, then destroy, or stop, start,
	 * stop) finds the same units: they were counted already (before,
	 * each drain counted them again: 6). A unit reserved since is. */
	cons_drain(&c, 1, true);
	CHECK(st.ch.stats.subbufs_skipped == 2 + 1, "skipped again: %llu",
	      (unsigned long long)st.ch.stats.subbufs_skipped);
	st.f.s[0].reserved = 3 * UNIT;
	cons_drain(&c, 1, true);
	CHECK(st.ch.stats.subbufs_skipped == 3 + 1, "a new unit: %llu",
	      (unsigned long long)st.ch.stats.subbufs_skipped);
	teardown(&st);
}

/* Rotation: each stream's packets up to the rotation point go to the
 * current directory, waiting for a writer that is only late (the
 * source's stuck skip is asked with the read timer's CONS_STUCK_MS, not
 * the drain's 100 ms: a live writer preempted mid-event lost its
 * sub-buffer before), then the next packets to the next chunk, their
 * sequence going on. */
static void test_rotate(void)
{
	struct setup st;
	setup(&st, false, MAX_PKTS);
	fake_fill(&st.f, 0, 3, -1);
	fake_fill(&st.f, 1, 2, -1);
	st.f.s[0].reserved = 4 * UNIT;	/* a 4th packet being written */
	st.f.s[0].late = 50;
	char next[96];
	snprintf(next, sizeof(next), "%s/next", st.dir);
	struct cons_channel *c = &st.ch;
	CHECK(cons_rotate(&c, 1, next) == 0, "rotate");
	struct ctf_packet_header h[8];
	CHECK(packets_of(st.dir, "ch_0", h, 8) == 4 && h[3].packet_seq_num == 3,
	      "the late packet is in the chunk that ends");
	CHECK(packets_of(st.dir, "ch_1", h, 8) == 2, "ch_1 before the rotation");
	CHECK(st.f.s[0].flush_calls == 1 && st.f.s[1].flush_calls == 1, "one flush each");
	CHECK(st.f.s[0].stuck_after >= CONS_STUCK_MS * 1000000ull,
	      "a late writer's unit given up after %llu ns only",
	      (unsigned long long)st.f.s[0].stuck_after);
	CHECK(st.ch.stats.subbufs_skipped == 0, "nothing given up");
	/* Later packets: the next chunk. */
	struct fake_stream *s1 = &st.f.s[1];
	make_packet(s1->pkts[2], 1, 2, 0);
	make_packet(s1->pkts[3], 1, 3, 0);
	s1->n = 4;
	s1->reserved = 4 * UNIT;
	cons_channel_read(&st.ch, CONS_STUCK_MS);
	CHECK(packets_of(next, "ch_1", h, 8) == 2 && h[0].packet_seq_num == 2 &&
	      h[1].packet_seq_num == 3, "the next chunk's packets, the sequence going on");
	CHECK(packets_of(st.dir, "ch_1", h, 8) == 2, "the ended chunk unchanged");
	teardown(&st);
}

static void test_snapshot_newest_run(void)
{
	struct setup st;
	setup(&st, true, MAX_PKTS);
	fake_fill(&st.f, 0, 4, -1);
	fake_fill(&st.f, 1, 2, -1);
	st.f.snap_fail_at = 1;		/* overwritten during the copy */
	char out[128], err[256] = "";
	snprintf(out, sizeof(out), "%s/snap", st.dir);
	struct cons_channel *c = &st.ch;
	const struct cons_channel_desc *d = &st.desc;
	int ret = cons_snapshot(&c, 1, &st.trace, &d, 1, out, 0, err, sizeof(err));
	CHECK(ret == 0, "snapshot: %d %s", ret, err);
	struct ctf_packet_header h[8];
	/* Stream 0: unit 1 failed, so 0 goes too: 2 and 3 remain. Stream 1:
	 * only unit 0 (unit 1, the newest, failed: nothing newer to join).
	 * Nothing was consumed. */
	CHECK(packets_of(out, "ch_0", h, 8) == 2 && h[0].packet_seq_num == 2 &&
	      h[1].packet_seq_num == 3, "ch_0");
	CHECK(packets_of(out, "ch_1", h, 8) == 1 && h[0].packet_seq_num == 0, "ch_1");
	CHECK(st.f.s[0].next == 0 && st.f.s[0].flush_calls == 1, "consumed or not flushed");
	size_t len;
	char *meta = slurp(out, "metadata", &len);
	CHECK(meta && strstr(meta, "stream {\n\tid = 3;") && strstr(meta, "name = \"t:ev\";"),
	      "metadata: %s", meta ? meta : "(none)");
	free(meta);
	/* max_size: the newest packets that fit. */
	char out2[128];
	snprintf(out2, sizeof(out2), "%s/snap2", st.dir);
	st.f.snap_fail_at = -1;
	ret = cons_snapshot(&c, 1, &st.trace, &d, 1, out2, 130, err, sizeof(err));
	CHECK(ret == 0, "snapshot: %d %s", ret, err);
	CHECK(packets_of(out2, "ch_0", h, 8) == 1 && h[0].packet_seq_num == 3, "max_size");
	teardown(&st);
}

/* A writer faster than the copy (one unit overwritten, oldest first, at
 * each unit copied): the newest units are copied before it reaches them.
 * Copied oldest first, each unit was overwritten just before its turn and
 * the snapshot held nothing of the stream (daemon_consumer's snapshot
 * while writing failed so under load: "writer 0 has events"). */
static void test_snapshot_writer_laps(void)
{
	struct setup st;
	setup(&st, true, MAX_PKTS);
	fake_fill(&st.f, 0, 6, -1);
	st.f.snap_fail_at = -1;
	st.f.lapping = true;
	char out[128], err[256] = "";
	snprintf(out, sizeof(out), "%s/snap-lap", st.dir);
	struct cons_channel *c = &st.ch;
	const struct cons_channel_desc *d = &st.desc;
	int ret = cons_snapshot(&c, 1, &st.trace, &d, 1, out, 0, err, sizeof(err));
	CHECK(ret == 0, "snapshot: %d %s", ret, err);
	/* Copies of 5, 4, 3 succeed while the writer takes 0, 1, 2; the copy
	 * of 2 fails: 3, 4, 5 remain, in order. */
	struct ctf_packet_header h[8];
	uint32_t n = packets_of(out, "ch_0", h, 8);
	CHECK(n == 3, "%u packets", n);
	for (uint32_t i = 0; i < n && i < 3; i++)
		CHECK(h[i].packet_seq_num == 3 + i, "packet %u: seq %llu", i,
		      (unsigned long long)h[i].packet_seq_num);
	CHECK(st.ch.stats.packets_corrupt == 0, "nothing counted damaged");
	teardown(&st);
}

/* Embedded mode's metadata (trace_dir.h): *generation is what the file
 * on disk describes, so a write that fails leaves it as it was and the
 * consumer writes the metadata again before the next packet (before, it
 * took the classes' generation even when the write failed: the packets
 * after the first were written with a metadata that lacked their
 * classes, and it was not written again until another class registered
 * or the program ended). */
static void test_trace_dir_generation_after_failure(void)
{
	struct setup st;
	setup(&st, false, MAX_PKTS);
	char missing[128];
	snprintf(missing, sizeof(missing), "%s/missing", st.dir);
	struct cons_trace_desc t = st.trace;
	t.dir = missing;
	struct rt_owned_fd frag = RT_OWNED_FD_NONE;
	uint64_t gen = 0;
	int ret = cons_trace_dir_metadata(&t, &st.desc, 0, &frag, &gen);
	CHECK(ret < 0, "metadata in a missing directory: %d", ret);
	CHECK(gen == 0, "failed write took generation %llu", (unsigned long long)gen);
	ret = cons_trace_dir_metadata(&st.trace, &st.desc, 0, &frag, &gen);
	CHECK(ret == 0 && gen == 1, "metadata: %d, generation %llu", ret,
	      (unsigned long long)gen);
	size_t len;
	char *meta = slurp(st.dir, "metadata", &len);
	CHECK(meta && strstr(meta, "name = \"t:ev\";"), "metadata: %s", meta ? meta : "(none)");
	free(meta);
	rt_owned_fd_close(&frag);
	teardown(&st);
}

/* Classes that grow: `nr_classes` of them (ids 0..), generation = count. */
static uint32_t nr_classes;

static int grow_copy(void *arg, uint32_t from, struct ctf_event_class **ev, uint32_t *nr,
		     uint64_t *generation)
{
	(void)arg;
	static const char *names[] = { "ev", "second", "third" };
	uint32_t n = nr_classes > from ? nr_classes - from : 0;
	*ev = calloc(n ? n : 1, sizeof(**ev));
	if (!*ev)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		(*ev)[i] = (struct ctf_event_class){ .id = from + i, .stream_id = STREAM_ID,
						     .provider = "t", .name = names[from + i],
						     .nr_fields = 1, .fields = &v_field };
	*nr = n;
	*generation = nr_classes;
	return 0;
}

static uint64_t grow_generation(void *arg)
{
	(void)arg;
	return nr_classes;
}

/* The daemon's metadata (cons_metadata_update): an append that fails part
 * way (here the file size limit; a full disk does the same) must not
 * leave the torn declaration in the file once writing works again: the
 * metadata is then what a whole write gives. Before, the classes were
 * appended again after the torn text, and the file stayed unreadable
 * until the session's stop wrote it whole. */
static void test_metadata_torn_append(void)
{
	struct setup st;
	setup(&st, false, MAX_PKTS);
	st.trace.classes.copy = grow_copy;
	st.trace.classes.generation = grow_generation;
	const struct cons_channel_desc *d = &st.desc;
	struct cons_metadata_state ms = { 0 };
	nr_classes = 1;
	CHECK(cons_metadata_update(&ms, &st.trace, &d, 1, false) == 0, "first write");
	size_t len;
	char *meta = slurp(st.dir, "metadata", &len);
	free(meta);
	/* The next append stops 10 bytes in. */
	struct rlimit old, lim;
	getrlimit(RLIMIT_FSIZE, &old);
	lim = old;
	lim.rlim_cur = len + 10;
	signal(SIGXFSZ, SIG_IGN);
	CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit");
	nr_classes = 2;
	int ret = cons_metadata_update(&ms, &st.trace, &d, 1, false);
	setrlimit(RLIMIT_FSIZE, &old);
	CHECK(ret == -EFBIG, "append over the limit: %d", ret);
	/* Writing works again, and a third class registers. */
	nr_classes = 3;
	CHECK(cons_metadata_update(&ms, &st.trace, &d, 1, false) == 0, "write again");
	struct ctf_buf whole = { 0 };
	CHECK(cons_metadata_build(&whole, &st.trace, &d, 1, CONS_META_ALL, 0, NULL, NULL) == 0,
	      "build");
	meta = slurp(st.dir, "metadata", &len);
	CHECK(meta && len == whole.len && !memcmp(meta, whole.data, len),
	      "metadata is not the whole metadata (%zu bytes, whole %zu): %s", len, whole.len,
	      meta ? meta : "(none)");
	free(meta);
	ctf_buf_free(&whole);
	teardown(&st);
}

/* Embedded mode: once the program closed our stream file's descriptor
 * (and got the number again for a file of its own), the stream is
 * appended to by name; a packet that cannot be written there is still
 * counted in the trace: a header-only packet in its place carrying its
 * events, and the later packets' events_discarded. Before, the by-name
 * path wrote no header-only packet and did not raise events_discarded,
 * so the trace did not say that events were missing. */
static void test_by_name_loss_counted(void)
{
	struct setup st;
	setup(&st, false, 1);		/* one packet per stream and read */
	fake_fill(&st.f, 0, 3, -1);
	cons_channel_read(&st.ch, CONS_STUCK_MS);
	int fd = st.files.f[0].fd.fd;
	int other = open("/dev/null", O_WRONLY | O_CLOEXEC);
	CHECK(fd >= 0 && other >= 0 && dup2(other, fd) == fd, "the program's own file");
	close(other);
	size_t len;
	free(slurp(st.dir, "ch_0", &len));
	struct rlimit old, lim;
	getrlimit(RLIMIT_FSIZE, &old);
	lim = old;
	lim.rlim_cur = len;		/* packet 1 cannot be appended */
	signal(SIGXFSZ, SIG_IGN);
	CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit");
	cons_channel_read(&st.ch, CONS_STUCK_MS);
	setrlimit(RLIMIT_FSIZE, &old);
	CHECK(st.files.f[0].by_name, "not appending by name");
	struct cons_channel *c = &st.ch;
	cons_drain(&c, 1, true);
	struct ctf_packet_header h[8];
	uint32_t n = packets_of(st.dir, "ch_0", h, 8);
	CHECK(n == 3, "ch_0: %u packets", n);
	CHECK(n == 3 && h[1].packet_seq_num == 1 && h[1].content_size == CTF_PACKET_HEADER_SIZE * 8 &&
	      h[1].events_discarded == EVENTS, "header-only packet: seq %llu, %llu bits, %llu",
	      (unsigned long long)h[1].packet_seq_num, (unsigned long long)h[1].content_size,
	      (unsigned long long)h[1].events_discarded);
	CHECK(n == 3 && h[2].packet_seq_num == 2 && h[2].events_discarded == EVENTS,
	      "later packet: seq %llu, discarded %llu", (unsigned long long)h[2].packet_seq_num,
	      (unsigned long long)h[2].events_discarded);
	CHECK(fcntl(fd, F_GETFD) >= 0, "the program's descriptor was closed");
	close(fd);
	st.files.f[0].fd.fd = -1;
	teardown(&st);
}

/* A channel whose contexts are partly outside the context table (the
 * kernel's `tid`, declared by its source): the metadata declares the
 * table's vtid then the explicit tid, with the trace's env.domain, and an
 * untrusted read decodes events carrying both (4 + 4 bytes before the
 * payload) and counts them. */
static void test_explicit_contexts(void)
{
	static const struct rt_field_desc tid = { .name = "tid", .type = RT_TYPE_S32 };
	struct setup st;
	setup(&st, true, MAX_PKTS);
	st.desc.nr_contexts = 1;
	st.desc.contexts[0] = RT_CTX_VTID;
	st.desc.nr_fields = 1;
	st.desc.fields = &tid;
	st.trace.domain = "kernel";
	struct fake_stream *s = &st.f.s[0];
	char *p = s->pkts[0];
	memset(p, 0xAA, UNIT);
	uint64_t used = CTF_PACKET_HEADER_SIZE + EVENTS * 16;
	struct ctf_packet_header h = {
		.magic = CTF_MAGIC, .stream_id = STREAM_ID, .timestamp_begin = 1000,
		.timestamp_end = 1000 + EVENTS, .content_size = used * 8,
		.packet_size = UNIT * 8,
	};
	memcpy(h.uuid, uuid, 16);
	memcpy(p, &h, sizeof(h));
	char *e = p + CTF_PACKET_HEADER_SIZE;
	for (uint32_t i = 0; i < EVENTS; i++) {
		e += ctf_write_event_header(e, 0, 1000 + i, 0);
		int32_t vtid = 7, t = 70 + (int32_t)i;
		uint32_t v = i;
		memcpy(e, &vtid, 4);
		memcpy(e + 4, &t, 4);
		memcpy(e + 8, &v, 4);
		e += 12;
	}
	s->n = 1;
	s->reserved = UNIT;
	cons_channel_read(&st.ch, CONS_STUCK_MS);
	CHECK(st.ch.stats.packets == 1 && st.ch.stats.packets_corrupt == 0 &&
	      st.ch.stats.events == EVENTS, "packets %llu, corrupt %llu, events %llu",
	      (unsigned long long)st.ch.stats.packets,
	      (unsigned long long)st.ch.stats.packets_corrupt,
	      (unsigned long long)st.ch.stats.events);
	const struct cons_channel_desc *d = &st.desc;
	struct ctf_buf b = { 0 };
	CHECK(cons_metadata_build(&b, &st.trace, &d, 1, CONS_META_ALL, 0, NULL, NULL) == 0,
	      "metadata");
	const char *vt = b.data ? strstr(b.data, "_vtid;") : NULL;
	const char *td = vt ? strstr(vt, "_tid;") : NULL;
	CHECK(td && strstr(b.data, "domain = \"kernel\";"), "metadata: %s",
	      b.data ? b.data : "(none)");
	ctf_buf_free(&b);
	teardown(&st);
}

int main(void)
{
	test_trusted_read();
	test_untrusted_drops_damaged();
	test_metadata_failure_counted_in_trace();
	test_drain_gives_up();
	test_rotate();
	test_snapshot_newest_run();
	test_snapshot_writer_laps();
	test_trace_dir_generation_after_failure();
	test_metadata_torn_append();
	test_by_name_loss_counted();
	test_explicit_contexts();
	if (failures) {
		fprintf(stderr, "%d failures\n", failures);
		return 1;
	}
	printf("consumer core: all checks passed\n");
	return 0;
}
