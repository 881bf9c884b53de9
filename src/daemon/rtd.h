/*
 * rtd.h - ringtraced's shared model: sessions, channels, event rules,
 * contexts and process tracking, and the interface between the daemon's
 * two halves.
 *
 *  - The control plane (ctl_*.c: main loop, control socket, credentials,
 *    the requests of the `ringtrace` command, save/load) owns this model
 *    and is the only writer of it.
 *  - The data plane (app_*.c, consumer_*.c: registered programs, their
 *    shared-memory buffers, enablement, consumer threads, CTF output,
 *    snapshots) implements the dp_* hooks below and reads the model.
 *
 * Concurrency contract: the daemon's main thread runs one poll loop for
 * every socket (control and app connections), with buffered,
 * non-blocking I/O per connection (below). It holds rtd_lock while it
 * handles a message or calls a dp_* hook; other threads (consumers) take
 * rtd_lock before reading the model. Hooks may block only for bounded
 * times (a hook that waits for programs or consumers, e.g. stop, drops
 * nothing and returns once the data is written; while it waits, only
 * the connections it waits for are served).
 */
#ifndef RINGTRACE_RTD_H
#define RINGTRACE_RTD_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "../common/context.h"
#include "../common/rule.h"
#include "../proto/proto.h"
#include "../trigger/trigger.h"

#define RTD_NAME_MAX 64		/* session and channel names, with NUL */
#define RTD_PATTERN_MAX 256	/* event name globs, with NUL */
#define RTD_FILTER_MAX 1024	/* kernel rules' ftrace filters, with NUL */

extern pthread_mutex_t rtd_lock;

/* The tracing domains of a session: programs' events (user space) and the
 * kernel's, through a private ftrace instance (docs/kernel.md). */
enum rtd_domain {
	RTD_DOMAIN_USER = 0,
	RTD_DOMAIN_KERNEL = 1,
};

enum rtd_buffer_type {
	RTD_BUFFERS_PER_UID = 0,	/* default: one buffer set per user, shared
					 * by all its programs */
	RTD_BUFFERS_PER_PID = 1,	/* one buffer set per program */
};

/* An enable-event rule. Owner: its channel. In the kernel domain the
 * pattern is a glob on "system:event" or "event" (tracepoints) or on the
 * system call's name (syscall), and neither excludes nor log levels
 * apply. */
struct rtd_rule {
	char pattern[RTD_PATTERN_MAX];	/* glob on "provider:event" */
	bool syscall;			/* kernel: a system call rule */
	char *probe;			/* kernel: a user-space probe (elf:/sdt:,
					 * rtk_probe's spec) recorded as event
					 * `pattern` (a name, not a glob); or NULL */
	char *filter;			/* its --filter (LTTng's language), or NULL */
	void *filter_bin;		/* user space: the filter compiled (rtf_save),
					 * as ENABLE sends it to programs */
	uint32_t filter_len;
	char **excludes;		/* globs; nr_excludes entries */
	size_t nr_excludes;
	enum rt_level_match loglevel_type;
	int loglevel;			/* enum rt_loglevel */
	bool enabled;			/* disable-event clears it */
	struct rtd_rule *next;
};

/* A channel of a session. Owner: its session. Immutable once the session
 * has been started, except for `rules` and `enabled` (user space; a
 * kernel channel is wholly fixed at the first start, when its ftrace
 * instance is configured). A kernel channel uses overwrite, subbuf_size
 * and num_subbuf (ftrace's buffer of subbuf_size * num_subbuf bytes per
 * CPU) and read_timer_ms; the rest stays at its defaults. */
struct rtd_channel {
	char name[RTD_NAME_MAX];
	enum rtd_domain domain;
	uint32_t id;			/* CTF stream class id, 0.. in creation order */
	bool overwrite;
	uint64_t subbuf_size;
	uint32_t num_subbuf;
	uint32_t switch_timer_ms;	/* 0: none */
	uint32_t read_timer_ms;
	uint64_t tracefile_size;	/* 0: unlimited */
	uint32_t tracefile_count;	/* 0: unlimited */
	enum rtd_buffer_type buffers;
	bool enabled;
	enum rt_context contexts[RT_CTX_COUNT];
	uint32_t nr_contexts;
	unsigned kcontexts;		/* kernel channel: src/kernel's enum
					 * rtk_context bits (tid: always) */
	struct rtd_rule *rules;
	void *dp;			/* the data plane's, NULL until it sets it */
	struct rtd_channel *next;
};

/* A session's trace chunks (ctl_rotate.c, docs/rotation.md, LTTng's
 * layout): the first is written in the output itself, each later one in
 * OUTPUT/BEGIN-INDEX; a rotation archives the current chunk as
 * OUTPUT/archives/BEGIN-END-INDEX (times as YYYYmmddTHHMMSS+HHMM) and
 * starts the next. Owner: its session (control plane). */
struct rtd_rotation {
	uint64_t timer_us;		/* schedule: every timer_us (0: none) */
	uint64_t size;			/* schedule: once the chunk holds size
					 * bytes written (0: none) */
	uint64_t chunk;			/* the current chunk's index */
	time_t begin;			/* when it began */
	char dir[PATH_MAX];		/* where it is written ("": the output) */
	bool recorded;			/* started since it began: something to
					 * archive */
	uint64_t base_bytes;		/* bytes written before it began */
	int64_t due_ms;			/* the timer's next rotation (rtd_now_ms) */
};

/* A session. Owner: the control plane (created by `create`, freed by
 * `destroy` after dp_session_destroy). */
struct rtd_session {
	char name[RTD_NAME_MAX];
	uint64_t id;			/* unique for the daemon's lifetime */
	char output[PATH_MAX];		/* trace directory ("" in snapshot
					 * sessions without a default output) */
	bool snapshot;			/* --snapshot: buffers stay in memory
					 * (overwrite mode), written by
					 * `snapshot record` */
	bool flat;			/* `ringtrace record`: metadata and
					 * stream files directly in output/ */
	bool active;			/* started */
	bool ever_started;
	uint32_t nr_channels;
	struct rtd_channel *channels;	/* user space */
	struct rtd_channel *kchannels;	/* the kernel domain: at most one
					 * (one ftrace instance per session) */
	bool track_all;			/* no `track` yet: every process */
	pid_t *tracked;			/* when !track_all */
	size_t nr_tracked, cap_tracked;
	bool track_descendants;		/* `ringtrace record`: a process whose
					 * ancestor is tracked is tracked */
	struct rtd_rotation rot;
	void *dp;
	void *kdp;			/* the kernel data plane's */
	/* Streamed to a relay (create --set-url, --ctrl-url/--data-url,
	 * --live): `output` then says where, "net://HOST:CTRL:DATA", and
	 * nothing is written here. */
	bool net;
	char relay_host[256];
	int relay_ctrl_port, relay_data_port;
	uint32_t live_delay_us;		/* --live: the relay's live timer; 0: not live */
	/* --shm-path: the buffers of its programs (per-uid and per-pid) in
	 * files of this directory, with their descriptions, for `ringtrace
	 * recover` after a crash (src/consumer/recovery.h); "": memfds. */
	char shm_path[PATH_MAX];
	uint64_t created;		/* Unix time of `create`: the relay's SESSION-DATE */
	void *relay;			/* the data plane's connection (dp_relay_open) */
	struct rtd_session *next;
};

extern struct rtd_session *rtd_sessions;	/* every session, creation order */

/* An event-rule-matches condition on user events (add-trigger
 * --condition=event-rule-matches --type=user), as the data plane hands
 * it to programs, which evaluate it on their events. Owner: the control
 * plane (ctl_triggers.c), which keeps the list, in the order added, and
 * calls dp_user_triggers_changed after each change. */
struct rtd_user_trigger {
	uint64_t token;			/* unique for the daemon's lifetime, not 0 */
	uid_t owner;			/* evaluated by the programs of this user
					 * (root's: by every program) */
	struct rt_rule rule;		/* which events */
	const void *filter;		/* compiled filter (rtf_save), or NULL */
	uint32_t filter_len;
	const char *const *captures;	/* --capture descriptors, in order */
	uint32_t nr_captures;
	struct rtd_user_trigger *next;
};
extern struct rtd_user_trigger *rtd_user_triggers;

/* Model queries, used by the data plane (caller holds rtd_lock). */
/* Where the session's traces are written now: the current trace chunk's
 * directory (its output until the first rotation). */
const char *rtd_session_chunk(const struct rtd_session *s);
bool rtd_rule_matches(const struct rtd_rule *r, const char *full_name, int loglevel);
/* Some enabled rule of the (enabled) channel matches the event. */
bool rtd_channel_wants(const struct rtd_channel *c, const char *full_name, int loglevel);
/* The channel writes the event it wants whatever its fields: some
 * matching rule has no filter (else the matching rules' filters decide:
 * the event is written when one passes). */
bool rtd_channel_unfiltered(const struct rtd_channel *c, const char *full_name, int loglevel);
/* pid is in the session's tracked list. */
bool rtd_session_lists(const struct rtd_session *s, pid_t pid);
/* The session records process pid: it tracks every process, lists pid,
 * or (track_descendants) lists an ancestor of pid (read from /proc). */
bool rtd_session_tracks(const struct rtd_session *s, pid_t pid);

/*
 * Connections (ctl_io.c): every connected socket of the daemon is a
 * struct rtd_conn, so that no peer can hold the loop. Input is read as it
 * comes into the connection's own buffer and handed over frame by frame
 * (ops->frame); output is queued (rtd_conn_send) and written as the peer
 * takes it. Nothing waits for one peer: each connection has its own
 * deadlines, checked by the loop:
 *  - input: a frame must be whole `in_ms` after its first byte (a new
 *    connection: its first frame within the time given to rtd_conn_new);
 *  - output: what is queued must be taken within `out_ms` of being
 *    queued (the clock restarts whenever a message was taken whole).
 * Memory: a frame may be as long as ops->check allows for its type;
 * the input buffered by all connections together is at most
 * RTD_IO_INPUT_MAX and their queued output RTD_IO_OUTPUT_MAX. Past a
 * limit or a deadline, or when the peer closes or sends a bad frame, the
 * connection is closed: ops->closed says why, once, from the loop (never
 * from within rtd_conn_send or another callback of this connection), and
 * the connection is freed after it. A bad frame (bad header, a type
 * or length `check` refuses, past the input limit) closes it too, after
 * ops->bad_frame's last message if there is one.
 */
#define RTD_IO_INPUT_MAX (64u << 20)
#define RTD_IO_OUTPUT_MAX (256u << 20)

struct rtd_conn;
struct rtp_msg;
struct rtp_kv;
struct ucred;
struct rtd_conn_ops {
	/* Whether a frame of this type and length is taken (before its
	 * payload is read): 0, or -EBADMSG (not a type of this connection),
	 * -EMSGSIZE (too long for its type): the connection is closed. */
	int (*check)(uint16_t type, uint32_t length);
	/* A whole frame: m's payload and the descriptors are the callee's.
	 * Returns 0, or a negative errno to close the connection. */
	int (*frame)(struct rtd_conn *c, struct rtp_msg *m, int *fds, unsigned nfds);
	/* Optional: the peer's input cannot be used any more (why: a bad
	 * header, rtp_reader_read's -EPROTO, -EPROTONOSUPPORT, -EBADMSG or
	 * -EMSGSIZE, or -ENOBUFS past RTD_IO_INPUT_MAX): the owner may queue
	 * a last message (an error reply); the connection is closed once
	 * it was taken. */
	void (*bad_frame)(struct rtd_conn *c, int why);
	/* The connection is closed: why is 0 (rtd_conn_close after its
	 * output was taken), -ECONNRESET (the peer closed), -ETIMEDOUT (a
	 * deadline), -EPROTO, -EPROTONOSUPPORT, -EBADMSG, -EMSGSIZE (a bad
	 * frame), -ENOBUFS (a memory limit), -ESHUTDOWN (the daemon exits)
	 * or another -errno. */
	void (*closed)(struct rtd_conn *c, int why);
};

/* Watch connected socket fd (non-blocking, close-on-exec; the
 * connection owns it). The first frame must be whole within first_ms;
 * output is given out_ms. NULL on ENOMEM (fd closed). */
struct rtd_conn *rtd_conn_new(int fd, const struct ucred *peer,
			      const struct rtd_conn_ops *ops, void *owner, int first_ms,
			      int out_ms);
/* Hand the connection to a new owner with its own deadlines (in_ms,
 * out_ms, as above). */
void rtd_conn_set_ops(struct rtd_conn *c, const struct rtd_conn_ops *ops, void *owner,
		      int in_ms, int out_ms);
void *rtd_conn_owner(const struct rtd_conn *c);
const struct ucred *rtd_conn_peer(const struct rtd_conn *c);
/* Queue a frame (copied; `fd` >= 0 is duplicated and passed with its
 * first byte). Returns 0, or -ENOBUFS/-ENOMEM/-EMFILE/-EPIPE (closing):
 * the connection is then closed by the loop. */
int rtd_conn_send(struct rtd_conn *c, uint16_t type, int32_t status, const void *p,
		  uint32_t len, int fd);
/* Read nothing more; close once the queued output was taken (or at its
 * deadline). ops->closed follows with 0 (or the deadline's -ETIMEDOUT). */
void rtd_conn_close(struct rtd_conn *c);
/* The owner lets go: closed at once, no ops->closed call. */
void rtd_conn_release(struct rtd_conn *c);
/* Closed or closing: nothing more will be read from it. */
bool rtd_conn_closing(const struct rtd_conn *c);
/*
 * Run the connections of `ops` only (read their frames, write their
 * output, apply their deadlines) until done(arg) or `deadline_ms`
 * (CLOCK_MONOTONIC ms): what a request does when it must wait for
 * programs. Other connections wait. Returns once done or at the deadline.
 */
void rtd_conn_pump(const struct rtd_conn_ops *ops, bool (*done)(void *arg), void *arg,
		   int64_t deadline_ms);
/* Close every connection of `ops` (NULL: all) now, ops->closed(-ESHUTDOWN). */
void rtd_conn_close_all(const struct rtd_conn_ops *ops);
/* Monotonic milliseconds, the clock of every deadline here. */
int64_t rtd_now_ms(void);

/*
 * Data-plane hooks. Called by the control plane with rtd_lock held, from
 * the main thread. Each returns 0 or a negative errno and, on failure,
 * writes a message for the user into err[errlen].
 */
/* A program's first frame on a fresh connection was an RTP_APP_* frame:
 * the data plane takes the connection (rtd_conn_set_ops, or
 * rtd_conn_close to refuse it) and the descriptors that came with the
 * frame, and answers it. No byte past the first frame has been read;
 * `first` (and its payload) is freed by the caller after the call. */
void dp_app_connected(struct rtd_conn *c, struct rtp_msg *first, int *fds, unsigned nfds);

/* Room for a data-plane error message. */
#define RTD_ERRLEN 512

int dp_session_start(struct rtd_session *s, char *err, size_t errlen);
/* Disable the session's events in every program, flush, and return once
 * everything recorded before the call is written. The session is stopped
 * even on error: -errno (with err) when some of it could not be written
 * (dp_session_errors). */
int dp_session_stop(struct rtd_session *s, char *err, size_t errlen);
void dp_session_destroy(struct rtd_session *s);
/* Rules, enablement or tracking changed (any session state). */
int dp_session_rules_changed(struct rtd_session *s, char *err, size_t errlen);
/* Write the current content of every buffer of the session as a complete
 * CTF trace in a new directory under `dir` (the session's output when
 * NULL), at most `max_size` bytes (0: no limit) shared equally by its
 * traces and `others` traces the caller writes beside them (the kernel's),
 * newest data kept: *share is each one's limit. The directory's path goes
 * to out_path. */
int dp_snapshot_record(struct rtd_session *s, const char *dir, uint64_t max_size,
		       uint32_t others, uint64_t *share, char *out_path, size_t out_len,
		       char *err, size_t errlen);

/* Session rotation: every trace of the session ends its current trace
 * chunk here (everything recorded before is written in it, complete) and
 * goes on under `root`, with the layout it had under the old chunk's
 * directory (rtd_session_chunk, which the caller changes afterwards);
 * the programs then dump their state into the new chunk. Normal
 * sessions only. 0, or -errno with err (the traces still rotate). */
int dp_session_rotate(struct rtd_session *s, const char *root, char *err, size_t errlen);

struct rtd_channel_stats {
	uint64_t buffer_bytes;		/* allocated, all buffer sets */
	uint64_t used_bytes;		/* reserved and not yet consumed */
	uint64_t events;		/* written to the trace (or, in snapshot
					 * sessions, into the buffers) */
	uint64_t events_lost;
	uint64_t subbufs_lost;		/* overwritten unread, or given up */
	uint64_t packets_corrupt;	/* damaged by a program: dropped */
	uint64_t bytes_written;
	uint32_t nr_buffer_sets;
};
/* A channel's counters, summed over its traces, those already freed
 * (per-pid traces of exited programs) included. */
int dp_channel_stats(const struct rtd_session *s, const struct rtd_channel *c,
		     struct rtd_channel_stats *st);
/* The write errors of the session's traces (disk full, a stream file
 * removed): with `take`, those not reported yet (by a stop or destroy:
 * each is reported once), else the latest. 0, or -errno with the message
 * in err. */
int dp_session_errors(struct rtd_session *s, bool take, char *err, size_t errlen);
/* Write what the session's buffers hold now (a flush, not waiting for
 * writers), so that the counters include every event recorded so far. */
void dp_session_sync(struct rtd_session *s);

/* A registered program's event, for `ringtrace list -u`. */
struct rtd_app_event {
	pid_t pid;
	const char *procname;
	const char *name;		/* "provider:event" */
	int loglevel;
	const char *signature;		/* "field:type,..." */
};
/* Call fn for every event of every registered program, once every
 * program has applied what it was sent (a SYNC, APP_SYNC_MS at most): a
 * program listed records what the active sessions enable, even one that
 * registered a moment ago (its buffers and enablement were queued before
 * its registration reply, the SYNC after them). */
void dp_list_events(void (*fn)(const struct rtd_app_event *e, void *arg), void *arg);

/* The user triggers changed: every program gets its new set. */
void dp_user_triggers_changed(void);
/* Read every program's notification ring (a timer of the control plane
 * calls it while user triggers exist); then, once every ring was read,
 * fn(t, values) for each notification whose trigger still exists, in the
 * order read (fn may run requests that wait for programs: no program is
 * being read then). Values: pid, tid, event-time-ns, capture entries
 * "NAME=VALUE", and lost (notifications the program could not write
 * since its previous one, when some were). Every slot is checked as
 * hostile input; a bad one is refused and logged. */
void dp_user_triggers_read(void (*fn)(struct rtd_user_trigger *t, const struct rtp_kv *values,
				      void *arg),
			   void *arg);

/* A session streamed to a relay (s->net): connect now, authenticated,
 * and open the relay's session, so that create reports what is wrong
 * ("authentication failed: ...", the relay cannot be reached). Later
 * losses of the relay are the consumers' (counted packets, reconnects).
 * dp_relay_close: the relay's session closed, after dp_session_destroy.
 * dp_relay_status: one line about the connection for `status`. */
int dp_relay_open(struct rtd_session *s, char *err, size_t errlen);
/* Send the complete trace directory `local` (a snapshot written there) to
 * the session's relay as `name` (one path component), then remove it
 * here. 0 or -errno with a message in err. */
int dp_relay_upload(struct rtd_session *s, const char *local, const char *name, char *err,
		    size_t errlen);
void dp_relay_close(struct rtd_session *s);
void dp_relay_status(struct rtd_session *s, char *line, size_t len);
/* Cluster requests (docs/relay.md): a new authenticated connection to
 * the session's relay that listens to its session's requests (its
 * socket, or -errno with a message), and a trigger's request for a
 * cluster snapshot fired at fired_ns (CLOCK_REALTIME): 0 with the relay's
 * request *id and the *asked hosts, or -errno with a message. */
int dp_relay_cluster_listen(struct rtd_session *s, char *err, size_t errlen);
int dp_relay_cluster_trigger(struct rtd_session *s, uint64_t fired_ns, uint64_t *id,
			     uint32_t *asked, char *err, size_t errlen);
/* Session rotation on the relay: the ended chunk `chunk` (its directory's
 * name, "" for the first) moved to archives/`name` in the relay's
 * session. 0 and the archive's path in the relay's output in `where`, or
 * -errno with a message in err. */
int dp_relay_archive(struct rtd_session *s, const char *chunk, const char *name, char *where,
		     size_t wlen, char *err, size_t errlen);

/* The daemon is exiting: stop consumers, flush and close everything. */
void dp_shutdown(void);

/*
 * The kernel domain's data plane (kernel_session.c), same conventions as
 * the dp_* hooks. A session with an enabled kernel channel gets a private
 * ftrace instance at its first start (configured from the channel and its
 * enabled rules, which stay fixed from then on) and a reader thread that
 * writes the instance's buffers as CTF under OUTPUT/kernel; snapshot
 * sessions are read only by dp_kernel_snapshot.
 *  - dp_kernel_access: this daemon may use the kernel domain (root, or
 *    write access to tracefs); -EACCES/-ENODEV with one line in err.
 *  - dp_kernel_start / dp_kernel_stop: tracing on (creating the instance
 *    the first time) / off, with everything recorded written (stop
 *    reports the write errors). Sessions without kernel rules: 0.
 *  - dp_kernel_destroy: remove the instance and close the trace.
 *  - dp_kernel_snapshot: what the kernel buffers hold now, as a complete
 *    trace in DIR/kernel (its newest packets within max_size bytes, 0: no
 *    limit), tracing going on; ftrace's reads consume, so a second
 *    snapshot holds the events recorded since the first.
 *  - dp_kernel_rotate: session rotation of the kernel trace, as
 *    dp_session_rotate: what the buffers hold is written to the current
 *    chunk's kernel/, the rest to ROOT/kernel (not started: 0).
 *  - dp_kernel_errors: the kernel trace's first write error not reported
 *    yet (with `take`, reported now: stop takes it), as dp_session_errors.
 *  - dp_kernel_stats: the kernel channel's counters (0 when not started):
 *    buffer_bytes, used_bytes (what the kernel's buffers hold now), and
 *    but in snapshot sessions events, events_lost and bytes_written.
 *  - dp_kernel_rule_matches: a kernel rule's glob matches some tracepoint
 *    (or, syscall, some system call) of this kernel; -ENOENT with one
 *    line in err otherwise.
 *  - dp_kernel_remove_stale: remove the instances of ringtraced
 *    processes that died (kill -9); the number removed or -errno.
 */
int dp_kernel_access(char *err, size_t errlen);
int dp_kernel_start(struct rtd_session *s, char *err, size_t errlen);
int dp_kernel_stop(struct rtd_session *s, char *err, size_t errlen);
void dp_kernel_destroy(struct rtd_session *s);
int dp_kernel_snapshot(struct rtd_session *s, const char *dir, uint64_t max_size, char *err,
		       size_t errlen);
int dp_kernel_rotate(struct rtd_session *s, const char *root, char *err, size_t errlen);
int dp_kernel_errors(struct rtd_session *s, bool take, char *err, size_t errlen);
int dp_kernel_stats(struct rtd_session *s, struct rtd_channel_stats *st);
int dp_kernel_rule_matches(const char *glob, bool syscall, char *err, size_t errlen);
int dp_kernel_remove_stale(void);

/*
 * Event-rule-matches conditions on kernel and system call events
 * (kernel_triggers.c): each in a tracefs instance of its own, with the
 * rule's events and filter (the thread-table events in one instance they
 * share), read by one thread whether or not a session records those
 * events; its matches wait for the main loop.
 *  - dp_kernel_triggers_init: the eventfd that is readable when matches
 *    wait (for the loop), or -errno. dp_kernel_triggers_fini: remove
 *    every instance, stop the reader, drop the matches.
 *  - dp_kernel_trigger_add: the condition c of trigger `name` watched,
 *    its matches labelled `id`; 0 and *out, or -errno (-EINVAL: a $ctx
 *    capture the kernel has not, a filter ftrace cannot express; -ENOENT:
 *    no event matches; -EACCES) with one line in err.
 *  - dp_kernel_trigger_remove: its instance removed (matches of it still
 *    queued keep its id).
 *  - dp_kernel_trigger_lost: the events of its instance lost so far:
 *    overwritten in the kernel's buffer before the daemon read them (as
 *    ftrace counts them: its matches; at least one per page that says
 *    "some" without a number), or matches not queued for want of
 *    memory.
 *  - dp_kernel_trigger_take: the oldest queued match (*id, and *values,
 *    which the caller frees: event, pid, tid, procname, cpu, then a
 *    capture=FIELD=VALUE entry per capture the event has), or false.
 */
struct kdp_trigger;
int dp_kernel_triggers_init(void);
void dp_kernel_triggers_fini(void);
int dp_kernel_trigger_add(uint64_t id, const char *name, const struct rt_trigger_cond *c,
			  struct kdp_trigger **out, char *err, size_t errlen);
void dp_kernel_trigger_remove(struct kdp_trigger *k);
uint64_t dp_kernel_trigger_lost(struct kdp_trigger *k);
bool dp_kernel_trigger_take(uint64_t *id, struct rtp_kv *values);

#endif /* RINGTRACE_RTD_H */
