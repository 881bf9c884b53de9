/*
 * trace.c - ftrace pages to CTF packets (see kernel.h).
 *
 * An ftrace page (include/linux/ring_buffer.h, kernel/trace/ring_buffer.c;
 * events/header_page and header_event in tracefs), little-endian:
 *    0  u64  timestamp of the page's first event
 *    8  u64  commit: bytes of events after the header in the low 30
 *            bits; bit 31 (RB_MISSED_EVENTS: events were lost before this
 *            page; the kernel's int flag is sign-extended, so bits 32-63
 *            are set with it), bit 30 (RB_MISSED_STORED: their count is
 *            stored as a u64 right after the events)
 *   16  events: a 32-bit header (type_len 5 bits, time_delta 27 bits),
 *       then the record; type_len 29 padding, 30 time extend, 31
 *       absolute timestamp, 0 a record whose length is the next u32.
 * libtraceevent's kbuffer walks it: it gives each record with its full
 * timestamp (extends and absolute stamps applied), its size, and the
 * missed count. It reads the headers it is given without bounds (the
 * commit is trusted), so each page is first copied into a buffer with
 * a zeroed tail and its commit checked against the page's size.
 * Measured (a one-off loop over tests/kernel/data's pages, best of 3 on
 * a shared 2-core machine): 86 ns per event converted, of which 57 ns are
 * kbuffer's walk alone, so about 11 M events/s on one core. A walk of our
 * own could save part of the 57 ns; not done while this is far above
 * what the tests' workloads make ftrace write.
 *
 * Each page becomes one packet of the CPU's stream (packet layout in
 * ctf_packet.h), which the consumer writes (writer.c): timestamp_begin the page's timestamp,
 * timestamp_end its last event's, events_discarded the stream's missed
 * events so far (at least one per page flagged "missed" without a count).
 * Events: the compact or extended header (ctf_packet.h), the context's
 * tid (s32, common_pid; RTK_CONTEXT_NAME), then the fields as formats.c planned them. Time
 * never goes back within a stream: a stamp older than the previous one
 * (ftrace's rare "before" stamps of nested events) takes the previous
 * one's value.
 *
 * Threads: each CPU's conversion state (its stream, its page walker, the
 * page's copy, the packet being built, its statistics) is its own, made
 * at its first page, so that the pages of distinct CPUs are converted at
 * once by a thread per CPU (writer.c). What they share is constant (the
 * formats, the contexts) or behind `procs_lock`: the process table that
 * every CPU's events feed and read, and the walker that looks ahead for a
 * thread's creation; the lock is held for a whole page's conversion when
 * the trace has contexts (not at all without: the table is not used).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <traceevent/kbuffer.h>

#include "../ctf/ctf_packet.h"
#include "../common/array.h"
#include "../filter/filter.h"
#include "kernel_internal.h"

#define RTK_PAGE_HEADER 16u
#define RTK_COMMIT_MASK ((1ull << 30) - 1)	/* below the missed-events flags */
#define RTK_MISSED_EVENTS (1ull << 31)
#define RTK_TAIL 64u			/* zeroed bytes past a copied page */

/* Every context, in the order events carry them (tid always first). */
static const struct {
	unsigned bit;
	struct rt_field_desc desc;
} contexts[] = {
	{ 0, { RTK_CONTEXT_NAME, RT_TYPE_S32 } },
	{ RTK_CTX_PID, { "pid", RT_TYPE_S32 } },
	{ RTK_CTX_PROCNAME, { "procname", RT_TYPE_STRING } },
	{ RTK_CTX_PRIO, { "prio", RT_TYPE_S32 } },
};
#define NR_CONTEXTS (sizeof(contexts) / sizeof(contexts[0]))

#define RTK_MAX_CPUS 4096u

/* One CPU's conversion: its stream and what converting its pages uses. */
struct rtk_cpu_conv {
	uint64_t seq;
	uint64_t discarded;
	uint64_t last_ts;
	struct kbuffer *kbuf;
	char *page;		/* the copy kbuffer reads */
	size_t page_cap;
	char *out;		/* the packet being built */
	size_t out_cap;
	struct rtk_trace_stats stats;	/* relaxed atomics: rtk_trace_stats */
};

struct rtk_trace {
	const struct rtk_formats *formats;
	uint8_t uuid[16];
	/* [RTK_MAX_CPUS]: each made by its CPU's first page, published with
	 * a release store (rtk_trace_stats' acquire loads). */
	struct rtk_cpu_conv **cpu;
	pthread_mutex_t procs_lock;	/* procs, ahead_* (with contexts) */
	/* Looking ahead for a thread's creation (rtk_trace_lookahead), in
	 * the middle of a page's conversion: a walker of its own. */
	void (*lookahead)(void *arg, int32_t tid);
	void *lookahead_arg;
	struct kbuffer *ahead_kbuf;
	char *ahead_page;
	size_t ahead_cap;
	struct rt_field_desc ctx[NR_CONTEXTS];	/* the stream event context */
	uint32_t nr_ctx;
	unsigned contexts;		/* enum rtk_context bits */
	struct rtk_procs procs;		/* for pid, procname, prio */
	void (*watch)(void *arg, const struct rtk_event *e);	/* rtk_trace_watch */
	void *watch_arg;
};

const char *rtk_context_name(unsigned bit)
{
	for (size_t i = 1; i < NR_CONTEXTS; i++)
		if (bit == contexts[i].bit)
			return contexts[i].desc.name;
	return NULL;
}

int rtk_context_by_name(const char *name)
{
	for (size_t i = 0; i < NR_CONTEXTS; i++)
		if (!strcmp(name, contexts[i].desc.name))
			return (int)contexts[i].bit;
	return -EINVAL;
}

int rtk_trace_open(const struct rtk_formats *f, const uint8_t uuid[16], unsigned ctx_bits,
		   struct rtk_trace **out)
{
	struct rtk_trace *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->procs_lock, NULL);
	t->formats = f;
	memcpy(t->uuid, uuid, sizeof(t->uuid));
	t->contexts = ctx_bits & RTK_CTX_ALL;
	for (size_t i = 0; i < NR_CONTEXTS; i++)
		if (!contexts[i].bit || (t->contexts & contexts[i].bit))
			t->ctx[t->nr_ctx++] = contexts[i].desc;
	t->cpu = calloc(RTK_MAX_CPUS, sizeof(*t->cpu));
	if (!t->cpu) {
		rtk_trace_close(t);
		return -ENOMEM;
	}
	*out = t;
	return 0;
}

/* CPU cpu's conversion, made at its first use (by the thread that
 * converts that CPU). */
static int conv_of(struct rtk_trace *t, unsigned cpu, struct rtk_cpu_conv **out, char *err,
		   size_t errlen)
{
	if (cpu >= RTK_MAX_CPUS) {
		rt_errf(err, errlen, "CPU %u is out of range", cpu);
		return -EINVAL;
	}
	/* Relaxed: only this CPU's converting thread stores it. */
	struct rtk_cpu_conv *c = __atomic_load_n(&t->cpu[cpu], __ATOMIC_RELAXED);
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c || !(c->kbuf = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE))) {
			free(c);
			rt_errf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		/* Release: pairs with rtk_trace_stats' acquire load; the
		 * zeroed statistics before the pointer. */
		__atomic_store_n(&t->cpu[cpu], c, __ATOMIC_RELEASE);
	}
	*out = c;
	return 0;
}

/* Relaxed: statistics (rtk_trace_stats reads them from any thread). */
static void stat_add(uint64_t *v, uint64_t n)
{
	__atomic_fetch_add(v, n, __ATOMIC_RELAXED);
}

/* The check stays here, inline: reserve is called per event. */
static int reserve(char **buf, size_t *cap, size_t need)
{
	return need <= *cap ? 0 : RT_ARRAY_GROW(*buf, *cap, need, 8192);
}

static uint32_t rd32(const char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

/* The bytes of a __data_loc / __rel_loc field, or -1 when they lie
 * outside the record. */
static int dyn_span(const struct rtk_field *fl, const char *rec, int size, int *off)
{
	uint32_t v = rd32(rec + fl->offset);
	int o = (int)(v & 0xffff), len = (int)(v >> 16);
	if (fl->relative)
		o += fl->offset + fl->size;
	if (o < 0 || len < 0 || o + len > size)
		return -1;
	*off = o;
	return len;
}

/* Upper bound of the payload's bytes (contexts included), or -1 when a
 * field lies outside the record (the event is then skipped). */
static long payload_bound(const struct rtk_class *c, const char *rec, int size)
{
	long n = 4 + 4 + 16 + 4;	/* tid, pid, procname, prio */
	for (uint32_t i = 0; i < c->nr_fields; i++) {
		const struct rtk_field *fl = &c->fields[i];
		int off, len = fl->size;
		if (fl->offset < 0 || fl->offset + fl->size > size)
			return -1;
		if (fl->kind == RTK_STR_DYN || fl->kind == RTK_BYTES_DYN) {
			if (fl->size != 4 || (len = dyn_span(fl, rec, size, &off)) < 0)
				return -1;
		}
		n += 5 + len;
	}
	return n;
}

static char *put_string(char *p, const char *s, int len)
{
	const char *nul = memchr(s, '\0', (size_t)len);
	size_t n = nul ? (size_t)(nul - s) : (size_t)len;
	memcpy(p, s, n);
	p[n] = '\0';
	return p + n + 1;
}

static char *put_bytes(char *p, const char *s, int len)
{
	uint32_t l = (uint32_t)len;
	memcpy(p, &l, 4);
	memcpy(p + 4, s, (size_t)len);
	return p + 4 + len;
}

/* The int32 field fl of the record into *v: false when absent or outside
 * the record. */
static bool int_at(const struct rtk_field *fl, const char *rec, int size, int32_t *v)
{
	if (fl->size != 4 || fl->offset < 0 || fl->offset + 4 > size)
		return false;
	*v = (int32_t)rd32(rec + fl->offset);
	return true;
}

/* The string field fl of the record into out (cut to 15 bytes, NUL
 * ended): false when absent or outside the record. */
static bool comm_at(const struct rtk_field *fl, const char *rec, int size, char out[16])
{
	int off = fl->offset, len = fl->size;
	if (!fl->size || fl->offset < 0 || fl->offset + fl->size > size)
		return false;
	if (fl->kind == RTK_STR_DYN && (len = dyn_span(fl, rec, size, &off)) < 0)
		return false;
	const char *s = rec + off;
	int n = 0;
	while (n < len && n < 15 && s[n])
		n++;
	memcpy(out, s, (size_t)n);
	out[n] = '\0';
	return true;
}

/* What the event says of thread w goes into the table; prio_bias: what
 * the event's prio is above /proc's priority (100 for ftrace's, which are
 * the kernel's p->prio). */
static struct rtk_proc *learn(struct rtk_procs *p, const struct rtk_who *w, const char *rec,
			      int size, int prio_bias)
{
	int32_t tid, v;
	char comm[16];
	if (!int_at(&w->tid, rec, size, &tid) || tid <= 0)
		return NULL;
	struct rtk_proc *e = rtk_procs_get(p, tid);
	if (!e)
		return NULL;
	if (comm_at(&w->comm, rec, size, comm))
		memcpy(e->comm, comm, sizeof(comm));
	if (int_at(&w->prio, rec, size, &v))
		e->prio = v - prio_bias;
	if (int_at(&w->pid, rec, size, &v))
		e->pid = v;
	return e;
}

#define RT_CLONE_THREAD 0x00010000u

/* A task that starts: a fresh entry (its id may be a reused one's). */
static struct rtk_proc *fresh(struct rtk_procs *p, const struct rtk_who *w, const char *rec,
			      int size)
{
	int32_t tid;
	if (int_at(&w->tid, rec, size, &tid) && tid > 0)
		rtk_procs_remove(p, tid);
	return learn(p, w, rec, size, RTK_PRIO_OFFSET);
}

/* What the event says of its emitter, learnt before its context is
 * written (sched_switch's prev is the emitter as it is; exec has renamed
 * it already). */
static void learn_before(struct rtk_procs *p, const struct rtk_class *c, const char *rec,
			 int size)
{
	int32_t tid, old;
	switch (c->role) {
	case RTK_ROLE_SWITCH:
		learn(p, &c->who[0], rec, size, RTK_PRIO_OFFSET);
		break;
	case RTK_ROLE_EXEC:
		if (!int_at(&c->who[1].tid, rec, size, &tid) || tid <= 0)
			break;
		if (int_at(&c->aux, rec, size, &old) && old > 0 && old != tid)
			rtk_procs_move(p, old, tid);
		struct rtk_proc *e = rtk_procs_get(p, tid);
		if (!e)
			break;
		e->pid = tid;
		/* The kernel names the task after the file's last component. */
		struct rtk_field fn = c->filename;
		if (fn.kind == RTK_STR_DYN && fn.offset >= 0 && fn.offset + 4 <= size) {
			int off, len = dyn_span(&fn, rec, size, &off);
			const char *f = rec + off, *nul = len > 0 ? memchr(f, '\0', (size_t)len) : NULL;
			int end = nul ? (int)(nul - f) : len, base = 0;
			for (int i = 0; i < end; i++)
				if (f[i] == '/')
					base = i + 1;
			int n = end - base < 15 ? end - base : 15;
			if (n > 0) {
				memcpy(e->comm, f + base, (size_t)n);
				e->comm[n] = '\0';
			}
		}
		break;
	default:
		break;
	}
}

/* What the event says of other threads, or of its emitter after it. */
static void learn_after(struct rtk_procs *p, const struct rtk_class *c, const char *rec,
			int size, int32_t emitter)
{
	int32_t v;
	uint64_t flags;
	struct rtk_proc *e;
	switch (c->role) {
	case RTK_ROLE_SWITCH:
	case RTK_ROLE_WAKE:
	case RTK_ROLE_RENAME:
		learn(p, &c->who[1], rec, size, RTK_PRIO_OFFSET);
		break;
	case RTK_ROLE_DUMP:
		learn(p, &c->who[1], rec, size, 0);
		break;
	case RTK_ROLE_PRIO:
		e = learn(p, &c->who[1], rec, size, RTK_PRIO_OFFSET);
		if (e && int_at(&c->aux, rec, size, &v))
			e->prio = v - RTK_PRIO_OFFSET;
		break;
	case RTK_ROLE_FORK:
		learn(p, &c->who[0], rec, size, RTK_PRIO_OFFSET);
		fresh(p, &c->who[1], rec, size);
		break;
	case RTK_ROLE_NEWTASK:
		e = fresh(p, &c->who[1], rec, size);
		if (!e || c->aux.size != 8 || c->aux.offset < 0 || c->aux.offset + 8 > size ||
		    emitter <= 0)
			break;
		memcpy(&flags, rec + c->aux.offset, 8);
		int32_t child = e->tid;
		struct rtk_proc *parent = rtk_procs_resolve(p, emitter);
		e = rtk_procs_get(p, child);	/* the parent's lookup may move it */
		if (!e || !parent)
			break;
		e->pid = (flags & RT_CLONE_THREAD) ? parent->pid : child;
		e->prio = parent->prio;
		break;
	case RTK_ROLE_FREE:
		if (int_at(&c->who[1].tid, rec, size, &v) && v > 0)
			rtk_procs_freed(p, v);
		break;
	default:
		break;
	}
}

/* Thread tid's entry, made when the table does not know it yet (from
 * /proc, or from the creation queued on another CPU): NULL when it cannot
 * be. The pointer is valid until the table's next insertion. */
static struct rtk_proc *resolve(struct rtk_trace *t, int32_t tid)
{
	struct rtk_proc *r = rtk_procs_resolve(&t->procs, tid);
	if (r && r->pid < 0 && !r->searched && t->lookahead) {
		/* Gone from /proc and created on another CPU? Once. */
		r->searched = true;
		t->lookahead(t->lookahead_arg, tid);
		/* It may have moved, or been made afresh by the creation
		 * found (which forgets it was searched for: searching again
		 * at each of its events would undo what they taught). */
		r = rtk_procs_resolve(&t->procs, tid);
		if (r)
			r->searched = true;
	}
	return r;
}

static char *put_contexts(struct rtk_trace *t, char *p, int32_t tid, unsigned cpu)
{
	struct rtk_proc idle = { .tid = 0, .pid = 0, .prio = 20 }, unknown = {
		.pid = -1, .prio = RTK_PRIO_UNKNOWN };
	const struct rtk_proc *e = &unknown;
	if (tid == 0) {
		/* The idle task, named by the kernel for its CPU. */
		snprintf(idle.comm, sizeof(idle.comm), "swapper/%u", cpu);
		e = &idle;
	} else if (tid > 0) {
		struct rtk_proc *r = resolve(t, tid);
		e = r ? r : &unknown;
	}
	if (t->contexts & RTK_CTX_PID) {
		memcpy(p, &e->pid, 4);
		p += 4;
	}
	if (t->contexts & RTK_CTX_PROCNAME) {
		size_t n = strnlen(e->comm, 15);
		memcpy(p, e->comm, n);
		p[n] = '\0';
		p += n + 1;
	}
	if (t->contexts & RTK_CTX_PRIO) {
		memcpy(p, &e->prio, 4);
		p += 4;
	}
	return p;
}

static char *put_payload(struct rtk_trace *t, char *p, const struct rtk_class *c,
			 const char *rec, int size, unsigned cpu)
{
	int32_t tid = c->pid_offset >= 0 ? (int32_t)rd32(rec + c->pid_offset) : -1;
	memcpy(p, &tid, 4);
	p += 4;
	if (t->contexts) {
		/* A sched_switch's prev is its emitter as it is: what the
		 * event says wins over what the table's first look at an
		 * unknown thread finds (a creation queued on another CPU names
		 * it as it was before a rename recorded elsewhere). */
		if (c->role == RTK_ROLE_SWITCH && tid > 0)
			resolve(t, tid);
		learn_before(&t->procs, c, rec, size);
		p = put_contexts(t, p, tid, cpu);
		learn_after(&t->procs, c, rec, size, tid);
	}
	for (uint32_t i = 0; i < c->nr_fields; i++) {
		const struct rtk_field *fl = &c->fields[i];
		const char *src = rec + fl->offset;
		int off = 0, len;
		switch (fl->kind) {
		case RTK_INT:
			memcpy(p, src, (size_t)fl->size);
			p += fl->size;
			break;
		case RTK_PRIO: {
			int32_t v = (int32_t)rd32(src) - RTK_PRIO_OFFSET;
			memcpy(p, &v, 4);
			p += 4;
			break;
		}
		case RTK_STR_ARRAY:
			p = put_string(p, src, fl->size);
			break;
		case RTK_BYTES:
			p = put_bytes(p, src, fl->size);
			break;
		case RTK_STR_DYN:
			len = dyn_span(fl, rec, size, &off);
			p = put_string(p, rec + off, len);
			break;
		case RTK_BYTES_DYN:
			len = dyn_span(fl, rec, size, &off);
			p = put_bytes(p, rec + off, len);
			break;
		}
	}
	return p;
}

void rtk_trace_watch(struct rtk_trace *t, void (*fn)(void *arg, const struct rtk_event *e),
		     void *arg)
{
	t->watch = fn;
	t->watch_arg = arg;
}

/* The event just written, to the watcher. */
static void watched(struct rtk_trace *t, const struct rtk_class *c, const char *rec, int size,
		    unsigned cpu, uint64_t when)
{
	int32_t tid = c->pid_offset >= 0 ? (int32_t)rd32(rec + c->pid_offset) : -1;
	struct rtk_event e = { .cpu = cpu, .time = when, .name = c->name, .tid = tid, .pid = -1,
			       .procname = "", .prio = RTK_PRIO_UNKNOWN, .cls = c, .rec = rec,
			       .size = size };
	const struct rtk_proc *p = t->contexts && tid > 0 ? rtk_procs_resolve(&t->procs, tid)
							  : NULL;
	if (p) {
		e.pid = t->contexts & RTK_CTX_PID ? p->pid : -1;
		e.procname = t->contexts & RTK_CTX_PROCNAME ? p->comm : "";
		e.prio = t->contexts & RTK_CTX_PRIO ? p->prio : RTK_PRIO_UNKNOWN;
	}
	t->watch(t->watch_arg, &e);
}

int rtk_event_field(const struct rtk_event *e, const char *name, struct rtf_value *v)
{
	const struct rtk_class *c = e->cls;
	for (uint32_t i = 0; i < c->nr_fields; i++) {
		if (strcmp(c->descs[i].name, name))
			continue;
		const struct rtk_field *fl = &c->fields[i];
		int off = fl->offset, len = fl->size;
		if (fl->offset < 0 || fl->offset + fl->size > e->size)
			return -EINVAL;
		*v = (struct rtf_value){ .type = RTF_NONE };
		switch (fl->kind) {
		case RTK_INT: {
			uint64_t u = 0;
			if (len > 8)
				return -EINVAL;
			memcpy(&u, e->rec + off, (size_t)len);	/* little-endian */
			uint32_t ty = c->descs[i].type;
			bool sign = ty == RT_TYPE_S8 || ty == RT_TYPE_S16 || ty == RT_TYPE_S32 ||
				    ty == RT_TYPE_S64;
			if (sign && len < 8 && (u >> (8 * len - 1)) & 1)
				u |= ~0ull << (8 * len);	/* sign-extended */
			if (sign) {
				v->type = RTF_INT;
				v->i = (int64_t)u;
			} else {
				v->type = RTF_UINT;
				v->u = u;
			}
			return 0;
		}
		case RTK_PRIO: {
			int32_t p;
			memcpy(&p, e->rec + off, 4);
			v->type = RTF_INT;
			v->i = (int64_t)p - RTK_PRIO_OFFSET;	/* as in the trace */
			return 0;
		}
		case RTK_STR_DYN:
			if ((len = dyn_span(fl, e->rec, e->size, &off)) < 0)
				return -EINVAL;
			/* fall through */
		case RTK_STR_ARRAY: {
			const char *nul = memchr(e->rec + off, '\0', (size_t)len);
			v->type = RTF_STRING;
			v->s.p = e->rec + off;
			v->s.len = nul ? (size_t)(nul - (e->rec + off)) : (size_t)len;
			return 0;
		}
		default:
			return -EINVAL;
		}
	}
	return -ENOENT;
}

int rtk_event_bytes(const struct rtk_event *e, const char *name, const uint8_t **p,
		    size_t *len)
{
	const struct rtk_class *c = e->cls;
	for (uint32_t i = 0; i < c->nr_fields; i++) {
		if (strcmp(c->descs[i].name, name))
			continue;
		const struct rtk_field *fl = &c->fields[i];
		int off = fl->offset, n = fl->size;
		if (fl->kind == RTK_BYTES_DYN && (n = dyn_span(fl, e->rec, e->size, &off)) < 0)
			return -EINVAL;
		if ((fl->kind != RTK_BYTES && fl->kind != RTK_BYTES_DYN) || off < 0 || n < 0 ||
		    off + n > e->size)
			return -EINVAL;
		*p = (const uint8_t *)e->rec + off;
		*len = (size_t)n;
		return 0;
	}
	return -ENOENT;
}

/* Close the packet built in the CPU's out (`used` bytes, events included);
 * `discarded` is the stream's new total. Returns its size (8-byte units,
 * ctf_packet.h). */
static size_t close_packet(struct rtk_trace *t, struct rtk_cpu_conv *s, unsigned cpu,
			   size_t used, uint64_t begin, uint64_t end, uint64_t discarded)
{
	size_t padded = (used + 7) & ~(size_t)7;
	memset(s->out + used, 0, padded - used);
	struct ctf_stream_info si = { .stream_id = 0, .subbuf_size = padded };
	memcpy(si.uuid, t->uuid, sizeof(si.uuid));
	ctf_packet_begin(&si, cpu, s->out, begin, s->seq);
	ctf_packet_end(&si, cpu, s->out, end, used, discarded);
	stat_add(&s->stats.lost, discarded - s->discarded);
	stat_add(&s->stats.packets, 1);
	s->discarded = discarded;
	s->seq++;
	s->last_ts = end;
	return padded;
}

/* Copy and check the page into *copy; load it into kb. */
static int load_page(struct kbuffer *kb, char **copy, size_t *cap, const void *page,
		     size_t size, uint64_t *commit, char *err, size_t errlen)
{
	if (size < RTK_PAGE_HEADER || size > (1u << 24)) {
		rt_errf(err, errlen, "an ftrace page of %zu bytes", size);
		return -EINVAL;
	}
	if (reserve(copy, cap, size + RTK_TAIL) < 0)
		return -ENOMEM;
	memcpy(*copy, page, size);
	memset(*copy + size, 0, RTK_TAIL);
	uint64_t c;
	memcpy(&c, *copy + 8, 8);
	c &= RTK_COMMIT_MASK;
	if (c > size - RTK_PAGE_HEADER) {
		rt_errf(err, errlen, "an ftrace page whose commit (%llu bytes) exceeds its "
			 "size (%zu)", (unsigned long long)c, size);
		return -EINVAL;
	}
	if (kbuffer_load_subbuffer(kb, *copy) < 0) {
		rt_errf(err, errlen, "an ftrace page that does not parse");
		return -EINVAL;
	}
	*commit = c;
	return 0;
}

/* Event header type_len values (ring_buffer.h). */
#define RTK_TYPE_DATA_MAX 28u	/* 1..28: a record of type_len words */
#define RTK_TYPE_PADDING 29u	/* array[0]: its length (time_delta 0: the rest) */
#define RTK_TYPE_TIME_EXTEND 30u
#define RTK_TYPE_TIME_STAMP 31u

long rtk_page_records(const void *page, size_t size)
{
	uint64_t commit;
	if (size < RTK_PAGE_HEADER)
		return -1;
	memcpy(&commit, (const char *)page + 8, 8);
	commit &= RTK_COMMIT_MASK;
	if (commit > size - RTK_PAGE_HEADER)
		return -1;
	const char *p = (const char *)page + RTK_PAGE_HEADER, *end = p + commit;
	long n = 0;
	/* Each event: a u32 header (type_len in its low 5 bits), then:
	 * type_len 1-28, a record of type_len * 4 bytes; 0, a u32 length
	 * (counting itself) then the record; 29, padding (a u32 length, or
	 * the rest of the page when time_delta is 0); 30 and 31, a u32 (the
	 * time's upper bits): 8 bytes in all. */
	while (end - p >= 4) {
		uint32_t h = rd32(p), type = h & 31u;
		uint64_t len;
		if (type >= 1 && type <= RTK_TYPE_DATA_MAX) {
			len = 4 + 4 * (uint64_t)type;
			n++;
		} else if (type == RTK_TYPE_TIME_EXTEND || type == RTK_TYPE_TIME_STAMP) {
			len = 8;
		} else if (type == RTK_TYPE_PADDING && !(h >> 5)) {
			break;
		} else {
			if (end - p < 8)
				return -1;
			len = 4 + (uint64_t)rd32(p + 4);
			if (type == 0)
				n++;
		}
		if (len > (uint64_t)(end - p))
			return -1;
		p += len;
	}
	return n;
}

bool rtk_page_missed(const void *page, size_t size)
{
	uint64_t commit;
	if (size < RTK_PAGE_HEADER)
		return false;
	memcpy(&commit, (const char *)page + 8, 8);
	return (commit & RTK_MISSED_EVENTS) != 0;
}

bool rtk_page_partial(const void *page, size_t size)
{
	uint64_t commit;
	if (size < RTK_PAGE_HEADER)
		return true;
	memcpy(&commit, (const char *)page + 8, 8);
	return 2 * (commit & RTK_COMMIT_MASK) < size - RTK_PAGE_HEADER;
}

void rtk_trace_restart(struct rtk_trace *t, unsigned cpu)
{
	struct rtk_cpu_conv *s;
	char why[64];
	if (conv_of(t, cpu, &s, why, sizeof(why)) == 0) {
		s->seq = 0;
		s->discarded = 0;
		s->last_ts = 0;
	}
}

void rtk_trace_lookahead(struct rtk_trace *t, void (*fn)(void *arg, int32_t tid), void *arg)
{
	t->lookahead = fn;
	t->lookahead_arg = arg;
}

/* Called by the lookahead, within a page's conversion: procs_lock held. */
int rtk_trace_learn_creation(struct rtk_trace *t, const void *page, size_t size, int32_t tid)
{
	if (!t->ahead_kbuf &&
	    !(t->ahead_kbuf = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE)))
		return 0;
	uint64_t commit;
	char why[128];
	if (load_page(t->ahead_kbuf, &t->ahead_page, &t->ahead_cap, page, size, &commit, why,
		      sizeof(why)) < 0)
		return 0;
	const char *end = t->ahead_page + RTK_PAGE_HEADER + commit;
	unsigned long long ts;
	for (const char *rec = kbuffer_read_event(t->ahead_kbuf, &ts); rec;
	     rec = kbuffer_next_event(t->ahead_kbuf, &ts)) {
		int rsize = kbuffer_event_size(t->ahead_kbuf);
		if (rsize < 2 || rec < t->ahead_page + RTK_PAGE_HEADER || rec + rsize > end)
			return 0;
		const struct rtk_class *c = rtk_formats_record_class(t->formats, rec, rsize);
		int32_t child;
		if (!c || (c->role != RTK_ROLE_FORK && c->role != RTK_ROLE_NEWTASK) ||
		    payload_bound(c, rec, rsize) < 0 || !int_at(&c->who[1].tid, rec, rsize, &child) ||
		    child != tid)
			continue;
		/* As its conversion will: the same learning, earlier. */
		int32_t emitter = c->pid_offset >= 0 ? (int32_t)rd32(rec + c->pid_offset) : -1;
		learn_before(&t->procs, c, rec, rsize);
		learn_after(&t->procs, c, rec, rsize, emitter);
		return 1;
	}
	return 0;
}


/* Convert the page loaded in s->kbuf (s->page, `commit` bytes of events)
 * into s->out: the packet's size in *len, the events' number, or -errno
 * with a message in err. procs_lock held when the trace has contexts. */
static long convert(struct rtk_trace *t, struct rtk_cpu_conv *s, unsigned cpu, uint64_t commit,
		    size_t *len, char *err, size_t errlen)
{
	int missed = kbuffer_missed_events(s->kbuf);
	uint64_t lost = missed > 0 ? (uint64_t)missed : missed < 0 ? 1u : 0u;
	uint64_t begin = kbuffer_subbuf_timestamp(s->kbuf, s->page);
	if (begin < s->last_ts)
		begin = s->last_ts;

	if (reserve(&s->out, &s->out_cap, CTF_PACKET_HEADER_SIZE) < 0)
		return -ENOMEM;
	size_t used = CTF_PACKET_HEADER_SIZE;
	uint64_t prev = begin, skipped = 0;
	long nr = 0;
	unsigned long long ts;
	const char *end = s->page + RTK_PAGE_HEADER + commit;
	for (const char *rec = kbuffer_read_event(s->kbuf, &ts); rec;
	     rec = kbuffer_next_event(s->kbuf, &ts)) {
		int rsize = kbuffer_event_size(s->kbuf);
		if (rsize < 2 || rec < s->page + RTK_PAGE_HEADER || rec + rsize > end) {
			rt_errf(err, errlen, "CPU %u: an ftrace record outside its page", cpu);
			return -EINVAL;
		}
		const struct rtk_class *c = rtk_formats_record_class(t->formats, rec, rsize);
		long bound = c ? payload_bound(c, rec, rsize) : -1;
		if (bound < 0) {
			skipped++;
			continue;
		}
		if (c->hidden) {
			if (t->contexts) {
				int32_t tid = c->pid_offset >= 0 ? (int32_t)rd32(rec + c->pid_offset)
								 : -1;
				learn_before(&t->procs, c, rec, rsize);
				learn_after(&t->procs, c, rec, rsize, tid);
			}
			continue;
		}
		uint64_t when = ts < prev ? prev : ts;
		if (reserve(&s->out, &s->out_cap, used + CTF_EVENT_HEADER_EXTENDED +
						     (size_t)bound + 8) < 0)
			return -ENOMEM;
		int full = when - prev >= (1ull << CTF_COMPACT_TSC_BITS);
		char *p = s->out + used;
		p += ctf_write_event_header(p, c->ctf_id, when, full);
		p = put_payload(t, p, c, rec, rsize, cpu);
		used = (size_t)(p - s->out);
		prev = when;
		nr++;
		if (t->watch)
			watched(t, c, rec, rsize, cpu, when);
	}
	*len = close_packet(t, s, cpu, used, begin, prev, s->discarded + lost);
	stat_add(&s->stats.events, (uint64_t)nr);
	stat_add(&s->stats.unknown, skipped);
	return nr;
}

long rtk_trace_packet(struct rtk_trace *t, unsigned cpu, const void *page, size_t size,
		      char **pkt, size_t *len, char *err, size_t errlen)
{
	struct rtk_cpu_conv *s;
	int ret = conv_of(t, cpu, &s, err, errlen);
	uint64_t commit;
	if (ret < 0 ||
	    (ret = load_page(s->kbuf, &s->page, &s->page_cap, page, size, &commit, err, errlen)) < 0)
		return ret;
	if (t->contexts)
		pthread_mutex_lock(&t->procs_lock);
	long nr = convert(t, s, cpu, commit, len, err, errlen);
	if (t->contexts)
		pthread_mutex_unlock(&t->procs_lock);
	*pkt = s->out;
	return nr;
}

int rtk_trace_lost_packet(struct rtk_trace *t, unsigned cpu, uint64_t total, char **pkt,
			  size_t *len, char *err, size_t errlen)
{
	struct rtk_cpu_conv *s;
	int ret = conv_of(t, cpu, &s, err, errlen);
	if (ret < 0 || total <= s->discarded)
		return ret;
	if (reserve(&s->out, &s->out_cap, CTF_PACKET_HEADER_SIZE + 8) < 0)
		return -ENOMEM;
	*len = close_packet(t, s, cpu, CTF_PACKET_HEADER_SIZE, s->last_ts, s->last_ts, total);
	*pkt = s->out;
	return 1;
}

const struct rt_field_desc *rtk_trace_contexts(const struct rtk_trace *t, uint32_t *nr)
{
	*nr = t->nr_ctx;
	return t->ctx;
}

void rtk_trace_keep_freed(struct rtk_trace *t)
{
	pthread_mutex_lock(&t->procs_lock);
	t->procs.keep_freed = true;
	pthread_mutex_unlock(&t->procs_lock);
}

void rtk_trace_sweep(struct rtk_trace *t)
{
	pthread_mutex_lock(&t->procs_lock);
	rtk_procs_sweep(&t->procs);
	pthread_mutex_unlock(&t->procs_lock);
}

void rtk_trace_thread(struct rtk_trace *t, int32_t tid, struct rtk_thread *out)
{
	*out = (struct rtk_thread){ .pid = -1, .prio = RTK_PRIO_UNKNOWN };
	if (tid <= 0)
		return;
	pthread_mutex_lock(&t->procs_lock);
	const struct rtk_proc *p = rtk_procs_resolve(&t->procs, tid);
	if (p) {
		out->pid = p->pid;
		out->prio = p->prio;
		memcpy(out->comm, p->comm, sizeof(out->comm));
	}
	pthread_mutex_unlock(&t->procs_lock);
}

void rtk_trace_stats(const struct rtk_trace *t, struct rtk_trace_stats *s)
{
	*s = (struct rtk_trace_stats){ 0 };
	for (unsigned i = 0; t->cpu && i < RTK_MAX_CPUS; i++) {
		/* Acquire: pairs with conv_of's release store. */
		const struct rtk_cpu_conv *c = __atomic_load_n(&t->cpu[i], __ATOMIC_ACQUIRE);
		if (!c)
			continue;
		/* Relaxed: statistics. */
		s->events += __atomic_load_n(&c->stats.events, __ATOMIC_RELAXED);
		s->lost += __atomic_load_n(&c->stats.lost, __ATOMIC_RELAXED);
		s->unknown += __atomic_load_n(&c->stats.unknown, __ATOMIC_RELAXED);
		s->packets += __atomic_load_n(&c->stats.packets, __ATOMIC_RELAXED);
	}
}

void rtk_trace_close(struct rtk_trace *t)
{
	if (!t)
		return;
	for (unsigned i = 0; t->cpu && i < RTK_MAX_CPUS; i++) {
		struct rtk_cpu_conv *c = t->cpu[i];
		if (!c)
			continue;
		kbuffer_free(c->kbuf);
		free(c->page);
		free(c->out);
		free(c);
	}
	free(t->cpu);
	if (t->ahead_kbuf)
		kbuffer_free(t->ahead_kbuf);
	free(t->ahead_page);
	rtk_procs_free(&t->procs);
	pthread_mutex_destroy(&t->procs_lock);
	free(t);
}
