/*
 * test_reader_dump.c - print a trace with rt_reader, one line per event,
 * for checks by hand (not run by ctest):
 *
 *   test_reader_dump [-s] [-q] TRACE_DIR
 *
 * Line format: `<ns> <cpu> <name> {<field>=<value> ...}`: integers in
 * decimal, floats with %.17g, bools true/false, strings quoted with bytes
 * outside 0x20..0x7e (and " \) as \xHH, byte sequences as hex digits.
 * -s: also a summary (streams, gaps, classes) on stderr; -q: no event
 * lines (to time the reader).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reader.h"

static void print_value(const struct rtr_value *v)
{
	switch (v->type) {
	case RTR_INT:
		printf("%" PRId64, v->i);
		break;
	case RTR_UINT:
		printf("%" PRIu64, v->u);
		break;
	case RTR_FLOAT:
	case RTR_DOUBLE:
		printf("%.17g", v->d);
		break;
	case RTR_BOOL:
		printf("%s", v->b ? "true" : "false");
		break;
	case RTR_STRING:
		putchar('"');
		for (size_t k = 0; k < v->s.len; k++) {
			unsigned char c = (unsigned char)v->s.p[k];
			if (c < 0x20 || c > 0x7e || c == '"' || c == '\\')
				printf("\\x%02x", c);
			else
				putchar(c);
		}
		putchar('"');
		break;
	case RTR_BYTES:
		for (size_t k = 0; k < v->bytes.len; k++)
			printf("%02x", v->bytes.p[k]);
		break;
	}
}

int main(int argc, char **argv)
{
	int summary = 0, quiet = 0, i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-s"))
			summary = 1;
		else if (!strcmp(argv[i], "-q"))
			quiet = 1;
		else
			break;
	}
	if (i != argc - 1) {
		fprintf(stderr, "usage: %s [-s] [-q] TRACE_DIR\n", argv[0]);
		return 2;
	}
	char err[512];
	struct rtr_trace *t;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int r = rtr_open(argv[i], &t, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "rtr_open: %s (%s)\n", err, strerror(-r));
		return 1;
	}
	struct rtr_event ev;
	uint64_t n = 0;
	while ((r = rtr_next(t, &ev)) > 0) {
		n++;
		if (quiet)
			continue;
		printf("%" PRId64 " %" PRIu32 " %s {", ev.ns, ev.cpu, ev.cls->name);
		for (uint32_t k = 0; k < ev.cls->nr_fields; k++) {
			struct rtr_value v;
			if (rtr_field(&ev, k, &v) < 0) {
				fprintf(stderr, "rtr_field %u failed\n", k);
				return 1;
			}
			printf("%s%s=", k ? " " : "", ev.cls->fields[k].name);
			print_value(&v);
		}
		printf("}\n");
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (r < 0) {
		fprintf(stderr, "rtr_next: %s (%s)\n", rtr_error(t), strerror(-r));
		rtr_close(t);
		return 1;
	}
	if (summary) {
		double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
		fprintf(stderr, "%" PRIu64 " events in %.3f s (%.1f ns/event), clock %" PRIu64 " Hz\n",
			n, s, n ? s * 1e9 / (double)n : 0.0, rtr_clock_freq(t));
		const struct rtr_stream_stats *st;
		size_t ns = rtr_streams(t, &st);
		for (size_t k = 0; k < ns; k++)
			fprintf(stderr, "stream %zu %s: cpu %u, %" PRIu64 " packets, %" PRIu64
				" events, %" PRIu64 " discarded, %" PRIu64 " packets lost, %" PRIu64 " bytes\n",
				k, st[k].path, st[k].cpu, st[k].packets, st[k].events,
				st[k].events_discarded, st[k].packets_lost, st[k].bytes);
		const struct rtr_gap *g;
		size_t ng = rtr_gaps(t, &g);
		for (size_t k = 0; k < ng; k++)
			fprintf(stderr, "gap: stream %u, %" PRIu64 " packets lost between %" PRIu64
				" and %" PRIu64 "\n", g[k].stream, g[k].packets_lost, g[k].ticks_before,
				g[k].ticks_after);
		const struct rtr_event_class *c;
		size_t nc = rtr_event_classes(t, &c);
		for (size_t k = 0; k < nc; k++) {
			fprintf(stderr, "class %u/%u %s loglevel %d:", c[k].stream_id, c[k].id,
				c[k].name, c[k].loglevel);
			for (uint32_t f = 0; f < c[k].nr_fields; f++)
				fprintf(stderr, " %s(type %d, %u bits, base %d)", c[k].fields[f].name,
					(int)c[k].fields[f].type, c[k].fields[f].bits,
					c[k].fields[f].base);
			fprintf(stderr, "\n");
		}
	}
	rtr_close(t);
	return 0;
}
