/*
 * dp.h - inside ringtraced's data plane: the traces a session writes, the
 * buffer sets programs write into, and the interface between the app
 * registry (app_*.c: programs, their events, buffers, enablement) and the
 * consumers (consumer_*.c: reading buffers, CTF output, metadata,
 * rotation, snapshots, statistics).
 *
 * A session writes one CTF trace per user (per-uid buffers) or per
 * program (per-pid buffers):
 *   OUTPUT/ust/uid/UID/64-bit/         per-uid (LTTng's layout)
 *   OUTPUT/ust/pid/PROCNAME-PID-DATE/  per-pid
 *   OUTPUT/                            `ringtrace record` sessions (flat)
 * OUTPUT being the current trace chunk's directory (rtd_session_chunk:
 * the output itself until the first rotation, ctl_rotate.c).
 * Each holds `metadata` and, per channel and CPU, `CHANNEL_CPU` (with
 * rotation: `CHANNEL_CPU_N`). One stream class per channel (id =
 * rtd_channel.id); event ids are assigned per trace and channel by the
 * app registry, so every program sharing a per-uid buffer uses the same
 * ids.
 *
 * Event layout with contexts: header (ctf_packet.h), then the channel's
 * contexts in rtd_channel.contexts order (CTF stream event context; each
 * packed, byte-aligned, as src/common/context.h's table says;
 * strings NUL-terminated), then the payload.
 *
 * Concurrency: the app registry creates and retires traces and buffer
 * sets on the main thread with rtd_lock held; consumers run in their own
 * threads and take rtd_lock (or the trace's own lock, below) to read what
 * the registry changes.
 */
#ifndef RINGTRACE_DP_H
#define RINGTRACE_DP_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../ctf/ctf_metadata.h"
#include "../ctf/ctf_packet.h"
#include "../ringbuffer/ringbuffer.h"
#include "rtd.h"

/* An event class in one trace and channel. Owner: its dp_trace; lives as
 * long as the trace (metadata keeps describing it). */
struct dp_event_class {
	uint32_t id;			/* per channel */
	uint32_t channel_id;		/* stream class id */
	char *provider;
	char *name;
	int32_t loglevel;
	uint32_t nr_fields;
	struct rt_field_desc *fields;	/* names are owned copies */
};

/* One channel's buffers in one trace. Owner: its dp_trace. A session's
 * per-uid channels are in its per-uid traces and its per-pid channels in
 * its per-pid traces: the entries of the other kind are left empty
 * (channel == NULL, rb not created). */
struct dp_bufset {
	struct dp_trace *trace;
	struct rtd_channel *channel;	/* NULL: not in this trace */
	struct rb rb;			/* created by the registry (rb_create: memfd;
					 * --shm-path: rb_create_in, a file) */
	/* --shm-path: the buffer set's name in the session's shm_path
	 * (NAME.ring, NAME.desc: src/consumer/recovery.h), else "". */
	char shm_name[201];
	struct ctf_stream_info stream;
	void *consumer;			/* the consumer's */
	/* Per-uid sets: the writers' accounts (rb.nr_accts of them,
	 * ringbuffer.h), account k + 1 owned by the program accts[k] names
	 * (NULL: none, per-pid sets). acct_lock: the main thread gives
	 * them out (dp_acct_take), the consumer asks whether an owner is
	 * gone (dp_acct_gone). */
	struct dp_acct *accts;
	pthread_mutex_t acct_lock;
};

/* Who owns a writers' account: pidfd (-1: never given) of the program
 * it was given to, which becomes readable once every thread of it
 * exited. */
struct dp_acct {
	int pidfd;
	pid_t pid;
};

/* Accounts a per-uid buffer set has: the programs writing it at once that
 * each get their own (more share the CPUs' own words, as without). */
#define DP_ACCTS 64u

/* dp_accts.c. dp_accts_init: b->accts for b->rb.nr_accts accounts (0,
 * -ENOMEM). dp_acct_take: an account for program `pid` (main thread):
 * one never given, or one whose owner is gone and whose work is all
 * committed or voided on every CPU; 0 when none (or no pidfd: the
 * program shares the CPUs' words). dp_acct_gone: whether the owner of
 * account `acct` of buffer set `arg` is gone for good (the consumer's
 * rb_void_dead callback; logs the first time it voids). dp_accts_free:
 * closes the pidfds. */
int dp_accts_init(struct dp_bufset *b);
uint32_t dp_acct_take(struct dp_bufset *b, pid_t pid);
bool dp_acct_gone(void *arg, uint32_t acct);
void dp_accts_free(struct dp_bufset *b);

/* One trace directory of a session. Owner: the app registry; freed after
 * consumer_trace_drain and consumer_trace_remove. */
struct cds_lfht;
struct dp_class_node;
struct dp_trace {
	struct rtd_session *session;
	uid_t uid;
	pid_t pid;			/* per-pid traces; 0 for per-uid */
	char procname[17];
	char dir[PATH_MAX];
	uint8_t uuid[16];
	struct ctf_clock_info clock;
	struct dp_bufset *bufsets;	/* [session->nr_channels], by channel id */
	uint32_t nr_bufsets;

	/* The registry's index of `events` (main thread only): each class
	 * by channel and description, and the next id of each channel. */
	struct cds_lfht *class_index;
	unsigned long class_buckets;	/* grown with the classes */
	struct dp_class_node *class_nodes;	/* every node of class_index */
	uint32_t *channel_classes;	/* [nr_bufsets] */

	pthread_mutex_t lock;		/* protects the fields below */
	struct dp_event_class *events;	/* append-only */
	uint32_t nr_events, cap_events;
	uint64_t generation;		/* ++ after each append: the consumer
					 * rewrites the metadata */
	bool app_gone;			/* per-pid: its program exited */
	void *consumer;
	struct dp_trace *next;
};

/*
 * Consumers (consumer_*.c). Every function returns 0 or a negative errno
 * and writes a message into err when it has one.
 *  - consumer_trace_add: start reading the trace's buffers (read and
 *    switch timers of each channel) into trace->dir.
 *  - consumer_trace_drain: flush every CPU of every buffer set and write
 *    all that is committed; returns when it is on disk.
 *  - consumer_trace_sync: flush every CPU of every buffer set and write
 *    what is complete then (no wait for writers; nothing in snapshot
 *    sessions), so that the statistics count every event recorded.
 *  - consumer_trace_error: the trace's write errors (disk full, a stream
 *    file removed, ...): with `take`, the first one since the last take
 *    (a stop or destroy reports each once), else the latest one; 0 when
 *    there is none, else its -errno with a message (what failed, what
 *    was lost, whether writes work again) in msg. Packets that could not
 *    be written are cut off their file and counted as lost, in the trace
 *    (events_discarded) and in consumer_bufset_stats' events_lost.
 *  - consumer_trace_remove: stop reading (after a drain) and forget it.
 *  - consumer_metadata_changed: new event classes; written before any
 *    packet that uses them is. With --shm-path, the buffer sets'
 *    descriptions (recovery.h) are rewritten before it returns, as
 *    consumer_trace_add writes them first.
 *  - consumer_snapshot: write the current content of the trace's buffers
 *    (most recent data, at most max_size bytes for this trace, 0: no
 *    limit) into `dir`, as a complete trace, without stopping tracing.
 *  - consumer_trace_rotate: session rotation: every packet begun before
 *    now is written to the trace's current directory, the metadata made
 *    complete there, and from then on the trace is written in `dir`
 *    (trace->dir becomes it): a new trace chunk (cons_rotate). Streaming
 *    channels only (snapshot sessions do not rotate).
 *  - consumer_bufset_stats: counters of one buffer set, ADDED to *st
 *    (zero it first; summing several sets is how dp_channel_stats gets a
 *    channel's figures). `events` counts the events written to the trace
 *    (0 in snapshot sessions, whose events stay in the buffers).
 * Snapshot sessions call consumer_trace_add too: nothing is read then
 * (only the switch timer runs), but consumer_snapshot and
 * consumer_trace_drain (a flush, there) need it. consumer_snapshot writes
 * `metadata` and `CHANNEL_CPU` files directly in `dir`, which it creates.
 */
int consumer_trace_add(struct dp_trace *t, char *err, size_t errlen);
int consumer_trace_drain(struct dp_trace *t);
int consumer_trace_sync(struct dp_trace *t);
int consumer_trace_error(struct dp_trace *t, bool take, char *msg, size_t len);
void consumer_trace_remove(struct dp_trace *t);
void consumer_metadata_changed(struct dp_trace *t);
int consumer_snapshot(struct dp_trace *t, const char *dir, uint64_t max_size,
		      char *err, size_t errlen);
int consumer_trace_rotate(struct dp_trace *t, const char *dir, char *err, size_t errlen);
int consumer_bufset_stats(const struct dp_bufset *b, struct rtd_channel_stats *st);

#endif /* RINGTRACE_DP_H */
