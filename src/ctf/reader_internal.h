/*
 * reader_internal.h - what the metadata parser (reader_metadata.c) hands
 * to the stream decoder (reader.c): clock, stream classes and event
 * classes with their decoding plans.
 */
#ifndef RINGTRACE_CTF_READER_INTERNAL_H
#define RINGTRACE_CTF_READER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "reader.h"

/* Sequence length fields per event class (they are read into a small
 * array on the stack while walking a payload). */
#define RTR_MAX_LEN_SLOTS 64

/* How to step over one payload field. */
enum rtr_op {
	RTR_OP_FIXED,	/* `size` bytes: integer, float, bool */
	RTR_OP_STRING,	/* up to and including a NUL byte */
	RTR_OP_SEQ,	/* bytes; the count is length slot `len_from` */
	RTR_OP_ARRAY,	/* `count` bytes */
};

struct rtr_field_plan {
	uint8_t op;		/* enum rtr_op */
	uint8_t size;		/* RTR_OP_FIXED: 1, 2, 4 or 8 */
	int16_t len_slot;	/* an unsigned RTR_OP_FIXED field that gives a
				 * sequence's length: its slot; else -1 */
	int16_t len_from;	/* RTR_OP_SEQ: slot of its length field */
	uint32_t len_field;	/* RTR_OP_SEQ: index of its length field */
	uint64_t count;		/* RTR_OP_ARRAY */
	int64_t static_off;	/* offset in the payload when every field
				 * before is fixed-size, else -1 */
};

/*
 * One allocation per event class: the plan, then the public field
 * classes, which rtr_event_class.fields points to. rtr_field finds the
 * plan from an event's class with rtr_plan_of.
 */
struct rtr_class_plan {
	const struct rtr_field_plan *plan;	/* nr_fields entries */
	size_t fixed_len;	/* payload size when all_fixed */
	int all_fixed;
	uint32_t nr_fields;
	struct rtr_field_class fields[];
};

static inline const struct rtr_class_plan *
rtr_plan_of(const struct rtr_event_class *cls)
{
	return (const struct rtr_class_plan *)(const void *)
		((const char *)cls->fields - offsetof(struct rtr_class_plan, fields));
}

struct rtr_stream_class {
	uint32_t id;
	/* Event classes of this stream: by_id[id] when by_id is not NULL
	 * (ids below by_id_len), else a binary search in [first, first+count). */
	const struct rtr_event_class **by_id;
	uint32_t by_id_len;
	const struct rtr_event_class *first;
	size_t count;
};

struct rtr_arena;

struct rtr_meta {
	struct rtr_arena *arena;	/* everything below lives in it */
	int has_uuid;
	uint8_t uuid[16];
	const char *clock_name;
	uint64_t freq;
	int64_t offset_s;
	uint64_t offset;
	struct rtr_stream_class *streams;
	size_t nr_streams;
	struct rtr_event_class *classes;	/* sorted by stream_id, id */
	size_t nr_classes;
};

/* Parse the metadata text src[0..len) read from `path`. Returns 0 or
 * -errno with a message "path: line L, column C (byte offset O): ..." in
 * err. rtr_meta_free releases *m either way. */
int rtr_meta_parse(const char *path, const char *src, size_t len,
		   struct rtr_meta *m, char *err, size_t errlen);
void rtr_meta_free(struct rtr_meta *m);

static inline const struct rtr_event_class *
rtr_meta_find_class(const struct rtr_stream_class *sc, uint32_t id)
{
	if (sc->by_id)
		return id < sc->by_id_len ? sc->by_id[id] : NULL;
	size_t lo = 0, hi = sc->count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint32_t v = sc->first[mid].id;
		if (v == id)
			return &sc->first[mid];
		if (v < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

#endif /* RINGTRACE_CTF_READER_INTERNAL_H */
