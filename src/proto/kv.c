/*
 * kv.c - control payloads (key=value entries).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/array.h"
#include "proto.h"

static bool key_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

static bool key_ok(const char *k, size_t n)
{
	if (n == 0 || n > RTP_KEY_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!key_char(k[i]))
			return false;
	return true;
}

void rtp_kv_add(struct rtp_kv *kv, const char *key, const char *value)
{
	if (kv->err)
		return;
	size_t kl = strlen(key), vl = strlen(value);
	if (!key_ok(key, kl)) {
		kv->err = -EINVAL;
		return;
	}
	size_t need = (size_t)kv->len + kl + 1 + vl + 1;
	if (need > RTP_MAX_PAYLOAD) {
		kv->err = -E2BIG;
		return;
	}
	if (RT_ARRAY_GROW(kv->data, kv->cap, need, 256) < 0) {
		kv->err = -ENOMEM;
		return;
	}
	char *p = kv->data + kv->len;
	memcpy(p, key, kl);
	p[kl] = '=';
	memcpy(p + kl + 1, value, vl + 1);
	kv->len = (uint32_t)need;
}

void rtp_kv_addf(struct rtp_kv *kv, const char *key, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0) {
		if (!kv->err)
			kv->err = -ENOMEM;
		return;
	}
	rtp_kv_add(kv, key, s);
	free(s);
}

void rtp_kv_free(struct rtp_kv *kv)
{
	free(kv->data);
	memset(kv, 0, sizeof(*kv));
}

int rtp_kv_validate(const char *p, uint32_t len)
{
	uint32_t pos = 0;
	while (pos < len) {
		const char *e = memchr(p + pos, '\0', len - pos);
		if (!e)
			return -EPROTO;
		const char *eq = memchr(p + pos, '=', (size_t)(e - (p + pos)));
		if (!eq || !key_ok(p + pos, (size_t)(eq - (p + pos))))
			return -EPROTO;
		pos = (uint32_t)(e - p) + 1;
	}
	return 0;
}

bool rtp_kv_next(const char *p, uint32_t len, uint32_t *pos, const char **key,
		 size_t *keylen, const char **value)
{
	if (*pos >= len)
		return false;
	const char *s = p + *pos;
	const char *eq = strchr(s, '=');
	*key = s;
	*keylen = (size_t)(eq - s);
	*value = eq + 1;
	*pos += (uint32_t)strlen(s) + 1;
	return true;
}

const char *rtp_kv_get(const char *p, uint32_t len, const char *key)
{
	uint32_t pos = 0;
	const char *k, *v;
	size_t kl;
	size_t want = strlen(key);
	while (rtp_kv_next(p, len, &pos, &k, &kl, &v))
		if (kl == want && !memcmp(k, key, kl))
			return v;
	return NULL;
}
