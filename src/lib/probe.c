/*
 * probe.c - the probe: called by an enabled call site, reserves a slot in
 * this CPU's buffer (the clock is read in the reservation), writes the
 * CTF event header and the payload, and commits. Two entry points, one
 * call per event: rt__record for events of fixed-size fields (the call
 * site serialized the payload on its stack) and rt__record_parts for
 * events with strings or byte sequences (the call site sized each field;
 * the probe copies them into the slot, struct rt_part). Fixed-size events
 * mostly do not come here: their call sites record them through the fast
 * site the registry publishes (rt_fast_site_init, ringtrace/internal/fast.h), and
 * call rt__record for what that path leaves (a switch, a full timestamp,
 * contexts, several targets, an id past the compact header).
 *
 * Two modes. Embedded (`ringtrace record` without a daemon): one channel,
 * rt_active_channel. Daemon mode: the class's target table
 * (daemon_client.h) lists every buffer set (channel of a session, per uid
 * or per pid) the event goes to, and the event is written to each in
 * turn; a target without room drops it there (counted) and the next
 * target still gets it. After the header come the buffer set's contexts
 * (dp.h), then the payload. The common cases (embedded mode's channel, or
 * daemon mode's only target when it has no contexts) take record_fast:
 * the ring buffer's inline fast path with the header and payload writes
 * between its reservation and commit, nothing out of line. An event of
 * fixed-size fields to such a buffer that has contexts, all of them
 * constant for the thread (vpid, vtid, procname, prio), takes
 * record_ctx_fast: one rseq section (ctx_section.h) that copies the
 * contexts from the thread's cache of them. Everything else goes through
 * the noinline record_general, which writes an event of fixed-size
 * fields to each of several targets the same way (a target's fast site:
 * the call sites' section, rt__fast_event; or record_ctx_fast); two
 * fast sites in a row share one clock read (pair_section.h). Before
 * all that, rt__record_parts records an event with strings or sequences
 * whose call site has a fast site (one buffer without contexts, no
 * filter, no trigger) in one rseq section that copies each field from
 * where it lives (parts_section.h); what that section does not take
 * (a switch, a full timestamp, a string that became shorter, an abort)
 * comes here as before.
 *
 * Embedded mode's channel may have contexts too (RINGTRACE_CONTEXTS, which
 * `ringtrace record` sets): they are written the same way.
 *
 * Filters (daemon mode: the rules' --filter, daemon_client.h): a target
 * with filters takes the general path, which runs them on the call
 * site's arguments (filter_fetch.h) before reserving anything there; a
 * rejected event writes nothing to that target. The registry publishes
 * no fast site for such a target. Version 1's call sites write their
 * payload after reserving: a filtered target does not get their events
 * (counted lost).
 *
 * Context values: hostname is cached at registration (or embedded mode's
 * start); vpid, vtid and prio are cached per thread by its first event
 * that records them (getpid, gettid and getpriority: one system call
 * each, once per thread, again in a fork child; prio is not refreshed when the thread's nice value
 * changes later); procname is the thread's name (its comm, what
 * pthread_setname_np set, as in LTTng), cached per thread by its first
 * event that records it (prctl PR_GET_NAME) and read again after the
 * name of any thread of the process was set through pthread_setname_np
 * (thread_name.c: a generation number the probe compares with its
 * cache's); cpu_id is the buffer's CPU; ip is the return address of the
 * probe call in the instrumented code.
 *
 * Fast path: no lock, no system call (but the context caches above,
 * filled once per thread and per rename), no allocation, no floating
 * point. Reentrant without per-thread
 * state: nothing runs between a reservation and its commit but this code,
 * so a signal handler that traces meanwhile simply takes the next slot
 * (such nesting is bounded by the signals themselves). Version 1's call
 * sites (rt__reserve and rt__commit, at the end) are the exception: they
 * write their payload between the two calls, and keep their reservation
 * per thread meanwhile.
 *
 * Daemon mode: each event runs inside the thread's epoch (epoch.h), from
 * before the target table is loaded until after the last commit, so that
 * a buffer set no longer published is unmapped only once no thread still
 * writes it (daemon_targets.c); version 1's call sites hold it from
 * rt__reserve to their last rt__commit.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../common/context.h"
#include "../ringbuffer/ringbuffer_api.h"
#include "ctx_section.h"
#include "daemon_client.h"
#include "epoch.h"
#include "filter_fetch.h"
#include "pair_section.h"
#include "parts_section.h"
#include "rt_internal.h"
#include "test_hook.h"
#include "tracer_thread.h"

__thread int rt__tracer_thread __attribute__((tls_model("initial-exec")));
static __thread int32_t rt_pid __attribute__((tls_model("initial-exec")));
static __thread int32_t rt_tid __attribute__((tls_model("initial-exec")));
static __thread int32_t rt_prio __attribute__((tls_model("initial-exec")));
/* The thread's name as of generation rt_tname_gen - 1 of
 * rt_thread_name_gen (0: not read yet). */
static __thread char rt_tname[RT_THREAD_NAME_LEN] __attribute__((tls_model("initial-exec")));
static __thread uint32_t rt_tname_gen __attribute__((tls_model("initial-exec")));

/* A fork child's only thread is not the thread that filled the caches:
 * its tid differs (its name does not, but is read again anyway). Called
 * by the fork child handler (fork.c). */
static __thread struct rt_ctx_cache rt_ctxc __attribute__((tls_model("initial-exec")));

void rt_probe_fork_child(void)
{
	rt_tid = 0;
	rt_tname_gen = 0;
	rt_ctxc.key = 0;
}

/* The thread's name, at most RT_THREAD_NAME_LEN bytes with the NUL. */
struct rt_tname {
	char s[RT_THREAD_NAME_LEN];
	uint32_t size;		/* with the NUL; 0: not recorded */
};

static RT_NOINLINE void fill_thread_name(uint32_t gen)
{
	char name[RT_THREAD_NAME_LEN] = "";
	if (prctl(PR_GET_NAME, name, 0, 0, 0) < 0 || !name[0])
		memcpy(name, "unknown", sizeof("unknown"));
	memcpy(rt_tname, name, sizeof(name));
	rt_tname_gen = gen + 1;
}

/* Copy the thread's name to *tn (a local: a signal handler that renames
 * the cache meanwhile cannot change the size reserved for this event). */
static void thread_name(struct rt_tname *tn)
{
	/* Acquire: pairs with the release increment after a rename
	 * (thread_name.c): PR_GET_NAME then sees the new name. */
	uint32_t gen = __atomic_load_n(&rt_thread_name_gen, __ATOMIC_ACQUIRE);
	if (__builtin_expect(rt_tname_gen != gen + 1, 0))
		fill_thread_name(gen);
	memcpy(tn->s, rt_tname, sizeof(tn->s));
	tn->s[sizeof(tn->s) - 1] = '\0';
	tn->size = (uint32_t)strlen(tn->s) + 1;
}

static RT_NOINLINE void rt_drop(struct rb *rb)
{
	int32_t cpu = 0;
	if (rb_rseq_usable())
		cpu = rb_rseq_cpu(rb_rseq_off());
	rb_count_lost(rb, (uint32_t)cpu);
}

static RT_NOINLINE void fill_thread_cache(void)
{
	rt_pid = (int32_t)getpid();
	rt_tid = (int32_t)gettid();
	rt_prio = 20 + getpriority(PRIO_PROCESS, 0);
}

/* For filters (filter_fetch.h): the same caches the contexts write. */
void rt_probe_thread_ids(int32_t *pid, int32_t *tid, int32_t *prio)
{
	if (__builtin_expect(!rt_tid, 0))
		fill_thread_cache();
	*pid = rt_pid;
	*tid = rt_tid;
	*prio = rt_prio;
}

uint32_t rt_probe_thread_name(char name[RT_THREAD_NAME_LEN])
{
	struct rt_tname tn;
	thread_name(&tn);
	memcpy(name, tn.s, sizeof(tn.s));
	return tn.size - 1;
}

/* The buffer's contexts, in its order (context.h: packed, byte-aligned). */
static char *write_contexts(char *p, const uint8_t *ctx, uint32_t nr,
			    const struct rt_tname *tn, int32_t cpu, uintptr_t ip)
{
	_Static_assert(sizeof(rt_pid) == RT_CTX_SIZE_VPID && sizeof(rt_tid) == RT_CTX_SIZE_VTID &&
		       sizeof(cpu) == RT_CTX_SIZE_CPU_ID && sizeof(uint64_t) == RT_CTX_SIZE_IP &&
		       sizeof(rt_prio) == RT_CTX_SIZE_PRIO, "context.h's sizes");
	for (uint32_t i = 0; i < nr; i++) {
		switch (ctx[i]) {
		case RT_CTX_VPID:
			if (__builtin_expect(!rt_tid, 0))
				fill_thread_cache();
			memcpy(p, &rt_pid, RT_CTX_SIZE_VPID);
			p += RT_CTX_SIZE_VPID;
			break;
		case RT_CTX_VTID:
			if (__builtin_expect(!rt_tid, 0))
				fill_thread_cache();
			memcpy(p, &rt_tid, RT_CTX_SIZE_VTID);
			p += RT_CTX_SIZE_VTID;
			break;
		case RT_CTX_PROCNAME:
			memcpy(p, tn->s, tn->size);
			p += tn->size;
			break;
		case RT_CTX_CPU_ID:
			memcpy(p, &cpu, RT_CTX_SIZE_CPU_ID);
			p += RT_CTX_SIZE_CPU_ID;
			break;
		case RT_CTX_IP: {
			uint64_t v = ip;
			memcpy(p, &v, RT_CTX_SIZE_IP);
			p += RT_CTX_SIZE_IP;
			break;
		}
		case RT_CTX_PRIO:
			if (__builtin_expect(!rt_tid, 0))
				fill_thread_cache();
			memcpy(p, &rt_prio, RT_CTX_SIZE_PRIO);
			p += RT_CTX_SIZE_PRIO;
			break;
		case RT_CTX_HOSTNAME:
			memcpy(p, rt_dc_hostname, rt_dc_hostname_size);
			p += rt_dc_hostname_size;
			break;
		default:
			break;
		}
	}
	return p;
}

/* The class's daemon-mode target table, NULL when no session records it. */
static inline const struct rt_target_set *daemon_targets(const struct rt_event_class *c)
{
	/* Acquire: pairs with the release store that published the table
	 * (daemon_targets.c): the table and its buffer sets are complete. */
	return __atomic_load_n(&c->targets, __ATOMIC_ACQUIRE);
}

/* Where an event written to one buffer goes: embedded mode's channel, or
 * daemon mode's only target. Filled by rt_pick_one(), on the stack. */
struct rt_one {
	struct rb *rb;
	const uint8_t *ctx;		/* the buffer's contexts (nr_ctx of them) */
	uint32_t nr_ctx;
	uint64_t size;			/* contexts but the thread's name, + payload
					 * (64-bit: cannot wrap) */
	uint32_t id;			/* CTF event id in that buffer's trace */
	uint16_t hdr_compact;		/* compact event header size */
};

/* Embedded mode: the event goes to channel ch. */
static inline __attribute__((always_inline)) void
rt_pick_embedded(const struct rt_event_class *c, struct rt_channel *ch,
		 uint64_t payload_size, struct rt_one *o)
{
	o->rb = &ch->rb;
	o->ctx = ch->ctx;
	o->nr_ctx = ch->nr_ctx;
	o->size = payload_size + ch->ctx_size;
	o->id = c->id;
	o->hdr_compact = c->hdr_compact;
}

/* Daemon mode: the event goes to target t. */
static inline __attribute__((always_inline)) void
rt_pick_target(const struct rt_target *t, uint64_t payload_size, struct rt_one *o)
{
	o->rb = &t->buf->rb;
	o->ctx = t->buf->ctx;
	o->nr_ctx = t->buf->nr_ctx;
	o->size = payload_size + t->buf->ctx_size;
	o->id = t->id;
	o->hdr_compact = t->hdr_compact;
}

/* Embedded mode, or daemon mode with one target (one session's one
 * channel records the event: the common case): fill *o and return true.
 * Daemon mode with no target or several: false (the general, noinline
 * path writes each target). */
static inline __attribute__((always_inline)) bool
rt_pick_one(const struct rt_event_class *c, struct rt_channel *ch,
	    uint64_t payload_size, struct rt_one *o)
{
	if (__builtin_expect(ch != NULL, 1)) {
		rt_pick_embedded(c, ch, payload_size, o);
		return true;
	}
	const struct rt_target_set *s = daemon_targets(c);
	if (!s || s->nr != 1 || s->t[0].filters)
		return false;
	rt_pick_target(&s->t[0], payload_size, o);
	return true;
}

/* Reserve in o's buffer and write the event header and the contexts;
 * returns where the payload goes, or NULL (dropped, counted). `ctx` is a
 * local of the caller. */
static inline __attribute__((always_inline)) char *
one_reserve(const struct rt_one *o, uintptr_t ip, struct rb_ctx *ctx)
{
	struct rt_tname tn = { .size = 0 };
	uint64_t size = o->size;
	for (uint32_t i = 0; i < o->nr_ctx; i++)
		if (o->ctx[i] == RT_CTX_PROCNAME) {
			thread_name(&tn);
			size += tn.size;
			break;
		}
	if (__builtin_expect(size > o->rb->subbuf_size, 0)) {
		rt_drop(o->rb);
		return NULL;
	}
	ctx->payload_size = (uint32_t)size;
	ctx->hdr_compact = o->hdr_compact;
	ctx->hdr_full = CTF_EVENT_HEADER_EXTENDED;
	RT_TEST_HOOK(RT_TEST_BEFORE_RESERVE);
	if (__builtin_expect(rb_reserve(o->rb, ctx, rt_clock_read) != 0, 0))
		return NULL;
	RT_TEST_HOOK(RT_TEST_RESERVED);
	char *p = ctx->r.addr + ctf_write_event_header(ctx->r.addr, o->id, ctx->r.tsc,
						     ctx->full_tsc);
	if (o->nr_ctx)
		p = write_contexts(p, o->ctx, o->nr_ctx, &tn, ctx->r.cpu, ip);
	return p;
}

/*
 * The thread's context cache (ctx_section.h): the contexts of one layout
 * that are constant for the thread (vpid, vtid, prio, procname), as
 * recorded, so that an event with contexts copies them in one go, inside
 * its one rseq section. A layout with cpu_id, ip or hostname is not
 * cached (rt_ctx_key 0): those events take rb_reserve's path.
 */

/* The layout's key: each context's number + 1 in a byte, the count in
 * the low byte; 0 when it has a context the cache does not hold. */
static inline __attribute__((always_inline)) uint64_t rt_ctx_key(const uint8_t *ctx,
								 uint32_t nr)
{
	_Static_assert(RT_CTX_COUNT < 255 && RT_CTX_COUNT <= 7, "rt_ctx_key: a byte each");
	if (nr == 0 || nr > RT_CTX_COUNT)
		return 0;
	uint64_t key = nr;
	for (uint32_t i = 0; i < nr; i++) {
		uint8_t c = ctx[i];
		if (c != RT_CTX_VPID && c != RT_CTX_VTID && c != RT_CTX_PROCNAME && c != RT_CTX_PRIO)
			return 0;
		key |= (uint64_t)(c + 1) << (8 * (i + 1));
	}
	return key;
}

/* Rebuild the cache for layout `ctx` (key `key`) and thread-name
 * generation `gen`. False when a rebuild it interrupted (this is a signal
 * handler) is in progress: not this call's to touch. */
static RT_NOINLINE bool ctx_cache_build(const uint8_t *ctx, uint32_t nr, uint64_t key,
					uint32_t gen)
{
	struct rt_ctx_cache *cc = &rt_ctxc;
	if (cc->seq & 1)
		return false;
	/* Signal fences: a handler that runs meanwhile sees seq odd first,
	 * and the contents complete once it is even again. */
	cc->seq++;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	struct rt_tname tn;
	thread_name(&tn);
	/* At most 4 x 4 + 16 bytes (each context at most once: the key has
	 * no duplicates checked, so check the room). */
	uint32_t size = 0;
	for (uint32_t i = 0; i < nr; i++)
		size += ctx[i] == RT_CTX_PROCNAME ? tn.size : 4;
	if (size <= RT_CTX_CACHE_MAX) {
		write_contexts(cc->bytes, ctx, nr, &tn, 0, 0);
		cc->size = size;
		cc->key = key;
		cc->gen = gen;
	} else {
		cc->key = 0;
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	cc->seq++;
	return size <= RT_CTX_CACHE_MAX;
}

/* An event of fixed-size fields (`size` bytes at `flat`, a multiple of 4)
 * to o's buffer, which has contexts, in one rseq section. False when that
 * path does not apply or did not record it (nothing was written). */
static inline __attribute__((always_inline)) bool
record_ctx_fast(const struct rt_one *o, const char *flat, uint64_t size)
{
#if RT_HAVE_CTX_SECTION
	if (__builtin_expect(o->hdr_compact != RT__COMPACT_HEADER_SIZE ||
			     o->id > CTF_COMPACT_ID_MAX || !o->rb->rseq_fast ||
			     !rt_clock_tsc() || size % 4 != 0 || size > RT__FAST_PAYLOAD_MAX,
			     0))
		return false;
	uint64_t key = rt_ctx_key(o->ctx, o->nr_ctx);
	if (__builtin_expect(key == 0, 0))
		return false;
	if (__builtin_expect(!rt_tid, 0))
		fill_thread_cache();
	/* Acquire: pairs with the release increment after a rename
	 * (thread_name.c), as in thread_name(). */
	uint32_t gen = __atomic_load_n(&rt_thread_name_gen, __ATOMIC_ACQUIRE) + 1;
	struct rt_ctx_cache *cc = &rt_ctxc;
	if (__builtin_expect(cc->key != key || cc->gen != gen || (cc->seq & 1), 0) &&
	    !ctx_cache_build(o->ctx, o->nr_ctx, key, gen))
		return false;
	/* Signal fence: seq is read before the size; a handler that
	 * rebuilds the cache after this changes seq, which the section
	 * compares. */
	uint32_t seq = cc->seq;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return rt_ctx_section(&o->rb->fast, o->id, cc, seq, cc->size, flat, (uint32_t)size) != 0;
#else
	(void)o;
	(void)flat;
	(void)size;
	return false;
#endif
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

/* An event's payload: `size` bytes serialized at `flat` (rt__record), or
 * the `nr` fields at `parts` (rt__record_parts, flat NULL), `size` bytes
 * in all. Both are nonnull arguments of their entry point (ringtrace.h),
 * so each entry point's fast path keeps one branch of write_payload. */
struct rt_payload {
	const char *flat;
	const struct rt_part *parts;
	uint32_t nr;
	uint64_t size;
};

/* Whether a byte of w is zero: subtracting 1 from a zero byte borrows
 * into its top bit, which ~w keeps only for bytes below 0x80. Exact for
 * "some byte is zero" (not for which one). */
#define RT_HAS_ZERO_BYTE(w) (((w) - 0x0101010101010101ull) & ~(w) & 0x8080808080808080ull)

/* Strings longer than this are copied with memcpy and checked with
 * memchr (their calls pay off: a 256-byte string 37.6 to 25.9 ns per
 * event against the word loop, a 64-byte one 20.2 to 19.5); shorter ones
 * 8 bytes at a time, the check folded into the copy. */
#define RT_STRING_WORDS_MAX 32

/* A string field of n >= 1 bytes: the first n - 1 bytes of str, then a
 * NUL. A string that became shorter since the call site sized it would
 * bring an early NUL, and a CTF reader takes the first NUL as the end of
 * the field, so the next fields would be misread: what follows it is
 * padded with '#' (as LTTng-UST does). The check runs on the bytes as
 * copied, which no other thread changes. */
static inline __attribute__((always_inline)) void write_string(char *p, const char *str,
								uint32_t n)
{
	const size_t len = n - 1;
	char *nul = NULL;
	uint64_t zero = 0;
	if (len > RT_STRING_WORDS_MAX) {
		memcpy(p, str, len);
		nul = memchr(p, '\0', len);
	} else if (len >= 8) {
		uint64_t w;
		size_t i = 0;
		for (; i + 8 <= len; i += 8) {
			memcpy(&w, str + i, 8);
			memcpy(p + i, &w, 8);
			zero |= RT_HAS_ZERO_BYTE(w);
		}
		if (i < len) {
			/* The last 8 bytes, overlapping what was copied. */
			memcpy(&w, str + len - 8, 8);
			memcpy(p + len - 8, &w, 8);
			zero |= RT_HAS_ZERO_BYTE(w);
		}
	} else {
		for (size_t i = 0; i < len; i++) {
			p[i] = str[i];
			zero |= p[i] == '\0';
		}
	}
	if (__builtin_expect(zero != 0, 0))
		nul = memchr(p, '\0', len);
	if (__builtin_expect(nul != NULL, 0))
		memset(nul, '#', (size_t)(p + len - nul));
	p[len] = '\0';
}

const char rt_null_string[7] = "(null)";

uint8_t rt_parts_avx2;

__attribute__((constructor)) static void parts_avx2_init(void)
{
	__builtin_cpu_init();
	rt_parts_avx2 = __builtin_cpu_supports("avx2") && !RT_TEST_NO_AVX2() ? 1 : 0;
}

/* Write the parts: exactly parts[i].size bytes each, whatever became of
 * the strings and sequences since the call site sized them (a string
 * that grew is cut there, one that shrank is padded: write_string). A
 * part too small for its kind (never made by rt_event) gets zeros. */
static inline __attribute__((always_inline)) void
write_parts(char *p, const struct rt_part *parts, uint32_t nr)
{
	for (uint32_t i = 0; i < nr; i++) {
		const struct rt_part *pt = &parts[i];
		uint32_t n = pt->size;
		switch (pt->kind) {
		case RT_PART_STRING: {
			const char *str = *(const char *const *)pt->ptr;
			if (!str)
				str = rt_null_string;
			if (n)
				write_string(p, str, n);
			break;
		}
		case RT_PART_BYTES: {
			const struct rt_bytes *b = (const struct rt_bytes *)pt->ptr;
			if (n < sizeof(uint32_t)) {
				memset(p, 0, n);
				break;
			}
			uint32_t len = n - (uint32_t)sizeof(uint32_t);
			memcpy(p, &len, sizeof(len));
			rt_copy(p + sizeof(len), (const char *)b->ptr, len);
			break;
		}
		default:
			rt_copy(p, (const char *)pt->ptr, n);
			break;
		}
		p += n;
	}
}

static inline __attribute__((always_inline)) void
write_payload(char *p, const struct rt_payload *pl)
{
	if (pl->flat)
		rt_copy(p, pl->flat, pl->size);
	else if (pl->parts)
		write_parts(p, pl->parts, pl->nr);
}

/* One buffer: reserve, header, contexts, payload, commit. */
static inline __attribute__((always_inline)) void
one_record(const struct rt_one *o, uintptr_t ip, const struct rt_payload *pl)
{
	struct rb_ctx ctx;
	char *p = one_reserve(o, ip, &ctx);
	if (__builtin_expect(!p, 0))
		return;
	write_payload(p, pl);
	rb_commit(o->rb, &ctx);
}

/* Whether the event passes one of the target's filters (filter_fetch.h),
 * evaluated on the call site's arguments before anything is written. */
static bool filters_pass(const struct rt_target_filters *tf, const struct rt_payload *pl,
			 uintptr_t ip)
{
	const struct rt_filter_event e = { pl->flat, pl->size, pl->parts, pl->nr, ip };
	for (uint32_t i = 0; i < tf->n; i++)
		if (rt_filter_pass(tf->f[i].bound, &e))
			return true;
	return false;
}

/* One target of daemon mode's table (its filters passed): a payload of
 * fixed-size fields in one section, the call sites' own through the
 * target's fast site (no contexts, no filter), or with its contexts;
 * anything else through one_record. */
static RT_NOINLINE void record_target(const struct rt_target *t, const struct rt_payload *pl,
				      uintptr_t ip)
{
	struct rt_one o;
	rt_pick_target(t, pl->size, &o);
	if (pl->flat && pl->size % 4 == 0 && pl->size <= RT__FAST_PAYLOAD_MAX) {
#if RT__HAVE_FAST_EVENT
		if (t->fast_ok &&
		    rt__fast_event(&t->site.buf, t->site.id, pl->flat, (uint32_t)pl->size))
			return;
#endif
		if (o.nr_ctx && record_ctx_fast(&o, pl->flat, pl->size))
			return;
	}
	one_record(&o, ip, pl);
}

/* The general path: whatever record_fast does not take (see rt__record).
 * Daemon mode writes every target of the table in turn, those with
 * filters when one passes. */
static RT_NOINLINE void record_general(const struct rt_event_class *c,
				       struct rt_channel *ch, const struct rt_payload *pl,
				       uintptr_t ip)
{
	if (__builtin_expect(!c, 0))
		return;
	struct rt_one o;
	if (__builtin_expect(ch != NULL, 1)) {
		rt_pick_embedded(c, ch, pl->size, &o);
		one_record(&o, ip, pl);
		return;
	}
	const struct rt_target_set *set = daemon_targets(c);
#if RT_HAVE_PAIR_SECTION
	/* Two fast sites in a row: one clock read for both (pair_section.h);
	 * pair.b2 is the buffer the first section read, until the next
	 * target's section uses it. */
	struct rt_pair pair;
	pair.b2 = NULL;
#endif
	for (uint32_t i = 0; set && i < set->nr; i++) {
		const struct rt_target *t = &set->t[i];
		if (t->filters && !filters_pass(t->filters, pl, ip))
			continue;
#if RT_HAVE_PAIR_SECTION
		/* Sessions recording the same event: two fast sites in a
		 * row, one clock read. */
		if (pl->flat && pl->size % 4 == 0 && pl->size <= RT__FAST_PAYLOAD_MAX &&
		    t->fast_ok) {
			const uint32_t sz = (uint32_t)pl->size;
			if (pair.b2 == &t->site.buf) {
				pair.b2 = NULL;
				if (rt_pair_next(&t->site.buf, t->site.id, pl->flat, sz, &pair))
					continue;
			} else if (i + 1 < set->nr && set->t[i + 1].fast_ok &&
				   !set->t[i + 1].filters) {
				pair.b2 = &set->t[i + 1].site.buf;
				if (rt_pair_first(&t->site.buf, t->site.id, pl->flat, sz, &pair))
					continue;
				pair.b2 = NULL;
			}
		}
#endif
		record_target(t, pl, ip);
	}
	/* Acquire: pairs with the release store that published the table
	 * (triggers.c): its bound filters and captures are complete. After
	 * the event is written: a snapshot the trigger takes holds it. */
	const struct rt_trig_set *trigs = __atomic_load_n(&c->trigs, __ATOMIC_ACQUIRE);
	if (__builtin_expect(trigs != NULL, 0)) {
		const struct rt_filter_event e = { pl->flat, pl->size, pl->parts, pl->nr, ip };
		rt_triggers_eval(trigs, &e);
	}
}

/* rt__record's fast path in buffer `rb` (event `id`, compact header of
 * `hdr` bytes, no contexts): rb_fast_reserve, header, payload,
 * rb_fast_commit (rb_commit_rseq; atomic mode's rb_smp_reserve and
 * rb_smp_commit), nothing out of line but atomic mode's reservation.
 * False: nothing was written. The
 * payload comes as scalars, not as a struct rt_payload: fewer values stay
 * live across the fast path. */
static inline __attribute__((always_inline)) bool
record_fast(struct rb *rb, uint32_t id, uint32_t hdr, const char *flat,
	    const struct rt_part *parts, uint32_t nr, uint64_t size)
{
	struct rb_slot f;
	uint64_t slot = (uint64_t)hdr + size;
	if (__builtin_expect(!rb_fast_reserve(rb, slot, rt_clock_read, &f), 0))
		return false;
	uint32_t h = ctf_write_event_header(f.addr, id, f.tsc, 0);
	const struct rt_payload pl = { flat, parts, nr, size };
	write_payload(f.addr + h, &pl);
	rb_fast_commit(rb, &f, slot);
	return true;
}

#if RT_HAVE_PAIR_SECTION
/* Daemon mode, an event of fixed-size fields (`size` bytes at `flat`)
 * that exactly two targets record, each through its fast site (no
 * filter, no contexts): both with one clock read (pair_section.h), the
 * second through record_target if its section fails. True when
 * recorded; false when nothing was written (record_general's turn). */
static inline __attribute__((always_inline)) bool
record_pair_fast(const struct rt_event_class *c, const char *flat, uint64_t size, uintptr_t ip)
{
	const struct rt_target_set *s = daemon_targets(c);
	if (!s || s->nr != 2 || size % 4 != 0 || size > RT__FAST_PAYLOAD_MAX)
		return false;
	const struct rt_target *a = &s->t[0], *b = &s->t[1];
	if (!a->fast_ok || !b->fast_ok || a->filters || b->filters)
		return false;
	/* Only b2 set: the first section fills the rest (an initializer
	 * would zero the whole struct, 1-2 ns here). */
	struct rt_pair pair;
	pair.b2 = &b->site.buf;
	if (!rt_pair_first(&a->site.buf, a->site.id, flat, (uint32_t)size, &pair))
		return false;
	RT_TEST_HOOK(RT_TEST_PAIR);
	if (!rt_pair_next(&b->site.buf, b->site.id, flat, (uint32_t)size, &pair)) {
		const struct rt_payload pl = { flat, NULL, 0, size };
		record_target(b, &pl, ip);
	}
	return true;
}
#endif

/* Both entry points: record_fast when the class is known, `fast` (the
 * payload is small enough to copy inline) and the event goes to one
 * buffer without contexts (or to two through their fast sites,
 * record_pair_fast); record_general otherwise. Always inlined into
 * the entry point, whose return address is the call site's ip. */
static inline __attribute__((always_inline)) void
record(struct rt_event_desc *ev, const char *flat, const struct rt_part *parts,
       uint32_t nr, uint64_t size, bool fast, uintptr_t ip)
{
	/* Acquire: pairs with the release stores that published the class
	 * (registry) and the channel (session start). */
	const struct rt_event_class *c = __atomic_load_n(&ev->priv, __ATOMIC_ACQUIRE);
	struct rt_channel *ch = __atomic_load_n(&rt_active_channel, __ATOMIC_ACQUIRE);
	/* Daemon mode: the buffer sets the target table names stay mapped
	 * until the epoch is left (epoch.h), after the last commit.
	 * Embedded mode's channel is never unmapped. */
	const bool daemon = ch == NULL;
	if (daemon)
		rt_epoch_enter();
	/* Relaxed: only whether the class has triggers, which the general
	 * path evaluates (it loads them with acquire). */
	if (__builtin_expect(c != NULL && fast, 1) &&
	    __builtin_expect(!__atomic_load_n(&c->trigs, __ATOMIC_RELAXED), 1)) {
		struct rt_one o;
		if (__builtin_expect(rt_pick_one(c, ch, size, &o), 1)) {
			if (o.nr_ctx == 0) {
				if (__builtin_expect(record_fast(o.rb, o.id, o.hdr_compact, flat,
								 parts, nr, size),
						     1))
					goto out;
			} else if (flat && record_ctx_fast(&o, flat, size)) {
				goto out;
			}
		}
#if RT_HAVE_PAIR_SECTION
		else if (daemon && flat &&
			 record_pair_fast(c, flat, size, (uintptr_t)__builtin_return_address(0))) {
			goto out;
		}
#endif
	}
	/* By address: passed by value, its 16-byte halves were read back
	 * right after their 4- and 8-byte stores, which the CPU cannot
	 * forward (about 5 ns per event here). */
	const struct rt_payload pl = { flat, parts, nr, size };
	record_general(c, ch, &pl, ip);
out:
	if (daemon)
		rt_epoch_exit();
}

/* What call sites need to record event `id` in rb by themselves
 * (rt__fast_record): its geometry and the id (rt_internal.h). */
bool rt_fast_site_init(struct rt_fast_site *s, const struct rb *rb, uint32_t id)
{
	memset(s, 0, sizeof(*s));
	if (!rb->rseq_fast || !rt_clock_tsc() || id > CTF_COMPACT_ID_MAX)
		return false;
	s->buf = rb->fast;
	s->id = id;
	return true;
}

/* Payloads up to this size take rt__record's fast path. */
#define RT_FAST_PAYLOAD 32

/* Events of fixed-size fields (the call site serialized the payload):
 * the common cases take record_fast with no call and no stack frame. */
void rt__record(struct rt_event_desc *ev, const void *payload, size_t size)
{
	record(ev, payload, NULL, 0, size, size <= RT_FAST_PAYLOAD,
	       (uintptr_t)__builtin_return_address(0));
}

#if defined(__LP64__)
/* What call sites of every version since 2 hand rt__record_parts. */
_Static_assert(sizeof(struct rt_part) == 16 && offsetof(struct rt_part, size) == 8 &&
		       offsetof(struct rt_part, kind) == 12 &&
		       offsetof(struct rt_bytes, len) == 8,
	       "struct rt_part and struct rt_bytes: the call-site ABI");
#endif

/* rt__record_parts' path through the library, out of line: the section
 * before it keeps a small frame. */
static RT_NOINLINE void record_parts_lib(struct rt_event_desc *ev, const struct rt_part *parts,
					 uint32_t nr, uint64_t size, uintptr_t ip)
{
	record(ev, NULL, parts, nr, size, true, ip);
}

/* Events with strings or byte sequences: the payload is the sum of the
 * parts' sizes (64-bit: cannot wrap; too large for a sub-buffer is
 * dropped and counted by the reservation). */
void rt__record_parts(struct rt_event_desc *ev, const struct rt_part *parts,
		      uint32_t nr)
{
	uint64_t size = 0;
	for (uint32_t i = 0; i < nr; i++)
		size += parts[i].size;
#if RT_HAVE_PARTS_SECTION
	/* The call site's fast site (registry.c): one buffer without
	 * contexts, no filter, no trigger; the event in one section
	 * (parts_section.h). Only this version's call sites have one (an
	 * older descriptor may not even have the member). Acquire: pairs
	 * with the release store that published the site: its contents are
	 * complete. */
	const struct rt_fast_site *s = __builtin_expect(ev->abi == RT_ABI_VERSION, 1)
					       ? __atomic_load_n(&ev->fast, __ATOMIC_ACQUIRE)
					       : NULL;
	if (__builtin_expect(s != NULL, 1) && rt_parts_section(&s->buf, s->id, parts, nr, size))
		return;
#endif
	record_parts_lib(ev, parts, nr, size, (uintptr_t)__builtin_return_address(0));
}

/* --- call sites of earlier ABI versions (ringtrace_types.h) ---------- */

/*
 * Version 3's inline fast path passed this function's address to its
 * commit, to be called for a slot its own reservation took through a
 * fast site: its call sites name it, so it must exist for such a program
 * to load. It is never called: the library publishes no fast site to a
 * call site older than this version (registry.c), so those call sites
 * always record through rt__record. `b` is version 3's struct
 * rt_fast_buf, which no longer exists.
 */
RT_API void rt__fast_commit_slow(const void *b, int32_t cpu, uint64_t offset,
				 uint64_t remote);

void rt__fast_commit_slow(const void *b, int32_t cpu, uint64_t offset, uint64_t remote)
{
	(void)b;
	(void)cpu;
	(void)offset;
	(void)remote;
}

/*
 * Version 1's call sites recorded an event in two calls: rt__reserve (a
 * slot in the first buffer that records the event; the call site writes
 * the payload at slot->p, then calls rt__commit) and rt__commit, repeated
 * while it returns true (the next buffer's slot, reserved in the same
 * struct). Their struct rt_slot is `char *p` then 8 words (10 in later
 * version 1 headers) on the call site's stack: the library keeps where
 * the event goes there (struct rt_v1_state). The reservation itself
 * (struct rb_ctx) is kept per thread, innermost last: a signal handler
 * that records meanwhile commits its own event before the interrupted
 * one does, so commits pop in the order reservations pushed. Deeper
 * nesting than RT_V1_NESTING drops the event (counted lost).
 */
struct rt_v1_slot {
	char *p;
	uint64_t opaque[8];
};

struct rt_v1_state {
	const struct rt_event_class *c;
	struct rt_channel *ch;			/* embedded mode, or NULL */
	const struct rt_target_set *set;	/* daemon mode, or NULL */
	struct rb *rb;				/* the reservation's buffer */
	uint64_t size;				/* payload bytes */
	uint32_t next;				/* the next buffer: index in set */
};
_Static_assert(sizeof(struct rt_v1_state) <= sizeof(((struct rt_v1_slot *)0)->opaque),
	       "version 1's struct rt_slot holds the state");

#define RT_V1_NESTING 4
static __thread struct rb_ctx rt_v1_ctx[RT_V1_NESTING] __attribute__((tls_model("initial-exec")));
static __thread uint32_t rt_v1_depth __attribute__((tls_model("initial-exec")));

/* Reserve the event in the next buffer of st that has room: slot->p is
 * where its payload goes, its rb_ctx the next level of rt_v1_ctx.
 * False when no buffer is left. */
static bool v1_reserve(struct rt_v1_state *st, struct rt_v1_slot *slot, uintptr_t ip)
{
	for (;;) {
		struct rt_one o;
		if (st->ch && st->next == 0)
			rt_pick_embedded(st->c, st->ch, st->size, &o);
		else if (!st->ch && st->set && st->next < st->set->nr)
			rt_pick_target(&st->set->t[st->next], st->size, &o);
		else
			return false;
		st->next++;
		/* Its payload is written after the reservation: a filtered
		 * target cannot judge it first, so it does not get it
		 * (counted lost, as readers then report). */
		if (!st->ch && st->set->t[st->next - 1].filters) {
			rt_drop(o.rb);
			continue;
		}
		uint32_t d = rt_v1_depth;
		if (d >= RT_V1_NESTING) {
			rt_drop(o.rb);
			continue;
		}
		rt_v1_depth = d + 1;
		/* Signal fence: the level is taken before it is written, so a
		 * handler that runs in between takes the next one. */
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		char *p = one_reserve(&o, ip, &rt_v1_ctx[d]);
		if (p) {
			st->rb = o.rb;
			slot->p = p;
			return true;
		}
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		rt_v1_depth = d;
	}
}

RT_API bool rt__reserve(struct rt_event_desc *ev, size_t payload_size,
			struct rt_v1_slot *slot);
RT_API bool rt__commit(struct rt_v1_slot *slot);

bool rt__reserve(struct rt_event_desc *ev, size_t payload_size, struct rt_v1_slot *slot)
{
	/* Acquire: as in record(). */
	const struct rt_event_class *c = __atomic_load_n(&ev->priv, __ATOMIC_ACQUIRE);
	if (!c)
		return false;
	struct rt_v1_state st = { .c = c, .size = payload_size };
	st.ch = __atomic_load_n(&rt_active_channel, __ATOMIC_ACQUIRE);
	/* Daemon mode: the epoch (epoch.h) is held from the table's load
	 * until the last buffer's commit (rt__commit returning false). */
	if (!st.ch) {
		rt_epoch_enter();
		st.set = daemon_targets(c);
	}
	if (!v1_reserve(&st, slot, (uintptr_t)__builtin_return_address(0))) {
		if (!st.ch)
			rt_epoch_exit();
		return false;
	}
	memcpy(slot->opaque, &st, sizeof(st));
	return true;
}

bool rt__commit(struct rt_v1_slot *slot)
{
	struct rt_v1_state st;
	if (rt_v1_depth == 0)
		return false;	/* no reservation of ours: a misuse, ignored */
	memcpy(&st, slot->opaque, sizeof(st));
	uint32_t d = rt_v1_depth - 1;
	rb_commit(st.rb, &rt_v1_ctx[d]);
	/* Signal fence: the level is released after its commit. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	rt_v1_depth = d;
	if (!v1_reserve(&st, slot, (uintptr_t)__builtin_return_address(0))) {
		if (!st.ch)
			rt_epoch_exit();
		return false;
	}
	memcpy(slot->opaque, &st, sizeof(st));
	return true;
}
