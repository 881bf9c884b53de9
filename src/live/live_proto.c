/*
 * live_proto.c - encoders and decoders of the LTTng live protocol's
 * frames (layouts in live_proto.h) and the viewer URL parser.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "../common/be.h"
#include "live_proto.h"

static void put_str(uint8_t *p, size_t size, const char *s)
{
	size_t n = strnlen(s, size - 1);
	memcpy(p, s, n);
	memset(p + n, 0, size - n);
}

/* Read back up to its first NUL (or all of it), NUL-terminated in
 * out[size + 1]; control characters become '?'. */
static void get_str(const uint8_t *p, size_t size, char *out)
{
	size_t n = strnlen((const char *)p, size);
	for (size_t k = 0; k < n; k++)
		out[k] = p[k] < 0x20 || p[k] == 0x7f ? '?' : (char)p[k];
	out[n] = '\0';
}

size_t lv_put_hdr(uint8_t *b, const struct lv_hdr *h)
{
	rt_put_be64(b, h->data_size);
	rt_put_be32(b + 8, h->cmd);
	rt_put_be32(b + 12, h->version);
	return LV_HDR_SIZE;
}

int lv_get_hdr(const uint8_t *b, size_t len, struct lv_hdr *h)
{
	if (len != LV_HDR_SIZE)
		return -EINVAL;
	h->data_size = rt_get_be64(b);
	h->cmd = rt_get_be32(b + 8);
	h->version = rt_get_be32(b + 12);
	return 0;
}

size_t lv_put_connect(uint8_t *b, const struct lv_connect *c)
{
	rt_put_be64(b, c->viewer_session_id);
	rt_put_be32(b + 8, c->major);
	rt_put_be32(b + 12, c->minor);
	rt_put_be32(b + 16, c->type);
	return LV_CONNECT_SIZE;
}

int lv_get_connect(const uint8_t *b, size_t len, struct lv_connect *c)
{
	if (len != LV_CONNECT_SIZE)
		return -EINVAL;
	c->viewer_session_id = rt_get_be64(b);
	c->major = rt_get_be32(b + 8);
	c->minor = rt_get_be32(b + 12);
	c->type = rt_get_be32(b + 16);
	return 0;
}

size_t lv_put_session(uint8_t *b, const struct lv_session *s)
{
	rt_put_be64(b, s->id);
	rt_put_be32(b + 8, s->live_timer);
	rt_put_be32(b + 12, s->clients);
	rt_put_be32(b + 16, s->streams);
	put_str(b + 20, LV_HOST_MAX, s->hostname);
	put_str(b + 84, LV_NAME_MAX, s->name);
	return LV_SESSION_SIZE;
}

int lv_get_session(const uint8_t *b, size_t len, struct lv_session *s)
{
	if (len != LV_SESSION_SIZE)
		return -EINVAL;
	s->id = rt_get_be64(b);
	s->live_timer = rt_get_be32(b + 8);
	s->clients = rt_get_be32(b + 12);
	s->streams = rt_get_be32(b + 16);
	get_str(b + 20, LV_HOST_MAX, s->hostname);
	get_str(b + 84, LV_NAME_MAX, s->name);
	return 0;
}

size_t lv_put_attach(uint8_t *b, const struct lv_attach *a)
{
	rt_put_be64(b, a->session_id);
	rt_put_be64(b + 8, a->offset);
	rt_put_be32(b + 16, a->seek);
	return LV_ATTACH_SIZE;
}

int lv_get_attach(const uint8_t *b, size_t len, struct lv_attach *a)
{
	if (len != LV_ATTACH_SIZE)
		return -EINVAL;
	a->session_id = rt_get_be64(b);
	a->offset = rt_get_be64(b + 8);
	a->seek = rt_get_be32(b + 16);
	return 0;
}

size_t lv_put_stream(uint8_t *b, const struct lv_stream *s)
{
	rt_put_be64(b, s->id);
	rt_put_be64(b + 8, s->ctf_trace_id);
	rt_put_be32(b + 16, s->metadata_flag);
	put_str(b + 20, LV_PATH_MAX, s->path);
	put_str(b + 4116, LV_NAME_MAX, s->channel);
	return LV_STREAM_SIZE;
}

int lv_get_stream(const uint8_t *b, size_t len, struct lv_stream *s)
{
	if (len != LV_STREAM_SIZE)
		return -EINVAL;
	s->id = rt_get_be64(b);
	s->ctf_trace_id = rt_get_be64(b + 8);
	s->metadata_flag = rt_get_be32(b + 16);
	get_str(b + 20, LV_PATH_MAX, s->path);
	get_str(b + 4116, LV_NAME_MAX, s->channel);
	return 0;
}

size_t lv_put_index(uint8_t *b, const struct lv_index *x)
{
	rt_put_be64(b, x->offset);
	rt_put_be64(b + 8, x->packet_size);
	rt_put_be64(b + 16, x->content_size);
	rt_put_be64(b + 24, x->ts_begin);
	rt_put_be64(b + 32, x->ts_end);
	rt_put_be64(b + 40, x->discarded);
	rt_put_be64(b + 48, x->stream_class);
	rt_put_be32(b + 56, x->status);
	rt_put_be32(b + 60, x->flags);
	return LV_INDEX_SIZE;
}

int lv_get_index(const uint8_t *b, size_t len, struct lv_index *x)
{
	if (len != LV_INDEX_SIZE)
		return -EINVAL;
	x->offset = rt_get_be64(b);
	x->packet_size = rt_get_be64(b + 8);
	x->content_size = rt_get_be64(b + 16);
	x->ts_begin = rt_get_be64(b + 24);
	x->ts_end = rt_get_be64(b + 32);
	x->discarded = rt_get_be64(b + 40);
	x->stream_class = rt_get_be64(b + 48);
	x->status = rt_get_be32(b + 56);
	x->flags = rt_get_be32(b + 60);
	return 0;
}

size_t lv_put_get_packet(uint8_t *b, const struct lv_get_packet *g)
{
	rt_put_be64(b, g->stream_id);
	rt_put_be64(b + 8, g->offset);
	rt_put_be32(b + 16, g->len);
	return LV_GET_PACKET_SIZE;
}

int lv_get_get_packet(const uint8_t *b, size_t len, struct lv_get_packet *g)
{
	if (len != LV_GET_PACKET_SIZE)
		return -EINVAL;
	g->stream_id = rt_get_be64(b);
	g->offset = rt_get_be64(b + 8);
	g->len = rt_get_be32(b + 16);
	return 0;
}

size_t lv_put_u64(uint8_t *b, uint64_t v)
{
	rt_put_be64(b, v);
	return 8;
}

int lv_get_u64(const uint8_t *b, size_t len, uint64_t *v)
{
	if (len != 8)
		return -EINVAL;
	*v = rt_get_be64(b);
	return 0;
}

size_t lv_put_u32(uint8_t *b, uint32_t v)
{
	rt_put_be32(b, v);
	return 4;
}

int lv_get_u32(const uint8_t *b, size_t len, uint32_t *v)
{
	if (len != 4)
		return -EINVAL;
	*v = rt_get_be32(b);
	return 0;
}

size_t lv_put_packet_reply(uint8_t *b, const struct lv_reply *r)
{
	rt_put_be32(b, r->status);
	rt_put_be32(b + 4, (uint32_t)r->len);
	rt_put_be32(b + 8, r->flags);
	return LV_PACKET_REPLY_SIZE;
}

int lv_get_packet_reply(const uint8_t *b, size_t len, struct lv_reply *r)
{
	if (len != LV_PACKET_REPLY_SIZE)
		return -EINVAL;
	r->status = rt_get_be32(b);
	r->len = rt_get_be32(b + 4);
	r->flags = rt_get_be32(b + 8);
	return 0;
}

size_t lv_put_metadata_reply(uint8_t *b, const struct lv_reply *r)
{
	rt_put_be64(b, r->len);
	rt_put_be32(b + 8, r->status);
	return LV_METADATA_REPLY_SIZE;
}

int lv_get_metadata_reply(const uint8_t *b, size_t len, struct lv_reply *r)
{
	if (len != LV_METADATA_REPLY_SIZE)
		return -EINVAL;
	r->len = rt_get_be64(b);
	r->status = rt_get_be32(b + 8);
	r->flags = 0;
	return 0;
}

size_t lv_put_streams_reply(uint8_t *b, const struct lv_reply *r)
{
	rt_put_be32(b, r->status);
	rt_put_be32(b + 4, (uint32_t)r->len);
	return LV_STREAMS_REPLY_SIZE;
}

int lv_get_streams_reply(const uint8_t *b, size_t len, struct lv_reply *r)
{
	if (len != LV_STREAMS_REPLY_SIZE)
		return -EINVAL;
	r->status = rt_get_be32(b);
	r->len = rt_get_be32(b + 4);
	r->flags = 0;
	return 0;
}

/* ------------------------------------------------------------------ */
/* URLs                                                                 */

__attribute__((format(printf, 3, 4)))
static int url_error(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (err && errlen)
		vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* One path component into out[size]: 0, or -EINVAL if empty, too long or
 * holding a character a host or session name never has. */
static int component(const char **pp, char *out, size_t size)
{
	const char *p = *pp, *e = strchr(p, '/');
	size_t n = e ? (size_t)(e - p) : strlen(p);
	if (!n || n >= size)
		return -EINVAL;
	for (size_t k = 0; k < n; k++)
		if ((unsigned char)p[k] < 0x21 || p[k] == 0x7f)
			return -EINVAL;
	memcpy(out, p, n);
	out[n] = '\0';
	*pp = p + n;
	return 0;
}

int lv_url_parse(const char *s, struct lv_url *u, char *err, size_t errlen)
{
	memset(u, 0, sizeof(*u));
	u->port = LV_DEFAULT_PORT;
	const char *p;
	if (!strncmp(s, "net://", 6)) {
		u->family = AF_UNSPEC;
		p = s + 6;
	} else if (!strncmp(s, "net4://", 7)) {
		u->family = AF_INET;
		p = s + 7;
	} else if (!strncmp(s, "net6://", 7)) {
		u->family = AF_INET6;
		p = s + 7;
	} else {
		return url_error(err, errlen,
				 "'%s': a live URL is net://HOST[:PORT][/host/HOSTNAME/SESSION]", s);
	}
	const char *h = p, *he;
	if (*p == '[') {
		he = strchr(p, ']');
		if (!he)
			return url_error(err, errlen, "'%s': no ']' after the IPv6 address", s);
		h = p + 1;
		p = he + 1;
	} else {
		he = p + strcspn(p, ":/");
		p = he;
	}
	size_t hn = (size_t)(he - h);
	if (!hn || hn >= sizeof(u->host))
		return url_error(err, errlen, "'%s': no host, or a host name too long", s);
	memcpy(u->host, h, hn);
	if (*p == ':') {
		char *end;
		errno = 0;
		unsigned long port = strtoul(p + 1, &end, 10);
		if (end == p + 1 || errno || !port || port > 65535 || (*end && *end != '/'))
			return url_error(err, errlen, "'%s': the port must be 1 to 65535", s);
		u->port = (uint16_t)port;
		p = end;
	}
	if (!*p || !strcmp(p, "/"))
		return 0;
	if (strncmp(p, "/host/", 6))
		return url_error(err, errlen, "'%s': the path must be /host/HOSTNAME/SESSION", s);
	p += 6;
	if (component(&p, u->target, sizeof(u->target)) < 0 || *p != '/')
		return url_error(err, errlen, "'%s': a bad or missing host name after /host/", s);
	p++;
	if (component(&p, u->session, sizeof(u->session)) < 0 || (*p && strcmp(p, "/")))
		return url_error(err, errlen, "'%s': a bad or missing session name", s);
	return 0;
}
