/*
 * warn.h - warnings on standard error: "PROGRAM: message", one line,
 * written with one write(2) so that lines of several threads or
 * processes sharing the file (the daemon's log) never mix.
 *
 * PROGRAM is "ringtrace" (the library, in traced programs) unless the
 * process set another at start (ringtraced). Lines are cut at
 * RT_WARN_MAX bytes (room for a path and its explanation).
 *
 * Concurrency: rt_warn from any thread, not from the fast path (it makes
 * a system call) nor from a signal handler (vsnprintf). rt_warn_program
 * once, at start, before any thread. rt_errf from any thread.
 */
#ifndef RINGTRACE_COMMON_WARN_H
#define RINGTRACE_COMMON_WARN_H

#include <stdarg.h>
#include <stddef.h>

#define RT_WARN_MAX 4608

/* The program named in front of every message (a string that stays). */
void rt_warn_program(const char *name);
void rt_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void rt_vwarn(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* A message for the caller to show instead of a warning: formatted into
 * err (errlen bytes, cut to fit); nothing when err is NULL or errlen 0. */
void rt_errf(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* RINGTRACE_COMMON_WARN_H */
