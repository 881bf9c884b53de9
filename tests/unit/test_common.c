/*
 * test_common.c - the shared foundations (src/common): the context table,
 * the JSON escaper, the rule matcher, hexadecimal, warnings, growable
 * arrays, /proc/PID/stat's fields.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/array.h"
#include "common/config_parse.h"
#include "common/context.h"
#include "common/escape.h"
#include "common/hex.h"
#include "common/proc_stat.h"
#include "common/rule.h"
#include "common/warn.h"
#include "unit.h"

static void test_context_table(void)
{
	unit_case = "context table";
	static const struct {
		const char *name;
		uint32_t type, size;
	} want[] = {
		{ "vpid", RT_TYPE_S32, 4 },	  { "vtid", RT_TYPE_S32, 4 },
		{ "procname", RT_TYPE_STRING, 0 }, { "cpu_id", RT_TYPE_U32, 4 },
		{ "ip", RT_TYPE_POINTER, 8 },	  { "prio", RT_TYPE_S32, 4 },
		{ "hostname", RT_TYPE_STRING, 0 },
	};
	/* The numbers are a wire format: the order must not change. */
	CHECK_EQ(RT_CTX_COUNT, sizeof(want) / sizeof(want[0]));
	for (unsigned i = 0; i < RT_CTX_COUNT; i++) {
		CHECK(rt_context_name(i) && !strcmp(rt_context_name(i), want[i].name),
		      "context %u is %s", i, rt_context_name(i));
		CHECK_EQ(rt_context_type(i), want[i].type);
		CHECK_EQ(rt_context_size(i), want[i].size);
		CHECK_EQ(rt_context_by_name(want[i].name), i);
	}
	CHECK_EQ(RT_CTX_SIZE_IP, 8);
	CHECK_EQ(RT_CTX_SIZE_CPU_ID, 4);
	CHECK(rt_context_name(RT_CTX_COUNT) == NULL, "unknown context has a name");
	CHECK_EQ(rt_context_type(RT_CTX_COUNT), 0);
	CHECK_EQ(rt_context_size(RT_CTX_COUNT), 0);
	CHECK(rt_context_by_name("pid") == -EINVAL, "'pid' is not a context");
	CHECK(!strcmp(rt_context_names, "vpid vtid procname cpu_id ip prio hostname"),
	      "names: '%s'", rt_context_names);
}

static void test_parse_contexts(void)
{
	unit_case = "rt_parse_contexts";
	uint8_t ctx[RT_CTX_COUNT];
	uint32_t nr = 99;
	char err[RT_ERRLEN] = "";
	CHECK(rt_parse_contexts("vtid,ip,hostname", ctx, &nr, err) == 0, "%s", err);
	CHECK_EQ(nr, 3);
	CHECK(ctx[0] == RT_CTX_VTID && ctx[1] == RT_CTX_IP && ctx[2] == RT_CTX_HOSTNAME,
	      "order kept");
	CHECK(rt_parse_contexts("none", ctx, &nr, err) == 0 && nr == 0, "none");
	CHECK(rt_parse_contexts("vtid,vtid", ctx, &nr, err) == -EINVAL, "twice");
	CHECK(rt_parse_contexts("vtid,pid", ctx, &nr, err) == -EINVAL, "unknown");
	CHECK(!strcmp(err, "unknown context 'pid' (vpid vtid procname cpu_id ip prio hostname)"),
	      "message: '%s'", err);
}

/* s escaped whole, `room` bytes at a time (plus RT_JSON_STEP). */
static void check_escape(const char *s, size_t n, unsigned flags, size_t room, const char *want)
{
	char out[512], *p = out;
	size_t i = 0, calls = 0;
	while (i < n && calls++ < n + 1)
		p = rt_json_escape(p, p + room, s, n, &i, flags);
	*p = '\0';
	CHECK(i == n && !strcmp(out, want), "escape of %zu bytes (flags %u, room %zu): '%s', not '%s'",
	      n, flags, room, out, want);
}

static void test_parse_duration(void)
{
	unit_case = "rt_parse_duration_us";
	static const struct {
		const char *s;
		uint64_t us;
	} ok[] = { { "0", 0 }, { "500", 500 }, { "500us", 500 }, { "250ms", 250000 },
		   { "10s", 10000000 }, { "5m", 300000000 }, { "2h", 7200000000ull } };
	char err[RT_ERRLEN];
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		uint64_t v = 1;
		CHECK(rt_parse_duration_us(ok[i].s, &v, err) == 0 && v == ok[i].us, "%s: %llu",
		      ok[i].s, (unsigned long long)v);
	}
	static const char *const bad[] = { "", "s", "-1", "1.5s", "10 s", "3d", "10sec",
					   "99999999999999999999", "6000000000000h" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t v;
		CHECK(rt_parse_duration_us(bad[i], &v, err) == -EINVAL && strstr(err, "duration"),
		      "%s refused", bad[i]);
	}
}

static void test_json_escape(void)
{
	unit_case = "rt_json_escape";
	for (size_t room = 1; room < 40; room += 7) {
		check_escape("plain text, long enough for blocks", 34, 0, room,
			     "plain text, long enough for blocks");
		check_escape("a\"b\\c\b\f\n\r\t\x01\x7f", 12, 0, room,
			     "a\\\"b\\\\c\\b\\f\\n\\r\\t\\u0001\x7f");
		/* HTML: also < > & and DEL, in blocks of 8 as well as alone. */
		check_escape("</script>&\x7f", 11, RT_JSON_HTML, room,
			     "\\u003c/script\\u003e\\u0026\\u007f");
		check_escape("</script>&", 10, 0, room, "</script>&");
		check_escape("\r", 1, RT_JSON_HTML, room, "\\r");
		check_escape("caf\xc3\xa9 \xe2\x82 \xff", 10, 0, room,
			     "caf\xc3\xa9 \\ufffd\\ufffd \\ufffd");
	}
	CHECK_EQ(rt_utf8_len((const uint8_t *)"\xf0\x9f\x98\x80", 4), 4);
	CHECK_EQ(rt_utf8_len((const uint8_t *)"\xf0\x9f\x98\x80", 3), 0);
	CHECK_EQ(rt_utf8_len((const uint8_t *)"\xc0\x80", 2), 0);
	CHECK_EQ(rt_utf8_len((const uint8_t *)"\xed\xa0\x80", 3), 0);
	CHECK_EQ(rt_utf8_len((const uint8_t *)"A", 1), 1);
}

static void test_rules(void)
{
	unit_case = "rules";
	const char *ex[] = { "app:debug_*", "app:noisy" };
	struct rt_rule r = { .pattern = "app:*", .excludes = ex, .nr_excludes = 2 };
	CHECK(rt_rule_matches(&r, "app:start", 14), "glob");
	CHECK(!rt_rule_matches(&r, "lib:start", 6), "other provider");
	CHECK(!rt_rule_matches(&r, "app:debug_x", 6), "excluded by glob");
	CHECK(!rt_rule_matches(&r, "app:noisy", 6), "excluded by name");
	r.level_match = RT_LEVEL_RANGE;
	r.level = 4;	/* WARNING */
	CHECK(rt_rule_matches(&r, "app:start", 3) && rt_rule_matches(&r, "app:start", 4),
	      "range: as severe or more");
	CHECK(!rt_rule_matches(&r, "app:start", 5), "range: less severe");
	r.level_match = RT_LEVEL_ONLY;
	CHECK(rt_rule_matches(&r, "app:start", 4), "only: that level");
	CHECK(!rt_rule_matches(&r, "app:start", 3), "only: not a more severe one");
	CHECK(rt_level_matches(RT_LEVEL_ANY, 0, 14), "any level");
	const char *globs[] = { "a:x", "b:*" };
	CHECK(rt_glob_any(globs, 2, "b:y") && !rt_glob_any(globs, 2, "a:y"), "glob_any");
	CHECK(!rt_glob_any(globs, 0, "a:x"), "no globs match nothing");
}

static void test_hex(void)
{
	unit_case = "hex";
	uint8_t b[4];
	char text[9];
	CHECK(rt_hex_decode("00fFa9", b, 3) == 0 && b[0] == 0 && b[1] == 0xff && b[2] == 0xa9,
	      "decode");
	rt_hex_encode(b, 3, text);
	CHECK(!strcmp(text, "00ffa9"), "encode: %s", text);
	CHECK(rt_hex_decode("00ff", b, 3) == -EINVAL, "too short");
	CHECK(rt_hex_decode("00ffa9b", b, 3) == -EINVAL, "too long");
	CHECK(rt_hex_decode("+fffff", b, 3) == -EINVAL, "sign");
	CHECK(rt_hex_decode(" fffff", b, 3) == -EINVAL, "space");
	CHECK(rt_hex_decode("0xffff", b, 3) == -EINVAL, "prefix");
	CHECK(rt_hex_decode("", b, 0) == 0, "empty");
	CHECK_EQ(rt_hex_digit('g'), (uint64_t)-1);
	CHECK_EQ(rt_hex_digit('F'), 15);
}

/* What rt_warn writes on standard error, read back through a pipe. */
static void check_warn(const char *arg, const char *want)
{
	static char got[RT_WARN_MAX + 16];
	int fds[2], saved = dup(STDERR_FILENO);
	if (!CHECK(saved >= 0 && pipe(fds) == 0, "pipe"))
		return;
	fcntl(fds[0], F_SETPIPE_SZ, 1 << 16);
	dup2(fds[1], STDERR_FILENO);
	rt_warn("%s", arg);
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(fds[1]);
	ssize_t n = read(fds[0], got, sizeof(got) - 1);
	close(fds[0]);
	got[n > 0 ? n : 0] = '\0';
	CHECK(!strcmp(got, want), "warning '%.60s...' (%zd bytes), not '%.60s...'", got, n, want);
}

static void test_warn(void)
{
	unit_case = "warnings";
	check_warn("a message", "ringtrace: a message\n");
	rt_warn_program("ringtraced");
	check_warn("x 100%", "ringtraced: x 100%\n");
	/* A long one is cut, and still ends its line. */
	static char big[RT_WARN_MAX * 2], want[RT_WARN_MAX + 1];
	memset(big, 'p', sizeof(big) - 1);
	snprintf(want, sizeof(want), "ringtraced: %.*s\n", RT_WARN_MAX - 14, big);
	check_warn(big, want);
	CHECK_EQ(strlen(want), RT_WARN_MAX - 1);
}

static void test_array(void)
{
	unit_case = "arrays";
	uint64_t *v = NULL;
	uint32_t cap = 0;
	size_t nr = 0;
	for (uint64_t i = 0; i < 1000; i++) {
		if (!CHECK(RT_ARRAY_GROW(v, cap, nr + 1, 8) == 0, "grow to %zu", nr + 1))
			break;
		v[nr++] = i * 3;
	}
	CHECK(cap >= 1000 && cap <= 1024 && (cap & (cap - 1)) == 0, "doubling from 8: %u", cap);
	uint64_t sum = 0;
	for (size_t i = 0; i < nr; i++)
		sum += v[i];
	CHECK_EQ(sum, 3 * 999 * 1000 / 2);
	free(v);

	/* Indexed by key: the new elements zeroed, the old ones kept. */
	uint32_t *k = NULL;
	size_t kn = 0;
	CHECK(RT_ARRAY_GROW_ZEROED(k, kn, 5, 4) == 0 && kn == 8, "first: %zu", kn);
	for (size_t i = 0; i < kn; i++)
		k[i] = (uint32_t)i + 1;
	CHECK(RT_ARRAY_GROW_ZEROED(k, kn, 100, 4) == 0 && kn == 128, "then: %zu", kn);
	bool ok = true;
	for (size_t i = 0; i < kn; i++)
		ok &= k[i] == (i < 8 ? i + 1 : 0);
	CHECK(ok, "kept and zeroed");
	CHECK(RT_ARRAY_GROW_ZEROED(k, kn, 50, 4) == 0 && kn == 128, "no shrink");
	/* A size past SIZE_MAX fails and changes nothing. */
	CHECK(RT_ARRAY_GROW(k, kn, SIZE_MAX / 2, 4) == -ENOMEM && kn == 128 && k[0] == 1,
	      "overflow refused");
	free(k);
}

static void test_proc_stat(void)
{
	unit_case = "rt_proc_stat";
	struct rt_proc_stat st;
	/* A name with spaces and parentheses (prctl PR_SET_NAME allows any
	 * byte but NUL): the fields come after the last ')'. */
	const char *line = "4242 (a) R 1 2 (x) S 99 1 1 0 -1 4194560 10 0 0 0 1 2 0 0 20 0 "
			   "3 0 1234 1000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 "
			   "1 0 0 0 0 0\n";
	CHECK(rt_proc_stat_parse(line, strlen(line), &st) == 0, "parsed");
	CHECK(!strcmp(st.comm, "a) R 1 2 (x"), "comm %s", st.comm);
	CHECK(st.state == 'S' && st.ppid == 99 && st.flags == 4194560 && st.priority == 20 &&
	      st.processor == 1, "state %c ppid %d flags %lu prio %d cpu %d", st.state, st.ppid,
	      st.flags, st.priority, st.processor);
	const char *kthread = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 3 0 0 "
			      "18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 0 0 0 0 0 0";
	CHECK(rt_proc_stat_parse(kthread, strlen(kthread), &st) == 0 &&
	      (st.flags & RT_PF_KTHREAD) && st.ppid == 0 && st.processor == 0, "kthreadd");
	/* A name longer than the kernel's is cut to 15 bytes. */
	const char *lng = "7 (0123456789abcdefXYZ) D 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 -51 0 1 0 3 0 0 "
			  "1 0 0 0 0 0 0 0 0 0 0 0 0 17 3";
	CHECK(rt_proc_stat_parse(lng, strlen(lng), &st) == 0 &&
	      !strcmp(st.comm, "0123456789abcde") && st.priority == -51 && st.processor == 3,
	      "long comm %s", st.comm);
	/* Not stat lines: refused, never read past `len`. */
	static const char *const bad[] = {
		"", "4242", "4242 (x", "4242 x) R 1", "4242 (x) R 1 2 3",
		"4242 (x) RR 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25",
		"4242 (x) R one 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 3 0 0 1 0 0 0 0 0 0 0 0 0 0 0 0 17 3",
		"4242 (x) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 3 0 0 1 0 0 0 0 0 0 0 0 0 0 0 0 17 "
		"123456789012345678901234567890123",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(rt_proc_stat_parse(bad[i], strlen(bad[i]), &st) == -EINVAL, "bad %zu", i);
	/* Cut anywhere before the processor field: refused. */
	for (size_t n = 0; n < strlen(line) - 12; n++)
		CHECK(rt_proc_stat_parse(line, n, &st) == -EINVAL, "cut at %zu", n);
	/* This thread's own file, and a thread that does not exist. */
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)gettid());
	CHECK(rt_proc_stat_read(AT_FDCWD, path, &st) == 0 && st.ppid == (int)getppid() &&
	      st.state == 'R', "own stat: ppid %d state %c", st.ppid, st.state);
	CHECK(rt_proc_stat_read(AT_FDCWD, "/proc/self/task/0/stat", &st) == -ENOENT, "none");

	/* Status lines: the key at a line's start only, every number (more
	 * than asked for counted), none when absent, refused when not
	 * numbers. */
	unit_case = "rt_proc_status_ids";
	const char *status = "Name:\tNSpid: 9\nTgid:\t4242\nNStgid:\t4242\t7\t1\n"
			     "NSpid:\t4243\t8\t2\nUid:\t0\t0\t0\t0\n";
	int ids[4] = { 0 };
	CHECK(rt_proc_status_ids(status, "Tgid", ids, 4) == 1 && ids[0] == 4242, "Tgid");
	CHECK(rt_proc_status_ids(status, "NSpid", ids, 4) == 3 && ids[0] == 4243 && ids[1] == 8 &&
	      ids[2] == 2, "NSpid %d %d %d", ids[0], ids[1], ids[2]);
	CHECK(rt_proc_status_ids(status, "NStgid", ids, 2) == 3 && ids[1] == 7, "more than max");
	CHECK(rt_proc_status_ids(status, "Gid", ids, 4) == 0, "absent");
	CHECK(rt_proc_status_ids(status, "NS", ids, 4) == 0, "a prefix of a key");
	CHECK(rt_proc_status_ids("Tgid:\tx\n", "Tgid", ids, 4) == -EINVAL, "not a number");
	CHECK(rt_proc_status_ids("Tgid:\t-1\n", "Tgid", ids, 4) == -EINVAL, "negative");
	CHECK(rt_proc_status_ids("Tgid:", "Tgid", ids, 4) == 0, "empty, no newline");
	char text[4096];
	CHECK(rt_proc_status_read(AT_FDCWD, "/proc/self/status", text, sizeof(text)) == 0 &&
	      rt_proc_status_ids(text, "Tgid", ids, 1) == 1 && ids[0] == (int)getpid(),
	      "own status");
	CHECK(rt_proc_status_read(AT_FDCWD, "/proc/self/task/0/status", text, sizeof(text)) ==
	      -ENOENT, "none");
}

int main(void)
{
	test_proc_stat();
	test_array();
	test_warn();
	test_hex();
	test_rules();
	test_json_escape();
	test_context_table();
	test_parse_contexts();
	test_parse_duration();
	return unit_finish();
}
