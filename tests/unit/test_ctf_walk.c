/*
 * test_ctf_walk.c - ctf_stream_cut_torn: a stream file left in the middle
 * of a packet is cut back to its last whole packet, a whole one is left
 * as it is, and a file whose first header is damaged or short is emptied.
 * ctf_clock_shift: a clock's offset moved by a relay's correction, in
 * seconds and cycles, both signs, with carries. ctf_walk_events: the
 * events of a packet counted when every one decodes (classes of a fixed
 * size stepped over at once, asked of the trace once per walk; two ids
 * sharing a slot of that cache, each with its own size; strings and byte sequences in payloads
 * and contexts), and -EBADMSG for an event cut at the end, an unknown id,
 * a time past the packet's end or going back.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctf/ctf_metadata.h"
#include "ctf/ctf_walk.h"
#include "unit.h"

#define PKT 200u	/* bytes per packet: header and 116 bytes of events */

static int stream_with(unsigned whole, unsigned extra, uint32_t magic)
{
	char path[] = "/tmp/test_ctf_walk.XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return -1;
	unlink(path);
	char pkt[PKT];
	memset(pkt, 0xab, sizeof(pkt));
	struct ctf_packet_header h = { .magic = magic, .packet_size = 8u * PKT,
				       .content_size = 8u * PKT };
	memcpy(pkt, &h, sizeof(h));
	for (unsigned i = 0; i < whole; i++)
		if (write(fd, pkt, PKT) != PKT)
			return -1;
	if (extra && write(fd, pkt, extra) != (ssize_t)extra)
		return -1;
	return fd;
}

static uint64_t file_size(int fd)
{
	struct stat st;
	return fstat(fd, &st) < 0 ? UINT64_MAX : (uint64_t)st.st_size;
}

static void check(const char *what, unsigned whole, unsigned extra, uint32_t magic,
		  uint64_t want_size)
{
	unit_case = what;
	int fd = stream_with(whole, extra, magic);
	CHECK(fd >= 0, "cannot make the stream file");
	if (fd < 0)
		return;
	uint64_t before = file_size(fd), cut = 1234;
	CHECK(ctf_stream_cut_torn(fd, &cut) == 0, "cut failed");
	CHECK_EQ(file_size(fd), want_size);
	CHECK_EQ(cut, before - want_size);
	/* Once cut, the file ends on a whole packet: nothing more to cut. */
	CHECK(ctf_stream_cut_torn(fd, &cut) == 0, "second cut failed");
	CHECK_EQ(cut, 0);
	CHECK_EQ(file_size(fd), want_size);
	close(fd);
}

/* The clock's offset in ns (exact for these frequencies). */
static int64_t offset_ns(const struct ctf_clock_info *c)
{
	return c->offset_s * 1000000000ll + (int64_t)(c->offset * 1000000000ull / c->freq);
}

static void shift(const char *what, uint64_t freq, int64_t s, uint64_t cycles, int64_t by)
{
	unit_case = what;
	struct ctf_clock_info c = { .freq = freq, .offset_s = s, .offset = cycles };
	int64_t before = offset_ns(&c);
	ctf_clock_shift(&c, by);
	CHECK_EQ(offset_ns(&c), before + by);
	CHECK(c.offset < freq, "offset %llu not below freq", (unsigned long long)c.offset);
}

/* ---- ctf_walk_events ---- */

static const struct rt_field_desc f_u32[] = { { "a", RT_TYPE_U32 } };
static const struct rt_field_desc f_u64_u8[] = { { "a", RT_TYPE_U64 }, { "b", RT_TYPE_U8 } };
static const struct rt_field_desc f_str_u16[] = { { "s", RT_TYPE_STRING }, { "a", RT_TYPE_U16 } };
static const struct rt_field_desc f_bytes[] = { { "q", RT_TYPE_BYTES } };

struct walk_classes {
	unsigned calls[64];
};

/* Ids 1 and 33 (one slot of the walk's cache), 2 and 3 of variable size,
 * 4 with no field; no other. */
static bool walk_class(void *arg, uint32_t id, const struct rt_field_desc **f, uint32_t *nr)
{
	struct walk_classes *w = arg;
	if (id < 64)
		w->calls[id]++;
	switch (id) {
	case 1: *f = f_u32; *nr = 1; return true;
	case 33: *f = f_u64_u8; *nr = 2; return true;
	case 2: *f = f_str_u16; *nr = 2; return true;
	case 3: *f = f_bytes; *nr = 1; return true;
	case 4: *f = NULL; *nr = 0; return true;
	default: return false;
	}
}

struct pkt {
	char b[4096];
	size_t len;
};

static void put(struct pkt *k, const void *p, size_t n)
{
	memcpy(k->b + k->len, p, n);
	k->len += n;
}

/* An event header (extended when `ext` or the id needs it) at time ts. */
static void ev_header(struct pkt *k, uint32_t id, uint64_t ts, int ext)
{
	k->len += ctf_write_event_header(k->b + k->len, id, ts, ext);
}

static void ev_payload(struct pkt *k, uint32_t id, const char *str, uint32_t qlen)
{
	uint64_t u64 = 0x1122334455667788ull;
	uint32_t u32 = 7;
	uint16_t u16 = 3;
	uint8_t u8 = 9, q[64] = { 0 };
	switch (id) {
	case 1: put(k, &u32, 4); break;
	case 33: put(k, &u64, 8); put(k, &u8, 1); break;
	case 2: put(k, str, strlen(str) + 1); put(k, &u16, 2); break;
	case 3: put(k, &qlen, 4); put(k, q, qlen); break;
	default: break;
	}
}

/* Walk k's events: want events (or -EBADMSG), the last one at want_last;
 * with `once`, each class asked of the trace once at most. */
static void walk_check(const char *what, const struct pkt *k, const uint32_t *ctx, uint32_t nctx,
		       uint64_t ts_end, int64_t want, uint64_t want_last, bool once)
{
	unit_case = what;
	struct walk_classes w = { { 0 } };
	uint64_t last = 12345;
	int64_t n = ctf_walk_events(k->b, k->b + k->len, ctx, nctx, walk_class, &w, 100, ts_end,
				    &last);
	CHECK(n == want, "%lld events, want %lld", (long long)n, (long long)want);
	if (want >= 0)
		CHECK_EQ(last, want_last);
	for (uint32_t id = 0; once && id < 64; id++)
		CHECK(w.calls[id] <= 1, "class %u asked %u times", id, w.calls[id]);
}

static void test_walk(void)
{
	static const uint32_t ctx_fixed[] = { RT_TYPE_U32, RT_TYPE_U64 };
	static const uint32_t ctx_str[] = { RT_TYPE_STRING, RT_TYPE_U32 };
	struct pkt k = { .len = 0 };
	/* Ids 1 and 33 share a slot: each must keep its own size. */
	static const uint32_t ids[] = { 1, 33, 1, 33, 33, 1, 4, 1 };
	for (uint32_t i = 0; i < 8; i++) {
		ev_header(&k, ids[i], 100 + i, i % 2);
		ev_payload(&k, ids[i], NULL, 0);
	}
	walk_check("fixed sizes, one slot for two ids", &k, NULL, 0, 1000, 8, 107, false);
	struct pkt cut = k;
	cut.len -= 1;
	walk_check("the last fixed-size event cut", &cut, NULL, 0, 1000, -EBADMSG, 0, false);
	walk_check("an event after timestamp_end", &k, NULL, 0, 106, -EBADMSG, 0, false);

	k.len = 0;
	const char *strs[] = { "", "x", "a longer string", "yz" };
	for (uint32_t i = 0; i < 8; i++) {
		uint32_t id = i % 3 == 0 ? 2 : i % 3 == 1 ? 1 : 3;
		ev_header(&k, id, 200 + i, 0);
		ev_payload(&k, id, strs[i % 4], i * 5);
	}
	walk_check("strings and sequences", &k, NULL, 0, 1000, 8, 207, true);
	cut = k;
	cut.len -= 3; /* into the last event's sequence */
	walk_check("the last sequence cut", &cut, NULL, 0, 1000, -EBADMSG, 0, true);

	k.len = 0;
	for (uint32_t i = 0; i < 5; i++) {
		uint32_t a = i;
		uint64_t b = i;
		ev_header(&k, i % 2 ? 4 : 1, 300 + i, 0);
		put(&k, &a, 4);
		put(&k, &b, 8);
		ev_payload(&k, i % 2 ? 4 : 1, NULL, 0);
	}
	walk_check("fixed contexts", &k, ctx_fixed, 2, 1000, 5, 304, true);
	cut = k;
	cut.len -= 1;
	walk_check("fixed contexts, cut", &cut, ctx_fixed, 2, 1000, -EBADMSG, 0, true);
	/* The same bytes read with other contexts do not decode. */
	walk_check("fewer contexts than written", &k, ctx_fixed, 1, 1000, -EBADMSG, 0, true);

	k.len = 0;
	for (uint32_t i = 0; i < 5; i++) {
		uint32_t a = i;
		ev_header(&k, 1, 400 + i, 0);
		put(&k, strs[i % 4], strlen(strs[i % 4]) + 1);
		put(&k, &a, 4);
		ev_payload(&k, 1, NULL, 0);
	}
	walk_check("a string context", &k, ctx_str, 2, 1000, 5, 404, true);

	k.len = 0;
	ev_header(&k, 1, 500, 0);
	ev_payload(&k, 1, NULL, 0);
	ev_header(&k, 5, 501, 0);
	ev_payload(&k, 1, NULL, 0);
	walk_check("an unknown id", &k, NULL, 0, 1000, -EBADMSG, 0, true);

	k.len = 0;
	ev_header(&k, 33, 600, 1);
	ev_payload(&k, 33, NULL, 0);
	ev_header(&k, 33, 599, 1);
	ev_payload(&k, 33, NULL, 0);
	walk_check("time going back", &k, NULL, 0, 1000, -EBADMSG, 0, true);

	/* Runs of one compact id of a fixed size (stepped over without
	 * reading each header's size), broken by other ids, a string
	 * class, an extended header. */
	k.len = 0;
	static const uint32_t run[] = { 1, 1, 1, 4, 4, 1, 1, 2, 1, 1, 1, 1, 1, 1, 4 };
	uint32_t nrun = sizeof(run) / sizeof(run[0]);
	for (uint32_t i = 0; i < nrun; i++) {
		ev_header(&k, run[i], 700 + 3 * i, i == 11); /* one extended */
		ev_payload(&k, run[i], "run", 0);
	}
	walk_check("runs of one id", &k, NULL, 0, 10000, nrun, 700 + 3 * (nrun - 1), true);
	walk_check("a run past timestamp_end", &k, NULL, 0, 700 + 3 * 9, -EBADMSG, 0, true);
	cut = k;
	cut.len -= 5; /* the last event (id 4: a header alone) and a byte */
	walk_check("a run's last event cut", &cut, NULL, 0, 10000, -EBADMSG, 0, true);
	cut = k;
	cut.len -= 4;
	walk_check("a run without its last event", &cut, NULL, 0, 10000, nrun - 1,
		   700 + 3 * (nrun - 2), true);
	/* Low time bits wrapping within a run. */
	k.len = 0;
	const uint64_t wrap = 1ull << CTF_COMPACT_TSC_BITS;
	for (uint32_t i = 0; i < 6; i++) {
		ev_header(&k, 1, wrap - 2 + i, 0);
		ev_payload(&k, 1, NULL, 0);
	}
	unit_case = "a run across a wrap of the low time bits";
	struct walk_classes w = { { 0 } };
	uint64_t last = 0;
	int64_t n = ctf_walk_events(k.b, k.b + k.len, NULL, 0, walk_class, &w, wrap - 2,
				    UINT64_MAX, &last);
	CHECK(n == 6, "%lld events", (long long)n);
	CHECK_EQ(last, wrap + 3);

	k.len = 0;
	walk_check("no event", &k, NULL, 0, 1000, 0, 100, true);
}

int main(void)
{
	test_walk();
	shift("ns clock, forward", 1000000000ull, 100, 999999000, 2500);
	shift("ns clock, back across a second", 1000000000ull, 100, 1000, -2500);
	shift("ns clock, back by seconds", 1000000000ull, 100, 0, -3000000001ll);
	shift("4 GHz clock, forward", 4000000000ull, 7, 3999999996ull, 1);
	shift("4 GHz clock, back", 4000000000ull, 7, 0, -1);
	shift("offset past freq", 1000000000ull, 5, 2500000000ull, 0);
	check("whole packets", 3, 0, CTF_MAGIC, 3 * PKT);
	check("torn in the events", 3, PKT - 10, CTF_MAGIC, 3 * PKT);
	check("torn in the header", 3, CTF_PACKET_HEADER_SIZE - 1, CTF_MAGIC, 3 * PKT);
	check("only a torn packet", 0, PKT / 2, CTF_MAGIC, 0);
	check("empty", 0, 0, CTF_MAGIC, 0);
	check("damaged magic", 2, 0, 0x12345678u, 0);
	return unit_finish();
}
