/*
 * consumer_internal.h - what the daemon's consumer files share (not part
 * of dp.h's contract).
 *
 * Threading model: one consumer thread per dp_trace (consumer_thread.c).
 * A trace's buffers are read only by its own thread, by
 * consumer_trace_drain and by consumer_snapshot, serialised by the
 * trace's io_lock (ringbuffer.h: one reader per buffer at a time). The
 * thread sleeps on a condition variable until the earliest read or
 * switch timer of its channels, or until woken (metadata change, stop).
 * One thread per trace keeps traces independent (a slow disk for one
 * session never delays another) at the price of one mostly idle thread
 * per per-pid trace.
 *
 * Files (stream.c): `CHANNEL_CPU` per channel and CPU, created
 * on the first packet; with tracefile_size, `CHANNEL_CPU_N` (N = 0, 1,
 * ...), a new file when the next packet would make the current one
 * larger than tracefile_size (a file always holds at least one packet),
 * and with tracefile_count, only the newest `count` files of a stream
 * are kept (the oldest is deleted when a new one opens).
 */
#ifndef RINGTRACE_CONSUMER_INTERNAL_H
#define RINGTRACE_CONSUMER_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "../ctf/ctf_walk.h"
#include "../daemon/dp.h"

#define CONS_HIDDEN __attribute__((visibility("hidden")))

/* read_timer_ms == 0: the default read period, the longest the consumer
 * waits between reads when idle; a busy buffer is read as often as every
 * CONS_READ_MIN_NS (rb_read_wait). */
#define CONS_DEFAULT_READ_MS 200u
#define CONS_READ_MIN_NS 1000000ull
/* A sub-buffer the writers have moved past but that stays incomplete this
 * long is given up (its writer died mid-commit): while tracing, and in a
 * drain (after the final flush). */
#define CONS_STUCK_MS 2000u
#define CONS_DRAIN_STUCK_MS 100u
/* A drain gives up after this (only a stuck writer or a buffer whose
 * program writes on its counters can make it last). */
#define CONS_DRAIN_MAX_MS 3000u
#define CONS_CLASS_TABLE_MAX 65536u

/* What the last packet written to a stream said, so that the next one
 * can be checked against it (cons_packet_check): sequence numbers grow,
 * time and the cumulative discarded count never go back. */
struct cons_packet_prev {
	bool valid;		/* a packet was written */
	uint64_t seq;
	uint64_t ts_end;
	uint64_t discarded;
};

/* One CPU's stream of one buffer set. Owner: its cons_bufset; touched
 * only with the trace's io_lock held. */
struct cons_stream {
	int fd;			/* current file, -1 until the first packet */
	struct ctf_out out;	/* the current file's whole packets, and
				 * the packets that could not be written */
	uint64_t file_index;	/* rotation: N of the current file */
	uint64_t oldest_index;	/* rotation: oldest file still on disk */
	struct rb_stuck stuck;	/* a sub-buffer seen stuck (rb_skip_stuck) */
	struct cons_packet_prev prev;
	/* consumer_trace_drain only: read_count when last seen moving and
	 * when; `done`: consumed, or given up; `pending`: the last final
	 * flush could not finish. */
	uint64_t drain_rcnt;
	uint64_t drain_ns;
	bool drain_done;
	bool drain_pending;
};

/* The consumer's side of a dp_bufset (dp_bufset.consumer). */
struct cons_bufset {
	struct dp_bufset *b;
	struct dp_trace *t;		/* its trace */
	struct cons_stream *streams;	/* [rb.nr_cpus] */
	/* This channel's event classes by id, for counting events; rebuilt
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
	/* Statistics: written under io_lock, read by consumer_bufset_stats
	 * from any thread (relaxed atomics: counters, no ordering). */
	uint64_t packets;
	uint64_t bytes;
	uint64_t events;
	uint64_t subbufs_skipped;	/* given up by a drain (a sub-buffer
					 * whose writer died mid-commit is
					 * counted by rb_skip_stuck, in the
					 * buffer's subbufs_lost) */
	uint64_t packets_corrupt;	/* dropped: cons_packet_check failed */
	uint64_t events_unwritten;	/* in packets that could not be written */
};

/* The consumer's side of a dp_trace (dp_trace.consumer). */
struct cons_trace {
	struct dp_trace *t;
	struct cons_bufset *sets;	/* [t->nr_bufsets] */
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t io_lock;	/* reading the buffers, the files */
	pthread_mutex_t wake_lock;	/* protects the three below */
	pthread_cond_t wake;
	bool stop;
	bool woken;
	uint64_t meta_generation;	/* io_lock: generation in `metadata` */
	uint32_t meta_events;		/* io_lock: classes in `metadata` */
	bool meta_written;		/* io_lock */
	/* Write errors (consumer_trace_error), under err_lock: the first
	 * not yet taken by a stop or destroy, and since the trace was
	 * added, the last one, whether writes fail now, what was lost. */
	pthread_mutex_t err_lock;
	int err_pending;
	char err_pending_what[24];
	int err_last;
	char err_last_what[24];
	bool err_failing;
	uint64_t err_packets;
	uint64_t err_events;
	char *copy;			/* io_lock: a packet's private copy */
	uint64_t copy_size;		/* the largest sub-buffer of the trace */
};

/* Monotonic time in ns. */
CONS_HIDDEN uint64_t cons_now_ns(void);

/* Whether a bufset has buffers to read (the registry created them). */
CONS_HIDDEN bool cons_bufset_live(const struct dp_bufset *b);

/* Build the metadata of `t` (every channel, every event class, env,
 * clock); *generation receives the generation it describes. 0 or -errno. */
CONS_HIDDEN int cons_metadata_build(struct dp_trace *t, struct ctf_buf *out,
				    uint64_t *generation);
/* Write trace->dir/metadata whole (`force`, or never written yet), else
 * append the event classes added since the last write. Caller holds
 * io_lock. 0 or -errno. */
CONS_HIDDEN int cons_metadata_update(struct cons_trace *ct, bool force);

/*
 * Copy the packet at `shared` (a sub-buffer of `size` bytes the programs
 * can still write) into `copy` (`size` bytes, private), check it against
 * what the consumer knows (packet.c) and trim it to its content
 * (`copy` may be `shared` when that is a private copy already):
 * magic, the trace's uuid, the set's stream id, the CPU (stream instance
 * and cpu_id), content size within the sub-buffer, packet_seq_num equal to
 * `seq` and above the previous packet's, timestamps that never go back
 * (begin <= every event <= end, begin >= the previous packet's end), a
 * discarded count that never decreases nor exceeds the CPU's lost count
 * (Relaxed load: a statistic), and events that decode with the
 * trace's event classes up to exactly the content's end. Takes t->lock.
 * On success the packet is the stream's new `prev`, *len is the bytes to
 * write (content rounded up to 8, padding zeroed, packet_size set) and
 * *events its events. Returns 0 or -EBADMSG (a damaged packet: drop it).
 */
CONS_HIDDEN int cons_packet_check(struct cons_bufset *cb, uint32_t cpu,
				  struct cons_packet_prev *prev, const char *shared,
				  char *copy, uint64_t size, uint64_t seq,
				  uint64_t *len, uint64_t *events);

/* Append a packet of `len` bytes (`events` events) to the CPU's stream
 * in `dir`, rotating files as the channel says; if it cannot be written,
 * it is accounted as lost (ctf_out). Caller holds io_lock. 0 or -errno
 * (-ENOENT: the stream file was removed under us). */
CONS_HIDDEN int cons_stream_write(const char *dir, const struct rtd_channel *ch,
				  uint32_t cpu, struct cons_stream *s,
				  char *data, uint64_t len, uint64_t events);
CONS_HIDDEN void cons_stream_close(struct cons_stream *s);

/* Read every complete sub-buffer of the set into its files; give up a
 * sub-buffer stuck longer than stuck_ms. Caller holds io_lock. */
CONS_HIDDEN uint32_t cons_read_bufset(struct cons_trace *ct, struct cons_bufset *cb,
				      uint64_t stuck_ms);

/* A write of `what` ("a stream file", "the metadata") failed with -err,
 * losing `packets` packets of `events` events: counted, logged when
 * writes start failing. */
CONS_HIDDEN void cons_write_failed(struct cons_trace *ct, const char *what, int err,
				   uint64_t packets, uint64_t events);
/* A write succeeded: logged when writes had been failing. */
CONS_HIDDEN void cons_write_ok(struct cons_trace *ct);

#endif /* RINGTRACE_CONSUMER_INTERNAL_H */
