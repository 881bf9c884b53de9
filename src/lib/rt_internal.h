/*
 * rt_internal.h - libringtrace's internal interfaces (all hidden).
 *
 * Pieces: the registry of events (registry.c), the probe (probe.c), the
 * embedded session with its channel and configuration (session.c), the
 * consumer thread that writes the trace (consumer.c) and the fork
 * handlers (fork.c).
 */
#ifndef RINGTRACE_RT_INTERNAL_H
#define RINGTRACE_RT_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <ringtrace/ringtrace.h>

#include "../ctf/ctf_metadata.h"
#include "../common/context.h"
#include "../ctf/ctf_packet.h"
#include "../ringbuffer/ringbuffer.h"
#include "../common/clock.h"
#include "../common/warn.h"
#include "../common/owned_fd.h"

#define RT_HIDDEN __attribute__((visibility("hidden")))
#define RT_NOINLINE __attribute__((noinline))

/*
 * An event class: one per distinct (provider, name, loglevel, fields);
 * call sites with the same description share it. Owner: the registry;
 * lives until the process exits (metadata keeps describing it after its
 * library is unloaded). Strings are copies.
 */
struct rt_target_set;
struct rt_trig_set;

struct rt_event_class {
	/* What the probe reads at every event first, in one cache line. */
	uint32_t id;			/* CTF event id */
	uint16_t hdr_compact;		/* event header size, compact form */
	/* Daemon mode: where the event is written (daemon_client.h);
	 * published with release under rt_registry_lock, read with
	 * acquire by probes; NULL: nowhere. */
	struct rt_target_set *targets;
	/* Daemon mode: the event-rule-matches triggers evaluated on this
	 * class's events (daemon_client.h), NULL: none; published like
	 * `targets`. */
	struct rt_trig_set *trigs;
	char *provider;
	char *name;
	int32_t loglevel;
	uint32_t nr_fields;
	struct rt_field_desc *fields;	/* names point into field_names */
	char **field_names;
	bool enabled;			/* by the session's rules */
	/* Embedded mode's fast site for its call sites (ringtrace/internal/fast.h):
	 * filled once under rt_registry_lock when the channel first records
	 * the class (site_state 1: usable, 2: not), then constant. */
	struct rt_fast_site site;
	uint8_t site_state;
};

/* Fill *s for event `id` in `rb`; false if call sites cannot record
 * there by themselves (no rseq fast path, a clock other than the TSC,
 * an id too large for the compact header). probe.c. */
RT_HIDDEN bool rt_fast_site_init(struct rt_fast_site *s, const struct rb *rb,
				 uint32_t id);

/* rt_printf's format field's name (the literal as stringized,
 * RT_TYPE_FORMAT) decoded into out[len]: 0, or -EINVAL (not string
 * literals, too long for len, not rtp_app_format_ok). printf_format.c. */
RT_HIDDEN int rt_printf_format_decode(const char *lit, char *out, size_t len);

/* Registry (registry.c). */
RT_HIDDEN extern pthread_mutex_t rt_registry_lock;
/* Incremented (release) after each new event class: the consumer
 * rewrites the metadata when it changes. */
RT_HIDDEN extern uint64_t rt_registry_generation;
/* Snapshot of the classes for the metadata; caller holds the lock. */
RT_HIDDEN size_t rt_registry_classes(struct rt_event_class ***out);
/* Apply the enable rules to every registered call site. */
RT_HIDDEN void rt_registry_apply_rules(void);
/* Recompute every call site's enabled flag; caller holds the lock. */
RT_HIDDEN void rt_registry_apply_sites_locked(void);
/* Disable every call site (stop, fork child). */
RT_HIDDEN void rt_registry_disable_all(void);
/* Fork child with a channel of its own: forget the classes' embedded
 * fast sites (they describe the parent's channel); call sites disabled. */
RT_HIDDEN void rt_registry_fork_child(void);

/* Session configuration, from the environment (session.c). */
struct rt_config {
	char *output;			/* trace directory */
	uint64_t subbuf_size;
	uint32_t num_subbuf;
	bool overwrite;
	uint32_t switch_timer_ms;	/* 0: no periodic flush */
	uint32_t read_timer_ms;		/* the longest wait between reads */
	bool read_timer_set;		/* given: the first read waits that long */
	char **patterns;		/* -e globs on "provider:event"; NULL = all */
	size_t nr_patterns;
	int32_t loglevel_max;		/* record events at this level or more severe */
	bool force_monotonic;
	bool no_rseq;
	uint8_t ctx[RT_CTX_COUNT];	/* contexts recorded with each event */
	uint32_t nr_ctx;
	char *shm_path;			/* buffers in files there (recovery.h),
					 * or NULL: in a memfd */
};

/* The channel events are written to. Owner: the session; lives until
 * the process exits once tracing started (probes may still hold it). */
struct rt_channel {
	struct rb rb;
	struct ctf_stream_info stream;
	char name[32];
	/* Contexts (rt_config's), written after each event header like a
	 * daemon buffer set's (probe.c): constant once tracing started. */
	uint8_t ctx[RT_CTX_COUNT];
	uint32_t nr_ctx;
	uint32_t ctx_size;		/* rt_ctx_size */
	/* This process's slot in the trace and its declarations' file
	 * (trace_dir.h): stream class id = slot. */
	uint32_t slot;
	struct rt_owned_fd fragment;
	struct rt_owned_fd memfd;	/* the buffers' (rb.fd) */
	/* With rt_cfg.shm_path: the buffer set's name there (recovery.h),
	 * "" until created. */
	char shm_name[208];
};

/* The embedded session (session.c). Set once tracing starts (release),
 * read by probes (acquire); NULL when the library is not recording. */
RT_HIDDEN extern struct rt_channel *rt_active_channel;
RT_HIDDEN extern struct rt_config rt_cfg;
RT_HIDDEN bool rt_event_wanted(const struct rt_event_class *c);
/* Stop tracing and write everything out; idempotent, thread-safe. */
RT_HIDDEN void rt_session_stop(void);

/* Consumer (consumer.c). */
RT_HIDDEN int rt_consumer_start(struct rt_channel *ch);
/* Fork child: forget the parent's consumer (its thread does not exist
 * here; its stream files and wake pipe are closed) so that
 * rt_consumer_start can start this process's own. */
RT_HIDDEN void rt_consumer_fork_child(void);
/* Final flush and drain, then the thread ends. Blocks until done. */
RT_HIDDEN void rt_consumer_stop(void);
/* Called from a signal handler: ask the consumer to stop and then
 * re-raise `sig` with its default action. */
RT_HIDDEN void rt_consumer_signal_stop(int sig);
/* New event classes were registered (rt__register, after it released
 * the registry's lock): with --shm-path, the buffers' description is
 * written again at once, so that a program killed before its consumer's
 * next metadata write leaves buffers whose events recover can decode.
 * Any thread but the consumer's. */
RT_HIDDEN void rt_consumer_new_events(void);

/* Thread names (thread_name.c): incremented (release) each time
 * pthread_setname_np set a thread's name. Comm is 16 bytes with the NUL. */
#define RT_THREAD_NAME_LEN 16
RT_HIDDEN extern uint32_t rt_thread_name_gen;

/* State dump (statedump.c, docs/statedump.md). init registers the
 * library's own event classes (the constructor: before the daemon
 * registration, or in embedded mode when the configuration wants them);
 * run (nothing before init) emits the dump (threads, loaded objects)
 * into whatever records those events: the library's own threads, or a
 * thread at its registration or exit, never the fast path; module, from
 * rt__register without rt_registry_lock, emits lttng_ust_dl:dlopen for
 * the object holding `addr` unless a dump listed it (nothing before the
 * process's first dump); thread_named, from pthread_setname_np, the
 * calling thread's new name (after a dump only). */
RT_HIDDEN void rt_statedump_init(void);
RT_HIDDEN void rt_statedump_run(void);
/* Whether this process (not its parent before a fork) has dumped. */
RT_HIDDEN bool rt_statedump_done(void);
RT_HIDDEN void rt_statedump_module(const void *addr);
RT_HIDDEN void rt_statedump_thread_named(const char *name);

/* Fork (fork.c): register the fork handlers; once, from the library
 * constructor, in every mode. */
RT_HIDDEN void rt_fork_init(void);
/* The embedded session's part (session.c): prepare takes its stop lock,
 * parent releases it, child initializes it anew and resets what the
 * parent's consumer thread owned. */
RT_HIDDEN void rt_session_fork_prepare(void);
RT_HIDDEN void rt_session_fork_parent(void);
RT_HIDDEN void rt_session_fork_child(void);
/* The probe's per-thread context cache (probe.c): the forking thread's
 * copy holds the parent's thread id; cleared in the child. */
RT_HIDDEN void rt_probe_fork_child(void);

/* Diagnostics to stderr, prefixed "ringtrace: ". */

#endif /* RINGTRACE_RT_INTERNAL_H */
