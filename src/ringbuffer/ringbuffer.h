/*
 * ringbuffer.h - the lockless per-CPU ring buffer of Desnoyers & Dagenais 2012, section 4.
 *
 * What it offers: a channel's buffers (one per CPU, each N sub-buffers of
 * S bytes, both powers of two) in one shared-memory object (memfd) whose
 * layout is described byte by byte below and versioned, so another process
 * can map it. Producers reserve a slot, write it and commit it
 * (ringbuffer_api.h, inline); a reader takes whole sub-buffers
 * (rb_get_subbuf / rb_put_subbuf); a flush closes a partly filled
 * sub-buffer (rb_flush_cpu). The module knows nothing of CTF: the client
 * supplies the sub-buffer header size and callbacks that fill it.
 *
 * Concurrency contract:
 *  - rb_reserve/rb_commit (the fast path) may run at any time, from any
 *    thread and from signal handlers nested inside them, concurrently with
 *    everything else here. They take no lock, make no system call and
 *    allocate nothing.
 *  - One reader per buffer at a time: rb_get_subbuf/rb_put_subbuf/
 *    rb_flush_cpu for one CPU's buffer must be serialised by the caller
 *    (the consumer owns them). Different CPUs' buffers may be read in
 *    parallel.
 *  - rb_create/rb_destroy are not concurrent with anything on that rb.
 */
#ifndef RINGTRACE_RINGBUFFER_H
#define RINGTRACE_RINGBUFFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ringtrace/ringtrace_fast.h>

#include "rb_equations.h"

#define RB_SHM_MAGIC "RTRBUF1"	/* 8 bytes with the NUL */
#define RB_SHM_VERSION 4
#define RB_MAX_CPUS 4096
#define RB_MIN_SUBBUF_SIZE 4096ULL
#define RB_MAX_SUBBUF_SIZE (1ULL << 30)
#define RB_MAX_NUM_SUBBUF 65536U

enum rb_mode {
	RB_MODE_DISCARD = 0,	/* full buffer: drop the new event, count it */
	RB_MODE_OVERWRITE = 1,	/* full buffer: push the reader (flight recorder) */
};

/*
 * Shared-memory layout (all little-endian on the machines we run on, all
 * integers naturally aligned). Offsets are from the start of the object.
 *
 *   0     struct rb_shm_header                      (RB_SHM_HEADER_SIZE)
 *   cpu_ctl_offset + cpu * cpu_ctl_stride  struct rb_cpu_ctl, then
 *                                          num_subbuf struct rb_subbuf_ctl
 *   data_offset + cpu * data_stride        the CPU's sub-buffers:
 *                                          num_subbuf (+1 in overwrite
 *                                          mode: the reader's spare) * S
 *
 * struct rb_shm_header, byte by byte:
 *    0  char[8]  magic "RTRBUF1\0"
 *    8  u32      version (RB_SHM_VERSION)
 *   12  u32      header size in bytes
 *   16  u64      total size of the object in bytes
 *   24  u64      subbuf_size S
 *   32  u32      num_subbuf N
 *   36  u32      nr_cpus
 *   40  u32      mode (enum rb_mode)
 *   44  u32      tsc_bits (compact timestamp width of the client's header)
 *   48  u32      subbuf_header_size (client's packet header, bytes)
 *   52  u32      flags (RB_SHM_F_RSEQ: producers use per-CPU rseq stores)
 *   56  u64      cpu_ctl_offset
 *   64  u64      cpu_ctl_stride
 *   72  u64      data_offset
 *   80  u64      data_stride
 *   88  u64      initial_count (value all counters started from)
 */
#define RB_SHM_HEADER_SIZE 4096
#define RB_SHM_F_RSEQ 0x1u

struct rb_shm_header {
	char magic[8];
	uint32_t version;
	uint32_t header_size;
	uint64_t total_size;
	uint64_t subbuf_size;
	uint32_t num_subbuf;
	uint32_t nr_cpus;
	uint32_t mode;
	uint32_t tsc_bits;
	uint32_t subbuf_header_size;
	uint32_t flags;
	uint64_t cpu_ctl_offset;
	uint64_t cpu_ctl_stride;
	uint64_t data_offset;
	uint64_t data_stride;
	uint64_t initial_count;
};

/*
 * Per sub-buffer words (16 bytes). Invariants:
 *  - commit_seq only takes values (p + 1) * S (mod 2^(64 - log2 N)), in
 *    increasing order, by CAS, once pass p is complete (Algorithm 3 lines
 *    3-7, with the completion test of ringbuffer.c, "announced bytes").
 *  - table (overwrite mode, the paper's sub-buffer table): bits 0-31 the
 *    physical sub-buffer holding this logical sub-buffer, bit 32 the writer
 *    reference flag, bits 33-63 the pass ("produced count" tag) mod 2^31.
 *    A writer sets (tag = pass, flag) before writing into a pass and the
 *    committer that completes the pass clears the flag; the reader swaps
 *    in its spare only when the flag is clear and the tag is the pass it
 *    wants (section 4.3.2).
 */
struct rb_subbuf_ctl {
	uint64_t commit_seq;	/* any committer, reader (CAS) */
	uint64_t table;		/* writers (CAS set flag), reader (CAS swap) */
};

#define RB_TABLE_FLAG (1ULL << 32)
#define RB_TABLE_TAG_SHIFT 33
#define RB_TABLE_IDX(e) ((uint32_t)(e))
#define RB_TABLE_TAG(e) ((e) >> RB_TABLE_TAG_SHIFT)
#define RB_TABLE_MAKE(idx, tag, flag)                                          \
	((uint64_t)(idx) | ((uint64_t)(tag) << RB_TABLE_TAG_SHIFT) |            \
	 ((flag) ? RB_TABLE_FLAG : 0))
#define RB_TABLE_TAG_MASK ((1ULL << 31) - 1)

/* hot_tag (struct rb_cpu_ctl) of the sub-buffer holding `offset`: its
 * start. RB_HOT_TAG_NONE is never a sub-buffer's start. */
#define RB_HOT_TAG(offset, S) ((uint64_t)(offset) & ~((uint64_t)(S) - 1))
#define RB_HOT_TAG_NONE 1ULL

/*
 * Per-CPU control (four cache lines, then the sub-buffer array), byte
 * by byte:
 *    0  u64  write_count       \
 *    8  u64  announced          |
 *   16  u64  last_tsc           | line 0: all an event's reservation
 *   24  u64  hot_tag            | and commit read and write (the
 *   32  u64  committed          | fast paths)
 *   40  u64  hot_off            |
 *   48  u8[16] padding         /
 *   64  u64  read_count, 72 u64 reader_subbuf, 80 u8[48]  (line 1: reader)
 *  128  u64  events_lost, 136 u64 subbufs_lost,
 *  144  u64  records_lost_reported, 152 u8[40]         (line 2: statistics)
 *  192  u64  committed_remote, 200 u8[56]   (line 3: migrated committers,
 *            every commit in atomic mode; alone, as it is written once
 *            per event there: 6 ns per event less than beside line 2's)
 *  256  struct rb_subbuf_ctl sb[num_subbuf]
 *
 *  write_count: bytes reserved (free-running). Updated by the LCAS of
 *    Algorithm 2: an rseq section on the owning CPU in rseq mode, an SMP
 *    CAS otherwise. A flush in rseq mode runs on the owning CPU too (the
 *    flusher pins itself there), so the word never sees both kinds. The
 *    call sites' one-section fast path (rt__fast_event) reserves and
 *    commits with one store of it.
 *  announced, committed, committed_remote: units of work (slot bytes,
 *    packet header writes) that writers announced before reserving and
 *    that are still to be written: announced - committed -
 *    committed_remote (mod 2^64) is what this CPU's buffer still waits
 *    for. Free-running, only ever increased. announced: rseq sections on
 *    the owning CPU (the library's reservation stores it with write_count
 *    in one 16-byte store; the slow path adds before its LCAS), SMP atomic
 *    adds in atomic mode. committed: rseq adds on the owning CPU.
 *    committed_remote: SMP atomic adds (a committer that migrated, atomic
 *    mode). A pass is complete once write_count has left it and nothing
 *    announced is outstanding (ringbuffer.c, rb_subbuf_try_complete).
 *  last_tsc: a timestamp no newer than the last reserved slot's; decides
 *    compact vs full event headers. Plain stores, may go stale towards the
 *    past, which only makes headers larger (never wrong).
 *  hot_tag, hot_off: the hot word, where the sub-buffer write_count is
 *    in lies, cached so the fast paths read no table: hot_tag is that
 *    sub-buffer's start (its first write_count value), hot_off the byte
 *    offset of its physical sub-buffer from CPU 0's sub-buffers (cpu x
 *    data_stride + phys x S). In rseq mode both are written only by an
 *    rseq section on the owning CPU that checks that write_count is still
 *    in that sub-buffer (rb_rseq_hot_store: hot_off, then hot_tag as its
 *    commit), once the writer holds the pass's writer flag. So a fast
 *    path that reads them in its own section (rt__fast_event), or reads
 *    hot_tag then hot_off and then commits only if write_count did not
 *    move (rb_fast_reserve), sees a pair that belongs together whenever
 *    hot_tag is the current sub-buffer's start: an update aborted between
 *    its two stores was for a sub-buffer write_count was in, so its
 *    hot_off is either that of the sub-buffer hot_tag names or goes with
 *    a later start that hot_tag does not hold. A stale pair (an update
 *    skipped because the writer migrated) names an older start and sends
 *    the fast path to the slow path, which stores it again. hot_tag starts
 *    at RB_HOT_TAG_NONE (matches nothing). Atomic mode has no fast path:
 *    plain stores.
 *  read_count: bytes consumed; SMP CAS by the reader (Algorithm 7) and by
 *    writers pushing the reader in overwrite mode.
 *  reader_subbuf: physical index of the reader's spare (overwrite mode);
 *    reader only.
 *  events_lost: events dropped (discard mode full, would-overflow, nesting,
 *    oversized) - atomic add; written into each packet as the cumulative
 *    events_discarded.
 *  subbufs_lost: sub-buffers overwritten unread (overwrite mode pushes).
 */
struct rb_cpu_ctl {
	uint64_t write_count;
	uint64_t announced;
	uint64_t last_tsc;
	uint64_t hot_tag;
	uint64_t committed;
	uint64_t hot_off;
	uint8_t pad0[16];
	uint64_t read_count;
	uint64_t reader_subbuf;
	uint8_t pad1[48];
	uint64_t events_lost;
	uint64_t subbufs_lost;
	uint64_t records_lost_reported;	/* events_lost in the last packet */
	uint8_t pad2[40];
	uint64_t committed_remote;
	uint8_t pad3[56];
	struct rb_subbuf_ctl sb[];
};

struct rb;

/*
 * Client callbacks (slow path, called by the producer that switches
 * sub-buffers or by a flush; must be async-signal-safe and lock-free).
 * Both run before the sub-buffer can be complete, but in no fixed order:
 * the writer that opens a packet may be interrupted after its reservation
 * and before subbuf_begin, while a nested writer (or a flush, or in atomic
 * mode a writer on another CPU) fills the packet and closes it. So the two
 * must write disjoint parts of the header.
 *  subbuf_begin: a new packet starts at `subbuf` at time `tsc`; `seq` is
 *    the packet's sequence number in this CPU's stream.
 *  subbuf_end: the packet is closed at `tsc`; `data_size` bytes of it are
 *    used (header included); `lost` is the CPU's cumulative lost count.
 */
struct rb_client {
	void (*subbuf_begin)(void *priv, uint32_t cpu, void *subbuf,
			     uint64_t tsc, uint64_t seq);
	void (*subbuf_end)(void *priv, uint32_t cpu, void *subbuf, uint64_t tsc,
			   uint64_t data_size, uint64_t lost);
	uint64_t (*clock_read)(void);	/* slow-path clock (flush) */
	void *priv;
};

struct rb_config {
	uint64_t subbuf_size;		/* S: power of two, >= 4 KiB */
	uint32_t num_subbuf;		/* N: power of two, >= 2 */
	uint32_t nr_cpus;
	enum rb_mode mode;
	uint32_t tsc_bits;		/* compact header timestamp bits */
	uint32_t subbuf_header_size;
	uint64_t initial_count;		/* 0 normally; tests start near 2^64 */
	bool use_rseq;			/* false forces SMP atomics */
};

/* Where one CPU's buffer is in this process's mapping. */
struct rb_cpu_ptrs {
	struct rb_cpu_ctl *ctl;
	char *data;		/* its physical sub-buffers */
};

/* Process-local handle. Owner: whoever called rb_create/rb_attach; set
 * there and constant afterwards. `fast` and `rseq_fast`, at the start,
 * are everything an event's fast path (ringbuffer_api.h) reads: keep
 * them together. */
struct rb {
	/* The fast path's view (ringtrace_fast.h; call sites get a copy in
	 * their struct rt_fast_site): filled by attach, then constant. */
	struct rt_fast_buf fast;
	struct rb_cpu_ptrs *cpus;	/* [nr_cpus] */
	uint64_t subbuf_size;
	uint32_t nr_cpus;
	uint32_t num_subbuf;
	bool rseq_fast;			/* rseq and this process can use it:
					 * the inline fast path may run */
	/* Slow paths only from here. */
	uint64_t commit_mask;		/* M_0^(64-nsbbits): commit count bits */
	struct rb_geom geom;
	enum rb_mode mode;
	uint32_t tsc_bits;
	bool rseq;			/* producers use rseq sections */
	uint32_t hdr_size;
	struct rb_shm_header *shm;	/* start of the mapping (NULL: not ours) */
	size_t map_size;
	int fd;				/* memfd, or -1 */
	char *data;			/* shm + data_offset */
	size_t data_stride;
	uint64_t initial_count;
	struct rb_client client;
};

/* A slot reserved by the library's paths (rb_reserve), until its
 * commit. */
struct rb_slot {
	char *addr;		/* where the slot starts */
	char *ctl;		/* the CPU's control area */
	uint64_t offset;	/* write_count at the slot's start */
	uint64_t tsc;		/* the event's timestamp */
	int64_t rseq_off;	/* rb->fast.rseq_off (kept: the slot's writes
				 * may alias the geometry for the compiler) */
	uint32_t room;		/* bytes from offset to its sub-buffer's end;
				 * 0 when the reservation switched
				 * sub-buffers (its commit completes the
				 * passes left behind) */
	int32_t cpu;		/* the buffer the slot is in */
};

/* Reservation context of the general path: filled by the caller (in), by
 * rb_reserve (out), read by rb_commit. */
struct rb_ctx {
	uint32_t payload_size;	/* in: bytes after the event header */
	uint16_t hdr_compact;	/* in: header size with compact timestamp */
	uint16_t hdr_full;	/* in: header size with full timestamp */
	struct rb_slot r;	/* out: the slot */
	uint32_t slot_size;	/* out: header + payload */
	bool full_tsc;		/* out: write the full-timestamp header */
};

/* A sub-buffer taken by the reader. */
struct rb_read {
	uint64_t count;		/* read_count when taken */
	char *data;		/* the packet: S bytes, the reader's until put */
	uint64_t data_size;	/* bytes used, from the commit/switch info */
};

/* The seals a buffer set's memfd carries (rb_create): it can neither
 * shrink nor grow. */
#define RB_SEALS (F_SEAL_SHRINK | F_SEAL_GROW)

/* Whether memfd `fd` carries RB_SEALS: 0, -EPERM if it does not (its
 * owner could truncate it under a mapping), -errno from fcntl. A process
 * that maps a buffer set another process sends checks this first. */
int rb_check_sealed(int fd);

/*
 * rb_create: allocate and pre-touch a buffer set in a new memfd.
 * Returns 0 or -EINVAL (bad geometry), -ENOMEM, -errno from memfd/mmap.
 */
int rb_create(struct rb *rb, const struct rb_config *cfg,
	      const struct rb_client *client);
void rb_destroy(struct rb *rb);

/* Validate and adopt an existing mapping (another process's buffers). Every
 * offset and size in the header is checked against `size`.
 * Returns 0 or -EINVAL (not a ringtrace buffer, bad layout), -EPROTO
 * (version). */
int rb_attach(struct rb *rb, void *map, size_t size);

/*
 * Reader side (Algorithms 6 and 7). rb_get_subbuf returns 0 and fills `r`
 * when a complete sub-buffer is ready, -EAGAIN otherwise, -EIO when the
 * shared sub-buffer table holds an index out of range (memory corrupted by
 * another process). rb_put_subbuf gives it back; it always succeeds.
 */
int rb_get_subbuf(struct rb *rb, uint32_t cpu, struct rb_read *r);
void rb_put_subbuf(struct rb *rb, uint32_t cpu, const struct rb_read *r);

/*
 * The read timer's next period, for a consumer that polls (producers
 * never wake it: that would be a system call on their path). `wait`: the
 * period before this pass; `most`: the most complete sub-buffers the pass
 * took from one CPU. Half a CPU's buffer or more found full: the producer
 * nearly outran us, poll four times as often (down to `min`, or `max` if
 * that is shorter); nothing found: back off, doubling up to `max` (the
 * configured read timer). Same unit for all three.
 */
static inline uint64_t rb_read_wait(uint64_t wait, uint64_t max, uint64_t min,
				    uint32_t most, uint32_t num_subbuf)
{
	if (min > max)
		min = max;
	if (2 * (uint64_t)most >= num_subbuf)
		return wait / 4 > min ? wait / 4 : min;
	if (most == 0)
		return wait * 2 < max ? wait * 2 : max;
	return wait;
}

/*
 * Force switch (Algorithm 4): close the CPU's partly filled sub-buffer so
 * the reader gets it; nothing happens if it is empty. With `final`, also
 * emit a header-only packet when events were lost since the last packet,
 * so that the trace accounts for them. Returns 0 or -EAGAIN if the buffer
 * could not be flushed now (rseq mode and the CPU is not usable).
 */
int rb_flush_cpu(struct rb *rb, uint32_t cpu, bool final);

/* Statistics for one CPU (racy snapshot). */
struct rb_stats {
	uint64_t bytes_reserved;
	uint64_t bytes_consumed;
	uint64_t events_lost;
	uint64_t subbufs_lost;
};
void rb_get_stats(const struct rb *rb, uint32_t cpu, struct rb_stats *st);

/* Count an event as lost on a CPU's buffer (async-signal-safe). */
void rb_count_lost(struct rb *rb, uint32_t cpu);

/* Whether this process can use rseq sections (glibc registered rseq). */
bool rb_rseq_usable(void);

#endif /* RINGTRACE_RINGBUFFER_H */
