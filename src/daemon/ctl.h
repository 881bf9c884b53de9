/*
 * ctl.h - inside ringtraced's control plane: the model's life cycle
 * (model_alloc.c), the requests of the `ringtrace` command
 * (ctl_requests.c, ctl_rules.c, ctl_report.c, ctl_save.c), the poll loop
 * and connections (ctl_loop.c, ctl_conn.c) and the listening socket
 * (ctl_socket.c).
 *
 * Concurrency: everything here runs on the daemon's main thread; functions
 * touching the model expect rtd_lock to be held (the loop takes it around
 * every callback).
 */
#ifndef RINGTRACE_CTL_H
#define RINGTRACE_CTL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "../proto/proto.h"
#include "../trigger/trigger.h"
#include "rtd.h"

#define CTL_ERRLEN 512

/* Channel defaults (documented in docs/sessions.md). */
#define CTL_DEFAULT_SUBBUF_SIZE (512u * 1024)
#define CTL_DEFAULT_NUM_SUBBUF 4u
#define CTL_DEFAULT_READ_TIMER_MS 100u
#define CTL_DEFAULT_CHANNEL "channel0"
/* Kernel channels: ftrace's buffer per CPU is their product (4 MiB). */
#define CTL_DEFAULT_KERNEL_SUBBUF_SIZE (1024u * 1024)
#define CTL_DEFAULT_KERNEL_NUM_SUBBUF 4u

/* --- ctl_log.c -------------------------------------------------------- */

/* Send stdout and stderr to RUNDIR/ringtraced.log (detached daemon).
 * 0 or -errno (the caller keeps its stderr then). */
int ctl_log_open(void);
/* The log file, or NULL when the daemon logs to the stderr it was started
 * with (foreground). */
const char *ctl_log_path(void);

/* --- model_alloc.c ---------------------------------------------------- */

/* Names of sessions and channels: 1-63 of [A-Za-z0-9_.-], not starting
 * with '.' or '-' (hidden sessions of `ringtrace record` start with '.'
 * and are made by the daemon only). */
bool model_name_ok(const char *name, bool allow_hidden);
struct rtd_session *model_session_find(const char *name);
/* A new session appended to rtd_sessions, or NULL (ENOMEM). */
struct rtd_session *model_session_new(const char *name);
/* Unlink and free (after dp_session_destroy). */
void model_session_free(struct rtd_session *s);
/* The channel `name` of domain d (s->channels or s->kchannels). */
struct rtd_channel *model_channel_find(const struct rtd_session *s, enum rtd_domain d,
				       const char *name);
/* A new channel of domain d with its domain's defaults (overwrite in
 * snapshot sessions). */
struct rtd_channel *model_channel_new(struct rtd_session *s, enum rtd_domain d,
				      const char *name);
/* A new rule at the end of c->rules; excludes and filter (NULL: none)
 * copied. NULL on ENOMEM. */
struct rtd_rule *model_rule_new(struct rtd_channel *c, const char *pattern,
				char *const *excludes, size_t nr_excludes,
				enum rt_level_match lt, int loglevel, bool syscall,
				const char *filter);
/* The session `ringtrace` commands use when -s is omitted (NULL if none). */
extern struct rtd_session *model_current;

/* --- ctl_requests.c: one request, one reply --------------------------- */

/* A validated control payload. */
struct ctl_req {
	const char *p;
	uint32_t len;
	uid_t uid;		/* the peer's (SO_PEERCRED): whose triggers */
};
const char *ctl_get(const struct ctl_req *r, const char *key);

/*
 * Run the request and build the reply payload in `reply` (text for the
 * user under "out", warnings under "warning"). Returns 0 or a negative
 * errno with the message in err.
 */
int ctl_handle(const struct ctl_req *r, struct rtp_kv *reply, char *err, size_t errlen);

/* Handlers, all with the same shape; `out` collects the text printed on
 * the command's stdout. */
typedef int (*ctl_handler)(const struct ctl_req *r, FILE *out, struct rtp_kv *reply,
			   char *err, size_t errlen);
int ctl_create(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err, size_t errlen);
int ctl_destroy(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err, size_t errlen);
int ctl_enable_channel(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err, size_t errlen);
int ctl_enable_event(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err, size_t errlen);
int ctl_disable_event(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err, size_t errlen);
int ctl_add_context(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err, size_t errlen);
int ctl_track(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err, size_t errlen);
int ctl_untrack(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err, size_t errlen);
int ctl_list(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err, size_t errlen);
int ctl_status(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err, size_t errlen);
int ctl_save(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err, size_t errlen);
int ctl_load(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err, size_t errlen);
/* Write " arg=WORD" (percent-encoded as the save format says) to the
 * FILE *out: a trigger's words in a saved configuration. */
void ctl_save_word(const char *word, void *out);

/* The session commands' work, for the requests and for triggers'
 * actions (same checks, same messages):
 *  - ctl_session_start: start an inactive session, both domains.
 *  - ctl_session_stop: stop an active one; stopped even when some of its
 *    trace could not be written (then -errno with the message).
 *  - ctl_session_snapshot: what a snapshot session's buffers hold, in a
 *    new directory under dir (NULL: its output), path in out_path. */
int ctl_session_start(struct rtd_session *s, char *err, size_t errlen);
int ctl_session_stop(struct rtd_session *s, char *err, size_t errlen);
int ctl_session_snapshot(struct rtd_session *s, const char *dir, uint64_t max_size,
			 char *out_path, size_t out_len, char *err, size_t errlen);
/* A snapshot session on a relay: its snapshot sent there as `name` (one
 * path component: a cluster request's). */
int ctl_session_snapshot_relay(struct rtd_session *s, const char *name, char *out_path,
			       size_t out_len, char *err, size_t errlen);

/* Stop the session if active, destroy its data in both domains and free
 * it. 0, or the write errors not reported yet (the first: -errno, with
 * the message in err); the session is destroyed in every case. */
int ctl_session_destroy(struct rtd_session *s, char *err, size_t errlen);
/* The session named by "session", else the current one; err when none. */
struct rtd_session *ctl_session_of(const struct ctl_req *r, char *err, size_t errlen);
/* Parse a decimal number of the request, bounded; "what" names it in err. */
int ctl_get_u64(const struct ctl_req *r, const char *key, uint64_t max, uint64_t *out,
		bool *present, char *err, size_t errlen);
/* A rule/tracking change: tell the data plane; its failure is a warning
 * (the model change stands and applies at the next start). */
void ctl_rules_changed(struct rtd_session *s, struct rtp_kv *reply);

/* --- ctl_rotate.c: session rotation (docs/rotation.md) ---------------- */

/* How often the rotation schedules are checked while some session has
 * one. */
#define CTL_ROTATION_CHECK_MS 100
int ctl_rotate(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err, size_t errlen);
int ctl_enable_rotation(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err, size_t errlen);
int ctl_disable_rotation(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err, size_t errlen);
/* Archive the session's current trace chunk and start the next (for the
 * request and the rotate-session action): its path goes to out_path.
 * Refused (out_path "", nothing done): -EOPNOTSUPP (a snapshot or
 * `record` session, a channel with tracefile limits), -ENODATA (nothing
 * recorded since the last rotation), -ENAMETOOLONG. Otherwise the chunk
 * is archived and the next one begun, and the return is 0 or the first
 * -errno of the traces' writes or of the archive's move, with err. */
int ctl_session_rotate(struct rtd_session *s, char *out_path, size_t out_len, char *err,
		       size_t errlen);
/* The session started: its first chunk's time, a chunk to archive. */
void ctl_rotation_started(struct rtd_session *s);
/* The session is destroyed (its traces closed): a session that was
 * rotated has its last chunk archived too. */
void ctl_rotation_destroyed(struct rtd_session *s);
/* list/status: the schedules and the current chunk. */
void ctl_rotation_describe(FILE *out, const struct rtd_session *s);
/* Bytes the session's traces wrote so far (both domains, every trace). */
uint64_t ctl_session_bytes_written(struct rtd_session *s);
void ctl_rotation_fini(void);

/* --- ctl_triggers.c: the trigger registry (docs/triggers.md) ---------- */

/* A trigger of the registry. Owner: ctl_triggers.c (added by
 * add-trigger or load, freed by remove-trigger or at exit). Triggers
 * belong to a user (owner); they name sessions, which may come and go. */
struct ctl_trigger {
	struct rt_trigger t;		/* t.name always set; t.has_owner false */
	uid_t owner;
	uint64_t fired;			/* times the condition was satisfied */
	bool was_true;			/* polled conditions: at the last poll */
	uint64_t requests[RT_TRIGGER_MAX_ACTIONS];	/* per action (rate policy) */
	uint64_t runs[RT_TRIGGER_MAX_ACTIONS];
	uint64_t errors[RT_TRIGGER_MAX_ACTIONS];
	uint64_t id;			/* unique in the daemon's life: its matches' label */
	struct kdp_trigger *kernel;	/* kernel and syscall event rules: the watch */
	/* event-rule-matches --type=user: the programs' copy of the rule
	 * (linked in rtd_user_triggers while `evaluated`). */
	struct rtd_user_trigger ut;
	bool evaluated;
	void *filter_bytes;		/* ut.filter's (rtf_save) */
	struct ctl_trigger *next;
};
extern struct ctl_trigger *ctl_triggers;	/* in the order added */

/* add-trigger: arg=WORD... (the words after `add-trigger`). list-triggers,
 * remove-trigger: name, owner-uid. */
int ctl_add_trigger(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err, size_t errlen);
int ctl_list_triggers(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err, size_t errlen);
int ctl_remove_trigger(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err, size_t errlen);
/* Whether uid may see and remove the triggers of owner (its own; root:
 * everyone's). */
bool ctl_trigger_visible(uid_t uid, uid_t owner);
/* Remove owner's trigger `name` (a load that failed). */
void ctl_trigger_remove(uid_t owner, const char *name);
/* The save format's add-trigger lines of the triggers uid may see. */
void ctl_triggers_save(FILE *out, uid_t uid);
void ctl_triggers_fini(void);

/* --- ctl_trigger_fire.c: conditions and actions ------------------------ */

/* Watch the conditions the daemon evaluates (buffer usage, consumed
 * size) every CTL_TRIGGER_POLL_MS: the loop's timer, armed while such a
 * trigger exists. 0 or -errno. */
#define CTL_TRIGGER_POLL_MS 100
/* ctl_trigger_timer_init also has the loop take the kernel triggers'
 * matches (dp_kernel_trigger_take) and fire them. */
int ctl_trigger_timer_init(void);
void ctl_trigger_timer_update(void);
void ctl_trigger_timer_fini(void);
/* The condition of t is satisfied: count it and run t's actions in
 * order, as their rate policies say. `values` holds what the condition
 * reports (key=value entries: session, buffer-usage, captures...), for
 * the notify actions. */
void ctl_trigger_fire(struct ctl_trigger *t, const struct rtp_kv *values);

/* --- ctl_trigger_ring.c: user event-rule-matches conditions ------------ */

/* How often the programs' notification rings are read while a user
 * event-rule-matches trigger exists. */
#define CTL_TRIGGER_RING_MS 10
/* Arm or disarm the reading after rtd_user_triggers changed. */
void ctl_trigger_ring_update(void);
void ctl_trigger_ring_fini(void);

/* --- ctl_cluster.c: cluster requests (docs/relay.md) ------------------ */

/* A snapshot session on a relay (created, or loaded) listens to its
 * session's cluster requests: a connection of its own to the relay,
 * watched by the loop, opened again (at most every
 * CTL_CLUSTER_RETRY_MS) when it is lost. Each request is a snapshot
 * sent to the relay under the name the relay gave, then answered.
 * ctl_cluster_forget: before the session's relay connection closes. */
#define CTL_CLUSTER_RETRY_MS 1000
void ctl_cluster_add(struct rtd_session *s);
void ctl_cluster_forget(struct rtd_session *s);
void ctl_cluster_fini(void);
/* A trigger's snapshot-session --cluster action: the relay asked for a
 * snapshot of every host with a session named as s, fired at fired_ns
 * (CLOCK_REALTIME). 0 with the request's id and the hosts asked in n
 * ("cluster-request", "cluster-hosts"), or -errno with the message. */
int ctl_cluster_trigger(struct rtd_session *s, uint64_t fired_ns, struct rtp_kv *n, char *err,
			size_t errlen);

/* --- ctl_notify.c: subscribers of `ringtrace notifications` ------------ */

/* A `notifications` request (trigger=NAME, repeatable, each an existing
 * trigger the peer may see; none: every trigger it may see) on
 * connection c: reply, then keep c to send it the notifications
 * (RTP_CTL_NOTIFICATION frames) of those triggers. 0, or -errno with the
 * message in err (the caller answers and closes c). */
int ctl_notify_subscribe(struct rtd_conn *c, const struct ctl_req *r, char *err,
			 size_t errlen);
/* Send notification n (complete key=value entries) of owner's trigger
 * `name` to every subscriber who may see it and asked for it. */
void ctl_notify_send(uid_t owner, const char *name, const struct rtp_kv *n);

/* --- ctl_io.c ---------------------------------------------------------- */
struct pollfd;
/* One round: apply the deadlines, poll the connections of `only` (NULL:
 * all) and the `extra` descriptors (their revents are filled in, for the
 * caller to handle) at most timeout_ms (-1: until something happens),
 * then read and write what is ready. Unless `locked`, rtd_lock is taken
 * around everything but the poll and the dead connections are reaped.
 * Returns 0 or -errno of poll. */
int ctl_io_round(struct pollfd *extra, size_t nextra, const struct rtd_conn_ops *only,
		 int timeout_ms, bool locked);
/* Close and free every connection (ops->closed(-ESHUTDOWN)). */
void ctl_io_fini(void);

/* --- ctl_loop.c -------------------------------------------------------- */
/* Descriptors watched with a callback (the listening socket): `fn` is
 * called with rtd_lock held when fd is readable or hung up. */
typedef void (*rtd_fd_fn)(int fd, short revents, void *arg);
int rtd_loop_add(int fd, rtd_fd_fn fn, void *arg);
/* Stop watching fd (the caller closes it); a callback may remove its own
 * fd or another's. */
void rtd_loop_del(int fd);
/* A timerfd (CLOCK_MONOTONIC, not armed) watched with fn: its fd, or
 * -errno (timerfd_create, -ENOMEM). The caller closes it at the end. */
int rtd_loop_add_timer(rtd_fd_fn fn, void *arg);
/* Make timerfd `fd` expire every `period_ms` from now (0: never). 0 or
 * -errno of timerfd_settime. */
int rtd_loop_timer_set(int fd, uint32_t period_ms);
/* Stop watching fd for `ms` milliseconds (it stays added). */
void rtd_loop_pause(int fd, int ms);
/* Run until SIGTERM/SIGINT (signal fd `sigfd`); returns 0. */
int ctl_loop_run(int sigfd);
void ctl_loop_fini(void);

/* --- ctl_conn.c -------------------------------------------------------- */
/* The listening socket is readable: accept and watch the new connection. */
void ctl_conn_accept(int lfd, short revents, void *arg);
/* Close the connections that have not said what they are yet and the
 * control connections (not the programs'). */
void ctl_conn_close_all(void);

/* --- ctl_socket.c ------------------------------------------------------ */
/* Create the run dir, take its lock, remove a stale socket, listen, write
 * the pid file. Returns the listening fd or a negative errno (message in
 * err). */
int ctl_socket_open(char *err, size_t errlen);
void ctl_socket_close(int lfd);

#endif /* RINGTRACE_CTL_H */
