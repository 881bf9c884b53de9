/*
 * fuzz_live.c - LTTng's live protocol, both sides (src/live, and the
 * relay's live port, src/relay/live_server.c). The first byte of the
 * input chooses what the rest is:
 *   0  a viewer's commands, served by relay_serve_live (LTTng's viewers'
 *      way, or ringtrace's handshake first) from a relay table holding a
 *      live session with its metadata and a stream of two packets;
 *   1  a relay's replies to `ringtrace view --live net://...` listing the
 *      sessions (lv_viewer_connect, lv_viewer_list);
 *   2  a relay's replies to a viewer that attaches session "s" of host
 *      "h" and reads every event (lv_viewer_attach, then the reader's
 *      rtr_next over what the relay sends: streams, metadata, indexes,
 *      packets, beacons), then detaches;
 *   3  the pure decoders: every lv_get_* on the input and lv_url_parse.
 * The viewer's replies come from a scripted peer on a loopback port; the
 * viewer's retry period is 1 ms in this build (tests/fuzz/CMakeLists.txt).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../src/live/live_proto.h"
#include "../../src/live/live_viewer.h"
#include "fuzz.h"
#include "relay_fixture.h"

static int listen_fd = -1;
static uint16_t port;

static void setup(void)
{
	if (listen_fd >= 0)
		return;
	fuzz_relay_setup("live");
	/* The viewer opens without ringtrace's handshake: no secret file. */
	char path[PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s-no-secret", relay_cfg.output);
	setenv("RINGTRACE_RELAY_SECRET", path, 1);
	listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(listen_fd, 4) < 0 || getsockname(listen_fd, (struct sockaddr *)&a, &alen) < 0)
		abort();
	port = ntohs(a.sin_port);
}

static void serve_live(int fd, const char *host)
{
	(void)host;
	relay_serve_live(fd);
}

/* A viewer's commands, against a live session of host "h" named "s". */
static void server(const uint8_t *data, size_t size)
{
	fuzz_relay_fixture("h", "s");
	fuzz_relay_serve(serve_live, "h", data, size);
	fuzz_relay_reset();
}

static void client(const uint8_t *data, size_t size, bool attach)
{
	struct fuzz_peer p;
	if (fuzz_peer_start(&p, -1, listen_fd, data, size) < 0)
		return;
	char url[64], err[1024];
	struct lv_url u;
	snprintf(url, sizeof(url), "net://127.0.0.1:%u/host/h/s", port);
	FUZZ_CHECK(lv_url_parse(url, &u, err, sizeof(err)) == 0);
	static const volatile sig_atomic_t stop = 0;
	struct lv_viewer *v;
	int ret = lv_viewer_connect(&u, &stop, &v, err, sizeof(err));
	if (ret == 0 && !attach) {
		struct lv_session *list;
		size_t n;
		if (lv_viewer_list(v, &list, &n, err, sizeof(err)) == 0) {
			for (size_t k = 0; k < n; k++)
				FUZZ_CHECK(strlen(list[k].hostname) <= LV_HOST_MAX &&
					   strlen(list[k].name) <= LV_NAME_MAX);
			free(list);
		}
	} else if (ret == 0) {
		struct rtr_trace *t;
		ret = lv_viewer_attach(v, u.target, u.session, &t, err, sizeof(err));
		if (ret == 0) {
			struct rtr_event ev;
			struct rtr_value vals[16];
			int k = 0;
			while (k < 100000 && (ret = rtr_next(t, &ev)) > 0 && ++k)
				(void)rtr_fields(&ev, 0, vals, 16);
			if (getenv("FUZZ_VERBOSE"))	/* what a seed reaches */
				fprintf(stderr, "fuzz_live: %d events, then %d %s\n", k, ret,
					ret < 0 ? rtr_error(t) : "");
			rtr_close(t);
			ret = 0;
		}
	}
	if (ret < 0) {
		FUZZ_CHECK(err[0] != 0);
		if (getenv("FUZZ_VERBOSE"))
			fprintf(stderr, "fuzz_live: %s\n", err);
	}
	lv_viewer_close(v);
	fuzz_peer_join(&p);
}

static void decoders(const uint8_t *data, size_t size)
{
	struct lv_hdr h;
	struct lv_connect c;
	struct lv_session s;
	struct lv_attach a;
	struct lv_stream *st = malloc(sizeof(*st));
	struct lv_index x;
	struct lv_get_packet g;
	struct lv_reply r;
	uint64_t u64;
	uint32_t u32;
	if (!st)
		return;
	if (lv_get_session(data, size, &s) == 0)
		FUZZ_CHECK(strlen(s.hostname) <= LV_HOST_MAX && strlen(s.name) <= LV_NAME_MAX);
	if (lv_get_stream(data, size, st) == 0)
		FUZZ_CHECK(strlen(st->path) <= LV_PATH_MAX && strlen(st->channel) <= LV_NAME_MAX);
	(void)lv_get_hdr(data, size, &h);
	(void)lv_get_connect(data, size, &c);
	(void)lv_get_attach(data, size, &a);
	(void)lv_get_index(data, size, &x);
	(void)lv_get_get_packet(data, size, &g);
	(void)lv_get_u64(data, size, &u64);
	(void)lv_get_u32(data, size, &u32);
	(void)lv_get_packet_reply(data, size, &r);
	(void)lv_get_metadata_reply(data, size, &r);
	(void)lv_get_streams_reply(data, size, &r);
	free(st);
	char *text = strndup((const char *)data, size);
	if (!text)
		return;
	struct lv_url u;
	char err[512];
	if (lv_url_parse(text, &u, err, sizeof(err)) == 0)
		FUZZ_CHECK(strlen(u.host) < sizeof(u.host) && strlen(u.session) <= LV_NAME_MAX);
	else
		FUZZ_CHECK(err[0] != 0);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 65536)
		return 0;
	setup();
	uint8_t mode = data[0];
	data++;
	size--;
	switch (mode % 4) {
	case 0: server(data, size); break;
	case 1: client(data, size, false); break;
	case 2: client(data, size, true); break;
	default: decoders(data, size); break;
	}
	return 0;
}
