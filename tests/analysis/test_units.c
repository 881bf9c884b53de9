/*
 * test_units.c - the parts of src/analysis that need no trace: interned
 * strings, pairing (nesting, misnesting, unmatched, user pairs), JSON
 * string escaping, duration parsing and formatting, histogram buckets.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/unit.h"
#include "analysis.h"

static void test_strtab(void)
{
	unit_case = "strtab";
	struct ra_strtab t = { 0 };
	char s[32];
	for (int i = 0; i < 1000; i++) {
		snprintf(s, sizeof(s), "name%d", i);
		CHECK_EQ(ra_strtab_intern(&t, s), i);
	}
	for (int i = 999; i >= 0; i--) {
		snprintf(s, sizeof(s), "name%d", i);
		CHECK_EQ(ra_strtab_intern(&t, s), i);
		CHECK_EQ(ra_strtab_find(&t, s), i);
		CHECK(!strcmp(t.str[i], s), "%s", t.str[i]);
	}
	CHECK_EQ(ra_strtab_find(&t, "nope"), (uint64_t)-ENOENT);
	CHECK_EQ(t.nr, 1000);
	ra_strtab_free(&t);
	CHECK_EQ(ra_strtab_find(&t, "name1"), (uint64_t)-ENOENT);
}

struct feeder {
	struct ra_strtab names;
	struct ra_pairer p;
	uint64_t seq;
	struct ra_pair_done d;
};

static int feed(struct feeder *f, const char *name, uint32_t key, int64_t ns)
{
	struct ra_event ev = { .ns = ns, .key = key };
	ev.name = (uint32_t)ra_strtab_intern(&f->names, name);
	memset(&f->d, 0xff, sizeof(f->d));
	return ra_pairer_feed(&f->p, &f->names, &ev, f->seq++, &f->d);
}

static void test_pairing_auto(void)
{
	unit_case = "pairing auto";
	struct feeder f = { 0 };
	ra_pairer_init(&f.p, true);
	/* nesting on key 0, another key interleaved */
	CHECK_EQ(feed(&f, "p:f_entry", 0, 10), RA_PAIR_BEGIN);
	CHECK_EQ(feed(&f, "p:f_entry", 1, 11), RA_PAIR_BEGIN);
	CHECK_EQ(feed(&f, "p:f_entry", 0, 12), RA_PAIR_BEGIN);
	CHECK_EQ(feed(&f, "p:other", 0, 13), RA_PAIR_NONE);
	CHECK_EQ(feed(&f, "p:f_exit", 0, 20), RA_PAIR_DONE);
	CHECK_EQ(f.d.begin_ns, 12);
	CHECK_EQ(f.d.end_ns, 20);
	CHECK_EQ(f.d.depth, 1);
	CHECK_EQ(f.d.begin_seq, 2);
	CHECK_EQ(f.d.dropped, 0);
	CHECK_EQ(feed(&f, "p:f_exit", 0, 30), RA_PAIR_DONE);
	CHECK_EQ(f.d.begin_ns, 10);
	CHECK_EQ(f.d.depth, 0);
	CHECK_EQ(feed(&f, "p:f_exit", 1, 31), RA_PAIR_DONE);
	CHECK_EQ(f.d.begin_ns, 11);
	CHECK_EQ(f.p.nr_types, 1);
	CHECK(!strcmp(f.p.types[0].label, "p:f"), "%s", f.p.types[0].label);
	CHECK(!strcmp(f.p.types[0].begin, "p:f_entry"), "%s", f.p.types[0].begin);
	CHECK(!strcmp(f.p.types[0].end, "p:f_exit"), "%s", f.p.types[0].end);

	/* an end before its begin is seen; begin/end and start/stop */
	CHECK_EQ(feed(&f, "q:g_end", 0, 40), RA_PAIR_UNMATCHED_END);
	CHECK_EQ(feed(&f, "q:g_begin", 0, 41), RA_PAIR_BEGIN);
	CHECK_EQ(feed(&f, "q:h_start", 0, 42), RA_PAIR_BEGIN);
	/* misnested: g ends while h is open above it */
	CHECK_EQ(feed(&f, "q:g_end", 0, 50), RA_PAIR_DONE);
	CHECK_EQ(f.d.begin_ns, 41);
	CHECK_EQ(f.d.dropped, 1);
	CHECK_EQ(feed(&f, "q:h_stop", 0, 51), RA_PAIR_UNMATCHED_END);
	CHECK_EQ(f.p.nr_types, 3);
	CHECK_EQ(f.p.types[1].unmatched_end, 1);
	CHECK_EQ(f.p.types[2].unmatched_begin, 1);
	CHECK_EQ(f.p.types[2].unmatched_end, 1);

	/* the bare P:begin/P:end, P:entry/P:exit, P:start/P:stop */
	static const char *const bare[][3] = {
		{ "r:begin", "r:end", "r:begin/end" },
		{ "r:entry", "r:exit", "r:entry/exit" },
		{ "r:start", "r:stop", "r:start/stop" },
	};
	for (uint32_t i = 0; i < 3; i++) {
		CHECK_EQ(feed(&f, bare[i][0], 4, 80 + i), RA_PAIR_BEGIN);
		CHECK_EQ(feed(&f, bare[i][1], 4, 90 + i), RA_PAIR_DONE);
		CHECK_EQ(f.d.begin_ns, 80 + i);
		CHECK(!strcmp(f.p.types[f.d.type].label, bare[i][2]), "%s",
		      f.p.types[f.d.type].label);
		CHECK(!strcmp(f.p.types[f.d.type].begin, bare[i][0]), "%s",
		      f.p.types[f.d.type].begin);
	}
	CHECK_EQ(feed(&f, "r:backend", 4, 95), RA_PAIR_NONE);
	CHECK_EQ(feed(&f, "r:restart", 4, 96), RA_PAIR_NONE);
	CHECK_EQ(feed(&f, ":end", 4, 97), RA_PAIR_NONE);

	/* not patterns: no X, no provider, other suffixes */
	CHECK_EQ(feed(&f, "p:_entry", 0, 60), RA_PAIR_NONE);
	CHECK_EQ(feed(&f, "f_entry", 0, 61), RA_PAIR_NONE);
	CHECK_EQ(feed(&f, "p:f_entrys", 0, 62), RA_PAIR_NONE);
	CHECK_EQ(feed(&f, "p:f_entry", 3, 70), RA_PAIR_BEGIN);
	ra_pairer_finish(&f.p);
	CHECK_EQ(f.p.types[0].unmatched_begin, 1);
	ra_pairer_free(&f.p);
	ra_strtab_free(&f.names);
}

static void test_pairing_user(void)
{
	unit_case = "pairing user";
	struct feeder f = { 0 };
	char err[256];
	ra_pairer_init(&f.p, false);
	static const char *const bad[] = {
		"", "a", "p:a", "p:a,", ",p:b", "p:a,p:b,p:c", "a,b", "p:a,b", "p:a,p:a",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_EQ(ra_pairer_add(&f.p, bad[i], err, sizeof(err)), (uint64_t)-EINVAL);
		CHECK(strstr(err, "bad pair"), "%s: %s", bad[i], err);
	}
	CHECK_EQ(ra_pairer_add(&f.p, "p:open,p:close", err, sizeof(err)), 0);
	CHECK_EQ(feed(&f, "p:f_entry", 0, 1), RA_PAIR_NONE);	/* no auto pairs */
	CHECK_EQ(feed(&f, "p:open", 0, 2), RA_PAIR_BEGIN);
	CHECK_EQ(feed(&f, "p:close", 0, 9), RA_PAIR_DONE);
	CHECK_EQ(f.d.end_ns - f.d.begin_ns, 7);
	CHECK(!strcmp(f.p.types[0].label, "p:open,p:close"), "%s", f.p.types[0].label);
	ra_pairer_free(&f.p);
	ra_strtab_free(&f.names);
}

static void check_json(const char *in, size_t len, const char *want)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	ra_json_string(f, in, len);
	fclose(f);
	CHECK(!strcmp(buf, want), "json of %s: %s, not %s", in, buf, want);
	free(buf);
}

static void test_json(void)
{
	unit_case = "json strings";
	check_json("plain", 5, "\"plain\"");
	check_json("a\"b\\c\nd\te", 9, "\"a\\\"b\\\\c\\nd\\te\"");
	check_json("</script>&", 10, "\"\\u003c/script\\u003e\\u0026\"");
	check_json("\x01\x1f\x7f", 3, "\"\\u0001\\u001f\\u007f\"");
	check_json("z\0z", 3, "\"z\\u0000z\"");
	check_json("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9, "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
	check_json("\xff", 1, "\"\\ufffd\"");
	check_json("\xc0\x80", 2, "\"\\ufffd\\ufffd\"");		/* overlong */
	check_json("\xed\xa0\x80", 3, "\"\\ufffd\\ufffd\\ufffd\"");	/* surrogate */
	check_json("\xe2\x82", 2, "\"\\ufffd\\ufffd\"");		/* cut short */
	check_json("\xf4\x90\x80\x80", 4, "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");	/* > U+10FFFF */
}

static void test_durations(void)
{
	unit_case = "durations";
	static const struct { const char *s; int64_t ns; } good[] = {
		{ "1ns", 1 }, { "250us", 250000 }, { "10ms", 10000000 },
		{ "2.5ms", 2500000 }, { "1s", 1000000000 }, { "0.5s", 500000000 },
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		int64_t ns = 0;
		CHECK_EQ(ra_parse_duration(good[i].s, &ns), 0);
		CHECK_EQ(ns, good[i].ns);
	}
	static const char *const bad[] = {
		"", "10", "ms", "0ms", "-1ms", "0.1ns", "10 ms", "10msx", "1e30s", "nan", "inf",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t ns = 0;
		CHECK(ra_parse_duration(bad[i], &ns) == -EINVAL, "accepted '%s'", bad[i]);
	}
	char out[32];
	ra_format_duration(999, out, sizeof(out));
	CHECK(!strcmp(out, "999ns"), "%s", out);
	ra_format_duration(1500, out, sizeof(out));
	CHECK(!strcmp(out, "1.5us"), "%s", out);
	ra_format_duration(30071231, out, sizeof(out));
	CHECK(!strcmp(out, "30.1ms"), "%s", out);
	ra_format_duration(999999000, out, sizeof(out));
	CHECK(!strcmp(out, "1s"), "%s", out);
	ra_format_duration(999600, out, sizeof(out));
	CHECK(!strcmp(out, "1ms"), "%s", out);
	ra_format_duration(999499, out, sizeof(out));
	CHECK(!strcmp(out, "999us"), "%s", out);
	ra_format_duration(-999999, out, sizeof(out));
	CHECK(!strcmp(out, "-1ms"), "%s", out);
	ra_format_wall(1000000001, out, sizeof(out));
	CHECK(!strcmp(out, "1970-01-01 00:00:01.000000001"), "%s", out);

	CHECK_EQ(ra_hist_bucket(0), 0);
	CHECK_EQ(ra_hist_bucket(1), 0);
	CHECK_EQ(ra_hist_bucket(2), 1);
	CHECK_EQ(ra_hist_bucket(4), 1);
	CHECK_EQ(ra_hist_bucket(5), 2);
	CHECK_EQ(ra_hist_bucket(999), 8);
	CHECK_EQ(ra_hist_bucket(1000), 9);
	CHECK_EQ(ra_hist_lower(9), 1000);
	CHECK_EQ(ra_hist_bucket(INT64_MAX), RA_HIST_BUCKETS - 1);
	for (unsigned b = 0; b < RA_HIST_BUCKETS; b++)
		CHECK_EQ(ra_hist_bucket(ra_hist_lower(b)), b);
}

int main(void)
{
	test_strtab();
	test_pairing_auto();
	test_pairing_user();
	test_json();
	test_durations();
	return unit_finish();
}
