/*
 * daemon_client.h - libringtrace's side of ringtraced (daemon mode): the
 * buffer sets the daemon hands over, the per-event-class target tables
 * the probe writes through, and the client's entry points.
 *
 * Pieces: daemon_client.c (connection, registration, listener thread,
 * fork and exit), daemon_targets.c (buffer sets, enable tables, building
 * and publishing target tables), probe.c (writes through them).
 *
 * Concurrency contract:
 *  - A class's `targets` pointer is published with a release store by
 *    the thread that holds rt_registry_lock and loaded with acquire by
 *    probes. A table, and every buffer set it points to, is never freed
 *    while the process runs (a probe may still use it): replaced tables
 *    go to a retired list whose total size is bounded (past the bound the
 *    client disconnects and stops tracing rather than grow).
 *  - A lost connection (daemon killed, restarted, bad message) ends a
 *    generation: its buffer sets are no longer written (targets
 *    dropped), and neither are those of a destroyed session
 *    (DISABLE_SESSION). Such a buffer set stays mapped until a grace
 *    period (epoch.h) says that no probe which loaded a table naming it
 *    is still inside its event; the listener then unmaps it
 *    (rt_targets_reclaim: call sites' fast sites closed first, the
 *    control area's pages kept as private memory). A probe still running
 *    on it meanwhile is safe: the memfd pages stay valid while mapped,
 *    whatever became of the daemon; nobody reads what it writes.
 *    rt_targets_may_reconnect() bounds what dead generations keep
 *    (RT_DC_MAX_BUFS, RT_DC_DEAD_MAX: mapped bytes, RT_DC_RETIRED_MAX).
 *  - Filters (an ENABLE's, loaded with rtf_load and bound to their
 *    classes) are never freed either: a filter the next ENABLE repeats
 *    byte for byte is kept, not loaded again, so that resending the same
 *    rules costs nothing; what is loaded counts towards
 *    RT_DC_RETIRED_MAX.
 *  - Buffer sets are created and changed by the listener thread only
 *    (or by the constructor before the listener exists), with
 *    rt_registry_lock held.
 */
#ifndef RINGTRACE_DAEMON_CLIENT_H
#define RINGTRACE_DAEMON_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../proto/app_proto.h"
#include "filter_fetch.h"
#include "rt_internal.h"

/* Buffer sets one process may receive in its lifetime. */
#define RT_DC_MAX_BUFS 256
/* Targets per event (channels of all sessions writing it). */
#define RT_DC_MAX_TARGETS 64
/* Retired target tables and loaded filters kept (bytes) before the
 * client gives up. */
#define RT_DC_RETIRED_MAX (16u << 20)
/* Instructions of the filters of one event of one buffer set, in all
 * (what the probe may run for it): an ENABLE past it is refused. */
#define RT_DC_EVENT_INSNS_MAX (64u << 10)
/* Registrations over the process's life (first + reconnections). */
#define RT_DC_MAX_CONNECTIONS 16
/* While dead buffer sets wait for their grace period, the listener
 * tries again this often (milliseconds). */
#define RT_DC_RECLAIM_MS 100
/* Bytes of buffer sets of dead connections kept mapped before the
 * client stops reconnecting. */
#define RT_DC_DEAD_MAX (1ULL << 30)

/* A filter received in an ENABLE (rtf_load'ed, with its bytes to
 * recognize it in the next ENABLE). Owner: daemon_targets.c; never
 * freed (published tables may point to it). */
struct rt_dprog {
	void *bytes;
	uint32_t len;
	struct rtf_program *prog;
};

/* One event's filters in one buffer set (the matching rules' filters:
 * the event is written when one passes), each bound to the event's
 * class (filter_fetch.h). Immutable once made; never freed. */
struct rt_target_filters {
	uint32_t n;
	struct {
		const struct rt_dprog *prog;
		struct rt_filter *bound;
	} f[];
};

/* A buffer set received in RTP_APP_CHANNEL. Owner: daemon_targets.c;
 * the struct lives until the process exits (`ids` is freed when its
 * connection is lost), its mapping until a grace period after it is
 * dead and unpublished (rt_targets_reclaim). */
struct rt_dbuf {
	struct rb rb;			/* first: probes use &dbuf->rb */
	struct ctf_stream_info stream;	/* packet headers (client priv) */
	uint64_t key;
	uint64_t session_id;
	uint8_t ctx[RTP_APP_MAX_CONTEXTS];	/* enum rt_context */
	uint32_t nr_ctx;
	uint32_t ctx_size;		/* rt_ctx_size */
	bool live;			/* false after DISABLE_SESSION */
	uint32_t *ids;			/* by class index: event id + 1, 0 = off */
	uint32_t nr_ids;
	/* By class index: the event's filters, NULL = none (entries of the
	 * last ENABLE; the array is freed with `ids`, not what it points to). */
	struct rt_target_filters **filt;
	uint32_t nr_filt;
	/* The last ENABLE's filters (the array is replaced, not them). */
	struct rt_dprog **progs;
	uint32_t nr_progs;
	void *map;			/* NULL once unmapped */
	size_t map_size;
	/* Dead (!live) and no longer in any table since epoch dead_since
	 * (epoch.h): unmapped once that has passed (rt_targets_reclaim). */
	bool unpublished;
	bool counted_dead;		/* in dead_bytes */
	bool kept;			/* unmapping failed: stays mapped */
	uint64_t dead_since;
};

/* One place an event is written to. */
struct rt_target {
	struct rt_dbuf *buf;
	uint32_t id;			/* CTF event id in that trace/channel */
	uint16_t hdr_compact;
	uint16_t fast_ok;		/* site usable: no contexts, no filter,
					 * rt_fast_site_init */
	/* Written only when one of these passes; NULL: always. */
	const struct rt_target_filters *filters;
	struct rt_fast_site site;	/* for call sites when the only target */
};

/* A class's targets. Immutable once published (but `retired`, set
 * when it is replaced: the list keeps every retired table reachable). */
struct rt_target_set {
	struct rt_target_set *retired;
	uint32_t nr;
	struct rt_target t[];
};

/* Cached context values (set at registration; per thread on first use). */
RT_HIDDEN extern int32_t rt_dc_pid;
RT_HIDDEN extern char rt_dc_procname[RTP_APP_PROCNAME_LEN + 1];
RT_HIDDEN extern uint32_t rt_dc_procname_size;	/* with the NUL */
RT_HIDDEN extern char rt_dc_hostname[RTP_APP_STR_MAX + 1];
RT_HIDDEN extern uint32_t rt_dc_hostname_size;

/* daemon_targets.c, on decoded messages (app_proto.h). Caller holds
 * rt_registry_lock. */
RT_HIDDEN int rt_dbuf_add(const struct rtp_app_channel *m, int memfd, char *err,
			  size_t errlen);
/* rt_dbuf_enable: 0, -EPROTO (unknown buffer set, a filter rtf_load
 * refuses), -E2BIG (an event's filters past RT_DC_EVENT_INSNS_MAX, or
 * what is loaded and kept past RT_DC_RETIRED_MAX) or -ENOMEM, with the
 * message in err. */
RT_HIDDEN int rt_dbuf_enable(const struct rtp_app_enable *en, char *err, size_t errlen);
RT_HIDDEN int rt_dbuf_disable_session(uint64_t session_id);
/* Rebuild and publish every class's target table, then the call sites'
 * enabled flags. Returns 0 or -ENOMEM / -E2BIG (retired bound). */
RT_HIDDEN int rt_targets_publish(void);
/* Stop writing to every buffer set (lost daemon, bad message) and end
 * the generation: keys of a later connection are a new namespace. */
RT_HIDDEN void rt_targets_drop_all(void);
/* Unmap the dead, unpublished buffer sets whose grace period passed,
 * advancing it (epoch.h) if needed; never blocks. Returns whether some
 * still wait (a thread inside an event since before: call again later).
 * The listener thread only. */
RT_HIDDEN bool rt_targets_reclaim(void);
/* Whether a new connection may add buffer sets: fewer than
 * RT_DC_MAX_BUFS so far, dead ones under RT_DC_DEAD_MAX bytes, retired
 * tables under RT_DC_RETIRED_MAX. */
RT_HIDDEN bool rt_targets_may_reconnect(void);
/* Fork child (the library's locks reset, fork.c): end the parent's
 * generation (its buffer sets are not the child's connection's); unless
 * `keep`, drop every target too. With `keep` the classes' tables stay
 * published, so the child goes on recording into its parent's buffer
 * sets (still mapped, shared with the daemon) until the next
 * rt_targets_publish or rt_targets_drop_all. */
RT_HIDDEN void rt_targets_fork_child(bool keep);
/* Context bytes of one list but the thread's name (procname), which the
 * probe sizes per event. Embedded mode's channel uses it too. */
RT_HIDDEN uint32_t rt_ctx_size(const uint8_t *ctx, uint32_t nr);

/* --- event-rule-matches triggers (triggers.c) ------------------------- */

struct rt_filter;
struct rt_fref;
struct rt_filter_event;

/* One trigger on one class: its token (the daemon's), its filter bound
 * to the class (NULL: none) and its captures bound to the class. */
struct rt_trig_use {
	uint64_t token;
	const struct rt_filter *filter;
	const struct rt_fref *captures;
	uint32_t nr_captures;
};

/* A class's triggers (rt_event_class.trigs). Immutable once published
 * (but `retired`, as target tables). */
struct rt_trig_set {
	struct rt_trig_set *retired;
	uint32_t nr;
	struct rt_trig_use u[];
};

/* RTP_APP_TRIGGERS (the cursor at its payload, fd: its descriptor or
 * -1): replace every class's triggers, take the notification ring, and
 * apply the call sites. Caller holds rt_registry_lock. 0, or -EPROTO
 * (malformed, a ring that is not one, a ring missing or repeated),
 * -ENOMEM, -E2BIG (too many changes over the process's life), with err. */
RT_HIDDEN int rt_triggers_apply(struct rtp_app_cursor *c, int fd, char *err, size_t errlen);
/* Forget every trigger and the ring (a lost connection, a fork child).
 * Caller holds rt_registry_lock (or is a fork child alone); the call
 * sites are applied by the caller. */
RT_HIDDEN void rt_triggers_drop_all(void);
/* The probe: event e of a class with triggers s was recorded (or not:
 * no session records it); write a notification for each trigger whose
 * filter passes. No lock, no system call, no allocation, signal-safe. */
RT_HIDDEN void rt_triggers_eval(const struct rt_trig_set *s, const struct rt_filter_event *e);

/* daemon_client.c. */
/* Cache this process's pid, name and host name (rt_dc_*) once per
 * process; embedded mode calls it at its start (the hostname context). */
RT_HIDDEN void rt_dc_cache_identity(void);
/* Called from the library constructor when not in embedded mode. */
RT_HIDDEN void rt_daemon_client_init(void);
/* New classes were registered (rt__register, lock not held): tell the
 * daemon and wait (bounded) for the resulting enablement. */
RT_HIDDEN void rt_daemon_client_new_events(void);

/* Fork handlers' parts (fork.c says the order): outer takes and
 * releases send_lock, inner state_lock; child initializes both and the
 * condition variable anew and resets the connection state (the
 * listener thread is the parent's). */
RT_HIDDEN void rt_daemon_client_fork_prepare_outer(void);
RT_HIDDEN void rt_daemon_client_fork_prepare_inner(void);
RT_HIDDEN void rt_daemon_client_fork_parent_inner(void);
RT_HIDDEN void rt_daemon_client_fork_parent_outer(void);
RT_HIDDEN void rt_daemon_client_fork_child(void);

#endif /* RINGTRACE_DAEMON_CLIENT_H */
