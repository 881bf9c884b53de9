/*
 * consumer.h - the consumer: from a buffer full of events to CTF packets
 * somewhere. One consumer serves both modes, which call it and which it
 * never calls: embedded mode (a thread of the traced program, in
 * libringtrace) and the session daemon (one thread per trace). Each behaviour exists
 * here once:
 *   - metadata: one builder (metadata.c, on src/ctf's writer) from the
 *     neutral descriptions below; a single writer's `metadata` written
 *     whole then appended to (cons_metadata_update), or a process tree's
 *     per-process fragments (trace_dir.h);
 *   - packets: one trim and validation (packet.c): content_size rounded
 *     up to 8 bytes, padding zeroed, packet_size set; for a source other
 *     programs can write (cons_channel.untrusted), a private copy checked
 *     against what the consumer knows first;
 *   - reading (read.c): packets taken from a source, written to a sink,
 *     given back; a stream unit (sub-buffer) whose writer died mid-commit
 *     given up after a delay (the source's skip_stuck) and counted;
 *   - write errors (errors.c, files.c): a packet that cannot be written is
 *     cut back off its file and counted as lost in the trace itself (a
 *     header-only packet in its place, ctf_walk.h's struct ctf_out), the
 *     failure reported once per failing stretch; writing resumes when
 *     space returns;
 *   - the drain (read.c): final flush and read, bounded even when a
 *     writer is stuck or a program overwrote the counters;
 *   - stream files (files.c): `CHANNEL_CPU[_N][SUFFIX]`, rotation by
 *     tracefile size and count;
 *   - snapshots (snapshot.c): the buffers' content copied without
 *     consuming it, newest packets within a size, as a complete trace;
 *   - session rotation (rotate.c): every stream's packet ended at the
 *     rotation point, what came before it written to the current trace
 *     chunk, what comes after to the next one (the sink's `rotate`).
 *
 * Data flow: source -> cons_channel (trim, check, account) -> sink.
 *
 * A *source* (struct cons_source) yields the packets of one channel, in
 * `nr_streams` streams (one per CPU): the user-space ring buffer
 * (cons_rb_source_init, rb_source.c); a kernel source implements the same
 * ops (get/put are required, the others optional: NULL when the source has
 * no such thing). What get returns is a CTF packet as ctf_packet.h lays it
 * out (header and context, then events whose header, contexts and payload
 * the trace's cons_classes and the channel's contexts describe), at most
 * packet_size bytes, with packet_seq_num = cons_packet.seq and
 * stream_instance_id = cpu_id = the stream; packet_size may say more than
 * the content (the consumer trims it). A *sink* (struct cons_sink) takes a channel's packets:
 * stream files with rotation (cons_files), which snapshots use too; a
 * network stream implements the same ops.
 *
 * Concurrency: a cons_channel, its source's streams and its sink are used
 * by one thread at a time, the caller's (the daemon serialises its
 * consumer thread, drains and snapshots with the trace's io_lock; embedded
 * mode has one thread). Source ops follow the same rule per stream.
 * Statistics (struct cons_stats) are relaxed atomics: any thread may read
 * them. struct cons_errors has its own lock: any thread.
 */
#ifndef RINGTRACE_CONSUMER_H
#define RINGTRACE_CONSUMER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ringtrace/ringtrace_types.h>

#include "../common/context.h"
#include "../common/owned_fd.h"
#include "../ctf/ctf_metadata.h"
#include "../ctf/ctf_walk.h"

#define CONS_HIDDEN __attribute__((visibility("hidden")))

/* A unit whose writer is gone is given up after this long: while tracing,
 * and in a drain (after the final flush). */
#define CONS_STUCK_MS 2000u
#define CONS_DRAIN_STUCK_MS 100u
/* A drain gives up after this (only a stuck writer or a buffer whose
 * program writes on its counters can make it last). */
#define CONS_DRAIN_MAX_MS 3000u

/* Explicit stream contexts (cons_channel_desc.fields) a channel may have. */
#define CONS_MAX_FIELDS 16u

/* A channel: what the consumer must know of it. Owned by the caller,
 * constant while the consumer uses it. */
struct cons_channel_desc {
	const char *name;		/* "channel0": stream files CHANNEL_CPU */
	uint32_t stream_id;		/* its CTF stream class */
	uint32_t nr_contexts;
	uint32_t contexts[RT_CTX_COUNT];	/* enum rt_context (context.h), in
						 * record order */
	/* Stream event contexts the context table does not hold (a source
	 * that writes its own, as the kernel's `tid`): named and typed here
	 * (the caller's array, constant while used), recorded after
	 * `contexts`, in this order; at most CONS_MAX_FIELDS (more are
	 * ignored, and a packet using them does not decode). */
	uint32_t nr_fields;
	const struct rt_field_desc *fields;
	uint64_t tracefile_size;	/* 0: one file per stream */
	uint32_t tracefile_count;	/* 0: keep every file */
	uint32_t switch_timer_ms;	/* 0: none */
	uint32_t read_timer_ms;		/* the longest wait between reads */
	bool overwrite;			/* flight-recorder buffers */
	const char *file_suffix;	/* after the stream file's name ("-3"), or NULL */
};

/* A channel's stream event context, as recorded: the context table's
 * entries of desc->contexts (unknown ones left out), then desc->fields.
 * Writes at most CONS_MAX_CONTEXTS into out (names point into the table
 * or the desc) and returns how many. */
#define CONS_MAX_CONTEXTS (RT_CTX_COUNT + CONS_MAX_FIELDS)
CONS_HIDDEN uint32_t cons_channel_contexts(const struct cons_channel_desc *desc,
					   struct rt_field_desc *out);

/* A trace's event classes, owned by the mode (the library's registry, the
 * daemon's trace). lock/unlock: around fields (and the walks using them);
 * copy and generation take the lock themselves. */
struct cons_classes {
	void *arg;
	void (*lock)(void *arg);
	void (*unlock)(void *arg);
	/* Fields of class `id` in stream class `stream_id` (lock held);
	 * false: no such class. */
	bool (*fields)(void *arg, uint32_t stream_id, uint32_t id,
		       const struct rt_field_desc **fields, uint32_t *nr);
	/* The classes from the `from`-th registered on, copied (their names
	 * and fields must stay valid as long as the trace: append-only):
	 * *ev malloc'ed, *nr of them, *generation the count of changes they
	 * describe. 0 or -ENOMEM. */
	int (*copy)(void *arg, uint32_t from, struct ctf_event_class **ev, uint32_t *nr,
		    uint64_t *generation);
	/* The generation now (an acquire load, or under the lock). */
	uint64_t (*generation)(void *arg);
};

/* A trace: where it goes and what describes it. Owned by the caller,
 * constant while the consumer uses it. */
struct cons_trace_desc {
	const char *dir;
	uint8_t uuid[16];
	struct ctf_clock_info clock;	/* name NULL: monotonic nanoseconds */
	/* env: domain NULL is "ust" (user space), "kernel" for the kernel's
	 * trace; hostname (gethostname), tracer_name and tracer_version are
	 * the builder's; procname NULL for a trace several programs share
	 * (and every kernel trace). */
	const char *domain;
	const char *procname;
	int64_t vpid;
	const char *trace_name;
	struct cons_classes classes;
	/* env hostname: NULL is gethostname's (a trace streamed to a relay
	 * says the name it authenticated with). */
	const char *hostname;
	/* A trace streamed to a relay: `clock` already corrected to the
	 * relay's (ctf_trace_info's relay_* say by how much). */
	bool relay_clock;
	int64_t relay_offset_ns;
	uint64_t relay_error_ns;
};

/* ---- metadata (metadata.c) ---- */

/* What cons_metadata_build writes: the header (trace, env, clock), the
 * channels' stream classes, the event classes from `from` on. */
#define CONS_META_HEADER 1u
#define CONS_META_STREAMS 2u
#define CONS_META_EVENTS 4u
#define CONS_META_ALL (CONS_META_HEADER | CONS_META_STREAMS | CONS_META_EVENTS)

/* Append the parts of the trace's metadata to `out`: header, one stream
 * class per channel (its stream event context: the context table's
 * entries of `contexts`, then its explicit `fields`), event
 * classes from the `from`-th on (*nr_events: how many, *generation: the
 * generation they describe; both may be NULL). Returns 0, -ENOMEM or
 * -EINVAL (a field type unknown to the writer). */
CONS_HIDDEN int cons_metadata_build(struct ctf_buf *out, const struct cons_trace_desc *t,
				    const struct cons_channel_desc *const *chans, size_t nr,
				    unsigned parts, uint32_t from, uint32_t *nr_events,
				    uint64_t *generation);

/* The `metadata` of a trace with one writer: written whole the first time
 * (never replacing another trace's file) or when `force`, else the event
 * classes registered since appended. Caller serialises calls per state. */
struct cons_metadata_state {
	bool written;
	bool torn;			/* an append failed part way: write it
					 * whole next time */
	uint64_t generation;		/* described by the file */
	uint32_t nr_events;		/* classes in the file */
};
/* Returns 0 or -errno (-ENOMEM, -EINVAL, of mkdir/open/write/rename). */
CONS_HIDDEN int cons_metadata_update(struct cons_metadata_state *st,
				     const struct cons_trace_desc *t,
				     const struct cons_channel_desc *const *chans, size_t nr,
				     bool force);

/* ---- write errors (errors.c) ---- */

/* A trace's write errors: the first not yet taken, the last one, whether
 * writes fail now, what was lost. `log` is called (under the lock) when
 * writes start failing (err < 0, what) and when they work again (err 0):
 * `line` is the message. Any thread. */
struct cons_errors {
	pthread_mutex_t lock;
	void (*log)(void *arg, int err, const char *what, const char *line);
	void *log_arg;
	const char *dir;
	int pending;
	char pending_what[24];
	int last;
	char last_what[24];
	bool failing;
	uint64_t packets;
	uint64_t events;
};
CONS_HIDDEN void cons_errors_init(struct cons_errors *e, const char *dir,
				  void (*log)(void *, int, const char *, const char *),
				  void *arg);
CONS_HIDDEN void cons_errors_fini(struct cons_errors *e);
/* A write of `what` ("a stream file", "the metadata") failed with -err,
 * losing `packets` packets of `events` events. */
CONS_HIDDEN void cons_errors_failed(struct cons_errors *e, const char *what, int err,
				    uint64_t packets, uint64_t events);
/* A write succeeded. */
CONS_HIDDEN void cons_errors_ok(struct cons_errors *e);
/* With `take`, the first error since the last take, else the last one:
 * 0 when there is none, else its -errno with "cannot write WHAT in DIR:
 * ERROR; N events in M packets could not be written[ (written again
 * since)]" in msg. */
CONS_HIDDEN int cons_errors_message(struct cons_errors *e, bool take, char *msg, size_t len);

/* ---- sources ---- */

/* A packet taken from a source: the source's until put. */
struct cons_packet {
	char *data;			/* `size` bytes (the unit's) */
	uint64_t size;
	uint64_t seq;			/* its packet_seq_num as the source counts */
	uint64_t cookie;		/* the source's */
};

/* A stream's counters, from the source (bounded by no one: in memory
 * programs may write). */
struct cons_counts {
	uint64_t bytes_reserved;	/* written since creation */
	uint64_t bytes_consumed;	/* read since creation */
	uint64_t events_lost;		/* dropped by the writers */
	uint64_t subbufs_lost;		/* overwritten unread or given up */
};

struct cons_source_ops {
	/* Take the next complete packet of `stream`: 0, -EAGAIN (none now),
	 * -EIO (damaged: skip_stuck gives it up). Required. */
	int (*get)(void *src, uint32_t stream, struct cons_packet *p);
	/* Give back a packet get returned. Required. */
	void (*put)(void *src, uint32_t stream, const struct cons_packet *p);
	/* Give up the unit at the read position if it has been left
	 * incomplete for `after_ns` (time in CLOCK_MONOTONIC ns): 1 given up
	 * (the source counts it in subbufs_lost), else 0. */
	int (*skip_stuck)(void *src, uint32_t stream, uint64_t now_ns, uint64_t after_ns);
	/* Close the open packet (`final`: the last one, which also closes
	 * the source: what is reserved after it is not recorded, exact
	 * stop): 0, -EAGAIN (could not finish, e.g. no room: read and flush
	 * again). */
	int (*flush)(void *src, uint32_t stream, bool final);
	void (*counts)(void *src, uint32_t stream, struct cons_counts *c);
	/* Non-destructive read: the offsets [*first, *end) in steps of
	 * packet_size that may hold complete packets, oldest first; and a
	 * copy of the one at `off` into dst (packet_size bytes): 0, -EAGAIN
	 * (not complete, or overwritten during the copy), -EIO (damaged).
	 * Either both or neither. */
	int (*snap_range)(void *src, uint32_t stream, uint64_t *first, uint64_t *end);
	int (*snap_copy)(void *src, uint32_t stream, uint64_t off, void *dst, uint64_t *seq);
};

struct cons_source {
	const struct cons_source_ops *ops;
	void *arg;
	uint32_t nr_streams;
	uint32_t batch;			/* packets per stream and read, at most */
	uint64_t packet_size;		/* a unit's bytes */
	uint64_t capacity;		/* a stream's most unread bytes */
};

/* The user-space ring buffer as a source (rb_source.c): streams are its
 * CPUs, read through its reader API. The state is the caller's, used by
 * the channel's thread. */
struct rb;
struct rb_stuck;
struct cons_rb_source {
	struct rb *rb;
	struct rb_stuck *stuck;		/* [rb->nr_cpus]: the reader's */
	/* The writers are all gone (recovery.h; false from init, set after):
	 * a unit incomplete now is given up at once, and a flush closes the
	 * open packet as rb_close_dead does. */
	bool dead;
	/* Dead writers (rb_void_dead; NULL from init: none): whether the
	 * owner of writers' account `acct` is gone for good. Asked, for
	 * accounts with work outstanding on a CPU, whenever that CPU has
	 * nothing complete to read; called on the reading thread. */
	bool (*gone)(void *arg, uint32_t acct);
	void *gone_arg;
};
/* Fill *s with the ring buffer `rb` as a source. 0 or -ENOMEM. */
CONS_HIDDEN int cons_rb_source_init(struct cons_rb_source *rs, struct rb *rb,
				    struct cons_source *s);
CONS_HIDDEN void cons_rb_source_fini(struct cons_rb_source *rs);

/* ---- sinks ---- */

struct cons_sink_ops {
	/* Append a whole packet (`len` bytes, `events` events) to `stream`;
	 * if it cannot be written it is accounted as lost (cut back, a
	 * header-only packet later). 0 or -errno. */
	int (*write)(void *sink, uint32_t stream, char *data, uint64_t len, uint64_t events);
	/* A packet that will not be written (its header at `data`). */
	void (*lose)(void *sink, uint32_t stream, const char *data, uint64_t events);
	/* The packet just lost held `events` more events than it was given
	 * with (a trusted packet's events are counted only when lost). */
	void (*lost_events)(void *sink, uint32_t stream, uint64_t events);
	/* The end: header-only packets for what was lost at the end. */
	int (*settle)(void *sink, uint32_t stream);
	/* Session rotation (cons_rotate): every stream's packets up to the
	 * rotation point were written and settled; the packets from now on
	 * belong to the next trace chunk, whose copy of this trace is `dir`
	 * (a path the caller keeps valid while the sink is used; a network
	 * sink maps it to its peer's chunk). The stream files end there: the
	 * next packet starts new ones in `dir`, keeping the streams' counts
	 * (sequence numbers, discarded events go on across chunks, as in
	 * LTTng's archives). Optional: NULL when the sink cannot rotate.
	 * 0 or -errno. */
	int (*rotate)(void *sink, const char *dir);
	/* What write writes, for messages (NULL: "a stream file"). */
	const char *what;
};

struct cons_sink {
	const struct cons_sink_ops *ops;
	void *arg;
};

/* Stream files (files.c): in `dir`, per stream CHANNEL_STREAM, with
 * tracefile_size CHANNEL_STREAM_N (a new file when the next packet would
 * pass the size; a file holds one packet at least), the newest
 * tracefile_count kept; then file_suffix. Created on the first packet
 * (new files only, fs_util.h). A file removed under us is an error
 * (-ENOENT); one whose descriptor the program closed (embedded mode:
 * rt_owned_fd) is appended to by name from then on. */
struct cons_file {
	struct rt_owned_fd fd;
	bool by_name;			/* descriptor lost: append by name */
	struct ctf_out out;
	uint64_t file_index;
	uint64_t oldest_index;
};
struct cons_files {
	const char *dir;
	const struct cons_channel_desc *ch;
	uint32_t nr;
	struct cons_file *f;
};
/* 0 or -ENOMEM. */
CONS_HIDDEN int cons_files_init(struct cons_files *fs, const char *dir,
				const struct cons_channel_desc *ch, uint32_t nr);
CONS_HIDDEN void cons_files_close(struct cons_files *fs);
CONS_HIDDEN void cons_files_free(struct cons_files *fs);
CONS_HIDDEN void cons_files_sink(struct cons_sink *s, struct cons_files *fs);
/* Copy every stream file written so far (each stream's kept files, the
 * current one up to its last whole packet) into new files of the
 * directory `dir` (which exists): a hybrid snapshot's streaming channels.
 * Caller holds what serialises the channel's writes. 0 or -errno with a
 * message in err. */
CONS_HIDDEN int cons_files_copy(const struct cons_files *fs, const char *dir, char *err,
				size_t errlen);

/* ---- reading a channel (read.c) ---- */

struct cons_stats {
	uint64_t packets;
	uint64_t bytes;
	uint64_t events;		/* counted when packets are checked */
	uint64_t subbufs_skipped;	/* a drain gave them up (the source counts
					 * those whose writer died mid-commit) */
	uint64_t packets_corrupt;	/* dropped: the check failed */
	uint64_t events_unwritten;	/* in packets that could not be written */
};

/* What the last packet written to a stream said (packet.c). */
struct cons_packet_prev {
	bool valid;
	uint64_t seq;
	uint64_t ts_end;
	uint64_t discarded;
};

struct cons_stream_state {
	struct cons_packet_prev prev;
	uint64_t drain_consumed;
	uint64_t drain_ns;
	bool drain_done;
	bool drain_pending;
	/* What drains gave up (counted in subbufs_skipped) and is still
	 * unread: the bytes from the stream's bytes_consumed up to
	 * skipped_to, counted once whatever the number of drains. */
	uint64_t skipped_to;
	bool skipped;
};

/* The metadata must describe every class a packet may use before the
 * packet is written: called before each packet; 0 or -errno. */
typedef int (*cons_metadata_fn)(void *arg);

struct cons_channel {
	const struct cons_channel_desc *desc;
	const struct cons_trace_desc *trace;
	struct cons_source src;
	struct cons_sink sink;
	struct cons_errors *errors;
	cons_metadata_fn metadata;
	void *metadata_arg;
	/* Other programs can write the source: check a private copy of
	 * every packet (and count its events); else trim in place. */
	bool untrusted;
	char *copy;			/* untrusted: packet_size bytes */
	struct cons_stream_state *streams;
	struct cons_stats stats;
};

/* 0 or -ENOMEM. */
CONS_HIDDEN int cons_channel_init(struct cons_channel *c, const struct cons_channel_desc *desc,
				  const struct cons_trace_desc *trace,
				  const struct cons_source *src, const struct cons_sink *sink,
				  struct cons_errors *errors, bool untrusted);
CONS_HIDDEN void cons_channel_fini(struct cons_channel *c);
/* Flush every stream's open packet (the switch timer). */
CONS_HIDDEN void cons_channel_flush(struct cons_channel *c);
/* Read what is complete (at most src.batch packets per stream) into the
 * sink, giving up units stuck for stuck_ms. Returns the most packets read
 * from one stream (for rb_read_wait). */
CONS_HIDDEN uint32_t cons_channel_read(struct cons_channel *c, uint64_t stuck_ms);
/* The same for stream `s` alone; returns the packets read. Distinct
 * streams of a channel may be read by distinct threads at once when the
 * source's ops and the sink's keep per-stream state only and the
 * channel's metadata callback is thread-safe (src/kernel's converter per
 * CPU); a trusted channel's reads share nothing else but its relaxed
 * statistics and its cons_errors (locked). */
CONS_HIDDEN uint32_t cons_channel_read_stream(struct cons_channel *c, uint32_t s,
					      uint64_t stuck_ms);
/* Read stream `stream`'s packets while its source's bytes_consumed is
 * below `until` (a position: packets that began before it). Returns
 * whether it got there; false when the next packet is not complete yet
 * (or the source has no counts). */
CONS_HIDDEN bool cons_stream_read_until(struct cons_channel *c, uint32_t stream, uint64_t until);
/* Final flush, then read until everything is consumed; bounded (a stuck
 * stream is given up after CONS_DRAIN_STUCK_MS without progress, one
 * with impossible counters at once, all after CONS_DRAIN_MAX_MS) and
 * counted in subbufs_skipped. `read` false: flush only (snapshot
 * sessions keep their data in the buffers). Then the sinks are settled. */
CONS_HIDDEN void cons_drain(struct cons_channel *const *chs, size_t nr, bool read);
/* The sink's header-only packets for the packets of the channel that
 * could not be written (sink.ops->settle of every stream); failures are
 * counted in c->errors. */
CONS_HIDDEN void cons_channel_settle(struct cons_channel *c);
/* Relaxed loads of the statistics, added to *st. */
CONS_HIDDEN void cons_channel_stats(const struct cons_channel *c, struct cons_stats *st);

/* Events in the packet at `data` (`size` bytes at most; its content_size
 * says where the events end), 0 if it does not decode. */
CONS_HIDDEN uint64_t cons_packet_events(const struct cons_channel *c, const char *data,
					uint64_t size);
/* The time of the last event of the packet at `data` whose events end
 * `used` bytes in (a packet not closed yet: its end fields are not
 * read), timestamp_begin when it has none. Returns 0 or -EBADMSG (they do
 * not decode). */
CONS_HIDDEN int cons_packet_last_time(const struct cons_channel *c, const char *data,
				      uint64_t used, uint64_t *ts);
/*
 * Trim a packet (packet.c): `shared` (`size` bytes) is copied into `copy`
 * (private, `size` bytes; copy == shared for a trusted packet, trimmed in
 * place) and, when c->untrusted, checked: magic, the trace's uuid, the
 * channel's stream id, the stream (stream instance and cpu_id), content
 * size within the unit, packet_seq_num equal to `seq` and above the
 * previous packet's, timestamps that never go back, a discarded count
 * that never decreases nor exceeds the stream's lost count, and events
 * that decode with the trace's classes up to exactly the content's end.
 * On success *len is the bytes to write (content rounded up to 8,
 * padding zeroed, packet_size set), *events its events (untrusted only,
 * else 0) and the packet is `prev`. Returns 0 or -EBADMSG (drop it).
 */
CONS_HIDDEN int cons_packet_trim(const struct cons_channel *c, uint32_t stream,
				 struct cons_packet_prev *prev, const char *shared, char *copy,
				 uint64_t size, uint64_t seq, uint64_t *len, uint64_t *events);

/* ---- session rotation (rotate.c) ---- */

/*
 * Rotate the channels (the streaming ones of one trace): each stream's
 * open packet is closed (a flush, not the final one) and every packet
 * that began before the rotation point (the bytes its writers had
 * reserved just before that flush) is read into the sink, then settled;
 * then sink.ops->rotate(dir) sends the later packets to the next chunk.
 * Bounded: a unit left incomplete for CONS_STUCK_MS is given up as the
 * read timer gives it up (the source counts it; the writers are alive, so
 * not the drain's shorter CONS_DRAIN_STUCK_MS), and after
 * CONS_DRAIN_MAX_MS what is left goes to the next chunk. Caller holds what serialises the channels. Returns
 * 0, -EOPNOTSUPP (a sink without rotate) or the first -errno of a sink's
 * rotate (the others still rotate).
 */
CONS_HIDDEN int cons_rotate(struct cons_channel *const *chs, size_t nr, const char *dir);

/* ---- snapshots (snapshot.c) ---- */

/* Write what the channels' sources hold now (complete packets, without
 * consuming them; flush first) into `dir` as a complete trace: metadata
 * (cons_metadata_build of `trace` with the channels `descs`) and stream
 * files CHANNEL_STREAM; at most max_size bytes of the newest packets (0:
 * no limit). Errors: -ENOMEM, -EOPNOTSUPP (a source without snapshots),
 * -errno of mkdir/open/write/rename in dir, with a message in err. */
CONS_HIDDEN int cons_snapshot(struct cons_channel *const *chs, size_t nr,
			      const struct cons_trace_desc *trace,
			      const struct cons_channel_desc *const *descs, size_t nr_descs,
			      const char *dir, uint64_t max_size, char *err, size_t errlen);

/* CLOCK_MONOTONIC in ns. */
CONS_HIDDEN uint64_t cons_now_ns(void);

#endif /* RINGTRACE_CONSUMER_H */
