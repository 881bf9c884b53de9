/*
 * ringbuffer.h - the lockless per-CPU ring buffer of Desnoyers & Dagenais 2012, section 4.
 *
 * What it offers: a channel's buffers (one per CPU, each N sub-buffers of
 * S bytes, both powers of two) in one shared-memory object (memfd) whose
 * layout is described byte by byte below and versioned, so another process
 * can map it. Producers reserve a slot, write it and commit it
 * (ringbuffer_api.h, inline); a reader takes whole sub-buffers
 * (rb_get_subbuf / rb_put_subbuf), gives up one whose writer is gone
 * (rb_skip_stuck) or copies complete ones without taking them
 * (rb_snapshot_range / rb_snapshot_copy); a flush closes a partly filled
 * sub-buffer (rb_flush_cpu). The module knows nothing of CTF: the client
 * supplies the sub-buffer header size and callbacks that fill it.
 *
 * Concurrency contract:
 *  - rb_reserve/rb_commit (the fast path) may run at any time, from any
 *    thread and from signal handlers nested inside them, concurrently with
 *    everything else here. They take no lock, make no system call and
 *    allocate nothing.
 *  - One reader per buffer at a time: rb_get_subbuf/rb_put_subbuf/
 *    rb_skip_stuck/rb_flush_cpu, and a snapshot (rb_snapshot_copy), for
 *    one CPU's buffer must be serialised by the caller (the consumer owns
 *    them). Different CPUs' buffers may be read in parallel.
 *  - rb_create/rb_destroy are not concurrent with anything on that rb.
 */
#ifndef RINGTRACE_RINGBUFFER_H
#define RINGTRACE_RINGBUFFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ringtrace/internal/fast.h>

#include "rb_equations.h"

#define RB_SHM_MAGIC "RTRBUF1"	/* 8 bytes with the NUL */
#define RB_SHM_VERSION 7
#define RB_MAX_CPUS 4096
#define RB_MIN_SUBBUF_SIZE 4096ULL
#define RB_MAX_SUBBUF_SIZE (1ULL << 30)
#define RB_MAX_NUM_SUBBUF 65536U
#define RB_MAX_ACCTS 1024U

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
 *   96  u32      nr_accts K (writers' accounts per CPU, <= RB_MAX_ACCTS;
 *                0: none, every writer uses the CPU's own words)
 *  100  u32      acct_offset (where a CPU's accounts start in its
 *                control area: after the sub-buffer array)
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
	uint32_t nr_accts;
	uint32_t acct_offset;
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
 *    8  u64  announced (rseq    |
 *            mode) / stamp      |
 *            (atomic mode)      |
 *   16  u64  last_tsc           | line 0: all an event's reservation
 *   24  u64  hot_tag            | and commit read and write (the
 *   32  u64  committed          | fast paths)
 *   40  u64  hot_off            |
 *   48  u64  closed             |
 *   56  u64  out_from          /
 *   64  u64  read_count, 72 u64 reader_subbuf, 80 u64 void_begin,
 *   88  u64  void_end, 96 u8[32]                          (line 1: reader)
 *  128  u64  events_lost, 136 u64 subbufs_lost,
 *  144  u64  records_lost_reported, 152 u8[40]         (line 2: statistics)
 *  192  u64  committed_remote, 200 u64 announced_smp (atomic mode's
 *            announced), 208 u8[48]   (line 3: migrated committers, every
 *            commit and announcement in atomic mode; alone, as it is
 *            written once per event there: 6 ns per event less than
 *            beside line 2's)
 *  256  struct rb_subbuf_ctl sb[num_subbuf]
 *  acct_offset  struct rb_acct acct[nr_accts] (64 bytes each:
 *            0 u64 announced, 8 u64 committed, 16 u64 committed_remote,
 *            24 u64 out_from, 32 u64 out_to, 40 u8[24] padding)
 *
 *  write_count: bytes reserved (free-running). Updated by the LCAS of
 *    Algorithm 2: an rseq section on the owning CPU in rseq mode, an SMP
 *    CAS otherwise. A flush in rseq mode runs on the owning CPU too (the
 *    flusher pins itself there), so the word never sees both kinds. The
 *    call sites' one-section fast path (rt__fast_event) reserves and
 *    commits with one store of it.
 *  stamp (atomic mode, in announced's place): the timestamp of the
 *    last reservation in buffer order, paired with write_count: every
 *    reservation in atomic mode is one 16-byte compare-and-swap of
 *    {write_count, stamp}, from the pair it read to {its end, its
 *    timestamp}, and its timestamp is the clock's, raised to stamp if the
 *    clock read is older (an unordered TSC read may run before the load
 *    of write_count, or on a CPU whose reads lag). So timestamps are
 *    monotonic in buffer order without a fence before the clock read, and
 *    the compact-or-full header decision is exact (ringbuffer_api.h,
 *    rb_smp_reserve). The CPU's own announced word is then announced_smp.
 *  announced, committed, committed_remote: units of work (slot bytes,
 *    packet header writes) that writers announced before reserving and
 *    that are still to be written: announced - committed -
 *    committed_remote (mod 2^64) is what this CPU's buffer still waits
 *    for, with the same three words of every account added (see
 *    accounts below). Free-running, only ever increased. announced: rseq sections on
 *    the owning CPU (the library's reservation stores it with write_count
 *    in one 16-byte store; the slow path adds before its LCAS); in atomic
 *    mode the word is announced_smp, SMP adds before the reservation's
 *    compare-and-swap. committed: rseq adds on the owning CPU.
 *    committed_remote: SMP atomic adds (a committer that migrated, atomic
 *    mode). A pass is complete once write_count has left it and nothing
 *    announced is outstanding (ringbuffer.c, rb_subbuf_try_complete).
 *  last_tsc: a timestamp no newer than the last reserved slot's; decides
 *    compact vs full event headers. Plain stores, may go stale towards the
 *    past, which only makes headers larger (never wrong). Atomic mode
 *    decides on stamp instead (exact) and leaves it alone.
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
 *    at RB_HOT_TAG_NONE (matches nothing). Atomic mode: plain stores
 *    that nothing reads (its fast path, rb_smp_reserve, reads the
 *    sub-buffer table instead: writers on several CPUs could leave a
 *    pair from two sub-buffers there).
 *  closed: nonzero once the reader closed the buffer (rb_close_cpu,
 *    the drain of stop, destroy and exit; docs/ring-buffer.md "Exact
 *    stop"): a reservation that would open a packet refuses it, inside
 *    its compare-and-store section (rseq mode) or before each CAS attempt
 *    (atomic mode), until rb_reopen. Written by the reader only (SMP
 *    stores), read by writers; 0 in buffers of older versions (padding).
 *  accounts (struct rb_acct; buffers several programs write, the
 *    daemon's per-user buffers): the same announced/committed/
 *    committed_remote words, one set per program per CPU, written as the
 *    CPU's own words are (announced and committed by rseq sections on the
 *    owning CPU, committed_remote by SMP adds; atomic mode: announced and
 *    committed_remote by SMP adds). A process whose rb->acct is k > 0 (the
 *    daemon gives each program its own, rb_use_acct) announces and commits
 *    on account k - 1 only; every other writer (a program without one, the
 *    reader's flush) on the CPU's words. Completion sums them all. So the
 *    work a program left outstanding when it died is exactly its accounts'
 *    announced - committed - committed_remote, which the reader voids
 *    (rb_void_dead) once the program is known gone.
 *  out_from (the CPU's words and each account), out_to (accounts):
 *    where the work outstanding on those words can lie, for the reader
 *    of a buffer whose writer died (rb_void_dead, rb_close_dead).
 *    out_from: every slot reserved on those words that starts below it
 *    has been written; a reservation stores its own start there, inside
 *    its compare-and-store section (rseq mode; before its CAS in atomic
 *    mode), when the words had nothing outstanding but its own
 *    announcement (committed_remote read stale only makes that rarer:
 *    the bound stays low). out_to: no slot reserved on the account ends
 *    past it; every reservation stores its own end there in the same
 *    section, before write_count (an aborted section's store is of a
 *    reservation at write_count's value or later, still a bound; atomic
 *    mode: a compare-and-swap maximum). Written by writers only, read
 *    by the reader once they are gone: a dead program's slots lie in
 *    [out_from, out_to) of its account. The call sites' one-section
 *    events write before they reserve: they never leave work.
 *  void_begin, void_end: [begin, end) the sub-buffers that may hold a slot
 *    a dead writer reserved and never wrote (rb_void_dead): the reader
 *    gives them up (counted in subbufs_lost) instead of reading them, and
 *    a snapshot never copies them. Reader only (plain stores); begin ==
 *    end: none.
 *  read_count: bytes consumed; SMP CAS by the reader (Algorithm 7) and by
 *    writers pushing the reader in overwrite mode.
 *  reader_subbuf: physical index of the reader's spare (overwrite mode);
 *    reader only.
 *  events_lost: events dropped (discard mode full, would-overflow, nesting,
 *    oversized) - atomic add; written into each packet as the cumulative
 *    events_discarded.
 *  subbufs_lost: sub-buffers overwritten unread (overwrite mode pushes)
 *    or given up by the reader (rb_skip_stuck) - atomic add.
 */
struct rb_cpu_ctl {
	uint64_t write_count;
	union {
		uint64_t announced;	/* rseq mode */
		uint64_t stamp;		/* atomic mode */
	};
	uint64_t last_tsc;
	uint64_t hot_tag;
	uint64_t committed;
	uint64_t hot_off;
	uint64_t closed;
	uint64_t out_from;
	uint64_t read_count;
	uint64_t reader_subbuf;
	uint64_t void_begin;
	uint64_t void_end;
	uint8_t pad1[32];
	uint64_t events_lost;
	uint64_t subbufs_lost;
	uint64_t records_lost_reported;	/* events_lost in the last packet */
	uint8_t pad2[40];
	uint64_t committed_remote;
	uint64_t announced_smp;
	uint8_t pad3[48];
	struct rb_subbuf_ctl sb[];
};

/* A writer's account on one CPU (see accounts above). */
struct rb_acct {
	uint64_t announced;
	uint64_t committed;
	uint64_t committed_remote;
	uint64_t out_from;
	uint64_t out_to;
	uint8_t pad[24];
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
	uint32_t nr_accts;		/* writers' accounts (<= RB_MAX_ACCTS) */
};

/* Where one CPU's buffer is in this process's mapping. */
struct rb_cpu_ptrs {
	struct rb_cpu_ctl *ctl;
	char *data;		/* its physical sub-buffers */
};

/* How an atomic-mode writer learns the CPU it runs on (a hint: any
 * buffer is correct in that mode): the cpu_id of glibc's rseq area when
 * it registered one (a load), else the RDPID instruction where the CPU
 * has it (Linux keeps the CPU number in the low 12 bits of TSC_AUX, as
 * the vDSO's getcpu reads it), else sched_getcpu. */
enum rb_smp_cpu {
	RB_CPU_GETCPU = 0,
	RB_CPU_RSEQ = 1,
	RB_CPU_RDPID = 2,
};

/* Process-local handle. Owner: whoever called rb_create/rb_attach; set
 * there and constant afterwards. `fast` and `rseq_fast`, at the start,
 * are everything an event's fast path (ringbuffer_api.h) reads: keep
 * them together. */
struct rb {
	/* The fast path's view (ringtrace/internal/fast.h; call sites get a copy in
	 * their struct rt_fast_site): filled by attach, then constant. */
	struct rt_fast_buf fast;
	struct rb_cpu_ptrs *cpus;	/* [nr_cpus] */
	uint64_t subbuf_size;
	uint32_t nr_cpus;
	uint32_t num_subbuf;
	bool rseq_fast;			/* rseq and this process can use it:
					 * the inline fast path may run */
	uint32_t acct_off;		/* this process's account: its byte
					 * offset in a CPU's control area; 0:
					 * none, the CPU's own words */
	bool smp_fast;			/* atomic mode on x86-64: the fast
					 * path is rb_smp_reserve */
	uint8_t smp_cpu;		/* atomic mode: how a writer learns its
					 * CPU (enum rb_smp_cpu) */
	ptrdiff_t smp_cpu_off;		/* RB_CPU_RSEQ: __rseq_offset */
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
	uint32_t nr_accts;
	uint32_t acct_base;		/* header's acct_offset */
	struct rb_client client;
};

/* A slot reserved by the library's paths (rb_reserve), until its
 * commit. */
struct rb_slot {
	char *addr;		/* where the slot starts */
	char *ctl;		/* the CPU's control area */
	uint64_t *com;		/* the committed word its commit adds to:
				 * the CPU's own or the writer's account's */
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

/* A sub-buffer taken by the reader (rb_get_subbuf). */
struct rb_read {
	uint64_t count;		/* read_count when taken */
	uint64_t seq;		/* its packet's sequence number (rb_packet_seq) */
	char *data;		/* the packet: S bytes, the reader's until put */
	uint64_t data_size;	/* bytes used, from the commit/switch info */
};

/* What the reader remembers of a sub-buffer seen stuck (rb_skip_stuck):
 * one per CPU buffer, owned by the reader, zeroed to start. */
struct rb_stuck {
	uint64_t count;		/* read_count it was seen stuck at */
	uint64_t since;		/* when, in the caller's clock */
	bool seen;		/* count and since are set */
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

/*
 * rb_create_in: as rb_create, but in `fd`, a new empty regular file open
 * for reading and writing (`--shm-path`: the buffers outlive the
 * process, for `ringtrace recover`). Its blocks are allocated first
 * (posix_fallocate), so a full file system fails here and never as a
 * SIGBUS on an event's first touch of a page. A file cannot be sealed:
 * whoever can write it can truncate it under the mapping (only the
 * owner can: the caller creates it 0600 in a private directory). On
 * success rb owns fd (rb_destroy closes it). Returns 0 or -EINVAL (bad
 * geometry, fd not an empty regular file), -ENOSPC, -ENOMEM, -errno of
 * fstat/posix_fallocate/mmap.
 */
int rb_create_in(struct rb *rb, const struct rb_config *cfg,
		 const struct rb_client *client, int fd);

/* Validate and adopt an existing mapping (another process's buffers). Every
 * offset and size in the header is checked against `size`.
 * Returns 0 or -EINVAL (not a ringtrace buffer, bad layout), -EPROTO
 * (version). */
int rb_attach(struct rb *rb, void *map, size_t size);

/*
 * The reader's API. Everything a consumer needs from a buffer set goes
 * through the functions below (and rb_flush_cpu, rb_get_stats): nothing
 * outside this module reads the per-CPU control words or the sub-buffer
 * table. All of them take `cpu` < rb->nr_cpus; the counters they read are
 * in memory every program of the buffer set can write, so each result is
 * checked before it is used to address memory.
 */

/* Packet sequence number of the sub-buffer that starts at `begin` (a
 * read_count or write_count value at a sub-buffer start): sub-buffers
 * since the buffer was created, the number subbuf_begin receives and
 * rb_read.seq carries. A pure function of the geometry; any thread. */
static inline uint64_t rb_packet_seq(const struct rb *rb, uint64_t begin)
{
	return (begin - rb->initial_count) >> rb->geom.sbfbits;
}

/*
 * READ_GETSUBBUF (Algorithm 6): take the sub-buffer at the CPU's read
 * position if its packet is complete. On success `r` holds its read_count
 * value, its packet sequence number and its data (rb->subbuf_size bytes
 * inside this CPU's sub-buffers, even when the shared table was damaged),
 * which are the reader's until rb_put_subbuf (overwrite mode: writers do
 * not touch it; discard mode: writers do not reach it before the put).
 * Concurrency: the CPU's one reader (see the contract above); concurrent
 * with every writer.
 * Returns 0, -EAGAIN (nothing complete to take now), -EIO (the shared
 * sub-buffer table holds an index out of range: memory damaged by a
 * program; rb_skip_stuck gives that sub-buffer up), -EINVAL (cpu).
 */
int rb_get_subbuf(struct rb *rb, uint32_t cpu, struct rb_read *r);

/*
 * READ_PUTSUBBUF (Algorithm 7): give back a sub-buffer rb_get_subbuf
 * returned (and only such a one): read_count moves past it, unless a
 * writer pushed the reader past it meanwhile (overwrite mode), which
 * counted it in subbufs_lost. Concurrency: the CPU's one reader. Always
 * succeeds.
 */
void rb_put_subbuf(struct rb *rb, uint32_t cpu, const struct rb_read *r);

/*
 * Give up the sub-buffer at the CPU's read position when the writers have
 * left it (write_count is past its end) and it still cannot be taken
 * after `after` time units: a writer reserved a slot and never committed
 * it (killed -9 between rb_reserve and rb_commit, or stopped in a
 * debugger), so its commit count stays short of the pass's target and
 * every later sub-buffer of the CPU waits behind it; or its table entry
 * was damaged. The first call that sees it stuck at a read position
 * records that position and `now` in *st; a later call that finds the
 * reader still there `after` units later moves read_count past it (the
 * CAS of rb_put_subbuf) and counts it in the CPU's subbufs_lost
 * (rb_get_stats). Its content is never read, so a late commit of a writer
 * that was only slow costs data, never correctness. `now` and `after`:
 * any one clock and unit (the caller's).
 * Call it when rb_get_subbuf has nothing (-EAGAIN, -EIO) for the CPU.
 * Concurrency: the CPU's one reader (serialised with rb_get_subbuf and
 * rb_put_subbuf); `st` is the reader's.
 * Returns 1 (given up and counted), 0 (nothing stuck, not long enough, or
 * a writer's push moved the reader first and counted it), -EINVAL (cpu).
 */
int rb_skip_stuck(struct rb *rb, uint32_t cpu, struct rb_stuck *st, uint64_t now,
		  uint64_t after);

/*
 * Non-destructive read (the flight recorder's snapshot): copy complete
 * packets of a CPU's buffer without taking them, while the writers go on.
 *
 * rb_snapshot_range: the offsets [*first, *end), in steps of
 * rb->subbuf_size, of the sub-buffers that may hold complete packets not
 * yet consumed, oldest first: from the read position (or, when the
 * writers are further ahead than the buffer holds, the oldest sub-buffer
 * it can still hold) up to the one write_count is in, left out (flush
 * first, rb_flush_cpu, to close it). Returns 0 or -EINVAL (cpu).
 *
 * rb_snapshot_copy: copy the sub-buffer at offset `off` (from
 * rb_snapshot_range) into `dst` (rb->subbuf_size bytes) and check that it
 * held the complete packet of that pass for the whole copy: its commit
 * count was that pass's target and, in overwrite mode, its table entry
 * (physical index, pass tag, writer flag) stayed the same; a writer that
 * starts the next pass of a sub-buffer sets the entry's tag and flag
 * first, so a copy that raced with it fails (the seqlock pattern). *seq
 * receives the packet's sequence number. The copy is still shared-memory
 * content: check the packet itself before using it.
 * Returns 0, -EAGAIN (not complete for that pass, or overwritten before
 * or during the copy: the copy is not that packet), -EIO (the table
 * entry's index is out of range: damaged), -EINVAL (cpu).
 *
 * Concurrency: any thread, concurrently with every writer, but not with
 * the CPU's reader: in discard mode a sub-buffer given back by
 * rb_put_subbuf may be rewritten during the copy without its commit count
 * or table entry showing it (the caller serialises the snapshot with the
 * reader, as the daemon's io_lock does).
 */
int rb_snapshot_range(const struct rb *rb, uint32_t cpu, uint64_t *first, uint64_t *end);
int rb_snapshot_copy(const struct rb *rb, uint32_t cpu, uint64_t off, void *dst,
		     uint64_t *seq);

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

/*
 * Exact stop (docs/ring-buffer.md): close the CPU's buffer, then flush it
 * as rb_flush_cpu with `final` does. From then on no reservation opens a
 * packet there until rb_reopen: the writers that try are refused (not
 * recorded, counted as discarded: the next final flush or the next packet
 * carries the count). The flush runs on the CPU even when nothing is open,
 * which is the grace period: every rseq section in progress there aborts
 * and retries into the closed buffer; in atomic mode one unit announced
 * and committed makes every pending compare-and-swap retry. So an event
 * not reserved before the close never lands after its flush. A CPU this
 * thread cannot run on (outside its affinity, offline) is closed by an
 * SMP compare-and-swap, which covers only the writers that cannot run
 * there either: the reader's own process's, not other processes' (a
 * daemon confined by a cpuset races its programs' sections on that CPU:
 * docs/ring-buffer.md, exact stop). Concurrency: the CPU's reader.
 * Returns as rb_flush_cpu.
 */
int rb_close_cpu(struct rb *rb, uint32_t cpu);

/* Open every CPU's buffer again after rb_close_cpu (a session started
 * again). Any thread; the caller orders it before enabling events. */
void rb_reopen(struct rb *rb);

/* The counters of one CPU's buffer a consumer reads: each a relaxed load
 * (statistics, no ordering with the data, no two of them read at one
 * instant), in memory the programs can write (bound them before trusting
 * them). bytes_reserved - bytes_consumed is what the reader has still to
 * take (at most a buffer's worth plus the open sub-buffer). Any thread. */
struct rb_stats {
	uint64_t bytes_reserved;	/* write_count since creation */
	uint64_t bytes_consumed;	/* read_count since creation */
	uint64_t events_lost;		/* dropped by writers: the cumulative
					 * events_discarded of the packets */
	uint64_t subbufs_lost;		/* overwritten unread (overwrite
					 * mode) or given up (rb_skip_stuck) */
};
void rb_get_stats(const struct rb *rb, uint32_t cpu, struct rb_stats *st);

/*
 * Recovery (`ringtrace recover`): close the buffer of a CPU whose writers
 * are all gone (the process died; `rb` maps a private copy of its
 * buffers, with rb->client set by the caller). *outstanding receives the
 * work announced and never committed: 0 when every writer finished its
 * event; then the passes write_count left are completed (a writer may
 * have died between its commit and the completion test) and the open
 * packet is closed at write_count (subbuf_end, an SMP reservation: no
 * rseq section runs), so rb_get_subbuf hands out everything committed.
 * Otherwise a writer died between reserving and committing: its slot
 * lies at or after the lowest out_from of the words with work
 * outstanding (layout above), below which every slot is written. The
 * passes before that point are completed, the packet it is in is closed
 * there (when its header is below: the events before the dead slot are
 * read), the sub-buffers after it up to write_count's are given up
 * (rb_get_subbuf counts them in subbufs_lost; write_count moves to the
 * end of its sub-buffer), and each word set's dead slot is counted in
 * events_lost (the closed packet's events_discarded). Never a torn event
 * read. Bounds or a read position that cannot be right (damaged) leave
 * the passes not complete as they are (rb_skip_stuck gives them up).
 * Concurrency: the buffer's only user. Returns 0, -EAGAIN (the close
 * could not finish: damaged counters), -EINVAL (cpu).
 */
int rb_close_dead(struct rb *rb, uint32_t cpu, uint64_t *outstanding);

/*
 * Writers' accounts (buffers several programs write; ringbuffer.h's
 * layout, accounts). rb_use_acct: from now on this process's writers
 * announce and commit on account `acct` (1..nr_accts; 0: the CPU's own
 * words, as without accounts). Call it before the first reservation
 * through `rb`. Returns 0 or -EINVAL (acct out of range).
 */
int rb_use_acct(struct rb *rb, uint32_t acct);

/* Work announced on account `acct` (1..nr_accts) of `cpu` and not
 * committed (0 for an account out of range): relaxed loads, for a
 * reader deciding what to void or whether an account is free. */
uint64_t rb_acct_outstanding(const struct rb *rb, uint32_t cpu, uint32_t acct);

/*
 * Dead writers (docs/ring-buffer.md): for each account with work
 * outstanding on `cpu` whose owner `gone(arg, acct)` says is gone for
 * good (no thread of it can run again: its process exited, every
 * thread), void that work (add it to the account's committed_remote),
 * so that the passes it held up complete, and give up (rb_get_subbuf,
 * counted in subbufs_lost) the sub-buffers that may hold the slots it
 * reserved and never wrote: those from its account's out_from to its
 * out_to (layout above; usually the one packet its slot is in), within
 * the passes not complete and write_count's sub-buffer. A torn event is
 * never read.
 * `gone` is called only for accounts with work outstanding.
 * Concurrency: the CPU's reader (serialised with rb_get_subbuf), any
 * writers. Returns the number of accounts voided, or -EINVAL (cpu).
 */
int rb_void_dead(struct rb *rb, uint32_t cpu, bool (*gone)(void *arg, uint32_t acct),
		 void *arg);

/* Count an event as lost on a CPU's buffer (async-signal-safe). */
void rb_count_lost(struct rb *rb, uint32_t cpu);

/* Whether this process can use rseq sections (glibc registered rseq). */
bool rb_rseq_usable(void);

#endif /* RINGTRACE_RINGBUFFER_H */
