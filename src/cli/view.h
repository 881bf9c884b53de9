/*
 * view.h - `ringtrace view`: the pieces shared by its files.
 *
 *   view.c         options, opening the traces, the merge loop
 *   view_print.c   the text and JSON event lines
 *   view_filter.c  --filter (the language of src/filter)
 *   view_time.c    --begin / --end time parsing
 *   view_stats.c   --stats
 *   view_live.c    --live: a session followed on a relay daemon
 *
 * The reader opens every trace under the directories named on the command
 * line and merges their events by time. struct view_class i describes the
 * reader's event class i (rtr_event_classes, all traces), so that
 * per-class caches are plain arrays indexed like it.
 *
 * Concurrency: single-threaded; nothing here is shared.
 */
#ifndef RINGTRACE_CLI_VIEW_H
#define RINGTRACE_CLI_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../reader/reader.h"
#include "fmt.h"

/* One event class of one source. Owned by the view context (view.c). */
struct view_class {
	const struct rtr_event_class *cls;	/* the reader's; valid until rtr_close */
	bool selected;				/* passes the -e patterns */
	uint64_t count;				/* events shown (for --stats) */
};

/* The event being looked at: the reader's event plus where it comes from. */
struct view_event {
	const struct rtr_event *ev;
	uint32_t source;	/* index of its trace (rtr_trace_path) */
	uint32_t gclass;	/* index in the view_class array */
};

/* Where a field name is looked up. */
enum view_scope {
	VIEW_SCOPE_ANY,		/* bare name: payload, then context */
	VIEW_SCOPE_PAYLOAD,	/* $payload.NAME */
	VIEW_SCOPE_CONTEXT,	/* $ctx.NAME */
};

/* Index of the field `name` in `scope` for events of ev's class (the
 * context layout is the same for every event of a class), -1 if none. */
int view_field_index(const struct rtr_event *ev, enum view_scope scope, const char *name);
/* Decode field `index` (from view_field_index) of ev: 0 or -EINVAL. */
int view_field_value(const struct rtr_event *ev, int index, struct rtr_value *v);

/* ---- time (view_time.c) ---- */

enum view_time_kind {
	VIEW_TIME_NONE,
	VIEW_TIME_EPOCH_NS,	/* ns since the epoch */
	VIEW_TIME_RELATIVE,	/* ns after the first event */
	VIEW_TIME_DATE,		/* date and time of day */
	VIEW_TIME_OF_DAY,	/* time of day on the first event's day */
};

struct view_time {
	enum view_time_kind kind;
	int64_t ns;		/* EPOCH_NS, RELATIVE; ns of the day for the others */
	int year, month, day;	/* DATE */
};

/* Parse a --begin/--end argument. 0, or -EINVAL with a message in err. */
int view_time_parse(const char *s, struct view_time *t, char *err, size_t errlen);
/* Absolute ns since the epoch of t, given the first event's time. */
int64_t view_time_resolve(const struct view_time *t, int64_t first_ns, bool utc);

/* ---- filter (view_filter.c) ---- */

/* --filter: src/filter's language with view's variables and local errors
 * (view_filter.c). */
struct view_filter;

/* Parse EXPR. 0, -ENOMEM, or -EINVAL with "filter:1:COLUMN: what" in err. */
int view_filter_parse(const char *expr, struct view_filter **out, char *err,
		      size_t errlen);
/* Prepare the per-class caches for nr classes: 0 or -ENOMEM. */
int view_filter_bind(struct view_filter *f, const struct view_class *classes, size_t nr);
bool view_filter_match(struct view_filter *f, const struct view_event *e);
void view_filter_free(struct view_filter *f);

/* ---- output (view_print.c) ---- */

enum view_clock_mode {
	VIEW_CLOCK_TIME,	/* HH:MM:SS.nnnnnnnnn */
	VIEW_CLOCK_DATE,	/* YYYY-MM-DD HH:MM:SS.nnnnnnnnn */
	VIEW_CLOCK_SECONDS,	/* S.nnnnnnnnn since the epoch */
	VIEW_CLOCK_CYCLES,	/* raw clock value */
};

struct view_layout;
struct ra_symbols;

struct view_printer {
	struct fmt_out *out;		/* borrowed */
	struct view_layout *layouts;	/* owned: per view_class, built on first use */
	size_t nr_layouts;
	bool json;
	struct fmt_clock clock;
	enum view_clock_mode clock_mode;
	bool delta;			/* (+S.nnnnnnnnn) since the previous event */
	bool color;
	bool with_source;		/* several traces: say which */
	bool plain;			/* no per-class caches of text: every
					 * value decoded and formatted (what
					 * tests compare the caches with) */
	/* The `ip` context's symbols (analysis.h), NULL: raw addresses;
	 * the trace (vpid of per-process traces). Borrowed. */
	struct ra_symbols *syms;
	const struct rtr_trace *t;
	bool have_last;
	int64_t last_ns;
	struct fmt_out scratch;		/* a context's text, to cache it
					 * (view_print.c); zeroed until used */
	int64_t ts_sec;			/* JSON "ts": seconds whose digits are cached */
	uint8_t ts_sec_len;
	char ts_sec_text[24];
};

/* 0 or -ENOMEM. The other fields are set by the caller. */
int view_printer_init(struct view_printer *p, size_t nr_classes, bool json);
void view_printer_free(struct view_printer *p);
/* The classes changed (a live trace's new metadata): per-class layouts
 * for nr_classes, rebuilt on first use. 0 or -ENOMEM (p unchanged). */
int view_printer_reset(struct view_printer *p, size_t nr_classes);
/* Write e as a line of text or JSON (per p->json). Out of memory for the
 * per-class layout is reported through p->out->err (-ENOMEM). */
void view_print(struct view_printer *p, const struct view_event *e);

/* ---- statistics (view_stats.c) ---- */

struct view_stats {
	uint64_t events;
	int64_t first_ns, last_ns;
	uint64_t *per_cpu;	/* owned; index = cpu, up to nr_cpu */
	size_t nr_cpu;
	uint64_t unknown_cpu;	/* events whose cpu is UINT32_MAX */
};

/* Count e. 0 or -ENOMEM. */
int view_stats_add(struct view_stats *s, struct view_class *classes,
		   const struct view_event *e);
/* Count every event of t (a directory set not read from yet) at once,
 * through rtr_count, as view_stats_add of each would: 0, -EAGAIN (the set
 * is as opened: count event by event instead), -ENOMEM. */
int view_stats_count(struct view_stats *s, struct view_class *classes, size_t nr,
		     struct rtr_trace *t);
/* Print the tables (streams and traces from t). */
void view_stats_print(FILE *f, const struct view_stats *s,
		      const struct view_class *classes, size_t nr_classes,
		      const struct rtr_trace *t);
void view_stats_free(struct view_stats *s);

/* ---- live (view_live.c) ---- */

struct lv_viewer;

/* `view --live URL`: with a session in the URL, connect and attach (*v
 * and *t to close: rtr_close then view_live_close), SIGINT and SIGTERM
 * then make rtr_next return -EINTR (view_live_stopped); without, print
 * the relay's sessions and return 1. 0, 1, or -errno (error printed). */
int view_live_open(const char *url, struct lv_viewer **v, struct rtr_trace **t);
/* A signal asked to stop. */
bool view_live_stopped(void);
void view_live_close(struct lv_viewer *v);

#endif /* RINGTRACE_CLI_VIEW_H */
