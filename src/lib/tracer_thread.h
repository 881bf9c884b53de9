/*
 * tracer_thread.h - rt__tracer_thread: nonzero in the library's own
 * threads (the embedded consumer, the daemon listener), set when each
 * starts and never cleared. Exported for the LD_PRELOAD helpers
 * (src/preload/preload.h), which record no event for what these threads
 * do (their allocations, their locks, through the C library too): not
 * API, thread-local, initial-exec (one load to read).
 */
#ifndef RINGTRACE_LIB_TRACER_THREAD_H
#define RINGTRACE_LIB_TRACER_THREAD_H

extern __thread int rt__tracer_thread
	__attribute__((tls_model("initial-exec"), visibility("default")));

#endif /* RINGTRACE_LIB_TRACER_THREAD_H */
