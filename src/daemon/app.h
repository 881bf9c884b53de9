/*
 * app.h - inside ringtraced's app registry: the programs connected to
 * the daemon (app_conn.c), the traces and buffer sets the sessions write
 * for them with event-id assignment (app_trace.c), and the session hooks
 * of rtd.h built on both (app_session.c); --shm-path buffer files guarded
 * against truncation (app_shm_guard.c).
 *
 * Concurrency: everything here runs on the daemon's main thread with
 * rtd_lock held (rtd.h); dp_trace.events is appended under the trace's
 * own lock because consumers read it without rtd_lock.
 */
#ifndef RINGTRACE_APP_H
#define RINGTRACE_APP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../proto/app_proto.h"
#include "dp.h"

/* Daemon-side time limit for the messages queued to a program (rtd.h's
 * connections: out_ms); a program that does not read for this long is
 * disconnected. Nobody else waits meanwhile. */
#define APP_SEND_MS 1000
/* Daemon-side limit for the rest of a frame once its first byte came
 * (in_ms). */
#define APP_RECV_MS 1000
/* A daemon command waits this long at most for the programs to apply it. */
#define APP_SYNC_MS 500
/* What one program may register, in all: event classes (the protocol's
 * own limit) and bytes of their descriptions. Past either, its REGISTER
 * (or EVENTS) is refused with -E2BIG and a message in the daemon's log. */
#define APP_EVENTS_PER_PROGRAM RTP_APP_MAX_EVENTS
#define APP_EVENT_BYTES_PER_PROGRAM (16u << 20)

/* One event class of a program. Owner: its app. */
struct app_event {
	uint32_t index;			/* the program's number */
	int32_t loglevel;
	char *provider;
	char *name;
	char *full;			/* "provider:name" */
	uint32_t nr_fields;
	struct rt_field_desc *fields;	/* names owned */
};

/* A buffer set handed to a program (RTP_APP_CHANNEL sent). */
struct app_sent {
	uint64_t key;
	struct dp_bufset *bs;
};

/* A connected program. Owner: app_conn.c; freed when its socket closes. */
struct app {
	struct rtd_conn *conn;		/* NULL once closed */
	pid_t pid;
	uid_t uid;
	char procname[RTP_APP_PROCNAME_LEN + 1];
	struct app_event *events;
	uint32_t nr_events, cap_events;
	uint64_t event_bytes;		/* of the event lists received */
	uint8_t *index_seen;		/* bit per index < RTP_APP_MAX_EVENTS */
	struct app_sent *sent;
	uint32_t nr_sent, cap_sent;
	uint64_t next_key;
	struct app_trig *trig;		/* its notification ring, NULL until the
					 * first TRIGGERS (app_triggers.c) */
	bool sync_wait;			/* app_sync_all: SYNC sent, no reply yet */
	uint64_t sync_cookie;		/* the SYNC's */
	struct app *next;
};

/* Per session (rtd_session.dp). Owner: app_trace.c. */
struct app_session {
	struct dp_trace *traces;	/* linked by dp_trace.next */
	uint32_t nr_snapshots;
	/* Counters of the traces already freed (per-pid traces whose
	 * program exited), by channel id: events, losses and bytes only;
	 * zero past the channels seen so far. */
	struct rtd_channel_stats *gone;
	uint32_t nr_gone;
	/* The first write error of those traces not yet taken by a stop or
	 * destroy (dp_session_errors). */
	int gone_err;
	char gone_msg[RTD_ERRLEN];
};

extern struct app *app_list;

/* --- app_conn.c -------------------------------------------------------- */
/* Queue a message to a program (rtd_conn_send); on failure the program
 * is dropped by the loop later. Returns 0 or -errno. */
int app_send(struct app *a, uint16_t type, int32_t status, const void *p,
	     uint32_t len, int fd);
/* Forget a program: its per-pid traces are drained and removed. */
void app_drop(struct app *a);
/* SYNC every program and wait (at most APP_SYNC_MS in all, serving only
 * the programs' connections) until each has applied what it was sent;
 * programs that fail are dropped by the loop afterwards. */
void app_sync_all(void);
/* The same with STATEDUMP: every program emits its state dump (threads,
 * loaded objects) into its buffers and answers; before a snapshot, so
 * that it names threads and objects whenever it is taken. */
void app_statedump_all(void);

/* --- app_trace.c ------------------------------------------------------- */
/* Make sure the program has the buffers of every channel of the session
 * if it is `active` (the control plane sets s->active only after
 * dp_session_start) and tracks the program, and send its enablement (all
 * of them; none when inactive). */
int app_sync_session(struct app *a, struct rtd_session *s, bool active);
/* Send every buffer set of the session an empty enablement. */
void app_disable_session(struct app *a, const struct rtd_session *s);
/* Drain, remove and free one trace (unlinked from its session). */
void app_trace_free(struct dp_trace *t);
/* --- app_triggers.c ---------------------------------------------------- */
/* Send the program the user triggers it evaluates (its user's, and
 * root's), with its notification ring the first time one applies. */
void app_send_triggers(struct app *a);
/* Unmap the program's ring (it is going away). */
void app_triggers_free(struct app *a);
/* --- app_session.c ----------------------------------------------------- */
/* Add a trace's counters and its write error not yet reported to its
 * session's `gone` (the trace is about to be freed, its consumer has
 * drained it). */
void app_session_keep_stats(struct dp_trace *t);
struct app_session *app_session_of(struct rtd_session *s);
/* The program's buffer sets of session s forgotten (destroy). */
void app_forget_session(struct app *a, const struct rtd_session *s);
/* The clock every program must use (decided once). */
enum rtp_app_clock app_clock_kind(void);
/* Calibrate the clock for the traces' metadata now (waits up to 20 ms
 * the first time). */
void app_clock_prepare(void);
/* The one clock description of every trace the daemon writes, the kernel
 * domain's included (same uuid and calibration: readers merge them). */
void app_clock_info(struct ctf_clock_info *ci);

/* app_shm_guard.c: a --shm-path buffer set's mapping [map, map + size),
 * guarded from its creation to its munmap: a page of it lost to a
 * truncation of its file reads as zeros instead of raising SIGBUS in the
 * daemon. Main thread. */
void app_shm_guard_add(const void *map, size_t size);
void app_shm_guard_remove(const void *map);

#endif /* RINGTRACE_APP_H */
