/*
 * debug_dir.h - the root of separate debug files (the debug information
 * of stripped binaries): /usr/lib/debug, or the directory that
 * RINGTRACE_DEBUG_DIR names. Under it a debug file is found by build id,
 * ROOT/.build-id/NN/REST.debug, or by .gnu_debuglink, ROOT/DIR/NAME for a
 * binary in DIR. Read by the user-space probes' resolver
 * (src/kernel/probe_resolve.c) and the symbolizer (src/analysis/symbols.c).
 *
 * Concurrency: reads the environment; call it where nothing changes the
 * environment (setenv) at the same time.
 */
#ifndef RINGTRACE_COMMON_DEBUG_DIR_H
#define RINGTRACE_COMMON_DEBUG_DIR_H

/* The environment variable, and the root without it. */
#define RT_DEBUG_DIR_ENV "RINGTRACE_DEBUG_DIR"
#define RT_DEBUG_DIR_DEFAULT "/usr/lib/debug"

/* RINGTRACE_DEBUG_DIR when it is set to an absolute path without ':'
 * (libdwfl's search path separator), else RT_DEBUG_DIR_DEFAULT; never
 * NULL, no trailing '/' needed. Any other value of the variable is an
 * error the caller reports: rt_debug_dir_check. */
const char *rt_debug_dir(void);
/* 0 when RINGTRACE_DEBUG_DIR is unset or usable, else -EINVAL. */
int rt_debug_dir_check(void);

#endif /* RINGTRACE_COMMON_DEBUG_DIR_H */
