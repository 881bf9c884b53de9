/*
 * check_stress.c - read back a stress trace and check it event by event.
 *
 * usage: check_stress TRACE_DIR MANIFEST discard|overwrite
 *
 * Every event must be intact (payload length, bytes and checksum derive
 * from its thread and seq), each thread's sequence must increase in trace
 * order, and every event the manifest says was written but the trace does
 * not hold must be accounted for; each event's timestamp lies within its
 * packet's timestamp_begin and timestamp_end and is no older than the
 * event before it in its stream (buffer order: a timestamp gone back,
 * written as a compact header, would read as a jump past the packet's
 * end). In discard mode the streams' discarded
 * counts must add up to exactly the missing events (and no packet may be
 * lost); in overwrite mode every run of missing events must fall in a
 * window where a stream lost packets, or be covered by discarded counts.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/reader/reader.h"
#include "stress_common.h"

#define MAX_IDS 2048

struct run {
	uint64_t first_seq, count;
	uint64_t ticks_before, ticks_after;	/* neighbours' timestamps */
};

struct thread_state {
	bool seen;
	uint64_t expected;
	uint64_t read;
	uint64_t last_seq;
	uint64_t last_ticks;
	struct run *runs;
	size_t nr_runs, cap_runs;
};

static struct thread_state th[MAX_IDS];
static unsigned failures;

/* Per stream file: the timestamp of the last event read. */
#define MAX_STREAMS 4096
static uint64_t stream_ticks[MAX_STREAMS];

#define FAIL(...)                                                              \
	do {                                                                   \
		if (failures++ < 20)                                           \
			fprintf(stderr, "check_stress: " __VA_ARGS__);         \
	} while (0)

static void add_run(struct thread_state *s, uint64_t first, uint64_t count,
		    uint64_t before, uint64_t after)
{
	if (s->nr_runs == s->cap_runs) {
		s->cap_runs = s->cap_runs ? s->cap_runs * 2 : 16;
		s->runs = realloc(s->runs, s->cap_runs * sizeof(*s->runs));
		if (!s->runs) {
			perror("realloc");
			exit(2);
		}
	}
	s->runs[s->nr_runs++] = (struct run){ first, count, before, after };
}

static int read_manifest(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		perror(path);
		return -1;
	}
	unsigned t;
	unsigned long long ev, sig;
	int n = 0;
	while (fscanf(f, "thread %u events %llu signals %llu\n", &t, &ev, &sig) == 3) {
		if (t >= STRESS_SIG_THREAD_BASE || STRESS_SIG_THREAD_BASE + t >= MAX_IDS) {
			fclose(f);
			return -1;
		}
		th[t].expected = ev;
		th[STRESS_SIG_THREAD_BASE + t].expected = sig;
		n++;
	}
	fclose(f);
	return n;
}

static int get_u64(const struct rtr_event *ev, const char *name, uint64_t *out)
{
	struct rtr_value v;
	if (rtr_field_by_name(ev, name, &v) < 0)
		return -1;
	if (v.type == RTR_UINT)
		*out = v.u;
	else if (v.type == RTR_INT)
		*out = (uint64_t)v.i;
	else
		return -1;
	return 0;
}

/* The packet context's field `name` of ev's packet (an unsigned integer). */
static int packet_u64(const struct rtr_event *ev, const char *name, uint64_t *out)
{
	uint32_t n = rtr_scope_count(ev, RTR_SCOPE_PACKET_CONTEXT);
	for (uint32_t i = 0; i < n; i++) {
		struct rtr_value v;
		const char *f;
		if (rtr_scope_field(ev, RTR_SCOPE_PACKET_CONTEXT, i, &v, &f) == 0 && f &&
		    !strcmp(f, name) && v.type == RTR_UINT) {
			*out = v.u;
			return 0;
		}
	}
	return -1;
}

static void check_ticks(const struct rtr_event *ev, uint64_t index)
{
	uint64_t begin, end;
	if (packet_u64(ev, "timestamp_begin", &begin) || packet_u64(ev, "timestamp_end", &end)) {
		FAIL("event %" PRIu64 ": no packet timestamps\n", index);
		return;
	}
	if (ev->ticks < begin || ev->ticks > end)
		FAIL("event %" PRIu64 " at %" PRIu64 " outside its packet [%" PRIu64 ", %" PRIu64
		     "]\n", index, ev->ticks, begin, end);
	if (ev->stream < MAX_STREAMS) {
		if (ev->ticks < stream_ticks[ev->stream])
			FAIL("event %" PRIu64 " at %" PRIu64 " after %" PRIu64
			     " in its stream\n", index, ev->ticks, stream_ticks[ev->stream]);
		stream_ticks[ev->stream] = ev->ticks;
	}
}

static void check_event(const struct rtr_event *ev, uint64_t index)
{
	uint64_t thread, seq, sum;
	check_ticks(ev, index);
	bool fixed = !strcmp(ev->cls->name, "stress:fixed");
	if (!fixed && strcmp(ev->cls->name, "stress:ev") != 0) {
		FAIL("event %" PRIu64 ": unexpected event %s\n", index, ev->cls->name);
		return;
	}
	if (get_u64(ev, "thread", &thread) || get_u64(ev, "seq", &seq) ||
	    get_u64(ev, "sum", &sum)) {
		FAIL("event %" PRIu64 ": cannot decode fields\n", index);
		return;
	}
	if (thread >= MAX_IDS) {
		FAIL("event %" PRIu64 ": thread %" PRIu64 " out of range (torn?)\n", index, thread);
		return;
	}
	bool ok = fixed == (bool)stress_is_fixed(seq);
	if (ok && fixed) {
		ok = stress_fixed_sum((uint32_t)thread, seq) == sum;
	} else if (ok) {
		struct rtr_value data;
		uint8_t want[STRESS_MAX_PAYLOAD];
		uint32_t len = stress_payload_len((uint32_t)thread, seq);
		stress_payload((uint32_t)thread, seq, want, len);
		ok = rtr_field_by_name(ev, "data", &data) == 0 && data.type == RTR_BYTES &&
		     data.bytes.len == len && memcmp(data.bytes.p, want, len) == 0 &&
		     stress_sum((uint32_t)thread, seq, want, len) == sum;
	}
	if (!ok) {
		FAIL("event %" PRIu64 " (%s, thread %" PRIu64 " seq %" PRIu64
		     ") is torn or corrupt\n", index, ev->cls->name, thread, seq);
		return;
	}
	struct thread_state *s = &th[thread];
	if (s->seen && seq <= s->last_seq) {
		FAIL("thread %" PRIu64 ": seq %" PRIu64 " after %" PRIu64 " (event %" PRIu64 ")\n",
		     thread, seq, s->last_seq, index);
		return;
	}
	uint64_t expect_next = s->seen ? s->last_seq + 1 : 0;
	if (seq > expect_next)
		add_run(s, expect_next, seq - expect_next, s->seen ? s->last_ticks : 0, ev->ticks);
	s->seen = true;
	s->last_seq = seq;
	s->last_ticks = ev->ticks;
	s->read++;
}

int main(int argc, char **argv)
{
	if (argc != 4 || (strcmp(argv[3], "discard") && strcmp(argv[3], "overwrite"))) {
		fprintf(stderr, "usage: check_stress TRACE_DIR MANIFEST discard|overwrite\n");
		return 2;
	}
	bool overwrite = !strcmp(argv[3], "overwrite");
	if (read_manifest(argv[2]) <= 0) {
		fprintf(stderr, "check_stress: bad manifest %s\n", argv[2]);
		return 2;
	}
	char err[512];
	struct rtr_trace *t;
	if (rtr_open(argv[1], &t, err, sizeof(err)) < 0) {
		fprintf(stderr, "check_stress: %s\n", err);
		return 1;
	}
	struct rtr_event ev;
	uint64_t n = 0;
	int ret;
	while ((ret = rtr_next(t, &ev)) > 0)
		check_event(&ev, n++);
	if (ret < 0) {
		fprintf(stderr, "check_stress: reading the trace: %s\n", rtr_error(t));
		return 1;
	}

	const struct rtr_stream_stats *st;
	size_t nr_streams = rtr_streams(t, &st);
	uint64_t discarded = 0, packets_lost = 0;
	for (size_t i = 0; i < nr_streams; i++) {
		discarded += st[i].events_discarded;
		packets_lost += st[i].packets_lost;
	}
	const struct rtr_gap *gaps;
	size_t nr_gaps = rtr_gaps(t, &gaps);

	uint64_t expected = 0, missing = 0, uncovered = 0;
	for (unsigned i = 0; i < MAX_IDS; i++) {
		struct thread_state *s = &th[i];
		expected += s->expected;
		if (s->read > s->expected) {
			FAIL("thread %u: %" PRIu64 " events read, only %" PRIu64 " written\n",
			     i, s->read, s->expected);
			continue;
		}
		uint64_t last = s->seen ? s->last_seq + 1 : 0;
		if (last < s->expected)
			add_run(s, last, s->expected - last, s->seen ? s->last_ticks : 0, UINT64_MAX);
		missing += s->expected - s->read;
		for (size_t r = 0; r < s->nr_runs; r++) {
			bool covered = false;
			for (size_t g = 0; g < nr_gaps && !covered; g++)
				covered = gaps[g].ticks_before <= s->runs[r].ticks_after &&
					  gaps[g].ticks_after >= s->runs[r].ticks_before;
			if (!covered)
				uncovered += s->runs[r].count;
		}
	}
	printf("check_stress: %" PRIu64 " events read of %" PRIu64 " written; %" PRIu64
	       " missing; %" PRIu64 " discarded, %" PRIu64 " packets lost in %zu gaps\n",
	       n, expected, missing, discarded, packets_lost, nr_gaps);
	if (!overwrite) {
		if (packets_lost)
			FAIL("discard mode lost %" PRIu64 " packets\n", packets_lost);
		if (missing != discarded)
			FAIL("%" PRIu64 " events missing but %" PRIu64 " counted as discarded\n",
			     missing, discarded);
	} else if (uncovered > discarded) {
		FAIL("%" PRIu64 " missing events fall outside every lost-packet window and "
		     "only %" PRIu64 " were counted as discarded\n", uncovered, discarded);
	}
	if (n == 0)
		FAIL("the trace holds no event\n");
	rtr_close(t);
	printf("check_stress: %s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
