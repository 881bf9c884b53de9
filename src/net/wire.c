/*
 * wire.c - frame headers, payload fields and the names that become
 * paths (net.h): pure functions over buffers.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "net.h"

uint32_t rnet_type_max(uint16_t type)
{
	switch (type) {
	case RNET_HELLO:
		return 4 + 4 + RNET_NONCE_SIZE + 2 + 255;	/* a longer name gets its refusal */
	case RNET_CHALLENGE:
		return RNET_NONCE_SIZE + RNET_MAC_SIZE;
	case RNET_AUTH:
		return RNET_MAC_SIZE;
	case RNET_AUTH_OK:
		return 0;
	case RNET_AUTH_FAIL:
	case RNET_REPLY:
		return 4 + 8 + 8 + 2 + RNET_MSG_MAX;
	case RNET_CREATE_SESSION:
		return 2 + RNET_NAME_MAX + 8 + 4 + 4;
	case RNET_ADD_STREAM:
		return 8 + 2 + RNET_PATH_MAX + 2 + RNET_NAME_MAX + 4 + 4;
	case RNET_METADATA:
		return 8 + 8 + RNET_METADATA_MAX;
	case RNET_ARCHIVE_CHUNK:
		return 8 + 2 * (2 + RNET_NAME_MAX);
	case RNET_CLOSE_STREAM:
	case RNET_CLOSE_SESSION:
	case RNET_DATA_ATTACH:
		return 8;
	case RNET_BEACON:
		return 3 * 8;
	case RNET_CLOCK:
		return 8;
	case RNET_CLOCK_REPLY:
	case RNET_CLUSTER_TRIGGER:
		return 3 * 8;
	case RNET_CLUSTER_LISTEN:
		return 8;
	case RNET_CLUSTER_SNAPSHOT:
		return 8 + 8 + 2 + RNET_NAME_MAX + 2 + RNET_HOST_MAX + 2 + RNET_NAME_MAX;
	case RNET_CLUSTER_DONE:
		return 8 + 4 + 2 + RNET_MSG_MAX;
	case RNET_PACKET:
		return 10 * 8 + RNET_PACKET_MAX;
	default:
		return 0;
	}
}

static bool type_known(uint16_t type)
{
	return type == RNET_AUTH_OK || type == RNET_DATA_SYNC || rnet_type_max(type) > 0;
}

int rnet_frame_decode(const void *buf, size_t len, struct rnet_hdr *h)
{
	const uint8_t *b = buf;
	uint32_t magic, length;
	uint16_t type, flags;
	if (len < RNET_HEADER_SIZE)
		return -EPROTO;
	memcpy(&magic, b, 4);
	memcpy(&type, b + 4, 2);
	memcpy(&flags, b + 6, 2);
	memcpy(&length, b + 8, 4);
	magic = be32toh(magic);
	type = be16toh(type);
	flags = be16toh(flags);
	length = be32toh(length);
	if (magic != RNET_MAGIC || flags != 0)
		return -EPROTO;
	if (!type_known(type))
		return -EBADMSG;
	if (length > rnet_type_max(type))
		return -EMSGSIZE;
	*h = (struct rnet_hdr){ .type = type, .flags = flags, .length = length };
	return 0;
}

void rnet_frame_encode(void *buf, uint16_t type, uint32_t length)
{
	uint8_t *b = buf;
	uint32_t m = htobe32(RNET_MAGIC), l = htobe32(length);
	uint16_t t = htobe16(type), f = 0;
	memcpy(b, &m, 4);
	memcpy(b + 4, &t, 2);
	memcpy(b + 6, &f, 2);
	memcpy(b + 8, &l, 4);
}

/* ---- writing ---- */

static uint8_t *wr_room(struct rnet_wr *w, size_t n)
{
	if (w->err)
		return NULL;
	if (n > (1u << 30) - w->len) {
		w->err = -E2BIG;
		return NULL;
	}
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : 64;
		while (cap < w->len + n)
			cap *= 2;
		uint8_t *p = realloc(w->p, cap);
		if (!p) {
			w->err = -ENOMEM;
			return NULL;
		}
		w->p = p;
		w->cap = cap;
	}
	uint8_t *at = w->p + w->len;
	w->len += n;
	return at;
}

void rnet_put_bytes(struct rnet_wr *w, const void *p, size_t n)
{
	uint8_t *at = wr_room(w, n);
	if (at && n)
		memcpy(at, p, n);
}

void rnet_put_u16(struct rnet_wr *w, uint16_t v)
{
	v = htobe16(v);
	rnet_put_bytes(w, &v, 2);
}

void rnet_put_u32(struct rnet_wr *w, uint32_t v)
{
	v = htobe32(v);
	rnet_put_bytes(w, &v, 4);
}

void rnet_put_u64(struct rnet_wr *w, uint64_t v)
{
	v = htobe64(v);
	rnet_put_bytes(w, &v, 8);
}

void rnet_put_str(struct rnet_wr *w, const char *s)
{
	size_t n = strlen(s);
	if (n > 65535) {
		if (!w->err)
			w->err = -ENAMETOOLONG;
		return;
	}
	rnet_put_u16(w, (uint16_t)n);
	rnet_put_bytes(w, s, n);
}

void rnet_wr_free(struct rnet_wr *w)
{
	free(w->p);
	*w = (struct rnet_wr){ 0 };
}

/* ---- reading ---- */

const void *rnet_get_ref(struct rnet_rd *r, size_t n)
{
	if (r->err || n > r->len - r->off) {
		r->err = -EBADMSG;
		return NULL;
	}
	const void *at = r->p + r->off;
	r->off += n;
	return at;
}

void rnet_get_bytes(struct rnet_rd *r, void *out, size_t n)
{
	const void *at = rnet_get_ref(r, n);
	if (at)
		memcpy(out, at, n);
	else
		memset(out, 0, n);
}

uint16_t rnet_get_u16(struct rnet_rd *r)
{
	uint16_t v;
	rnet_get_bytes(r, &v, 2);
	return be16toh(v);
}

uint32_t rnet_get_u32(struct rnet_rd *r)
{
	uint32_t v;
	rnet_get_bytes(r, &v, 4);
	return be32toh(v);
}

uint64_t rnet_get_u64(struct rnet_rd *r)
{
	uint64_t v;
	rnet_get_bytes(r, &v, 8);
	return be64toh(v);
}

void rnet_get_str(struct rnet_rd *r, char *out, size_t max)
{
	out[0] = 0;
	uint16_t n = rnet_get_u16(r);
	if (r->err)
		return;
	if (n > max) {
		r->err = -EBADMSG;
		return;
	}
	const char *at = rnet_get_ref(r, n);
	if (!at)
		return;
	if (memchr(at, 0, n)) {
		r->err = -EBADMSG;
		return;
	}
	memcpy(out, at, n);
	out[n] = 0;
}

char *rnet_shown(char *s)
{
	for (char *c = s; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
			*c = '?';
	return s;
}

int rnet_rd_end(struct rnet_rd *r)
{
	if (!r->err && r->off != r->len)
		r->err = -EBADMSG;
	return r->err ? -EBADMSG : 0;
}

/* ---- names ---- */

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-' || c == '+';
}

static int check_component(const char *s, size_t n, size_t max)
{
	if (n == 0 || n > max || s[0] == '.')
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!name_char(s[i]))
			return -EINVAL;
	return 0;
}

int rnet_check_name(const char *s, size_t max)
{
	return check_component(s, strlen(s), max);
}

int rnet_check_path(const char *s)
{
	size_t len = strlen(s);
	if (len == 0 || len > RNET_PATH_MAX)
		return -EINVAL;
	const char *p = s;
	for (;;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		if (check_component(p, n, RNET_PATH_MAX) < 0)
			return -EINVAL;
		if (!slash)
			return 0;
		p = slash + 1;
	}
}
