/*
 * ringtrace_types.h - the types shared by instrumented programs and by
 * ringtrace's own tools: log levels, field types, the static description
 * of a call site. Programs include <ringtrace/ringtrace.h> instead.
 */
#ifndef RINGTRACE_TYPES_H
#define RINGTRACE_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RT_ABI_VERSION 3

/* LTTng's log levels. */
enum rt_loglevel {
	RT_LOGLEVEL_EMERG = 0,
	RT_LOGLEVEL_ALERT = 1,
	RT_LOGLEVEL_CRIT = 2,
	RT_LOGLEVEL_ERR = 3,
	RT_LOGLEVEL_WARNING = 4,
	RT_LOGLEVEL_NOTICE = 5,
	RT_LOGLEVEL_INFO = 6,
	RT_LOGLEVEL_DEBUG_SYSTEM = 7,
	RT_LOGLEVEL_DEBUG_PROGRAM = 8,
	RT_LOGLEVEL_DEBUG_PROCESS = 9,
	RT_LOGLEVEL_DEBUG_MODULE = 10,
	RT_LOGLEVEL_DEBUG_UNIT = 11,
	RT_LOGLEVEL_DEBUG_FUNCTION = 12,
	RT_LOGLEVEL_DEBUG_LINE = 13,
	RT_LOGLEVEL_DEBUG = 14,
};

/* Field types as recorded in the event description. */
enum rt_field_type {
	RT_TYPE_S8 = 1,
	RT_TYPE_U8,
	RT_TYPE_S16,
	RT_TYPE_U16,
	RT_TYPE_S32,
	RT_TYPE_U32,
	RT_TYPE_S64,
	RT_TYPE_U64,
	RT_TYPE_FLOAT,
	RT_TYPE_DOUBLE,
	RT_TYPE_BOOL,
	RT_TYPE_STRING,
	RT_TYPE_POINTER,
	RT_TYPE_BYTES,
};

struct rt_field_desc {
	const char *name;
	uint32_t type;		/* enum rt_field_type */
};

struct rt_fast_site;

/*
 * One per call site, static. `enabled` and `fast` are written by the
 * library (relaxed and release atomic stores) and read at the call site;
 * everything else is constant. `priv` belongs to the library.
 */
struct rt_event_desc {
	int32_t enabled;
	uint32_t abi;			/* RT_ABI_VERSION */
	const char *provider;
	const char *name;
	int32_t loglevel;		/* enum rt_loglevel */
	uint32_t nr_fields;
	const struct rt_field_desc *fields;
	const char *file;		/* call site, for metadata */
	uint32_t line;
	void *priv;
	/* Where the call site may record by itself (ringtrace_fast.h), or
	 * NULL: call the library. Published with release; never freed. */
	const struct rt_fast_site *fast;
};

/* A byte sequence field: rt_bytes(buf, len). */
struct rt_bytes {
	const void *ptr;
	uint32_t len;
};

static inline struct rt_bytes rt_bytes(const void *ptr, size_t len)
{
	struct rt_bytes b = { ptr, len > 0x7fffffffu ? 0x7fffffffu : (uint32_t)len };
	return b;
}

/* How rt__record_parts reads one field (enum rt_part_kind). */
enum rt_part_kind {
	RT_PART_FIXED = 0,		/* `size` bytes at ptr */
	RT_PART_STRING = 1,		/* ptr: a const char * (NULL: "(null)");
					 * its first size - 1 bytes, then NUL */
	RT_PART_BYTES = 2,		/* ptr: a struct rt_bytes; its length
					 * (u32), then size - 4 bytes of it */
};

/* One field of an event with strings or byte sequences, as the call site
 * sized it (rt__record_parts): the library writes exactly `size` bytes
 * for it even if the string or sequence changed since it was sized. */
struct rt_part {
	const void *ptr;
	uint32_t size;			/* bytes in the trace */
	uint32_t kind;			/* enum rt_part_kind */
};

#ifdef __cplusplus
}
#endif

#endif /* RINGTRACE_TYPES_H */
