/*
 * auth.c - the relay's secret file, the host name a daemon reports, and
 * the mutual challenge-response of every connection (net.h). HMAC-SHA256,
 * the random nonces and the constant-time comparison are OpenSSL's
 * libcrypto.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/stat.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "../common/fs_util.h"
#include "../common/hex.h"
#include "../proto/proto.h"
#include "net.h"

uint64_t rnet_realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int rnet_secret_path(char *buf, size_t len)
{
	const char *env = getenv("RINGTRACE_RELAY_SECRET");
	if (env && *env) {
		if (strlen(env) >= len)
			return -ENAMETOOLONG;
		strcpy(buf, env);
		return 0;
	}
	char dir[PATH_MAX];
	int ret = rtp_rundir(dir, sizeof(dir));
	if (ret < 0)
		return ret;
	int n = snprintf(buf, len, "%s/relay.secret", dir);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Split path into its directory (into dir[dirlen]) and last component. */
static const char *split(const char *path, char *dir, size_t dirlen)
{
	const char *slash = strrchr(path, '/');
	if (!slash) {
		snprintf(dir, dirlen, ".");
		return path;
	}
	size_t n = slash == path ? 1 : (size_t)(slash - path);
	if (n >= dirlen)
		n = dirlen - 1;
	memcpy(dir, path, n);
	dir[n] = 0;
	return slash + 1;
}

/* Create the secret file: 32 random bytes in hex, written to a new
 * temporary file (0600, O_EXCL) then linked to `name` (link fails if
 * another process created it meanwhile: theirs is kept). */
static int secret_create(int dirfd, const char *name)
{
	uint8_t key[RNET_SECRET_SIZE];
	char text[2 * RNET_SECRET_SIZE + 2];
	char tmp[NAME_MAX + 1];
	if (RAND_bytes(key, sizeof(key)) != 1)
		return -EIO;
	rt_hex_encode(key, sizeof(key), text);
	OPENSSL_cleanse(key, sizeof(key));
	strcat(text, "\n");
	snprintf(tmp, sizeof(tmp), ".relay-secret-%d", (int)getpid());
	unlinkat(dirfd, tmp, 0);
	int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int ret = rt_write_all(fd, text, strlen(text));
	OPENSSL_cleanse(text, sizeof(text));
	if (!ret && fsync(fd) < 0)
		ret = -errno;
	close(fd);
	if (!ret && linkat(dirfd, tmp, dirfd, name, 0) < 0 && errno != EEXIST)
		ret = -errno;
	unlinkat(dirfd, tmp, 0);
	return ret;
}

static int secret_read(int dirfd, const char *name, struct rnet_secret *k, const char *path,
		       char *err, size_t errlen)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot open the relay secret %s: %s%s", path, strerror(e),
			 e == ELOOP ? " (a symbolic link)" : "");
		return -e;
	}
	struct stat st;
	char text[2 * RNET_SECRET_SIZE + 2];
	int ret = fstat(fd, &st) < 0 ? -errno : 0;
	if (!ret && !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "the relay secret %s is not a regular file", path);
		ret = -EINVAL;
	} else if (!ret && (st.st_uid != geteuid() || (st.st_mode & 077))) {
		snprintf(err, errlen, "the relay secret %s must be yours (uid %u) with mode 0600 "
			 "(it is uid %u, mode %04o): fix it, or remove it to have the relay "
			 "make a new one", path, (unsigned)geteuid(), (unsigned)st.st_uid,
			 (unsigned)(st.st_mode & 07777));
		ret = -EPERM;
	} else if (!ret) {
		ssize_t n = read(fd, text, sizeof(text));
		if (n < 0) {
			ret = -errno;
		} else {
			size_t len = (size_t)n;
			if (len == sizeof(text))
				len = 0;	/* longer than a key and a newline */
			if (len && text[len - 1] == '\n')
				len--;
			text[len < sizeof(text) ? len : 0] = 0;
			if (len != 2 * RNET_SECRET_SIZE ||
			    rt_hex_decode(text, k->key, RNET_SECRET_SIZE) < 0) {
				snprintf(err, errlen, "the relay secret %s does not hold %u "
					 "hexadecimal digits", path, 2 * RNET_SECRET_SIZE);
				ret = -EINVAL;
			}
		}
	}
	if (ret < 0 && !err[0])
		snprintf(err, errlen, "cannot read the relay secret %s: %s", path, strerror(-ret));
	OPENSSL_cleanse(text, sizeof(text));
	close(fd);
	return ret;
}

int rnet_secret_load(struct rnet_secret *k, bool create, char *err, size_t errlen)
{
	char path[PATH_MAX], dir[PATH_MAX], why[PATH_MAX + 128];
	err[0] = 0;
	if (rnet_secret_path(path, sizeof(path)) < 0) {
		snprintf(err, errlen, "the relay secret's path is too long");
		return -ENAMETOOLONG;
	}
	const char *name = split(path, dir, sizeof(dir));
	if (!*name) {
		snprintf(err, errlen, "the relay secret %s names a directory", path);
		return -EINVAL;
	}
	/* The default lives in the checked private run directory; a path
	 * given by RINGTRACE_RELAY_SECRET in the user's choice of directory
	 * (the file's own owner and mode are checked on reading). */
	bool dflt = !getenv("RINGTRACE_RELAY_SECRET") || !*getenv("RINGTRACE_RELAY_SECRET");
	int dirfd = dflt ? rtp_rundir_open(create, why, sizeof(why))
			 : rt_dir_open(dir, RT_DIR_SHARED | (create ? RT_DIR_CREATE : 0), NULL,
				       why, sizeof(why));
	if (dirfd < 0) {
		if (dirfd == -ENOENT && !create)
			snprintf(err, errlen, "no relay secret %s (the relay creates it at its "
				 "first start)", path);
		else
			snprintf(err, errlen, "cannot open the relay secret's directory %s: %s",
				 dir, why[0] ? why : strerror(-dirfd));
		return dirfd;
	}
	int ret = 0;
	if (create && faccessat(dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT) {
		ret = secret_create(dirfd, name);
		if (ret < 0)
			snprintf(err, errlen, "cannot create the relay secret %s: %s", path,
				 strerror(-ret));
	}
	if (!ret) {
		ret = secret_read(dirfd, name, k, path, err, errlen);
		if (ret == -ENOENT)
			snprintf(err, errlen, "no relay secret %s (the relay creates it at its "
				 "first start; copy it to each machine that streams to it)", path);
	}
	close(dirfd);
	return ret;
}

int rnet_hostname(char *buf, size_t len, char *err, size_t errlen)
{
	char name[256] = "";
	const char *env = getenv("RINGTRACE_HOSTNAME");
	if (env && *env)
		snprintf(name, sizeof(name), "%s", env);
	else if (gethostname(name, sizeof(name) - 1) < 0)
		snprintf(name, sizeof(name), "localhost");
	if (rnet_check_name(name, RNET_HOST_MAX) < 0 || strlen(name) >= len) {
		snprintf(err, errlen, "host name '%.80s'%s is not usable by the relay: 1 to %u "
			 "characters of letters, digits, '.', '_' and '-', not starting with '.'",
			 name, env && *env ? " (RINGTRACE_HOSTNAME)" : "", RNET_HOST_MAX);
		return -EINVAL;
	}
	strcpy(buf, name);
	return 0;
}

void rnet_mac(const struct rnet_secret *k, char side, uint32_t role, const char *host,
	      const uint8_t *nonce_c, const uint8_t *nonce_r, uint8_t *out)
{
	static const char label[] = "ringtrace-relay-1";
	struct rnet_wr w = { 0 };
	uint8_t s = (uint8_t)side;
	rnet_put_bytes(&w, label, sizeof(label) - 1);
	rnet_put_bytes(&w, &s, 1);
	rnet_put_u32(&w, role);
	rnet_put_str(&w, host);
	rnet_put_bytes(&w, nonce_c, RNET_NONCE_SIZE);
	rnet_put_bytes(&w, nonce_r, RNET_NONCE_SIZE);
	unsigned int n = RNET_MAC_SIZE;
	if (w.err || !HMAC(EVP_sha256(), k->key, RNET_SECRET_SIZE, w.p, w.len, out, &n))
		RAND_bytes(out, RNET_MAC_SIZE);	/* matches nothing */
	rnet_wr_free(&w);
}

static bool mac_equal(const uint8_t *a, const uint8_t *b)
{
	return CRYPTO_memcmp(a, b, RNET_MAC_SIZE) == 0;
}

/* Receive one frame of `type` (AUTH_FAIL's message goes to err as
 * -EACCES). */
static int expect(int fd, uint16_t type, uint8_t **p, uint32_t *len, int timeout_ms,
		  char *err, size_t errlen)
{
	struct rnet_hdr h;
	int ret = rnet_recv(fd, &h, p, timeout_ms);
	if (ret < 0)
		return ret;
	if (h.type == RNET_AUTH_FAIL) {
		struct rnet_rd r = { .p = *p, .len = h.length };
		char msg[RNET_MSG_MAX + 1];
		rnet_get_u32(&r);
		rnet_get_u64(&r);
		rnet_get_u64(&r);
		rnet_get_str(&r, msg, RNET_MSG_MAX);
		snprintf(err, errlen, "authentication failed: %s",
			 rnet_rd_end(&r) == 0 ? rnet_shown(msg) : "refused by the relay");
		free(*p);
		*p = NULL;
		return -EACCES;
	}
	if (h.type != type) {
		free(*p);
		*p = NULL;
		return -EPROTO;
	}
	*len = h.length;
	return 0;
}

int rnet_client_handshake(int fd, const struct rnet_secret *k, uint32_t role, const char *host,
			  int timeout_ms, char *err, size_t errlen)
{
	uint8_t nonce_c[RNET_NONCE_SIZE], nonce_r[RNET_NONCE_SIZE], mac[RNET_MAC_SIZE],
		want[RNET_MAC_SIZE];
	struct rnet_wr w = { 0 };
	uint8_t *p = NULL;
	uint32_t len = 0;
	int ret;
	err[0] = 0;
	if (RAND_bytes(nonce_c, sizeof(nonce_c)) != 1)
		return -EIO;
	rnet_put_u32(&w, RNET_VERSION);
	rnet_put_u32(&w, role);
	rnet_put_bytes(&w, nonce_c, sizeof(nonce_c));
	rnet_put_str(&w, host);
	ret = w.err ? w.err : rnet_send(fd, RNET_HELLO, w.p, (uint32_t)w.len, timeout_ms);
	rnet_wr_free(&w);
	if (ret < 0)
		goto out;
	ret = expect(fd, RNET_CHALLENGE, &p, &len, timeout_ms, err, errlen);
	if (ret < 0)
		goto out;
	struct rnet_rd r = { .p = p, .len = len };
	rnet_get_bytes(&r, nonce_r, sizeof(nonce_r));
	rnet_get_bytes(&r, mac, sizeof(mac));
	if (rnet_rd_end(&r) < 0) {
		ret = -EPROTO;
		goto out;
	}
	rnet_mac(k, 'R', role, host, nonce_c, nonce_r, want);
	if (!mac_equal(mac, want)) {
		snprintf(err, errlen, "authentication failed: the relay does not know this "
			 "machine's relay secret (RINGTRACE_RELAY_SECRET)");
		ret = -EACCES;
		goto out;
	}
	rnet_mac(k, 'C', role, host, nonce_c, nonce_r, mac);
	ret = rnet_send(fd, RNET_AUTH, mac, sizeof(mac), timeout_ms);
	if (ret < 0)
		goto out;
	free(p);
	p = NULL;
	ret = expect(fd, RNET_AUTH_OK, &p, &len, timeout_ms, err, errlen);
out:
	free(p);
	if (ret < 0 && !err[0])
		snprintf(err, errlen, "%s", ret == -EPROTO ? "the peer does not speak the "
			 "ringtrace relay protocol" : strerror(-ret));
	return ret;
}

static void fail(int fd, const char *msg)
{
	struct rnet_wr w = { 0 };
	rnet_put_u32(&w, (uint32_t)-EACCES);
	rnet_put_u64(&w, 0);
	rnet_put_u64(&w, 0);
	rnet_put_str(&w, msg);
	if (!w.err)
		rnet_send(fd, RNET_AUTH_FAIL, w.p, (uint32_t)w.len, 1000);
	rnet_wr_free(&w);
}

int rnet_server_handshake(int fd, const struct rnet_secret *k, uint32_t *role, char *host,
			  int timeout_ms, char *err, size_t errlen)
{
	uint8_t nonce_c[RNET_NONCE_SIZE], nonce_r[RNET_NONCE_SIZE], mac[RNET_MAC_SIZE],
		want[RNET_MAC_SIZE];
	uint8_t *p = NULL;
	uint32_t len = 0, version;
	struct rnet_wr w = { 0 };
	char name[256];
	err[0] = 0;
	host[0] = 0;
	int ret = expect(fd, RNET_HELLO, &p, &len, timeout_ms, err, errlen);
	if (ret < 0)
		goto out;
	struct rnet_rd r = { .p = p, .len = len };
	version = rnet_get_u32(&r);
	*role = rnet_get_u32(&r);
	rnet_get_bytes(&r, nonce_c, sizeof(nonce_c));
	rnet_get_str(&r, name, sizeof(name) - 1);
	if (rnet_rd_end(&r) < 0) {
		ret = -EPROTO;
		goto out;
	}
	if (version != RNET_VERSION) {
		snprintf(err, errlen, "protocol version %u (the relay speaks %u)", version,
			 RNET_VERSION);
		fail(fd, err);
		ret = -EPROTO;
		goto out;
	}
	if (*role < RNET_ROLE_CTRL || *role > RNET_ROLE_VIEWER ||
	    rnet_check_name(name, RNET_HOST_MAX) < 0) {
		snprintf(err, errlen, "refused host name '%s' or role %u", rnet_shown(name),
			 *role);
		fail(fd, "host name refused (letters, digits, '.', '_', '-', not starting "
		     "with '.')");
		ret = -EINVAL;
		goto out;
	}
	strcpy(host, name);
	if (RAND_bytes(nonce_r, sizeof(nonce_r)) != 1) {
		ret = -EIO;
		goto out;
	}
	rnet_mac(k, 'R', *role, host, nonce_c, nonce_r, mac);
	rnet_put_bytes(&w, nonce_r, sizeof(nonce_r));
	rnet_put_bytes(&w, mac, sizeof(mac));
	ret = w.err ? w.err : rnet_send(fd, RNET_CHALLENGE, w.p, (uint32_t)w.len, timeout_ms);
	if (ret < 0)
		goto out;
	free(p);
	p = NULL;
	ret = expect(fd, RNET_AUTH, &p, &len, timeout_ms, err, errlen);
	if (ret < 0)
		goto out;
	rnet_mac(k, 'C', *role, host, nonce_c, nonce_r, want);
	if (len != RNET_MAC_SIZE || !mac_equal(p, want)) {
		snprintf(err, errlen, "authentication failed for host '%s'", host);
		fail(fd, "the relay does not know this machine's secret (RINGTRACE_RELAY_SECRET)");
		ret = -EACCES;
		goto out;
	}
	ret = rnet_send(fd, RNET_AUTH_OK, NULL, 0, timeout_ms);
out:
	rnet_wr_free(&w);
	free(p);
	if (ret < 0 && !err[0])
		snprintf(err, errlen, "%s", ret == -EPROTO ? "not the ringtrace relay protocol"
			 : strerror(-ret));
	return ret;
}
