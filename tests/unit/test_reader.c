/*
 * test_reader.c - rt_reader on hand-made traces: metadata text and packets
 * built byte by byte (compact and extended headers, a compact timestamp
 * wrap, every field type, a packet_seq_num gap, events_discarded, ties in
 * the merge), the metadata that the writer itself generates, one damaged
 * trace per kind of bad input (each must fail with a message naming the
 * file and offset), and random damage (must never crash or hang).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctf_metadata.h"
#include "ctf_packet.h"
#include "reader.h"
#include "unit.h"

static char root[64];
static bool verbose;

/* ------------------------------------------------------------------ */
/* Building traces                                                      */

struct buf {
	uint8_t *p;
	size_t len, cap;
};

static void put(struct buf *b, const void *d, size_t n)
{
	if (!n)
		return;
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 256;
		b->p = realloc(b->p, b->cap);
		if (!b->p) {
			perror("realloc");
			exit(2);
		}
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
}

/* Little-endian, whatever the host. */
static void put_le(struct buf *b, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++) {
		uint8_t c = (uint8_t)(v >> (8 * i));
		put(b, &c, 1);
	}
}

static void patch_le(struct buf *b, size_t at, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++)
		b->p[at + i] = (uint8_t)(v >> (8 * i));
}

static void put_str(struct buf *b, const char *s)
{
	put(b, s, strlen(s) + 1);
}

static void put_f32(struct buf *b, float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	put_le(b, u, 4);
}

static void put_f64(struct buf *b, double d)
{
	uint64_t u;
	memcpy(&u, &d, 8);
	put_le(b, u, 8);
}

static const uint8_t UUID[16] = { 0x2d, 0xeb, 0x77, 0xbd, 0x34, 0x4a, 0x4d, 0x08,
				  0x91, 0x6f, 0x49, 0xbb, 0xb3, 0x8d, 0x78, 0x06 };
#define UUID_STR "2deb77bd-344a-4d08-916f-49bbb38d7806"

struct pkt {
	uint32_t stream_id, cpu;
	uint64_t ts_begin, ts_end, seq, discarded;
};

/* Packet header (offsets of ctf_packet.h, written field by field);
 * content_size and packet_size are patched by pkt_end. */
static size_t pkt_begin(struct buf *b, const struct pkt *p)
{
	size_t start = b->len;
	put_le(b, CTF_MAGIC, 4);
	put(b, UUID, 16);
	put_le(b, p->stream_id, 4);
	put_le(b, p->cpu, 8);
	put_le(b, p->ts_begin, 8);
	put_le(b, p->ts_end, 8);
	put_le(b, 0, 8); /* content_size */
	put_le(b, 0, 8); /* packet_size */
	put_le(b, p->seq, 8);
	put_le(b, p->discarded, 8);
	put_le(b, p->cpu, 4);
	return start;
}

/* Close the packet with `pad` bytes of padding after the content. */
static void pkt_end(struct buf *b, size_t start, size_t pad)
{
	uint64_t content = (b->len - start) * 8;
	for (size_t i = 0; i < pad; i++)
		put_le(b, 0xa5, 1);
	patch_le(b, start + 48, content, 8);
	patch_le(b, start + 56, (b->len - start) * 8, 8);
}

static void ev_compact(struct buf *b, uint32_t id, uint64_t ts)
{
	put_le(b, id | (uint32_t)((ts & ((1u << 27) - 1)) << 5), 4);
}

static void ev_extended(struct buf *b, uint32_t id, uint64_t ts)
{
	put_le(b, 31, 1);
	put_le(b, id, 4);
	put_le(b, ts, 8);
}

static void write_file(const char *dir, const char *name, const void *data, size_t len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	/* A new file, not a truncated one: ext4 flushes those on close. */
	unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0 || (len && write(fd, data, len) != (ssize_t)len) || close(fd) < 0) {
		perror(path);
		exit(2);
	}
}

static const char *mkdir_case(const char *name)
{
	static char path[256];
	snprintf(path, sizeof(path), "%s/%s", root, name);
	if (mkdir(path, 0755) < 0 && errno != EEXIST) {
		perror(path);
		exit(2);
	}
	return path;
}

/* The metadata preamble as ringtrace writes it, with a clock. */
static void meta_head(struct buf *b, uint64_t freq, int64_t offset_s, uint64_t offset)
{
	char s[4096];
	snprintf(s, sizeof(s),
		 "/* CTF 1.8 */\n\n"
		 "typealias integer { size = 5; align = 1; signed = false; } := uint5_t;\n"
		 "typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
		 "typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n"
		 "typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
		 "typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n\n"
		 "trace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = \"" UUID_STR "\";\n\tbyte_order = le;\n"
		 "\tpacket.header := struct {\n\t\tuint32_t magic;\n\t\tuint8_t uuid[16];\n"
		 "\t\tuint32_t stream_id;\n\t\tuint64_t stream_instance_id;\n\t} align(8);\n};\n\n"
		 "env {\n\tdomain = \"ust\";\n\ttracer_name = \"ringtrace\";\n\thostname = \"h\\\"x\\\\\";\n"
		 "\tvpid = 42;\n};\n\n"
		 "// a line comment\n"
		 "clock {\n\tname = \"monotonic\";\n\tuuid = \"" UUID_STR "\";\n"
		 "\tdescription = \"CLOCK_MONOTONIC\";\n\tfreq = %llu;\n\tprecision = 1;\n"
		 "\toffset_s = %lld;\n\toffset = %llu;\n\tabsolute = false;\n};\n\n"
		 "typealias integer { size = 27; align = 1; signed = false; map = clock.monotonic.value; } := uint27_clock_t;\n"
		 "typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } := uint64_clock_t;\n\n"
		 "/* channel \"chan\" */\n"
		 "stream {\n\tid = 0;\n\tevent.header := struct {\n"
		 "\t\tenum : uint5_t { compact = 0 ... 30, extended = 31 } id;\n"
		 "\t\tvariant <id> {\n\t\t\tstruct { uint27_clock_t timestamp; } compact;\n"
		 "\t\t\tstruct { uint32_t id; uint64_clock_t timestamp; } extended;\n\t\t} v;\n"
		 "\t} align(8);\n\tpacket.context := struct {\n"
		 "\t\tuint64_clock_t timestamp_begin;\n\t\tuint64_clock_t timestamp_end;\n"
		 "\t\tuint64_t content_size;\n\t\tuint64_t packet_size;\n"
		 "\t\tuint64_t packet_seq_num;\n\t\tuint64_t events_discarded;\n"
		 "\t\tuint32_t cpu_id;\n\t} align(8);\n};\n\n",
		 (unsigned long long)freq, (long long)offset_s, (unsigned long long)offset);
	put(b, s, strlen(s));
}

static const char EVENTS[] =
	"event {\n\tname = \"t:ints\";\n\tid = 0;\n\tstream_id = 0;\n\tloglevel = 6;\n"
	"\tfields := struct {\n"
	"\t\tinteger { size = 8; align = 8; signed = true; encoding = none; base = 10; } _s8;\n"
	"\t\tinteger { size = 8; align = 8; signed = false; encoding = none; base = 10; } _u8;\n"
	"\t\tinteger { size = 16; align = 8; signed = true; encoding = none; base = 10; } _s16;\n"
	"\t\tinteger { size = 16; align = 8; signed = false; encoding = none; base = 10; } _u16;\n"
	"\t\tinteger { size = 32; align = 8; signed = true; encoding = none; base = 10; } _s32;\n"
	"\t\tinteger { size = 32; align = 8; signed = false; encoding = none; base = 10; } _u32;\n"
	"\t\tinteger { size = 64; align = 8; signed = true; encoding = none; base = 10; } _s64;\n"
	"\t\tinteger { size = 64; align = 8; signed = false; encoding = none; base = 10; } _u64;\n"
	"\t\tinteger { size = 64; align = 8; signed = false; encoding = none; base = 16; } _ptr;\n"
	"\t} align(8);\n};\n\n"
	"event {\n\tname = \"t:misc\";\n\tid = 1;\n\tstream_id = 0;\n\tloglevel = 4;\n"
	"\tfields := struct {\n"
	"\t\tfloating_point { exp_dig = 8; mant_dig = 24; align = 8; } _f;\n"
	"\t\tfloating_point { exp_dig = 11; mant_dig = 53; align = 8; } _d;\n"
	"\t\tenum : uint8_t { \"false\" = 0, \"true\" = 1 } _b;\n"
	"\t\tstring { encoding = UTF8; } _str;\n"
	"\t\tuint32_t __blob_length;\n"
	"\t\tinteger { size = 8; align = 8; signed = false; encoding = none; base = 16; } _blob[__blob_length];\n"
	"\t\tuint16_t _after;\n"
	"\t} align(8);\n};\n\n"
	"event {\n\tname = \"t:empty\";\n\tid = 2;\n\tstream_id = 0;\n"
	"\tfields := struct {\n\t} align(8);\n};\n\n"
	"event {\n\tname = \"t:ext\";\n\tid = 40;\n\tstream_id = 0;\n\tloglevel = 13;\n"
	"\tfields := struct {\n\t\tstring { encoding = UTF8; } _msg;\n\t} align(8);\n};\n";

static void write_metadata(const char *dir, const char *events)
{
	struct buf m = { 0 };
	meta_head(&m, 1000000000u, 1700000000, 500);
	put(&m, events, strlen(events));
	write_file(dir, "metadata", m.p, m.len);
	free(m.p);
}

/* Payloads of the test events. */
static void ints_payload(struct buf *b, int64_t s, uint64_t u, uint64_t ptr)
{
	put_le(b, (uint64_t)s, 1);
	put_le(b, u, 1);
	put_le(b, (uint64_t)s, 2);
	put_le(b, u, 2);
	put_le(b, (uint64_t)s, 4);
	put_le(b, u, 4);
	put_le(b, (uint64_t)s, 8);
	put_le(b, u, 8);
	put_le(b, ptr, 8);
}

static void misc_payload(struct buf *b, float f, double d, bool bo, const char *str,
			 const uint8_t *blob, uint32_t blen, uint16_t after)
{
	put_f32(b, f);
	put_f64(b, d);
	put_le(b, bo, 1);
	put_str(b, str);
	put_le(b, blen, 4);
	put(b, blob, blen);
	put_le(b, after, 2);
}

#define WRAP_TS (1005u + (1u << 27) - 1) /* low 27 bits 1004 < 1005: wraps */

/* The good trace: chan_0 (3 packets: events, then a seq gap, then a
 * header-only packet), chan_1 (events interleaved with chan_0's, with
 * ties), empty chan_2 and chan_10, and entries the reader must skip. */
static void build_good(const char *dir, struct buf *s0, struct buf *s1)
{
	static const uint8_t blob[3] = { 1, 2, 0xff };
	size_t p;
	p = pkt_begin(s0, &(struct pkt){ 0, 0, 1000, 9000, 0, 0 });
	ev_compact(s0, 0, 1000);
	ints_payload(s0, -1, UINT64_MAX, 0xdeadbeefcafef00dull);
	ev_compact(s0, 1, 1005);
	misc_payload(s0, 1.5f, -2.25, true, "h\xc3\xa9llo", blob, 3, 0xbeef);
	ev_compact(s0, 2, WRAP_TS);
	ev_extended(s0, 40, 5000000000ull);
	put_str(s0, "extended");
	ev_compact(s0, 2, 5000000007ull);
	ev_extended(s0, 1, 5000000010ull); /* extended although the id is small */
	misc_payload(s0, 0.1f, 1e300, false, "", NULL, 0, 0);
	pkt_end(s0, p, 5);
	p = pkt_begin(s0, &(struct pkt){ 0, 0, 6000000000ull, 6000000100ull, 3, 5 });
	ev_compact(s0, 0, 6000000001ull);
	ints_payload(s0, INT64_MIN, 0, 1);
	pkt_end(s0, p, 0);
	p = pkt_begin(s0, &(struct pkt){ 0, 0, 6000000200ull, 6000000200ull, 4, 7 });
	pkt_end(s0, p, 4);

	p = pkt_begin(s1, &(struct pkt){ 0, 1, 1003, 7000000000ull, 0, 0 });
	ev_compact(s1, 2, 1003);
	ev_compact(s1, 2, 1005);
	ev_extended(s1, 2, 6000000001ull);
	pkt_end(s1, p, 0);

	write_metadata(dir, EVENTS);
	write_file(dir, "chan_0", s0->p, s0->len);
	write_file(dir, "chan_1", s1->p, s1->len);
	write_file(dir, "chan_10", "", 0);
	write_file(dir, "chan_2", "", 0);
	write_file(dir, ".metadata.tmp", "garbage", 7);
	char sub[512];
	snprintf(sub, sizeof(sub), "%s/index", dir);
	mkdir(sub, 0755);
}

/* ------------------------------------------------------------------ */
/* The good trace                                                       */

#define NS(t) (1700000000000000000ll + 500 + (int64_t)(t))

static void check_value(const struct rtr_event *ev, const char *name, enum rtr_type type,
			struct rtr_value *v)
{
	int r = rtr_field_by_name(ev, name, v);
	CHECK(r == 0, "field %s of %s: %d", name, ev->cls->name, r);
	CHECK(v->type == type, "field %s: type %d, want %d", name, v->type, type);
}

static void check_ints(const struct rtr_event *ev, int64_t s, uint64_t u, uint64_t ptr)
{
	struct rtr_value v;
	check_value(ev, "s8", RTR_INT, &v);
	CHECK(v.i == (int8_t)s, "s8 %lld", (long long)v.i);
	check_value(ev, "u8", RTR_UINT, &v);
	CHECK_EQ(v.u, (uint8_t)u);
	check_value(ev, "s16", RTR_INT, &v);
	CHECK(v.i == (int16_t)s, "s16 %lld", (long long)v.i);
	check_value(ev, "u16", RTR_UINT, &v);
	CHECK_EQ(v.u, (uint16_t)u);
	check_value(ev, "s32", RTR_INT, &v);
	CHECK(v.i == (int32_t)s, "s32 %lld", (long long)v.i);
	check_value(ev, "u32", RTR_UINT, &v);
	CHECK_EQ(v.u, (uint32_t)u);
	check_value(ev, "s64", RTR_INT, &v);
	CHECK(v.i == s, "s64 %lld", (long long)v.i);
	check_value(ev, "u64", RTR_UINT, &v);
	CHECK_EQ(v.u, u);
	check_value(ev, "ptr", RTR_UINT, &v);
	CHECK_EQ(v.u, ptr);
}

static void check_misc(const struct rtr_event *ev, float f, double d, bool b,
		       const char *str, const uint8_t *blob, uint32_t blen, uint16_t after)
{
	struct rtr_value v;
	check_value(ev, "f", RTR_FLOAT, &v);
	CHECK(v.d == (double)f, "f %g", v.d);
	check_value(ev, "d", RTR_DOUBLE, &v);
	CHECK(v.d == d, "d %g", v.d);
	check_value(ev, "b", RTR_BOOL, &v);
	CHECK(v.b == b, "b %d", v.b);
	check_value(ev, "str", RTR_STRING, &v);
	CHECK(v.s.len == strlen(str) && !memcmp(v.s.p, str, v.s.len) && v.s.p[v.s.len] == '\0',
	      "str '%.*s'", (int)v.s.len, v.s.p);
	check_value(ev, "_blob_length", RTR_UINT, &v);
	CHECK_EQ(v.u, blen);
	check_value(ev, "blob", RTR_BYTES, &v);
	CHECK(v.bytes.len == blen && (!blen || !memcmp(v.bytes.p, blob, blen)), "blob len %zu",
	      v.bytes.len);
	check_value(ev, "after", RTR_UINT, &v);
	CHECK_EQ(v.u, after);
	/* By index: the same values. */
	struct rtr_value w;
	CHECK(rtr_field(ev, 6, &w) == 0 && w.type == RTR_UINT && w.u == after, "after by index");
}

static void test_good(void)
{
	unit_case = "good trace";
	const char *dir = mkdir_case("good");
	struct buf s0 = { 0 }, s1 = { 0 };
	build_good(dir, &s0, &s1);

	char err[512] = "";
	struct rtr_trace *t = NULL;
	int r = rtr_open(dir, &t, err, sizeof(err));
	CHECK(r == 0 && t, "rtr_open: %d %s", r, err);
	if (!t)
		return;
	CHECK(!strcmp(rtr_error(t), ""), "no error yet: %s", rtr_error(t));
	CHECK_EQ(rtr_clock_freq(t), 1000000000u);
	CHECK(rtr_ticks_to_ns(t, 0) == NS(0), "ticks_to_ns(0)");

	/* Classes: sorted by id, names, types. */
	const struct rtr_event_class *c;
	size_t nc = rtr_event_classes(t, &c);
	CHECK_EQ(nc, 4);
	if (nc == 4) {
		CHECK(c[0].id == 0 && !strcmp(c[0].name, "t:ints") && c[0].loglevel == 6 &&
		      c[0].nr_fields == 9 && c[0].stream_id == 0, "class t:ints");
		CHECK(c[1].id == 1 && !strcmp(c[1].name, "t:misc") && c[1].loglevel == 4 &&
		      c[1].nr_fields == 7, "class t:misc");
		CHECK(c[2].id == 2 && !strcmp(c[2].name, "t:empty") && c[2].loglevel == -1 &&
		      c[2].nr_fields == 0, "class t:empty");
		CHECK(c[3].id == 40 && !strcmp(c[3].name, "t:ext") && c[3].loglevel == 13,
		      "class t:ext");
		static const struct rtr_field_class want_ints[9] = {
			{ "s8", RTR_INT, 8, 10 }, { "u8", RTR_UINT, 8, 10 },
			{ "s16", RTR_INT, 16, 10 }, { "u16", RTR_UINT, 16, 10 },
			{ "s32", RTR_INT, 32, 10 }, { "u32", RTR_UINT, 32, 10 },
			{ "s64", RTR_INT, 64, 10 }, { "u64", RTR_UINT, 64, 10 },
			{ "ptr", RTR_UINT, 64, 16 },
		};
		static const struct rtr_field_class want_misc[7] = {
			{ "f", RTR_FLOAT, 32, 10 }, { "d", RTR_DOUBLE, 64, 10 },
			{ "b", RTR_BOOL, 8, 10 }, { "str", RTR_STRING, 0, 10 },
			{ "_blob_length", RTR_UINT, 32, 10 }, { "blob", RTR_BYTES, 8, 16 },
			{ "after", RTR_UINT, 16, 10 },
		};
		for (int i = 0; i < 9; i++)
			CHECK(!strcmp(c[0].fields[i].name, want_ints[i].name) &&
			      c[0].fields[i].type == want_ints[i].type &&
			      c[0].fields[i].bits == want_ints[i].bits &&
			      c[0].fields[i].base == want_ints[i].base,
			      "t:ints field %d: %s", i, c[0].fields[i].name);
		for (int i = 0; i < 7; i++)
			CHECK(!strcmp(c[1].fields[i].name, want_misc[i].name) &&
			      c[1].fields[i].type == want_misc[i].type &&
			      c[1].fields[i].bits == want_misc[i].bits &&
			      c[1].fields[i].base == want_misc[i].base,
			      "t:misc field %d: %s", i, c[1].fields[i].name);
	}

	/* Stream order: chan_0, chan_1, chan_2, chan_10; the rest skipped.
	 * Packet-level statistics are known at once. */
	const struct rtr_stream_stats *st;
	size_t ns = rtr_streams(t, &st);
	CHECK_EQ(ns, 4);
	if (ns == 4) {
		CHECK(strstr(st[0].path, "good/chan_0") && strstr(st[1].path, "good/chan_1") &&
		      strstr(st[2].path, "good/chan_2") && strstr(st[3].path, "good/chan_10"),
		      "stream order %s %s %s %s", st[0].path, st[1].path, st[2].path, st[3].path);
		CHECK(st[0].packets == 3 && st[0].events_discarded == 7 && st[0].packets_lost == 2 &&
		      st[0].bytes == s0.len && st[0].cpu == 0, "chan_0 stats");
		CHECK(st[1].packets == 1 && st[1].events_discarded == 0 && st[1].packets_lost == 0 &&
		      st[1].bytes == s1.len && st[1].cpu == 1, "chan_1 stats");
		CHECK(st[2].packets == 0 && st[2].bytes == 0 && st[2].cpu == 2, "chan_2 stats");
		CHECK(st[3].packets == 0 && st[3].cpu == 10, "chan_10 stats");
	}
	const struct rtr_gap *g;
	size_t ng = rtr_gaps(t, &g);
	/* One packet_seq_num gap, and the discarded events reported where
	 * the cumulative counter grows (as babeltrace2 does). */
	size_t nlost = 0, ndisc = 0;
	uint64_t disc = 0;
	for (size_t k = 0; k < ng; k++) {
		if (g[k].packets_lost) {
			nlost++;
			CHECK(g[k].stream == 0 && g[k].ticks_before == 9000 &&
			      g[k].ticks_after == 6000000000ull && g[k].packets_lost == 2, "gap");
		}
		if (g[k].events_discarded) {
			ndisc++;
			disc += g[k].events_discarded;
			CHECK(g[k].stream == 0, "discards in chan_0");
		}
	}
	CHECK(nlost == 1 && ndisc >= 1 && disc == 7, "gaps: %zu lost, %zu discard reports of %" PRIu64,
	      nlost, ndisc, disc);

	/* Events in merged order. */
	static const struct {
		uint64_t ticks;
		uint32_t stream, cpu;
		const char *name;
	} want[] = {
		{ 1000, 0, 0, "t:ints" },
		{ 1003, 1, 1, "t:empty" },
		{ 1005, 0, 0, "t:misc" },	/* tie: lower stream first */
		{ 1005, 1, 1, "t:empty" },
		{ WRAP_TS, 0, 0, "t:empty" },	/* compact wrap */
		{ 5000000000ull, 0, 0, "t:ext" },
		{ 5000000007ull, 0, 0, "t:empty" },
		{ 5000000010ull, 0, 0, "t:misc" },
		{ 6000000001ull, 0, 0, "t:ints" },
		{ 6000000001ull, 1, 1, "t:empty" },
	};
	struct rtr_event ev;
	size_t n = 0;
	while ((r = rtr_next(t, &ev)) > 0) {
		if (n >= sizeof(want) / sizeof(want[0])) {
			n++;
			continue;
		}
		CHECK(ev.ticks == want[n].ticks && ev.stream == want[n].stream &&
		      ev.cpu == want[n].cpu && !strcmp(ev.cls->name, want[n].name),
		      "event %zu: %llu %u %u %s", n, (unsigned long long)ev.ticks, ev.stream,
		      ev.cpu, ev.cls->name);
		CHECK(ev.ns == NS(want[n].ticks), "event %zu: ns %lld", n, (long long)ev.ns);
		switch (n) {
		case 0:
			check_ints(&ev, -1, UINT64_MAX, 0xdeadbeefcafef00dull);
			CHECK_EQ(ev.payload_len, 1 + 1 + 2 + 2 + 4 + 4 + 8 + 8 + 8);
			break;
		case 2: {
			static const uint8_t blob[3] = { 1, 2, 0xff };
			check_misc(&ev, 1.5f, -2.25, true, "h\xc3\xa9llo", blob, 3, 0xbeef);
			break;
		}
		case 5: {
			struct rtr_value v;
			check_value(&ev, "msg", RTR_STRING, &v);
			CHECK(!strcmp(v.s.p, "extended") && v.s.len == 8, "msg");
			break;
		}
		case 6: {
			struct rtr_value v;
			CHECK(ev.payload_len == 0, "empty payload");
			CHECK(rtr_field(&ev, 0, &v) == -EINVAL, "no field 0");
			break;
		}
		case 7:
			check_misc(&ev, 0.1f, 1e300, false, "", NULL, 0, 0);
			break;
		case 8: {
			check_ints(&ev, INT64_MIN, 0, 1);
			struct rtr_value v;
			CHECK(rtr_field(&ev, 9, &v) == -EINVAL, "index out of range");
			CHECK(rtr_field_by_name(&ev, "nope", &v) == -ENOENT, "unknown name");
			CHECK(rtr_field_by_name(&ev, "_s8", &v) == -ENOENT, "names are stripped");
			break;
		}
		}
		n++;
	}
	CHECK(r == 0, "rtr_next: %d %s", r, rtr_error(t));
	CHECK_EQ(n, sizeof(want) / sizeof(want[0]));
	CHECK(rtr_next(t, &ev) == 0, "still at the end");
	ns = rtr_streams(t, &st);
	if (ns == 4)
		CHECK(st[0].events == 7 && st[1].events == 3 && st[2].events == 0, "event counts");
	rtr_close(t);
	free(s0.p);
	free(s1.p);
}

/* Clock conversions with a TSC-like clock (expected values computed
 * exactly with Python integers), negative offsets and saturation. */
static void test_clock(void)
{
	unit_case = "clock";
	static const struct {
		uint64_t freq;
		int64_t offset_s;
		uint64_t offset, ticks;
		int64_t ns;
	} cases[] = {
		{ 2500000223u, 1795238653, 448362279, 0, 1795238653179344895ll },
		{ 2500000223u, 1795238653, 448362279, 123456789, 1795238653228727606ll },
		/* offset and ticks converted separately (as babeltrace2 does):
		 * one below the exact sum here */
		{ 2500000223u, 1795238653, 448362279, 2698074123542ull, 1795239732408898044ll },
		/* 2^64 - 1 ticks: babeltrace2's double arithmetic, 117 ns below
		 * the exact quotient */
		{ 2500000223u, 1795238653, 448362279, UINT64_MAX, 9173935624483395583ll },
		{ 1000000000u, -5, 7, 100, -4999999893ll },
		{ 1000000000u, 9223372036, 0, UINT64_MAX, INT64_MAX },
		{ 1000000000u, -9223372036, 0, 0, -9223372036000000000ll },
		{ 1000000000u, -9223372037, 0, 0, INT64_MIN },
		{ 1, 3, 0, 2, 5000000000ll },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char name[32];
		snprintf(name, sizeof(name), "clock%zu", i);
		const char *dir = mkdir_case(name);
		struct buf m = { 0 };
		meta_head(&m, cases[i].freq, cases[i].offset_s, cases[i].offset);
		write_file(dir, "metadata", m.p, m.len);
		free(m.p);
		char err[512];
		struct rtr_trace *t;
		int r = rtr_open(dir, &t, err, sizeof(err));
		CHECK(r == 0, "rtr_open: %s", err);
		if (r)
			continue;
		int64_t got = rtr_ticks_to_ns(t, cases[i].ticks);
		CHECK(got == cases[i].ns, "case %zu: %lld, want %lld", i, (long long)got,
		      (long long)cases[i].ns);
		struct rtr_event ev;
		CHECK(rtr_next(t, &ev) == 0, "no stream: no event");
		rtr_close(t);
	}
}

/* babeltrace2's formula, written independently: whole seconds of the
 * offset moved to offset_s, then offset and ticks each converted in double
 * precision and truncated (exact at 1 GHz), saturated to int64_t. */
static __int128 ref_cycles_ns(uint64_t freq, uint64_t cycles)
{
	if (freq == 1000000000u)
		return cycles;
	long double q = (double)(1e9 * (double)cycles) / (double)freq;
	return q >= 18446744073709551616.0L ? (__int128)UINT64_MAX : (__int128)(uint64_t)q;
}

static int64_t ref_ns(uint64_t freq, int64_t offset_s, uint64_t offset, uint64_t ticks)
{
	__int128 ns = ((__int128)offset_s + (__int128)(offset / freq)) * 1000000000 +
		      ref_cycles_ns(freq, offset % freq) + ref_cycles_ns(freq, ticks);
	return ns > INT64_MAX ? INT64_MAX : ns < INT64_MIN ? INT64_MIN : (int64_t)ns;
}

static uint64_t rnd(void);

static void test_clock_random(void)
{
	unit_case = "clock (random)";
	static const uint64_t freqs[] = {
		1, 3, 999999999u, 1000000000u, 1000000001u, 2500000223u, 3000000000u,
		18446744073u, 18446744074u, 1000000000000ull, 0x7fffffffffffffffull, UINT64_MAX,
	};
	const char *dir = mkdir_case("clock_random");
	for (size_t i = 0; i < sizeof(freqs) / sizeof(freqs[0]); i++) {
		for (int j = 0; j < 4; j++) {
			uint64_t f = freqs[i];
			int64_t off_s = j == 0 ? 0 : (int64_t)(rnd() % 4000000000u) - 2000000000;
			uint64_t off = j < 2 ? 0 : j == 2 ? rnd() % f : rnd() >> (rnd() % 64);
			struct buf m = { 0 };
			meta_head(&m, f, off_s, off);
			write_file(dir, "metadata", m.p, m.len);
			free(m.p);
			char err[512];
			struct rtr_trace *t;
			if (!CHECK(rtr_open(dir, &t, err, sizeof(err)) == 0, "rtr_open: %s", err))
				continue;
			unsigned bad = 0;
			for (int k = 0; k < 2000; k++) {
				uint64_t ticks = rnd() >> (rnd() % 64);
				if (k < 3)
					ticks = k == 0 ? 0 : k == 1 ? UINT64_MAX : UINT64_MAX - off;
				int64_t got = rtr_ticks_to_ns(t, ticks), want = ref_ns(f, off_s, off, ticks);
				if (got != want && bad++ < 3)
					CHECK(0, "freq %llu offset_s %lld offset %llu ticks %llu: %lld, want %lld",
					      (unsigned long long)f, (long long)off_s, (unsigned long long)off,
					      (unsigned long long)ticks, (long long)got, (long long)want);
			}
			CHECK(bad == 0, "freq %llu: %u wrong conversions", (unsigned long long)f, bad);
			rtr_close(t);
		}
	}
}

/* ------------------------------------------------------------------ */
/* The writer's own metadata and packets                                */

static void test_writer_compat(void)
{
	unit_case = "writer metadata";
	static const struct rt_field_desc f[] = {
		{ "a", RT_TYPE_S8 }, { "b", RT_TYPE_U8 }, { "c", RT_TYPE_S16 },
		{ "d", RT_TYPE_U16 }, { "e", RT_TYPE_S32 }, { "f", RT_TYPE_U32 },
		{ "g", RT_TYPE_S64 }, { "h", RT_TYPE_U64 }, { "i", RT_TYPE_FLOAT },
		{ "j", RT_TYPE_DOUBLE }, { "k", RT_TYPE_BOOL }, { "l", RT_TYPE_STRING },
		{ "m", RT_TYPE_POINTER }, { "n", RT_TYPE_BYTES }, { "o", RT_TYPE_U8 },
	};
	static const struct ctf_stream_class sc = { .id = 0, .name = "chan" };
	struct ctf_event_class ev[2] = {
		{ .id = 3, .stream_id = 0, .provider = "p", .name = "all", .loglevel = 2,
		  .nr_fields = sizeof(f) / sizeof(f[0]), .fields = f },
		{ .id = 33, .stream_id = 0, .provider = "p", .name = "big_id", .loglevel = 14,
		  .nr_fields = 0, .fields = NULL },
	};
	struct ctf_trace_info ti = {
		.hostname = "host", .procname = "proc", .vpid = 1, .trace_name = "x",
		.tracer_version = "0.1.0",
		.clock = { "tsc", "TSC \"calibrated\"", 2500000000u, 1700000000, 12345, 2500 },
	};
	memcpy(ti.uuid, UUID, 16);
	struct ctf_buf mb = { 0 };
	CHECK(ctf_metadata_build(&mb, &ti, &sc, 1, ev, 2) == 0, "ctf_metadata_build");
	const char *dir = mkdir_case("writer");
	write_file(dir, "metadata", mb.data, mb.len);
	ctf_buf_free(&mb);

	/* One packet made by the writer's packet code. */
	struct ctf_stream_info si = { .stream_id = 0, .subbuf_size = 4096 };
	memcpy(si.uuid, UUID, 16);
	static char sub[4096];
	memset(sub, 0x5a, sizeof(sub));
	uint64_t t0 = 1ull << 40;
	ctf_packet_begin(&si, 3, sub, t0, 0);
	char *p = sub + CTF_PACKET_HEADER_SIZE;
	p += ctf_write_event_header(p, 3, t0 + 10, 0);
	int8_t a = -5;
	uint8_t b = 250, o = 7;
	int16_t c = -300;
	uint16_t d = 60000;
	int32_t e = -70000;
	uint32_t fu = 4000000000u, nlen = 2;
	int64_t g = -5000000000ll;
	uint64_t h = 18000000000000000000ull, m = 0x7fff12345678ull;
	float fi = 3.5f;
	double j = -0.125;
	bool k = true;
	memcpy(p, &a, 1), p += 1;
	memcpy(p, &b, 1), p += 1;
	memcpy(p, &c, 2), p += 2;
	memcpy(p, &d, 2), p += 2;
	memcpy(p, &e, 4), p += 4;
	memcpy(p, &fu, 4), p += 4;
	memcpy(p, &g, 8), p += 8;
	memcpy(p, &h, 8), p += 8;
	memcpy(p, &fi, 4), p += 4;
	memcpy(p, &j, 8), p += 8;
	memcpy(p, &k, 1), p += 1;
	memcpy(p, "str", 4), p += 4;
	memcpy(p, &m, 8), p += 8;
	memcpy(p, &nlen, 4), p += 4;
	memcpy(p, "\x01\x02", 2), p += 2;
	memcpy(p, &o, 1), p += 1;
	p += ctf_write_event_header(p, 33, t0 + (1ull << 30), 1);
	uint64_t used = (uint64_t)(p - sub);
	ctf_packet_end(&si, 3, sub, t0 + (1ull << 31), used, 9);
	/* What the consumer does before writing the packet out. */
	uint64_t bytes = (used + 7) & ~7ull, bits = bytes * 8;
	memcpy(sub + offsetof(struct ctf_packet_header, packet_size), &bits, 8);
	write_file(dir, "chan_3", sub, bytes);

	char err[512];
	struct rtr_trace *t;
	int r = rtr_open(dir, &t, err, sizeof(err));
	CHECK(r == 0, "rtr_open: %s", err);
	if (r)
		return;
	const struct rtr_event_class *cl;
	size_t n = rtr_event_classes(t, &cl);
	CHECK(n == 2 && !strcmp(cl[0].name, "p:all") && cl[0].nr_fields == 16 &&
	      cl[0].loglevel == 2 && !strcmp(cl[1].name, "p:big_id") && cl[1].id == 33,
	      "classes");
	if (n == 2 && cl[0].nr_fields == 16) {
		static const struct rtr_field_class want[16] = {
			{ "a", RTR_INT, 8, 10 }, { "b", RTR_UINT, 8, 10 },
			{ "c", RTR_INT, 16, 10 }, { "d", RTR_UINT, 16, 10 },
			{ "e", RTR_INT, 32, 10 }, { "f", RTR_UINT, 32, 10 },
			{ "g", RTR_INT, 64, 10 }, { "h", RTR_UINT, 64, 10 },
			{ "i", RTR_FLOAT, 32, 10 }, { "j", RTR_DOUBLE, 64, 10 },
			{ "k", RTR_BOOL, 8, 10 }, { "l", RTR_STRING, 0, 10 },
			{ "m", RTR_UINT, 8 * sizeof(void *), 16 },
			{ "_n_length", RTR_UINT, 32, 10 }, { "n", RTR_BYTES, 8, 16 },
			{ "o", RTR_UINT, 8, 10 },
		};
		for (int i = 0; i < 16; i++)
			CHECK(!strcmp(cl[0].fields[i].name, want[i].name) &&
			      cl[0].fields[i].type == want[i].type &&
			      cl[0].fields[i].bits == want[i].bits &&
			      cl[0].fields[i].base == want[i].base,
			      "field %d: %s %d %u %d", i, cl[0].fields[i].name, cl[0].fields[i].type,
			      cl[0].fields[i].bits, cl[0].fields[i].base);
	}
	CHECK_EQ(rtr_clock_freq(t), 2500000000u);
	struct rtr_event e1, e2, e3;
	CHECK(rtr_next(t, &e1) == 1 && e1.ticks == t0 + 10 && e1.cpu == 3 &&
	      !strcmp(e1.cls->name, "p:all"), "first event");
	struct rtr_value v;
	CHECK(rtr_field_by_name(&e1, "a", &v) == 0 && v.i == -5, "a");
	CHECK(rtr_field_by_name(&e1, "b", &v) == 0 && v.u == 250, "b");
	CHECK(rtr_field_by_name(&e1, "c", &v) == 0 && v.i == -300, "c");
	CHECK(rtr_field_by_name(&e1, "d", &v) == 0 && v.u == 60000, "d");
	CHECK(rtr_field_by_name(&e1, "e", &v) == 0 && v.i == -70000, "e");
	CHECK(rtr_field_by_name(&e1, "f", &v) == 0 && v.u == 4000000000u, "f");
	CHECK(rtr_field_by_name(&e1, "g", &v) == 0 && v.i == -5000000000ll, "g");
	CHECK(rtr_field_by_name(&e1, "h", &v) == 0 && v.u == h, "h");
	CHECK(rtr_field_by_name(&e1, "i", &v) == 0 && v.d == 3.5, "i");
	CHECK(rtr_field_by_name(&e1, "j", &v) == 0 && v.d == -0.125, "j");
	CHECK(rtr_field_by_name(&e1, "k", &v) == 0 && v.b, "k");
	CHECK(rtr_field_by_name(&e1, "l", &v) == 0 && !strcmp(v.s.p, "str"), "l");
	CHECK(rtr_field_by_name(&e1, "m", &v) == 0 && v.u == m, "m");
	CHECK(rtr_field_by_name(&e1, "n", &v) == 0 && v.bytes.len == 2 && v.bytes.p[1] == 2, "n");
	CHECK(rtr_field_by_name(&e1, "o", &v) == 0 && v.u == 7, "o");
	CHECK(rtr_next(t, &e2) == 1 && e2.ticks == t0 + (1ull << 30) && e2.cls->id == 33,
	      "second event (extended)");
	CHECK(rtr_next(t, &e3) == 0, "end");
	const struct rtr_stream_stats *st;
	CHECK(rtr_streams(t, &st) == 1 && st[0].events_discarded == 9 && st[0].cpu == 3 &&
	      st[0].packets == 1 && st[0].events == 2, "stats");
	rtr_close(t);
}

/* ------------------------------------------------------------------ */
/* Bad input                                                            */

/* The trace in `dir` must fail (at open or while reading) with a message
 * that contains every one of the given strings. */
static void expect_fail_impl(const char *dir, int line, const char *const *want)
{
	char err[512] = "";
	struct rtr_trace *t = NULL;
	int r = rtr_open(dir, &t, err, sizeof(err));
	const char *msg = err;
	if (r == 0) {
		struct rtr_event ev;
		unsigned n = 0;
		while ((r = rtr_next(t, &ev)) > 0 && n < 1000000)
			n++;
		msg = rtr_error(t);
		if (r < 0) {
			int again = rtr_next(t, &ev);
			unit_check(again == r, __FILE__, line, "the error is sticky: %d then %d", r, again);
		}
	} else {
		unit_check(t == NULL, __FILE__, line, "no trace on failure");
	}
	unit_check(r < 0, __FILE__, line, "%s: expected an error, got %d", dir, r);
	for (; *want; want++)
		unit_check(strstr(msg, *want) != NULL, __FILE__, line,
			   "message '%s' lacks '%s'", msg, *want);
	if (verbose)
		printf("  %s -> %s\n", dir, msg);
	if (t)
		rtr_close(t);
}

#define EXPECT_FAIL(dir, ...) \
	expect_fail_impl(dir, __LINE__, (const char *const[]){ __VA_ARGS__, NULL })

/* A one-stream trace: the metadata of the good trace and `s` as chan_0. */
static const char *bad_case(const char *name, const struct buf *s)
{
	const char *dir = mkdir_case(name);
	write_metadata(dir, EVENTS);
	write_file(dir, "chan_0", s->p, s->len);
	return dir;
}

/* A packet with one t:ints event (payload 38 bytes), then `more`. */
static size_t one_event(struct buf *b, uint64_t seq)
{
	size_t p = pkt_begin(b, &(struct pkt){ 0, 0, 100, 200, seq, 0 });
	ev_compact(b, 0, 100);
	ints_payload(b, 1, 2, 3);
	return p;
}

static void test_bad_packets(void)
{
	unit_case = "bad packets";
	struct buf b = { 0 };
	size_t p;

	/* Bad magic in the second packet: named by its offset. */
	p = one_event(&b, 0);
	pkt_end(&b, p, 0);
	size_t second = b.len;
	p = one_event(&b, 1);
	pkt_end(&b, p, 0);
	patch_le(&b, second, 0x12345678, 4);
	char off[64];
	snprintf(off, sizeof(off), "byte offset %zu:", second);
	EXPECT_FAIL(bad_case("magic", &b), "magic/chan_0", off, "bad packet magic 0x12345678");
	b.len = 0;

	/* content_size > packet_size. */
	p = one_event(&b, 0);
	pkt_end(&b, p, 0);
	patch_le(&b, 48, (b.len + 1) * 8, 8);
	EXPECT_FAIL(bad_case("content_gt_packet", &b), "content_gt_packet/chan_0", "byte offset 0:",
		    "content_size", "larger than packet_size");
	b.len = 0;

	/* packet_size past the end of the file (truncated file). */
	p = one_event(&b, 0);
	pkt_end(&b, p, 0);
	b.len -= 10;
	EXPECT_FAIL(bad_case("truncated", &b), "truncated/chan_0", "byte offset 0:",
		    "goes past the end of the file");
	b.len = 0;

	/* packet_size not a multiple of 8 bits. */
	p = one_event(&b, 0);
	pkt_end(&b, p, 0);
	patch_le(&b, 56, b.len * 8 - 3, 8);
	EXPECT_FAIL(bad_case("odd_size", &b), "odd_size/chan_0", "not a whole number of bytes");
	b.len = 0;

	/* packet_size smaller than the header. */
	p = one_event(&b, 0);
	pkt_end(&b, p, 0);
	patch_le(&b, 56, 80 * 8, 8);
	patch_le(&b, 48, 80 * 8, 8);
	EXPECT_FAIL(bad_case("tiny_packet", &b), "tiny_packet/chan_0", "smaller than the packet header");
	b.len = 0;

	/* content_size smaller than the header. */
	p = one_event(&b, 0);
	pkt_end(&b, p, 0);
	patch_le(&b, 48, 8, 8);
	EXPECT_FAIL(bad_case("tiny_content", &b), "tiny_content/chan_0", "content_size 8 bits");
	b.len = 0;

	/* A few bytes after the last packet: a truncated header. */
	p = one_event(&b, 0);
	pkt_end(&b, p, 0);
	size_t end = b.len;
	put(&b, "\xc1\x1f\xfc", 3);
	snprintf(off, sizeof(off), "byte offset %zu:", end);
	EXPECT_FAIL(bad_case("trailing", &b), "trailing/chan_0", off,
		    "packet header field 'magic' goes past the end");
	b.len = 0;

	/* Another trace's stream file. */
	p = one_event(&b, 0);
	pkt_end(&b, p, 0);
	b.p[4] ^= 1;
	EXPECT_FAIL(bad_case("uuid", &b), "uuid/chan_0", "byte offset 4:", "UUID");
	b.len = 0;

	/* Unknown stream class. */
	p = one_event(&b, 0);
	pkt_end(&b, p, 0);
	patch_le(&b, 20, 5, 4);
	EXPECT_FAIL(bad_case("stream_id", &b), "stream_id/chan_0", "stream id 5 is not in the metadata");
	free(b.p);
}

static void test_bad_events(void)
{
	unit_case = "bad events";
	struct buf b = { 0 };
	size_t p, at;
	char off[64];

	/* An event that runs past content_size (the packet is larger). */
	p = one_event(&b, 0);
	at = b.len;
	ev_compact(&b, 0, 101);
	ints_payload(&b, 1, 2, 3);
	pkt_end(&b, p, 16);
	patch_le(&b, p + 48, (b.len - 16 - 8) * 8, 8); /* cut the last 8 bytes */
	snprintf(off, sizeof(off), "byte offset %zu:", at);
	snprintf(off, sizeof(off), "event 't:ints' at byte offset %zu:", at);
	EXPECT_FAIL(bad_case("past_content", &b), "past_content/chan_0", off,
		    "payload field 'ptr' goes past the end of the packet content");
	b.len = 0;

	/* Unknown event id, after one good event. */
	p = one_event(&b, 0);
	at = b.len;
	ev_compact(&b, 7, 101);
	pkt_end(&b, p, 0);
	snprintf(off, sizeof(off), "byte offset %zu:", at);
	EXPECT_FAIL(bad_case("unknown_id", &b), "unknown_id/chan_0", off, "unknown event id 7");
	b.len = 0;

	/* Unknown event id in an extended header. */
	p = pkt_begin(&b, &(struct pkt){ 0, 0, 100, 200, 0, 0 });
	ev_extended(&b, 1000000, 100);
	pkt_end(&b, p, 0);
	EXPECT_FAIL(bad_case("unknown_ext_id", &b), "unknown_ext_id/chan_0", "byte offset 84:",
		    "unknown event id 1000000");
	b.len = 0;

	/* A string without NUL before the end of the content (there is a
	 * NUL in the padding after it: it must not count). */
	p = pkt_begin(&b, &(struct pkt){ 0, 0, 100, 200, 0, 0 });
	ev_compact(&b, 1, 100);
	put_f32(&b, 1);
	put_f64(&b, 2);
	put_le(&b, 1, 1);
	put(&b, "no terminator", 13);
	pkt_end(&b, p, 0);
	put_le(&b, 0, 8);
	patch_le(&b, p + 56, (b.len - p) * 8, 8);
	snprintf(off, sizeof(off), "byte offset %u:", 84 + 4 + 4 + 8 + 1);
	EXPECT_FAIL(bad_case("no_nul", &b), "no_nul/chan_0", off, "string 'str' has no NUL");
	b.len = 0;

	/* A sequence longer than what is left of the packet. */
	p = pkt_begin(&b, &(struct pkt){ 0, 0, 100, 200, 0, 0 });
	ev_compact(&b, 1, 100);
	put_f32(&b, 1);
	put_f64(&b, 2);
	put_le(&b, 1, 1);
	put_str(&b, "s");
	put_le(&b, 1000, 4);
	put(&b, "abc", 3);
	pkt_end(&b, p, 0);
	EXPECT_FAIL(bad_case("long_seq", &b), "long_seq/chan_0", "sequence 'blob' of 1000 elements",
		    "(3 bytes left)");
	b.len = 0;

	/* The field after a sequence runs past the content. */
	p = pkt_begin(&b, &(struct pkt){ 0, 0, 100, 200, 0, 0 });
	ev_compact(&b, 1, 100);
	misc_payload(&b, 1, 2, true, "s", (const uint8_t *)"ab", 2, 7);
	b.len -= 1;
	pkt_end(&b, p, 0);
	EXPECT_FAIL(bad_case("after_seq", &b), "after_seq/chan_0", "field 'after' goes past the end");
	b.len = 0;

	/* Truncated event headers. */
	p = one_event(&b, 0);
	at = b.len;
	put_le(&b, 2, 3);
	pkt_end(&b, p, 0);
	snprintf(off, sizeof(off), "byte offset %zu:", at);
	EXPECT_FAIL(bad_case("short_compact", &b), "short_compact/chan_0", off,
		    "event header field 'timestamp' goes past the end");
	b.len = 0;
	p = one_event(&b, 0);
	put_le(&b, 31, 1);
	put_le(&b, 40, 4);
	pkt_end(&b, p, 0);
	EXPECT_FAIL(bad_case("short_extended", &b), "short_extended/chan_0",
		    "event header field 'timestamp' goes past the end");
	free(b.p);
}

static void meta_case(const char *name, const char *text)
{
	const char *dir = mkdir_case(name);
	write_file(dir, "metadata", text, strlen(text));
}

/* The good metadata with `from` replaced by `to` (first occurrence). */
static void meta_edit(const char *name, const char *from, const char *to)
{
	struct buf m = { 0 };
	meta_head(&m, 1000000000u, 1700000000, 500);
	put(&m, EVENTS, sizeof(EVENTS));
	char *s = (char *)m.p;
	char *at = strstr(s, from);
	if (!at) {
		fprintf(stderr, "meta_edit %s: '%s' not found\n", name, from);
		exit(2);
	}
	struct buf o = { 0 };
	put(&o, s, (size_t)(at - s));
	put(&o, to, strlen(to));
	put(&o, at + strlen(from), strlen(at + strlen(from)) + 1);
	meta_case(name, (const char *)o.p);
	free(m.p);
	free(o.p);
}

static void test_bad_metadata(void)
{
	unit_case = "bad metadata";
	char path[256];

	/* Missing metadata, empty directory, no directory. */
	const char *dir = mkdir_case("no_metadata");
	write_file(dir, "chan_0", "", 0);
	snprintf(path, sizeof(path), "%s/metadata", dir);
	EXPECT_FAIL(dir, path, "no metadata file");
	dir = mkdir_case("empty_dir");
	EXPECT_FAIL(dir, dir, "empty directory");
	snprintf(path, sizeof(path), "%s/does_not_exist", root);
	EXPECT_FAIL(path, path, "cannot open the trace directory");
	struct rtr_trace *t = (struct rtr_trace *)(uintptr_t)1;
	CHECK(rtr_open(path, &t, NULL, 0) == -ENOENT && t == NULL, "-ENOENT, NULL trace");

	meta_case("meta_empty", "");
	EXPECT_FAIL(mkdir_case("meta_empty"), "meta_empty/metadata", "empty metadata file");
	meta_case("meta_sig", "trace { };");
	EXPECT_FAIL(mkdir_case("meta_sig"), "meta_sig/metadata", "not CTF 1.8 metadata");
	meta_case("meta_packetized", "\x57\x1d\xd1\x75 binary");
	EXPECT_FAIL(mkdir_case("meta_packetized"), "truncated metadata packet header");

	/* Syntax errors, with line and byte offset. */
	meta_edit("syn_semicolon", "\tid = 2;\n", "\tid = 2\n");
	EXPECT_FAIL(mkdir_case("syn_semicolon"), "syn_semicolon/metadata: line",
		    "byte offset", "expected ';' after an attribute, found 'stream_id'");
	meta_case("syn_comment", "/* CTF 1.8 */ trace { /* never closed ");
	EXPECT_FAIL(mkdir_case("syn_comment"), "syn_comment/metadata: line 1, column 23 (byte offset 22)",
		    "unterminated comment");
	meta_case("syn_string", "/* CTF 1.8 */\ntrace { uuid = \"abc");
	EXPECT_FAIL(mkdir_case("syn_string"), "line 2, column 16", "unterminated string literal");
	meta_case("syn_char", "/* CTF 1.8 */\ntrace { major = 1 @ 2; };");
	EXPECT_FAIL(mkdir_case("syn_char"), "line 2", "unexpected character '@'");
	meta_case("syn_eof", "/* CTF 1.8 */\ntrace { major = 1;");
	EXPECT_FAIL(mkdir_case("syn_eof"), "missing '}'");
	meta_case("syn_number", "/* CTF 1.8 */\ntrace { major = 99999999999999999999999; };");
	EXPECT_FAIL(mkdir_case("syn_number"), "integer literal too large");
	meta_case("syn_top", "/* CTF 1.8 */\n42;");
	EXPECT_FAIL(mkdir_case("syn_top"), "expected a trace, env, clock, stream or event block");
	meta_case("no_trace", "/* CTF 1.8 */\nenv { a = 1; };");
	EXPECT_FAIL(mkdir_case("no_trace"), "no trace block");
	meta_edit("unknown_type", "uint16_t _after;", "uint17_t _after;");
	EXPECT_FAIL(mkdir_case("unknown_type"), "unknown type 'uint17_t'");
	meta_edit("no_size", "size = 8; align = 8; signed = true;", "align = 8; signed = true;");
	EXPECT_FAIL(mkdir_case("no_size"), "integer without size");
	{
		/* Nesting bomb: bounded depth, no stack overflow. */
		struct buf m = { 0 };
		put(&m, "/* CTF 1.8 */ typealias ", 24);
		for (int i = 0; i < 100000; i++)
			put(&m, "struct { ", 9);
		put(&m, "", 1);
		meta_case("deep", (const char *)m.p);
		free(m.p);
		EXPECT_FAIL(mkdir_case("deep"), "types nested too deep");
	}

	/* Valid TSDL that this reader does not decode. */
	meta_edit("minor", "minor = 8;", "minor = 9;");
	EXPECT_FAIL(mkdir_case("minor"), "CTF 1.9 is not supported");
	meta_edit("int65", "size = 16; align = 8; signed = true;", "size = 65; align = 8; signed = true;");
	EXPECT_FAIL(mkdir_case("int65"), "integers of 65 bits are not supported");
	meta_edit("half", "exp_dig = 8; mant_dig = 24;", "exp_dig = 5; mant_dig = 11;");
	EXPECT_FAIL(mkdir_case("half"), "exp_dig 5, mant_dig 11 is not supported");
	meta_edit("seqref", "_blob[__blob_length]", "_blob[__nope]");
	EXPECT_FAIL(mkdir_case("seqref"), "cannot resolve the field path '__nope'");
	meta_edit("seqstr", "_blob[__blob_length]", "_blob[_str]");
	EXPECT_FAIL(mkdir_case("seqstr"), "'_str' is not an integer");
	meta_edit("dup_id", "id = 40;", "id = 1;");
	EXPECT_FAIL(mkdir_case("dup_id"), "event 't:ext': id 1 of stream 0 is already used by 't:misc'");
	meta_edit("no_id", "\tid = 2;\n", "\n");
	EXPECT_FAIL(mkdir_case("no_id"), "event 't:empty' has no id");
	meta_edit("bad_stream", "id = 2;\n\tstream_id = 0;", "id = 2;\n\tstream_id = 4;");
	EXPECT_FAIL(mkdir_case("bad_stream"), "event 't:empty': stream 4 is not declared");
	meta_edit("tag_int", "variant <id>", "variant <v>");
	EXPECT_FAIL(mkdir_case("tag_int"), "cannot resolve the field path 'v'");
	meta_edit("bad_uuid", "uuid = \"2deb", "uuid = \"zdeb");
	EXPECT_FAIL(mkdir_case("bad_uuid"), "bad uuid");
	meta_edit("freq0", "freq = 1000000000;", "freq = 0;");
	EXPECT_FAIL(mkdir_case("freq0"), "clock frequency 0");
}

/* Tolerated: unknown attributes and blocks, comments, other spellings. */
static void test_tolerant_metadata(void)
{
	unit_case = "tolerant metadata";
	struct buf m = { 0 };
	meta_head(&m, 1000000000u, 0, 0);
	static const char extra[] =
		"callsite {\n\tname = \"t:x\";\n\tfunc = \"main\";\n\tline = 12;\n};\n"
		"typedef integer { size = 16; signed = 1; base = hex; } my_s16;\n"
		"typealias integer { size = 32; } := unsigned /* c */  int;\n"
		"event {\n\tname = \"t:x\";\n\tid = 0;\n\tmodel.emf.uri = \"http://x\";\n"
		"\tfields := struct {\n\t\tmy_s16 _a;\n\t\tunsigned int _n;\n"
		"\t\tinteger { size = 8; encoding = UTF8; } _chars[3];\n"
		"\t\tenum : uint8_t { A, B = 5, C = 6 ... 0xff, } _e;\n"
		"\t\tstring _s;\n\t\tinteger { size = 8; } _seq[event /* x */ . fields ._n];\n"
		"\t};\n};\n";
	put(&m, extra, sizeof(extra) - 1);
	const char *dir = mkdir_case("tolerant");
	write_file(dir, "metadata", m.p, m.len);
	free(m.p);
	struct buf b = { 0 };
	size_t p = pkt_begin(&b, &(struct pkt){ 0, 0, 5, 5, 0, 0 });
	ev_compact(&b, 0, 6);
	put_le(&b, (uint16_t)-2, 2);
	put_le(&b, 2, 4);
	put(&b, "abc", 3);
	put_le(&b, 5, 1);
	put_str(&b, "x");
	put(&b, "\x09\x08", 2);
	pkt_end(&b, p, 0);
	write_file(dir, "s", b.p, b.len);
	free(b.p);
	char err[512];
	struct rtr_trace *t;
	int r = rtr_open(dir, &t, err, sizeof(err));
	CHECK(r == 0, "rtr_open: %s", err);
	if (r)
		return;
	struct rtr_event ev;
	struct rtr_value v;
	CHECK(rtr_next(t, &ev) == 1 && ev.cls->nr_fields == 6, "event");
	CHECK(ev.cls->fields[0].base == 16 && ev.cls->fields[3].type == RTR_ENUM, "classes");
	CHECK(rtr_field(&ev, 0, &v) == 0 && v.type == RTR_INT && v.i == -2, "a");
	CHECK(rtr_field(&ev, 2, &v) == 0 && v.type == RTR_STRING && v.s.len == 3 &&
	      !memcmp(v.s.p, "abc", 3), "chars: a text array is a string");
	CHECK(rtr_field(&ev, 3, &v) == 0 && v.type == RTR_ENUM && v.u == 5 && v.label &&
	      !strcmp(v.label, "B"), "enum");
	CHECK(rtr_field(&ev, 5, &v) == 0 && v.bytes.len == 2 && v.bytes.p[0] == 9, "seq");
	CHECK(rtr_next(t, &ev) == 0, "end");
	const struct rtr_stream_stats *st;
	CHECK(rtr_streams(t, &st) == 1 && st[0].cpu == 0, "a stream file without _cpu");
	rtr_close(t);
}

/* ------------------------------------------------------------------ */
/* Random damage: must end with 0 or an error, never crash or hang      */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void read_all(const char *dir, unsigned *ok, unsigned *failed)
{
	char err[512];
	struct rtr_trace *t;
	int r = rtr_open(dir, &t, err, sizeof(err));
	if (r == 0) {
		struct rtr_event ev;
		while ((r = rtr_next(t, &ev)) > 0) {
			for (uint32_t k = 0; k < ev.cls->nr_fields; k++) {
				struct rtr_value v;
				if (rtr_field(&ev, k, &v) < 0)
					unit_check(0, __FILE__, __LINE__, "field %u of a returned event", k);
			}
		}
		if (r < 0)
			CHECK(strstr(rtr_error(t), dir) != NULL, "message names the file: %s", rtr_error(t));
		rtr_close(t);
	} else {
		CHECK(err[0] != '\0', "a message");
	}
	if (r < 0)
		++*failed;
	else
		++*ok;
}

static void test_fuzz(void)
{
	unit_case = "random damage";
	const char *dir = mkdir_case("fuzz");
	struct buf s0 = { 0 }, s1 = { 0 };
	build_good(dir, &s0, &s1);
	struct buf meta = { 0 };
	meta_head(&meta, 1000000000u, 1700000000, 500);
	put(&meta, EVENTS, sizeof(EVENTS) - 1);
	unsigned ok = 0, failed = 0;
	uint8_t *copy = malloc(s0.len);
	for (int i = 0; i < 3000; i++) {
		memcpy(copy, s0.p, s0.len);
		size_t len = s0.len;
		int kind = (int)(rnd() % 4);
		int flips = 1 + (int)(rnd() % 4);
		for (int k = 0; k < flips; k++) {
			size_t at = (size_t)(rnd() % len);
			if (kind == 0)
				copy[at] ^= (uint8_t)(1u << (rnd() % 8));
			else if (kind == 1)
				copy[at] = (uint8_t)rnd();
			else if (kind == 2)
				copy[at] = (uint8_t)((copy[at] & ~31u) | (rnd() % 32)); /* event ids */
		}
		if (kind == 3)
			len = (size_t)(rnd() % len);
		write_file(dir, "chan_0", copy, len);
		read_all(dir, &ok, &failed);
	}
	write_file(dir, "chan_0", s0.p, s0.len);
	char *mcopy = malloc(meta.len + 1);
	for (int i = 0; i < 1500; i++) {
		memcpy(mcopy, meta.p, meta.len);
		size_t len = meta.len;
		if (i % 3 == 0) {
			len = 10 + (size_t)(rnd() % (meta.len - 10));
		} else {
			for (int k = 0; k < 1 + (int)(rnd() % 3); k++) {
				static const char chars[] = "{};=:.[]<>\"_ 0123456789abz\n/*";
				mcopy[10 + rnd() % (meta.len - 10)] = chars[rnd() % (sizeof(chars) - 1)];
			}
		}
		write_file(dir, "metadata", mcopy, len);
		read_all(dir, &ok, &failed);
	}
	CHECK(ok > 0 && failed > 0, "both outcomes happen (%u ok, %u failed)", ok, failed);
	if (verbose)
		printf("  fuzz: %u read to the end, %u rejected\n", ok, failed);
	free(copy);
	free(mcopy);
	free(meta.p);
	free(s0.p);
	free(s1.p);
}

/* ------------------------------------------------------------------ */

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int main(int argc, char **argv)
{
	verbose = argc > 1 && !strcmp(argv[1], "-v");
	snprintf(root, sizeof(root), "/tmp/test_reader.XXXXXX");
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 2;
	}
	test_good();
	test_clock();
	test_clock_random();
	test_writer_compat();
	test_bad_packets();
	test_bad_events();
	test_bad_metadata();
	test_tolerant_metadata();
	test_fuzz();
	if (!unit_failed || !getenv("KEEP"))
		nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	else
		printf("kept %s\n", root);
	return unit_finish();
}
