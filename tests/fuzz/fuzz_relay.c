/*
 * fuzz_relay.c - what ringtrace-relayd reads from the network, and the
 * CTF indexes it reads back from disk (src/relay, src/net). The first
 * byte of the input chooses what the rest is:
 *   0  the bytes a daemon's control connection sends, served by
 *      relay_serve_ctrl (frames: rnet_recv, rnet_frame_decode; every
 *      control message's fields; sessions and streams created in a
 *      private output directory);
 *   1  a data connection's bytes, served by relay_serve_data, with one
 *      session of the same host and its streams already open (attach,
 *      packets and their index entries, beacons, syncs);
 *   2  a client's side of the handshake, as the relay reads it
 *      (rnet_server_handshake: HELLO, AUTH);
 *   3  a relay's side, as a daemon or viewer reads it
 *      (rnet_client_handshake: CHALLENGE, AUTH_FAIL's message);
 *   4  u16 L (little-endian), L bytes of a stream's CTF index file, then
 *      its data file, found on disk by relay_stream_open (a relay
 *      restarted: the index read back and both files cut to the last
 *      whole packet), then one packet appended and every entry read;
 *   5  the pure decoders: rnet_frame_decode, the payload getters driven by
 *      the input, rnet_check_name/_path, rnet_parse_url/_hostport;
 *   6  a control connection's bytes with the session of mode 1 open (by
 *      another connection of the same host): what a daemon's cluster
 *      listener sends (CLUSTER_LISTEN on it, then CLUSTER_DONE), and
 *      cluster requests and chunk archives of its own sessions.
 * The relay's table is emptied between inputs (relay_table_free) and the
 * output directory removed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/common/fs_util.h"
#include "../../src/net/net.h"
#include "fuzz.h"
#include "relay_fixture.h"

#define HOST "fuzzhost"
#define TRACE FUZZ_TRACE

/* An index entry live viewers can follow (live_viewer.c refuses the
 * others, and with them the whole session): a packet of at least one
 * byte, its content within it. */
static bool servable(const struct relay_index *ix)
{
	return ix->packet_size > 0 && ix->content_size <= ix->packet_size;
}

/* After a data connection: what the fixture's streams hold. */
static void check_stored(struct relay_session *s)
{
	for (struct relay_stream *st = s->streams; st; st = st->next) {
		struct relay_index ix;
		uint64_t end = 0;
		for (uint64_t n = 0; !st->metadata && relay_stream_index(st, n, &ix) == 0; n++) {
			FUZZ_CHECK(ix.offset == end && servable(&ix));
			end += ix.packet_size / 8;
		}
		FUZZ_CHECK(st->metadata || end == relay_stream_size(st));
	}
}

static void handshake_server(int fd, const char *host)
{
	(void)host;
	char name[RNET_HOST_MAX + 1], err[512];
	uint32_t role;
	int ret = rnet_server_handshake(fd, &relay_cfg.secret, &role, name, 2000, err,
					sizeof(err));
	FUZZ_CHECK(ret < 0);	/* nobody can answer the fresh nonce's MAC */
	FUZZ_CHECK(err[0] != 0);
}

static void handshake_client(int fd, const char *host)
{
	char err[512];
	int ret = rnet_client_handshake(fd, &relay_cfg.secret, RNET_ROLE_CTRL, host, 2000, err,
					sizeof(err));
	FUZZ_CHECK(ret < 0);
	FUZZ_CHECK(err[0] != 0);
	/* Shown to the user: the peer's text cannot drive the terminal. */
	for (const char *c = err; *c; c++)
		FUZZ_CHECK(*c >= 0x20 && *c <= 0x7e);
}

static int put(const char *path, const uint8_t *p, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	ssize_t w = len ? write(fd, p, len) : 0;
	close(fd);
	return w == (ssize_t)len ? 0 : -1;
}

static void index_file(const uint8_t *data, size_t size)
{
	if (size < 2)
		return;
	size_t ilen = (size_t)data[0] | (size_t)data[1] << 8;
	data += 2;
	size -= 2;
	if (ilen > size)
		ilen = size;
	struct relay_session *s;
	char err[PATH_MAX + 256], dir[PATH_MAX + 64], path[PATH_MAX + 96];
	if (relay_session_open(HOST, "idx", 1700000000, 0, false, &s, err, sizeof(err)))
		abort();
	snprintf(dir, sizeof(dir), "%s/" TRACE "/index", s->dir);
	char why[PATH_MAX + 128];
	if (rt_mkdir_p(dir, why, sizeof(why)) < 0)
		return;
	snprintf(path, sizeof(path), "%s/channel0_1.idx", dir);
	put(path, data, ilen);
	snprintf(path, sizeof(path), "%s/" TRACE "/channel0_1", s->dir);
	put(path, data + ilen, size - ilen);
	struct relay_stream *st;
	if (relay_stream_open(s, TRACE, "channel0", 1, false, &st, err, sizeof(err)) < 0)
		return;
	/* What was read back is whole and in the file. */
	uint64_t end = 0;
	struct relay_index ix;
	for (uint64_t n = 0; relay_stream_index(st, n, &ix) == 0; n++) {
		FUZZ_CHECK(ix.offset == end && ix.packet_size % 8 == 0);
		FUZZ_CHECK(servable(&ix));
		end += ix.packet_size / 8;
	}
	FUZZ_CHECK(end == relay_stream_size(st));
	uint8_t pkt[32] = { 0 };
	struct relay_index add = { .packet_size = 8 * sizeof(pkt), .content_size = 8 * sizeof(pkt) };
	FUZZ_CHECK(relay_stream_append(st, &add, pkt, sizeof(pkt)) == 0);
	FUZZ_CHECK(add.offset == end && relay_stream_size(st) == end + sizeof(pkt));
	uint8_t back[32];
	FUZZ_CHECK(relay_stream_read(st, end, back, sizeof(back)) == (ssize_t)sizeof(back));
}

static void wire(const uint8_t *data, size_t size)
{
	struct rnet_hdr h;
	if (rnet_frame_decode(data, size, &h) == 0)
		FUZZ_CHECK(h.length <= rnet_type_max(h.type) || h.type == RNET_AUTH_OK ||
			   h.type == RNET_DATA_SYNC);
	/* The input as a script of getters over itself. */
	struct rnet_rd r = { .p = data, .len = size };
	char text[RNET_PATH_MAX + 1];
	uint8_t bytes[64];
	for (size_t k = 0; k < size && k < 32 && !r.err; k++) {
		switch (data[k] % 6) {
		case 0: rnet_get_u16(&r); break;
		case 1: rnet_get_u32(&r); break;
		case 2: rnet_get_u64(&r); break;
		case 3: rnet_get_bytes(&r, bytes, data[k] % sizeof(bytes)); break;
		case 4:
			rnet_get_str(&r, text, data[k] % 2 ? RNET_NAME_MAX : RNET_PATH_MAX);
			FUZZ_CHECK(r.err || strlen(text) <= RNET_PATH_MAX);
			break;
		default: (void)rnet_get_ref(&r, data[k]); break;
		}
		FUZZ_CHECK(r.off <= r.len);
	}
	(void)rnet_rd_end(&r);
	char *s = strndup((const char *)data, size);
	if (!s)
		return;
	if (rnet_check_name(s, RNET_NAME_MAX) == 0)
		FUZZ_CHECK(s[0] != '.' && !strchr(s, '/'));
	if (rnet_check_path(s) == 0)
		FUZZ_CHECK(s[0] != '/' && !strstr(s, "//") && !strstr(s, "/."));
	char host[256];
	int ctrl = 0, dport = 0;
	(void)rnet_parse_url(s, false, host, sizeof(host), &ctrl, &dport);
	(void)rnet_parse_url(s, true, host, sizeof(host), &ctrl, &dport);
	(void)rnet_parse_hostport(s, 5342, host, sizeof(host), &ctrl);
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* What one socket buffer takes at once (the peer writes as the
	 * relay reads, so this only bounds a run's time). */
	if (size < 1 || size > 65536)
		return 0;
	fuzz_relay_setup("relay");
	uint8_t mode = data[0];
	data++;
	size--;
	switch (mode % 7) {
	case 0: fuzz_relay_serve(relay_serve_ctrl, HOST, data, size); break;
	case 1: {
		struct relay_session *s = fuzz_relay_fixture(HOST, "fix");
		fuzz_relay_serve(relay_serve_data, HOST, data, size);
		check_stored(s);
		break;
	}
	case 2: fuzz_relay_serve(handshake_server, HOST, data, size); break;
	case 3: fuzz_relay_serve(handshake_client, HOST, data, size); break;
	case 4: index_file(data, size); break;
	case 5: wire(data, size); break;
	default:
		fuzz_relay_fixture(HOST, "fix");
		fuzz_relay_serve(relay_serve_ctrl, HOST, data, size);
		break;
	}
	fuzz_relay_reset();
	return 0;
}
