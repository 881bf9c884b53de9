/*
 * kernel_internal.h - what the files of src/kernel share: an event class
 * as the trace writer lays it out (formats.c builds them, trace.c uses
 * them). Same concurrency contract as kernel.h.
 */
#ifndef RINGTRACE_KERNEL_INTERNAL_H
#define RINGTRACE_KERNEL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <ringtrace/ringtrace_types.h>

#include "../common/warn.h"
#include "kernel.h"

/* How a field of the raw record becomes a CTF field. */
enum rtk_field_kind {
	RTK_INT,	/* `size` bytes, copied (little-endian both sides) */
	RTK_STR_ARRAY,	/* char[size]: up to the first NUL, then a NUL */
	RTK_STR_DYN,	/* __data_loc char[]: u32 (len << 16 | offset) */
	RTK_BYTES,	/* any other array: u32 length, then the bytes */
	RTK_BYTES_DYN,	/* __data_loc of anything else */
};

struct rtk_field {
	enum rtk_field_kind kind;
	int offset;		/* in the raw record */
	int size;
	int relative;		/* __rel_loc: offset from the field's end */
};

struct rtk_class {
	int ftrace_id;
	uint32_t ctf_id;
	char *name;			/* CTF name */
	uint32_t nr_fields;
	struct rtk_field *fields;
	struct rt_field_desc *descs;	/* names and CTF types, for the metadata */
	char **names;			/* the descs' names, owned */
	int pid_offset;			/* common_pid, the event context's tid */
};

/* The class of an ftrace type id, or NULL. */
const struct rtk_class *rtk_formats_find(const struct rtk_formats *f, int ftrace_id);
const struct rtk_class *rtk_formats_class(const struct rtk_formats *f, size_t i);

/* The classes from the `from`-th on as the CTF writer takes them (no
 * provider, no log level; stream 0): *ev malloc'ed, *nr of them. 0 or
 * -ENOMEM. */
int rtk_formats_ctf_events(const struct rtk_formats *f, size_t from,
			   struct ctf_event_class **ev, uint32_t *nr);

/* The kernel trace's one stream event context: the emitting thread
 * (common_pid), as LTTng's kernel traces name it. */
#define RTK_CONTEXT_NAME "tid"

#endif /* RINGTRACE_KERNEL_INTERNAL_H */
