/*
 * app_proto.c - encoding and bounds-checked decoding of the app messages
 * described in app_proto.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "app_proto.h"
#include "proto.h"

void app_put(struct app_buf *b, const void *p, size_t n)
{
	if (b->err)
		return;
	if (n > RTP_MAX_PAYLOAD - b->len) {
		b->err = -E2BIG;
		return;
	}
	if (b->len + n > b->cap) {
		uint32_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n)
			cap *= 2;
		char *d = realloc(b->data, cap);
		if (!d) {
			b->err = -ENOMEM;
			return;
		}
		b->data = d;
		b->cap = cap;
	}
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += (uint32_t)n;
}

void app_put_u8(struct app_buf *b, uint8_t v)
{
	app_put(b, &v, sizeof(v));
}

void app_put_u16(struct app_buf *b, uint16_t v)
{
	app_put(b, &v, sizeof(v));
}

void app_put_u32(struct app_buf *b, uint32_t v)
{
	app_put(b, &v, sizeof(v));
}

void app_put_u64(struct app_buf *b, uint64_t v)
{
	app_put(b, &v, sizeof(v));
}

void app_put_str(struct app_buf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > APP_STR_MAX) {
		if (!b->err)
			b->err = -EINVAL;
		return;
	}
	app_put_u8(b, (uint8_t)n);
	app_put(b, s, n);
}

void app_buf_free(struct app_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

void app_put_event(struct app_buf *b, const struct app_event_out *e)
{
	if (e->nr_fields > RT_MAX_FIELDS) {
		if (!b->err)
			b->err = -EINVAL;
		return;
	}
	app_put_u32(b, e->index);
	app_put_u32(b, (uint32_t)e->loglevel);
	app_put_str(b, e->provider);
	app_put_str(b, e->name);
	app_put_u8(b, (uint8_t)e->nr_fields);
	for (uint32_t i = 0; i < e->nr_fields; i++) {
		app_put_u8(b, (uint8_t)e->fields[i].type);
		app_put_str(b, e->fields[i].name);
	}
}

int app_get(struct app_cursor *c, void *out, size_t n)
{
	if (c->pos > c->len || n > c->len - c->pos)
		return -EPROTO;
	memcpy(out, c->p + c->pos, n);
	c->pos += (uint32_t)n;
	return 0;
}

int app_get_u8(struct app_cursor *c, uint8_t *v)
{
	return app_get(c, v, sizeof(*v));
}

int app_get_u32(struct app_cursor *c, uint32_t *v)
{
	return app_get(c, v, sizeof(*v));
}

int app_get_u64(struct app_cursor *c, uint64_t *v)
{
	return app_get(c, v, sizeof(*v));
}

bool app_identifier_ok(const char *s)
{
	if (!*s || (*s >= '0' && *s <= '9'))
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

/* A string into out[APP_STR_MAX + 1], checked to be an identifier. */
static int get_ident(struct app_cursor *c, char *out)
{
	uint8_t n;
	if (app_get_u8(c, &n) < 0 || n == 0 || app_get(c, out, n) < 0)
		return -EPROTO;
	out[n] = '\0';
	return app_identifier_ok(out) ? 0 : -EPROTO;
}

int app_get_event(struct app_cursor *c, struct app_event_in *e)
{
	uint32_t ll;
	uint8_t nf;
	if (app_get_u32(c, &e->index) < 0 || e->index >= APP_MAX_EVENTS ||
	    app_get_u32(c, &ll) < 0 || ll > RT_LOGLEVEL_DEBUG ||
	    get_ident(c, e->provider) < 0 || get_ident(c, e->name) < 0 ||
	    app_get_u8(c, &nf) < 0 || nf > RT_MAX_FIELDS)
		return -EPROTO;
	e->loglevel = (int32_t)ll;
	e->nr_fields = nf;
	for (uint32_t i = 0; i < nf; i++) {
		if (app_get_u8(c, &e->fields[i].type) < 0 ||
		    e->fields[i].type < RT_TYPE_S8 || e->fields[i].type > RT_TYPE_BYTES ||
		    get_ident(c, e->fields[i].name) < 0)
			return -EPROTO;
	}
	return 0;
}
