/*
 * test_live.c - the live side of the reader and the LTTng live protocol's
 * frames: a live set fed by a scripted pull (a stream added during
 * another's pull, quiet streams holding the merge back until asked again,
 * metadata replaced by a longer one while events of the old one are
 * pending, the end), the pull's failures; every frame's round trip and
 * documented offsets, wrong sizes refused, hostile strings bounded; the
 * viewer URL parser.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "live_proto.h"
#include "reader.h"
#include "unit.h"

/* ------------------------------------------------------------------ */
/* A live set                                                           */

#define META_HEAD                                                                      \
	"/* CTF 1.8 */\n"                                                              \
	"typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"  \
	"typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"  \
	"trace { major = 1; minor = 8; byte_order = le;\n"                           \
	"  packet.header := struct { uint32_t magic; uint32_t stream_id; }; };\n"    \
	"clock { name = c; freq = 1000000000; };\n"                                   \
	"typealias integer { size = 64; align = 8; signed = false; map = clock.c.value; } := ts_t;\n" \
	"stream { id = 0;\n"                                                           \
	"  packet.context := struct { ts_t timestamp_begin; ts_t timestamp_end;\n"   \
	"    uint64_t content_size; uint64_t packet_size; };\n"                        \
	"  event.header := struct { uint32_t id; ts_t timestamp; }; };\n"             \
	"event { name = \"a:x\"; id = 0; stream_id = 0;\n"                            \
	"  fields := struct { uint32_t v; }; };\n"

static const char META1[] = META_HEAD;
static const char META2[] = META_HEAD "event { name = \"a:y\"; id = 1; stream_id = 0;\n"
				       "  fields := struct { uint32_t v; uint32_t w; }; };\n";

struct ev {
	uint32_t id;
	uint64_t ts;
	uint32_t v;
};

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* A packet of events (little-endian, sizes in bits), 8 bytes of padding. */
static size_t packet(uint8_t *b, const struct ev *e, size_t n)
{
	size_t off = 40;
	for (size_t k = 0; k < n; k++) {
		put32(b + off, e[k].id);
		put64(b + off + 4, e[k].ts);
		put32(b + off + 12, e[k].v);
		off += 16;
		if (e[k].id == 1) {
			put32(b + off, e[k].v * 2);
			off += 4;
		}
	}
	put32(b, 0xC1FC1FC1);
	put32(b + 4, 0);
	put64(b + 8, n ? e[0].ts : 0);
	put64(b + 16, n ? e[n - 1].ts : 0);
	put64(b + 24, off * 8);
	put64(b + 32, (off + 8) * 8);
	memset(b + off, 0, 8);
	return off + 8;
}

enum step { S_PACKET, S_QUIET, S_ENDED, S_META2_PACKET, S_ADD_STREAM_PACKET, S_NOTHING,
	    S_FAIL };

struct script {
	enum step step;
	struct ev ev[4];
	size_t n;
	uint64_t ticks;
};

struct feeder {
	uint32_t trace;
	const struct script *s[2];
	size_t at[2];
	size_t none_calls;
	uint32_t added;
};

static int pull(void *arg, struct rtr_trace *t, uint32_t stream, uint64_t *ticks)
{
	struct feeder *f = arg;
	if (stream == RTR_LIVE_NONE) {
		f->none_calls++;
		return RTR_LIVE_ENDED;
	}
	const struct script *sc = &f->s[stream][f->at[stream]++];
	uint8_t b[512];
	switch (sc->step) {
	case S_ADD_STREAM_PACKET:
		if (rtr_live_add_stream(t, f->trace, "ch_1", &f->added) < 0)
			return -ENOMEM;
		/* fall through */
	case S_META2_PACKET:
		if (sc->step == S_META2_PACKET &&
		    rtr_live_metadata(t, f->trace, META2, sizeof(META2) - 1) < 0)
			return -EINVAL;
		/* fall through */
	case S_PACKET:
		if (rtr_live_packet(t, stream, b, packet(b, sc->ev, sc->n)) < 0)
			return -EINVAL;
		return RTR_LIVE_PACKET;
	case S_QUIET:
		*ticks = sc->ticks;
		return RTR_LIVE_QUIET;
	case S_ENDED:
		return RTR_LIVE_ENDED;
	case S_NOTHING:
		return RTR_LIVE_PACKET;
	case S_FAIL:
		return rtr_live_fail(t, -EINTR, "interrupted by the test");
	}
	return -EINVAL;
}

static const struct rtr_live_ops ops = { .pull = pull };

static void test_merge(void)
{
	unit_case = "live merge";
	static const struct script s0[] = {
		{ S_ADD_STREAM_PACKET, { { 0, 10, 1 }, { 0, 30, 3 } }, 2, 0 },
		{ S_QUIET, { { 0 } }, 0, 50 },
		{ S_META2_PACKET, { { 1, 60, 6 } }, 1, 0 },
		{ S_PACKET, { { 0 } }, 0, 0 },	/* no events: asked again */
		{ S_ENDED, { { 0 } }, 0, 0 },
	};
	static const struct script s1[] = {
		{ S_QUIET, { { 0 } }, 0, 20 },
		{ S_PACKET, { { 0, 25, 2 }, { 0, 55, 5 } }, 2, 0 },
		{ S_ENDED, { { 0 } }, 0, 0 },
	};
	struct feeder f = { .s = { s0, s1 } };
	struct rtr_trace *t;
	CHECK(rtr_live_open(&ops, &f, &t) == 0, "open");
	uint32_t s;
	CHECK(rtr_live_add_trace(t, "relay/host/sess", &f.trace) == 0, "trace");
	CHECK(rtr_live_metadata(t, f.trace, META1, sizeof(META1) - 1) == 0, "%s", rtr_error(t));
	CHECK(rtr_live_add_stream(t, f.trace, "ch_0", &s) == 0 && s == 0, "stream");
	static const struct {
		uint64_t ts;
		const char *name;
		uint32_t v;
		uint32_t stream;
	} want[] = { { 10, "a:x", 1, 0 }, { 25, "a:x", 2, 1 }, { 30, "a:x", 3, 0 },
		     { 55, "a:x", 5, 1 }, { 60, "a:y", 6, 0 } };
	struct rtr_event ev;
	size_t n = 0;
	int r;
	while ((r = rtr_next(t, &ev)) > 0) {
		if (!CHECK(n < 5, "too many events"))
			break;
		CHECK_EQ(ev.ticks, want[n].ts);
		CHECK_EQ(ev.ns, want[n].ts);
		CHECK_EQ(ev.stream, want[n].stream);
		CHECK(!strcmp(ev.cls->name, want[n].name), "%zu: %s", n, ev.cls->name);
		struct rtr_value v;
		CHECK(rtr_field_by_name(&ev, "v", &v) == 0 && v.u == want[n].v, "v of %zu", n);
		if (want[n].v == 6)
			CHECK(rtr_field_by_name(&ev, "w", &v) == 0 && v.u == 12, "w");
		n++;
	}
	CHECK(r == 0, "end: %d %s", r, rtr_error(t));
	CHECK_EQ(n, 5);
	CHECK_EQ(f.none_calls, 1);
	CHECK_EQ(f.at[0], 5);
	CHECK_EQ(f.at[1], 3);
	const struct rtr_event_class *cls;
	CHECK_EQ(rtr_event_classes(t, &cls), 2);
	const struct rtr_stream_stats *st;
	CHECK_EQ(rtr_streams(t, &st), 2);
	CHECK_EQ(st[0].packets, 3);
	CHECK_EQ(st[0].events, 3);
	CHECK_EQ(st[1].events, 2);
	CHECK(!strcmp(st[1].path, "relay/host/sess/ch_1"), "%s", st[1].path);
	CHECK(rtr_next(t, &ev) == 0, "still at the end");
	rtr_close(t);
}

static void test_failures(void)
{
	unit_case = "live failures";
	static const struct script lying[] = { { S_NOTHING, { { 0 } }, 0, 0 } };
	static const struct script failing[] = { { S_FAIL, { { 0 } }, 0, 0 } };
	const struct script *cases[] = { lying, failing };
	const char *msgs[] = { "said it gave a packet but gave none", "interrupted by the test" };
	for (int k = 0; k < 2; k++) {
		struct feeder f = { .s = { cases[k] } };
		struct rtr_trace *t;
		uint32_t s;
		rtr_live_open(&ops, &f, &t);
		rtr_live_add_trace(t, "x", &f.trace);
		rtr_live_metadata(t, f.trace, META1, sizeof(META1) - 1);
		rtr_live_add_stream(t, f.trace, "ch_0", &s);
		struct rtr_event ev;
		int r = rtr_next(t, &ev);
		CHECK(r == (k ? -EINTR : -EINVAL), "%d", r);
		CHECK(strstr(rtr_error(t), msgs[k]), "%s", rtr_error(t));
		CHECK(rtr_next(t, &ev) == r, "sticky");
		rtr_close(t);
	}
	/* Packets without metadata, garbage, bad metadata. */
	struct feeder f = { 0 };
	struct rtr_trace *t;
	uint32_t s;
	rtr_live_open(&ops, &f, &t);
	rtr_live_add_trace(t, "x", &f.trace);
	rtr_live_add_stream(t, f.trace, "ch_0", &s);
	uint8_t junk[64];
	memset(junk, 0xff, sizeof(junk));
	CHECK(rtr_live_packet(t, s, junk, sizeof(junk)) == -EINVAL &&
	      strstr(rtr_error(t), "before its trace's metadata"), "%s", rtr_error(t));
	rtr_close(t);
	rtr_live_open(&ops, &f, &t);
	rtr_live_add_trace(t, "x", &f.trace);
	CHECK(rtr_live_metadata(t, f.trace, "garbage", 7) == -EINVAL, "bad metadata");
	rtr_close(t);
	rtr_live_open(&ops, &f, &t);
	rtr_live_add_trace(t, "x", &f.trace);
	rtr_live_metadata(t, f.trace, META1, sizeof(META1) - 1);
	rtr_live_add_stream(t, f.trace, "ch_0", &s);
	CHECK(rtr_live_packet(t, s, junk, sizeof(junk)) == -EINVAL &&
	      strstr(rtr_error(t), "ch_0: byte offset 0"), "%s", rtr_error(t));
	CHECK(rtr_live_add_stream(t, 7, "x", &s) == -EINVAL, "no trace 7");
	rtr_close(t);
}

/* ------------------------------------------------------------------ */
/* Frames                                                               */

static void test_frames(void)
{
	unit_case = "frames";
	uint8_t b[LV_STREAM_SIZE + 8];
	struct lv_hdr h = { 20, LV_CMD_CONNECT, 0 }, h2;
	CHECK_EQ(lv_put_hdr(b, &h), 16);
	CHECK(b[7] == 20 && b[11] == 1, "big-endian header");
	CHECK(lv_get_hdr(b, 16, &h2) == 0 && h2.data_size == 20 && h2.cmd == 1, "hdr");
	CHECK(lv_get_hdr(b, 15, &h2) == -EINVAL, "short hdr");

	struct lv_connect c = { UINT64_MAX, 2, 4, 1 }, c2;
	CHECK_EQ(lv_put_connect(b, &c), 20);
	CHECK(lv_get_connect(b, 20, &c2) == 0 && !memcmp(&c, &c2, sizeof(c)), "connect");
	CHECK(lv_get_connect(b, 21, &c2) == -EINVAL, "long connect");

	struct lv_session s = { .id = 7, .live_timer = 100000, .clients = 1, .streams = 3 }, s2;
	strcpy(s.hostname, "box");
	strcpy(s.name, "sess");
	CHECK_EQ(lv_put_session(b, &s), LV_SESSION_SIZE);
	CHECK(!memcmp(b + 20, "box", 4) && !memcmp(b + 84, "sess", 5), "session offsets");
	CHECK(lv_get_session(b, LV_SESSION_SIZE, &s2) == 0 && s2.id == 7 &&
	      s2.streams == 3 && !strcmp(s2.hostname, "box") && !strcmp(s2.name, "sess"),
	      "session");
	/* A hostile relay: no NUL, control characters. */
	memset(b + 20, 'h', 64);
	b[21] = '\n';
	memset(b + 84, 'n', 255);
	CHECK(lv_get_session(b, LV_SESSION_SIZE, &s2) == 0 && strlen(s2.hostname) == 64 &&
	      s2.hostname[1] == '?' && strlen(s2.name) == 255, "unterminated names");

	struct lv_stream st = { .id = 9, .ctf_trace_id = 2, .metadata_flag = 1 }, st2;
	strcpy(st.path, "h/s/ust/uid/0/64-bit/metadata");
	strcpy(st.channel, "metadata");
	CHECK_EQ(lv_put_stream(b, &st), LV_STREAM_SIZE);
	CHECK(b[19] == 1 && !memcmp(b + 4116, "metadata", 9), "stream offsets");
	CHECK(lv_get_stream(b, LV_STREAM_SIZE, &st2) == 0 && st2.id == 9 &&
	      !strcmp(st2.path, st.path) && !strcmp(st2.channel, "metadata"), "stream");
	memset(b + 20, 'p', 4096);
	CHECK(lv_get_stream(b, LV_STREAM_SIZE, &st2) == 0 && strlen(st2.path) == 4096,
	      "unterminated path");

	struct lv_index x = { 1, 2, 3, 4, 5, 6, 7, LV_INDEX_INACTIVE, LV_FLAG_NEW_STREAM }, x2;
	CHECK_EQ(lv_put_index(b, &x), 64);
	CHECK(b[59] == LV_INDEX_INACTIVE && b[63] == 2 && b[39] == 5, "index offsets");
	CHECK(lv_get_index(b, 64, &x2) == 0 && !memcmp(&x, &x2, sizeof(x)), "index");
	CHECK(lv_get_index(b, 63, &x2) == -EINVAL, "short index");

	struct lv_attach a = { 7, 0, LV_SEEK_BEGINNING }, a2;
	CHECK_EQ(lv_put_attach(b, &a), 20);
	CHECK(lv_get_attach(b, 20, &a2) == 0 && a2.session_id == 7 && a2.seek == 1, "attach");
	struct lv_get_packet g = { 9, 4096, 512 }, g2;
	CHECK_EQ(lv_put_get_packet(b, &g), 20);
	CHECK(lv_get_get_packet(b, 20, &g2) == 0 && g2.offset == 4096 && g2.len == 512, "get");

	struct lv_reply r = { 512, LV_PACKET_OK, LV_FLAG_NEW_METADATA }, r2;
	CHECK_EQ(lv_put_packet_reply(b, &r), 12);
	CHECK(lv_get_packet_reply(b, 12, &r2) == 0 && r2.len == 512 && r2.flags == 1, "pkt");
	r.len = 1ull << 40;
	CHECK_EQ(lv_put_metadata_reply(b, &r), 12);
	CHECK(b[2] == 1 && b[11] == LV_PACKET_OK, "metadata reply offsets");
	CHECK(lv_get_metadata_reply(b, 12, &r2) == 0 && r2.len == 1ull << 40, "meta");
	r.len = 3;
	CHECK_EQ(lv_put_streams_reply(b, &r), 8);
	CHECK(lv_get_streams_reply(b, 8, &r2) == 0 && r2.len == 3 && r2.status == 1, "streams");
	uint64_t u;
	uint32_t w;
	CHECK(lv_get_u64(b, 7, &u) == -EINVAL && lv_get_u32(b, 5, &w) == -EINVAL, "ids");
}

static void test_urls(void)
{
	unit_case = "urls";
	struct lv_url u;
	char err[256];
	CHECK(lv_url_parse("net://localhost", &u, err, sizeof(err)) == 0 &&
	      !strcmp(u.host, "localhost") && u.port == 5344 && !u.session[0] &&
	      u.family == AF_UNSPEC, "%s", err);
	CHECK(lv_url_parse("net4://10.0.0.1:6000/host/box/my-sess", &u, err, sizeof(err)) == 0 &&
	      u.port == 6000 && !strcmp(u.target, "box") && !strcmp(u.session, "my-sess") &&
	      u.family == AF_INET, "%s", err);
	CHECK(lv_url_parse("net6://[::1]:7/host/h/s/", &u, err, sizeof(err)) == 0 &&
	      !strcmp(u.host, "::1") && u.port == 7 && u.family == AF_INET6, "%s", err);
	static const char *const bad[] = {
		"tcp://x", "net://", "net://:5344", "net://h:0", "net://h:65536", "net://h:12x",
		"net://h/x", "net://h/host/", "net://h/host/a", "net://h/host/a/", "net://h/host/a/b/c",
		"net://h/host/a b/s", "net6://[::1", "net://h/host//s",
	};
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		err[0] = '\0';
		CHECK(lv_url_parse(bad[k], &u, err, sizeof(err)) == -EINVAL && err[0],
		      "accepted %s", bad[k]);
	}
	char longname[400];
	memset(longname, 'a', sizeof(longname));
	memcpy(longname, "net://h/host/b/", 15);
	longname[sizeof(longname) - 1] = '\0';
	CHECK(lv_url_parse(longname, &u, err, sizeof(err)) == -EINVAL, "session name too long");
}

int main(void)
{
	test_merge();
	test_failures();
	test_frames();
	test_urls();
	return unit_finish();
}
