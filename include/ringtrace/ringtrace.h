/*
 * ringtrace.h - instrument a program with one line per event.
 *
 *   #include <ringtrace/ringtrace.h>
 *   rt_event(http, request_done, status, code, path, req->path);
 *
 * Arguments after the provider and event names come in pairs: a field name
 * (a bare identifier) and a value whose CTF type is inferred at compile
 * time: signed and unsigned integers of 8 to 64 bits, float, double, bool,
 * strings (char *, NULL is recorded as "(null)"), other pointers (recorded
 * as hexadecimal addresses) and byte sequences through rt_bytes(ptr, len).
 * Up to RT_MAX_FIELDS fields. rt_event_loglevel() gives the event a log
 * level (rt_event uses RT_LOGLEVEL_INFO).
 *
 * Cost: a disabled event is one load and a branch predicted not taken; the
 * value expressions are not evaluated. An enabled event evaluates each value
 * once; one of fixed-size fields is usually recorded by the call site itself,
 * inline, one with strings or byte sequences in one library call. Defining
 * RT_NO_INLINE before including this header keeps call sites small (about
 * 200 bytes less each): they always make the library call. Events register
 * themselves when the code that contains them is loaded (the program, its
 * libraries, and libraries loaded later with dlopen), and unregister when
 * a library is unloaded.
 *
 * The same header and lines (rt_event, rt_printf) in C (C99 and later) and
 * C++ (C++17 and later; ringtrace/internal/cxx.h has what differs).
 *
 * Link with `pkg-config --libs ringtrace`. Safe in signal handlers and in
 * any thread; never blocks, never allocates, never makes a system call.
 * A program built against this header keeps tracing with later versions
 * of the library (RT_ABI_VERSION, ringtrace_types.h).
 *
 * rt_printf(provider, event, "format", args...) records a printf-style
 * event whose formatting is left to the reader (`ringtrace view` shows it
 * as a field `msg`): the format goes once into the trace's metadata, the
 * arguments are recorded as fields arg1, arg2, ... of the types rt_event
 * infers, at rt_event's cost. The format is a string literal (at most
 * RT_PRINTF_FORMAT_MAX bytes), checked against the arguments at compile
 * time as printf's is (-Wformat); at most RT_MAX_FIELDS - 1 arguments.
 *
 * Everything named rt__* or RT__* (and the headers under internal/) is
 * what rt_event expands to: not API, free to change with RT_ABI_VERSION.
 */
#ifndef RINGTRACE_RINGTRACE_H
#define RINGTRACE_RINGTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <ringtrace/internal/fast.h>
#include <ringtrace/ringtrace_pp.h>
#include <ringtrace/ringtrace_types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RT_API __attribute__((visibility("default")))

/* --- internal: the library calls rt_event makes --------------------- */

/* Record an event whose payload (`size` bytes at `payload`) is already
 * serialized (events without strings or byte sequences): what the call
 * site could not record by itself (rt__fast_record below). */
RT_API void rt__record(struct rt_event_desc *ev, const void *payload,
		       size_t size) __attribute__((nonnull(1, 2)));
/* Record an event whose fields are `nr` parts (strings and byte sequences
 * among them), written in order into every buffer that records it: one
 * call, the library serializes. */
RT_API void rt__record_parts(struct rt_event_desc *ev,
			     const struct rt_part *parts, uint32_t nr)
	__attribute__((nonnull(1, 2)));
/* Record a fixed-size event (`size` bytes at `payload`, readable up to
 * `size` rounded up to 4 bytes) without calling the library, when it
 * published a fast site for the call site (ringtrace/internal/fast.h,
 * rt__fast_event); returns 0 when it did not or when the fast path does
 * not apply (nothing was written: call rt__record). Under RT_NO_INLINE
 * it always returns 0 (and the call site has no 32-byte rseq
 * descriptor). */
static inline __attribute__((always_inline)) int
rt__fast_record(struct rt_event_desc *ev, const void *payload, uint32_t size)
{
#if RT__HAVE_FAST_EVENT && !defined(RT_NO_INLINE)
	/* Acquire: pairs with the release store that published the site
	 * (the library's registry): its contents are complete. */
	const struct rt_fast_site *s = __atomic_load_n(&ev->fast, __ATOMIC_ACQUIRE);
	if (!s || size > RT__FAST_PAYLOAD_MAX)
		return 0;
	return rt__fast_event(&s->buf, s->id, payload, size);
#else
	(void)ev;
	(void)payload;
	(void)size;
	return 0;
#endif
}

/* Register/unregister a module's events (called by the constructor below). */
RT_API void rt__register(struct rt_event_desc *const *begin,
			 struct rt_event_desc *const *end);
RT_API void rt__unregister(struct rt_event_desc *const *begin,
			   struct rt_event_desc *const *end);

/* --- type inference ------------------------------------------------- */

/* C++ has its own (ringtrace/internal/cxx.h): templates where C has
 * _Generic, `auto` for __auto_type. */
#ifndef __cplusplus
#define RT__TYPE(x)                                                            \
	_Generic((x),                                                          \
		_Bool: RT_TYPE_BOOL,                                           \
		char: ((char)-1 < 0 ? RT_TYPE_S8 : RT_TYPE_U8),                \
		signed char: RT_TYPE_S8,                                       \
		unsigned char: RT_TYPE_U8,                                     \
		short: RT_TYPE_S16,                                            \
		unsigned short: RT_TYPE_U16,                                   \
		int: RT_TYPE_S32,                                              \
		unsigned int: RT_TYPE_U32,                                     \
		long: (sizeof(long) == 8 ? RT_TYPE_S64 : RT_TYPE_S32),         \
		unsigned long: (sizeof(long) == 8 ? RT_TYPE_U64 : RT_TYPE_U32), \
		long long: RT_TYPE_S64,                                        \
		unsigned long long: RT_TYPE_U64,                               \
		float: RT_TYPE_FLOAT,                                          \
		double: RT_TYPE_DOUBLE,                                        \
		char *: RT_TYPE_STRING,                                        \
		const char *: RT_TYPE_STRING,                                  \
		struct rt_bytes: RT_TYPE_BYTES,                                \
		struct rt__printf_format: RT_TYPE_FORMAT,                      \
		default: RT_TYPE_POINTER)

#define RT__DISPATCH(x, fixed, str, bytes)                                     \
	_Generic((x), char *: str, const char *: str, struct rt_bytes: bytes,  \
		 default: fixed)

/* A value rt_event can record: RT__TYPE's default is only for pointers. */
#define RT__SUPPORTED(v)                                                       \
	(RT__TYPE(v) != RT_TYPE_POINTER || __builtin_classify_type(v) == 5)
#define RT__AUTO __extension__ __auto_type
#endif /* !__cplusplus */

/* rt_printf's first field: one byte, 0 (its type carries the format). */
struct rt__printf_format {
	unsigned char zero;
};

static inline size_t rt__size_fixed(const void *v, size_t n)
{
	(void)v;
	return n;
}

static inline size_t rt__size_str(const void *v, size_t n)
{
	const char *s = *(const char *const *)v;
	(void)n;
	return (s ? strlen(s) : sizeof("(null)") - 1) + 1;
}

static inline size_t rt__size_bytes(const void *v, size_t n)
{
	(void)n;
	return sizeof(uint32_t) + ((const struct rt_bytes *)v)->len;
}

/* Per field: evaluate once, check the type, size it. */
#define RT__DECL(i, name, value)                                               \
	RT__AUTO rt__v##i = (value);                                           \
	RT__STATIC_ASSERT(RT__SUPPORTED(rt__v##i),                             \
			  "rt_event: field '" #name "' has an unsupported type"); \
	const size_t rt__n##i = RT__DISPATCH(rt__v##i, rt__size_fixed,         \
					     rt__size_str, rt__size_bytes)(    \
		&rt__v##i, sizeof(rt__v##i));
#define RT__FIELD(i, name, value) { #name, RT__TYPE(value) },
#define RT__SIZEOF(i, name, value) +sizeof(rt__v##i)
#define RT__VARIABLE(i, name, value)                                           \
	+(RT__TYPE(value) == RT_TYPE_STRING || RT__TYPE(value) == RT_TYPE_BYTES)
#define RT__KIND(x)                                                            \
	RT__DISPATCH(x, RT_PART_FIXED, RT_PART_STRING, RT_PART_BYTES)
/* Sizes past 4 GiB are clamped: such an event is dropped (larger than any
 * sub-buffer), never cut. */
#define RT__PART(i, name, value)                                               \
	{ &rt__v##i, rt__n##i > 0xffffffffu ? 0xffffffffu : (uint32_t)rt__n##i, \
	  RT__KIND(rt__v##i) },
/* Fixed-size fields only (the branch that uses it is dead code for
 * events with strings or sequences). */
#define RT__WRITE(i, name, value)                                              \
	memcpy(rt__p, &rt__v##i, sizeof(rt__v##i));                            \
	rt__p += sizeof(rt__v##i);

/* The section that lists a module's events; its bounds are defined by the
 * linker for each executable and shared object. A C call site puts its
 * descriptor's address there (C++ registers each call site by itself:
 * ringtrace/internal/cxx.h). */
#define RT__SECTION "rt_events"
#ifndef __cplusplus
#define RT__SITE(ev)                                                           \
	static struct rt_event_desc *const rt__evp                             \
		__attribute__((used, section(RT__SECTION),                     \
			       aligned(sizeof(void *)))) = &ev;
#endif

/* Misuses of rt_event that must fail to compile with one message saying
 * why: a provider or event given as a string (pasting it to an
 * identifier is the error; the result is only stringified, so nothing
 * else fails), an odd number of field arguments. */
#define RT__CHECK_ARGS(provider, event, ...)                                   \
	RT__STATIC_ASSERT(RT__COUNT(__VA_ARGS__) % 2 == 1,                     \
			  "rt_event: fields come in name, value pairs: "       \
			  "rt_event(provider, event, name1, value1, ...)");    \
	(void)sizeof(RT__STR(RT__CAT_(rt_event_provider_must_be_an_identifier_, \
				      provider)));                             \
	(void)sizeof(RT__STR(RT__CAT_(rt_event_event_must_be_an_identifier_,   \
				      event)));

/* The arguments end with a sentinel, so that the field arguments are
 * never empty, which ISO C and C++ require of a variadic macro
 * (ringtrace_pp.h): rt_event(app, ev) compiles with -std=c11 or c++17
 * -pedantic, and needs no GNU ', ##'. */
#define rt_event_loglevel(...) RT__EVENT(__VA_ARGS__, rt__end)
#define rt_event(...) RT__EVENT(RT_LOGLEVEL_INFO, __VA_ARGS__, rt__end)

#define RT__EVENT(level, provider, event, ...)                                 \
	do {                                                                   \
		RT__CHECK_ARGS(provider, event, __VA_ARGS__)                   \
		static const struct rt_field_desc rt__fields[] = {             \
			RT__PAIRS(RT__FIELD, __VA_ARGS__){ NULL, 0 }           \
		};                                                             \
		static struct rt_event_desc rt__ev = {                         \
			0, RT_ABI_VERSION, #provider, #event, (level),         \
			(uint32_t)(sizeof(rt__fields) / sizeof(rt__fields[0]) - 1), \
			rt__fields, __FILE__, __LINE__, NULL, NULL             \
		};                                                             \
		RT__SITE(rt__ev)                                               \
		if (__builtin_expect(__atomic_load_n(&rt__ev.enabled,          \
						     __ATOMIC_RELAXED), 0)) {  \
			RT__PAIRS(RT__DECL, __VA_ARGS__)                       \
			if (!(0 RT__PAIRS(RT__VARIABLE, __VA_ARGS__))) {       \
				/* Fixed-size fields only: serialize on the    \
				 * stack, record inline or with one call. */   \
				/* Rounded up to 4 bytes, as rt__fast_record   \
				 * reads it; the first byte set for events     \
				 * without fields (the first field overwrites  \
				 * it: no store remains). */                   \
				char rt__b[(4 RT__PAIRS(RT__SIZEOF, __VA_ARGS__)) & ~3]; \
				char *rt__p = rt__b;                           \
				rt__b[0] = 0;                                  \
				RT__PAIRS(RT__WRITE, __VA_ARGS__)              \
				if (!rt__fast_record(&rt__ev, rt__b,           \
						     (uint32_t)(rt__p - rt__b))) \
					rt__record(&rt__ev, rt__b,             \
						   (size_t)(rt__p - rt__b));   \
			} else {                                               \
				/* Strings or sequences: the library copies    \
				 * each field once it knows where (the last    \
				 * entry only keeps the array non-empty). */   \
				const struct rt_part rt__parts[] = {           \
					RT__PAIRS(RT__PART, __VA_ARGS__)       \
					{ NULL, 0, 0 }                         \
				};                                             \
				rt__record_parts(&rt__ev, rt__parts,           \
						 (uint32_t)(sizeof(rt__parts) / \
							    sizeof(rt__parts[0]) - 1)); \
			}                                                      \
		}                                                              \
	} while (0)

/* Never called: lets the compiler check rt_printf's arguments against
 * its format (-Wformat). */
static inline __attribute__((format(printf, 1, 2), unused)) void
rt__printf_check(const char *fmt, ...)
{
	(void)fmt;
}

/* rt_printf's first field's value: a compound literal in C, a braced
 * initializer in C++ (which has no compound literal); both constants. */
#ifdef __cplusplus
#define RT__PRINTF_FORMAT_VALUE (rt__printf_format{ 0 })
#else
#define RT__PRINTF_FORMAT_VALUE ((struct rt__printf_format){ 0 })
#endif

/* rt_event with the format as a first field whose name is the literal
 * (RT_TYPE_FORMAT) and the arguments as fields arg1, arg2, ... The
 * arguments end with rt_event's sentinel (ringtrace_pp.h). */
#define rt_printf_loglevel(level, provider, ...)                               \
	RT__PRINTF(level, provider, __VA_ARGS__, rt__end)
#define RT__PRINTF(level, provider, event, fmt, ...)                           \
	do {                                                                   \
		RT__STATIC_ASSERT(sizeof("" fmt "") <= RT_PRINTF_FORMAT_MAX + 1, \
				  "rt_printf: the format is a string literal " \
				  "of at most 255 bytes");                     \
		RT__STATIC_ASSERT(RT__COUNT(__VA_ARGS__) <= RT_MAX_FIELDS,     \
				  "rt_printf: at most 31 arguments");          \
		if (0)                                                         \
			rt__printf_check(fmt RT__UNTIL_END(__VA_ARGS__));      \
		RT__EVENT_EXPANDED(level, provider, event, fmt,                \
				   RT__PRINTF_FORMAT_VALUE                     \
					   RT__NUMBERED(__VA_ARGS__));         \
	} while (0)
/* rt_event_loglevel with its arguments expanded first (RT__NUMBERED's
 * commas separate arguments). */
#define RT__EVENT_EXPANDED(...) rt_event_loglevel(__VA_ARGS__)

#define rt_printf(...) rt_printf_loglevel(RT_LOGLEVEL_INFO, __VA_ARGS__)

/* Each executable or shared object that includes this header registers
 * the events of its rt_events section once (weak hidden: one copy per
 * module), at load time, and unregisters them at unload. */
extern struct rt_event_desc *const __start_rt_events[]
	__attribute__((weak, visibility("hidden")));
extern struct rt_event_desc *const __stop_rt_events[]
	__attribute__((weak, visibility("hidden")));

/* Keeps the section present (and its bounds defined) in modules that
 * include the header but have no event. */
static struct rt_event_desc *const rt__section_anchor
	__attribute__((used, section(RT__SECTION), aligned(sizeof(void *)))) = NULL;

__attribute__((constructor, weak, visibility("hidden"))) void rt__module_init(void);
__attribute__((constructor, weak, visibility("hidden"))) void rt__module_init(void)
{
	rt__register(__start_rt_events, __stop_rt_events);
}

__attribute__((destructor, weak, visibility("hidden"))) void rt__module_fini(void);
__attribute__((destructor, weak, visibility("hidden"))) void rt__module_fini(void)
{
	rt__unregister(__start_rt_events, __stop_rt_events);
}

#ifdef __cplusplus
}
#include <ringtrace/internal/cxx.h>
#endif

#endif /* RINGTRACE_RINGTRACE_H */
