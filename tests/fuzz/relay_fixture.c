/* relay_fixture.c - the relay harnesses' setup (relay_fixture.h). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "relay_fixture.h"

static char root[64];

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	if (ftw->level > 0)
		remove(path);
	return 0;
}

static void cleanup(void)
{
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	rmdir(root);
}

void fuzz_relay_setup(const char *who)
{
	if (root[0])
		return;
	snprintf(root, sizeof(root), "/tmp/fuzz-%s-XXXXXX", who);
	if (!mkdtemp(root))
		abort();
	atexit(cleanup);
	snprintf(relay_cfg.output, sizeof(relay_cfg.output), "%s", root);
	relay_cfg.live_plain = true;
	memset(&relay_cfg.secret, 0x5a, sizeof(relay_cfg.secret));
}

void fuzz_relay_reset(void)
{
	relay_table_free();
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

struct relay_session *fuzz_relay_fixture(const char *host, const char *name)
{
	struct relay_session *s;
	struct relay_stream *m, *d;
	char err[PATH_MAX + 256];
	if (relay_session_open(host, name, 1700000000, 1000000, false, &s, err, sizeof(err)) ||
	    relay_stream_open(s, FUZZ_TRACE, "metadata", 0, true, &m, err, sizeof(err)) ||
	    relay_stream_open(s, FUZZ_TRACE, "channel0", 0, false, &d, err, sizeof(err)))
		abort();
	static const char meta[] = "/* CTF 1.8 */\ntrace { major = 1; minor = 8; };\n";
	relay_metadata_write(m, 0, meta, sizeof(meta) - 1);
	uint8_t pkt[64];
	for (unsigned k = 0; k < 2; k++) {
		memset(pkt, (int)k, sizeof(pkt));
		struct relay_index ix = { .packet_size = 8 * sizeof(pkt), .content_size = 8 * 40,
					  .ts_begin = 100 * k, .ts_end = 100 * k + 50,
					  .packet_seq_num = k };
		FUZZ_CHECK(relay_stream_append(d, &ix, pkt, sizeof(pkt)) == 0);
	}
	pthread_mutex_lock(&d->lock);
	d->beacon = 500;
	pthread_mutex_unlock(&d->lock);
	return s;
}

void fuzz_relay_serve(void (*fn)(int fd, const char *host), const char *host,
		      const uint8_t *data, size_t size)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return;
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	struct fuzz_peer p;
	if (fuzz_peer_start(&p, sv[0], -1, data, size) == 0) {
		fn(sv[1], host);
		shutdown(sv[1], SHUT_RDWR);
		fuzz_peer_join(&p);
	}
	close(sv[0]);
	close(sv[1]);
}
