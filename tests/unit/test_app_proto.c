/*
 * test_app_proto.c - the app messages of src/proto/app_proto.h: every
 * message encoded and decoded back to the same values; its bytes where
 * app_proto.h says they are (the offsets below are the header's, written
 * out); every truncation of every message, and every message with a byte
 * too many, refused (-EPROTO) without reading past the payload (each
 * decode reads a heap copy of exactly the bytes given, so a sanitizer
 * build catches an over-read); values out of range refused by the decoder
 * and by the encoder.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto/app_proto.h"
#include "proto/proto.h"
#include "unit.h"

static struct rtp_app_event_in ev_in;	/* 8 KiB: not on the stack */

static uint32_t u32_at(const void *p, size_t off)
{
	uint32_t v;
	memcpy(&v, (const char *)p + off, sizeof(v));
	return v;
}

static uint64_t u64_at(const void *p, size_t off)
{
	uint64_t v;
	memcpy(&v, (const char *)p + off, sizeof(v));
	return v;
}

static void set_u32(void *p, size_t off, uint32_t v)
{
	memcpy((char *)p + off, &v, sizeof(v));
}

static struct rtp_app_trigger_in trig_in;

/* An event list to its end, as the daemon reads one. */
static int decode_list(struct rtp_app_cursor *c)
{
	uint32_t n;
	int r = rtp_app_event_list_decode(c, &n);
	if (r == -E2BIG)
		return r;
	for (uint32_t i = 0; r == 0 && i < n; i++)
		r = rtp_app_event_decode(c, &ev_in);
	return r < 0 ? r : rtp_app_end(c);
}

/* The whole message of `type` in p[0..len), read from a heap copy of
 * exactly len bytes. */
static int decode(uint16_t type, const void *p, uint32_t len)
{
	char *copy = malloc(len ? len : 1);
	if (!copy)
		abort();
	memcpy(copy, p, len);
	struct rtp_app_cursor c = rtp_app_cursor(copy, len);
	struct rtp_app_register reg;
	struct rtp_app_channel ch;
	struct rtp_app_enable en;
	enum rtp_app_clock clk;
	uint64_t v;
	int r;
	switch (type) {
	case RTP_APP_REGISTER:
		r = rtp_app_register_decode(&c, &reg);
		if (r == 0)
			r = decode_list(&c);
		break;
	case RTP_APP_EVENTS:
		r = decode_list(&c);
		break;
	case RTP_APP_REGISTER_REPLY:
		r = rtp_app_register_reply_decode(&c, &clk);
		break;
	case RTP_APP_CHANNEL:
		r = rtp_app_channel_decode(&c, &ch);
		break;
	case RTP_APP_ENABLE:
		r = rtp_app_enable_decode(&c, &en);
		break;
	case RTP_APP_DISABLE_SESSION:
		r = rtp_app_disable_session_decode(&c, &v);
		break;
	case RTP_APP_SYNC:
	case RTP_APP_SYNC_REPLY:
		r = rtp_app_sync_decode(&c, &v);
		break;
	case RTP_APP_TRIGGERS: {
		uint32_t n;
		r = rtp_app_triggers_decode(&c, &n);
		for (uint32_t i = 0; r == 0 && i < n; i++)
			r = rtp_app_trigger_decode(&c, &trig_in);
		if (r == 0)
			r = rtp_app_end(&c);
		break;
	}
	default:	/* GOODBYE, EVENTS_REPLY */
		r = rtp_app_end(&c);
		break;
	}
	free(copy);
	return r;
}

/* The message decodes whole; every shorter prefix and the message with
 * one more byte do not. */
static void check_truncations(const char *what, uint16_t type, const void *p, uint32_t len)
{
	unit_case = what;
	CHECK(decode(type, p, len) == 0, "the whole message (%u bytes) is refused", len);
	unsigned accepted = 0;
	for (uint32_t l = 0; l < len; l++)
		if (decode(type, p, l) != -EPROTO)
			accepted++;
	CHECK(accepted == 0, "%u of %u truncations not refused with -EPROTO", accepted, len);
	char *longer = malloc(len + 1);
	memcpy(longer, p, len);
	longer[len] = 0;
	CHECK(decode(type, longer, len + 1) == -EPROTO, "a byte too many is accepted");
	free(longer);
}

static const struct rt_field_desc fields_a[] = {
	{ "count", RT_TYPE_U32 }, { "name", RT_TYPE_STRING }, { "blob", RT_TYPE_BYTES },
};

static const struct rtp_app_event_out events[] = {
	{ .index = 0, .loglevel = RT_LOGLEVEL_INFO, .provider = "prov", .name = "ev_a",
	  .nr_fields = 3, .fields = fields_a },
	{ .index = RTP_APP_MAX_EVENTS - 1, .loglevel = RT_LOGLEVEL_DEBUG, .provider = "p2",
	  .name = "x", .nr_fields = 0, .fields = NULL },
	{ .index = 7, .loglevel = 0, .provider = "_Z9", .name = "ev_s8", .nr_fields = 1,
	  .fields = (const struct rt_field_desc[]){ { "v", RT_TYPE_S8 } } },
};
#define NR_EVENTS (sizeof(events) / sizeof(events[0]))

static void check_event_equal(const struct rtp_app_event_in *in,
			      const struct rtp_app_event_out *out)
{
	CHECK_EQ(in->index, out->index);
	CHECK_EQ(in->loglevel, out->loglevel);
	CHECK(strcmp(in->provider, out->provider) == 0, "provider %s", in->provider);
	CHECK(strcmp(in->name, out->name) == 0, "name %s", in->name);
	CHECK_EQ(in->nr_fields, out->nr_fields);
	for (uint32_t f = 0; f < in->nr_fields && f < out->nr_fields; f++) {
		CHECK_EQ(in->fields[f].type, out->fields[f].type);
		CHECK(strcmp(in->fields[f].name, out->fields[f].name) == 0, "field %s",
		      in->fields[f].name);
	}
}

static void encode_list(struct rtp_app_buf *b)
{
	rtp_app_event_list_encode(b, NR_EVENTS);
	for (size_t i = 0; i < NR_EVENTS; i++)
		rtp_app_event_encode(b, &events[i]);
}

static void test_register(void)
{
	unit_case = "REGISTER round trip";
	struct rtp_app_register reg = { .pid = 4242, .uid = 1000, .abi = 77, .ptr_size = 8,
					.clocks = RTP_APP_CAN_TSC | RTP_APP_CAN_MONOTONIC };
	/* 16 characters: encoding keeps 15 and a NUL. */
	memcpy(reg.procname, "abcdefghijklmnop", RTP_APP_PROCNAME_LEN);
	struct rtp_app_buf b = { 0 };
	rtp_app_register_encode(&b, &reg);
	CHECK_EQ(b.len, RTP_APP_REGISTER_FIXED);
	encode_list(&b);
	CHECK_EQ(b.err, 0);

	/* Layout: 0 pid, 4 uid, 8 abi, 12 ptr size, 13 clocks, 14 reserved,
	 * 16 procname, 32 the event list (count, then records: 0 index,
	 * 4 loglevel, 8 provider as length and bytes, ...). */
	const char *p = b.data;
	CHECK_EQ(u32_at(p, 0), 4242);
	CHECK_EQ(u32_at(p, 4), 1000);
	CHECK_EQ(u32_at(p, 8), 77);
	CHECK_EQ((uint8_t)p[12], 8);
	CHECK_EQ((uint8_t)p[13], 3);
	CHECK_EQ((uint8_t)p[14] | (uint8_t)p[15], 0);
	CHECK(memcmp(p + 16, "abcdefghijklmno\0", 16) == 0, "procname bytes");
	CHECK_EQ(u32_at(p, 32), NR_EVENTS);
	CHECK_EQ(u32_at(p, 36), 0);			/* index */
	CHECK_EQ(u32_at(p, 40), RT_LOGLEVEL_INFO);	/* loglevel */
	CHECK_EQ((uint8_t)p[44], 4);			/* strlen("prov") */
	CHECK(memcmp(p + 45, "prov", 4) == 0, "provider bytes");
	CHECK_EQ((uint8_t)p[49], 4);
	CHECK(memcmp(p + 50, "ev_a", 4) == 0, "name bytes");
	CHECK_EQ((uint8_t)p[54], 3);			/* nr_fields */
	CHECK_EQ((uint8_t)p[55], RT_TYPE_U32);		/* field 0: type, name */
	CHECK_EQ((uint8_t)p[56], 5);
	CHECK(memcmp(p + 57, "count", 5) == 0, "field name bytes");

	struct rtp_app_cursor c = rtp_app_cursor(b.data, b.len);
	struct rtp_app_register got;
	CHECK(rtp_app_register_decode(&c, &got) == 0, "decode");
	CHECK_EQ(got.pid, 4242);
	CHECK_EQ(got.uid, 1000);
	CHECK_EQ(got.abi, 77);
	CHECK_EQ(got.ptr_size, 8);
	CHECK_EQ(got.clocks, 3);
	CHECK(strcmp(got.procname, "abcdefghijklmno") == 0, "procname %.16s", got.procname);
	uint32_t n;
	CHECK(rtp_app_event_list_decode(&c, &n) == 0, "list");
	CHECK_EQ(n, NR_EVENTS);
	for (uint32_t i = 0; i < n && i < NR_EVENTS; i++) {
		CHECK(rtp_app_event_decode(&c, &ev_in) == 0, "event %u", i);
		check_event_equal(&ev_in, &events[i]);
	}
	CHECK(rtp_app_end(&c) == 0, "end");
	check_truncations("REGISTER truncations", RTP_APP_REGISTER, b.data, b.len);

	unit_case = "REGISTER procname without a NUL";
	char bad[RTP_APP_REGISTER_FIXED + 4];
	memcpy(bad, b.data, RTP_APP_REGISTER_FIXED);
	memset(bad + 16, 'a', 16);
	set_u32(bad, 32, 0);
	CHECK(decode(RTP_APP_REGISTER, bad, sizeof(bad)) == -EPROTO, "accepted");
	memset(bad + 16, 0, 16);
	CHECK(decode(RTP_APP_REGISTER, bad, sizeof(bad)) == 0, "empty list refused");
	rtp_app_buf_free(&b);
}

/* One event record with a damaged byte: each must be refused. */
static void test_bad_events(void)
{
	unit_case = "bad event records";
	struct rtp_app_buf b = { 0 };
	rtp_app_event_list_encode(&b, 1);
	rtp_app_event_encode(&b, &events[0]);
	CHECK_EQ(b.err, 0);
	CHECK(decode(RTP_APP_EVENTS, b.data, b.len) == 0, "the good one");
	struct {
		const char *what;
		uint32_t off;
		uint8_t byte;
	} damage[] = {
		{ "index past the limit", 4 + 2, 0x01 },	/* index 65536 */
		{ "loglevel 15", 8, 15 },
		{ "empty provider", 12, 0 },
		{ "provider not an identifier", 13, '-' },
		{ "provider starting with a digit", 13, '1' },
		{ "name not an identifier", 18, ' ' },
		{ "33 fields", 22, 33 },
		{ "field type 0", 23, 0 },
		{ "field type past the last", 23, RT_TYPE_FORMAT + 1 },
		{ "field name empty", 24, 0 },
		{ "field name not an identifier", 25, '.' },
	};
	for (size_t i = 0; i < sizeof(damage) / sizeof(damage[0]); i++) {
		char *copy = malloc(b.len);
		memcpy(copy, b.data, b.len);
		copy[damage[i].off] = (char)damage[i].byte;
		CHECK(decode(RTP_APP_EVENTS, copy, b.len) == -EPROTO, "%s accepted",
		      damage[i].what);
		free(copy);
	}
	/* A count that the bytes left cannot hold. */
	set_u32(b.data, 0, 2);
	CHECK(decode(RTP_APP_EVENTS, b.data, b.len) == -EPROTO, "count 2 for 1 record");
	rtp_app_buf_free(&b);

	/* The count alone is refused when the bytes left cannot hold that
	 * many records (RTP_APP_EVENT_MIN_SIZE each), before any record is
	 * read: the daemon sizes its table by it. */
	unit_case = "event count against the bytes left";
	struct rtp_app_event_out smallest = { .provider = "p", .name = "n" };
	rtp_app_event_list_encode(&b, 1);
	rtp_app_event_encode(&b, &smallest);
	CHECK(b.err == 0 && b.len == 4 + RTP_APP_EVENT_MIN_SIZE, "smallest record: %u bytes",
	      b.len - 4);
	uint32_t n;
	struct rtp_app_cursor c = rtp_app_cursor(b.data, b.len);
	CHECK(rtp_app_event_list_decode(&c, &n) == 0 && n == 1, "count 1");
	set_u32(b.data, 0, 2);
	c = rtp_app_cursor(b.data, b.len);
	CHECK(rtp_app_event_list_decode(&c, &n) == -EPROTO, "count 2 with 13 bytes left");
	rtp_app_buf_free(&b);

	/* More records than RTP_APP_MAX_EVENTS: -E2BIG with the count, so
	 * the daemon can say how many were offered. */
	unit_case = "event count past the limit";
	rtp_app_event_list_encode(&b, 0);
	for (uint32_t i = 0; i <= RTP_APP_MAX_EVENTS; i++) {
		smallest.index = i % RTP_APP_MAX_EVENTS;
		rtp_app_event_encode(&b, &smallest);
	}
	CHECK_EQ(b.err, 0);
	set_u32(b.data, 0, RTP_APP_MAX_EVENTS + 1);
	c = rtp_app_cursor(b.data, b.len);
	CHECK(rtp_app_event_list_decode(&c, &n) == -E2BIG && n == RTP_APP_MAX_EVENTS + 1,
	      "count 65537");
	set_u32(b.data, 0, RTP_APP_MAX_EVENTS + 2);
	c = rtp_app_cursor(b.data, b.len);
	CHECK(rtp_app_event_list_decode(&c, &n) == -EPROTO, "count past the bytes");
	rtp_app_buf_free(&b);

	/* What does not fit the layout is not written. */
	unit_case = "event encoder refusals";
	const struct rtp_app_event_out bad[] = {
		{ .provider = "", .name = "n" },
		{ .provider = NULL, .name = "n" },
		{ .provider = "p", .name = "" },
		{ .provider = "p", .name = "n", .nr_fields = RT_MAX_FIELDS + 1, .fields = fields_a },
		{ .provider = "p", .name = "n", .nr_fields = 1,
		  .fields = (const struct rt_field_desc[]){ { "", RT_TYPE_U8 } } },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct rtp_app_buf e = { 0 };
		rtp_app_event_encode(&e, &bad[i]);
		CHECK(e.err == -EINVAL, "bad event %zu encoded (err %d)", i, e.err);
		rtp_app_buf_free(&e);
	}
	/* Values are written as given; the decoder refuses them. */
	unit_case = "event values the decoder refuses";
	const struct rtp_app_event_out refused[] = {
		{ .index = RTP_APP_MAX_EVENTS, .provider = "p", .name = "n" },
		{ .loglevel = -1, .provider = "p", .name = "n" },
		{ .loglevel = RT_LOGLEVEL_DEBUG + 1, .provider = "p", .name = "n" },
		{ .provider = "p", .name = "9n" },
		{ .provider = "p", .name = "n", .nr_fields = 1,
		  .fields = (const struct rt_field_desc[]){ { "v", 0 } } },
		{ .provider = "p", .name = "n", .nr_fields = 1,
		  .fields = (const struct rt_field_desc[]){ { "v w", RT_TYPE_U8 } } },
		/* rt_printf's format: the first field only, no control byte
		 * but tab and newline. */
		{ .provider = "p", .name = "n", .nr_fields = 2,
		  .fields = (const struct rt_field_desc[]){ { "v", RT_TYPE_U8 },
							    { "x=%d", RT_TYPE_FORMAT } } },
		{ .provider = "p", .name = "n", .nr_fields = 1,
		  .fields = (const struct rt_field_desc[]){ { "a\x01b", RT_TYPE_FORMAT } } },
		{ .provider = "p", .name = "n", .nr_fields = 1,
		  .fields = (const struct rt_field_desc[]){ { "a\x7f", RT_TYPE_FORMAT } } },
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		struct rtp_app_buf e = { 0 };
		rtp_app_event_list_encode(&e, 1);
		rtp_app_event_encode(&e, &refused[i]);
		CHECK(e.err == 0, "event %zu not encoded (err %d)", i, e.err);
		CHECK(decode(RTP_APP_EVENTS, e.data, e.len) == -EPROTO, "event %zu accepted", i);
		rtp_app_buf_free(&e);
	}
	/* A format is any text (tab, newline, quotes, UTF-8) as the first
	 * field. */
	struct rtp_app_event_out fmt = {
		.provider = "p", .name = "n", .nr_fields = 2,
		.fields = (const struct rt_field_desc[]){
			{ "x=%d \"q\"\t\n\xc3\xa9", RT_TYPE_FORMAT }, { "arg1", RT_TYPE_S32 } }
	};
	struct rtp_app_buf fb = { 0 };
	rtp_app_event_list_encode(&fb, 1);
	rtp_app_event_encode(&fb, &fmt);
	CHECK(fb.err == 0 && decode(RTP_APP_EVENTS, fb.data, fb.len) == 0, "a format refused");
	rtp_app_buf_free(&fb);
	char longname[RTP_APP_STR_MAX + 2];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	struct rtp_app_event_out lng = { .provider = "p", .name = longname };
	struct rtp_app_buf e = { 0 };
	rtp_app_event_encode(&e, &lng);
	CHECK(e.err == -EINVAL, "a 256-byte name encoded");
	rtp_app_buf_free(&e);
	longname[RTP_APP_STR_MAX] = '\0';
	rtp_app_event_list_encode(&e, 1);
	rtp_app_event_encode(&e, &lng);
	CHECK(e.err == 0 && decode(RTP_APP_EVENTS, e.data, e.len) == 0,
	      "a 255-byte name refused");
	rtp_app_buf_free(&e);
	rtp_app_event_list_encode(&e, RTP_APP_MAX_EVENTS + 1);
	CHECK(e.err == -EINVAL, "count past the limit encoded");
	rtp_app_buf_free(&e);
}

static void test_events(void)
{
	unit_case = "EVENTS round trip";
	struct rtp_app_buf b = { 0 };
	encode_list(&b);
	CHECK_EQ(b.err, 0);
	CHECK_EQ(u32_at(b.data, 0), NR_EVENTS);
	struct rtp_app_cursor c = rtp_app_cursor(b.data, b.len);
	uint32_t n;
	CHECK(rtp_app_event_list_decode(&c, &n) == 0 && n == NR_EVENTS, "list");
	for (uint32_t i = 0; i < NR_EVENTS; i++) {
		CHECK(rtp_app_event_decode(&c, &ev_in) == 0, "event %u", i);
		check_event_equal(&ev_in, &events[i]);
	}
	CHECK(rtp_app_end(&c) == 0, "end");
	check_truncations("EVENTS truncations", RTP_APP_EVENTS, b.data, b.len);
	rtp_app_buf_free(&b);

	unit_case = "EVENTS empty list";
	rtp_app_event_list_encode(&b, 0);
	CHECK(b.err == 0 && b.len == 4, "empty list is 4 bytes");
	check_truncations("EVENTS empty list truncations", RTP_APP_EVENTS, b.data, b.len);
	rtp_app_buf_free(&b);
}

static void test_register_reply(void)
{
	for (int k = RTP_APP_CLOCK_TSC; k <= RTP_APP_CLOCK_MONOTONIC; k++) {
		unit_case = "REGISTER_REPLY round trip";
		uint8_t m[RTP_APP_REGISTER_REPLY_SIZE];
		memset(m, 0xee, sizeof(m));
		rtp_app_register_reply_encode(m, (enum rtp_app_clock)k);
		CHECK_EQ(u32_at(m, 0), (uint32_t)k);	/* 0 clock, 4 reserved */
		CHECK_EQ(u32_at(m, 4), 0);
		struct rtp_app_cursor c = rtp_app_cursor(m, sizeof(m));
		enum rtp_app_clock got = 99;
		CHECK(rtp_app_register_reply_decode(&c, &got) == 0 && got == (enum rtp_app_clock)k,
		      "clock %d", k);
		check_truncations("REGISTER_REPLY truncations", RTP_APP_REGISTER_REPLY, m,
				  sizeof(m));
		set_u32(m, 0, RTP_APP_CLOCK_MONOTONIC + 1);
		unit_case = "REGISTER_REPLY unknown clock";
		CHECK(decode(RTP_APP_REGISTER_REPLY, m, sizeof(m)) == -EPROTO, "accepted");
	}
}

static void test_channel(void)
{
	for (uint32_t nc = 0; nc <= RTP_APP_MAX_CONTEXTS; nc += RTP_APP_MAX_CONTEXTS / 2) {
		unit_case = "CHANNEL round trip";
		struct rtp_app_channel m = { .key = 0x1122334455667788ull, .session_id = 9,
					     .channel_id = 3, .nr_contexts = nc,
					     .map_size = 1ull << 33, .account = 0x5a5a0007 };
		for (int i = 0; i < 16; i++)
			m.uuid[i] = (uint8_t)(0xa0 + i);
		for (uint32_t i = 0; i < nc; i++)
			m.contexts[i] = (uint8_t)(i % 7);
		struct rtp_app_buf b = { 0 };
		rtp_app_channel_encode(&b, &m);
		CHECK_EQ(b.err, 0);
		CHECK_EQ(b.len, RTP_APP_CHANNEL_FIXED + nc);
		/* 0 key, 8 session, 16 channel, 20 nr_contexts, 24 map size,
		 * 32 uuid, 48 account, 52 contexts. */
		CHECK_EQ(u64_at(b.data, 0), m.key);
		CHECK_EQ(u64_at(b.data, 8), 9);
		CHECK_EQ(u32_at(b.data, 16), 3);
		CHECK_EQ(u32_at(b.data, 20), nc);
		CHECK_EQ(u64_at(b.data, 24), 1ull << 33);
		CHECK(memcmp(b.data + 32, m.uuid, 16) == 0, "uuid bytes");
		CHECK_EQ(u32_at(b.data, 48), 0x5a5a0007);
		CHECK(memcmp(b.data + 52, m.contexts, nc) == 0, "context bytes");
		struct rtp_app_channel got;
		memset(&got, 0xff, sizeof(got));
		struct rtp_app_cursor c = rtp_app_cursor(b.data, b.len);
		CHECK(rtp_app_channel_decode(&c, &got) == 0, "decode");
		CHECK_EQ(got.key, m.key);
		CHECK_EQ(got.session_id, m.session_id);
		CHECK_EQ(got.channel_id, m.channel_id);
		CHECK_EQ(got.nr_contexts, nc);
		CHECK_EQ(got.map_size, m.map_size);
		CHECK_EQ(got.account, m.account);
		CHECK(memcmp(got.uuid, m.uuid, 16) == 0, "uuid");
		CHECK(memcmp(got.contexts, m.contexts, nc) == 0, "contexts");
		check_truncations("CHANNEL truncations", RTP_APP_CHANNEL, b.data, b.len);

		unit_case = "CHANNEL out of range";
		char *copy = calloc(1, b.len + 1);
		memcpy(copy, b.data, b.len);
		memset(copy, 0, 8);
		CHECK(decode(RTP_APP_CHANNEL, copy, b.len) == -EPROTO, "key 0 accepted");
		memcpy(copy, b.data, b.len);
		set_u32(copy, 20, RTP_APP_MAX_CONTEXTS + 1);
		CHECK(decode(RTP_APP_CHANNEL, copy, b.len + 1) == -EPROTO, "17 contexts accepted");
		free(copy);
		rtp_app_buf_free(&b);
	}
	unit_case = "CHANNEL encoder refusals";
	struct rtp_app_buf b = { 0 };
	rtp_app_channel_encode(&b, &(struct rtp_app_channel){ .key = 0 });
	CHECK(b.err == -EINVAL, "key 0 encoded");
	rtp_app_buf_free(&b);
	rtp_app_channel_encode(&b, &(struct rtp_app_channel){
		.key = 1, .nr_contexts = RTP_APP_MAX_CONTEXTS + 1 });
	CHECK(b.err == -EINVAL, "17 contexts encoded");
	rtp_app_buf_free(&b);
}

static void test_enable(void)
{
	static const uint32_t pairs[][2] = {
		{ 0, 0 }, { 5, 17 }, { RTP_APP_MAX_EVENTS - 1, RTP_APP_EVENT_ID_MAX }, { 2, 1 },
	};
	for (uint32_t n = 0; n <= 4; n += 4) {
		unit_case = "ENABLE round trip";
		struct rtp_app_buf b = { 0 };
		rtp_app_enable_begin(&b, 0xabcdef01ull);
		for (uint32_t i = 0; i < n; i++)
			rtp_app_enable_add(&b, pairs[i][0], pairs[i][1]);
		rtp_app_enable_finish(&b);
		CHECK_EQ(b.err, 0);
		CHECK_EQ(b.len, RTP_APP_ENABLE_FIXED + 8 * n);
		/* 0 key, 8 N, 12 reserved, 16 N x { index, id } */
		CHECK_EQ(u64_at(b.data, 0), 0xabcdef01ull);
		CHECK_EQ(u32_at(b.data, 8), n);
		CHECK_EQ(u32_at(b.data, 12), 0);
		for (uint32_t i = 0; i < n; i++) {
			CHECK_EQ(u32_at(b.data, 16 + 8 * i), pairs[i][0]);
			CHECK_EQ(u32_at(b.data, 20 + 8 * i), pairs[i][1]);
		}
		struct rtp_app_enable got;
		struct rtp_app_cursor c = rtp_app_cursor(b.data, b.len);
		CHECK(rtp_app_enable_decode(&c, &got) == 0, "decode");
		CHECK_EQ(got.key, 0xabcdef01ull);
		CHECK_EQ(got.n, n);
		for (uint32_t i = 0; i < n && i < got.n; i++) {
			uint32_t idx, id;
			rtp_app_enable_entry(&got, i, &idx, &id);
			CHECK_EQ(idx, pairs[i][0]);
			CHECK_EQ(id, pairs[i][1]);
		}
		check_truncations("ENABLE truncations", RTP_APP_ENABLE, b.data, b.len);
		if (n) {
			unit_case = "ENABLE out of range";
			char *copy = malloc(b.len);
			memcpy(copy, b.data, b.len);
			set_u32(copy, 16 + 8 * 3, RTP_APP_MAX_EVENTS);
			CHECK(decode(RTP_APP_ENABLE, copy, b.len) == -EPROTO, "index accepted");
			memcpy(copy, b.data, b.len);
			set_u32(copy, 20 + 8 * 3, RTP_APP_EVENT_ID_MAX + 1);
			CHECK(decode(RTP_APP_ENABLE, copy, b.len) == -EPROTO, "id accepted");
			memcpy(copy, b.data, b.len);
			set_u32(copy, 8, n - 1);
			CHECK(decode(RTP_APP_ENABLE, copy, b.len) == -EPROTO, "N too small");
			free(copy);
		}
		rtp_app_buf_free(&b);
	}
	unit_case = "ENABLE encoder refusals";
	struct rtp_app_buf b = { 0 };
	rtp_app_enable_begin(&b, 1);
	rtp_app_enable_add(&b, RTP_APP_MAX_EVENTS, 0);
	CHECK(b.err == -EINVAL, "index encoded");
	rtp_app_buf_free(&b);
	rtp_app_enable_begin(&b, 1);
	rtp_app_enable_add(&b, 0, RTP_APP_EVENT_ID_MAX + 1);
	CHECK(b.err == -EINVAL, "id encoded");
	rtp_app_buf_free(&b);
	rtp_app_enable_begin(&b, 1);
	for (uint32_t i = 0; i < RTP_APP_MAX_EVENTS; i++)
		rtp_app_enable_add(&b, i, i);
	rtp_app_enable_finish(&b);
	CHECK(b.err == 0 && u32_at(b.data, 8) == RTP_APP_MAX_EVENTS &&
	      decode(RTP_APP_ENABLE, b.data, b.len) == 0, "the largest ENABLE");
	rtp_app_enable_add(&b, 0, 0);
	CHECK(b.err == -EINVAL, "one entry past the limit encoded");
	rtp_app_buf_free(&b);
}

/* ENABLE with filters: 0 key, 8 N, 12 F, 16 N entries, F x { len,
 * bytes }, U, U x { entry, filter }. */
static void test_enable_filtered(void)
{
	unit_case = "ENABLE with filters";
	static const char f0[] = "RTF1-first", f1[] = "x";
	const struct rtp_app_filter filters[2] = { { f0, 10 }, { f1, 1 } };
	const struct rtp_app_enable_use uses[3] = { { 0, 1 }, { 2, 0 }, { 2, 1 } };
	struct rtp_app_buf b = { 0 };
	rtp_app_enable_begin(&b, 7);
	for (uint32_t i = 0; i < 3; i++)
		rtp_app_enable_add(&b, 10 + i, 20 + i);
	rtp_app_enable_finish_filtered(&b, filters, 2, uses, 3);
	CHECK_EQ(b.err, 0);
	const uint32_t fo = 16 + 3 * 8, uo = fo + 4 + 10 + 4 + 1;
	CHECK_EQ(b.len, uo + 4 + 3 * 8);
	CHECK_EQ(u32_at(b.data, 8), 3);
	CHECK_EQ(u32_at(b.data, 12), 2);
	CHECK_EQ(u32_at(b.data, fo), 10);
	CHECK(!memcmp(b.data + fo + 4, f0, 10), "first filter's bytes");
	CHECK_EQ(u32_at(b.data, fo + 14), 1);
	CHECK_EQ(b.data[fo + 18], 'x');
	CHECK_EQ(u32_at(b.data, uo), 3);
	CHECK_EQ(u32_at(b.data, uo + 4 + 8), 2);
	CHECK_EQ(u32_at(b.data, uo + 4 + 12), 0);
	static struct rtp_app_enable got;
	struct rtp_app_cursor c = rtp_app_cursor(b.data, b.len);
	CHECK(rtp_app_enable_decode(&c, &got) == 0, "decode");
	CHECK_EQ(got.n, 3);
	CHECK_EQ(got.nr_filters, 2);
	CHECK(got.filters[0].len == 10 && !memcmp(got.filters[0].p, f0, 10), "filter 0");
	CHECK(got.filters[1].len == 1 && *(const char *)got.filters[1].p == 'x', "filter 1");
	CHECK_EQ(got.nr_uses, 3);
	for (uint32_t i = 0; i < 3 && i < got.nr_uses; i++) {
		struct rtp_app_enable_use u = rtp_app_enable_use_at(&got, i);
		CHECK(u.entry == uses[i].entry && u.filter == uses[i].filter, "use %u", i);
	}
	check_truncations("ENABLE with filters: truncations", RTP_APP_ENABLE, b.data, b.len);
	unit_case = "ENABLE with filters: out of range";
	char *copy = malloc(b.len);
	static const struct {
		uint32_t off, value;
		const char *what;
	} bad[] = {
		{ 12, RTP_APP_ENABLE_MAX_FILTERS + 1, "F past the limit" },
		{ 12, 3, "F larger than the filters" },
		{ 16 + 3 * 8, 0, "an empty filter" },
		{ 16 + 3 * 8, RTP_APP_FILTER_MAX + 1, "a filter past the limit" },
		{ 16 + 3 * 8, 11, "a filter longer than it is" },
		{ 16 + 3 * 8 + 4 + 10 + 4 + 1, 4, "U past the uses" },
		{ 16 + 3 * 8 + 4 + 10 + 4 + 1, 2, "U short of the uses" },
		{ 16 + 3 * 8 + 4 + 10 + 4 + 1 + 4, 3, "a use's entry past N" },
		{ 16 + 3 * 8 + 4 + 10 + 4 + 1 + 8, 2, "a use's filter past F" },
		{ 16 + 3 * 8 + 4 + 10 + 4 + 1 + 4 + 8 + 4, 1, "a use repeated" },
		{ 16 + 3 * 8 + 4 + 10 + 4 + 1 + 4, 2, "uses out of order" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memcpy(copy, b.data, b.len);
		set_u32(copy, bad[i].off, bad[i].value);
		CHECK(decode(RTP_APP_ENABLE, copy, b.len) == -EPROTO, "%s: accepted", bad[i].what);
	}
	free(copy);
	rtp_app_buf_free(&b);
	unit_case = "ENABLE with filters: encoder refusals";
	const struct rtp_app_filter empty = { f0, 0 };
	const struct rtp_app_enable_use past = { 1, 0 };
	const struct rtp_app_enable_use twice[2] = { { 0, 1 }, { 0, 1 } };
	const struct rtp_app_enable_use backwards[2] = { { 0, 1 }, { 0, 0 } };
	struct {
		const struct rtp_app_filter *f;
		uint32_t nf;
		const struct rtp_app_enable_use *u;
		uint32_t nu;
		const char *what;
	} refused[] = {
		{ &empty, 1, NULL, 0, "an empty filter" },
		{ filters, 2, &past, 1, "a use past the entries" },
		{ filters, 0, uses, 1, "uses without filters" },
		{ filters, 2, twice, 2, "a use repeated" },
		{ filters, 2, backwards, 2, "uses out of order" },
		{ filters, RTP_APP_ENABLE_MAX_FILTERS + 1, NULL, 0, "too many filters" },
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		rtp_app_enable_begin(&b, 1);
		rtp_app_enable_add(&b, 0, 0);
		rtp_app_enable_finish_filtered(&b, refused[i].f, refused[i].nf, refused[i].u,
					       refused[i].nu);
		CHECK(b.err == -EINVAL, "%s: encoded", refused[i].what);
		rtp_app_buf_free(&b);
	}
}

static void test_fixed_u64(const char *what, uint16_t type,
			   void (*encode)(uint8_t *, uint64_t),
			   int (*dec)(struct rtp_app_cursor *, uint64_t *))
{
	unit_case = what;
	uint8_t m[8];
	encode(m, 0x0102030405060708ull);
	CHECK_EQ(u64_at(m, 0), 0x0102030405060708ull);	/* 0 u64 */
	struct rtp_app_cursor c = rtp_app_cursor(m, sizeof(m));
	uint64_t got = 0;
	CHECK(dec(&c, &got) == 0 && got == 0x0102030405060708ull, "round trip");
	check_truncations(what, type, m, sizeof(m));
}

static void enc_disable(uint8_t *out, uint64_t v)
{
	rtp_app_disable_session_encode(out, v);
}

static void enc_sync(uint8_t *out, uint64_t v)
{
	rtp_app_sync_encode(out, v);
}

static void test_empty(void)
{
	check_truncations("GOODBYE", RTP_APP_GOODBYE, "", 0);
	check_truncations("EVENTS_REPLY", RTP_APP_EVENTS_REPLY, "", 0);
}

static void test_too_big(void)
{
	unit_case = "payload past RTP_MAX_PAYLOAD";
	struct rtp_app_buf b = { 0 };
	char longname[RTP_APP_STR_MAX + 1];
	memset(longname, 'a', RTP_APP_STR_MAX);
	longname[RTP_APP_STR_MAX] = '\0';
	struct rtp_app_event_out e = { .provider = longname, .name = longname };
	rtp_app_event_list_encode(&b, RTP_APP_MAX_EVENTS);
	for (uint32_t i = 0; i < RTP_APP_MAX_EVENTS && !b.err; i++) {
		e.index = i;
		rtp_app_event_encode(&b, &e);
	}
	CHECK(b.err == -E2BIG, "err %d", b.err);
	CHECK(b.len <= RTP_MAX_PAYLOAD, "grew to %u", b.len);
	rtp_app_buf_free(&b);
}

static void test_triggers(void)
{
	unit_case = "TRIGGERS round trip";
	static const uint32_t ev[] = { 0, 5, RTP_APP_MAX_EVENTS - 1 };
	static const char filt[] = "\x01\x02\x03";
	static const char *const caps[] = { "dur_us", "$ctx.vtid" };
	const struct rtp_app_trigger_out t[] = {
		{ .token = 0x0102030405060708ull, .events = ev, .nr_events = 3,
		  .filter = filt, .filter_len = 3, .captures = caps, .nr_captures = 2 },
		{ .token = 9 },
	};
	struct rtp_app_buf b = { 0 };
	rtp_app_triggers_encode(&b, 2);
	rtp_app_trigger_encode(&b, &t[0]);
	rtp_app_trigger_encode(&b, &t[1]);
	CHECK_EQ(b.err, 0);
	/* 0 N, 4 reserved, 8 first record: token, E, F, C, reserved,
	 * events, filter, captures (u8 length + bytes). */
	CHECK_EQ(b.len, 8 + 24 + 12 + 3 + 7 + 10 + 24);
	CHECK_EQ(u32_at(b.data, 0), 2);
	CHECK_EQ(u64_at(b.data, 8), t[0].token);
	CHECK_EQ(u32_at(b.data, 16), 3);
	CHECK_EQ(u32_at(b.data, 20), 3);
	CHECK_EQ(u32_at(b.data, 24), 2);
	CHECK_EQ(u32_at(b.data, 32 + 4), 5);
	CHECK(memcmp(b.data + 44, filt, 3) == 0, "filter bytes");
	CHECK(b.data[47] == 6 && memcmp(b.data + 48, "dur_us", 6) == 0, "capture");
	struct rtp_app_cursor c = rtp_app_cursor(b.data, b.len);
	uint32_t n;
	CHECK(rtp_app_triggers_decode(&c, &n) == 0 && n == 2, "count");
	CHECK(rtp_app_trigger_decode(&c, &trig_in) == 0, "first record");
	CHECK_EQ(trig_in.token, t[0].token);
	CHECK_EQ(trig_in.nr_events, 3);
	CHECK_EQ(rtp_app_trigger_event(&trig_in, 2), RTP_APP_MAX_EVENTS - 1);
	CHECK(trig_in.filter_len == 3 && memcmp(trig_in.filter, filt, 3) == 0, "filter");
	CHECK(trig_in.nr_captures == 2 && !strcmp(trig_in.captures[1], "$ctx.vtid"),
	      "captures");
	CHECK(rtp_app_trigger_decode(&c, &trig_in) == 0 && trig_in.token == 9 &&
		      !trig_in.nr_events && !trig_in.filter && !trig_in.nr_captures,
	      "second record");
	CHECK(rtp_app_end(&c) == 0, "end");
	check_truncations("TRIGGERS truncations", RTP_APP_TRIGGERS, b.data, b.len);

	unit_case = "TRIGGERS out of range";
	char *copy = malloc(b.len);
	struct { size_t off; uint64_t v; bool wide; const char *what; } bad[] = {
		{ 0, RTP_APP_MAX_TRIGGERS + 1, false, "N past the limit" },
		{ 0, 3, false, "N past the records" },
		{ 8, 0, true, "token 0" },
		{ 16, RTP_APP_MAX_EVENTS + 1, false, "E past the limit" },
		{ 16, 1000, false, "E past the bytes" },
		{ 20, RTP_APP_FILTER_MAX + 1, false, "F past the limit" },
		{ 24, RTP_APP_MAX_CAPTURES + 1, false, "C past the limit" },
		{ 32, RTP_APP_MAX_EVENTS, false, "an index out of range" },
		{ 47, 0, false, "an empty capture" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memcpy(copy, b.data, b.len);
		if (bad[i].wide)
			memcpy(copy + bad[i].off, &bad[i].v, 8);
		else if (bad[i].off == 47)
			copy[47] = 0;
		else
			set_u32(copy, bad[i].off, (uint32_t)bad[i].v);
		CHECK(decode(RTP_APP_TRIGGERS, copy, b.len) == -EPROTO, "%s accepted",
		      bad[i].what);
	}
	free(copy);
	rtp_app_buf_free(&b);

	unit_case = "TRIGGERS encoder refusals";
	const struct rtp_app_trigger_out refused[] = {
		{ .token = 0 },
		{ .token = 1, .nr_captures = RTP_APP_MAX_CAPTURES + 1, .captures = caps },
		{ .token = 1, .filter_len = 2 },
		{ .token = 1, .events = (const uint32_t[]){ RTP_APP_MAX_EVENTS }, .nr_events = 1 },
		{ .token = 1, .captures = (const char *const[]){ "" }, .nr_captures = 1 },
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		rtp_app_triggers_encode(&b, 1);
		rtp_app_trigger_encode(&b, &refused[i]);
		CHECK(b.err == -EINVAL, "record %zu encoded", i);
		rtp_app_buf_free(&b);
	}
	rtp_app_triggers_encode(&b, RTP_APP_MAX_TRIGGERS + 1);
	CHECK(b.err == -EINVAL, "N past the limit encoded");
	rtp_app_buf_free(&b);
}

int main(void)
{
	test_register();
	test_bad_events();
	test_events();
	test_register_reply();
	test_channel();
	test_enable();
	test_enable_filtered();
	test_fixed_u64("DISABLE_SESSION", RTP_APP_DISABLE_SESSION, enc_disable,
		       rtp_app_disable_session_decode);
	test_fixed_u64("SYNC", RTP_APP_SYNC, enc_sync, rtp_app_sync_decode);
	test_fixed_u64("SYNC_REPLY", RTP_APP_SYNC_REPLY, enc_sync, rtp_app_sync_decode);
	test_triggers();
	test_empty();
	test_too_big();
	return unit_finish();
}
