/*
 * probe.c - the probe: called by an enabled call site, reserves a slot in
 * this CPU's buffer (the clock is read in the reservation loop), writes
 * the CTF event header, and commits after the call site wrote the payload.
 *
 * Fast path: no lock, no system call, no allocation, no floating point.
 * Reentrant: a signal handler that traces while this thread is between
 * rt__reserve and rt__commit gets the next slot; nesting deeper than
 * RT_MAX_NESTING drops the event and counts it.
 */
#include <string.h>

#include "../ringbuffer/ringbuffer_api.h"
#include "rt_internal.h"

/* Probe nesting depth of this thread (initial-exec: no allocation and no
 * lock on first use, unlike the general-dynamic TLS model). */
static __thread uint32_t rt_nesting __attribute__((tls_model("initial-exec")));

/* What rt_slot.opaque holds between reserve and commit. */
struct rt_slot_priv {
	struct rb_ctx ctx;
	struct rt_channel *ch;
};
_Static_assert(sizeof(struct rt_slot_priv) <= sizeof(((struct rt_slot *)0)->opaque),
	       "rt_slot too small");

static RT_NOINLINE void rt_drop(struct rt_channel *ch)
{
	int32_t cpu = 0;
	if (rb_rseq_usable())
		cpu = rb_rseq_cpu(rb_rseq_area());
	rb_count_lost(&ch->rb, (uint32_t)cpu);
}

/* The probe's two halves, inlined into each exported entry point (a call
 * between exported functions would go through the PLT). */
static inline __attribute__((always_inline)) bool
probe_reserve(struct rt_event_desc *ev, size_t payload_size, struct rt_slot *slot)
{
	/* Acquire: pairs with the release stores that published the class
	 * (registry) and the channel (session start). */
	const struct rt_event_class *c = __atomic_load_n(&ev->priv, __ATOMIC_ACQUIRE);
	struct rt_channel *ch = __atomic_load_n(&rt_active_channel, __ATOMIC_ACQUIRE);
	if (__builtin_expect(!c || !ch, 0))
		return false;
	if (__builtin_expect(rt_nesting >= RT_MAX_NESTING ||
				     payload_size > ch->rb.subbuf_size,
			     0)) {
		rt_drop(ch);
		return false;
	}
	rt_nesting++;
	struct rt_slot_priv *sp = (struct rt_slot_priv *)slot->opaque;
	sp->ch = ch;
	sp->ctx.payload_size = (uint32_t)payload_size;
	sp->ctx.hdr_compact = c->hdr_compact;
	sp->ctx.hdr_full = CTF_EVENT_HEADER_EXTENDED;
	if (__builtin_expect(rb_reserve(&ch->rb, &sp->ctx, rt_clock_read) != 0, 0)) {
		rt_nesting--;
		return false;
	}
	slot->p = sp->ctx.addr + ctf_write_event_header(sp->ctx.addr, c->id,
							sp->ctx.tsc,
							sp->ctx.full_tsc);
	return true;
}

/* Copy a small payload whose size is known only at run time without a
 * call to memcpy: most are a few bytes. */
static inline void rt_copy(char *dst, const char *src, size_t n)
{
	if (n <= 16) {
		if (n >= 8) {
			uint64_t a, b;
			memcpy(&a, src, 8);
			memcpy(&b, src + n - 8, 8);
			memcpy(dst, &a, 8);
			memcpy(dst + n - 8, &b, 8);
		} else if (n >= 4) {
			uint32_t a, b;
			memcpy(&a, src, 4);
			memcpy(&b, src + n - 4, 4);
			memcpy(dst, &a, 4);
			memcpy(dst + n - 4, &b, 4);
		} else {
			for (size_t i = 0; i < n; i++)
				dst[i] = src[i];
		}
		return;
	}
	memcpy(dst, src, n);
}

static inline __attribute__((always_inline)) bool probe_commit(struct rt_slot *slot)
{
	struct rt_slot_priv *sp = (struct rt_slot_priv *)slot->opaque;
	rb_commit(&sp->ch->rb, &sp->ctx);
	rt_nesting--;
	return false;
}

bool rt__reserve(struct rt_event_desc *ev, size_t payload_size,
		 struct rt_slot *slot)
{
	return probe_reserve(ev, payload_size, slot);
}

bool rt__commit(struct rt_slot *slot)
{
	return probe_commit(slot);
}

void rt__record(struct rt_event_desc *ev, const void *payload, size_t size)
{
	struct rt_slot slot;
	if (!probe_reserve(ev, size, &slot))
		return;
	do
		rt_copy(slot.p, payload, size);
	while (probe_commit(&slot));
}
