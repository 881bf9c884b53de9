/*
 * recovery.h - buffers that outlive their writers (`--shm-path DIR`) and
 * `ringtrace recover` (docs/recovery.md): a channel's buffer set kept in
 * a file of DIR instead of a memfd, beside a description of the trace it
 * belongs to, from which recover writes a CTF trace of everything
 * committed in it once its program (or daemon) died, through the one
 * consumer pipeline (consumer.h: the ring buffer as source, over a
 * private copy of the file, stream files as sink).
 *
 * The files of one buffer set, NAME being chosen at creation:
 *   NAME.ring  the buffer set, ringbuffer.h's layout byte by byte (its
 *              header: magic "RTRBUF1", version, sizes, geometry),
 *              created O_EXCL | O_NOFOLLOW, mode 0600;
 *   NAME.desc  what the trace's metadata is written from, rewritten
 *              atomically (a new file renamed over it) whenever it
 *              changes. Little-endian, byte by byte:
 *     0  char[8] magic "RTRDESC\0"
 *     8  u32     version (CONS_DESC_VERSION)
 *    12  u32     size of the whole file in bytes
 *    16  u8[16]  the trace's uuid
 *    32  u32     stream_id (the channel's stream class)
 *    36  u32     nr_contexts (at most RT_CTX_COUNT)
 *    40  s64     vpid of the program (0: a trace several programs share)
 *    48  u64     clock frequency (ticks per second)
 *    56  s64     clock offset, seconds
 *    64  u64     clock offset, ticks (< frequency)
 *    72  u64     clock precision, ticks
 *    80  u32     nr_classes (event classes)
 *    84  u32     flags (CONS_DESC_F_OVERWRITE: flight-recorder buffers)
 *    88  u32     contexts[nr_contexts] (enum rt_context, record order)
 *    then the strings, each a u32 length (at most CONS_DESC_STR_MAX) and
 *    its bytes (no NUL, none inside): channel name, procname (empty:
 *    none), trace name, clock name, clock description;
 *    then nr_classes event classes, ids strictly increasing: u32 id, s32
 *    loglevel, u32 nr_fields (at most CONS_DESC_FIELDS_MAX), provider,
 *    name (strings), and per field u32 type (enum rt_field_type) and its
 *    name (a string).
 *   A description ends exactly at its size; anything else in it (an
 *   unknown context or field type, a string too long, a count past what
 *   the file holds) is refused.
 *
 * Concurrency: no shared state; the caller serialises calls per buffer
 * set (embedded mode: its consumer thread, and the session before that).
 */
#ifndef RINGTRACE_RECOVERY_H
#define RINGTRACE_RECOVERY_H

#include <stddef.h>
#include <stdint.h>

#include "consumer.h"

#define CONS_DESC_MAGIC "RTRDESC"	/* 8 bytes with the NUL */
#define CONS_DESC_VERSION 1u
#define CONS_DESC_F_OVERWRITE 0x1u
#define CONS_DESC_STR_MAX 4096u
#define CONS_DESC_FIELDS_MAX 1024u
#define CONS_DESC_SIZE_MAX (64u << 20)
#define CONS_RING_SUFFIX ".ring"
#define CONS_DESC_SUFFIX ".desc"
/* NAME's longest length (without suffix). */
#define CONS_RECOVERY_NAME_MAX 200u

/*
 * Create the buffer file of a new buffer set in `dir` (created if
 * missing; it must be ours and private: RT_DIR_PRIVATE, fs_util.h):
 * PREFIX.ring, or PREFIX-1.ring, PREFIX-2.ring ... when taken (a file
 * left by an earlier program of the same pid), O_RDWR | O_CREAT | O_EXCL
 * | O_NOFOLLOW | O_CLOEXEC, mode 0600. `name` receives NAME (the file's
 * name without ".ring"; CONS_RECOVERY_NAME_MAX + 1 bytes). Returns the fd
 * or -errno (-EPERM, -ELOOP ... of the directory's checks, -EEXIST: all
 * tried names taken, -ENAMETOOLONG) with a message in err.
 */
CONS_HIDDEN int cons_recovery_create(const char *dir, const char *prefix, char *name,
				     char *err, size_t errlen);

/* Write NAME.desc in `dir`: the trace `t` (every event class of
 * t->classes) and the channel `ch`. Returns 0 or -errno (-ENOMEM, -EINVAL:
 * a string or count past the format's limits, of the write) with a
 * message in err. */
CONS_HIDDEN int cons_recovery_describe(const char *dir, const char *name,
				       const struct cons_trace_desc *t,
				       const struct cons_channel_desc *ch, char *err,
				       size_t errlen);

/* Remove NAME.ring and NAME.desc from `dir` (everything was written out).
 * Returns 0 or the first -errno. */
CONS_HIDDEN int cons_recovery_remove(const char *dir, const char *name);

/* A description read back: a trace and a channel the consumer can use
 * (classes answered from the description). Owned by its reader. */
struct cons_recovered {
	struct cons_trace_desc trace;
	struct cons_channel_desc desc;
	struct ctf_event_class *classes;	/* [nr_classes], ids increasing */
	uint32_t nr_classes;
	struct rt_field_desc *fields;
	char *strings;
};

/* Decode `len` bytes of a description into *r. Returns 0, -EINVAL (not a
 * description, or damaged: message in err), -EPROTO (another version),
 * -ENOMEM. */
CONS_HIDDEN int cons_recovery_decode(const void *data, size_t len, struct cons_recovered *r,
				     char *err, size_t errlen);
CONS_HIDDEN void cons_recovered_free(struct cons_recovered *r);

/* What cons_recover found and wrote. */
struct cons_recover_stats {
	uint32_t nr_cpus;
	uint32_t cpus_torn;		/* a writer died between reserve and
					 * commit there: what followed its
					 * slot was given up (rb_close_dead) */
	uint64_t packets;
	uint64_t events;
	uint64_t subbufs_skipped;	/* given up: incomplete, or damaged */
	uint64_t packets_corrupt;	/* dropped: they did not check */
	uint64_t events_discarded;	/* the writers' own lost count, and
					 * one per dead slot */
};

/*
 * Recover the buffer set NAME of directory `dir` (its NAME.ring and
 * NAME.desc, read, never written) into the trace directory `out` (created;
 * must not hold a trace): metadata, and per CPU the packets not consumed
 * yet, the open one closed where its last event ends, each checked as
 * from a hostile program. Assumes nothing writes the buffers any more.
 * Returns 0 or -errno with a message in err: -EINVAL (a file is not what
 * its name says, damaged, or the two do not belong together), -EPROTO
 * (another version), -ENOENT, -ENOMEM, -EEXIST (out holds a trace), of
 * the reads and writes.
 */
CONS_HIDDEN int cons_recover(const char *dir, const char *name, const char *out,
			     struct cons_recover_stats *st, char *err, size_t errlen);

#endif /* RINGTRACE_RECOVERY_H */
