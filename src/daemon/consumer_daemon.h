/*
 * consumer_daemon.h - the daemon's side of the consumer (not part of
 * dp.h's contract): each dp_trace and dp_bufset described to src/consumer
 * (consumer.h) and read by it.
 *
 * Threading model: one consumer thread per dp_trace (consumer_thread.c).
 * A trace's buffers are read only by its own thread, by
 * consumer_trace_drain, consumer_trace_sync and consumer_snapshot,
 * serialised by the trace's io_lock (ringbuffer.h: one reader per buffer
 * at a time). The thread sleeps on a condition variable until the
 * earliest read or switch timer of its channels, or until woken (metadata
 * change, stop). One thread per trace keeps traces independent (a slow
 * disk for one session never delays another) at the price of one mostly
 * idle thread per per-pid trace.
 */
#ifndef RINGTRACE_CONSUMER_DAEMON_H
#define RINGTRACE_CONSUMER_DAEMON_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "../consumer/consumer.h"
#include "../consumer/consumer_net.h"
#include "dp.h"

/* read_timer_ms == 0: the default read period, the longest the consumer
 * waits between reads when idle; a busy buffer is read as often as every
 * CONS_READ_MIN_NS (rb_read_wait). */
#define CONS_DEFAULT_READ_MS 200u
#define CONS_READ_MIN_NS 1000000ull
#define CONS_CLASS_TABLE_MAX 65536u

/* The consumer's side of a dp_bufset (dp_bufset.consumer). */
struct cons_bufset {
	struct dp_bufset *b;
	struct cons_channel_desc desc;	/* from b->channel */
	bool live;			/* its buffers exist: read */
	struct cons_rb_source rs;
	struct cons_files files;
	struct cons_net_sink net;	/* instead of files: streamed to a relay */
	struct cons_channel ch;
	/* This channel's event classes by id, for checking packets; rebuilt
	 * when the trace's generation changes. Used with t->lock held (the
	 * pointers go into t->events, which the registry may reallocate).
	 * Ids from CONS_CLASS_TABLE_MAX up are searched linearly. */
	const struct dp_event_class **class_by_id;
	uint32_t class_by_id_len;
	uint64_t class_gen;
	bool class_valid;
	uint64_t next_read_ns;		/* consumer thread only */
	uint64_t read_wait_ns;		/* consumer thread only: the read
					 * timer's period now (rb_read_wait);
					 * 0 before the first read */
	uint64_t next_switch_ns;	/* 0: no switch timer */
};

/* The consumer's side of a dp_trace (dp_trace.consumer). */
struct cons_dtrace {
	struct dp_trace *t;
	struct cons_trace_desc desc;	/* .dir: dirs[cur] */
	/* The trace's directory in the current trace chunk and, during a
	 * rotation, in the next one (io_lock). */
	char dirs[2][PATH_MAX];
	unsigned cur;
	struct cons_bufset *sets;	/* [t->nr_bufsets] */
	/* The channels in the metadata (bufsets with a channel), and those
	 * read (live). */
	const struct cons_channel_desc **descs;
	uint32_t nr_descs;
	struct cons_channel **live;
	uint32_t nr_live;
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t io_lock;	/* reading the buffers, the files */
	pthread_mutex_t wake_lock;	/* protects the three below */
	pthread_cond_t wake;
	bool stop;
	bool woken;
	struct cons_metadata_state meta;	/* io_lock */
	struct cons_net_trace *net;	/* io_lock; a session streamed to a
					 * relay: this trace's place there */
	struct cons_errors errors;
};

/* The trace's event classes for the consumer (consumer_classes.c). */
void consumer_classes(struct cons_dtrace *ct, struct cons_classes *cl);
void consumer_classes_free(struct cons_bufset *cb);

#endif /* RINGTRACE_CONSUMER_DAEMON_H */
