/*
 * filter_fetch.h - a compiled filter (src/filter, LTTng's language) bound
 * to one event class of this program, evaluated on the event a call site
 * is recording, before anything is written: what session rules' --filter
 * and triggers' event-rule-matches --filter run in the traced program.
 *
 * rt_filter_bind looks up once, per (class, program), where each of the
 * program's references reads: a payload field (its index among the
 * parts of rt__record_parts, its byte offset in rt__record's flat
 * payload) or a context; rt_filter_pass then reads them straight from
 * the call site's arguments, with no lookup by name.
 *
 * What a reference reads:
 *   NAME, $payload.NAME  the payload field NAME: integers (bool: 0/1 with
 *                        the label "false"/"true", as in the trace's
 *                        metadata), float and double, pointers (unsigned),
 *                        strings (the bytes the trace gets: the first
 *                        size - 1 of the string, up to a NUL). A byte
 *                        sequence (rt_bytes) is not comparable: missing.
 *   $ctx.NAME            vpid, vtid, prio (the probe's per-thread caches),
 *                        procname (the thread's name, as the probe records
 *                        it), cpu_id (the CPU the thread runs on now: the
 *                        event may still be written on another if the
 *                        thread migrates before its reservation), ip (the
 *                        call site's address, when the caller gives it),
 *                        hostname; whether or not the channel records them.
 *   anything else        missing ($app contexts, $VAR, an unknown field).
 * A missing reference makes the whole expression false (LTTng's rule,
 * lttng-event-rule(7)): the event is not recorded. A program naming a
 * field the class lacks is bound all the same and rejects every event
 * (unless compiled with RTF_LOCAL_ERRORS, where only the comparison
 * with it is false).
 *
 * Concurrency: binding allocates (listener thread, rt_registry_lock
 * held, or any thread off the fast path); a bound filter is immutable
 * and never freed while a probe may read it (the caller keeps it like a
 * target table, daemon_client.h). rt_filter_pass takes no lock, makes no
 * system call (but the probe's per-thread caches, filled once per thread
 * and per rename, and sched_getcpu when rseq is not registered),
 * allocates nothing and is async-signal-safe.
 */
#ifndef RINGTRACE_LIB_FILTER_FETCH_H
#define RINGTRACE_LIB_FILTER_FETCH_H

#include <stdbool.h>
#include <stdint.h>

#include "../filter/filter.h"
#include "rt_internal.h"

/* Where one reference of a bound program reads. */
enum rt_fref_kind {
	RT_FREF_MISSING,
	RT_FREF_FIELD,		/* payload field `field` of type `type` */
	RT_FREF_CTX,		/* context `type` (enum rt_context) */
	/* Captures only (rt_fref_bind_capture): a byte sequence field */
	RT_FREF_BYTES,		/* whole (rt_fref_bytes) */
	RT_FREF_ELEMENT,	/* its byte `index`, an unsigned integer */
};

struct rt_fref {
	uint8_t kind;		/* enum rt_fref_kind */
	uint8_t type;		/* enum rt_field_type, or enum rt_context */
	uint16_t field;		/* index among the class's fields (parts) */
	uint32_t offset;	/* byte offset in a flat payload (fixed-size
				 * fields before it only; else UINT32_MAX) */
	uint32_t index;		/* RT_FREF_ELEMENT */
};

/* A program bound to a class. `simple`: it is comparisons of references
 * with constants joined by && or by || (rtf_simple), run without the
 * interpreter. */
struct rt_filter {
	const struct rtf_program *prog;	/* not owned */
	bool simple;
	struct rtf_simple s;
	uint32_t nr_refs;
	struct rt_fref refs[];
};

/* The event being recorded, as the call site gave it: `flat` (size
 * bytes, rt__record: fixed-size fields only, packed in order) or
 * `parts` (nr of them, rt__record_parts); ip: the call site's address
 * (0: unknown, $ctx.ip is then missing). */
struct rt_filter_event {
	const char *flat;
	uint64_t size;
	const struct rt_part *parts;
	uint32_t nr;
	uintptr_t ip;
};

/*
 * Bind `prog` (loaded or compiled, kept alive by the caller as long as
 * the result) to class c. Returns 0 and *out (free with free()), or
 * -ENOMEM.
 */
RT_HIDDEN int rt_filter_bind(const struct rt_event_class *c, const struct rtf_program *prog,
			     struct rt_filter **out);

/* One reference bound to class c (what rt_filter_bind does for each of
 * a program's; triggers' --capture descriptors too). */
RT_HIDDEN void rt_fref_bind(const struct rt_event_class *c, const struct rtf_ref *r,
			    struct rt_fref *out);
/* A trigger's --capture descriptor bound to class c: r (the descriptor's
 * name, without its [INDEX]) as rt_fref_bind binds it, but a byte
 * sequence field is RT_FREF_BYTES (whole) or, with an index (has_index),
 * RT_FREF_ELEMENT; an index on anything else is missing (LTTng: not
 * available). */
RT_HIDDEN void rt_fref_bind_capture(const struct rt_event_class *c, const struct rtf_ref *r,
				    bool has_index, uint32_t index, struct rt_fref *out);
/* The bytes of an RT_FREF_BYTES reference in event e (what the trace
 * gets): 0 with *p and *len, or -ENOENT. Same guarantees as
 * rt_filter_pass. */
RT_HIDDEN int rt_fref_bytes(const struct rt_fref *r, const struct rt_filter_event *e,
			    const uint8_t **p, uint32_t *len);
/* The value reference r reads in event e: 0 and *v, or -ENOENT when it
 * is missing. A procname's value points into tname. Same guarantees as
 * rt_filter_pass. */
RT_HIDDEN int rt_fref_fetch(const struct rt_fref *r, const struct rt_filter_event *e,
			    char tname[RT_THREAD_NAME_LEN], struct rtf_value *v);

/* Whether event e of the bound class passes the filter. */
RT_HIDDEN bool rt_filter_pass(const struct rt_filter *f, const struct rt_filter_event *e);

/* The calling thread's cached context values (probe.c, filled on first
 * use like the probe's own): *pid, *tid, *prio; the thread's name into
 * name (NUL-terminated), its length returned. */
RT_HIDDEN void rt_probe_thread_ids(int32_t *pid, int32_t *tid, int32_t *prio);
RT_HIDDEN uint32_t rt_probe_thread_name(char name[RT_THREAD_NAME_LEN]);

#endif /* RINGTRACE_LIB_FILTER_FETCH_H */
