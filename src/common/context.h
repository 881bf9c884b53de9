/*
 * context.h - the context fields, in one table: what `add-context -t NAME`
 * and RINGTRACE_CONTEXTS name, what each adds to an event record and how
 * it is written there and read back.
 *
 * A buffer's contexts are written by the probe (src/lib/probe.c) right
 * after the event header, in the order they were added, packed and
 * byte-aligned in native byte order; consumers size and check them by
 * their CTF type (ctf_walk_events) and declare them in the metadata's
 * stream event context with the same names and types.
 *
 *   context   CTF type (size)         value, and how the probe reads it
 *   vpid      int32                   getpid(), cached per thread
 *   vtid      int32                   gettid(), cached per thread
 *   procname  string (NUL-terminated) the thread's name (its comm), cached
 *                                     per thread, read again after a rename
 *   cpu_id    uint32                  the CPU of the buffer written
 *   ip        uint64, base 16         the return address of the probe call
 *                                     (RT_TYPE_POINTER: pointers are 64-bit)
 *   prio      int32                   20 + getpriority(), cached per thread
 *   hostname  string (NUL-terminated) uname's nodename, read once per
 *                                     process (registration or start)
 *
 * The numbers (enum rt_context) are also the wire format between the
 * daemon and programs (app_proto.h; session files save the names): a
 * context is only ever added at the end.
 *
 * Concurrency: constant data and pure functions; callable from anywhere,
 * the fast path included (no lock, no system call, no allocation).
 */
#ifndef RINGTRACE_COMMON_CONTEXT_H
#define RINGTRACE_COMMON_CONTEXT_H

#include <stdint.h>

#include <ringtrace/ringtrace_types.h>

/* X(ID, name, CTF type, bytes in the record: 0 for a NUL-terminated
 * string, whose size is the value's). */
#define RT_CONTEXT_TABLE(X)                                     \
	X(VPID, "vpid", RT_TYPE_S32, 4)                         \
	X(VTID, "vtid", RT_TYPE_S32, 4)                         \
	X(PROCNAME, "procname", RT_TYPE_STRING, 0)              \
	X(CPU_ID, "cpu_id", RT_TYPE_U32, 4)                     \
	X(IP, "ip", RT_TYPE_POINTER, 8)                         \
	X(PRIO, "prio", RT_TYPE_S32, 4)                         \
	X(HOSTNAME, "hostname", RT_TYPE_STRING, 0)

#define RT_CONTEXT__ENUM(id, name, type, size) RT_CTX_##id,
enum rt_context {
	RT_CONTEXT_TABLE(RT_CONTEXT__ENUM)
	RT_CTX_COUNT
};
#undef RT_CONTEXT__ENUM

/* Bytes a fixed-size context takes in the record (RT_CTX_SIZE_VPID, ...;
 * 0 for the strings): constants, for the probe's writes. */
#define RT_CONTEXT__SIZE(id, name, type, size) RT_CTX_SIZE_##id = size,
enum {
	RT_CONTEXT_TABLE(RT_CONTEXT__SIZE)
};
#undef RT_CONTEXT__SIZE

/* The names, space-separated ("vpid vtid ... hostname"), for messages. */
extern const char *const rt_context_names;

/* Context `ctx` (enum rt_context): its name as on the command line and in
 * the CTF ("vtid"), NULL for an unknown one; its CTF field type (enum
 * rt_field_type), 0 for an unknown one; the bytes it takes in a record,
 * 0 for a string or an unknown one. */
const char *rt_context_name(unsigned ctx);
uint32_t rt_context_type(unsigned ctx);
uint32_t rt_context_size(unsigned ctx);
/* The context named `name` (enum rt_context) or -EINVAL. */
int rt_context_by_name(const char *name);

#endif /* RINGTRACE_COMMON_CONTEXT_H */
