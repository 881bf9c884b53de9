/*
 * test_ringbuffer.c - the lockless per-CPU ring buffer (src/ringbuffer)
 * through its API: rb_create, rb_reserve/rb_commit (inline fast path and
 * slow path), rb_get_subbuf/rb_put_subbuf, rb_flush_cpu, rb_attach, and
 * the reader's rb_skip_stuck, rb_snapshot_range/rb_snapshot_copy and
 * packet sequence numbers.
 *
 * Every single-threaded test runs in four variants: rseq mode and
 * SMP-atomic mode, each with counters starting at 0 and just below 2^64
 * (so that they wrap during the test). The test thread is pinned to CPU 0,
 * so every event lands in CPU 0's buffer.
 *
 * The client is a fake: a 64-byte packet header written by the
 * subbuf_begin/subbuf_end callbacks (which also log their arguments), a
 * clock that returns a counter the test advances, and events made of an
 * 8-byte compact or 16-byte full header followed by a payload that holds
 * the event id, its timestamp and a pattern derived from the id. A model
 * of the writer (position, last timestamp, reader position) predicts where
 * each event must land and which callbacks it must trigger.
 *
 * The multi-threaded test (2 writers + the reading main thread, which also
 * flushes now and then like the consumer's switch timer) prints one line
 * of counts per run. MT_DEBUG=1 in the environment dumps the counters of
 * every buffer at its end; MT_NOFLUSH=1 leaves out the reader's flushes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ringbuffer/rb_check.h"
#include "ringbuffer/ringbuffer_api.h"
#include "rt_test.h"
#include "unit.h"

/* ---- the ring buffer's invariant checks (rb_check.h) ---------------------
 * Compiled in here (RB_CHECKS=1): a broken invariant aborts the test,
 * except while a test damages shared memory on purpose, when the checks
 * that trip are counted instead (damage_begin / damage_end). */

#if !RB_CHECKS
#error "test_ringbuffer is built with the ring buffer's invariant checks (RB_CHECKS=1)"
#endif

static unsigned damage_trips;
static void (*default_hook)(const char *file, int line, const char *cond);

static void count_trip(const char *file, int line, const char *cond)
{
	(void)file;
	(void)line;
	(void)cond;
	damage_trips++;
}

static void damage_begin(void)
{
	damage_trips = 0;
	default_hook = rb_check_hook;
	rb_check_hook = count_trip;
}

/* The checks that tripped since damage_begin; the default hook again. */
static unsigned damage_end(void)
{
	rb_check_hook = default_hook;
	return damage_trips;
}

/* ---- the fake client ------------------------------------------------- */

#define PKT_MAGIC 0x31544b50u
#define HDR_SIZE 64u
#define EV_COMPACT 8u
#define EV_FULL 16u
#define EV_KIND_COMPACT 0xc0c0u
#define EV_KIND_FULL 0xf0f0u
#define MIN_PAYLOAD 16u

/* Opening fields (subbuf_begin): magic, cpu, seq, tsc_begin. Closing
 * fields (subbuf_end): tsc_end, data_size, lost, closed. The reader clears
 * the closing fields before it gives a sub-buffer back (clear_closing), so
 * that a packet delivered without its subbuf_end shows closed == 0; one
 * overwritten unread keeps stale closing fields, caught by the timestamps
 * (tsc_end older than tsc_begin or than its events). */
struct pkt_hdr {
	uint32_t magic;
	uint32_t cpu;
	uint64_t seq;
	uint64_t tsc_begin;
	uint64_t tsc_end;
	uint64_t data_size;
	uint64_t lost;
	uint64_t closed;	/* 1 once subbuf_end wrote it */
	uint64_t pad;
};

static void clear_closing(void *subbuf)
{
	struct pkt_hdr *h = subbuf;
	h->tsc_end = 0;
	h->data_size = 0;
	h->lost = UINT64_MAX;
	h->closed = 0;
}
_Static_assert(sizeof(struct pkt_hdr) == HDR_SIZE, "packet header size");

struct ev_hdr {
	uint32_t slot_size;
	uint32_t kind;
	uint64_t tsc;		/* full header only */
};

struct cb_rec {
	uint32_t cpu;
	void *sb;
	uint64_t tsc;
	uint64_t a;		/* begin: seq; end: data_size */
	uint64_t b;		/* end: lost */
};

#define LOG_MAX 16384
static struct cb_rec begins[LOG_MAX], ends[LOG_MAX];
static unsigned nbegin, nend;
static bool log_enabled = true;

static void cb_begin(void *priv, uint32_t cpu, void *subbuf, uint64_t tsc,
		     uint64_t seq)
{
	(void)priv;
	struct pkt_hdr *h = subbuf;
	/* The opening fields only: subbuf_end may already have run (see
	 * struct rb_client), and the closing fields are its. */
	h->magic = PKT_MAGIC;
	h->cpu = cpu;
	h->seq = seq;
	h->tsc_begin = tsc;
	if (!__atomic_load_n(&log_enabled, __ATOMIC_RELAXED))
		return;
	unsigned i = __atomic_fetch_add(&nbegin, 1, __ATOMIC_RELAXED);
	if (i < LOG_MAX)
		begins[i] = (struct cb_rec){ cpu, subbuf, tsc, seq, 0 };
}

/* Called (once) from inside the next subbuf_end callback: simulates a
 * signal handler that traces while the interrupted writer is between its
 * reservation and the end of its sub-buffer switch. */
static void (*end_hook)(void);

static void cb_end(void *priv, uint32_t cpu, void *subbuf, uint64_t tsc,
		   uint64_t data_size, uint64_t lost)
{
	(void)priv;
	void (*hook)(void) = end_hook;
	if (hook) {
		end_hook = NULL;
		hook();
	}
	struct pkt_hdr *h = subbuf;
	h->tsc_end = tsc;
	h->data_size = data_size;
	h->lost = lost;
	h->closed = 1;
	if (!__atomic_load_n(&log_enabled, __ATOMIC_RELAXED))
		return;
	unsigned i = __atomic_fetch_add(&nend, 1, __ATOMIC_RELAXED);
	if (i < LOG_MAX)
		ends[i] = (struct cb_rec){ cpu, subbuf, tsc, data_size, lost };
}

static uint64_t fake_now;
static uint64_t fake_clock(void)
{
	return __atomic_load_n(&fake_now, __ATOMIC_RELAXED);
}

/* Multi-threaded clock: strictly increasing across threads. */
static uint64_t mt_now;
static uint64_t mt_clock(void)
{
	return __atomic_add_fetch(&mt_now, 1, __ATOMIC_SEQ_CST);
}

static uint8_t pattern(uint64_t id, uint32_t i)
{
	return (uint8_t)(id * 131 + i * 7 + (id >> 8));
}

/* ---- variants ---------------------------------------------------------- */

struct variant {
	const char *name;
	bool rseq;
	bool near_wrap;
};

static const struct variant variants[] = {
	{ "rseq/start0", true, false },
	{ "rseq/near2^64", true, true },
	{ "atomic/start0", false, false },
	{ "atomic/near2^64", false, true },
};

static char case_buf[200];
static void set_case(const struct variant *v, const char *test)
{
	snprintf(case_buf, sizeof(case_buf), "%s %s", v ? v->name : "-", test);
	unit_case = case_buf;
}

/* ---- the world: buffer + writer model ---------------------------------- */

#define MAXSEQ 4096

struct world {
	struct rb rb;
	const struct variant *v;
	uint64_t S;
	uint32_t N;
	uint32_t tsc_bits;
	enum rb_mode mode;
	uint64_t start;		/* counters' initial value */
	/* writer model, relative to start */
	uint64_t pos;		/* bytes reserved */
	uint64_t last_tsc;	/* timestamp of the last reservation */
	uint64_t rpos;		/* reader position (discard mode prediction) */
	uint64_t next_id;	/* id of the next successful event */
	/* per packet seq (writer side) */
	uint64_t first_id[MAXSEQ];
	uint64_t nev[MAXSEQ];
	uint64_t used[MAXSEQ];	/* data_size at close, 0 = open */
	/* reader side */
	char *prev_end;		/* end of the last slot reserved */
	uint64_t held_seq;	/* packet with an uncommitted slot, or ~0 */
	bool closed;		/* rb_close_cpu since the last rb_reopen */
	uint64_t next_seq;	/* seq the reader expects next (discard) */
	uint64_t lost_seen;	/* events_lost as last seen by the model */
};

static void reset_logs(void)
{
	nbegin = nend = 0;
}

/* Writers' accounts of the next world_init's buffer (ringbuffer.h). */
static uint32_t world_accts;

static int world_init(struct world *w, const struct variant *v,
		      enum rb_mode mode, uint64_t S, uint32_t N,
		      uint32_t tsc_bits)
{
	memset(w, 0, sizeof(*w));
	w->v = v;
	w->S = S;
	w->N = N;
	w->tsc_bits = tsc_bits;
	w->mode = mode;
	uint64_t buf = S * N;
	struct rb_config cfg = {
		.subbuf_size = S,
		.num_subbuf = N,
		.nr_cpus = 2,
		.mode = mode,
		.tsc_bits = tsc_bits,
		.subbuf_header_size = HDR_SIZE,
		.initial_count = v->near_wrap ? UINT64_MAX - 3 * buf + 1 : 0,
		.use_rseq = v->rseq,
		.nr_accts = world_accts,
	};
	struct rb_client cl = {
		.subbuf_begin = cb_begin,
		.subbuf_end = cb_end,
		.clock_read = fake_clock,
		.priv = w,
	};
	int ret = rb_create(&w->rb, &cfg, &cl);
	CHECK(ret == 0, "rb_create: %d", ret);
	if (ret)
		return ret;
	CHECK(w->rb.rseq == v->rseq, "rb->rseq is %d, wanted %d", w->rb.rseq,
	      v->rseq);
	w->start = v->near_wrap ? (uint64_t)0 - 3 * buf : 0;
	CHECK_EQ(w->rb.initial_count, w->start);
	reset_logs();
	w->held_seq = UINT64_MAX;
	fake_now = 1000;
	w->last_tsc = 0;
	return 0;
}

static void world_fini(struct world *w)
{
	rb_destroy(&w->rb);
}

static struct rb_cpu_ctl *ctl0(struct world *w)
{
	return rb_cpu(&w->rb, 0);
}

/* CPU 0's own announced word: announced, or announced_smp in atomic
 * mode (ringbuffer.h). */
static uint64_t ann0(struct world *w)
{
	return w->rb.rseq ? ctl0(w)->announced : ctl0(w)->announced_smp;
}

static uint64_t events_lost0(struct world *w)
{
	struct rb_stats st;
	rb_get_stats(&w->rb, 0, &st);
	return st.events_lost;
}

/* The sub-buffer a pointer lies in, as its offset in CPU 0's data area
 * (checks the pointer is inside the area at all). */
static bool in_cpu0_data(struct world *w, const void *p, size_t len)
{
	const char *d = w->rb.data;
	const char *c = p;
	return c >= d && c + len <= d + w->rb.data_stride;
}

/* Fill an event's header and payload at ctx->r.addr. */
static void write_event(const struct rb_ctx *ctx, uint64_t id)
{
	char *p = ctx->r.addr;
	struct ev_hdr h = { ctx->slot_size,
			    ctx->full_tsc ? EV_KIND_FULL : EV_KIND_COMPACT,
			    ctx->r.tsc };
	uint32_t hl = ctx->full_tsc ? EV_FULL : EV_COMPACT;
	memcpy(p, &h, hl);
	char *pl = p + hl;
	uint32_t n = ctx->slot_size - hl;
	memcpy(pl, &id, 8);
	memcpy(pl + 8, &ctx->r.tsc, 8);
	for (uint32_t i = MIN_PAYLOAD; i < n; i++)
		pl[i] = (char)pattern(id, i);
}

/*
 * Reserve (and, if `commit`, write and commit) one event of `payload`
 * bytes at the current fake time, checking the result against the model:
 * return value, offset, address, header kind, and the callbacks the
 * reservation must have made. Returns rb_reserve's result; *out gets the
 * context (for a deferred commit).
 */
static int emit(struct world *w, uint32_t payload, bool commit,
		struct rb_ctx *out)
{
	const uint64_t S = w->S;
	uint64_t now = fake_clock();
	/* --- model prediction --- */
	uint64_t in = w->pos % S;
	bool full = ((now - w->last_tsc) >> w->tsc_bits) != 0;
	uint64_t slot = (uint64_t)(full ? EV_FULL : EV_COMPACT) + payload;
	uint64_t close_old = 0;	/* used size of the packet it closes */
	uint64_t begin = w->pos;
	if (in != 0 && in + slot > S) {
		close_old = in;
		begin = w->pos - in + S;
	}
	bool new_pkt = begin % S == 0;
	int exp_ret = 0;
	if (new_pkt) {
		full = false;
		slot = (uint64_t)EV_COMPACT + payload;
		if (HDR_SIZE + slot > S)
			exp_ret = -EMSGSIZE;
		else if (w->mode == RB_MODE_DISCARD &&
			 begin / S - w->rpos / S >= w->N)
			exp_ret = -ENOBUFS;
		else if (w->held_seq != UINT64_MAX &&
			 begin / S >= w->held_seq + w->N)
			exp_ret = -ENOBUFS;	/* equation (3) */
		else if (w->closed)
			exp_ret = -ESHUTDOWN;	/* rb_close_cpu */
	}
	uint64_t start = new_pkt ? begin + HDR_SIZE : begin;
	uint64_t end = start + slot;
	uint64_t seq = begin / S;

	unsigned b0 = nbegin, e0 = nend;
	uint64_t lost0 = events_lost0(w);
	uint64_t wc0 = ctl0(w)->write_count;
	struct rb_ctx ctx = { .payload_size = payload,
			      .hdr_compact = EV_COMPACT,
			      .hdr_full = EV_FULL };
	int ret = rb_reserve(&w->rb, &ctx, fake_clock);
	CHECK(ret == exp_ret, "reserve(%u) at +%lu: %d, model says %d", payload,
	      (unsigned long)w->pos, ret, exp_ret);
	if (out)
		*out = ctx;
	if (ret != 0) {
		CHECK_EQ(events_lost0(w), lost0 + 1);
		CHECK_EQ(ctl0(w)->write_count, wc0);
		CHECK(nbegin == b0 && nend == e0, "callbacks on a failed reserve");
		return ret;
	}
	if (exp_ret != 0) {
		/* unexpected success: commit the slot as it is, so that the
		 * buffer stays consistent, and resynchronise the model */
		rb_commit(&w->rb, &ctx);
		w->pos = ctl0(w)->write_count - w->start;
		w->prev_end = NULL;
		return ret;
	}
	uint64_t id = w->next_id++;
	CHECK_EQ(ctx.r.cpu, 0);
	CHECK_EQ(ctx.r.offset, w->start + start);
	CHECK_EQ(ctx.slot_size, slot);
	CHECK_EQ(ctx.r.tsc, now);
	CHECK(ctx.full_tsc == full, "full_tsc %d, model %d (delta %lu)",
	      ctx.full_tsc, full, (unsigned long)(now - w->last_tsc));
	CHECK_EQ(ctl0(w)->write_count, w->start + end);
	CHECK(in_cpu0_data(w, ctx.r.addr, slot), "slot outside CPU 0's data");
	CHECK_EQ((uint64_t)(ctx.r.addr - w->rb.data) % S, start % S);
	if (!new_pkt && w->prev_end)
		CHECK(ctx.r.addr == w->prev_end,
		      "slot at +%lu does not follow the previous one",
		      (unsigned long)start);
	/* callbacks */
	unsigned want_b = new_pkt, want_e = (close_old != 0) + (end % S == 0);
	CHECK(nbegin - b0 == want_b && nend - e0 == want_e,
	      "reserve at +%lu: %u begin/%u end callbacks, want %u/%u",
	      (unsigned long)w->pos, nbegin - b0, nend - e0, want_b, want_e);
	if (nbegin - b0 == want_b && nend - e0 == want_e) {
		unsigned ei = e0;
		if (close_old) {
			CHECK_EQ(ends[ei].a, close_old);
			CHECK_EQ(ends[ei].tsc, now);
			CHECK_EQ(ends[ei].b, lost0);
			CHECK_EQ(ends[ei].cpu, 0);
			CHECK(((struct pkt_hdr *)ends[ei].sb)->seq == seq - 1,
			      "closed packet is not the previous one");
			ei++;
		}
		if (new_pkt) {
			CHECK_EQ(begins[b0].a, seq);
			CHECK_EQ(begins[b0].tsc, now);
			CHECK_EQ(begins[b0].cpu, 0);
			CHECK(begins[b0].sb == ctx.r.addr - HDR_SIZE,
			      "event not right after the packet header");
		}
		if (end % S == 0) {
			CHECK_EQ(ends[ei].a, S);
			CHECK(ends[ei].sb == ctx.r.addr + slot - S,
			      "END_SWITCH_CURRENT closed another sub-buffer");
		}
	}
	/* model update */
	if (close_old && (seq - 1) < MAXSEQ)
		w->used[seq - 1] = close_old;
	if (new_pkt && seq < MAXSEQ) {
		w->first_id[seq] = id;
		w->nev[seq] = 0;
		w->used[seq] = 0;
	}
	if (seq < MAXSEQ) {
		w->nev[seq]++;
		if (end % S == 0)
			w->used[seq] = S;
	}
	w->pos = end;
	w->last_tsc = now;
	w->prev_end = ctx.r.addr + slot;
	if (commit) {	/* else the caller commits with commit_event() */
		write_event(&ctx, id);
		rb_commit(&w->rb, &ctx);
	}
	return 0;
}

/* Deferred commit of an event emitted with commit=false; `id` is the
 * model's next_id just before that emit(). */
static void commit_event(struct world *w, const struct rb_ctx *ctx, uint64_t id)
{
	write_event(ctx, id);
	rb_commit(&w->rb, ctx);
}

/* Model update for a flush that closes the open packet. */
static void model_flush(struct world *w)
{
	uint64_t in = w->pos % w->S;
	if (in == 0)
		return;
	uint64_t seq = w->pos / w->S;
	if (seq < MAXSEQ)
		w->used[seq] = in;
	w->pos += w->S - in;
}

/* Parsed packet. */
struct pkt {
	uint64_t seq, data_size, lost, tsc_begin, tsc_end;
	uint64_t first_id, nev, last_tsc;
	bool ok;
};

/*
 * Check one packet's bytes: header, then events back to back up to
 * data_size, each with a valid header, its id, timestamp and pattern;
 * ids consecutive, timestamps non-decreasing and within the packet's.
 */
static bool parse_packet(struct world *w, const char *data, struct pkt *p)
{
	const struct pkt_hdr *h = (const struct pkt_hdr *)data;
	memset(p, 0, sizeof(*p));
	bool ok = true;
	ok &= CHECK(h->magic == PKT_MAGIC, "packet magic %#x", h->magic);
	ok &= CHECK(h->closed == 1, "packet never closed by subbuf_end");
	ok &= CHECK(h->data_size >= HDR_SIZE && h->data_size <= w->S,
		    "packet data_size %lu", (unsigned long)h->data_size);
	if (!ok)
		return false;
	p->seq = h->seq;
	p->data_size = h->data_size;
	p->lost = h->lost;
	p->tsc_begin = h->tsc_begin;
	p->tsc_end = h->tsc_end;
	p->last_tsc = h->tsc_begin;
	uint64_t off = HDR_SIZE;
	while (off < h->data_size) {
		struct ev_hdr eh;
		memcpy(&eh, data + off, sizeof(eh));
		uint32_t hl = eh.kind == EV_KIND_FULL ? EV_FULL : EV_COMPACT;
		if (!CHECK((eh.kind == EV_KIND_FULL || eh.kind == EV_KIND_COMPACT) &&
				   eh.slot_size >= hl + MIN_PAYLOAD &&
				   off + eh.slot_size <= h->data_size,
			   "packet %lu: bad event at %lu (kind %#x size %u)",
			   (unsigned long)h->seq, (unsigned long)off, eh.kind,
			   eh.slot_size))
			return false;
		const char *pl = data + off + hl;
		uint64_t id, tsc;
		memcpy(&id, pl, 8);
		memcpy(&tsc, pl + 8, 8);
		if (p->nev == 0)
			p->first_id = id;
		else
			ok &= CHECK(id == p->first_id + p->nev,
				    "packet %lu: event id %lu after %lu",
				    (unsigned long)h->seq, (unsigned long)id,
				    (unsigned long)(p->first_id + p->nev - 1));
		if (eh.kind == EV_KIND_FULL)
			ok &= CHECK(eh.tsc == tsc, "full header tsc mismatch");
		ok &= CHECK(tsc >= p->last_tsc, "timestamp goes back in packet");
		p->last_tsc = tsc;
		uint32_t n = eh.slot_size - hl, bad = 0;
		for (uint32_t i = MIN_PAYLOAD; i < n; i++)
			bad += (uint8_t)pl[i] != pattern(id, i);
		ok &= CHECK(bad == 0, "event %lu: %u payload bytes corrupt",
			    (unsigned long)id, bad);
		p->nev++;
		off += eh.slot_size;
	}
	ok &= CHECK(off == h->data_size, "events overrun data_size");
	ok &= CHECK(h->tsc_end >= p->last_tsc && h->tsc_end >= h->tsc_begin,
		    "packet %lu ends (%lu) before its last event or its begin",
		    (unsigned long)h->seq, (unsigned long)h->tsc_end);
	p->ok = ok;
	return ok;
}

/* Compare a packet with what the writer model put there. */
static void check_against_model(struct world *w, const struct pkt *p)
{
	if (p->seq >= MAXSEQ)
		return;
	CHECK_EQ(p->nev, w->nev[p->seq]);
	if (p->nev && w->nev[p->seq])
		CHECK_EQ(p->first_id, w->first_id[p->seq]);
	CHECK_EQ(p->data_size, w->used[p->seq]);
}

/*
 * Take one sub-buffer of CPU 0, check it, give it back. Returns
 * rb_get_subbuf's result; *p gets the packet.
 */
static int read_one(struct world *w, struct pkt *p)
{
	struct rb_read r;
	int ret = rb_get_subbuf(&w->rb, 0, &r);
	if (ret)
		return ret;
	uint64_t rel = r.count - w->start;
	CHECK(rel % w->S == 0, "read_count not at a sub-buffer start");
	CHECK_EQ(r.data_size, w->S);
	CHECK_EQ(r.seq, rel / w->S);
	CHECK_EQ(rb_packet_seq(&w->rb, r.count), rel / w->S);
	CHECK(in_cpu0_data(w, r.data, w->S), "reader's sub-buffer outside data");
	struct pkt tmp;
	if (!p)
		p = &tmp;
	if (parse_packet(w, r.data, p)) {
		CHECK_EQ(p->seq, rel / w->S);
		check_against_model(w, p);
	}
	clear_closing(r.data);
	rb_put_subbuf(&w->rb, 0, &r);
	w->rpos = rel + w->S;
	return 0;
}

/* Read everything readable, checking the sequence. Returns the count. */
static unsigned drain(struct world *w)
{
	unsigned n = 0;
	struct pkt p;
	while (read_one(w, &p) == 0) {
		if (w->mode == RB_MODE_DISCARD)
			CHECK_EQ(p.seq, w->next_seq);
		else
			CHECK(p.seq >= w->next_seq, "seq %lu after %lu",
			      (unsigned long)p.seq, (unsigned long)w->next_seq);
		w->next_seq = p.seq + 1;
		n++;
		if (n > 100000)
			break;
	}
	return n;
}

static uint32_t sizes[] = { 16, 17, 24, 100, 333, 1000, 31, 64, 2040, 55, 512, 16, 7 * 128 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* ---- tests --------------------------------------------------------------- */

/* Creation: geometry validation and the rounding of initial_count. */
static void test_create(void)
{
	set_case(NULL, "create");
	struct rb rb;
	struct rb_client cl = { cb_begin, cb_end, fake_clock, NULL };
	struct rb_config ok = { 4096, 4, 2, RB_MODE_DISCARD, 27, HDR_SIZE, 0, false, 0 };
	struct rb_config c;
	c = ok; c.subbuf_size = 4096 + 1;
	CHECK_EQ(rb_create(&rb, &c, &cl), (uint64_t)-EINVAL);
	c = ok; c.subbuf_size = 2048;
	CHECK_EQ(rb_create(&rb, &c, &cl), (uint64_t)-EINVAL);
	c = ok; c.num_subbuf = 3;
	CHECK_EQ(rb_create(&rb, &c, &cl), (uint64_t)-EINVAL);
	c = ok; c.num_subbuf = 1;
	CHECK_EQ(rb_create(&rb, &c, &cl), (uint64_t)-EINVAL);
	c = ok; c.nr_cpus = 0;
	CHECK_EQ(rb_create(&rb, &c, &cl), (uint64_t)-EINVAL);
	c = ok; c.tsc_bits = 0;
	CHECK_EQ(rb_create(&rb, &c, &cl), (uint64_t)-EINVAL);
	c = ok; c.subbuf_header_size = 2048;
	CHECK_EQ(rb_create(&rb, &c, &cl), (uint64_t)-EINVAL);
	/* initial_count is rounded down to a multiple of the buffer size */
	uint64_t buf = 4096 * 4;
	const uint64_t reqs[] = { UINT64_MAX - 3 * buf + 1, UINT64_MAX,
				  UINT64_MAX - 3 * buf + 100, 5 * buf + 4095, 12345 };
	const uint64_t want[] = { (uint64_t)0 - 3 * buf, (uint64_t)0 - buf,
				  (uint64_t)0 - 3 * buf, 5 * buf, 0 };
	for (int i = 0; i < 5; i++) {
		c = ok;
		c.initial_count = reqs[i];
		CHECK_EQ(rb_create(&rb, &c, &cl), 0);
		CHECK_EQ(rb.initial_count, want[i]);
		CHECK_EQ(rb.shm->initial_count, want[i]);
		CHECK_EQ(rb_cpu(&rb, 1)->write_count, want[i]);
		CHECK_EQ(rb_cpu(&rb, 1)->read_count, want[i]);
		struct rb_stats st;
		rb_get_stats(&rb, 1, &st);
		CHECK(st.bytes_reserved == 0 && st.bytes_consumed == 0 &&
			      st.events_lost == 0 && st.subbufs_lost == 0,
		      "fresh stats not zero");
		struct rb_read r;
		CHECK_EQ(rb_get_subbuf(&rb, 0, &r), (uint64_t)-EAGAIN);
		rb_destroy(&rb);
	}
	c = ok;
	c.use_rseq = true;
	CHECK_EQ(rb_create(&rb, &c, &cl), 0);
	CHECK(rb.rseq, "rseq mode not available (rb_rseq_usable() = %d): "
		       "rseq variants would only test the atomic mode",
	      rb_rseq_usable());
	CHECK(rb.shm->flags & RB_SHM_F_RSEQ, "RB_SHM_F_RSEQ not set");
	/* Sealed at its size: nobody can truncate it under a mapping. */
	CHECK_EQ(rb_check_sealed(rb.fd), 0);
	CHECK(ftruncate(rb.fd, 0) < 0 && errno == EPERM, "a buffer set's memfd shrank");
	CHECK(ftruncate(rb.fd, (off_t)rb.map_size * 2) < 0 && errno == EPERM,
	      "a buffer set's memfd grew");
	CHECK(fcntl(rb.fd, F_ADD_SEALS, F_SEAL_WRITE) < 0 && errno == EPERM,
	      "seals can still change");
	rb_destroy(&rb);
	int plain = memfd_create("unsealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	CHECK(plain >= 0, "memfd_create: %s", strerror(errno));
	CHECK_EQ(rb_check_sealed(plain), (uint64_t)-EPERM);
	CHECK(fcntl(plain, F_ADD_SEALS, F_SEAL_SHRINK) == 0, "F_ADD_SEALS failed");
	CHECK_EQ(rb_check_sealed(plain), (uint64_t)-EPERM);
	CHECK(fcntl(plain, F_ADD_SEALS, F_SEAL_GROW) == 0, "F_ADD_SEALS failed");
	CHECK_EQ(rb_check_sealed(plain), 0);
	close(plain);
}

/*
 * Events of many sizes through several laps of the buffer (wrapping the
 * counters in the near-2^64 variants), read back as we go, in discard and
 * overwrite mode (the reader keeps up, so nothing is lost).
 */
static void test_basic(const struct variant *v, enum rb_mode mode)
{
	set_case(v, mode == RB_MODE_DISCARD ? "basic/discard" : "basic/overwrite");
	struct world *w = calloc(1, sizeof(*w));
	if (world_init(w, v, mode, 4096, 4, 27) != 0) {
		free(w);
		return;
	}
	/* nothing to read yet; flushing an empty buffer does nothing */
	CHECK_EQ(drain(w), 0);
	CHECK_EQ(rb_flush_cpu(&w->rb, 0, false), 0);
	CHECK_EQ(rb_flush_cpu(&w->rb, 0, true), 0);
	CHECK(nbegin == 0 && nend == 0, "flush of an empty buffer made packets");
	unsigned i = 0;
	/* 6 laps of 4 sub-buffers */
	while (w->pos < 6 * 4 * w->S) {
		fake_now += 1 + i % 3;
		emit(w, sizes[i % NSIZES], true, NULL);
		i++;
		if (i % 7 == 0)
			drain(w);
	}
	drain(w);
	/* the open packet: flush it, read it */
	uint64_t open_seq = w->pos / w->S;
	uint64_t in = w->pos % w->S;
	unsigned e0 = nend;
	CHECK_EQ(rb_flush_cpu(&w->rb, 0, false), 0);
	model_flush(w);
	CHECK_EQ(nend, e0 + (in != 0));
	if (in)
		CHECK_EQ(ends[e0].a, in);
	CHECK_EQ(drain(w), in != 0);
	CHECK_EQ(w->next_seq, open_seq + (in != 0));
	/* the begin callbacks had seq 0, 1, 2, ... */
	unsigned bad = 0;
	for (unsigned k = 0; k < nbegin && k < LOG_MAX; k++)
		bad += begins[k].a != k;
	CHECK(bad == 0, "%u subbuf_begin calls out of sequence", bad);
	CHECK_EQ(nbegin, w->next_seq);
	CHECK_EQ(nend, w->next_seq);
	struct rb_stats st;
	rb_get_stats(&w->rb, 0, &st);
	CHECK_EQ(st.events_lost, 0);
	CHECK_EQ(st.subbufs_lost, 0);
	CHECK_EQ(st.bytes_reserved, w->pos);
	CHECK_EQ(st.bytes_consumed, w->pos);
	/* the other CPU's buffer was never touched */
	rb_get_stats(&w->rb, 1, &st);
	CHECK(st.bytes_reserved == 0 && st.events_lost == 0, "CPU 1 touched");
	/* counters did wrap in the near-2^64 variant */
	if (v->near_wrap)
		CHECK(ctl0(w)->write_count < w->start, "write_count did not wrap");
	world_fini(w);
	free(w);
}

/* No holes: a sub-buffer with a reserved, uncommitted slot is not
 * readable; the commit makes it readable. */
static void test_no_holes(const struct variant *v, enum rb_mode mode)
{
	set_case(v, mode == RB_MODE_DISCARD ? "no-holes/discard" : "no-holes/overwrite");
	struct world *w = calloc(1, sizeof(*w));
	if (world_init(w, v, mode, 4096, 4, 27) != 0) {
		free(w);
		return;
	}
	/* move near the wrap point of the counters first: 2 laps */
	while (w->pos < 2 * 4 * w->S + 3 * w->S) {
		fake_now++;
		emit(w, 200, true, NULL);
		drain(w);
	}
	drain(w);
	/* an uncommitted slot in the middle of a sub-buffer */
	fake_now++;
	emit(w, 100, true, NULL);
	struct rb_ctx held;
	uint64_t held_id = w->next_id;
	fake_now++;
	CHECK_EQ(emit(w, 300, false, &held), 0);
	uint64_t held_seq = (held.r.offset - w->start) / w->S;
	/* fill the rest of that sub-buffer and half of the next */
	while (w->pos / w->S == held_seq || w->pos % w->S < w->S / 2) {
		fake_now++;
		emit(w, 150, true, NULL);
	}
	struct rb_read r;
	CHECK_EQ(rb_get_subbuf(&w->rb, 0, &r), (uint64_t)-EAGAIN);
	CHECK_EQ(rb_get_subbuf(&w->rb, 0, &r), (uint64_t)-EAGAIN);
	/* a flush of the following (open) packet does not help either */
	CHECK_EQ(rb_flush_cpu(&w->rb, 0, false), 0);
	model_flush(w);
	CHECK_EQ(rb_get_subbuf(&w->rb, 0, &r), (uint64_t)-EAGAIN);
	/* commit: both packets become readable, in order */
	commit_event(w, &held, held_id);
	CHECK_EQ(drain(w), 2);
	CHECK_EQ(w->next_seq, held_seq + 2);

	/* An uncommitted slot in the open packet: the flush closes the
	 * packet but it is readable only after the commit. */
	fake_now++;
	emit(w, 50, true, NULL);
	held_id = w->next_id;
	CHECK_EQ(emit(w, 60, false, &held), 0);
	fake_now++;
	emit(w, 70, true, NULL);
	CHECK_EQ(rb_flush_cpu(&w->rb, 0, false), 0);
	model_flush(w);
	CHECK_EQ(rb_get_subbuf(&w->rb, 0, &r), (uint64_t)-EAGAIN);
	commit_event(w, &held, held_id);
	CHECK_EQ(drain(w), 1);

	/* An uncommitted exact-fit slot: subbuf_end already ran, the packet
	 * is still not readable until the commit. */
	fake_now++;
	emit(w, 100, true, NULL);
	uint32_t rest = (uint32_t)(w->S - w->pos % w->S) - EV_COMPACT;
	held_id = w->next_id;
	CHECK_EQ(emit(w, rest, false, &held), 0);
	CHECK_EQ(w->pos % w->S, 0);
	CHECK_EQ(rb_get_subbuf(&w->rb, 0, &r), (uint64_t)-EAGAIN);
	commit_event(w, &held, held_id);
	CHECK_EQ(drain(w), 1);
	world_fini(w);
	free(w);
}

/* END_SWITCH_CURRENT: events ending exactly at the sub-buffer boundary. */
static void test_exact_fit(const struct variant *v, enum rb_mode mode)
{
	set_case(v, mode == RB_MODE_DISCARD ? "exact-fit/discard" : "exact-fit/overwrite");
	struct world *w = calloc(1, sizeof(*w));
	if (world_init(w, v, mode, 4096, 4, 27) != 0) {
		free(w);
		return;
	}
	for (int lap = 0; lap < 20; lap++) {
		/* a few events, then one that fills the rest exactly */
		for (int k = 0; k < lap % 4; k++) {
			fake_now++;
			emit(w, 100 + 10 * (uint32_t)k, true, NULL);
		}
		uint64_t in = w->pos % w->S;
		uint32_t rest = (uint32_t)(w->S - (in ? in : HDR_SIZE)) - EV_COMPACT;
		fake_now++;
		unsigned e0 = nend;
		CHECK_EQ(emit(w, rest, true, NULL), 0);
		CHECK_EQ(w->pos % w->S, 0);
		CHECK(nend == e0 + 1 && ends[e0].a == w->S,
		      "exact fit did not close the packet with used == S");
		/* readable at once, no flush needed */
		struct pkt p;
		CHECK_EQ(read_one(w, &p), 0);
		CHECK_EQ(p.data_size, w->S);
		w->next_seq = p.seq + 1;
		/* a flush now finds an empty sub-buffer */
		e0 = nend;
		CHECK_EQ(rb_flush_cpu(&w->rb, 0, false), 0);
		CHECK_EQ(nend, e0);
	}
	/* one byte too many for a fresh packet */
	fake_now++;
	CHECK_EQ(emit(w, (uint32_t)(w->S - HDR_SIZE - EV_COMPACT + 1), true, NULL),
		 (uint64_t)-EMSGSIZE);
	world_fini(w);
	free(w);
}

/*
 * Overwrite mode, a slot left uncommitted while the writer laps the
 * buffer: the writer must not enter that sub-buffer's next pass
 * (equation (3), "would overflow"): events are dropped until the commit,
 * the packet with the slot is delivered intact, and writing resumes.
 */
static void test_lap_uncommitted(const struct variant *v)
{
	set_case(v, "lap-uncommitted");
	struct world *w = calloc(1, sizeof(*w));
	if (world_init(w, v, RB_MODE_OVERWRITE, 4096, 4, 27) != 0) {
		free(w);
		return;
	}
	while (w->pos < 5 * w->S + 1000) {
		fake_now++;
		emit(w, 150, true, NULL);
		drain(w);
	}
	struct rb_ctx held;
	uint64_t held_id = w->next_id;
	fake_now++;
	CHECK_EQ(emit(w, 120, false, &held), 0);
	uint64_t h = w->pos / w->S;
	w->held_seq = h;
	int ret = 0;
	unsigned n = 0;
	while (ret == 0 && n++ < 10000) {
		fake_now++;
		ret = emit(w, 150, true, NULL);
	}
	CHECK_EQ(ret, (uint64_t)-ENOBUFS);
	CHECK_EQ(w->pos / w->S, h + w->N - 1);
	for (int k = 0; k < 5; k++) {
		fake_now++;
		CHECK_EQ(emit(w, 150, true, NULL), (uint64_t)-ENOBUFS);
	}
	CHECK_EQ(events_lost0(w), 6);
	struct rb_read r;
	CHECK_EQ(rb_get_subbuf(&w->rb, 0, &r), (uint64_t)-EAGAIN);
	/* commit: the packet is complete, readable and intact */
	commit_event(w, &held, held_id);
	w->held_seq = UINT64_MAX;
	struct pkt p;
	CHECK_EQ(read_one(w, &p), 0);
	CHECK_EQ(p.seq, h);
	w->next_seq = h + 1;
	/* writing resumes; the reader follows */
	for (int k = 0; k < 200; k++) {
		fake_now++;
		CHECK_EQ(emit(w, 150, true, NULL), 0);
		drain(w);
	}
	CHECK_EQ(events_lost0(w), 6);
	world_fini(w);
	free(w);
}

/*
 * A commit made after the committing thread migrated to another CPU (rseq
 * mode: the local add aborts and the bytes go to committed_remote) still
 * completes the sub-buffer. In atomic mode it is just another commit.
 */
static void test_migrated_commit(const struct variant *v)
{
	set_case(v, "migrated-commit");
	if (!rt_test_cpu_usable(1)) {
		printf("%s: skipped, needs CPU 1 (the commit migrates to it)\n", unit_case);
		return;
	}
	struct world *w = calloc(1, sizeof(*w));
	if (world_init(w, v, RB_MODE_OVERWRITE, 4096, 4, 27) != 0) {
		free(w);
		return;
	}
	for (int round = 0; round < 6; round++) {
		fake_now++;
		emit(w, 100, true, NULL);
		struct rb_ctx held;
		uint64_t held_id = w->next_id;
		fake_now++;
		CHECK_EQ(emit(w, 200, false, &held), 0);
		uint64_t h = w->pos / w->S;
		while (w->pos / w->S == h) {
			fake_now++;
			emit(w, 300, true, NULL);
		}
		uint64_t remote0 = ctl0(w)->committed_remote;
		uint64_t local0 = ctl0(w)->committed;
		CHECK(ann0(w) != local0 + remote0, "the held slot is announced");
		struct rb_read r;
		CHECK_EQ(rb_get_subbuf(&w->rb, 0, &r), (uint64_t)-EAGAIN);
		rt_test_pin_cpu(1);
		commit_event(w, &held, held_id);
		rt_test_pin_cpu(0);
		if (v->rseq) {
			CHECK_EQ(ctl0(w)->committed_remote - remote0,
				 held.slot_size);
			CHECK_EQ(ctl0(w)->committed, local0);
		}
		CHECK_EQ(ann0(w), ctl0(w)->committed + ctl0(w)->committed_remote);
		struct pkt p;
		CHECK_EQ(read_one(w, &p), 0);
		CHECK_EQ(p.seq, h);
		w->next_seq = h + 1;
	}
	world_fini(w);
	free(w);
}

/*
 * Announced work is counted per CPU: while a slot is reserved and not yet
 * committed, no sub-buffer that write_count left since completes (the
 * reader gets nothing, commit_seq stays); the slot's commit completes them
 * all, and they read back in order with the held event in its place.
 */
static void test_held_slot(const struct variant *v, enum rb_mode mode)
{
	set_case(v, mode == RB_MODE_DISCARD ? "held-slot-discard" : "held-slot-overwrite");
	struct world *w = calloc(1, sizeof(*w));
	if (world_init(w, v, mode, 4096, 8, 27) != 0) {
		free(w);
		return;
	}
	fake_now++;
	emit(w, 100, true, NULL);
	struct rb_ctx held;
	uint64_t held_id = w->next_id;
	fake_now++;
	CHECK_EQ(emit(w, 200, false, &held), 0);
	uint64_t h = w->pos / w->S;
	while (w->pos / w->S < h + 3) {
		fake_now++;
		emit(w, 300, true, NULL);
	}
	struct rb_read r;
	CHECK_EQ(rb_get_subbuf(&w->rb, 0, &r), (uint64_t)-EAGAIN);
	for (uint64_t k = h; k < h + 3; k++) {
		uint64_t off = w->rb.initial_count + k * w->S;
		uint32_t idx = rb_subbuf_index(&w->rb, off);
		CHECK(ctl0(w)->sb[idx].commit_seq != rb_ctx_target(&w->rb, off),
		      "packet %lu completed before the held slot's commit", (unsigned long)k);
	}
	commit_event(w, &held, held_id);
	for (uint64_t k = h; k < h + 3; k++) {
		uint64_t off = w->rb.initial_count + k * w->S;
		uint32_t idx = rb_subbuf_index(&w->rb, off);
		CHECK_EQ(ctl0(w)->sb[idx].commit_seq, rb_ctx_target(&w->rb, off));
	}
	CHECK_EQ(ann0(w), ctl0(w)->committed + ctl0(w)->committed_remote);
	for (uint64_t k = h; k < h + 3; k++) {
		struct pkt p;
		CHECK_EQ(read_one(w, &p), 0);
		CHECK_EQ(p.seq, k);
	}
	world_fini(w);
	free(w);
}

/* rb_void_dead's callback: only account 1's owner is gone. */
static bool only_acct1_gone(void *arg, uint32_t acct)
{
	(*(unsigned *)arg)++;
	return acct == 1;
}

/*
 * Dead writers: program A (account 1) dies with a slot reserved, program
 * B (account 2) fills three more sub-buffers, which wait behind A's slot.
 * rb_void_dead voids A's work (B's is never voided, even outstanding),
 * the sub-buffer A's slot is in is given up and counted, not read; B's
 * three and its next packet are read whole.
 */
static void test_dead_writer(const struct variant *v, enum rb_mode mode)
{
	set_case(v, mode == RB_MODE_DISCARD ? "dead-writer/discard" : "dead-writer/overwrite");
	struct world *w = calloc(1, sizeof(*w));
	world_accts = 2;
	int ret = world_init(w, v, mode, 4096, 8, 27);
	world_accts = 0;
	if (ret != 0) {
		free(w);
		return;
	}
	CHECK_EQ(rb_use_acct(&w->rb, 3), (uint64_t)-EINVAL);
	CHECK_EQ(rb_use_acct(&w->rb, 1), 0);
	fake_now++;
	emit(w, 100, true, NULL);
	struct rb_ctx held;
	fake_now++;
	CHECK_EQ(emit(w, 200, false, &held), 0);
	CHECK_EQ(rb_acct_outstanding(&w->rb, 0, 1), held.slot_size);
	uint64_t h = w->pos / w->S;
	CHECK_EQ(rb_use_acct(&w->rb, 2), 0);
	while (w->pos / w->S < h + 3) {
		fake_now++;
		emit(w, 300, true, NULL);
	}
	struct rb_ctx b_held;
	fake_now++;
	CHECK_EQ(emit(w, 40, false, &b_held), 0);
	struct rb_read r;
	CHECK_EQ(rb_get_subbuf(&w->rb, 0, &r), (uint64_t)-EAGAIN);
	unsigned calls = 0;
	CHECK_EQ(rb_void_dead(&w->rb, 0, only_acct1_gone, &calls), 1);
	CHECK(calls == 2, "gone asked %u times, want 2 (the accounts with work)", calls);
	CHECK_EQ(rb_acct_outstanding(&w->rb, 0, 1), 0);
	CHECK_EQ(rb_acct_outstanding(&w->rb, 0, 2), b_held.slot_size);
	/* B's slot still holds the last sub-buffer (closed by the void's
	 * flush) up; once committed, only A's packet (the one its slot is
	 * in: its account's out_from and out_to) is given up, never read;
	 * B's packets after it are read whole. */
	model_flush(w);
	uint64_t lost0 = ctl0(w)->subbufs_lost;
	commit_event(w, &b_held, w->next_id - 1);
	w->next_seq = h + 1;
	CHECK_EQ(drain(w), w->pos / w->S - h - 1);
	CHECK_EQ(ctl0(w)->subbufs_lost - lost0, 1);
	CHECK_EQ(ctl0(w)->read_count, w->rb.initial_count + w->pos);
	calls = 0;
	CHECK_EQ(rb_void_dead(&w->rb, 0, only_acct1_gone, &calls), 0);
	CHECK_EQ(calls, 0);
	/* B goes on: its next packet is read, whole. */
	w->rpos = w->pos;
	w->next_seq = w->pos / w->S;
	fake_now++;
	emit(w, 100, true, NULL);
	CHECK_EQ(rb_flush_cpu(&w->rb, 0, false), 0);
	model_flush(w);
	CHECK_EQ(drain(w), 1);
	world_fini(w);
	free(w);
}

static void close_dead_hung(int sig)
{
	(void)sig;
	static const char m[] = "FAIL: rb_close_dead still running after 20 s "
				"(damaged read_count)\n";
	(void)!write(2, m, sizeof(m) - 1);
	_exit(1);
}

/*
 * rb_close_dead (recover, on a copy of a buffer file: untrusted) with a
 * writer dead in an event and read_count damaged: ahead of write_count,
 * or far behind it. It returns (-EAGAIN, nothing changed) instead of
 * walking up to 2^64 / S passes; intact, it cuts at the dead slot.
 */
static void test_close_dead_damaged(const struct variant *v, enum rb_mode mode)
{
	set_case(v, mode == RB_MODE_DISCARD ? "close-dead-damaged/discard"
					    : "close-dead-damaged/overwrite");
	const int64_t moves[] = { 0, 10, -(1LL << 40) };
	for (size_t k = 0; k < sizeof(moves) / sizeof(moves[0]); k++) {
		struct world *w = calloc(1, sizeof(*w));
		if (world_init(w, v, mode, 4096, 8, 27) != 0) {
			free(w);
			return;
		}
		for (int i = 0; i < 10; i++) {
			fake_now++;
			emit(w, 100, true, NULL);
		}
		struct rb_ctx held;
		fake_now++;
		CHECK_EQ(emit(w, 200, false, &held), 0);
		struct rb_cpu_ctl *c = ctl0(w);
		c->read_count += (uint64_t)moves[k] * w->S;
		uint64_t wc = c->write_count, out = 0;
		signal(SIGALRM, close_dead_hung);
		alarm(20);
		int r = rb_close_dead(&w->rb, 0, &out);
		alarm(0);
		signal(SIGALRM, SIG_DFL);
		CHECK_EQ(out, held.slot_size);
		if (moves[k] == 0) {
			CHECK_EQ(r, 0);
			CHECK_EQ(c->events_lost, 1);
		} else {
			CHECK_EQ(r, (uint64_t)-EAGAIN);
			CHECK_EQ(c->write_count, wc);
			CHECK_EQ(c->events_lost, 0);
		}
		world_fini(w);
		free(w);
	}
}

/* Oversized events are refused and counted, from any position. */
static void test_oversize(const struct variant *v)
{
	set_case(v, "oversize");
	struct world *w = calloc(1, sizeof(*w));
	if (world_init(w, v, RB_MODE_DISCARD, 4096, 4, 27) != 0) {
		free(w);
		return;
	}
	fake_now++;
	CHECK_EQ(emit(w, 5000, true, NULL), (uint64_t)-EMSGSIZE);
	CHECK_EQ(emit(w, 4096, true, NULL), (uint64_t)-EMSGSIZE);
	CHECK_EQ(events_lost0(w), 2);
	emit(w, 100, true, NULL);
	CHECK_EQ(emit(w, (uint32_t)(w->S - HDR_SIZE - EV_COMPACT + 1), true, NULL),
		 (uint64_t)-EMSGSIZE);
	CHECK_EQ(emit(w, UINT32_MAX - 64, true, NULL), (uint64_t)-EMSGSIZE);
	CHECK_EQ(events_lost0(w), 4);
	fake_now++;
	emit(w, 200, true, NULL);
	CHECK_EQ(rb_flush_cpu(&w->rb, 0, false), 0);
	model_flush(w);
	struct pkt p;
	CHECK_EQ(read_one(w, &p), 0);
	CHECK_EQ(p.nev, 2);
	CHECK_EQ(p.lost, 4);
	world_fini(w);
	free(w);
}

/*
 * The sub-buffer table and the hot word live in memory another process can write (the
 * daemon, other programs of a per-user buffer): whatever it holds, no
 * writer and no reader may touch memory outside the CPU's sub-buffers.
 */
static void test_corrupt_table(const struct variant *v)
{
	set_case(v, "corrupt table");
	struct world *w = calloc(1, sizeof(*w));
	if (world_init(w, v, RB_MODE_OVERWRITE, 4096, 4, 27) != 0) {
		free(w);
		return;
	}
	struct rb_cpu_ctl *c = ctl0(w);
	unsigned written = 0, refused = 0;
	damage_begin();
	for (uint32_t round = 0; round < 4 * 4 * 40; round++) {
		for (uint32_t i = 0; i < w->N; i++)
			c->sb[i].table = RB_TABLE_MAKE(0xfffffff0u - i - round,
						       round & RB_TABLE_TAG_MASK, round & 1);
		if (round % 7 == 0)
			c->reader_subbuf = 0xfffffff0u;
		/* The fast path's hot word: this sub-buffer's start with an
		 * offset past the buffers, or garbage. */
		if (round % 3 == 0) {
			c->hot_tag = RB_HOT_TAG(c->write_count, w->S);
			c->hot_off = w->rb.fast.off_max + 1 + round;
		} else if (round % 3 == 1) {
			c->hot_tag = 0x9e3779b97f4a7c15ULL * (round + 1);
			c->hot_off = 0x7f4a7c159e3779b9ULL * (round + 1);
		}
		fake_now++;
		struct rb_ctx ctx = { .payload_size = 100, .hdr_compact = EV_COMPACT,
				      .hdr_full = EV_FULL };
		if (rb_reserve(&w->rb, &ctx, fake_clock) == 0) {
			CHECK(in_cpu0_data(w, ctx.r.addr, ctx.slot_size),
			      "round %u: slot outside the buffer", round);
			write_event(&ctx, round);
			rb_commit(&w->rb, &ctx);
			written++;
		}
		if (round % 5 == 0) {
			/* What the reader wants next, with a bad index. */
			uint64_t rc = c->read_count;
			c->sb[(rc >> w->rb.geom.sbfbits) & (w->N - 1)].table =
				RB_TABLE_MAKE(0xfffffff0u,
					      (rc >> w->rb.geom.bfbits) & RB_TABLE_TAG_MASK, 0);
		}
		struct rb_read rd;
		int g = rb_get_subbuf(&w->rb, 0, &rd);
		if (g == 0) {
			CHECK(in_cpu0_data(w, rd.data, w->S),
			      "round %u: sub-buffer handed out outside the buffer", round);
			rb_put_subbuf(&w->rb, 0, &rd);
		} else {
			refused += g == -EIO;
		}
		if (round % 7 == 0)
			c->reader_subbuf = w->N;
	}
	CHECK(written > 0, "no event could be written");
	CHECK(refused > 0, "the reader never noticed the corrupted table");
	/* the invariant checks saw the damage too (table indexes in range) */
	CHECK(damage_end() > 0, "no invariant check tripped on a damaged table");
	world_fini(w);
	free(w);
}

/*
 * The fast path trusts the CPU's hot word (ringbuffer.h) only for the
 * sub-buffer number it carries: after the reader has exchanged
 * sub-buffers (physical != logical), a stale word naming the previous
 * sub-buffer and another physical index must not redirect a slot, and
 * the slow path that then runs stores the right word again. Atomic
 * mode's fast path reads the sub-buffer table: the stale word must not
 * redirect it either.
 */
static void test_hot_word(const struct variant *v)
{
	set_case(v, "hot word");
	struct world *w = calloc(1, sizeof(*w));
	if (world_init(w, v, RB_MODE_OVERWRITE, 4096, 4, 27) != 0) {
		free(w);
		return;
	}
	struct rb_cpu_ctl *c = ctl0(w);
	const uint32_t sbf = w->rb.geom.sbfbits;
	unsigned moved = 0;	/* rounds checked with physical != logical */
	for (int round = 0; round < 24; round++) {
		/* A few packets, the reader taking some (each take swaps its
		 * spare in), then at least one event in the open packet. No
		 * model here: the test looks at addresses only. */
		for (int i = 0; i < 31; i++) {
			fake_now++;
			struct rb_ctx e = { .payload_size = 150 + 40 * (uint32_t)(round % 3),
					    .hdr_compact = EV_COMPACT, .hdr_full = EV_FULL };
			if (rb_reserve(&w->rb, &e, fake_clock) == 0) {
				write_event(&e, (uint64_t)i);
				rb_commit(&w->rb, &e);
			}
			struct rb_read rd;
			if (round % 2 && rb_get_subbuf(&w->rb, 0, &rd) == 0)
				rb_put_subbuf(&w->rb, 0, &rd);
		}
		uint64_t wc = c->write_count;
		if ((wc & (w->S - 1)) == 0)
			continue;
		uint32_t idx = (uint32_t)(wc >> sbf) & (w->N - 1);
		uint32_t phys = RB_TABLE_IDX(c->sb[idx].table);
		CHECK(c->hot_tag == RB_HOT_TAG(wc, w->S) && c->hot_off == (uint64_t)phys << sbf,
		      "round %d: hot word %#lx %#lx, want sub-buffer %#lx in %u", round,
		      (unsigned long)c->hot_tag, (unsigned long)c->hot_off,
		      (unsigned long)RB_HOT_TAG(wc, w->S), phys);
		uint32_t other = (phys + 1 + (uint32_t)round % w->N) % (w->N + 1);
		c->hot_tag = RB_HOT_TAG(wc - w->S, w->S);
		c->hot_off = (uint64_t)other << sbf;
		fake_now++;
		struct rb_ctx ctx = { .payload_size = 64, .hdr_compact = EV_COMPACT,
				      .hdr_full = EV_FULL };
		if (rb_reserve(&w->rb, &ctx, fake_clock) != 0)
			continue;
		const char *want = w->rb.cpus[0].data + ((size_t)phys << sbf);
		if (ctx.r.offset == wc) {
			moved += phys != idx;
			CHECK(ctx.r.addr == want + (wc & (w->S - 1)),
			      "round %d: slot at %+ld, want %+ld (physical %u, not %u)",
			      round, (long)(ctx.r.addr - w->rb.cpus[0].data),
			      (long)(want + (wc & (w->S - 1)) - w->rb.cpus[0].data),
			      phys, other);
			/* Atomic mode's fast path reads the table, not the
			 * hot word (and stores none). */
			CHECK(!v->rseq || (c->hot_tag == RB_HOT_TAG(wc, w->S) &&
					   c->hot_off == (uint64_t)phys << sbf),
			      "round %d: the slow path did not store the hot word", round);
		}
		write_event(&ctx, 1000);
		rb_commit(&w->rb, &ctx);
	}
	CHECK(moved > 0, "the reader never exchanged a sub-buffer");
	world_fini(w);
	free(w);
}

/*
 * A payload size so large that header + payload does not fit in 32 bits
 * must be refused like any oversized event, in the middle of a packet
 * (the inline fast path) as well as at its start.
 */
static void test_slot_overflow(const struct variant *v)
{
	set_case(v, "slot-size-overflow");
	struct world *w = calloc(1, sizeof(*w));
	if (world_init(w, v, RB_MODE_DISCARD, 4096, 4, 27) != 0) {
		free(w);
		return;
	}
	fake_now++;
	CHECK_EQ(emit(w, UINT32_MAX - 3, true, NULL), (uint64_t)-EMSGSIZE);
	emit(w, 100, true, NULL);
	uint64_t wc = ctl0(w)->write_count;
	struct rb_ctx ctx = { .payload_size = UINT32_MAX - 3,
			      .hdr_compact = EV_COMPACT,
			      .hdr_full = EV_FULL };
	fake_now++;
	int ret = rb_reserve(&w->rb, &ctx, fake_clock);
	CHECK(ret == -EMSGSIZE,
	      "payload 2^32-4 (slot 2^32+4) in mid-packet: rb_reserve = %d, "
	      "slot_size %u, write_count advanced by %lu", ret, ctx.slot_size,
	      (unsigned long)(ctl0(w)->write_count - wc));
	if (ret == 0)
		rb_commit(&w->rb, &ctx);	/* nothing written: no overrun */
	CHECK_EQ(events_lost0(w), 2);
	world_fini(w);
	free(w);
}

/*
 * A writer that switches sub-buffers (switch_old then switch_new) is
 * interrupted after its reservation - here from inside the subbuf_end
 * callback of the old packet, as a signal handler could - and the nested
 * writer fills the new packet and moves on to the next one, which closes
 * the new packet (subbuf_end) before the interrupted writer has run
 * subbuf_begin on it (the callbacks run in no fixed order, struct
 * rb_client). Every packet must still reach the reader only once both
 * callbacks ran: opening and closing fields both there, data_size as given
 * to subbuf_end, events of both writers intact. The same window is hit by
 * rb_flush_cpu from the consumer (nest_flush), or in atomic mode by a
 * writer or a flush on another CPU (seen in the multi-threaded test).
 */
static struct world *nest_w;
static uint64_t nest_id;
static void nest_writer(void)
{
	struct world *w = nest_w;
	for (int k = 0; k < 1000; k++) {
		struct rb_ctx ctx = { .payload_size = 200,
				      .hdr_compact = EV_COMPACT,
				      .hdr_full = EV_FULL };
		fake_now++;
		if (rb_reserve(&w->rb, &ctx, fake_clock) != 0)
			break;
		write_event(&ctx, nest_id++);
		rb_commit(&w->rb, &ctx);
		if ((ctx.r.offset - w->start) / w->S >= 2)
			break;	/* packet 1 closed by us */
	}
}

/* The consumer's switch timer flushing the CPU at that moment. */
static void nest_flush(void)
{
	CHECK_EQ(rb_flush_cpu(&nest_w->rb, 0, false), 0);
}

/* The nested tests' world: 4 sub-buffers of 4096 bytes, packet 0
 * almost full; nest_w is it. NULL if it could not be made. */
static struct world *nest_world(const struct variant *v, enum rb_mode mode)
{
	struct world *w = calloc(1, sizeof(*w));
	if (world_init(w, v, mode, 4096, 4, 27) != 0) {
		free(w);
		return NULL;
	}
	while (w->pos % w->S < w->S - 300) {
		fake_now++;
		emit(w, 200, true, NULL);
	}
	nest_w = w;
	return w;
}

static void test_nested_switch(const struct variant *v, enum rb_mode mode,
			       bool flush)
{
	char name[64];
	snprintf(name, sizeof(name), "nested-%s/%s",
		 flush ? "flush" : "writer",
		 mode == RB_MODE_DISCARD ? "discard" : "overwrite");
	set_case(v, name);
	struct world *w = nest_world(v, mode);
	if (!w)
		return;
	nest_id = 1000000;
	end_hook = flush ? nest_flush : nest_writer;
	struct rb_ctx ctx = { .payload_size = 400,
			      .hdr_compact = EV_COMPACT,
			      .hdr_full = EV_FULL };
	fake_now++;
	int ret = rb_reserve(&w->rb, &ctx, fake_clock);
	CHECK_EQ(ret, 0);
	CHECK(end_hook == NULL, "the switch did not call subbuf_end");
	end_hook = NULL;
	if (ret == 0) {
		CHECK_EQ(ctx.r.offset - w->start, w->S + HDR_SIZE);
		write_event(&ctx, 999999);	/* just before the nested ids */
		rb_commit(&w->rb, &ctx);
	}
	CHECK_EQ(rb_flush_cpu(&w->rb, 0, false), 0);
	/* what subbuf_end was told, per packet */
	uint64_t told[3] = { 0, 0, 0 };
	for (unsigned k = 0; k < nend && k < LOG_MAX; k++) {
		uint64_t seq = ((struct pkt_hdr *)ends[k].sb)->seq;
		if (seq < 3)
			told[seq] = ends[k].a;
	}
	for (uint64_t seq = 0; seq < (flush ? 2u : 3u); seq++) {
		struct rb_read r;
		ret = rb_get_subbuf(&w->rb, 0, &r);
		CHECK(ret == 0, "packet %lu not readable: %d", (unsigned long)seq, ret);
		if (ret)
			break;
		const struct pkt_hdr *h = (const struct pkt_hdr *)r.data;
		CHECK_EQ(r.count - w->start, seq * w->S);
		CHECK_EQ(h->seq, seq);
		CHECK(h->closed == 1 && h->data_size == told[seq] &&
			      h->data_size > HDR_SIZE,
		      "packet %lu read with closed=%lu data_size=%lu (subbuf_end "
		      "said %lu)",
		      (unsigned long)seq, (unsigned long)h->closed,
		      (unsigned long)h->data_size, (unsigned long)told[seq]);
		/* both callbacks ran before it was complete, and the events
		 * of the interrupted and the nested writer are all there */
		struct pkt p;
		if (parse_packet(w, r.data, &p) && seq == 1)
			CHECK(p.first_id == 999999 &&
				      (flush ? p.nev == 1 : p.nev > 1),
			      "packet 1: first event %lu, %lu events",
			      (unsigned long)p.first_id, (unsigned long)p.nev);
		rb_put_subbuf(&w->rb, 0, &r);
	}
	world_fini(w);
	free(w);
}

/*
 * A reservation that must open the next sub-buffer reads write_count,
 * then the clock, then that sub-buffer's commit count (equation (3)) and
 * read_count (equation (1)). When other writers fill and complete that
 * sub-buffer in between (the thread was preempted there, or a signal
 * handler recorded: stale_clock runs a nested writer inside the clock
 * read), equation (3) fails on a write_count that is no longer current:
 * the reservation must retry from the new write_count, not drop the
 * event (it did, counted as discarded: integration_record's Strings
 * test saw a third discarded event about once in 7 runs under load).
 */
static uint64_t stale_clock(void)
{
	nest_w->rb.client.clock_read = fake_clock;
	nest_writer();
	return fake_clock();
}

static void test_stale_switch(const struct variant *v, enum rb_mode mode)
{
	set_case(v, mode == RB_MODE_DISCARD ? "stale-switch/discard" : "stale-switch/overwrite");
	struct world *w = nest_world(v, mode);
	if (!w)
		return;
	nest_id = w->next_id;	/* ids go on: packets 0 to 2 each consecutive */
	w->rb.client.clock_read = stale_clock;
	struct rb_ctx ctx = { .payload_size = 400,
			      .hdr_compact = EV_COMPACT,
			      .hdr_full = EV_FULL };
	fake_now++;
	uint64_t lost0 = events_lost0(w);
	int ret = rb_reserve(&w->rb, &ctx, fake_clock);
	CHECK(w->rb.client.clock_read == fake_clock, "the slow path did not read the clock");
	w->rb.client.clock_read = fake_clock;
	CHECK_EQ(ret, 0);
	CHECK_EQ(events_lost0(w), lost0);
	if (ret == 0) {
		/* after the nested writer's events, in packet 2 */
		CHECK_EQ((ctx.r.offset - w->start) / w->S, 2);
		write_event(&ctx, nest_id);
		rb_commit(&w->rb, &ctx);
	}
	CHECK_EQ(rb_flush_cpu(&w->rb, 0, false), 0);
	/* every packet intact, the nested writer's events then ours */
	for (uint64_t seq = 0; seq < 3; seq++) {
		struct rb_read r;
		ret = rb_get_subbuf(&w->rb, 0, &r);
		CHECK(ret == 0, "packet %lu not readable: %d", (unsigned long)seq, ret);
		if (ret)
			break;
		struct pkt p;
		if (parse_packet(w, r.data, &p)) {
			CHECK_EQ(p.seq, seq);
			CHECK_EQ(p.lost, lost0);
			if (seq == 2)
				CHECK_EQ(p.first_id + p.nev - 1, nest_id);
		}
		rb_put_subbuf(&w->rb, 0, &r);
	}
	world_fini(w);
	free(w);
}

/* Discard mode: a full buffer drops events and counts them; reading one
 * sub-buffer lets writing resume; the count is in the next packet. */
static void test_discard_full(const struct variant *v)
{
	set_case(v, "discard-full");
	struct world *w = calloc(1, sizeof(*w));
	if (world_init(w, v, RB_MODE_DISCARD, 4096, 4, 27) != 0) {
		free(w);
		return;
	}
	/* near the wrap: first move 2 laps, reading */
	while (w->pos < 2 * 4 * w->S + 2 * w->S + 100) {
		fake_now++;
		emit(w, 300, true, NULL);
		drain(w);
	}
	drain(w);
	uint64_t base_seq = w->next_seq;	/* first unread packet */
	/* fill without reading until an event is dropped */
	int ret = 0;
	unsigned written = 0;
	while (ret == 0) {
		fake_now++;
		ret = emit(w, 300, true, NULL);
		written += ret == 0;
		if (written > 10000)
			break;
	}
	CHECK_EQ(ret, (uint64_t)-ENOBUFS);
	/* the writer stopped in the 4th unread sub-buffer */
	CHECK_EQ(w->pos / w->S, base_seq + 3);
	uint64_t wc = ctl0(w)->write_count;
	for (int k = 0; k < 9; k++) {
		fake_now++;
		CHECK_EQ(emit(w, 300, true, NULL), (uint64_t)-ENOBUFS);
	}
	CHECK_EQ(events_lost0(w), 10);
	CHECK_EQ(ctl0(w)->write_count, wc);
	/* a smaller event still fits in what is left of the open packet */
	uint32_t left = (uint32_t)(w->S - w->pos % w->S);
	if (left >= EV_COMPACT + MIN_PAYLOAD) {
		fake_now++;
		CHECK_EQ(emit(w, left - EV_COMPACT, true, NULL), 0);
		/* that one ended exactly at the boundary: packet closed */
		CHECK_EQ(ends[nend - 1].b, 10);
	}
	/* read one sub-buffer: the write resumes */
	struct pkt p;
	CHECK_EQ(read_one(w, &p), 0);
	CHECK_EQ(p.seq, base_seq);
	CHECK_EQ(p.lost, 0);
	w->next_seq = p.seq + 1;
	fake_now++;
	unsigned e0 = nend;
	CHECK_EQ(emit(w, 300, true, NULL), 0);
	/* the packet closed by that switch carries the lost count */
	if (nend > e0)
		CHECK_EQ(ends[e0].b, 10);
	/* the other packets: lost 0 except the last closed one */
	unsigned n = 0;
	while (read_one(w, &p) == 0) {
		CHECK_EQ(p.seq, w->next_seq);
		w->next_seq = p.seq + 1;
		CHECK_EQ(p.lost, p.seq == base_seq + 3 ? 10 : 0);
		n++;
	}
	CHECK_EQ(n, 3);
	world_fini(w);
	free(w);
}

/*
 * Discard mode, final flush when the buffer is full and the writer sits at
 * a sub-buffer boundary after losing events: the header-only packet can
 * only be written once the reader made room, and then carries the count.
 */
static void test_final_flush_full(const struct variant *v)
{
	set_case(v, "final-flush-full");
	struct world *w = calloc(1, sizeof(*w));
	if (world_init(w, v, RB_MODE_DISCARD, 4096, 4, 27) != 0) {
		free(w);
		return;
	}
	/* 4 packets filled exactly (one exact-fit event each) */
	uint32_t one = (uint32_t)(w->S - HDR_SIZE - EV_COMPACT);
	for (int k = 0; k < 4; k++) {
		fake_now++;
		CHECK_EQ(emit(w, one, true, NULL), 0);
	}
	fake_now++;
	CHECK_EQ(emit(w, 100, true, NULL), (uint64_t)-ENOBUFS);
	CHECK_EQ(events_lost0(w), 1);
	/* the final flush cannot open a packet now */
	unsigned b0 = nbegin, e0 = nend;
	int ret = rb_flush_cpu(&w->rb, 0, true);
	CHECK_EQ(ret, (uint64_t)-EAGAIN);
	CHECK(nbegin == b0 && nend == e0, "packet made in a full buffer");
	/* the failed flush is not an event: it must not count as lost */
	CHECK(events_lost0(w) == 1,
	      "rb_flush_cpu(final) on a full buffer counted %lu phantom lost events",
	      (unsigned long)(events_lost0(w) - 1));
	ret = rb_flush_cpu(&w->rb, 0, true);
	CHECK_EQ(ret, (uint64_t)-EAGAIN);
	uint64_t lost_now = events_lost0(w);
	/* read one: now the header-only packet is written */
	CHECK_EQ(read_one(w, NULL), 0);
	w->next_seq = 1;
	fake_now++;
	CHECK_EQ(rb_flush_cpu(&w->rb, 0, true), 0);
	CHECK(nbegin == b0 + 1 && nend == e0 + 1,
	      "final flush: %u begin/%u end, want 1/1", nbegin - b0, nend - e0);
	if (nbegin == b0 + 1 && nend == e0 + 1) {
		CHECK_EQ(begins[b0].a, 4);
		CHECK_EQ(ends[e0].a, HDR_SIZE);
		CHECK_EQ(ends[e0].b, lost_now);
	}
	w->used[4] = HDR_SIZE;
	w->nev[4] = 0;
	w->pos = 5 * w->S;
	CHECK_EQ(drain(w), 4);
	/* nothing more to report: the next final flush does nothing */
	b0 = nbegin;
	CHECK_EQ(rb_flush_cpu(&w->rb, 0, true), 0);
	CHECK_EQ(nbegin, b0);
	world_fini(w);
	free(w);
}

/* rb_flush_cpu on a partial / empty sub-buffer, and final flush with
 * losses at a boundary (not full). */
static void test_flush(const struct variant *v, enum rb_mode mode)
{
	set_case(v, mode == RB_MODE_DISCARD ? "flush/discard" : "flush/overwrite");
	struct world *w = calloc(1, sizeof(*w));
	if (world_init(w, v, mode, 4096, 4, 27) != 0) {
		free(w);
		return;
	}
	for (int round = 0; round < 30; round++) {
		/* round%5 events (0 = empty) then flush */
		int n = round % 5;
		for (int k = 0; k < n; k++) {
			fake_now++;
			emit(w, 40 + 50 * (uint32_t)k, true, NULL);
		}
		uint64_t in = w->pos % w->S;
		unsigned b0 = nbegin, e0 = nend;
		fake_now += 5;
		CHECK_EQ(rb_flush_cpu(&w->rb, 0, round % 2 == 0), 0);
		model_flush(w);
		CHECK_EQ(nbegin, b0);
		CHECK_EQ(nend, e0 + (in != 0));
		if (in) {
			CHECK_EQ(ends[e0].a, in);
			CHECK_EQ(ends[e0].tsc, fake_now);
			CHECK_EQ(ends[e0].b, 0);
		}
		/* flushed twice: nothing more */
		CHECK_EQ(rb_flush_cpu(&w->rb, 0, false), 0);
		CHECK_EQ(nend, e0 + (in != 0));
		CHECK_EQ(drain(w), in != 0);
		struct rb_read r;
		CHECK_EQ(rb_get_subbuf(&w->rb, 0, &r), (uint64_t)-EAGAIN);
	}
	/* losses at a boundary (an oversized event right after a flush),
	 * then a final flush: a header-only packet with the count */
	fake_now++;
	CHECK_EQ(emit(w, 8000, true, NULL), (uint64_t)-EMSGSIZE);
	CHECK_EQ(emit(w, 8000, true, NULL), (uint64_t)-EMSGSIZE);
	unsigned b0 = nbegin, e0 = nend;
	/* non-final flush ignores the losses */
	CHECK_EQ(rb_flush_cpu(&w->rb, 0, false), 0);
	CHECK(nbegin == b0 && nend == e0, "non-final flush made a packet");
	fake_now += 10;
	CHECK_EQ(rb_flush_cpu(&w->rb, 0, true), 0);
	CHECK(nbegin == b0 + 1 && nend == e0 + 1,
	      "final flush with losses: %u begin/%u end", nbegin - b0, nend - e0);
	uint64_t seq = w->pos / w->S;
	if (nbegin == b0 + 1 && nend == e0 + 1) {
		CHECK_EQ(begins[b0].a, seq);
		CHECK_EQ(ends[e0].a, HDR_SIZE);
		CHECK_EQ(ends[e0].b, 2);
		CHECK(ends[e0].sb == begins[b0].sb, "header-only packet split");
	}
	if (seq < MAXSEQ) {
		w->used[seq] = HDR_SIZE;
		w->nev[seq] = 0;
	}
	w->pos += w->S;
	w->last_tsc = fake_now;	/* the header-only reservation took a tsc */
	struct pkt p;
	CHECK_EQ(read_one(w, &p), 0);
	CHECK_EQ(p.seq, seq);
	CHECK_EQ(p.nev, 0);
	CHECK_EQ(p.lost, 2);
	w->next_seq = seq + 1;
	/* reported: the next final flush does nothing */
	b0 = nbegin;
	CHECK_EQ(rb_flush_cpu(&w->rb, 0, true), 0);
	CHECK_EQ(nbegin, b0);
	/* events after it go on normally */
	fake_now++;
	emit(w, 100, true, NULL);
	CHECK_EQ(rb_flush_cpu(&w->rb, 0, true), 0);
	model_flush(w);
	CHECK_EQ(drain(w), 1);
	/* flushing another CPU's (empty) buffer works too */
	CHECK_EQ(rb_flush_cpu(&w->rb, 1, true), 0);
	CHECK_EQ(rb_flush_cpu(&w->rb, 2, true), (uint64_t)-EINVAL);
	world_fini(w);
	free(w);
}

/* rb_close_cpu (exact stop): the open packet is closed, a reservation
 * after it is refused and counted as discarded, which the next close
 * reports in a header-only packet; rb_reopen lets writers in again. */
static void test_close(const struct variant *v, enum rb_mode mode)
{
	set_case(v, mode == RB_MODE_DISCARD ? "close/discard" : "close/overwrite");
	struct world *w = calloc(1, sizeof(*w));
	if (world_init(w, v, mode, 4096, 4, 27) != 0) {
		free(w);
		return;
	}
	fake_now++;
	CHECK_EQ(emit(w, 100, true, NULL), 0);
	unsigned b0 = nbegin, e0 = nend;
	fake_now += 5;
	CHECK_EQ(rb_close_cpu(&w->rb, 0), 0);
	w->closed = true;
	model_flush(w);
	CHECK(nbegin == b0 && nend == e0 + 1, "close: %u begin/%u end, want 0/1",
	      nbegin - b0, nend - e0);
	CHECK_EQ(drain(w), 1);
	/* refused (emit checks: nothing reserved, no callback, one lost) */
	fake_now++;
	CHECK_EQ(emit(w, 100, true, NULL), (uint64_t)-ESHUTDOWN);
	CHECK_EQ(emit(w, 200, true, NULL), (uint64_t)-ESHUTDOWN);
	CHECK_EQ(events_lost0(w), 2);
	/* closing again (a drain flushes until it settles) reports them in
	 * a header-only packet, its own reservation not refused */
	b0 = nbegin;
	e0 = nend;
	fake_now += 10;
	CHECK_EQ(rb_close_cpu(&w->rb, 0), 0);
	CHECK(nbegin == b0 + 1 && nend == e0 + 1, "close with losses: %u begin/%u end",
	      nbegin - b0, nend - e0);
	uint64_t seq = w->pos / w->S;
	if (seq < MAXSEQ) {
		w->used[seq] = HDR_SIZE;
		w->nev[seq] = 0;
	}
	w->pos += w->S;
	w->last_tsc = fake_now;
	struct pkt p;
	CHECK_EQ(read_one(w, &p), 0);
	CHECK_EQ(p.nev, 0);
	CHECK_EQ(p.lost, 2);
	w->next_seq = seq + 1;
	/* still closed */
	fake_now++;
	CHECK_EQ(emit(w, 100, true, NULL), (uint64_t)-ESHUTDOWN);
	CHECK_EQ(events_lost0(w), 3);
	/* reopened: recorded again, the count in the next packet */
	rb_reopen(&w->rb);
	w->closed = false;
	fake_now++;
	CHECK_EQ(emit(w, 100, true, NULL), 0);
	CHECK_EQ(rb_flush_cpu(&w->rb, 0, false), 0);
	model_flush(w);
	CHECK_EQ(read_one(w, &p), 0);
	CHECK_EQ(p.nev, 1);
	CHECK_EQ(p.lost, 3);
	world_fini(w);
	free(w);
}

/* Timestamps: non-decreasing, full header on a jump >= 2^tsc_bits. */
static void test_timestamps(const struct variant *v)
{
	set_case(v, "timestamps");
	struct world *w = calloc(1, sizeof(*w));
	const uint32_t bits = 8;
	if (world_init(w, v, RB_MODE_DISCARD, 4096, 4, bits) != 0) {
		free(w);
		return;
	}
	const uint64_t deltas[] = { 0, 1, 255, 256, 257, 0, 1000, 1 << 20, 255,
				    3, 512, 0, 0, 254, 256 };
	uint64_t prev = 0;
	unsigned nfull = 0;
	for (unsigned i = 0; i < 600; i++) {
		uint64_t d = deltas[i % (sizeof(deltas) / sizeof(deltas[0]))];
		fake_now += d;
		struct rb_ctx ctx;
		bool at_boundary = w->pos % w->S == 0;
		uint32_t pl = sizes[i % NSIZES];
		bool would_cross = !at_boundary &&
				   w->pos % w->S + EV_FULL + pl > w->S;
		CHECK_EQ(emit(w, pl, true, &ctx), 0);
		CHECK(ctx.r.tsc >= prev, "tsc went back");
		prev = ctx.r.tsc;
		/* emit() checked full_tsc against the model; say it
		 * plainly for the jumps too */
		if (d >= (1u << bits) && !at_boundary && !would_cross)
			CHECK(ctx.full_tsc, "jump of %lu without full tsc",
			      (unsigned long)d);
		if (d < (1u << bits) && d > 0)
			CHECK(!ctx.full_tsc, "full tsc after a small delta %lu",
			      (unsigned long)d);
		nfull += ctx.full_tsc;
		drain(w);
	}
	CHECK(nfull > 50, "only %u full timestamps", nfull);
	/* slow path with a big jump: first event of a packet is compact */
	CHECK_EQ(rb_flush_cpu(&w->rb, 0, false), 0);
	model_flush(w);
	drain(w);
	fake_now += 1ULL << 40;
	struct rb_ctx ctx;
	CHECK_EQ(emit(w, 100, true, &ctx), 0);
	CHECK(!ctx.full_tsc, "first event of a packet has a full timestamp");
	fake_now += 1ULL << 40;
	CHECK_EQ(emit(w, 100, true, &ctx), 0);
	CHECK(ctx.full_tsc, "2^40 jump inside a packet: compact timestamp");
	world_fini(w);
	free(w);
}

/*
 * Atomic mode (ringbuffer.h, stamp): a reservation's timestamp is never
 * older than the one before it in the buffer, whatever the clock read
 * says (an unordered TSC read, on another CPU, may be older): a clock
 * read older than the pair's stamp is raised to it, with a compact
 * header (the delta is 0), on the fast path and on the slow path (the
 * first event of a packet, a flush); a clock that moves on again is
 * used as read. rseq mode records the clock as read.
 */
static void test_stamp(const struct variant *v)
{
	set_case(v, "stamp");
	if (v->rseq)
		return;
	struct world *w = calloc(1, sizeof(*w));
	if (world_init(w, v, RB_MODE_OVERWRITE, 4096, 4, 27) != 0) {
		free(w);
		return;
	}
	uint64_t prev = 0, raised = 0;
	for (unsigned i = 0; i < 400; i++) {
		/* Forward by 100, then back by 40 every third event. */
		fake_now += i % 3 == 2 ? (uint64_t)-40 : 100;
		struct rb_ctx ctx = { .payload_size = 100 + 8 * (i % 5),
				      .hdr_compact = EV_COMPACT, .hdr_full = EV_FULL };
		CHECK_EQ(rb_reserve(&w->rb, &ctx, fake_clock), 0);
		CHECK(ctx.r.tsc >= prev, "event %u: timestamp %lu after %lu", i,
		      (unsigned long)ctx.r.tsc, (unsigned long)prev);
		CHECK_EQ(ctx.r.tsc, fake_now > prev ? fake_now : prev);
		CHECK(!ctx.full_tsc, "event %u: full timestamp", i);
		CHECK_EQ(ctl0(w)->stamp, ctx.r.tsc);
		raised += ctx.r.tsc != fake_now;
		prev = ctx.r.tsc;
		write_event(&ctx, i);
		rb_commit(&w->rb, &ctx);
		if (i % 50 == 49) {
			/* A flush whose clock reads older: the packet's end
			 * is raised too, and the next event follows it. */
			fake_now -= 30;
			CHECK_EQ(rb_flush_cpu(&w->rb, 0, false), 0);
			CHECK_EQ(ctl0(w)->stamp, prev);
		}
		struct rb_read r;
		while (rb_get_subbuf(&w->rb, 0, &r) == 0)
			rb_put_subbuf(&w->rb, 0, &r);
	}
	CHECK(raised > 100, "only %lu timestamps raised", (unsigned long)raised);
	world_fini(w);
	free(w);
}

/*
 * Overwrite mode: the writer pushes the reader; the reader then gets the
 * newest complete sub-buffers in order. A sub-buffer the reader holds is
 * never written while the writer laps the buffer several times.
 */
static void test_overwrite(const struct variant *v)
{
	set_case(v, "overwrite");
	struct world *w = calloc(1, sizeof(*w));
	if (world_init(w, v, RB_MODE_OVERWRITE, 4096, 4, 27) != 0) {
		free(w);
		return;
	}
	const uint32_t N = w->N;
	/* 10.5 sub-buffers without reading */
	while (w->pos < 10 * w->S + w->S / 2) {
		fake_now++;
		CHECK_EQ(emit(w, 250, true, NULL), 0);
	}
	uint64_t W = w->pos / w->S;	/* open packet: 10 */
	struct rb_stats st;
	rb_get_stats(&w->rb, 0, &st);
	CHECK_EQ(st.subbufs_lost, W - (N - 1));
	CHECK_EQ(st.events_lost, 0);
	CHECK_EQ(st.bytes_consumed, (W - (N - 1)) * w->S);
	/* the reader gets W-3, W-2, W-1 */
	struct pkt p;
	for (uint64_t s = W - (N - 1); s < W; s++) {
		CHECK_EQ(read_one(w, &p), 0);
		CHECK_EQ(p.seq, s);
	}
	struct rb_read r;
	CHECK_EQ(rb_get_subbuf(&w->rb, 0, &r), (uint64_t)-EAGAIN);
	CHECK_EQ(rb_flush_cpu(&w->rb, 0, false), 0);
	model_flush(w);
	CHECK_EQ(read_one(w, &p), 0);
	CHECK_EQ(p.seq, W);
	w->next_seq = W + 1;

	/* hold a sub-buffer while the writer laps 3 times */
	while (w->pos < (W + 1) * w->S + 2 * w->S + 100) {
		fake_now++;
		emit(w, 180, true, NULL);
	}
	uint64_t hold_seq = W + 1;
	CHECK_EQ(rb_get_subbuf(&w->rb, 0, &r), 0);
	CHECK_EQ(r.count - w->start, hold_seq * w->S);
	char *snap = malloc(w->S);
	memcpy(snap, r.data, w->S);
	const char *held = r.data;
	unsigned inside = 0;
	uint64_t until = w->pos + 3 * N * w->S;
	while (w->pos < until) {
		fake_now++;
		struct rb_ctx ctx;
		if (emit(w, 200, true, &ctx) == 0)
			inside += ctx.r.addr + ctx.slot_size > held &&
				  ctx.r.addr < held + w->S;
		for (unsigned k = nbegin ? nbegin - 1 : 0; k < nbegin; k++)
			inside += begins[k].sb == held;
	}
	CHECK_EQ(inside, 0);
	CHECK(memcmp(snap, r.data, w->S) == 0,
	      "held sub-buffer modified while the writer lapped");
	struct pkt hp;
	if (parse_packet(w, r.data, &hp)) {
		CHECK_EQ(hp.seq, hold_seq);
		check_against_model(w, &hp);
	}
	rb_put_subbuf(&w->rb, 0, &r);	/* pushed meanwhile: a no-op */
	free(snap);
	/* the reader resumes at the newest complete sub-buffers */
	W = w->pos / w->S;
	rb_get_stats(&w->rb, 0, &st);
	CHECK_EQ(st.bytes_consumed, (W - (N - 1)) * w->S);
	unsigned n = 0;
	uint64_t first = 0, last = 0;
	while (read_one(w, &p) == 0) {
		if (n == 0)
			first = p.seq;
		else
			CHECK_EQ(p.seq, last + 1);
		last = p.seq;
		n++;
	}
	CHECK_EQ(n, N - 1);
	CHECK_EQ(first, W - (N - 1));
	CHECK_EQ(last, W - 1);
	/* packets never read were counted as lost sub-buffers */
	rb_get_stats(&w->rb, 0, &st);
	/* the reader advanced by itself over 4 packets (7..10); every other
	 * sub-buffer it moved past was a push, the held one included */
	CHECK_EQ(st.subbufs_lost, (W - (N - 1)) - 4);
	/* the reader and writer keep going normally after that */
	w->next_seq = last + 1;
	for (int k = 0; k < 100; k++) {
		fake_now++;
		emit(w, 300, true, NULL);
		drain(w);
	}
	world_fini(w);
	free(w);
}

/* rb_attach on the memfd mapping: valid and corrupted headers. */
static void test_attach(const struct variant *v)
{
	set_case(v, "attach");
	struct world *w = calloc(1, sizeof(*w));
	if (world_init(w, v, RB_MODE_OVERWRITE, 8192, 4, 27) != 0) {
		free(w);
		return;
	}
	size_t size = w->rb.map_size;
	void *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
			 w->rb.fd, 0);
	CHECK(map != MAP_FAILED, "mmap memfd");
	if (map == MAP_FAILED) {
		world_fini(w);
		free(w);
		return;
	}
	struct rb a;
	CHECK_EQ(rb_attach(&a, map, size), 0);
	CHECK_EQ(a.subbuf_size, 8192);
	CHECK_EQ(a.num_subbuf, 4);
	CHECK_EQ(a.nr_cpus, 2);
	CHECK_EQ(a.mode, RB_MODE_OVERWRITE);
	CHECK_EQ(a.initial_count, w->start);
	CHECK_EQ(a.rseq, v->rseq);
	CHECK_EQ(a.hdr_size, HDR_SIZE);
	/* read through the attached handle what the creator wrote */
	for (int k = 0; k < 30; k++) {
		fake_now++;
		emit(w, 100, true, NULL);
	}
	CHECK_EQ(rb_flush_cpu(&w->rb, 0, false), 0);
	model_flush(w);
	struct rb_read r;
	CHECK_EQ(rb_get_subbuf(&a, 0, &r), 0);
	struct pkt p;
	if (parse_packet(w, r.data, &p)) {
		CHECK_EQ(p.seq, 0);
		CHECK_EQ(p.nev, 30);
		check_against_model(w, &p);
	}
	rb_put_subbuf(&a, 0, &r);
	CHECK_EQ(rb_get_subbuf(&w->rb, 0, &r), (uint64_t)-EAGAIN);
	struct rb_stats st;
	rb_get_stats(&w->rb, 0, &st);
	CHECK_EQ(st.bytes_consumed, w->S);
	rb_destroy(&a);	/* must not unmap or close anything of ours */
	CHECK_EQ(rb_get_subbuf(&w->rb, 0, &r), (uint64_t)-EAGAIN);

	/* corruptions, each on a private copy-on-write mapping */
	struct rb_shm_header *h;
	const struct rb_shm_header good = *(struct rb_shm_header *)map;
	void *priv = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE,
			  w->rb.fd, 0);
	CHECK(priv != MAP_FAILED, "mmap private");
	if (priv == MAP_FAILED)
		goto out;
	h = priv;
#define CORRUPT(stmt, want)                                                    \
	do {                                                                   \
		*h = good;                                                     \
		stmt;                                                          \
		memset(&a, 0x5a, sizeof(a));                                   \
		int r_ = rb_attach(&a, priv, size);                            \
		CHECK(r_ == (want), "rb_attach after `%s`: %d, want %d", #stmt, \
		      r_, want);                                               \
		if (r_ == 0)                                                   \
			rb_destroy(&a);                                        \
	} while (0)
	CORRUPT((void)0, 0);
	CORRUPT(h->magic[0] = 'X', -EINVAL);
	CORRUPT(h->magic[7] = '!', -EINVAL);
	CORRUPT(h->header_size = 12345, -EINVAL);
	CORRUPT(h->version = RB_SHM_VERSION + 1, -EPROTO);
	CORRUPT(h->version = 0, -EPROTO);
	CORRUPT(h->subbuf_size = 8193, -EINVAL);
	CORRUPT(h->subbuf_size = 0, -EINVAL);
	CORRUPT(h->subbuf_size = 4096, -EINVAL);	/* pow2 but sizes mismatch */
	CORRUPT(h->subbuf_size = 1ULL << 30, -EINVAL);
	CORRUPT(h->subbuf_size = 1ULL << 62, -EINVAL);
	CORRUPT(h->num_subbuf = 3, -EINVAL);
	CORRUPT(h->num_subbuf = 0, -EINVAL);
	CORRUPT(h->num_subbuf = 8, -EINVAL);
	CORRUPT(h->num_subbuf = 1u << 31, -EINVAL);
	CORRUPT(h->nr_cpus = 0, -EINVAL);
	CORRUPT(h->nr_cpus = 3, -EINVAL);
	CORRUPT(h->nr_cpus = 1, -EINVAL);
	CORRUPT(h->nr_cpus = UINT32_MAX, -EINVAL);
	CORRUPT(h->mode = 2, -EINVAL);
	CORRUPT(h->mode = RB_MODE_DISCARD, -EINVAL);	/* no spare: sizes differ */
	CORRUPT(h->tsc_bits = 0, -EINVAL);
	CORRUPT(h->tsc_bits = 64, -EINVAL);
	CORRUPT(h->subbuf_header_size = 4096, -EINVAL);
	CORRUPT(h->total_size += 4096, -EINVAL);
	CORRUPT(h->total_size -= 1, -EINVAL);
	CORRUPT(h->cpu_ctl_offset = size, -EINVAL);
	CORRUPT(h->cpu_ctl_offset = UINT64_MAX - 100, -EINVAL);
	CORRUPT(h->cpu_ctl_offset += 64, -EINVAL);
	CORRUPT(h->cpu_ctl_stride += 64, -EINVAL);
	CORRUPT(h->cpu_ctl_stride = 0, -EINVAL);
	CORRUPT(h->data_offset = size, -EINVAL);
	CORRUPT(h->data_offset = UINT64_MAX - 4095, -EINVAL);
	CORRUPT(h->data_offset += 4096, -EINVAL);
	CORRUPT(h->data_offset -= 4096, -EINVAL);
	CORRUPT(h->data_stride += 8192, -EINVAL);
	CORRUPT(h->data_stride = 0, -EINVAL);
	/* sizes consistent with each other but the object is bigger than
	 * the mapping: subbuf_size doubled and every size recomputed */
	CORRUPT(({
			h->subbuf_size *= 2;
			h->data_stride *= 2;
			h->total_size = h->data_offset + 2 * h->data_stride;
		}),
		-EINVAL);
#undef CORRUPT
	/* a mapping shorter than the object / than the header */
	*h = good;
	CHECK_EQ(rb_attach(&a, priv, size - 1), (uint64_t)-EINVAL);
	CHECK_EQ(rb_attach(&a, priv, 100), (uint64_t)-EINVAL);
	CHECK_EQ(rb_attach(&a, priv, size), 0);
	rb_destroy(&a);
	munmap(priv, size);
out:
	munmap(map, size);
	world_fini(w);
	free(w);
}

/* ---- multi-threaded ------------------------------------------------------ */

#define MT_THREADS 2
#define MT_EVENTS 150000
#define MT_MAXWORDS 24
#ifndef MT_PACE
#define MT_PACE 4
#endif

struct mt_state {
	struct rb rb;
	enum rb_mode mode;
	uint64_t written[MT_THREADS];
	uint64_t failed[MT_THREADS];
	unsigned done;
	/* reader side */
	uint8_t *seen[MT_THREADS];	/* per-thread bitmap of read seqs */
	uint64_t last_seq[8][MT_THREADS];	/* per CPU, per thread */
	uint64_t last_tsc[8];
	uint64_t next_pkt[8];
	uint64_t max_lost[8];
	uint64_t read;
	uint64_t bad_events, bad_order, dups, bad_pkts;
};

static uint64_t mt_checksum(const uint64_t *words, unsigned n)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (unsigned i = 0; i < n; i++)
		h = (h ^ words[i]) * 0x100000001b3ULL;
	return h;
}

struct mt_arg {
	struct mt_state *st;
	uint32_t tid;
};

static void *mt_writer(void *p)
{
	struct mt_arg *a = p;
	struct mt_state *st = a->st;
	cpu_set_t all;
	CPU_ZERO(&all);
	for (int c = 0; c < CPU_SETSIZE && c < 64; c++)
		CPU_SET(c, &all);
	sched_setaffinity(0, sizeof(all), &all);	/* undo the main pin */
	uint64_t x = 0x12345 + a->tid;
	for (uint64_t seq = 0; seq < MT_EVENTS; seq++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		unsigned nw = 1 + (unsigned)(x % (MT_MAXWORDS - 1));
		uint64_t words[MT_MAXWORDS];
		words[0] = ((uint64_t)a->tid << 56) | seq;
		for (unsigned i = 1; i < nw; i++)
			words[i] = x * (i + 1) ^ seq;
		/* payload: words[0..nw), tsc, checksum */
		struct rb_ctx ctx = { .payload_size = (nw + 2) * 8,
				      .hdr_compact = EV_COMPACT,
				      .hdr_full = EV_FULL };
		int ret = rb_reserve(&st->rb, &ctx, mt_clock);
		if (ret) {
			st->failed[a->tid]++;
			if (getenv("MT_DEBUG") && st->failed[a->tid] < 3)
				fprintf(stderr, "tid %u seq %lu: %d cpu %d\n", a->tid,
					(unsigned long)seq, ret, sched_getcpu());
			continue;
		}
		char *e = ctx.r.addr;
		uint32_t hl = ctx.full_tsc ? EV_FULL : EV_COMPACT;
		struct ev_hdr h = { ctx.slot_size,
				    ctx.full_tsc ? EV_KIND_FULL : EV_KIND_COMPACT,
				    ctx.r.tsc };
		memcpy(e, &h, hl);
		memcpy(e + hl, words, nw * 8);
		memcpy(e + hl + nw * 8, &ctx.r.tsc, 8);
		uint64_t sum = mt_checksum(words, nw) ^ ctx.r.tsc;
		memcpy(e + hl + nw * 8 + 8, &sum, 8);
		if ((seq & 1023) == 0)
			sched_yield();	/* let the threads interleave */
		rb_commit(&st->rb, &ctx);
		st->written[a->tid]++;
		/* pace the writers a little so that the reader, which shares
		 * a CPU with one of them, gets a chance to keep up */
		if ((seq & (MT_PACE - 1)) == 0)
			sched_yield();
	}
	__atomic_add_fetch(&st->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

__attribute__((format(printf, 2, 3))) static void
mt_bad(struct mt_state *st, const char *fmt, ...)
{
	if (st->bad_pkts++ < 5) {
		va_list ap;
		va_start(ap, fmt);
		fprintf(stderr, "  [%s] bad packet: ", unit_case);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
}

static void mt_check_packet(struct mt_state *st, uint32_t cpu,
			    const struct rb_read *r)
{
	const char *d = r->data;
	const struct pkt_hdr *h = (const struct pkt_hdr *)d;
	uint64_t S = st->rb.subbuf_size;
	uint64_t rel_seq = (r->count - st->rb.initial_count) / S;
	if (h->magic != PKT_MAGIC || h->closed != 1 || h->cpu != cpu ||
	    h->data_size < HDR_SIZE || h->data_size > S || h->seq != rel_seq ||
	    h->tsc_end < h->tsc_begin) {
		mt_bad(st, "CPU %u packet at rel seq %lu: magic %#x closed %lu "
			   "cpu %u data_size %lu seq %lu tsc %lu..%lu",
		       cpu, (unsigned long)rel_seq, h->magic,
		       (unsigned long)h->closed, h->cpu,
		       (unsigned long)h->data_size, (unsigned long)h->seq,
		       (unsigned long)h->tsc_begin, (unsigned long)h->tsc_end);
		return;
	}
	if (st->mode == RB_MODE_DISCARD ? h->seq != st->next_pkt[cpu]
					: h->seq < st->next_pkt[cpu])
		mt_bad(st, "CPU %u packet seq %lu, expected %lu", cpu,
		       (unsigned long)h->seq, (unsigned long)st->next_pkt[cpu]);
	st->next_pkt[cpu] = h->seq + 1;
	if (h->lost < st->max_lost[cpu])
		mt_bad(st, "CPU %u packet %lu: lost %lu < previous %lu", cpu,
		       (unsigned long)h->seq, (unsigned long)h->lost,
		       (unsigned long)st->max_lost[cpu]);
	st->max_lost[cpu] = h->lost;
	uint64_t off = HDR_SIZE;
	while (off < h->data_size) {
		struct ev_hdr eh;
		memcpy(&eh, d + off, sizeof(eh));
		uint32_t hl = eh.kind == EV_KIND_FULL ? EV_FULL : EV_COMPACT;
		if ((eh.kind != EV_KIND_FULL && eh.kind != EV_KIND_COMPACT) ||
		    eh.slot_size < hl + 24 || (eh.slot_size - hl) % 8 ||
		    off + eh.slot_size > h->data_size) {
			st->bad_events++;
			return;
		}
		unsigned nw = (eh.slot_size - hl) / 8 - 2;
		uint64_t words[MT_MAXWORDS + 2];
		memcpy(words, d + off + hl, (nw + 2) * 8);
		uint64_t tsc = words[nw];
		uint32_t tid = (uint32_t)(words[0] >> 56);
		uint64_t seq = words[0] & ((1ULL << 56) - 1);
		if (tid >= MT_THREADS || seq >= MT_EVENTS ||
		    (mt_checksum(words, nw) ^ tsc) != words[nw + 1] ||
		    (eh.kind == EV_KIND_FULL && eh.tsc != tsc)) {
			st->bad_events++;
		} else {
			if (st->seen[tid][seq])
				st->dups++;
			st->seen[tid][seq] = 1;
			if (st->last_seq[cpu][tid] != UINT64_MAX &&
			    seq <= st->last_seq[cpu][tid])
				st->bad_order++;
			st->last_seq[cpu][tid] = seq;
			if (tsc < st->last_tsc[cpu] || tsc < h->tsc_begin ||
			    tsc > h->tsc_end)
				st->bad_order++;
			st->last_tsc[cpu] = tsc;
			st->read++;
		}
		off += eh.slot_size;
	}
}

static unsigned mt_drain(struct mt_state *st, uint32_t ncpu)
{
	unsigned n = 0;
	for (uint32_t c = 0; c < ncpu; c++) {
		struct rb_read r;
		while (rb_get_subbuf(&st->rb, c, &r) == 0) {
			mt_check_packet(st, c, &r);
			clear_closing(r.data);
			rb_put_subbuf(&st->rb, c, &r);
			n++;
		}
	}
	return n;
}

static void test_mt(const struct variant *v, enum rb_mode mode)
{
	set_case(v, mode == RB_MODE_DISCARD ? "mt/discard" : "mt/overwrite");
	struct mt_state *st = calloc(1, sizeof(*st));
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	if (ncpu < 1)
		ncpu = 1;
	if (ncpu > 8)
		ncpu = 8;
	st->mode = mode;
	struct rb_config cfg = {
		.subbuf_size = 4096,
		.num_subbuf = 4,
		.nr_cpus = (uint32_t)ncpu,
		.mode = mode,
		.tsc_bits = 27,
		.subbuf_header_size = HDR_SIZE,
		.initial_count = v->near_wrap ? UINT64_MAX - 3 * 4096 * 4 + 1 : 0,
		.use_rseq = v->rseq,
	};
	struct rb_client cl = { cb_begin, cb_end, mt_clock, st };
	__atomic_store_n(&log_enabled, false, __ATOMIC_RELAXED);
	int ret = rb_create(&st->rb, &cfg, &cl);
	CHECK(ret == 0, "rb_create %d", ret);
	if (ret) {
		free(st);
		return;
	}
	CHECK_EQ(st->rb.rseq, v->rseq);
	for (int t = 0; t < MT_THREADS; t++)
		st->seen[t] = calloc(MT_EVENTS, 1);
	memset(st->last_seq, 0xff, sizeof(st->last_seq));
	pthread_t th[MT_THREADS];
	struct mt_arg args[MT_THREADS];
	for (int t = 0; t < MT_THREADS; t++) {
		args[t] = (struct mt_arg){ st, (uint32_t)t };
		pthread_create(&th[t], NULL, mt_writer, &args[t]);
	}
	unsigned iter = 0;
	while (__atomic_load_n(&st->done, __ATOMIC_ACQUIRE) < MT_THREADS) {
		if (mt_drain(st, (uint32_t)ncpu) == 0)
			sched_yield();
		/* now and then a flush from the reader, as the consumer's
		 * switch timer does */
		if (++iter % 64 == 0 && !getenv("MT_NOFLUSH"))
			for (uint32_t c = 0; c < (uint32_t)ncpu; c++)
				rb_flush_cpu(&st->rb, c, false);
	}
	for (int t = 0; t < MT_THREADS; t++)
		pthread_join(th[t], NULL);
	/* final flush and drain, until nothing is left */
	for (uint32_t c = 0; c < (uint32_t)ncpu; c++) {
		int tries = 0, r;
		do {
			mt_drain(st, (uint32_t)ncpu);
			r = rb_flush_cpu(&st->rb, c, true);
			mt_drain(st, (uint32_t)ncpu);
		} while (r != 0 && ++tries < 1000);
		CHECK(r == 0, "final flush of CPU %u: %d", c, r);
	}
	mt_drain(st, (uint32_t)ncpu);
	uint64_t written = 0, failed = 0, lost = 0, sblost = 0;
	for (int t = 0; t < MT_THREADS; t++) {
		written += st->written[t];
		failed += st->failed[t];
	}
	for (uint32_t c = 0; c < (uint32_t)ncpu; c++) {
		struct rb_stats s;
		rb_get_stats(&st->rb, c, &s);
		lost += s.events_lost;
		sblost += s.subbufs_lost;
		CHECK_EQ(s.bytes_consumed, s.bytes_reserved);
		if (mode == RB_MODE_DISCARD)
			CHECK(st->max_lost[c] == s.events_lost,
			      "CPU %u: last packet says %lu lost, stats %lu", c,
			      (unsigned long)st->max_lost[c],
			      (unsigned long)s.events_lost);
	}
	if (getenv("MT_DEBUG"))
		for (uint32_t c = 0; c < (uint32_t)ncpu; c++) {
			struct rb_cpu_ctl *cc = rb_cpu(&st->rb, c);
			fprintf(stderr, "cpu %u wc %#lx rc %#lx lost %lu sblost %lu "
				"announced %#lx committed %#lx + %#lx\n", c,
				(unsigned long)cc->write_count, (unsigned long)cc->read_count,
				(unsigned long)cc->events_lost, (unsigned long)cc->subbufs_lost,
				(unsigned long)(st->rb.rseq ? cc->announced : cc->announced_smp),
				(unsigned long)cc->committed,
				(unsigned long)cc->committed_remote);
			for (uint32_t i = 0; i < st->rb.num_subbuf; i++)
				fprintf(stderr, "  sb %u seq %#lx table %#lx\n", i,
					(unsigned long)cc->sb[i].commit_seq,
					(unsigned long)cc->sb[i].table);
		}
	CHECK_EQ(written + failed, (uint64_t)MT_THREADS * MT_EVENTS);
	CHECK_EQ(st->bad_pkts, 0);
	CHECK_EQ(st->bad_events, 0);
	CHECK_EQ(st->bad_order, 0);
	CHECK_EQ(st->dups, 0);
	CHECK_EQ(lost, failed);
	if (mode == RB_MODE_DISCARD) {
		CHECK(st->read + lost == (uint64_t)MT_THREADS * MT_EVENTS,
		      "read %lu + lost %lu != written %lu", (unsigned long)st->read,
		      (unsigned long)lost,
		      (unsigned long)MT_THREADS * MT_EVENTS);
		CHECK_EQ(sblost, 0);
	} else {
		CHECK(st->read <= written, "read more than written");
		CHECK(st->read > 0, "read nothing");
	}
	printf("  %-16s %-9s written %lu, read %lu, events lost %lu, sub-buffers lost %lu\n",
	       v->name, mode == RB_MODE_DISCARD ? "discard" : "overwrite",
	       (unsigned long)written, (unsigned long)st->read,
	       (unsigned long)lost, (unsigned long)sblost);
	for (int t = 0; t < MT_THREADS; t++)
		free(st->seen[t]);
	rb_destroy(&st->rb);
	free(st);
	__atomic_store_n(&log_enabled, true, __ATOMIC_RELAXED);
	rt_test_pin_cpu(0);
}

/* ---- the reader's API beyond get/put ---------------------------------- */

/* rb_snapshot_copy of the sub-buffer at `off` into a private copy, and
 * the packet checked against the model. Returns rb_snapshot_copy's
 * result. */
static int snap_one(struct world *w, uint64_t off, struct pkt *p)
{
	char *copy = malloc(w->S);
	uint64_t seq = UINT64_MAX;
	int ret = rb_snapshot_copy(&w->rb, 0, off, copy, &seq);
	if (ret == 0) {
		CHECK_EQ(seq, (off - w->start) / w->S);
		if (parse_packet(w, copy, p)) {
			CHECK_EQ(p->seq, seq);
			check_against_model(w, p);
		}
	}
	free(copy);
	return ret;
}

/*
 * Snapshot read of a partly filled buffer: the complete sub-buffers
 * between the reader and the writer are copied with the events the model
 * put there, the open one is left out until a flush closes it, nothing is
 * consumed (the reader then gets the same packets), and a held slot's
 * sub-buffer is refused. Overwrite mode, after laps: the range is the
 * N - 1 sub-buffers behind the writer; one rewritten after the range was
 * taken, or whose table entry is damaged, is refused.
 */
static void test_snapshot(const struct variant *v, enum rb_mode mode)
{
	set_case(v, mode == RB_MODE_DISCARD ? "snapshot-discard" : "snapshot-overwrite");
	struct world *w = calloc(1, sizeof(*w));
	if (world_init(w, v, mode, 4096, 8, 27) != 0) {
		free(w);
		return;
	}
	uint64_t first, end;
	CHECK_EQ(rb_snapshot_range(&w->rb, 0, &first, &end), 0);
	CHECK(first == w->start && end == w->start, "empty buffer: range not empty");
	CHECK_EQ(rb_snapshot_range(&w->rb, 2, &first, &end), (uint64_t)-EINVAL);
	/* two and a half sub-buffers */
	while (w->pos < 2 * w->S + w->S / 2) {
		fake_now++;
		CHECK_EQ(emit(w, 150, true, NULL), 0);
	}
	CHECK_EQ(rb_snapshot_range(&w->rb, 0, &first, &end), 0);
	CHECK_EQ(first, w->start);
	CHECK_EQ(end, w->start + 2 * w->S);
	struct pkt p;
	unsigned copied = 0;
	for (uint64_t off = first; off != end; off += w->S) {
		CHECK_EQ(snap_one(w, off, &p), 0);
		CHECK(p.ok && p.nev > 0, "snapshot packet at +%lu empty or bad",
		      (unsigned long)(off - w->start));
		copied++;
	}
	CHECK_EQ(copied, 2);
	char *copy = malloc(w->S);
	uint64_t seq;
	CHECK_EQ(rb_snapshot_copy(&w->rb, 0, end, copy, &seq), (uint64_t)-EAGAIN);
	CHECK_EQ(rb_snapshot_copy(&w->rb, 5, first, copy, &seq), (uint64_t)-EINVAL);
	struct rb_stats st;
	rb_get_stats(&w->rb, 0, &st);
	CHECK_EQ(st.bytes_consumed, 0);
	/* the flush closes the third; the range then holds it */
	CHECK_EQ(rb_flush_cpu(&w->rb, 0, false), 0);
	model_flush(w);
	CHECK_EQ(rb_snapshot_range(&w->rb, 0, &first, &end), 0);
	CHECK_EQ(end, w->start + 3 * w->S);
	CHECK_EQ(snap_one(w, w->start + 2 * w->S, &p), 0);
	CHECK_EQ(p.seq, 2);
	/* nothing was consumed: the reader gets all three */
	CHECK_EQ(drain(w), 3);

	/* a held slot: its sub-buffer is not complete, nor the later ones */
	fake_now++;
	emit(w, 100, true, NULL);
	struct rb_ctx held;
	uint64_t held_id = w->next_id;
	fake_now++;
	CHECK_EQ(emit(w, 200, false, &held), 0);
	uint64_t h = w->pos / w->S;
	while (w->pos / w->S < h + 2) {
		fake_now++;
		emit(w, 300, true, NULL);
	}
	CHECK_EQ(rb_snapshot_range(&w->rb, 0, &first, &end), 0);
	CHECK_EQ(first, w->start + h * w->S);
	CHECK_EQ(end, w->start + (h + 2) * w->S);
	for (uint64_t off = first; off != end; off += w->S)
		CHECK_EQ(snap_one(w, off, &p), (uint64_t)-EAGAIN);
	commit_event(w, &held, held_id);
	for (uint64_t off = first; off != end; off += w->S)
		CHECK_EQ(snap_one(w, off, &p), 0);
	w->next_seq = h;
	CHECK_EQ(drain(w), 2);

	if (mode == RB_MODE_OVERWRITE) {
		/* laps without a reader: the writers pushed it to the N - 1
		 * sub-buffers before the one they are in, all copied */
		uint64_t until = w->pos + 3 * w->N * w->S + w->S / 3;
		while (w->pos < until) {
			fake_now++;
			emit(w, 250, true, NULL);
		}
		CHECK_EQ(rb_snapshot_range(&w->rb, 0, &first, &end), 0);
		uint64_t W = w->pos / w->S;
		CHECK_EQ(end, w->start + W * w->S);
		CHECK_EQ(end - first, (uint64_t)(w->N - 1) * w->S);
		for (uint64_t off = first; off != end; off += w->S) {
			CHECK_EQ(snap_one(w, off, &p), 0);
			CHECK_EQ(p.seq, (off - w->start) / w->S);
		}
		/* rewritten after the range was taken: refused */
		uint64_t old = first;
		while (w->pos / w->S < W + 2) {
			fake_now++;
			emit(w, 250, true, NULL);
		}
		CHECK_EQ(snap_one(w, old, &p), (uint64_t)-EAGAIN);
		/* a damaged table entry: refused, nothing copied from it */
		CHECK_EQ(rb_snapshot_range(&w->rb, 0, &first, &end), 0);
		uint64_t off = end - w->S;
		uint32_t idx = rb_subbuf_index(&w->rb, off);
		uint64_t saved = ctl0(w)->sb[idx].table;
		ctl0(w)->sb[idx].table = RB_TABLE_MAKE(0xfffffff0u, RB_TABLE_TAG(saved), 0);
		damage_begin();
		CHECK_EQ(rb_snapshot_copy(&w->rb, 0, off, copy, &seq), (uint64_t)-EIO);
		CHECK_EQ(damage_end(), 1);
		ctl0(w)->sb[idx].table = saved;
		CHECK_EQ(snap_one(w, off, &p), 0);
	}
	free(copy);
	world_fini(w);
	free(w);
}

/*
 * rb_skip_stuck: a sub-buffer whose writer reserved and never committed
 * is given up only once the writers have left it and the reader has
 * found it stuck for `after`; it is counted in subbufs_lost and read_count
 * moves past it by exactly one sub-buffer; when the late commit comes, the
 * next sub-buffers are read normally, with their sequence numbers (the
 * given-up one leaves a gap). A sub-buffer the writers are still in is
 * never given up; a damaged table entry (-EIO from the reader) is.
 */
static void test_skip_stuck(const struct variant *v, enum rb_mode mode)
{
	set_case(v, mode == RB_MODE_DISCARD ? "skip-stuck-discard" : "skip-stuck-overwrite");
	struct world *w = calloc(1, sizeof(*w));
	if (world_init(w, v, mode, 4096, 8, 27) != 0) {
		free(w);
		return;
	}
	struct rb_stuck stuck = { 0 };
	/* the writer is in the reader's sub-buffer: never stuck */
	fake_now++;
	emit(w, 100, true, NULL);
	CHECK_EQ(rb_skip_stuck(&w->rb, 0, &stuck, 0, 10), 0);
	CHECK_EQ(rb_skip_stuck(&w->rb, 0, &stuck, 1000, 10), 0);
	CHECK_EQ(rb_skip_stuck(&w->rb, 2, &stuck, 1000, 10), (uint64_t)-EINVAL);
	struct rb_ctx held;
	uint64_t held_id = w->next_id;
	fake_now++;
	CHECK_EQ(emit(w, 200, false, &held), 0);
	while (w->pos / w->S < 3) {
		fake_now++;
		emit(w, 300, true, NULL);
	}
	struct rb_read r;
	CHECK_EQ(rb_get_subbuf(&w->rb, 0, &r), (uint64_t)-EAGAIN);
	/* first seen at 100; not yet at 149; given up at 150 */
	CHECK_EQ(rb_skip_stuck(&w->rb, 0, &stuck, 100, 50), 0);
	CHECK_EQ(rb_skip_stuck(&w->rb, 0, &stuck, 149, 50), 0);
	struct rb_stats st;
	rb_get_stats(&w->rb, 0, &st);
	CHECK_EQ(st.bytes_consumed, 0);
	CHECK_EQ(rb_skip_stuck(&w->rb, 0, &stuck, 150, 50), 1);
	rb_get_stats(&w->rb, 0, &st);
	CHECK_EQ(st.bytes_consumed, w->S);
	CHECK_EQ(st.subbufs_lost, 1);
	CHECK_EQ(st.events_lost, 0);
	/* the next one waits for the same slot (the counts are the CPU's):
	 * stuck again, timed from its own first sighting */
	CHECK_EQ(rb_get_subbuf(&w->rb, 0, &r), (uint64_t)-EAGAIN);
	CHECK_EQ(rb_skip_stuck(&w->rb, 0, &stuck, 1000, 50), 0);
	/* the late commit: the rest reads back in order, after the gap */
	commit_event(w, &held, held_id);
	w->rpos = w->S;
	w->next_seq = 1;
	CHECK_EQ(drain(w), 2);
	CHECK_EQ(rb_skip_stuck(&w->rb, 0, &stuck, 5000, 50), 0);
	rb_get_stats(&w->rb, 0, &st);
	CHECK_EQ(st.subbufs_lost, 1);
	CHECK_EQ(st.bytes_consumed, 3 * w->S);

	if (mode == RB_MODE_OVERWRITE) {
		/* the reader's next sub-buffer with a damaged table index */
		while (w->pos / w->S < 5) {
			fake_now++;
			emit(w, 300, true, NULL);
		}
		uint64_t rc = w->start + 3 * w->S;
		uint32_t idx = rb_subbuf_index(&w->rb, rc);
		uint64_t e = ctl0(w)->sb[idx].table;
		ctl0(w)->sb[idx].table = RB_TABLE_MAKE(0xfffffff0u, RB_TABLE_TAG(e), 0);
		damage_begin();
		CHECK_EQ(rb_get_subbuf(&w->rb, 0, &r), (uint64_t)-EIO);
		CHECK_EQ(damage_end(), 1);
		CHECK_EQ(rb_skip_stuck(&w->rb, 0, &stuck, 6000, 50), 0);
		CHECK_EQ(rb_skip_stuck(&w->rb, 0, &stuck, 6050, 50), 1);
		ctl0(w)->sb[idx].table = e;
		rb_get_stats(&w->rb, 0, &st);
		CHECK_EQ(st.subbufs_lost, 2);
		w->rpos = 4 * w->S;
		w->next_seq = 4;
		CHECK_EQ(drain(w), 1);
	}
	world_fini(w);
	free(w);
}

/* The consumers' read timer: faster when a pass finds half a CPU's
 * buffer full, back to the configured period when it finds nothing. */
static void test_read_wait(void)
{
	set_case(NULL, "read_wait");
	CHECK_EQ(rb_read_wait(10, 10, 1, 2, 4), 2);	/* half full: / 4 */
	CHECK_EQ(rb_read_wait(2, 10, 1, 4, 4), 1);	/* not below min */
	CHECK_EQ(rb_read_wait(1, 10, 1, 1, 4), 1);	/* some: keep */
	CHECK_EQ(rb_read_wait(1, 10, 1, 0, 4), 2);	/* none: double */
	CHECK_EQ(rb_read_wait(8, 10, 1, 0, 4), 10);	/* up to max */
	CHECK_EQ(rb_read_wait(10, 10, 1, 0, 4), 10);
	CHECK_EQ(rb_read_wait(0, 0, 1, 3, 4), 0);	/* max below min: max */
	uint64_t w = 10;
	for (int i = 0; i < 8; i++)
		w = rb_read_wait(w, 10, 1, 4, 4);
	CHECK_EQ(w, 1);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	rt_test_pin_cpu(0);
	test_create();
	test_read_wait();
	for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
		const struct variant *v = &variants[i];
		test_basic(v, RB_MODE_DISCARD);
		test_basic(v, RB_MODE_OVERWRITE);
		test_no_holes(v, RB_MODE_DISCARD);
		test_no_holes(v, RB_MODE_OVERWRITE);
		test_exact_fit(v, RB_MODE_DISCARD);
		test_exact_fit(v, RB_MODE_OVERWRITE);
		test_oversize(v);
		test_lap_uncommitted(v);
		test_migrated_commit(v);
		test_held_slot(v, RB_MODE_DISCARD);
		test_held_slot(v, RB_MODE_OVERWRITE);
		test_nested_switch(v, RB_MODE_DISCARD, false);
		test_nested_switch(v, RB_MODE_OVERWRITE, false);
		test_nested_switch(v, RB_MODE_DISCARD, true);
		test_nested_switch(v, RB_MODE_OVERWRITE, true);
		test_stale_switch(v, RB_MODE_DISCARD);
		test_stale_switch(v, RB_MODE_OVERWRITE);
		test_slot_overflow(v);
		test_discard_full(v);
		test_final_flush_full(v);
		test_flush(v, RB_MODE_DISCARD);
		test_flush(v, RB_MODE_OVERWRITE);
		test_dead_writer(v, RB_MODE_DISCARD);
		test_dead_writer(v, RB_MODE_OVERWRITE);
		test_close_dead_damaged(v, RB_MODE_DISCARD);
		test_close_dead_damaged(v, RB_MODE_OVERWRITE);
		test_close(v, RB_MODE_DISCARD);
		test_close(v, RB_MODE_OVERWRITE);
		test_timestamps(v);
		test_stamp(v);
		test_overwrite(v);
		test_attach(v);
		test_corrupt_table(v);
		test_hot_word(v);
		test_snapshot(v, RB_MODE_DISCARD);
		test_snapshot(v, RB_MODE_OVERWRITE);
		test_skip_stuck(v, RB_MODE_DISCARD);
		test_skip_stuck(v, RB_MODE_OVERWRITE);
	}
	for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
		test_mt(&variants[i], RB_MODE_DISCARD);
		test_mt(&variants[i], RB_MODE_OVERWRITE);
	}
	return unit_finish();
}
