/*
 * reader_internal.h - internal to rt_reader. What the metadata compiler
 * (decode_plan.c, on top of the TSDL parser of tsdl.h) hands to the
 * stream decoder (reader_decode.c) and to the trace set (reader.c):
 * clock, env, stream classes and event classes, each scope compiled into a
 * tree of decode nodes.
 *
 * Everything here lives in the metadata's arena (struct rtr_meta.arena),
 * is built once by rtr_meta_parse and read-only afterwards.
 */
#ifndef RINGTRACE_CTF_READER_INTERNAL_H
#define RINGTRACE_CTF_READER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reader.h"

/* Decode node kinds. */
enum rtr_node_kind {
	RN_INT,		/* integer, 1-64 bits, any alignment and byte order */
	RN_ENUM,	/* integer + label */
	RN_FLOAT,	/* 32 or 64-bit IEEE 754 */
	RN_STRING,	/* NUL-terminated, byte-aligned */
	RN_STRUCT,
	RN_VARIANT,	/* one of children[], selected by the tag in ref_slot */
	RN_ARRAY,	/* `length` x children[0] */
	RN_SEQ,		/* slots[ref_slot] x children[0] */
};

/* What a header/context field means to the reader. */
enum rtr_role {
	RR_NONE,
	RR_MAGIC, RR_UUID, RR_STREAM_ID,			/* packet header */
	RR_TS_BEGIN, RR_TS_END, RR_CONTENT_SIZE, RR_PACKET_SIZE,
	RR_SEQ_NUM, RR_DISCARDED, RR_CPU_ID,			/* packet context */
	RR_EVENT_ID, RR_CLOCK,					/* event header */
};

struct rtr_enum_map {
	int64_t lo, hi;		/* inclusive; unsigned containers compare as uint64 */
	const char *label;
	int32_t option;		/* variants tagged by this enum: option index */
};

/*
 * One node per declared field instance (aliases are expanded). Sizes and
 * alignments are in bits.
 */
struct rtr_node {
	uint8_t kind;		/* enum rtr_node_kind */
	uint8_t role;		/* enum rtr_role */
	uint8_t pub;		/* enum rtr_type of its value */
	uint8_t be;		/* big-endian */
	uint8_t is_signed;
	uint8_t base;
	uint8_t plain;		/* static size, no role, no slot below: can be
				 * skipped without decoding */
	uint8_t elem_fixed;	/* arrays/sequences: children[0] is a scalar
				 * with a fixed stride (no per-element record) */
	uint8_t flat;		/* RN_STRUCT of scalars only (scanned in a loop) */
	uint8_t strs;		/* RN_STRUCT of plain scalars and strings only,
				 * no role or slot (rtr_cursor_count steps over
				 * it in a loop) */
	uint8_t nr_runs;	/* strs of whole bytes (its alignment and its
				 * scalars' sizes multiples of 8 bits) with
				 * fewer than RTR_RUNS strings: runs[0..nr_runs)
				 * are the bytes of scalars before each string
				 * and after the last; else 0 */
#define RTR_RUNS 4
	uint32_t runs[RTR_RUNS];
	uint32_t size;		/* scalars */
	uint32_t align;
	int32_t slot;		/* >= 0: its integer value is kept in slot
				 * `slot` (a sequence length or variant tag) */
	int32_t ref_slot;	/* RN_SEQ: length slot; RN_VARIANT: tag slot */
	int64_t static_bits;	/* fixed size, else -1 */
	uint64_t stride;	/* elem_fixed or static_bits >= 0: bits per
				 * element */
	const uint64_t *offs;	/* RN_STRUCT with static_bits >= 0: bit offset
				 * of each member from the structure's start */
	uint64_t length;	/* RN_ARRAY */
	uint32_t nr_children;
	struct rtr_node **children;	/* struct members, variant options,
					 * array/sequence element */
	const char **names;	/* struct members, variant options: as
				 * declared (field paths use these) */
	const char **pnames;	/* the same, one leading '_' stripped (shown) */
	const struct rtr_enum_map *maps;	/* RN_ENUM; RN_VARIANT: the tag's */
	uint32_t nr_maps;
	const char *decl_name;	/* the field's name, for error messages */
};

/*
 * Event header fast path (reader_fast.c): a header that is a structure of
 * integers, optionally ending with a variant of structures of integers
 * selected by one of them (ringtrace's and LTTng's compact/extended
 * headers), has static field offsets once the option is known. A form
 * lists, for one option (or the prefix before the variant), the integers
 * the reader needs (a role or a slot) with their offsets from the
 * header's (aligned) start, and the header's size in bits.
 */
struct rtr_hdr_field {
	uint32_t off;		/* bits from the header's start */
	uint8_t size;		/* 1-64 bits */
	uint8_t be;
	uint8_t is_signed;
	uint8_t role;		/* RR_NONE, RR_EVENT_ID or RR_CLOCK */
	int32_t slot;		/* or -1 */
	uint64_t mask;		/* the low `size` bits */
};

struct rtr_hdr_form {
	uint64_t bits;		/* the header's size with this form */
	uint32_t nr;
	bool word;		/* every field is within the 8 bytes from
				 * its first byte (one load each) */
	uint32_t span;		/* bytes from the header's start that those
				 * loads read */
	struct rtr_hdr_field *f;
};

struct rtr_hdr_fast {
	uint32_t align;		/* the header's alignment (bits, a multiple
				 * of 8: fields keep their offset in a byte) */
	struct rtr_hdr_form prefix;	/* members before the variant */
	const struct rtr_node *variant;	/* NULL: no variant, prefix is all */
	struct rtr_hdr_form *opts;	/* per variant option: the prefix's
					 * fields but the tag, and the option's */
	int32_t tag;		/* the variant's tag: index in prefix.f, or -1
				 * (a slot filled by an earlier scope) */
	bool word;		/* every form's `word` */
	uint32_t span;		/* the largest form span */
	/* The option of each tag value below nr_pick (variant_pick's answer,
	 * -1 none) and the header's size then (its form's bits, 0 when
	 * none), when the tag is an unsigned prefix field of at most 8 bits
	 * with at most 127 options; else nr_pick is 0. */
	const int8_t *pick;
	const uint64_t *pick_bits;
	uint32_t nr_pick;
};

/* Scopes compiled per stream class and per event class. */
struct rtr_stream_class {
	uint64_t id;
	const struct rtr_node *packet_context;	/* NULL if none */
	const struct rtr_node *event_header;
	const struct rtr_hdr_fast *fast_header;	/* NULL: walk event_header */
	const struct rtr_node *event_context;
	/* Its event classes: by_id[id] (indexes into rtr_meta.classes,
	 * UINT32_MAX when absent) for ids below by_id_len, else a binary
	 * search in classes[first, first + count). */
	uint32_t *by_id;
	uint32_t by_id_len;
	uint32_t first, count;
};

struct rtr_class_nodes {
	const struct rtr_node *context;	/* event-specific context or NULL */
	const struct rtr_node *payload;	/* NULL if no fields */
};

struct rtr_arena;

struct rtr_meta {
	struct rtr_arena *arena;	/* everything below lives in it */
	int has_uuid;
	uint8_t uuid[16];
	bool big_endian;		/* trace byte_order */
	const char *clock_name;
	uint64_t freq;
	int64_t offset_s;
	uint64_t offset;
	__int128 ns_base;		/* offset_s and offset in ns */
	bool ns_base64;			/* ns_base fits an int64_t */
	const struct rtr_node *packet_header;	/* NULL if none */
	struct rtr_stream_class *streams;
	size_t nr_streams;
	struct rtr_event_class *classes;	/* sorted by stream_id, id */
	struct rtr_class_nodes *class_nodes;	/* parallel to classes */
	size_t nr_classes;
	struct rtr_env *env;
	size_t nr_env;
	uint32_t nr_slots;
};

/* Parse the metadata text src[0..len) read from `path` and compile it.
 * Returns 0 or -errno (-EINVAL malformed, -ENOTSUP unsupported, -ENOMEM)
 * with a message "path: line L, column C (byte offset O): ..." in err.
 * rtr_meta_free releases *m either way. */
int rtr_meta_parse(const char *path, const char *src, size_t len,
		   struct rtr_meta *m, char *err, size_t errlen);
void rtr_meta_free(struct rtr_meta *m);

/* The fast path of event header n (see struct rtr_hdr_fast), allocated
 * in arena a; NULL when n does not have that shape or on allocation
 * failure (the general walk then decodes it). */
const struct rtr_hdr_fast *rtr_hdr_fast_build(struct rtr_arena *a, const struct rtr_node *n);

/* Index into m->classes of event `id` of stream class sc, or UINT32_MAX. */
static inline uint32_t rtr_meta_find_class(const struct rtr_meta *m,
					   const struct rtr_stream_class *sc, uint64_t id)
{
	if (sc->by_id)
		return id < sc->by_id_len ? sc->by_id[id] : UINT32_MAX;
	size_t lo = sc->first, hi = (size_t)sc->first + sc->count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t v = m->classes[mid].id;
		if (v == id)
			return (uint32_t)mid;
		if (v < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return UINT32_MAX;
}

#endif /* RINGTRACE_CTF_READER_INTERNAL_H */
