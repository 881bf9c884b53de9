/*
 * test_reader_ctf.c - rt_reader on hand-made CTF 1.8 traces that are not
 * ringtrace's: a big-endian trace with bit-packed integers, an 8-bit
 * partial timestamp that wraps, variants tagged by an enum sibling, enum
 * ranges, sequences of structures, text arrays, floats with padding; the
 * same metadata packetized in two packets; several traces in nested
 * directories merged by time; and malformed inputs, each reported with
 * the file and the byte offset (metadata: the line).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reader.h"
#include "rt_test.h"
#include "unit.h"

static char *root;

/* ------------------------------------------------------------------ */
/* Files and bits                                                       */

static const char *path_of(const char *rel)
{
	static char p[512];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	return p;
}

static void mkdirs(const char *rel)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	for (char *s = p + strlen(root) + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			mkdir(p, 0755);
			*s = '/';
		}
	mkdir(p, 0755);
}

static void write_file(const char *rel, const void *data, size_t len)
{
	FILE *f = fopen(path_of(rel), "wb");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
		perror(rel);
		exit(2);
	}
}

/* A bit writer: CTF order (little-endian fields from the low bits of a
 * byte, big-endian ones from the high bits). */
struct bw {
	uint8_t b[4096];
	uint64_t bit;
	bool be;
};

static void put_bits(struct bw *w, uint64_t v, unsigned size)
{
	for (unsigned i = 0; i < size; i++) {
		uint64_t pos = w->bit + i;
		unsigned bitv = w->be ? (unsigned)(v >> (size - 1 - i)) & 1
				      : (unsigned)(v >> i) & 1;
		unsigned sh = w->be ? 7 - (unsigned)(pos % 8) : (unsigned)(pos % 8);
		w->b[pos / 8] = (uint8_t)((w->b[pos / 8] & ~(1u << sh)) | (bitv << sh));
	}
	w->bit += size;
}

static void align_to(struct bw *w, unsigned a)
{
	w->bit = (w->bit + a - 1) / a * a;
}

/* Byte-aligned integer in the writer's byte order. */
static void put_int(struct bw *w, uint64_t v, unsigned size)
{
	align_to(w, 8);
	if (w->be) {
		put_bits(w, v, size);
		return;
	}
	for (unsigned k = 0; k < size / 8; k++)
		put_bits(w, (v >> (8 * k)) & 0xff, 8);
}

static void put_text(struct bw *w, const char *s, size_t n)
{
	align_to(w, 8);
	for (size_t k = 0; k < n; k++)
		put_bits(w, (uint8_t)s[k], 8);
}

/* ------------------------------------------------------------------ */
/* A big-endian trace                                                   */

static const char META_BE[] =
	"/* CTF 1.8 */\n"
	"typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
	"typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n"
	"typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
	"typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
	"trace {\n\tmajor = 1;\n\tminor = 8;\n\tbyte_order = be;\n"
	"\tpacket.header := struct { uint32_t magic; uint32_t stream_id; };\n};\n"
	"env {\n\thostname = \"box\";\n\tvpid = 42;\n};\n"
	"clock {\n\tname = c;\n\tfreq = 1000;\n\toffset_s = 10;\n};\n"
	"typealias integer { size = 8; align = 1; signed = false; map = clock.c.value; } := ts8_t;\n"
	"struct hdr { uint8_t id; ts8_t timestamp; };\n"
	"stream {\n\tid = 3;\n"
	"\tpacket.context := struct { uint64_t content_size; uint64_t packet_size; uint32_t cpu_id; };\n"
	"\tevent.header := struct hdr;\n};\n"
	"event {\n\tname = \"e:packed\";\n\tid = 1;\n\tstream_id = 3;\n\tfields := struct {\n"
	"\t\tinteger { size = 3; align = 1; signed = false; } _a;\n"
	"\t\tinteger { size = 13; align = 1; signed = true; } _b;\n"
	"\t\tinteger { size = 7; align = 1; signed = true; } _c;\n"
	"\t\tinteger { size = 1; align = 1; } _d;\n"
	"\t\tinteger { size = 16; align = 8; byte_order = le; base = 16; } _le16;\n"
	"\t\tfloating_point { exp_dig = 8; mant_dig = 24; align = 8; } _f;\n"
	"\t\tfloating_point { exp_dig = 11; mant_dig = 53; align = 32; } _g;\n"
	"\t};\n};\n"
	"event {\n\tname = \"e:var\";\n\tid = 2;\n\tstream_id = 3;\n\tfields := struct {\n"
	"\t\tenum : uint8_t { A = 0, B = 1 ... 5, C } _tag;\n"
	"\t\tvariant <_tag> { uint16_t A; string B; struct { uint8_t n; uint16_t v[n]; } C; } _v;\n"
	"\t\tuint8_t _len;\n"
	"\t\tstruct { uint8_t x; integer { size = 4; align = 1; } y; } _items[_len];\n"
	"\t\tinteger { size = 8; align = 8; encoding = UTF8; } _text[3];\n"
	"\t};\n};\n";

static size_t pkt_begin(struct bw *w)
{
	align_to(w, 8);
	size_t start = (size_t)(w->bit / 8);
	put_int(w, 0xC1FC1FC1u, 32);
	put_int(w, 3, 32);
	put_int(w, 0, 64); /* content_size, patched */
	put_int(w, 0, 64); /* packet_size, patched */
	put_int(w, 2, 32);
	return start;
}

/* Close the packet: content = what was written, packet = `pad` more bytes. */
static void pkt_end(struct bw *w, size_t start, unsigned pad)
{
	uint64_t content = w->bit - start * 8;
	align_to(w, 8);
	w->bit += pad * 8;
	uint64_t packet = w->bit - start * 8;
	uint64_t save = w->bit;
	w->bit = start * 8 + 64;
	put_int(w, content, 64);
	put_int(w, packet, 64);
	w->bit = save;
}

static void ev_header(struct bw *w, unsigned id, unsigned ts)
{
	put_int(w, id, 8);
	put_bits(w, ts, 8);
}

/* tag 0: A = 777; 3: B = "bee"; 6: C = {n, v[n]}; then items and text. */
static void ev_var(struct bw *w, unsigned ts, unsigned tag, unsigned n, unsigned items,
		   const char *text)
{
	ev_header(w, 2, ts);
	put_int(w, tag, 8);
	if (tag == 0) {
		put_int(w, 777, 16);
	} else if (tag >= 1 && tag <= 5) {
		put_text(w, "bee", 4);
	} else {
		put_int(w, n, 8);
		for (unsigned k = 0; k < n && k < 2; k++)
			put_int(w, k ? 0xfffe : 0x0102, 16);
	}
	put_int(w, items, 8);
	for (unsigned k = 0; k < items; k++) {
		put_int(w, k + 1, 8);
		put_bits(w, 9 + k, 4);
	}
	put_text(w, text, 3);
}

static void build_be_stream(struct bw *w)
{
	memset(w, 0, sizeof(*w));
	w->be = true;
	size_t p = pkt_begin(w);
	ev_header(w, 1, 250);
	align_to(w, 32); /* a structure is aligned like its most aligned field (_g) */
	put_bits(w, 5, 3);
	put_bits(w, (uint64_t)-1000 & 0x1fff, 13);
	put_bits(w, (uint64_t)-3 & 0x7f, 7);
	put_bits(w, 1, 1);
	/* _le16: a little-endian field in a big-endian trace */
	put_int(w, 0x34, 8);
	put_int(w, 0x12, 8);
	float f = 1.5f;
	uint32_t fr;
	memcpy(&fr, &f, 4);
	put_int(w, fr, 32);
	align_to(w, 32);
	double g = -2.25;
	uint64_t gr;
	memcpy(&gr, &g, 8);
	put_int(w, gr, 64);
	ev_var(w, 5, 0, 0, 2, "hey");	/* 5 < 250: the 8-bit clock wrapped */
	ev_var(w, 6, 3, 0, 0, "abc");
	ev_var(w, 7, 6, 2, 1, "xyz");
	pkt_end(w, p, 16);
}

static bool value_is_uint(const struct rtr_event *ev, const char *name, uint64_t want)
{
	struct rtr_value v;
	return rtr_field_by_name(ev, name, &v) == 0 && v.u == want;
}

static void check_be_events(const char *dir)
{
	char err[512];
	struct rtr_trace *t;
	int r = rtr_open(dir, &t, err, sizeof(err));
	if (!CHECK(r == 0, "rtr_open %s: %s", dir, err))
		return;
	struct rtr_event ev;
	struct rtr_value v, c, e;
	const char *name;

	CHECK(rtr_next(t, &ev) == 1 && !strcmp(ev.cls->name, "e:packed"), "event 1");
	CHECK(ev.ticks == 250 && ev.ns == 10250000000ll && ev.cpu == 2 && ev.trace == 0,
	      "time and cpu: %llu %lld %u", (unsigned long long)ev.ticks, (long long)ev.ns, ev.cpu);
	CHECK(rtr_field_by_name(&ev, "a", &v) == 0 && v.type == RTR_UINT && v.u == 5 &&
	      v.bits == 3, "3-bit a");
	CHECK(rtr_field_by_name(&ev, "b", &v) == 0 && v.type == RTR_INT && v.i == -1000,
	      "13-bit b = %lld", (long long)v.i);
	CHECK(rtr_field_by_name(&ev, "c", &v) == 0 && v.i == -3, "7-bit c");
	CHECK(value_is_uint(&ev, "d", 1), "1-bit d");
	CHECK(rtr_field_by_name(&ev, "le16", &v) == 0 && v.u == 0x1234 && v.base == 16, "le16");
	CHECK(rtr_field_by_name(&ev, "f", &v) == 0 && v.type == RTR_FLOAT && v.d == 1.5, "f");
	CHECK(rtr_field_by_name(&ev, "g", &v) == 0 && v.type == RTR_DOUBLE && v.d == -2.25,
	      "g after padding to 32 bits: %g", v.d);
	CHECK(rtr_scope_count(&ev, RTR_SCOPE_PACKET_CONTEXT) == 3 &&
	      rtr_scope_field(&ev, RTR_SCOPE_PACKET_CONTEXT, 2, &v, &name) == 0 && v.u == 2 &&
	      !strcmp(name, "cpu_id"), "packet context");
	CHECK(rtr_scope_field(&ev, RTR_SCOPE_EVENT_HEADER, 1, &v, &name) == 0 && v.u == 250 &&
	      !strcmp(name, "timestamp"), "event header");

	CHECK(rtr_next(t, &ev) == 1 && !strcmp(ev.cls->name, "e:var"), "event 2");
	CHECK(ev.ticks == 256 + 5, "wrapped 8-bit timestamp: %llu", (unsigned long long)ev.ticks);
	CHECK(rtr_field_by_name(&ev, "tag", &v) == 0 && v.type == RTR_ENUM && v.u == 0 &&
	      v.label && !strcmp(v.label, "A"), "tag A");
	CHECK(rtr_field_by_name(&ev, "v", &v) == 0 && v.type == RTR_UINT && v.u == 777,
	      "variant A resolved");
	CHECK(rtr_field_by_name(&ev, "items", &v) == 0 && v.type == RTR_ARRAY &&
	      rtr_value_count(&v) == 2, "sequence of 2 structures");
	CHECK(rtr_value_child(&v, 1, &c, &name) == 0 && name == NULL && c.type == RTR_STRUCT &&
	      rtr_value_count(&c) == 2, "item 1");
	CHECK(rtr_value_child(&c, 0, &e, &name) == 0 && e.u == 2 && !strcmp(name, "x") &&
	      rtr_value_child(&c, 1, &e, &name) == 0 && e.u == 10 && !strcmp(name, "y"),
	      "item 1 members");
	CHECK(rtr_value_child(&v, 2, &c, NULL) == -EINVAL, "index past the end");
	CHECK(rtr_field_by_name(&ev, "text", &v) == 0 && v.type == RTR_STRING &&
	      v.s.len == 3 && !memcmp(v.s.p, "hey", 3), "text array");

	CHECK(rtr_next(t, &ev) == 1 && ev.ticks == 262, "event 3");
	CHECK(rtr_field_by_name(&ev, "tag", &v) == 0 && v.u == 3 && !strcmp(v.label, "B"),
	      "tag 3 is in B's range");
	CHECK(rtr_field_by_name(&ev, "v", &v) == 0 && v.type == RTR_STRING &&
	      !strcmp(v.s.p, "bee"), "variant B");
	CHECK(rtr_field_by_name(&ev, "items", &v) == 0 && rtr_value_count(&v) == 0,
	      "empty sequence");

	CHECK(rtr_next(t, &ev) == 1 && ev.ticks == 263, "event 4");
	CHECK(rtr_field_by_name(&ev, "tag", &v) == 0 && v.u == 6 && !strcmp(v.label, "C"),
	      "tag C after the range");
	CHECK(rtr_field_by_name(&ev, "v", &v) == 0 && v.type == RTR_STRUCT &&
	      rtr_value_count(&v) == 2 && rtr_value_child(&v, 1, &c, &name) == 0 &&
	      !strcmp(name, "v") && c.type == RTR_ARRAY && rtr_value_count(&c) == 2 &&
	      rtr_value_child(&c, 1, &e, NULL) == 0 && e.u == 0xfffe,
	      "variant C: a structure with a sequence sized by its sibling");
	CHECK(rtr_field_by_name(&ev, "text", &v) == 0 && !memcmp(v.s.p, "xyz", 3), "text 4");
	CHECK(rtr_next(t, &ev) == 0, "end (padding after the content ignored)");

	const struct rtr_env *env = rtr_trace_env_get(t, 0, "hostname");
	CHECK(env && env->is_string && !strcmp(env->s, "box"), "env hostname");
	env = rtr_trace_env_get(t, 0, "vpid");
	CHECK(env && !env->is_string && env->i == 42 && !strcmp(env->s, "42"), "env vpid");
	const struct rtr_stream_stats *st;
	CHECK(rtr_streams(t, &st) == 1 && st[0].stream_class == 3 && st[0].events == 4 &&
	      st[0].cpu == 2 && st[0].packets == 1, "stream statistics");
	rtr_close(t);
}

/* The metadata in two packets (big-endian headers, like the trace). */
static void write_packetized(const char *rel, const char *text, uint32_t magic)
{
	struct bw w = { .be = true };
	size_t len = strlen(text), half = len / 2;
	for (int k = 0; k < 2; k++) {
		const char *part = text + (k ? half : 0);
		size_t n = k ? len - half : half;
		size_t start = (size_t)(w.bit / 8);
		put_int(&w, k ? magic : 0x75D11D57u, 32);
		for (int u = 0; u < 16; u++)
			put_int(&w, 0, 8);
		put_int(&w, 0, 32);				/* checksum */
		put_int(&w, (uint32_t)((37 + n) * 8), 32);	/* content_size */
		put_int(&w, (uint32_t)((37 + n + 3) * 8), 32);	/* packet_size */
		for (int u = 0; u < 3; u++)
			put_int(&w, 0, 8);
		put_int(&w, 1, 8);
		put_int(&w, 8, 8);
		put_text(&w, part, n);
		w.bit += 3 * 8; /* padding */
		(void)start;
	}
	write_file(rel, w.b, (size_t)(w.bit / 8));
}

/* ------------------------------------------------------------------ */
/* Errors                                                               */

static void expect_fail(const char *dir, int code, const char *want1, const char *want2)
{
	char err[512] = "";
	struct rtr_trace *t = NULL;
	int r = rtr_open(dir, &t, err, sizeof(err));
	const char *msg = err;
	if (r == 0) {
		struct rtr_event ev;
		unsigned n = 0;
		while ((r = rtr_next(t, &ev)) > 0 && n++ < 100000) {
			struct rtr_value v;
			for (uint32_t k = 0; k < rtr_scope_count(&ev, RTR_SCOPE_PAYLOAD); k++)
				rtr_scope_field(&ev, RTR_SCOPE_PAYLOAD, k, &v, NULL);
		}
		msg = rtr_error(t);
	}
	CHECK(r == code, "%s: %d, want %d (%s)", dir, r, code, msg);
	CHECK(strstr(msg, want1) != NULL, "'%s' lacks '%s'", msg, want1);
	if (want2)
		CHECK(strstr(msg, want2) != NULL, "'%s' lacks '%s'", msg, want2);
	rtr_close(t);
}

static void test_errors(const struct bw *good)
{
	unit_case = "errors";
	char off[64];
	struct bw w;

	/* A sequence longer than the packet (variant C, n = 200). */
	memset(&w, 0, sizeof(w));
	w.be = true;
	size_t p = pkt_begin(&w);
	size_t at = (size_t)(w.bit / 8);
	ev_var(&w, 1, 6, 200, 0, "abc");
	pkt_end(&w, p, 0);
	mkdirs("e_seq");
	write_file("e_seq/metadata", META_BE, strlen(META_BE));
	write_file("e_seq/s", w.b, (size_t)(w.bit / 8));
	snprintf(off, sizeof(off), "byte offset %zu:", at + 4);
	expect_fail(path_of("e_seq"), -EINVAL, "e_seq/s: byte offset",
		    "sequence 'v' of 200 elements goes past the end of the packet content");

	/* A tag that selects no option. */
	memset(&w, 0, sizeof(w));
	w.be = true;
	p = pkt_begin(&w);
	at = (size_t)(w.bit / 8);
	ev_var(&w, 1, 9, 0, 0, "abc");
	pkt_end(&w, p, 0);
	mkdirs("e_tag");
	write_file("e_tag/metadata", META_BE, strlen(META_BE));
	write_file("e_tag/s", w.b, (size_t)(w.bit / 8));
	snprintf(off, sizeof(off), "e_tag/s: byte offset %zu:", at + 3);
	expect_fail(path_of("e_tag"), -EINVAL, off, "tag value 9 selects no option");

	/* Truncated: the file ends in the middle of the last event. */
	mkdirs("e_trunc");
	write_file("e_trunc/metadata", META_BE, strlen(META_BE));
	write_file("e_trunc/s", good->b, (size_t)(good->bit / 8) - 30);
	expect_fail(path_of("e_trunc"), -EINVAL, "e_trunc/s: byte offset 0:",
		    "goes past the end of the file");

	/* Packetized metadata with a bad magic in its second packet. */
	mkdirs("e_pmagic");
	write_packetized("e_pmagic/metadata", META_BE, 0x12345678u);
	snprintf(off, sizeof(off), "byte offset %zu:", 37 + strlen(META_BE) / 2 + 3);
	expect_fail(path_of("e_pmagic"), -EINVAL, "e_pmagic/metadata: ", off);

	/* A sequence of 2^32 - 1 empty structures: refused, not looped over. */
	mkdirs("e_empty");
	static const char empty_meta[] =
		"/* CTF 1.8 */\ntrace { byte_order = le; };\n"
		"event { name = x; fields := struct {\n"
		"\tinteger { size = 32; align = 8; } n;\n\tstruct { } e[n];\n}; };\n";
	write_file("e_empty/metadata", empty_meta, strlen(empty_meta));
	write_file("e_empty/s", "\xff\xff\xff\xff", 4);
	expect_fail(path_of("e_empty"), -EINVAL, "e_empty/s: byte offset 4:",
		    "sequence 'e' of 4294967295 elements");

	/* Metadata errors name the line. */
	mkdirs("e_syntax");
	static const char bad_syntax[] = "/* CTF 1.8 */\ntrace {\n\tbyte_order = le\n};\n";
	write_file("e_syntax/metadata", bad_syntax, strlen(bad_syntax));
	expect_fail(path_of("e_syntax"), -EINVAL, "e_syntax/metadata: line 4, column 1",
		    "expected ';'");
	mkdirs("e_int65");
	static const char int65[] =
		"/* CTF 1.8 */\ntrace { byte_order = le; };\n"
		"event { name = x; fields := struct {\n"
		"\tinteger { size = 65; } a;\n}; };\n";
	write_file("e_int65/metadata", int65, strlen(int65));
	expect_fail(path_of("e_int65"), -ENOTSUP, "line 4", "integers of 65 bits are not supported");
	mkdirs("e_variant");
	static const char untagged[] =
		"/* CTF 1.8 */\ntrace { byte_order = le; };\n"
		"event { name = x; fields := struct {\n"
		"\tinteger { size = 8; } t;\n\tvariant <t> { integer { size = 8; } a; } v;\n}; };\n";
	write_file("e_variant/metadata", untagged, strlen(untagged));
	expect_fail(path_of("e_variant"), -EINVAL, "line 5", "'t' is not an enumeration");
}

/* ------------------------------------------------------------------ */

int main(void)
{
	root = rt_test_tmpdir("test_reader_ctf");
	static struct bw w;
	build_be_stream(&w);

	unit_case = "big-endian, bit-packed, variants";
	mkdirs("be");
	write_file("be/metadata", META_BE, strlen(META_BE));
	write_file("be/stream_2", w.b, (size_t)(w.bit / 8));
	check_be_events(path_of("be"));

	unit_case = "packetized metadata";
	mkdirs("pkt");
	write_packetized("pkt/metadata", META_BE, 0x75D11D57u);
	write_file("pkt/stream_2", w.b, (size_t)(w.bit / 8));
	check_be_events(path_of("pkt"));

	unit_case = "several traces";
	mkdirs("many/x/deep/t1");
	mkdirs("many/y");
	write_file("many/x/deep/t1/metadata", META_BE, strlen(META_BE));
	write_file("many/x/deep/t1/s", w.b, (size_t)(w.bit / 8));
	write_packetized("many/y/metadata", META_BE, 0x75D11D57u);
	write_file("many/y/s", w.b, (size_t)(w.bit / 8));
	struct rtr_trace *t;
	char err[512];
	if (CHECK(rtr_open(path_of("many"), &t, err, sizeof(err)) == 0, "open: %s", err)) {
		CHECK(rtr_trace_count(t) == 2 && strstr(rtr_trace_path(t, 0), "many/x/deep/t1") &&
		      strstr(rtr_trace_path(t, 1), "many/y"), "two traces, depth first, sorted");
		struct rtr_event ev;
		unsigned n = 0, order_ok = 1;
		int64_t last = INT64_MIN;
		uint32_t last_trace = 0;
		while (rtr_next(t, &ev) > 0) {
			/* same times in both: trace 0 first on every tie */
			if (ev.ns < last || (ev.ns == last && ev.trace < last_trace))
				order_ok = 0;
			if (n % 2 != ev.trace)
				order_ok = 0;
			last = ev.ns;
			last_trace = ev.trace;
			n++;
		}
		CHECK(n == 8 && order_ok, "8 events merged by time, trace index on ties");
		rtr_close(t);
	}
	const char *dirs[] = { path_of("be"), NULL };
	char be_path[512];
	snprintf(be_path, sizeof(be_path), "%s", dirs[0]);
	dirs[0] = be_path;
	dirs[1] = path_of("pkt");
	if (CHECK(rtr_open_many(dirs, 2, &t, err, sizeof(err)) == 0, "open_many: %s", err)) {
		CHECK(rtr_trace_count(t) == 2, "open_many: two traces");
		rtr_close(t);
	}

	test_errors(&w);

	if (rt_test_rmtree(root) < 0)
		fprintf(stderr, "could not remove %s\n", root);
	free(root);
	return unit_finish();
}
