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
 * once. Events register themselves when the code that contains them is
 * loaded (the program, its libraries, and libraries loaded later with
 * dlopen), and unregister when a library is unloaded.
 *
 * Link with `pkg-config --libs ringtrace`. Safe in signal handlers and in
 * any thread; never blocks, never allocates, never makes a system call.
 */
#ifndef RINGTRACE_RINGTRACE_H
#define RINGTRACE_RINGTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <ringtrace/ringtrace_pp.h>
#include <ringtrace/ringtrace_types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RT_API __attribute__((visibility("default")))

/* Reserve room for `payload_size` bytes in the first buffer that records
 * the event; false if the event is dropped (and counted as lost). */
RT_API bool rt__reserve(struct rt_event_desc *ev, size_t payload_size,
			struct rt_slot *slot);
/* Commit the slot; true if the event must also be written to another
 * buffer, whose slot is then reserved in `slot`. */
RT_API bool rt__commit(struct rt_slot *slot);
/* Record an event whose payload (`size` bytes at `payload`) is already
 * serialized: one call for events without strings or byte sequences. */
RT_API void rt__record(struct rt_event_desc *ev, const void *payload,
		       size_t size);
/* Register/unregister a module's events (called by the constructor below). */
RT_API void rt__register(struct rt_event_desc *const *begin,
			 struct rt_event_desc *const *end);
RT_API void rt__unregister(struct rt_event_desc *const *begin,
			   struct rt_event_desc *const *end);

/* --- type inference ------------------------------------------------- */

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
		default: RT_TYPE_POINTER)

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

static inline char *rt__write_fixed(char *p, const void *v, size_t n)
{
	memcpy(p, v, n);
	return p + n;
}

/* `n` is the size computed before reserving; the string is cut there and
 * terminated even if another thread changed it in between. */
static inline char *rt__write_str(char *p, const void *v, size_t n)
{
	const char *s = *(const char *const *)v;
	if (!s)
		s = "(null)";
	memcpy(p, s, n - 1);
	p[n - 1] = '\0';
	return p + n;
}

static inline char *rt__write_bytes(char *p, const void *v, size_t n)
{
	const struct rt_bytes *b = (const struct rt_bytes *)v;
	memcpy(p, &b->len, sizeof(uint32_t));
	if (b->len)
		memcpy(p + sizeof(uint32_t), b->ptr, b->len);
	return p + n;
}

#define RT__DISPATCH(x, fixed, str, bytes)                                     \
	_Generic((x), char *: str, const char *: str, struct rt_bytes: bytes,  \
		 default: fixed)

/* Per field: evaluate once, check the type, size it. */
#define RT__DECL(i, name, value)                                               \
	__auto_type rt__v##i = (value);                                        \
	_Static_assert(RT__TYPE(rt__v##i) != RT_TYPE_POINTER ||                \
			       __builtin_classify_type(rt__v##i) == 5,         \
		       "rt_event: field '" #name "' has an unsupported type");  \
	const size_t rt__n##i = RT__DISPATCH(rt__v##i, rt__size_fixed,         \
					     rt__size_str, rt__size_bytes)(    \
		&rt__v##i, sizeof(rt__v##i));
#define RT__FIELD(i, name, value) { #name, RT__TYPE(value) },
#define RT__SIZEOF(i, name, value) +sizeof(rt__v##i)
#define RT__VARIABLE(i, name, value)                                           \
	+(RT__TYPE(value) == RT_TYPE_STRING || RT__TYPE(value) == RT_TYPE_BYTES)
#define RT__SIZE(i, name, value) +rt__n##i
#define RT__WRITE(i, name, value)                                              \
	rt__p = RT__DISPATCH(rt__v##i, rt__write_fixed, rt__write_str,         \
			     rt__write_bytes)(rt__p, &rt__v##i, rt__n##i);

/* The section that lists a module's events; its bounds are defined by the
 * linker for each executable and shared object. */
#define RT__SECTION "rt_events"

#define rt_event_loglevel(level, provider, event, ...)                         \
	do {                                                                   \
		static const struct rt_field_desc rt__fields[] = {             \
			RT__PAIRS(RT__FIELD, ##__VA_ARGS__){ NULL, 0 }         \
		};                                                             \
		static struct rt_event_desc rt__ev = {                         \
			0, RT_ABI_VERSION, #provider, #event, (level),         \
			(uint32_t)(sizeof(rt__fields) / sizeof(rt__fields[0]) - 1), \
			rt__fields, __FILE__, __LINE__, NULL                   \
		};                                                             \
		static struct rt_event_desc *const rt__evp                     \
			__attribute__((used, section(RT__SECTION),             \
				       aligned(sizeof(void *)))) = &rt__ev;     \
		if (__builtin_expect(__atomic_load_n(&rt__ev.enabled,          \
						     __ATOMIC_RELAXED), 0)) {  \
			RT__PAIRS(RT__DECL, ##__VA_ARGS__)                     \
			if (!(0 RT__PAIRS(RT__VARIABLE, ##__VA_ARGS__))) {     \
				/* Fixed-size fields only: serialize on the    \
				 * stack, one call. */                         \
				char rt__b[1 RT__PAIRS(RT__SIZEOF, ##__VA_ARGS__)]; \
				char *rt__p = rt__b;                           \
				RT__PAIRS(RT__WRITE, ##__VA_ARGS__)            \
				rt__record(&rt__ev, rt__b,                     \
					   (size_t)(rt__p - rt__b));           \
			} else {                                               \
				struct rt_slot rt__s;                          \
				if (rt__reserve(&rt__ev,                       \
						0 RT__PAIRS(RT__SIZE, ##__VA_ARGS__), \
						&rt__s)) {                     \
					do {                                   \
						char *rt__p = rt__s.p;         \
						RT__PAIRS(RT__WRITE, ##__VA_ARGS__) \
						(void)rt__p;                   \
					} while (rt__commit(&rt__s));          \
				}                                              \
			}                                                      \
		}                                                              \
	} while (0)

#define rt_event(provider, event, ...)                                         \
	rt_event_loglevel(RT_LOGLEVEL_INFO, provider, event, ##__VA_ARGS__)

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
#endif

#endif /* RINGTRACE_RINGTRACE_H */
