/*
 * trig_ring.h - the notification ring of a traced program: where the
 * library writes that one of its events matched an event-rule-matches
 * trigger, and where the daemon reads it (docs/triggers.md). One ring per
 * program, in a sealed memfd the daemon creates and hands over with the
 * program's first RTP_APP_TRIGGERS message (app_proto.h).
 *
 * Layout (host byte order, both ends on one machine; offsets in bytes):
 *
 * Header, RTTR_HEADER_SIZE (256) bytes:
 *    0  u32  magic RTTR_MAGIC ("RTTR" in memory order)
 *    4  u32  version RTTR_VERSION
 *    8  u32  nr_slots N: a power of two, 2 .. RTTR_MAX_SLOTS
 *   12  u32  slot_size S: a multiple of 8, RTTR_SLOT_MIN .. RTTR_SLOT_MAX
 *   16  48 bytes reserved, 0
 *   64  u64  head: tickets taken by writers (compare-and-swap); its own
 *            cache line, as are the next two
 *  128  u64  tail: tickets the reader is done with (the reader's release
 *            store after it copied a slot out)
 *  192  u64  lost: matches not written because the ring was full
 * Slots: slot i (0 .. N-1) at RTTR_HEADER_SIZE + i * S, ticket T in slot
 * T mod N:
 *    0  u64  commit: T + 1 once the slot's content for ticket T is
 *            complete (release store, the writer's last)
 *    8  u64  token: the trigger's (RTP_APP_TRIGGERS)
 *   16  u64  time: CLOCK_REALTIME nanoseconds of the match
 *   24  u32  pid
 *   28  u32  tid
 *   32  u32  len: bytes of capture records that follow (<= S - 40)
 *   36  u32  nr_captures C (<= RTTR_MAX_CAPTURES): one per --capture of
 *            the trigger, in its order
 *   40  C capture records, packed:
 *        0  u8   type (enum rttr_type)
 *        1  u8   reserved, 0
 *        2  u16  value length L: 8 for the numbers, the bytes of a
 *                string (no NUL) or of a byte sequence (cut to what
 *                fits the slot)
 *        4  L bytes of value (u64 / i64 / double as 8 bytes)
 *
 * Writer (the traced program, rttr_write): takes ticket T = head with a
 * compare-and-swap only while T - tail < N (tail loaded with acquire:
 * pairs with the reader's release store, so the slot is no longer being
 * copied); with the ring full it adds 1 to lost and returns at once. It
 * never waits, takes no lock and makes no system call: a match costs a
 * few stores, a full ring loses the notification (counted). A writer
 * killed between its ticket and its commit leaves a slot that is never
 * committed: the reader skips it after RTTR_STUCK_MS and counts it lost.
 *
 * Reader (the daemon, rttr_read): copies slot `tail` out once its commit
 * equals tail + 1 (acquire load: pairs with the writer's release store),
 * checks everything in its copy, then release-stores tail + 1. Every
 * byte of the ring is input from another process: the reader keeps its
 * own tail and geometry, reads head and lost as mere numbers, bounds
 * every length by its copy, and refuses a slot that does not parse
 * (counted, skipped). The writer likewise trusts only the geometry it
 * checked at attach time (rttr_attach): the daemon may scribble on the
 * header, which then costs lost notifications, never a write out of the
 * mapping.
 *
 * Errors: negative errno, listed per function.
 * Concurrency: any number of writer threads (and signal handlers) at once
 * on one ring; one reader.
 */
#ifndef RINGTRACE_TRIG_RING_H
#define RINGTRACE_TRIG_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RTTR_MAGIC 0x52545452u		/* "RTTR" */
#define RTTR_VERSION 1
#define RTTR_HEADER_SIZE 256
#define RTTR_SLOT_HEADER 40
#define RTTR_SLOT_MIN 64
#define RTTR_SLOT_MAX 4096
#define RTTR_MAX_SLOTS 4096
#define RTTR_MAX_CAPTURES 64
#define RTTR_CAPTURE_HEADER 4
/* A slot taken and not committed for this long is given up. */
#define RTTR_STUCK_MS 100
/* What the daemon creates. */
#define RTTR_DEFAULT_SLOTS 256
#define RTTR_DEFAULT_SLOT_SIZE 512

enum rttr_type {
	RTTR_NONE = 0,		/* not available (no such field, or no room) */
	RTTR_S64 = 1,
	RTTR_U64 = 2,
	RTTR_DOUBLE = 3,
	RTTR_STRING = 4,
	RTTR_BYTES = 5,		/* a byte sequence (s.p, s.len) */
};

/* A ring as one side sees it: its own copy of the geometry. */
struct rttr_ring {
	char *base;			/* the mapping */
	size_t size;
	uint32_t nr_slots;
	uint32_t slot_size;
};

/* One captured value. */
struct rttr_value {
	enum rttr_type type;
	union {
		int64_t i;
		uint64_t u;
		double d;
		struct {
			const char *p;
			size_t len;
		} s;
	};
};

/* One notification. */
struct rttr_record {
	uint64_t token;
	uint64_t time_ns;
	uint32_t pid;
	uint32_t tid;
	uint32_t nr_captures;
	struct rttr_value captures[RTTR_MAX_CAPTURES];
};

/* The bytes of a ring of that geometry, or 0 if the geometry is not one
 * the layout allows. */
size_t rttr_size(uint32_t nr_slots, uint32_t slot_size);

/* Daemon: a new ring in a sealed memfd (sealed against shrinking and
 * growing, as buffer sets are), mapped. 0 and *fd (close-on-exec), or
 * -EINVAL (geometry), -errno of memfd_create/ftruncate/fcntl/mmap. */
int rttr_create(struct rttr_ring *r, uint32_t nr_slots, uint32_t slot_size, int *fd);
/* Program: map the ring in memfd `fd` (received: checked to be sealed,
 * its size and header to agree). 0, or -EPROTO (not sealed, not a ring,
 * size mismatch), -errno of mmap. */
int rttr_attach(struct rttr_ring *r, int fd);
void rttr_unmap(struct rttr_ring *r);

/* Writer: one notification (strings cut to what fits the slot, captures
 * past the room: RTTR_NONE). true, or false when the ring was full (lost
 * counted). Lock-free, no system call, no allocation, async-signal-safe. */
bool rttr_write(const struct rttr_ring *r, const struct rttr_record *rec);

/* Reader state: owned by the reader, zeroed to start. */
struct rttr_reader {
	uint64_t tail;
	uint64_t lost_seen;		/* the ring's lost counter at the last read */
	int64_t stuck_since_ms;		/* slot `tail` taken, not committed, since */
	bool stuck;
	uint64_t refused;		/* slots that did not parse */
	uint64_t given_up;		/* slots never committed */
	char copy[RTTR_SLOT_MAX];	/* the record's strings point here */
};

/* Reader: the next notification into *rec (strings valid until the next
 * call). 1: one read; 0: none ready; -EPROTO: slot `tail` did not parse
 * (skipped, counted in refused; call again). `now_ms` is any monotonic
 * clock in ms (for RTTR_STUCK_MS). */
int rttr_read(const struct rttr_ring *r, struct rttr_reader *rd, int64_t now_ms,
	      struct rttr_record *rec);
/* Reader: matches the writers lost (ring full) since the last call. */
uint64_t rttr_lost(const struct rttr_ring *r, struct rttr_reader *rd);

#endif /* RINGTRACE_TRIG_RING_H */
