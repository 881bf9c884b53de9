/*
 * test_net_wire.c - the relay protocol's pure parts (src/net/net.h): frame
 * headers (every type's limit, bad magic, flags, unknown types), the
 * payload cursor (fields that do not fit, text with a NUL or too long,
 * bytes left over), the names that may become paths, relay URLs, and the
 * handshake's MAC (each input changes it).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "net/net.h"
#include "unit.h"

static void frames(void)
{
	unit_case = "frame headers";
	uint8_t b[RNET_HEADER_SIZE];
	struct rnet_hdr h;
	rnet_frame_encode(b, RNET_PACKET, 1234);
	CHECK(rnet_frame_decode(b, sizeof(b), &h) == 0, "a good header");
	CHECK_EQ(h.type, RNET_PACKET);
	CHECK_EQ(h.length, 1234);
	CHECK(rnet_frame_decode(b, sizeof(b) - 1, &h) == -EPROTO, "short");
	rnet_frame_encode(b, RNET_PACKET, rnet_type_max(RNET_PACKET));
	CHECK(rnet_frame_decode(b, sizeof(b), &h) == 0, "the largest packet");
	rnet_frame_encode(b, RNET_PACKET, rnet_type_max(RNET_PACKET) + 1);
	CHECK(rnet_frame_decode(b, sizeof(b), &h) == -EMSGSIZE, "one byte too many");
	rnet_frame_encode(b, RNET_HELLO, 4096);
	CHECK(rnet_frame_decode(b, sizeof(b), &h) == -EMSGSIZE, "a long HELLO");
	rnet_frame_encode(b, RNET_AUTH_OK, 1);
	CHECK(rnet_frame_decode(b, sizeof(b), &h) == -EMSGSIZE, "AUTH_OK with a payload");
	rnet_frame_encode(b, RNET_DATA_SYNC, 0);
	CHECK(rnet_frame_decode(b, sizeof(b), &h) == 0, "an empty SYNC");
	for (unsigned t = 0; t < 70; t++) {
		rnet_frame_encode(b, (uint16_t)t, 0);
		int r = rnet_frame_decode(b, sizeof(b), &h);
		bool known = t == RNET_AUTH_OK || t == RNET_DATA_SYNC || rnet_type_max((uint16_t)t);
		CHECK(known ? r == 0 : r == -EBADMSG, "type %u: %d", t, r);
	}
	rnet_frame_encode(b, RNET_PACKET, 8);
	b[0] ^= 1;
	CHECK(rnet_frame_decode(b, sizeof(b), &h) == -EPROTO, "bad magic");
	rnet_frame_encode(b, RNET_PACKET, 8);
	b[7] = 1;
	CHECK(rnet_frame_decode(b, sizeof(b), &h) == -EPROTO, "flags set");
}

static void cursor(void)
{
	unit_case = "payload cursor";
	struct rnet_wr w = { 0 };
	rnet_put_u16(&w, 7);
	rnet_put_u32(&w, 0xdeadbeef);
	rnet_put_u64(&w, 1ull << 60);
	rnet_put_str(&w, "host-a");
	CHECK(w.err == 0, "encoding");
	char s[8];
	struct rnet_rd r = { .p = w.p, .len = w.len };
	CHECK_EQ(rnet_get_u16(&r), 7);
	CHECK_EQ(rnet_get_u32(&r), 0xdeadbeef);
	CHECK_EQ(rnet_get_u64(&r), 1ull << 60);
	rnet_get_str(&r, s, 7);
	CHECK(rnet_rd_end(&r) == 0 && !strcmp(s, "host-a"), "decoded");
	/* Every truncation fails, never reads past the end. */
	for (size_t n = 0; n < w.len; n++) {
		struct rnet_rd t = { .p = w.p, .len = n };
		rnet_get_u16(&t);
		rnet_get_u32(&t);
		rnet_get_u64(&t);
		rnet_get_str(&t, s, 7);
		CHECK(rnet_rd_end(&t) == -EBADMSG, "truncated at %zu", n);
	}
	r = (struct rnet_rd){ .p = w.p, .len = w.len };
	rnet_get_u16(&r);
	CHECK(rnet_rd_end(&r) == -EBADMSG, "bytes left over");
	r = (struct rnet_rd){ .p = w.p + 14, .len = w.len - 14 };
	rnet_get_str(&r, s, 5);
	CHECK(rnet_rd_end(&r) == -EBADMSG && !s[0], "text longer than allowed");
	rnet_wr_free(&w);
	uint8_t nul[] = { 0, 3, 'a', 0, 'b' };
	r = (struct rnet_rd){ .p = nul, .len = sizeof(nul) };
	rnet_get_str(&r, s, 7);
	CHECK(rnet_rd_end(&r) == -EBADMSG, "text with a NUL");
}

static void names(void)
{
	unit_case = "names that become paths";
	static const char *const good[] = { "host-a", "web.1", "A_b", "x" };
	static const char *const bad[] = { "", ".", "..", "../x", "a/b", ".hidden", "a b",
					   "a\nb", "é" };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		CHECK(rnet_check_name(good[i], RNET_HOST_MAX) == 0, "%s", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(rnet_check_name(bad[i], RNET_HOST_MAX) == -EINVAL, "%s", bad[i]);
	char longest[RNET_HOST_MAX + 2];
	memset(longest, 'x', sizeof(longest));
	longest[RNET_HOST_MAX] = 0;
	CHECK(rnet_check_name(longest, RNET_HOST_MAX) == 0, "63 bytes");
	longest[RNET_HOST_MAX] = 'x';
	longest[RNET_HOST_MAX + 1] = 0;
	CHECK(rnet_check_name(longest, RNET_HOST_MAX) == -EINVAL, "64 bytes");
	CHECK(rnet_check_path("ust/uid/0/64-bit") == 0, "a trace path");
	CHECK(rnet_check_path("snapshot-1-20261125-101500/kernel") == 0, "a snapshot's");
	CHECK(rnet_check_path("20261125T101445+0000-1/ust/uid/0/64-bit") == 0, "a trace chunk's");
	static const char *const bad_paths[] = { "", "/etc", "ust/", "ust//x", "ust/../x",
						 "ust/./x", "./ust", "ust/.x" };
	for (size_t i = 0; i < sizeof(bad_paths) / sizeof(bad_paths[0]); i++)
		CHECK(rnet_check_path(bad_paths[i]) == -EINVAL, "%s", bad_paths[i]);
}

static void urls(void)
{
	unit_case = "relay URLs";
	char host[64];
	int c, d;
	CHECK(rnet_parse_url("net://relay", false, host, sizeof(host), &c, &d) == 0 &&
	      !strcmp(host, "relay") && c == RNET_CTRL_PORT && d == RNET_DATA_PORT, "defaults");
	CHECK(rnet_parse_url("net://r:1:2/", false, host, sizeof(host), &c, &d) == 0 && c == 1 &&
	      d == 2, "both ports");
	CHECK(rnet_parse_url("net6://[::1]:7", false, host, sizeof(host), &c, &d) == 0 &&
	      !strcmp(host, "::1") && c == 7 && d == RNET_DATA_PORT, "IPv6");
	CHECK(rnet_parse_url("tcp://r:9", true, host, sizeof(host), &c, &d) == 0 && c == 9,
	      "one port");
	static const char *const bad[] = { "net://", "file:///x", "tcp://r:1", "net://r:0",
					   "net://r:65536", "net://r:1:2:3", "net://r:x",
					   "net://[::1", "net://r/path", "net://r:-1" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(rnet_parse_url(bad[i], false, host, sizeof(host), &c, &d) == -EINVAL, "%s",
		      bad[i]);
	CHECK(rnet_parse_url("tcp://r:1:2", true, host, sizeof(host), &c, &d) == -EINVAL,
	      "two ports where one goes");
}

static void macs(void)
{
	unit_case = "handshake MACs";
	struct rnet_secret k = { { 1 } }, k2 = { { 2 } };
	uint8_t nc[RNET_NONCE_SIZE] = { 3 }, nr[RNET_NONCE_SIZE] = { 4 };
	uint8_t m[RNET_MAC_SIZE], o[RNET_MAC_SIZE];
	rnet_mac(&k, 'C', RNET_ROLE_CTRL, "a", nc, nr, m);
	rnet_mac(&k, 'C', RNET_ROLE_CTRL, "a", nc, nr, o);
	CHECK(!memcmp(m, o, sizeof(m)), "deterministic");
	rnet_mac(&k2, 'C', RNET_ROLE_CTRL, "a", nc, nr, o);
	CHECK(memcmp(m, o, sizeof(m)), "the secret");
	rnet_mac(&k, 'R', RNET_ROLE_CTRL, "a", nc, nr, o);
	CHECK(memcmp(m, o, sizeof(m)), "the side");
	rnet_mac(&k, 'C', RNET_ROLE_DATA, "a", nc, nr, o);
	CHECK(memcmp(m, o, sizeof(m)), "the role");
	rnet_mac(&k, 'C', RNET_ROLE_CTRL, "b", nc, nr, o);
	CHECK(memcmp(m, o, sizeof(m)), "the host");
	rnet_mac(&k, 'C', RNET_ROLE_CTRL, "a", nr, nc, o);
	CHECK(memcmp(m, o, sizeof(m)), "the nonces' order");
}

/* A cluster request's payload: encoded, decoded back; any truncation,
 * a byte too many, a name that cannot be a path component refused. */
static void cluster_reqs(void)
{
	unit_case = "cluster requests";
	struct rnet_cluster_req q = { .id = 7, .fired_ns = 1234567890123ull }, o;
	strcpy(q.session, "S");
	strcpy(q.origin, "hostA");
	strcpy(q.name, "cluster-7-20261125-131500");
	struct rnet_wr w = { 0 };
	rnet_cluster_req_encode(&w, &q);
	CHECK(!w.err && w.len <= rnet_type_max(RNET_CLUSTER_SNAPSHOT), "within the limit");
	CHECK(rnet_cluster_req_decode(w.p, w.len, &o) == 0, "decoded");
	CHECK(o.id == 7 && o.fired_ns == q.fired_ns && !strcmp(o.session, "S") &&
	      !strcmp(o.origin, "hostA") && !strcmp(o.name, q.name), "the same request");
	for (size_t n = 0; n < w.len; n++)
		CHECK(rnet_cluster_req_decode(w.p, n, &o) == -EBADMSG, "truncated at %zu", n);
	rnet_put_u16(&w, 0);
	CHECK(rnet_cluster_req_decode(w.p, w.len, &o) == -EBADMSG, "bytes left over");
	rnet_wr_free(&w);
	static const char *const bad[] = { "..", "../x", "a/b", ".hidden", "" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct rnet_cluster_req b = q;
		struct rnet_wr bw = { 0 };
		snprintf(i % 2 ? b.name : b.session, sizeof(b.name), "%s", bad[i]);
		rnet_cluster_req_encode(&bw, &b);
		CHECK(rnet_cluster_req_decode(bw.p, bw.len, &o) == -EBADMSG, "name '%s'", bad[i]);
		rnet_wr_free(&bw);
	}
	uint8_t hb[RNET_HEADER_SIZE];
	struct rnet_hdr h;
	rnet_frame_encode(hb, RNET_CLUSTER_DONE, rnet_type_max(RNET_CLUSTER_DONE) + 1);
	CHECK(rnet_frame_decode(hb, sizeof(hb), &h) == -EMSGSIZE, "an oversized answer");
	rnet_frame_encode(hb, RNET_CLUSTER_TRIGGER, 25);
	CHECK(rnet_frame_decode(hb, sizeof(hb), &h) == -EMSGSIZE, "an oversized trigger");
}

int main(void)
{
	frames();
	cluster_reqs();
	cursor();
	names();
	urls();
	macs();
	return unit_finish();
}
