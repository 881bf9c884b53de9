/*
 * rtr_dump - print every event of one or more traces with rt_reader, one
 * JSON object per line (for tests that compare with babeltrace2), or
 * decode everything and print nothing (to measure).
 *
 *   rtr_dump [-n | -g] DIR...
 *
 * {"name":..,"ns":..,"trace":..,"stream":..,"cpu":..,
 *  "context":{stream event context and event context members},
 *  "payload":{members}}
 * Integers and enums print their integer value, strings as JSON strings,
 * arrays as lists, structures as objects, floats with 17 digits.
 * -n: decode every value of every event, print only the event count.
 * -g: print the gaps instead, one JSON object per line:
 *   {"stream":..,"trace":..,"ticks_before":..,"begin_ns":..,"end_ns":..,
 *    "packets_lost":..,"events_discarded":..}
 * Every event's payload is also read with rtr_fields and checked against
 * rtr_field (exit status 1 if they differ).
 * Exit status 0, or 1 with the reader's message on stderr.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader.h"

static void put_string(const char *s, size_t len)
{
	putchar('"');
	for (size_t k = 0; k < len; k++) {
		unsigned char ch = (unsigned char)s[k];
		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

/* A double's checksum: its bits. Converting it to an integer would be
 * undefined for NaN, infinities and magnitudes of 2^63 and more. */
static uint64_t double_bits(double d)
{
	uint64_t bits;
	memcpy(&bits, &d, sizeof(bits));
	return bits;
}

/* Print (quiet: only decode) a value; returns a checksum of what it saw. */
static uint64_t put_value(const struct rtr_value *v, int quiet)
{
	uint64_t sum = 0;
	switch (v->type) {
	case RTR_INT:
		if (!quiet)
			printf("%" PRId64, v->i);
		return (uint64_t)v->i;
	case RTR_UINT:
	case RTR_ENUM:
		if (!quiet) {
			if (v->is_signed)
				printf("%" PRId64, v->i);
			else
				printf("%" PRIu64, v->u);
		}
		return v->u + (v->label ? 1 : 0);
	case RTR_BOOL:
		if (!quiet)
			fputs(v->b ? "1" : "0", stdout);
		return v->b;
	case RTR_FLOAT:
	case RTR_DOUBLE:
		if (!quiet) {
			if (v->d != v->d || v->d - v->d != 0)
				printf("\"%g\"", v->d);
			else
				printf("%.17g", v->d);
		}
		return double_bits(v->d);
	case RTR_STRING:
		if (!quiet)
			put_string(v->s.p, v->s.len);
		return v->s.len;
	case RTR_BYTES:
		if (!quiet) {
			putchar('[');
			for (size_t k = 0; k < v->bytes.len; k++)
				printf("%s%u", k ? "," : "", v->bytes.p[k]);
			putchar(']');
		}
		return v->bytes.len;
	case RTR_STRUCT:
	case RTR_ARRAY: {
		uint32_t n = rtr_value_count(v);
		bool st = v->type == RTR_STRUCT;
		if (!quiet)
			putchar(st ? '{' : '[');
		for (uint32_t k = 0; k < n; k++) {
			struct rtr_value c;
			const char *name;
			if (rtr_value_child(v, k, &c, &name) < 0)
				break;
			if (!quiet) {
				if (k)
					putchar(',');
				if (st)
					printf("\"%s\":", name);
			}
			sum += put_value(&c, quiet);
		}
		if (!quiet)
			putchar(st ? '}' : ']');
		return sum;
	}
	}
	return 0;
}

static uint64_t put_scopes(const struct rtr_event *ev, const enum rtr_scope *scopes, size_t n,
			   int quiet)
{
	uint64_t sum = 0;
	bool first = true;
	if (!quiet)
		putchar('{');
	for (size_t s = 0; s < n; s++) {
		uint32_t count = rtr_scope_count(ev, scopes[s]);
		for (uint32_t k = 0; k < count; k++) {
			struct rtr_value v;
			const char *name;
			if (rtr_scope_field(ev, scopes[s], k, &v, &name) < 0)
				continue;
			if (!quiet) {
				printf("%s\"%s\":", first ? "" : ",", name);
				first = false;
			}
			sum += put_value(&v, quiet);
		}
	}
	if (!quiet)
		putchar('}');
	return sum;
}

/* rtr_fields, in batches of 3 (so that `first` varies), must give what
 * rtr_field gives for each payload field: false (and a message) if not. */
static bool fields_agree(const struct rtr_event *ev)
{
	uint32_t n = rtr_scope_count(ev, RTR_SCOPE_PAYLOAD);
	for (uint32_t first = 0; first < n; first += 3) {
		struct rtr_value batch[3];
		memset(batch, 0, sizeof(batch));	/* unions compared whole */
		int got = rtr_fields(ev, first, batch, 3);
		for (uint32_t i = 0; i < 3 && first + i < n; i++) {
			struct rtr_value one;
			memset(&one, 0, sizeof(one));
			int r = rtr_field(ev, first + i, &one);
			bool same = r < 0 ? got < 0
					  : (int)i < got && one.type == batch[i].type &&
						    one.bits == batch[i].bits &&
						    one.base == batch[i].base &&
						    one.label == batch[i].label &&
						    one.s.p == batch[i].s.p && one.s.len == batch[i].s.len &&
						    rtr_value_count(&one) == rtr_value_count(&batch[i]);
			if (!same) {
				fprintf(stderr, "rtr_dump: event '%s': rtr_fields and rtr_field differ on field %u\n",
					ev->cls->name, first + i);
				return false;
			}
		}
	}
	return rtr_fields(ev, n, NULL, 0) == 0;
}

int main(int argc, char **argv)
{
	int quiet = 0, gaps = 0, first = 1;
	if (argc > 1 && !strcmp(argv[1], "-n")) {
		quiet = 1;
		first = 2;
	} else if (argc > 1 && !strcmp(argv[1], "-g")) {
		gaps = 1;
		first = 2;
	}
	if (argc <= first) {
		fprintf(stderr, "usage: rtr_dump [-n | -g] DIR...\n");
		return 2;
	}
	struct rtr_trace *t;
	char err[1024];
	if (rtr_open_many((const char *const *)(argv + first), (size_t)(argc - first), &t, err,
			  sizeof(err)) < 0) {
		fprintf(stderr, "rtr_dump: %s\n", err);
		return 1;
	}
	if (gaps) {
		const struct rtr_gap *g;
		const struct rtr_stream_stats *st;
		size_t n = rtr_gaps(t, &g);
		rtr_streams(t, &st);
		for (size_t k = 0; k < n; k++) {
			uint32_t tr = st[g[k].stream].trace;
			printf("{\"stream\":%u,\"trace\":%u,\"ticks_before\":%" PRIu64
			       ",\"begin_ns\":%" PRId64
			       ",\"end_ns\":%" PRId64 ",\"packets_lost\":%" PRIu64
			       ",\"events_discarded\":%" PRIu64 "}\n",
			       g[k].stream, tr, g[k].ticks_before, rtr_trace_ticks_to_ns(t, tr, g[k].ticks_before),
			       rtr_trace_ticks_to_ns(t, tr, g[k].ticks_after), g[k].packets_lost,
			       g[k].events_discarded);
		}
		rtr_close(t);
		return 0;
	}
	static const enum rtr_scope ctx[] = { RTR_SCOPE_STREAM_EVENT_CONTEXT,
					      RTR_SCOPE_EVENT_CONTEXT };
	static const enum rtr_scope payload[] = { RTR_SCOPE_PAYLOAD };
	struct rtr_event ev;
	uint64_t n = 0, sum = 0;
	int r;
	while ((r = rtr_next(t, &ev)) > 0) {
		n++;
		if (!fields_agree(&ev)) {
			rtr_close(t);
			return 1;
		}
		if (quiet) {
			sum += put_scopes(&ev, ctx, 2, 1) + put_scopes(&ev, payload, 1, 1);
			continue;
		}
		printf("{\"name\":");
		put_string(ev.cls->name, strlen(ev.cls->name));
		printf(",\"ns\":%" PRId64 ",\"trace\":%u,\"stream\":%u,\"cpu\":%" PRId64
		       ",\"context\":",
		       ev.ns, ev.trace, ev.stream, ev.cpu == UINT32_MAX ? -1 : (int64_t)ev.cpu);
		put_scopes(&ev, ctx, 2, 0);
		printf(",\"payload\":");
		put_scopes(&ev, payload, 1, 0);
		printf("}\n");
	}
	if (r < 0) {
		fprintf(stderr, "rtr_dump: %s\n", rtr_error(t));
		rtr_close(t);
		return 1;
	}
	if (quiet)
		printf("%" PRIu64 " events (checksum %" PRIu64 ")\n", n, sum);
	rtr_close(t);
	return 0;
}
