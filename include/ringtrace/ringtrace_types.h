/*
 * ringtrace_types.h - the types shared by instrumented programs and by
 * ringtrace's own tools. Programs include <ringtrace/ringtrace.h>
 * instead. Their API here: the log levels (rt_event_loglevel), rt_bytes
 * and the ABI version numbers. The rest (field types, the static
 * description of a call site, struct rt_part) is what rt_event expands
 * to: part of the call-site ABI, not API.
 */
#ifndef RINGTRACE_TYPES_H
#define RINGTRACE_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The call-site ABI: what a program compiled against these headers shares
 * with the libringtrace it runs against (struct rt_event_desc, the entry
 * points in ringtrace.h and what the inline fast path reads,
 * ringtrace/internal/fast_layout.h). RT_ABI_VERSION is raised whenever
 * one of them changes. The library records the events of call sites built
 * against any version from RT_ABI_OLDEST to RT_ABI_VERSION, translating
 * what differs (src/lib/registry.c):
 *   1    struct rt_event_desc ends at `priv`, which the library never
 *        writes past; events with strings or sequences call rt__reserve
 *        and rt__commit (kept for them, src/lib/probe.c), others
 *        rt__record.
 *   2    the descriptor ends at `priv` too; events call rt__record or
 *        rt__record_parts.
 *   3-5  `fast` exists, but their inline fast path reads an older layout:
 *        the library leaves it NULL, so these call sites always take the
 *        library's path (rt__record), which records the same events.
 *        Some version 3 call sites name rt__fast_commit_slow: it is kept
 *        for them to load (and never called).
 *   6    these headers: the library may publish a fast site.
 * A call site of any other version is refused with a warning (its events
 * are not recorded). A new version keeps every entry point that an
 * accepted version calls; dropping a version raises RT_ABI_OLDEST, and
 * with it libringtrace's SOVERSION (RT_ABI_OLDEST - 1, CMakeLists.txt).
 */
#define RT_ABI_VERSION 6
#define RT_ABI_OLDEST 1
/* The first version whose descriptor has `fast`. */
#define RT_ABI_FAST_FIRST 3

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
	/* rt_printf's format: one byte (0) in the payload, always the first
	 * field; its `name` is the format as the call site's string literal
	 * spells it (the preprocessor's stringizing of it: quotes, escapes,
	 * adjacent literals), which the library decodes once. A library
	 * older than this type refuses such a call site with a warning
	 * (a bad field), as it would any unknown type. */
	RT_TYPE_FORMAT,
};
/* The longest rt_printf format, decoded (bytes, without the NUL). */
#define RT_PRINTF_FORMAT_MAX 255

struct rt_field_desc {
	const char *name;
	uint32_t type;		/* enum rt_field_type */
};

struct rt_fast_site;

/*
 * One per call site, static. `enabled` and `fast` are written by the
 * library (relaxed and release atomic stores) and read at the call site;
 * everything else is constant. `priv` belongs to the library.
 *
 * Part of the call-site ABI; byte by byte on LP64 (the library checks
 * these offsets, src/lib/registry.c):
 *    0  s32     enabled
 *    4  u32     abi         RT_ABI_VERSION of the header it was built with
 *    8  char *  provider
 *   16  char *  name
 *   24  s32     loglevel
 *   28  u32     nr_fields
 *   32  ptr     fields      nr_fields of struct rt_field_desc
 *   40  char *  file
 *   48  u32     line
 *   52  u32     padding
 *   56  ptr     priv
 *   64  ptr     fast        from ABI version 3 (RT_ABI_FAST_FIRST) on;
 *                           versions 1 and 2 end at 64
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
	/* Where the call site may record by itself (ringtrace/internal/fast.h), or
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
