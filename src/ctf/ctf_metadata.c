/*
 * ctf_metadata.c - TSDL generation (see ctf_metadata.h and ctf_packet.h
 * for the binary layout the declarations below describe).
 */
#define _GNU_SOURCE
#include "ctf_metadata.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "../common/array.h"
#include "ctf_packet.h"

void ctf_buf_printf(struct ctf_buf *b, const char *fmt, ...)
{
	if (b->err)
		return;
	for (;;) {
		va_list ap;
		size_t room = b->cap - b->len;
		va_start(ap, fmt);
		int n = vsnprintf(b->data ? b->data + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->err = -EINVAL;
			return;
		}
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		/* n + 1 bytes from len (the NUL); n >= room, so this grows. */
		if (RT_ARRAY_GROW(b->data, b->cap, b->len + (size_t)n + 1, 4096) < 0) {
			b->err = -ENOMEM;
			return;
		}
	}
}

void ctf_buf_free(struct ctf_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

void ctf_uuid_generate(uint8_t uuid[16])
{
	if (getrandom(uuid, 16, 0) != 16) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t x = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
			     ((uint64_t)getpid() << 32);
		memcpy(uuid, &x, 8);
		memcpy(uuid + 8, &x, 8);
	}
	uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x40);
	uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80);
}

void ctf_uuid_format(const uint8_t u[16], char out[37])
{
	snprintf(out, 37,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		 u[10], u[11], u[12], u[13], u[14], u[15]);
}

/* A TSDL string literal: quotes, backslashes and control bytes escaped. */
static void put_quoted(struct ctf_buf *b, const char *s)
{
	ctf_buf_printf(b, "\"");
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			ctf_buf_printf(b, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			ctf_buf_printf(b, "\\x%02x", c);
		else
			ctf_buf_printf(b, "%c", c);
	}
	ctf_buf_printf(b, "\"");
}

static int put_field(struct ctf_buf *b, const struct rt_field_desc *f)
{
	static const struct {
		unsigned bits;
		int is_signed;
	} ints[] = {
		[RT_TYPE_S8] = { 8, 1 },   [RT_TYPE_U8] = { 8, 0 },
		[RT_TYPE_S16] = { 16, 1 }, [RT_TYPE_U16] = { 16, 0 },
		[RT_TYPE_S32] = { 32, 1 }, [RT_TYPE_U32] = { 32, 0 },
		[RT_TYPE_S64] = { 64, 1 }, [RT_TYPE_U64] = { 64, 0 },
	};
	/* Fields get a leading underscore (as LTTng writes them) so that no
	 * name can clash with a TSDL keyword; readers strip it. */
	switch (f->type) {
	case RT_TYPE_S8: case RT_TYPE_U8: case RT_TYPE_S16: case RT_TYPE_U16:
	case RT_TYPE_S32: case RT_TYPE_U32: case RT_TYPE_S64: case RT_TYPE_U64:
		ctf_buf_printf(b,
			       "\t\tinteger { size = %u; align = 8; signed = %s; encoding = none; base = 10; } _%s;\n",
			       ints[f->type].bits, ints[f->type].is_signed ? "true" : "false",
			       f->name);
		return 0;
	case RT_TYPE_FLOAT:
		ctf_buf_printf(b, "\t\tfloating_point { exp_dig = 8; mant_dig = 24; align = 8; } _%s;\n",
			       f->name);
		return 0;
	case RT_TYPE_DOUBLE:
		ctf_buf_printf(b, "\t\tfloating_point { exp_dig = 11; mant_dig = 53; align = 8; } _%s;\n",
			       f->name);
		return 0;
	case RT_TYPE_BOOL:
		ctf_buf_printf(b, "\t\tenum : uint8_t { \"false\" = 0, \"true\" = 1 } _%s;\n",
			       f->name);
		return 0;
	case RT_TYPE_STRING:
		ctf_buf_printf(b, "\t\tstring { encoding = UTF8; } _%s;\n", f->name);
		return 0;
	case RT_TYPE_POINTER:
		ctf_buf_printf(b,
			       "\t\tinteger { size = %zu; align = 8; signed = false; encoding = none; base = 16; } _%s;\n",
			       sizeof(void *) * 8, f->name);
		return 0;
	case RT_TYPE_FORMAT:
		/* rt_printf: the format is the one label of a one-byte enum
		 * (recorded 0), so that it is in the metadata once and any
		 * CTF reader shows it; `view` formats the message from it. */
		ctf_buf_printf(b, "\t\tenum : uint8_t { ");
		put_quoted(b, f->name);
		ctf_buf_printf(b, " = 0 } _" CTF_PRINTF_FORMAT_FIELD ";\n");
		return 0;
	case RT_TYPE_BYTES:
		ctf_buf_printf(b, "\t\tuint32_t __%s_length;\n", f->name);
		ctf_buf_printf(b,
			       "\t\tinteger { size = 8; align = 8; signed = false; encoding = none; base = 16; } _%s[__%s_length];\n",
			       f->name, f->name);
		return 0;
	default:
		return -EINVAL;
	}
}

int ctf_metadata_build(struct ctf_buf *b, const struct ctf_trace_info *t,
		       const struct ctf_stream_class *streams, size_t nr_streams,
		       const struct ctf_event_class *events, size_t nr_events)
{
	char uuid[37];
	ctf_uuid_format(t->uuid, uuid);

	ctf_buf_printf(b, "/* CTF 1.8 */\n\n");
	ctf_buf_printf(b,
		       "typealias integer { size = 5; align = 1; signed = false; } := uint5_t;\n"
		       "typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
		       "typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n"
		       "typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
		       "typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n\n");
	ctf_buf_printf(b,
		       "trace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = \"%s\";\n\tbyte_order = le;\n"
		       "\tpacket.header := struct {\n"
		       "\t\tuint32_t magic;\n\t\tuint8_t uuid[16];\n\t\tuint32_t stream_id;\n"
		       "\t\tuint64_t stream_instance_id;\n\t} align(8);\n};\n\n",
		       uuid);

	ctf_buf_printf(b, "env {\n\tdomain = ");
	put_quoted(b, t->domain ? t->domain : "ust");
	ctf_buf_printf(b, ";\n\ttracer_name = \"ringtrace\";\n");
	ctf_buf_printf(b, "\ttracer_version = ");
	put_quoted(b, t->tracer_version);
	ctf_buf_printf(b, ";\n\thostname = ");
	put_quoted(b, t->hostname);
	if (t->procname) {
		ctf_buf_printf(b, ";\n\tprocname = ");
		put_quoted(b, t->procname);
		ctf_buf_printf(b, ";\n\tvpid = %lld", (long long)t->vpid);
	}
	if (t->relay_clock)
		ctf_buf_printf(b, ";\n\trelay_clock_offset_ns = %lld;\n\trelay_clock_error_ns = %llu",
			       (long long)t->relay_offset_ns, (unsigned long long)t->relay_error_ns);
	ctf_buf_printf(b, ";\n\ttrace_name = ");
	put_quoted(b, t->trace_name);
	ctf_buf_printf(b, ";\n};\n\n");

	char clock_uuid[37];
	ctf_uuid_format(t->clock.has_uuid ? t->clock.uuid : t->uuid, clock_uuid);
	ctf_buf_printf(b, "clock {\n\tname = \"%s\";\n\tuuid = \"%s\";\n\tdescription = ",
		       t->clock.name, clock_uuid);
	put_quoted(b, t->clock.description);
	ctf_buf_printf(b,
		       ";\n\tfreq = %llu;\n\tprecision = %llu;\n\toffset_s = %lld;\n"
		       "\toffset = %llu;\n\tabsolute = false;\n};\n\n",
		       (unsigned long long)t->clock.freq,
		       (unsigned long long)t->clock.precision,
		       (long long)t->clock.offset_s, (unsigned long long)t->clock.offset);
	ctf_buf_printf(b,
		       "typealias integer { size = 27; align = 1; signed = false; map = clock.%s.value; } := uint27_clock_t;\n"
		       "typealias integer { size = 64; align = 8; signed = false; map = clock.%s.value; } := uint64_clock_t;\n\n",
		       t->clock.name, t->clock.name);

	int ret = ctf_metadata_streams(b, streams, nr_streams);
	if (ret < 0)
		return ret;
	return ctf_metadata_events(b, events, nr_events);
}

int ctf_metadata_streams(struct ctf_buf *b, const struct ctf_stream_class *streams,
			 size_t nr_streams)
{
	for (size_t i = 0; i < nr_streams; i++) {
		ctf_buf_printf(b, "/* channel ");
		put_quoted(b, streams[i].name);
		ctf_buf_printf(b,
			       " */\nstream {\n\tid = %u;\n"
			       "\tevent.header := struct {\n"
			       "\t\tenum : uint5_t { compact = 0 ... %u, extended = %u } id;\n"
			       "\t\tvariant <id> {\n"
			       "\t\t\tstruct { uint27_clock_t timestamp; } compact;\n"
			       "\t\t\tstruct { uint32_t id; uint64_clock_t timestamp; } extended;\n"
			       "\t\t} v;\n\t} align(8);\n",
			       streams[i].id, CTF_COMPACT_ID_MAX, CTF_EXTENDED_ID);
		if (streams[i].nr_contexts) {
			ctf_buf_printf(b, "\tevent.context := struct {\n");
			for (uint32_t c = 0; c < streams[i].nr_contexts; c++)
				if (put_field(b, &streams[i].contexts[c]) < 0)
					return -EINVAL;
			ctf_buf_printf(b, "\t} align(8);\n");
		}
		ctf_buf_printf(b,
			       "\tpacket.context := struct {\n"
			       "\t\tuint64_clock_t timestamp_begin;\n\t\tuint64_clock_t timestamp_end;\n"
			       "\t\tuint64_t content_size;\n\t\tuint64_t packet_size;\n"
			       "\t\tuint64_t packet_seq_num;\n\t\tuint64_t events_discarded;\n"
			       "\t\tuint32_t cpu_id;\n\t} align(8);\n};\n\n");
	}

	return b->err;
}

int ctf_metadata_events(struct ctf_buf *b, const struct ctf_event_class *events,
			size_t nr_events)
{
	for (size_t i = 0; i < nr_events; i++) {
		const struct ctf_event_class *e = &events[i];
		char full[512];
		if (e->provider)
			snprintf(full, sizeof(full), "%s:%s", e->provider, e->name);
		ctf_buf_printf(b, "event {\n\tname = ");
		put_quoted(b, e->provider ? full : e->name);
		ctf_buf_printf(b, ";\n\tid = %u;\n\tstream_id = %u;\n", e->id, e->stream_id);
		if (e->loglevel >= 0)
			ctf_buf_printf(b, "\tloglevel = %d;\n", e->loglevel);
		ctf_buf_printf(b, "\tfields := struct {\n");
		for (uint32_t f = 0; f < e->nr_fields; f++)
			if (put_field(b, &e->fields[f]) < 0)
				return -EINVAL;
		ctf_buf_printf(b, "\t} align(8);\n};\n\n");
	}
	return b->err;
}

void ctf_clock_shift(struct ctf_clock_info *c, int64_t ns)
{
	uint64_t freq = c->freq ? c->freq : 1000000000ull;
	/* Whole seconds, then the rest (0 <= rest < 1 s) as cycles. */
	int64_t sec = ns / 1000000000ll, rest = ns % 1000000000ll;
	if (rest < 0) {
		rest += 1000000000ll;
		sec--;
	}
	uint64_t cycles = (uint64_t)((unsigned __int128)(uint64_t)rest * freq / 1000000000ull);
	c->offset_s += sec + (int64_t)(c->offset / freq);
	c->offset = c->offset % freq + cycles;
	if (c->offset >= freq) {
		c->offset -= freq;
		c->offset_s++;
	}
}
