/*
 * trig_ring.c - the notification ring (layout and rules in trig_ring.h).
 */
#define _GNU_SOURCE
#include "trig_ring.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../ringbuffer/ringbuffer.h"

#define OFF_MAGIC 0
#define OFF_VERSION 4
#define OFF_NR_SLOTS 8
#define OFF_SLOT_SIZE 12
#define OFF_HEAD 64
#define OFF_TAIL 128
#define OFF_LOST 192

#define SLOT_COMMIT 0
#define SLOT_TOKEN 8
#define SLOT_TIME 16
#define SLOT_PID 24
#define SLOT_TID 28
#define SLOT_LEN 32
#define SLOT_NR 36

/* A writer gives up (counted lost) after this many lost races for head:
 * only a daemon that keeps changing it could make it lose that often. */
#define RTTR_CAS_TRIES 64

size_t rttr_size(uint32_t nr_slots, uint32_t slot_size)
{
	if (nr_slots < 2 || nr_slots > RTTR_MAX_SLOTS || (nr_slots & (nr_slots - 1)) ||
	    slot_size < RTTR_SLOT_MIN || slot_size > RTTR_SLOT_MAX || slot_size % 8)
		return 0;
	return RTTR_HEADER_SIZE + (size_t)nr_slots * slot_size;
}

static uint64_t *word(const struct rttr_ring *r, size_t off)
{
	return (uint64_t *)(void *)(r->base + off);
}

static char *slot_of(const struct rttr_ring *r, uint64_t ticket)
{
	return r->base + RTTR_HEADER_SIZE + (size_t)(ticket & (r->nr_slots - 1)) * r->slot_size;
}

int rttr_create(struct rttr_ring *r, uint32_t nr_slots, uint32_t slot_size, int *fd)
{
	size_t size = rttr_size(nr_slots, slot_size);
	int ret;
	if (!size)
		return -EINVAL;
	int mfd = memfd_create("ringtrace-triggers", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0)
		return -errno;
	/* Sealed at its size, like a buffer set (ringbuffer.h's RB_SEALS):
	 * the program's mapping can never turn into SIGBUS. */
	if (ftruncate(mfd, (off_t)size) < 0 ||
	    fcntl(mfd, F_ADD_SEALS, RB_SEALS | F_SEAL_SEAL) < 0) {
		ret = -errno;
		goto close_fd;
	}
	void *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (map == MAP_FAILED) {
		ret = -errno;
		goto close_fd;
	}
	*r = (struct rttr_ring){ .base = map, .size = size, .nr_slots = nr_slots,
				 .slot_size = slot_size };
	uint32_t v[4] = { RTTR_MAGIC, RTTR_VERSION, nr_slots, slot_size };
	memcpy(r->base, v, sizeof(v));
	*fd = mfd;
	return 0;
close_fd:
	close(mfd);
	return ret;
}

int rttr_attach(struct rttr_ring *r, int fd)
{
	if (rb_check_sealed(fd) < 0)
		return -EPROTO;
	off_t end = lseek(fd, 0, SEEK_END);
	if (end < (off_t)RTTR_HEADER_SIZE || end > (off_t)rttr_size(RTTR_MAX_SLOTS, RTTR_SLOT_MAX))
		return -EPROTO;
	void *map = mmap(NULL, (size_t)end, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	uint32_t v[4];
	memcpy(v, map, sizeof(v));
	if (v[0] != RTTR_MAGIC || v[1] != RTTR_VERSION || rttr_size(v[2], v[3]) != (size_t)end) {
		munmap(map, (size_t)end);
		return -EPROTO;
	}
	/* From now on only these copies count: the header may change. */
	*r = (struct rttr_ring){ .base = map, .size = (size_t)end, .nr_slots = v[2],
				 .slot_size = v[3] };
	return 0;
}

void rttr_unmap(struct rttr_ring *r)
{
	if (r->base)
		munmap(r->base, r->size);
	r->base = NULL;
}

/* The capture records of rec into p[0 .. room): as many as fit (a
 * string cut to the room left). Returns the bytes written; *nr the
 * records. */
static uint32_t write_captures(char *p, uint32_t room, const struct rttr_record *rec,
			       uint32_t *nr)
{
	uint32_t pos = 0, n = 0;
	for (uint32_t i = 0; i < rec->nr_captures && i < RTTR_MAX_CAPTURES; i++) {
		const struct rttr_value *v = &rec->captures[i];
		if (room - pos < RTTR_CAPTURE_HEADER)
			break;
		uint8_t type = (uint8_t)v->type;
		const void *src = &v->u;
		size_t len = 8, left = room - pos - RTTR_CAPTURE_HEADER;
		if (v->type == RTTR_STRING || v->type == RTTR_BYTES) {
			src = v->s.p;
			len = v->s.len < left ? v->s.len : left;
			if (len > UINT16_MAX)
				len = UINT16_MAX;
		} else if (v->type != RTTR_S64 && v->type != RTTR_U64 &&
			   v->type != RTTR_DOUBLE) {
			type = RTTR_NONE;
			len = 0;
		}
		if (len > left) {
			type = RTTR_NONE;
			len = 0;
		}
		uint16_t l16 = (uint16_t)len;
		p[pos] = (char)type;
		p[pos + 1] = 0;
		memcpy(p + pos + 2, &l16, sizeof(l16));
		if (len)
			memcpy(p + pos + RTTR_CAPTURE_HEADER, src, len);
		pos += RTTR_CAPTURE_HEADER + (uint32_t)len;
		n++;
	}
	*nr = n;
	return pos;
}

bool rttr_write(const struct rttr_ring *r, const struct rttr_record *rec)
{
	uint64_t *head = word(r, OFF_HEAD);
	/* Relaxed: the compare-and-swap below decides. */
	uint64_t t = __atomic_load_n(head, __ATOMIC_RELAXED);
	bool got = false;
	for (int i = 0; i < RTTR_CAS_TRIES && !got; i++) {
		/* Acquire: pairs with the reader's release store of tail: its
		 * copy of the slot we may take is complete. */
		uint64_t done = __atomic_load_n(word(r, OFF_TAIL), __ATOMIC_ACQUIRE);
		if (t - done >= r->nr_slots)
			break;
		/* Relaxed: the ticket only picks the slot; what the slot holds
		 * is published by its commit's release store. On failure t is
		 * the current head. */
		got = __atomic_compare_exchange_n(head, &t, t + 1, false, __ATOMIC_RELAXED,
						  __ATOMIC_RELAXED);
	}
	if (!got) {
		/* Relaxed: a counter, read as a number by the daemon. */
		__atomic_fetch_add(word(r, OFF_LOST), 1, __ATOMIC_RELAXED);
		return false;
	}
	char *s = slot_of(r, t);
	uint32_t nr, len = write_captures(s + RTTR_SLOT_HEADER,
					  r->slot_size - RTTR_SLOT_HEADER, rec, &nr);
	memcpy(s + SLOT_TOKEN, &rec->token, 8);
	memcpy(s + SLOT_TIME, &rec->time_ns, 8);
	memcpy(s + SLOT_PID, &rec->pid, 4);
	memcpy(s + SLOT_TID, &rec->tid, 4);
	memcpy(s + SLOT_LEN, &len, 4);
	memcpy(s + SLOT_NR, &nr, 4);
	/* Release: the slot's content is complete before the reader sees
	 * the commit (its acquire load in rttr_read). */
	__atomic_store_n((uint64_t *)(void *)(s + SLOT_COMMIT), t + 1, __ATOMIC_RELEASE);
	return true;
}

/* Parse the copy of a slot into rec. 0 or -EPROTO. */
static int parse(const char *c, uint32_t slot_size, struct rttr_record *rec)
{
	uint32_t len, nr;
	memcpy(&rec->token, c + SLOT_TOKEN, 8);
	memcpy(&rec->time_ns, c + SLOT_TIME, 8);
	memcpy(&rec->pid, c + SLOT_PID, 4);
	memcpy(&rec->tid, c + SLOT_TID, 4);
	memcpy(&len, c + SLOT_LEN, 4);
	memcpy(&nr, c + SLOT_NR, 4);
	if (len > slot_size - RTTR_SLOT_HEADER || nr > RTTR_MAX_CAPTURES)
		return -EPROTO;
	const char *p = c + RTTR_SLOT_HEADER;
	uint32_t pos = 0;
	for (uint32_t i = 0; i < nr; i++) {
		struct rttr_value *v = &rec->captures[i];
		uint16_t l;
		if (len - pos < RTTR_CAPTURE_HEADER)
			return -EPROTO;
		uint8_t type = (uint8_t)p[pos];
		memcpy(&l, p + pos + 2, sizeof(l));
		pos += RTTR_CAPTURE_HEADER;
		if (l > len - pos)
			return -EPROTO;
		switch (type) {
		case RTTR_NONE:
			if (l)
				return -EPROTO;
			v->type = RTTR_NONE;
			break;
		case RTTR_S64:
		case RTTR_U64:
		case RTTR_DOUBLE:
			if (l != 8)
				return -EPROTO;
			v->type = (enum rttr_type)type;
			memcpy(&v->u, p + pos, 8);
			break;
		case RTTR_STRING:
		case RTTR_BYTES:
			v->type = (enum rttr_type)type;
			v->s.p = p + pos;
			v->s.len = l;
			break;
		default:
			return -EPROTO;
		}
		pos += l;
	}
	if (pos != len)
		return -EPROTO;
	rec->nr_captures = nr;
	return 0;
}

static void advance(const struct rttr_ring *r, struct rttr_reader *rd)
{
	rd->tail++;
	rd->stuck = false;
	/* Release: our copy of the slot is complete before a writer can
	 * take it again (its acquire load of tail). */
	__atomic_store_n(word(r, OFF_TAIL), rd->tail, __ATOMIC_RELEASE);
}

int rttr_read(const struct rttr_ring *r, struct rttr_reader *rd, int64_t now_ms,
	      struct rttr_record *rec)
{
	const char *s = slot_of(r, rd->tail);
	const uint64_t *commit = (const uint64_t *)(const void *)(s + SLOT_COMMIT);
	/* Acquire: pairs with the writer's release store of commit. */
	if (__atomic_load_n(commit, __ATOMIC_ACQUIRE) != rd->tail + 1) {
		/* Relaxed: a number to compare; head orders nothing here. */
		uint64_t head = __atomic_load_n(word(r, OFF_HEAD), __ATOMIC_RELAXED);
		if (head - rd->tail - 1 >= (1ull << 63)) {
			rd->stuck = false;	/* not taken yet: nothing to read */
			return 0;
		}
		if (!rd->stuck) {
			rd->stuck = true;
			rd->stuck_since_ms = now_ms;
		}
		if (now_ms - rd->stuck_since_ms < RTTR_STUCK_MS)
			return 0;
		rd->given_up++;		/* a writer died between ticket and commit */
		advance(r, rd);
		return 0;
	}
	memcpy(rd->copy, s, r->slot_size);
	/* Acquire fence: the copy is done before commit is read again. A
	 * slot rewritten meanwhile (a writer given up for dead that came
	 * back) shows as a changed commit. */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	bool same = __atomic_load_n(commit, __ATOMIC_RELAXED) == rd->tail + 1;
	int ret = same ? parse(rd->copy, r->slot_size, rec) : -EPROTO;
	if (ret < 0)
		rd->refused++;
	advance(r, rd);
	return ret < 0 ? ret : 1;
}

uint64_t rttr_lost(const struct rttr_ring *r, struct rttr_reader *rd)
{
	/* Relaxed: a counter the program keeps; only its value matters. */
	uint64_t v = __atomic_load_n(word(r, OFF_LOST), __ATOMIC_RELAXED);
	uint64_t d = v >= rd->lost_seen ? v - rd->lost_seen : 0;
	rd->lost_seen = v;
	return d;
}
