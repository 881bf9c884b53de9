/*
 * print_check.c - `ringtrace view`'s printer with its per-class caches of
 * text against the same printer without them (view_printer.plain: every
 * value decoded and formatted, the reference), event by event, as text
 * (with and without colour) and as JSON, on the traces given.
 *
 * usage: print_check TRACE_DIR...
 * Exit 0 when every event printed the same both ways (the number of
 * events and of cache hits printed), 1 otherwise (the first differing
 * event's two texts printed), 2 on a usage or reading error.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/view.h"

enum { TEXT, COLOR, JSON, NR_MODES };

struct pair {
	struct view_printer pr[2];	/* [0] cached, [1] plain */
	struct fmt_out out[2];
};

static int pair_init(struct pair *p, size_t nr_classes, int mode, struct rtr_trace *t)
{
	memset(p, 0, sizeof(*p));
	for (int k = 0; k < 2; k++) {
		if (view_printer_init(&p->pr[k], nr_classes, mode == JSON) < 0 ||
		    fmt_open(&p->out[k], NULL, 4096) < 0)
			return -ENOMEM;
		struct view_printer *pr = &p->pr[k];
		pr->out = &p->out[k];
		pr->clock_mode = VIEW_CLOCK_TIME;
		pr->delta = true;
		pr->color = mode == COLOR;
		pr->with_source = rtr_trace_count(t) > 1;
		pr->t = t;
		pr->plain = k == 1;
		fmt_clock_init(&pr->clock, true, false);
	}
	return 0;
}

static void pair_free(struct pair *p)
{
	for (int k = 0; k < 2; k++) {
		view_printer_free(&p->pr[k]);
		if (p->out[k].buf)
			fmt_close(&p->out[k]);
	}
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: print_check TRACE_DIR...\n");
		return 2;
	}
	struct rtr_trace *t;
	char err[512];
	if (rtr_open_many((const char *const *)argv + 1, (size_t)argc - 1, &t, err,
			  sizeof(err)) < 0) {
		fprintf(stderr, "print_check: %s\n", err);
		return 2;
	}
	const struct rtr_event_class *base;
	size_t nr = rtr_event_classes(t, &base);
	struct pair pairs[NR_MODES];
	int ret = 0;
	for (int m = 0; m < NR_MODES; m++)
		if (pair_init(&pairs[m], nr, m, t) < 0) {
			fprintf(stderr, "print_check: out of memory\n");
			return 2;
		}
	struct rtr_event ev;
	uint64_t events = 0;
	int r;
	while (ret == 0 && (r = rtr_next(t, &ev)) > 0) {
		struct view_event e = { &ev, ev.trace, (uint32_t)(ev.cls - base) };
		/* The plain printer second: the cached one must not depend on
		 * what the other decoded first. */
		for (int m = 0; m < NR_MODES && ret == 0; m++) {
			struct pair *p = &pairs[m];
			for (int k = 0; k < 2; k++) {
				p->out[k].len = 0;
				view_print(&p->pr[k], &e);
			}
			if (p->out[0].err || p->out[1].err) {
				fprintf(stderr, "print_check: out of memory\n");
				ret = 2;
			} else if (p->out[0].len != p->out[1].len ||
				   memcmp(p->out[0].buf, p->out[1].buf, p->out[0].len)) {
				fprintf(stderr,
					"print_check: event %llu (%s), mode %d differs:\n"
					"cached: %.*s\nplain:  %.*s\n",
					(unsigned long long)events, ev.cls->name, m,
					(int)p->out[0].len, p->out[0].buf, (int)p->out[1].len,
					p->out[1].buf);
				ret = 1;
			}
		}
		events++;
	}
	if (ret == 0 && r < 0) {
		fprintf(stderr, "print_check: %s\n", rtr_error(t));
		ret = 2;
	}
	if (ret == 0)
		printf("%llu events printed the same with and without the caches\n",
		       (unsigned long long)events);
	for (int m = 0; m < NR_MODES; m++)
		pair_free(&pairs[m]);
	rtr_close(t);
	return ret;
}
