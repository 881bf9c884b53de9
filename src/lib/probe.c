/*
 * probe.c - the probe: called by an enabled call site, reserves a slot in
 * this CPU's buffer (the clock is read in the reservation loop), writes
 * the CTF event header, and commits after the call site wrote the payload.
 *
 * Two modes. Embedded (`ringtrace record` without a daemon): one channel,
 * rt_active_channel, the path below inlined into each entry point. Daemon
 * mode: the class's target table (daemon_client.h) lists every buffer
 * set (channel of a session, per uid or per pid) the event goes to; the
 * slot is reserved in the first target that has room, and rt__commit
 * reserves the next one and returns true while targets remain, so the
 * call site writes the payload once per target. After the header come
 * the buffer set's contexts (dp.h), then the payload. A table with one
 * target (one channel of one session records the event: the common
 * case) takes embedded mode's inlined path with that buffer; only tables
 * with several targets go through the noinline loop (daemon_reserve,
 * daemon_next, daemon_record).
 *
 * Context values: vpid, procname and hostname are cached at registration;
 * vtid and prio are cached per thread by its first event in daemon mode
 * (gettid and getpriority: one system call each, once per thread; prio is
 * not refreshed when the thread's nice value changes later); cpu_id is
 * the buffer's CPU; ip is the return address of the probe call in the
 * instrumented code.
 *
 * Fast path: no lock, no system call (but the one-time context cache
 * above), no allocation, no floating point. rt__record's common case
 * (record_fast) is the ring buffer's inline fast path with the header
 * and payload writes between its reservation and commit, and nothing
 * else. Reentrant: a signal handler that traces while this thread is
 * between rt__reserve and rt__commit gets the next slot; nesting of
 * rt__reserve deeper than RT_MAX_NESTING drops the event and counts it.
 */
#define _GNU_SOURCE
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../daemon/rtd.h"
#include "../ringbuffer/ringbuffer_api.h"
#include "daemon_client.h"
#include "rt_internal.h"

/* Probe nesting depth of this thread (initial-exec: no allocation and no
 * lock on first use, unlike the general-dynamic TLS model). */
static __thread uint32_t rt_nesting __attribute__((tls_model("initial-exec")));

/* Daemon mode: where a multi-target event is, per nesting level (a
 * nested probe in a signal handler uses the next level and is done
 * before the interrupted one continues). */
struct rt_multi {
	const struct rt_target_set *set;
	uint32_t idx;			/* target being written */
	uint32_t payload;		/* bytes after the contexts */
	uintptr_t ip;
};
static __thread struct rt_multi rt_multi[RT_MAX_NESTING]
	__attribute__((tls_model("initial-exec")));
static __thread int32_t rt_tid __attribute__((tls_model("initial-exec")));
static __thread int32_t rt_prio __attribute__((tls_model("initial-exec")));

/* What rt_slot.opaque holds between reserve and commit. */
struct rt_slot_priv {
	struct rb *rb;
	struct rb_fast r;		/* the slot (rb_reserve's ctx.r) */
	uint32_t slot_size;
	uint32_t multi;			/* daemon mode: rt_multi[] is in use */
};
_Static_assert(sizeof(struct rt_slot_priv) <= sizeof(((struct rt_slot *)0)->opaque),
	       "rt_slot too small");

static RT_NOINLINE void rt_drop(struct rb *rb)
{
	int32_t cpu = 0;
	if (rb_rseq_usable())
		cpu = rb_rseq_cpu(rb_rseq_off());
	rb_count_lost(rb, (uint32_t)cpu);
}

static RT_NOINLINE void fill_thread_cache(void)
{
	rt_tid = (int32_t)gettid();
	rt_prio = 20 + getpriority(PRIO_PROCESS, 0);
}

/* The buffer set's contexts, in its order (dp.h: packed, byte-aligned). */
static char *write_contexts(char *p, const struct rt_dbuf *b, int32_t cpu,
			    uintptr_t ip)
{
	for (uint32_t i = 0; i < b->nr_ctx; i++) {
		switch (b->ctx[i]) {
		case RTD_CTX_VPID:
			memcpy(p, &rt_dc_pid, 4);
			p += 4;
			break;
		case RTD_CTX_VTID:
			if (__builtin_expect(!rt_tid, 0))
				fill_thread_cache();
			memcpy(p, &rt_tid, 4);
			p += 4;
			break;
		case RTD_CTX_PROCNAME:
			memcpy(p, rt_dc_procname, rt_dc_procname_size);
			p += rt_dc_procname_size;
			break;
		case RTD_CTX_CPU_ID:
			memcpy(p, &cpu, 4);
			p += 4;
			break;
		case RTD_CTX_IP: {
			uint64_t v = ip;
			memcpy(p, &v, 8);
			p += 8;
			break;
		}
		case RTD_CTX_PRIO:
			if (__builtin_expect(!rt_tid, 0))
				fill_thread_cache();
			memcpy(p, &rt_prio, 4);
			p += 4;
			break;
		case RTD_CTX_HOSTNAME:
			memcpy(p, rt_dc_hostname, rt_dc_hostname_size);
			p += rt_dc_hostname_size;
			break;
		default:
			break;
		}
	}
	return p;
}

/* Reserve targets idx.. of the set until one has room; false when none
 * does. Nesting was counted by the caller. */
static bool targets_reserve(struct rt_slot *slot, const struct rt_target_set *set,
			    uint32_t idx, uint32_t payload, uintptr_t ip)
{
	struct rt_slot_priv *sp = (struct rt_slot_priv *)slot->opaque;
	for (; idx < set->nr; idx++) {
		const struct rt_target *t = &set->t[idx];
		struct rb *rb = &t->buf->rb;
		uint64_t size = (uint64_t)payload + t->buf->ctx_size;
		if (__builtin_expect(size > rb->subbuf_size, 0)) {
			rt_drop(rb);
			continue;
		}
		sp->rb = rb;
		sp->multi = 1;
		struct rb_ctx ctx = { .payload_size = (uint32_t)size,
				      .hdr_compact = t->hdr_compact,
				      .hdr_full = CTF_EVENT_HEADER_EXTENDED };
		if (rb_reserve(rb, &ctx, rt_clock_read) != 0)
			continue;
		sp->r = ctx.r;
		sp->slot_size = ctx.slot_size;
		char *p = ctx.r.addr + ctf_write_event_header(ctx.r.addr, t->id, ctx.r.tsc,
							      ctx.full_tsc);
		slot->p = write_contexts(p, t->buf, ctx.r.cpu, ip);
		struct rt_multi *m = &rt_multi[rt_nesting - 1];
		m->set = set;
		m->idx = idx;
		m->payload = payload;
		m->ip = ip;
		return true;
	}
	return false;
}

/* The class's daemon-mode target table, NULL when no session records it. */
static inline const struct rt_target_set *daemon_targets(const struct rt_event_class *c)
{
	/* Acquire: pairs with the release store that published the table
	 * (daemon_targets.c): the table and its buffer sets are complete. */
	return __atomic_load_n(&c->targets, __ATOMIC_ACQUIRE);
}

/* Daemon mode's general reserve: the first target of the table `set`
 * (from daemon_targets(), may be NULL) that has room. */
static RT_NOINLINE bool daemon_reserve(const struct rt_target_set *set,
				       size_t payload_size, struct rt_slot *slot,
				       uintptr_t ip)
{
	if (!set || payload_size > UINT32_MAX)
		return false;
	if (rt_nesting >= RT_MAX_NESTING) {
		rt_drop(&set->t[0].buf->rb);
		return false;
	}
	rt_nesting++;
	if (targets_reserve(slot, set, 0, (uint32_t)payload_size, ip))
		return true;
	rt_nesting--;
	return false;
}

/* After a daemon-mode commit: the next target, if any. */
static RT_NOINLINE bool daemon_next(struct rt_slot *slot)
{
	const struct rt_multi *m = &rt_multi[rt_nesting - 1];
	if (targets_reserve(slot, m->set, m->idx + 1, m->payload, m->ip))
		return true;
	rt_nesting--;
	return false;
}

/* Where an event written to one buffer goes: embedded mode's channel, or
 * daemon mode's only target. Filled by rt_pick_one(), on the stack. */
struct rt_one {
	struct rb *rb;
	const struct rt_dbuf *dbuf;	/* daemon mode: its contexts; NULL: embedded mode */
	uint64_t size;			/* contexts + payload (64-bit: cannot wrap) */
	uint32_t id;			/* CTF event id in that buffer's trace */
	uint16_t hdr_compact;		/* compact event header size */
};

/* Embedded mode: the event goes to channel ch. */
static inline __attribute__((always_inline)) void
rt_pick_embedded(const struct rt_event_class *c, struct rt_channel *ch,
		 size_t payload_size, struct rt_one *o)
{
	o->rb = &ch->rb;
	o->dbuf = NULL;
	o->size = payload_size;
	o->id = c->id;
	o->hdr_compact = c->hdr_compact;
}

/* Daemon mode with one target (one session's one channel records the
 * event: the common case): fill *o and return true. No target or several:
 * false, *set = the class's table (may be NULL) for the general, noinline
 * path. */
static inline __attribute__((always_inline)) bool
rt_pick_daemon(const struct rt_event_class *c, size_t payload_size, struct rt_one *o,
	       const struct rt_target_set **set)
{
	const struct rt_target_set *s = daemon_targets(c);
	*set = s;
	if (!s || s->nr != 1)
		return false;
	const struct rt_target *t = &s->t[0];
	o->rb = &t->buf->rb;
	o->dbuf = t->buf;
	o->size = (uint64_t)payload_size + t->buf->ctx_size;
	o->id = t->id;
	o->hdr_compact = t->hdr_compact;
	return true;
}

/* Embedded mode, or daemon mode with one target: as rt_pick_daemon. */
static inline __attribute__((always_inline)) bool
rt_pick_one(const struct rt_event_class *c, struct rt_channel *ch,
	    size_t payload_size, struct rt_one *o, const struct rt_target_set **set)
{
	if (__builtin_expect(ch != NULL, 1)) {
		rt_pick_embedded(c, ch, payload_size, o);
		return true;
	}
	return rt_pick_daemon(c, payload_size, o, set);
}

/* Reserve in o's buffer and write the event header (and daemon mode's
 * contexts); returns where the payload goes, or NULL (dropped, counted).
 * Inlined into the exported entry points (a call between exported
 * functions would go through the PLT); `ctx` is a local of the caller. */
static inline __attribute__((always_inline)) char *
one_reserve(const struct rt_one *o, uintptr_t ip, struct rb_ctx *ctx)
{
	if (__builtin_expect(o->size > o->rb->subbuf_size, 0)) {
		rt_drop(o->rb);
		return NULL;
	}
	ctx->payload_size = (uint32_t)o->size;
	ctx->hdr_compact = o->hdr_compact;
	ctx->hdr_full = CTF_EVENT_HEADER_EXTENDED;
	if (__builtin_expect(rb_reserve(o->rb, ctx, rt_clock_read) != 0, 0))
		return NULL;
	char *p = ctx->r.addr + ctf_write_event_header(ctx->r.addr, o->id, ctx->r.tsc,
						     ctx->full_tsc);
	if (o->dbuf && o->dbuf->nr_ctx)
		p = write_contexts(p, o->dbuf, ctx->r.cpu, ip);
	return p;
}

/* rt__reserve's one-buffer case: one_reserve with the nesting level
 * counted (the call site's code runs before rt__commit). */
static inline __attribute__((always_inline)) bool
one_reserve_slot(const struct rt_one *o, uintptr_t ip, struct rt_slot *slot)
{
	struct rt_slot_priv *sp = (struct rt_slot_priv *)slot->opaque;
	if (__builtin_expect(rt_nesting >= RT_MAX_NESTING, 0)) {
		rt_drop(o->rb);
		return false;
	}
	rt_nesting++;
	sp->rb = o->rb;
	sp->multi = 0;
	struct rb_ctx ctx;
	char *p = one_reserve(o, ip, &ctx);
	if (__builtin_expect(!p, 0)) {
		rt_nesting--;
		return false;
	}
	sp->r = ctx.r;
	sp->slot_size = ctx.slot_size;
	slot->p = p;
	return true;
}

/* Copy a small payload whose size is known only at run time without a
 * call to memcpy: most are a few bytes, and rt__record's fast path takes
 * at most RT_FAST_PAYLOAD. */
struct rt_u128 {
	uint64_t w[2];
};

/* Copy n bytes, sizeof(T) <= n <= 2 * sizeof(T), as two possibly
 * overlapping T-sized moves (the first and the last sizeof(T) bytes). */
#define RT_COPY_ENDS(T, dst, src, n)                                           \
	do {                                                                   \
		T a_, b_;                                                      \
		memcpy(&a_, (src), sizeof(T));                                 \
		memcpy(&b_, (src) + (n) - sizeof(T), sizeof(T));               \
		memcpy((dst), &a_, sizeof(T));                                 \
		memcpy((dst) + (n) - sizeof(T), &b_, sizeof(T));               \
	} while (0)

static inline __attribute__((always_inline)) void rt_copy(char *dst, const char *src,
							  size_t n)
{
	if (n > 32)
		memcpy(dst, src, n);
	else if (n >= 16)
		RT_COPY_ENDS(struct rt_u128, dst, src, n);
	else if (n >= 8)
		RT_COPY_ENDS(uint64_t, dst, src, n);
	else if (n >= 4)
		RT_COPY_ENDS(uint32_t, dst, src, n);
	else
		for (size_t i = 0; i < n; i++)
			dst[i] = src[i];
}

/* Daemon mode, events written in one call: every target in turn. */
static RT_NOINLINE void daemon_record(const struct rt_target_set *set,
				      const void *payload, size_t size, uintptr_t ip)
{
	struct rt_slot slot;
	if (!daemon_reserve(set, size, &slot, ip))
		return;
	struct rt_slot_priv *sp = (struct rt_slot_priv *)slot.opaque;
	do {
		rt_copy(slot.p, payload, size);
		rb_fast_commit(sp->rb, &sp->r, sp->slot_size);
	} while (daemon_next(&slot));
}

bool rt__reserve(struct rt_event_desc *ev, size_t payload_size,
		 struct rt_slot *slot)
{
	/* Acquire: pairs with the release stores that published the class
	 * (registry) and the channel (session start). */
	const struct rt_event_class *c = __atomic_load_n(&ev->priv, __ATOMIC_ACQUIRE);
	struct rt_channel *ch = __atomic_load_n(&rt_active_channel, __ATOMIC_ACQUIRE);
	if (__builtin_expect(!c, 0))
		return false;
	uintptr_t ip = (uintptr_t)__builtin_return_address(0);
	struct rt_one o;
	const struct rt_target_set *set;
	if (__builtin_expect(!rt_pick_one(c, ch, payload_size, &o, &set), 0))
		return daemon_reserve(set, payload_size, slot, ip);
	return one_reserve_slot(&o, ip, slot);
}

bool rt__commit(struct rt_slot *slot)
{
	struct rt_slot_priv *sp = (struct rt_slot_priv *)slot->opaque;
	rb_fast_commit(sp->rb, &sp->r, sp->slot_size);
	if (__builtin_expect(sp->multi, 0))
		return daemon_next(slot);
	rt_nesting--;
	return false;
}

/* record_general for one buffer: reserve, header, contexts, payload,
 * commit. Inlined twice, so the embedded copy (o->dbuf constant NULL) has
 * no context code. No nesting level (see rt__record). */
static inline __attribute__((always_inline)) void
one_record(const struct rt_one *o, uintptr_t ip, const void *payload, size_t size)
{
	struct rb_ctx ctx;
	char *p = one_reserve(o, ip, &ctx);
	if (__builtin_expect(!p, 0))
		return;
	rt_copy(p, payload, size);
	rb_commit(o->rb, &ctx);
}

/* rt__record's general path: whatever record_fast does not take (see
 * rt__record). */
static RT_NOINLINE void record_general(const struct rt_event_class *c,
				       struct rt_channel *ch, const void *payload,
				       size_t size, uintptr_t ip)
{
	if (__builtin_expect(!c, 0))
		return;
	struct rt_one o;
	if (__builtin_expect(ch != NULL, 1)) {
		rt_pick_embedded(c, ch, size, &o);
		one_record(&o, ip, payload, size);
		return;
	}
	const struct rt_target_set *set;
	if (__builtin_expect(!rt_pick_daemon(c, size, &o, &set), 0)) {
		daemon_record(set, payload, size, ip);
		return;
	}
	one_record(&o, ip, payload, size);
}

/* Payloads up to this size take rt__record's fast path. */
#define RT_FAST_PAYLOAD 32

/* rt__record's fast path in buffer `rb` (event `id`, compact header of
 * `hdr` bytes, no contexts): rb_fast_reserve, header, payload,
 * rb_commit_rseq, nothing out of line. False: nothing was written. */
static inline __attribute__((always_inline)) bool
record_fast(struct rb *rb, uint32_t id, uint32_t hdr, const void *payload, size_t size)
{
	struct rb_fast f;
	uint64_t slot = (uint64_t)hdr + size;
	if (__builtin_expect(!rb_fast_reserve(rb, slot, rt_clock_read, &f), 0))
		return false;
	uint32_t h = ctf_write_event_header(f.addr, id, f.tsc, 0);
	rt_copy(f.addr + h, payload, size);
	rb_commit_rseq(rb, &f, slot);
	return true;
}

/*
 * Events of fixed-size fields (the call site serialized the payload).
 * The common cases take record_fast with no call and no stack frame:
 * embedded mode's channel, or daemon mode's only target when its buffer
 * set has no contexts. Everything else (no class yet, several targets,
 * contexts, a large payload, a sub-buffer switch, a full timestamp, an
 * aborted rseq section) goes through record_general. No nesting level is
 * taken on either path: nothing runs between the reservation and the
 * commit but this code (a signal handler that traces meanwhile takes the
 * next slot, and such nesting is bounded by the signals), and no
 * per-level state is used.
 */
void rt__record(struct rt_event_desc *ev, const void *payload, size_t size)
{
	/* Acquire: pairs with the release stores that published the class
	 * (registry) and the channel (session start). */
	const struct rt_event_class *c = __atomic_load_n(&ev->priv, __ATOMIC_ACQUIRE);
	struct rt_channel *ch = __atomic_load_n(&rt_active_channel, __ATOMIC_ACQUIRE);
	if (__builtin_expect(c != NULL && size <= RT_FAST_PAYLOAD, 1)) {
		struct rt_one o;
		const struct rt_target_set *set;
		if (__builtin_expect(rt_pick_one(c, ch, size, &o, &set), 1) &&
		    (!o.dbuf || o.dbuf->nr_ctx == 0) &&
		    __builtin_expect(record_fast(o.rb, o.id, o.hdr_compact, payload, size), 1))
			return;
	}
	record_general(c, ch, payload, size, (uintptr_t)__builtin_return_address(0));
}
