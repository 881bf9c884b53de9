/*
 * app_proto.c - the encoders and bounds-checked decoders of the app
 * messages described byte by byte in app_proto.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../common/array.h"
#include "app_proto.h"
#include "proto.h"

/* Offsets inside the messages (app_proto.h). */
#define REGISTER_PROCNAME_OFF 16
#define ENABLE_N_OFF 8
#define ENABLE_F_OFF 12

_Static_assert(REGISTER_PROCNAME_OFF + RTP_APP_PROCNAME_LEN == RTP_APP_REGISTER_FIXED,
	       "REGISTER: the event list follows procname");
_Static_assert(4 + 4 + 1 + 1 + 1 + 1 + 1 == RTP_APP_EVENT_MIN_SIZE, "smallest event record");

/* --- writing ---------------------------------------------------------- */

static void buf_fail(struct rtp_app_buf *b, int err)
{
	if (!b->err)
		b->err = err;
}

static void put(struct rtp_app_buf *b, const void *p, size_t n)
{
	if (b->err)
		return;
	if (n > RTP_MAX_PAYLOAD - b->len) {
		b->err = -E2BIG;
		return;
	}
	if (RT_ARRAY_GROW(b->data, b->cap, (size_t)b->len + n, 256) < 0) {
		b->err = -ENOMEM;
		return;
	}
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += (uint32_t)n;
}

static void put_u8(struct rtp_app_buf *b, uint8_t v)
{
	put(b, &v, sizeof(v));
}

static void put_u16(struct rtp_app_buf *b, uint16_t v)
{
	put(b, &v, sizeof(v));
}

static void put_u32(struct rtp_app_buf *b, uint32_t v)
{
	put(b, &v, sizeof(v));
}

static void put_u64(struct rtp_app_buf *b, uint64_t v)
{
	put(b, &v, sizeof(v));
}

/* A string of 1..RTP_APP_STR_MAX bytes. */
static void put_str(struct rtp_app_buf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > RTP_APP_STR_MAX) {
		buf_fail(b, -EINVAL);
		return;
	}
	put_u8(b, (uint8_t)n);
	put(b, s, n);
}

void rtp_app_buf_free(struct rtp_app_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

/* --- reading ---------------------------------------------------------- */

static int get(struct rtp_app_cursor *c, void *out, size_t n)
{
	if (c->pos > c->len || n > c->len - c->pos)
		return -EPROTO;
	memcpy(out, c->p + c->pos, n);
	c->pos += (uint32_t)n;
	return 0;
}

static int get_u8(struct rtp_app_cursor *c, uint8_t *v)
{
	return get(c, v, sizeof(*v));
}

static int get_u32(struct rtp_app_cursor *c, uint32_t *v)
{
	return get(c, v, sizeof(*v));
}

static int get_u64(struct rtp_app_cursor *c, uint64_t *v)
{
	return get(c, v, sizeof(*v));
}

static uint32_t left(const struct rtp_app_cursor *c)
{
	return c->pos > c->len ? 0 : c->len - c->pos;
}

int rtp_app_end(const struct rtp_app_cursor *c)
{
	return c->pos == c->len ? 0 : -EPROTO;
}

bool rtp_app_identifier_ok(const char *s)
{
	if (!*s || (*s >= '0' && *s <= '9'))
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

bool rtp_app_format_ok(const char *s)
{
	size_t n = 0;
	for (; s[n]; n++)
		if (((unsigned char)s[n] < 0x20 && s[n] != '\t' && s[n] != '\n') || s[n] == 0x7f)
			return false;
	return n >= 1 && n <= RT_PRINTF_FORMAT_MAX;
}

/* A string into out[RTP_APP_STR_MAX + 1], checked to be an identifier
 * (format: an rt_printf format instead). */
static int get_name(struct rtp_app_cursor *c, char *out, bool format)
{
	uint8_t n;
	if (get_u8(c, &n) < 0 || n == 0 || get(c, out, n) < 0)
		return -EPROTO;
	out[n] = '\0';
	if (format)
		return memchr(out, '\0', n) == NULL && rtp_app_format_ok(out) ? 0 : -EPROTO;
	return rtp_app_identifier_ok(out) ? 0 : -EPROTO;
}

static int get_ident(struct rtp_app_cursor *c, char *out)
{
	return get_name(c, out, false);
}

/* --- event lists ------------------------------------------------------ */

static bool field_type_ok(uint32_t t)
{
	return t >= RT_TYPE_S8 && t <= RT_TYPE_FORMAT;
}

void rtp_app_event_list_encode(struct rtp_app_buf *b, uint32_t n)
{
	if (n > RTP_APP_MAX_EVENTS)
		buf_fail(b, -EINVAL);
	put_u32(b, n);
}

void rtp_app_event_encode(struct rtp_app_buf *b, const struct rtp_app_event_out *e)
{
	if (e->nr_fields > RT_MAX_FIELDS) {
		buf_fail(b, -EINVAL);
		return;
	}
	put_u32(b, e->index);
	put_u32(b, (uint32_t)e->loglevel);
	put_str(b, e->provider);
	put_str(b, e->name);
	put_u8(b, (uint8_t)e->nr_fields);
	for (uint32_t i = 0; i < e->nr_fields; i++) {
		put_u8(b, (uint8_t)e->fields[i].type);
		put_str(b, e->fields[i].name);
	}
}

int rtp_app_event_list_decode(struct rtp_app_cursor *c, uint32_t *n)
{
	if (get_u32(c, n) < 0 || *n > left(c) / RTP_APP_EVENT_MIN_SIZE)
		return -EPROTO;
	return *n > RTP_APP_MAX_EVENTS ? -E2BIG : 0;
}

int rtp_app_event_decode(struct rtp_app_cursor *c, struct rtp_app_event_in *e)
{
	uint32_t ll;
	uint8_t nf;
	if (get_u32(c, &e->index) < 0 || e->index >= RTP_APP_MAX_EVENTS ||
	    get_u32(c, &ll) < 0 || ll > RT_LOGLEVEL_DEBUG ||
	    get_ident(c, e->provider) < 0 || get_ident(c, e->name) < 0 ||
	    get_u8(c, &nf) < 0 || nf > RT_MAX_FIELDS)
		return -EPROTO;
	e->loglevel = (int32_t)ll;
	e->nr_fields = nf;
	for (uint32_t i = 0; i < nf; i++) {
		/* A format (rt_printf) is the first field only. */
		if (get_u8(c, &e->fields[i].type) < 0 || !field_type_ok(e->fields[i].type) ||
		    (e->fields[i].type == RT_TYPE_FORMAT && i) ||
		    get_name(c, e->fields[i].name, e->fields[i].type == RT_TYPE_FORMAT) < 0)
			return -EPROTO;
	}
	return 0;
}

/* --- REGISTER, REGISTER_REPLY ----------------------------------------- */

void rtp_app_register_encode(struct rtp_app_buf *b, const struct rtp_app_register *r)
{
	char pn[RTP_APP_PROCNAME_LEN] = { 0 };
	memcpy(pn, r->procname, strnlen(r->procname, RTP_APP_PROCNAME_LEN - 1));
	put_u32(b, r->pid);
	put_u32(b, r->uid);
	put_u32(b, r->abi);
	put_u8(b, r->ptr_size);
	put_u8(b, r->clocks);
	put_u16(b, 0);
	put(b, pn, sizeof(pn));
}

int rtp_app_register_decode(struct rtp_app_cursor *c, struct rtp_app_register *r)
{
	uint16_t reserved;
	if (get_u32(c, &r->pid) < 0 || get_u32(c, &r->uid) < 0 || get_u32(c, &r->abi) < 0 ||
	    get_u8(c, &r->ptr_size) < 0 || get_u8(c, &r->clocks) < 0 ||
	    get(c, &reserved, sizeof(reserved)) < 0 ||
	    get(c, r->procname, sizeof(r->procname)) < 0 ||
	    memchr(r->procname, '\0', sizeof(r->procname)) == NULL)
		return -EPROTO;
	return 0;
}

void rtp_app_register_reply_encode(uint8_t out[static RTP_APP_REGISTER_REPLY_SIZE],
				   enum rtp_app_clock clock)
{
	uint32_t v[2] = { (uint32_t)clock, 0 };
	memcpy(out, v, sizeof(v));
}

int rtp_app_register_reply_decode(struct rtp_app_cursor *c, enum rtp_app_clock *clock)
{
	uint32_t clk, reserved;
	if (get_u32(c, &clk) < 0 || get_u32(c, &reserved) < 0 || rtp_app_end(c) < 0 ||
	    clk > RTP_APP_CLOCK_MONOTONIC)
		return -EPROTO;
	*clock = (enum rtp_app_clock)clk;
	return 0;
}

/* --- CHANNEL, ENABLE, DISABLE_SESSION --------------------------------- */

void rtp_app_channel_encode(struct rtp_app_buf *b, const struct rtp_app_channel *m)
{
	if (m->key == 0 || m->nr_contexts > RTP_APP_MAX_CONTEXTS) {
		buf_fail(b, -EINVAL);
		return;
	}
	put_u64(b, m->key);
	put_u64(b, m->session_id);
	put_u32(b, m->channel_id);
	put_u32(b, m->nr_contexts);
	put_u64(b, m->map_size);
	put(b, m->uuid, sizeof(m->uuid));
	put_u32(b, m->account);
	put(b, m->contexts, m->nr_contexts);
}

int rtp_app_channel_decode(struct rtp_app_cursor *c, struct rtp_app_channel *m)
{
	if (get_u64(c, &m->key) < 0 || get_u64(c, &m->session_id) < 0 ||
	    get_u32(c, &m->channel_id) < 0 || get_u32(c, &m->nr_contexts) < 0 ||
	    get_u64(c, &m->map_size) < 0 || get(c, m->uuid, sizeof(m->uuid)) < 0 ||
	    get_u32(c, &m->account) < 0 || m->key == 0 || m->nr_contexts > RTP_APP_MAX_CONTEXTS ||
	    get(c, m->contexts, m->nr_contexts) < 0 || rtp_app_end(c) < 0)
		return -EPROTO;
	return 0;
}

void rtp_app_enable_begin(struct rtp_app_buf *b, uint64_t key)
{
	if (b->len != 0)
		buf_fail(b, -EINVAL);
	put_u64(b, key);
	put_u32(b, 0);		/* N, written by rtp_app_enable_finish */
	put_u32(b, 0);
}

void rtp_app_enable_add(struct rtp_app_buf *b, uint32_t index, uint32_t id)
{
	if (index >= RTP_APP_MAX_EVENTS || id > RTP_APP_EVENT_ID_MAX ||
	    b->len >= RTP_APP_ENABLE_FIXED +
			      (uint64_t)RTP_APP_MAX_EVENTS * RTP_APP_ENABLE_ENTRY_SIZE) {
		buf_fail(b, -EINVAL);
		return;
	}
	put_u32(b, index);
	put_u32(b, id);
}

void rtp_app_enable_finish(struct rtp_app_buf *b)
{
	rtp_app_enable_finish_filtered(b, NULL, 0, NULL, 0);
}

/* Whether use a comes before use b: ENABLE's uses are strictly sorted
 * by (entry, filter), so that none repeats and an entry has at most
 * RTP_APP_ENABLE_MAX_FILTERS filters. */
static bool use_before(struct rtp_app_enable_use a, struct rtp_app_enable_use b)
{
	return a.entry < b.entry || (a.entry == b.entry && a.filter < b.filter);
}

void rtp_app_enable_finish_filtered(struct rtp_app_buf *b, const struct rtp_app_filter *filters,
				    uint32_t nr_filters, const struct rtp_app_enable_use *uses,
				    uint32_t nr_uses)
{
	if (b->err)
		return;
	uint32_t n = (b->len - RTP_APP_ENABLE_FIXED) / RTP_APP_ENABLE_ENTRY_SIZE;
	if (nr_filters > RTP_APP_ENABLE_MAX_FILTERS || (!nr_filters && nr_uses)) {
		buf_fail(b, -EINVAL);
		return;
	}
	memcpy(b->data + ENABLE_N_OFF, &n, sizeof(n));
	memcpy(b->data + ENABLE_F_OFF, &nr_filters, sizeof(nr_filters));
	if (!nr_filters)
		return;
	for (uint32_t i = 0; i < nr_filters; i++) {
		if (filters[i].len == 0 || filters[i].len > RTP_APP_FILTER_MAX) {
			buf_fail(b, -EINVAL);
			return;
		}
		put_u32(b, filters[i].len);
		put(b, filters[i].p, filters[i].len);
	}
	put_u32(b, nr_uses);
	for (uint32_t i = 0; i < nr_uses; i++) {
		if (uses[i].entry >= n || uses[i].filter >= nr_filters ||
		    (i && !use_before(uses[i - 1], uses[i]))) {
			buf_fail(b, -EINVAL);
			return;
		}
		put_u32(b, uses[i].entry);
		put_u32(b, uses[i].filter);
	}
}

int rtp_app_enable_decode(struct rtp_app_cursor *c, struct rtp_app_enable *m)
{
	if (get_u64(c, &m->key) < 0 || get_u32(c, &m->n) < 0 ||
	    get_u32(c, &m->nr_filters) < 0 || m->n > RTP_APP_MAX_EVENTS ||
	    m->nr_filters > RTP_APP_ENABLE_MAX_FILTERS ||
	    (uint64_t)m->n * RTP_APP_ENABLE_ENTRY_SIZE > left(c))
		return -EPROTO;
	m->entries = c->p + c->pos;
	for (uint32_t i = 0; i < m->n; i++) {
		uint32_t index, id;
		rtp_app_enable_entry(m, i, &index, &id);
		if (index >= RTP_APP_MAX_EVENTS || id > RTP_APP_EVENT_ID_MAX)
			return -EPROTO;
	}
	c->pos += m->n * RTP_APP_ENABLE_ENTRY_SIZE;
	m->nr_uses = 0;
	m->uses = NULL;
	if (!m->nr_filters)
		return rtp_app_end(c);
	for (uint32_t i = 0; i < m->nr_filters; i++) {
		uint32_t len;
		if (get_u32(c, &len) < 0 || len == 0 || len > RTP_APP_FILTER_MAX || len > left(c))
			return -EPROTO;
		m->filters[i] = (struct rtp_app_filter){ c->p + c->pos, len };
		c->pos += len;
	}
	if (get_u32(c, &m->nr_uses) < 0 ||
	    (uint64_t)m->nr_uses * RTP_APP_ENABLE_USE_SIZE != left(c))
		return -EPROTO;
	m->uses = c->p + c->pos;
	for (uint32_t i = 0; i < m->nr_uses; i++) {
		struct rtp_app_enable_use u = rtp_app_enable_use_at(m, i);
		if (u.entry >= m->n || u.filter >= m->nr_filters ||
		    (i && !use_before(rtp_app_enable_use_at(m, i - 1), u)))
			return -EPROTO;
	}
	c->pos = c->len;
	return 0;
}

struct rtp_app_enable_use rtp_app_enable_use_at(const struct rtp_app_enable *m, uint32_t i)
{
	struct rtp_app_enable_use u;
	const char *e = m->uses + (size_t)i * RTP_APP_ENABLE_USE_SIZE;
	memcpy(&u.entry, e, sizeof(u.entry));
	memcpy(&u.filter, e + 4, sizeof(u.filter));
	return u;
}

void rtp_app_enable_entry(const struct rtp_app_enable *m, uint32_t i, uint32_t *index,
			  uint32_t *id)
{
	const char *e = m->entries + (size_t)i * RTP_APP_ENABLE_ENTRY_SIZE;
	memcpy(index, e, sizeof(*index));
	memcpy(id, e + 4, sizeof(*id));
}

void rtp_app_disable_session_encode(uint8_t out[static RTP_APP_DISABLE_SESSION_SIZE],
				    uint64_t session_id)
{
	memcpy(out, &session_id, sizeof(session_id));
}

int rtp_app_disable_session_decode(struct rtp_app_cursor *c, uint64_t *session_id)
{
	return get_u64(c, session_id) < 0 || rtp_app_end(c) < 0 ? -EPROTO : 0;
}

/* --- TRIGGERS ---------------------------------------------------------- */

void rtp_app_triggers_encode(struct rtp_app_buf *b, uint32_t n)
{
	if (n > RTP_APP_MAX_TRIGGERS || b->len != 0)
		buf_fail(b, -EINVAL);
	put_u32(b, n);
	put_u32(b, 0);
}

void rtp_app_trigger_encode(struct rtp_app_buf *b, const struct rtp_app_trigger_out *t)
{
	if (t->token == 0 || t->nr_events > RTP_APP_MAX_EVENTS ||
	    t->filter_len > RTP_APP_FILTER_MAX || (t->filter_len && !t->filter) ||
	    t->nr_captures > RTP_APP_MAX_CAPTURES) {
		buf_fail(b, -EINVAL);
		return;
	}
	put_u64(b, t->token);
	put_u32(b, t->nr_events);
	put_u32(b, t->filter_len);
	put_u32(b, t->nr_captures);
	put_u32(b, 0);
	for (uint32_t i = 0; i < t->nr_events; i++) {
		if (t->events[i] >= RTP_APP_MAX_EVENTS)
			buf_fail(b, -EINVAL);
		put_u32(b, t->events[i]);
	}
	put(b, t->filter, t->filter_len);
	for (uint32_t i = 0; i < t->nr_captures; i++)
		put_str(b, t->captures[i]);
}

int rtp_app_triggers_decode(struct rtp_app_cursor *c, uint32_t *n)
{
	uint32_t reserved;
	if (get_u32(c, n) < 0 || get_u32(c, &reserved) < 0 || *n > RTP_APP_MAX_TRIGGERS ||
	    (uint64_t)*n * RTP_APP_TRIGGER_FIXED > left(c))
		return -EPROTO;
	return 0;
}

int rtp_app_trigger_decode(struct rtp_app_cursor *c, struct rtp_app_trigger_in *t)
{
	uint32_t reserved;
	if (get_u64(c, &t->token) < 0 || get_u32(c, &t->nr_events) < 0 ||
	    get_u32(c, &t->filter_len) < 0 || get_u32(c, &t->nr_captures) < 0 ||
	    get_u32(c, &reserved) < 0 || t->token == 0 ||
	    t->nr_events > RTP_APP_MAX_EVENTS || t->filter_len > RTP_APP_FILTER_MAX ||
	    t->nr_captures > RTP_APP_MAX_CAPTURES ||
	    (uint64_t)t->nr_events * 4 + t->filter_len > left(c))
		return -EPROTO;
	t->events = c->p + c->pos;
	for (uint32_t i = 0; i < t->nr_events; i++)
		if (rtp_app_trigger_event(t, i) >= RTP_APP_MAX_EVENTS)
			return -EPROTO;
	c->pos += t->nr_events * 4;
	t->filter = t->filter_len ? c->p + c->pos : NULL;
	c->pos += t->filter_len;
	for (uint32_t i = 0; i < t->nr_captures; i++) {
		uint8_t n;
		if (get_u8(c, &n) < 0 || n == 0 || get(c, t->captures[i], n) < 0)
			return -EPROTO;
		t->captures[i][n] = '\0';
	}
	return 0;
}

uint32_t rtp_app_trigger_event(const struct rtp_app_trigger_in *t, uint32_t i)
{
	uint32_t v;
	memcpy(&v, t->events + (size_t)i * 4, sizeof(v));
	return v;
}

/* --- SYNC, SYNC_REPLY, STATEDUMP ------------------------------------- */

void rtp_app_sync_encode(uint8_t out[static RTP_APP_SYNC_SIZE], uint64_t cookie)
{
	memcpy(out, &cookie, sizeof(cookie));
}

int rtp_app_sync_decode(struct rtp_app_cursor *c, uint64_t *cookie)
{
	return get_u64(c, cookie) < 0 || rtp_app_end(c) < 0 ? -EPROTO : 0;
}
