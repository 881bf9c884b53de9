/*
 * filter_fetch.c - a filter program bound to an event class and run on
 * the call site's arguments (filter_fetch.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "../common/context.h"
#include "../ringbuffer/ringbuffer.h"
#include "../ringbuffer/rb_rseq.h"
#include "daemon_client.h"
#include "filter_fetch.h"

/* Bytes a fixed-size field takes in the payload (ringtrace.h writes each
 * value with its C size, packed), 0 for strings and byte sequences. */
static uint32_t fixed_size(uint32_t type)
{
	switch (type) {
	case RT_TYPE_S8: case RT_TYPE_U8: case RT_TYPE_BOOL: case RT_TYPE_FORMAT:
		return 1;
	case RT_TYPE_S16: case RT_TYPE_U16:
		return 2;
	case RT_TYPE_S32: case RT_TYPE_U32: case RT_TYPE_FLOAT:
		return 4;
	case RT_TYPE_S64: case RT_TYPE_U64: case RT_TYPE_DOUBLE:
		return 8;
	case RT_TYPE_POINTER:
		return sizeof(void *);
	default:
		return 0;
	}
}

void rt_fref_bind(const struct rt_event_class *c, const struct rtf_ref *r, struct rt_fref *out)
{
	*out = (struct rt_fref){ .kind = RT_FREF_MISSING, .offset = UINT32_MAX };
	if (r->scope == RTF_SCOPE_CTX) {
		int ctx = rt_context_by_name(r->name);
		if (ctx >= 0) {
			out->kind = RT_FREF_CTX;
			out->type = (uint8_t)ctx;
		}
		return;
	}
	if (r->scope != RTF_SCOPE_FIELD && r->scope != RTF_SCOPE_PAYLOAD)
		return;
	uint32_t offset = 0;
	for (uint32_t i = 0; i < c->nr_fields && i <= UINT16_MAX; i++) {
		uint32_t type = c->fields[i].type, size = fixed_size(type);
		/* A format's name is its text, no field a filter names. */
		if (type != RT_TYPE_FORMAT && !strcmp(c->field_names[i], r->name)) {
			if (type != RT_TYPE_BYTES && (size || type == RT_TYPE_STRING)) {
				out->kind = RT_FREF_FIELD;
				out->type = (uint8_t)type;
				out->field = (uint16_t)i;
				out->offset = offset;
			}
			return;
		}
		/* Past a string or sequence no field has a fixed offset (and
		 * such a class is recorded with parts anyway). */
		offset = size && offset != UINT32_MAX ? offset + size : UINT32_MAX;
	}
}

void rt_fref_bind_capture(const struct rt_event_class *c, const struct rtf_ref *r,
			  bool has_index, uint32_t index, struct rt_fref *out)
{
	rt_fref_bind(c, r, out);
	if (r->scope == RTF_SCOPE_FIELD || r->scope == RTF_SCOPE_PAYLOAD) {
		for (uint32_t i = 0; i < c->nr_fields && i <= UINT16_MAX; i++) {
			if (strcmp(c->field_names[i], r->name) || c->fields[i].type != RT_TYPE_BYTES)
				continue;
			*out = (struct rt_fref){ .kind = has_index ? RT_FREF_ELEMENT : RT_FREF_BYTES,
						 .type = RT_TYPE_BYTES, .field = (uint16_t)i,
						 .offset = UINT32_MAX, .index = index };
			return;
		}
	}
	if (has_index)
		out->kind = RT_FREF_MISSING;
}

/* The bytes of a sequence part as the probe writes them (write_parts:
 * its length word, then what fits the part's size). */
static int part_bytes(const struct rt_fref *r, const struct rt_filter_event *e,
		      const uint8_t **p, uint32_t *len)
{
	if (e->flat || !e->parts || r->field >= e->nr)
		return -ENOENT;
	const struct rt_part *pt = &e->parts[r->field];
	if (pt->kind != RT_PART_BYTES || pt->size < sizeof(uint32_t))
		return -ENOENT;
	const struct rt_bytes *b = (const struct rt_bytes *)pt->ptr;
	uint32_t room = pt->size - (uint32_t)sizeof(uint32_t);
	*p = b->ptr;
	*len = b->len < room ? b->len : room;
	return *len && !*p ? -ENOENT : 0;
}

int rt_fref_bytes(const struct rt_fref *r, const struct rt_filter_event *e, const uint8_t **p,
		  uint32_t *len)
{
	return r->kind == RT_FREF_BYTES ? part_bytes(r, e, p, len) : -ENOENT;
}

int rt_filter_bind(const struct rt_event_class *c, const struct rtf_program *prog,
		   struct rt_filter **out)
{
	uint32_t n = rtf_nr_refs(prog);
	struct rt_filter *f = calloc(1, sizeof(*f) + n * sizeof(f->refs[0]));
	*out = NULL;
	if (!f)
		return -ENOMEM;
	f->prog = prog;
	f->simple = rtf_simple(prog, &f->s);
	f->nr_refs = n;
	for (uint32_t i = 0; i < n; i++)
		rt_fref_bind(c, rtf_ref(prog, i), &f->refs[i]);
	*out = f;
	return 0;
}

/* A fixed-size value of field type `type` at p into *v. */
static void fixed_value(uint32_t type, const char *p, struct rtf_value *v)
{
	switch (type) {
	case RT_TYPE_S8: { int8_t x; memcpy(&x, p, 1); v->type = RTF_INT; v->i = x; break; }
	case RT_TYPE_U8: { uint8_t x; memcpy(&x, p, 1); v->type = RTF_UINT; v->u = x; break; }
	case RT_TYPE_BOOL: {
		uint8_t x;
		memcpy(&x, p, 1);
		v->type = RTF_INT;
		v->i = x;
		v->label = x == 0 ? "false" : x == 1 ? "true" : NULL;
		break;
	}
	case RT_TYPE_S16: { int16_t x; memcpy(&x, p, 2); v->type = RTF_INT; v->i = x; break; }
	case RT_TYPE_U16: { uint16_t x; memcpy(&x, p, 2); v->type = RTF_UINT; v->u = x; break; }
	case RT_TYPE_S32: { int32_t x; memcpy(&x, p, 4); v->type = RTF_INT; v->i = x; break; }
	case RT_TYPE_U32: { uint32_t x; memcpy(&x, p, 4); v->type = RTF_UINT; v->u = x; break; }
	case RT_TYPE_S64: { int64_t x; memcpy(&x, p, 8); v->type = RTF_INT; v->i = x; break; }
	case RT_TYPE_U64: { uint64_t x; memcpy(&x, p, 8); v->type = RTF_UINT; v->u = x; break; }
	case RT_TYPE_FLOAT: { float x; memcpy(&x, p, 4); v->type = RTF_DOUBLE; v->d = x; break; }
	case RT_TYPE_DOUBLE: { double x; memcpy(&x, p, 8); v->type = RTF_DOUBLE; v->d = x; break; }
	default: {		/* RT_TYPE_POINTER */
		uintptr_t x;
		memcpy(&x, p, sizeof(x));
		v->type = RTF_UINT;
		v->u = x;
		break;
	}
	}
}

struct fetch_arg {
	const struct rt_filter *f;
	const struct rt_filter_event *e;
	char tname[RT_THREAD_NAME_LEN];
};

static int fetch_field(const struct rt_fref *r, const struct rt_filter_event *e,
		       struct rtf_value *v)
{
	uint32_t size = fixed_size(r->type);
	if (e->flat) {
		if (!size || r->offset == UINT32_MAX || r->offset + (uint64_t)size > e->size)
			return -ENOENT;
		fixed_value(r->type, e->flat + r->offset, v);
		return 0;
	}
	if (!e->parts || r->field >= e->nr)
		return -ENOENT;
	const struct rt_part *pt = &e->parts[r->field];
	if (r->type == RT_TYPE_STRING) {
		if (pt->kind != RT_PART_STRING || pt->size == 0)
			return -ENOENT;
		/* What the probe writes (write_string): the first size - 1
		 * bytes, up to a NUL. */
		const char *s = *(const char *const *)pt->ptr;
		if (!s)
			s = "(null)";
		v->type = RTF_STRING;
		v->s.p = s;
		v->s.len = strnlen(s, pt->size - 1);
		return 0;
	}
	if (pt->kind != RT_PART_FIXED || pt->size != size)
		return -ENOENT;
	fixed_value(r->type, pt->ptr, v);
	return 0;
}

static int fetch_ctx(const struct rt_filter_event *e, char tname[RT_THREAD_NAME_LEN],
		     unsigned ctx, struct rtf_value *v)
{
	int32_t pid, tid, prio;
	switch (ctx) {
	case RT_CTX_VPID:
	case RT_CTX_VTID:
	case RT_CTX_PRIO:
		rt_probe_thread_ids(&pid, &tid, &prio);
		v->type = RTF_INT;
		v->i = ctx == RT_CTX_VPID ? pid : ctx == RT_CTX_VTID ? tid : prio;
		return 0;
	case RT_CTX_PROCNAME:
		v->type = RTF_STRING;
		v->s.len = rt_probe_thread_name(tname);
		v->s.p = tname;
		return 0;
	case RT_CTX_CPU_ID: {
		int32_t cpu = rb_rseq_usable() ? rb_rseq_cpu(rb_rseq_off()) : sched_getcpu();
		if (cpu < 0)
			return -ENOENT;
		v->type = RTF_INT;
		v->i = cpu;
		return 0;
	}
	case RT_CTX_IP:
		if (!e->ip)
			return -ENOENT;
		v->type = RTF_UINT;
		v->u = e->ip;
		return 0;
	case RT_CTX_HOSTNAME:
		if (!rt_dc_hostname_size)
			return -ENOENT;
		v->type = RTF_STRING;
		v->s.p = rt_dc_hostname;
		v->s.len = rt_dc_hostname_size - 1;
		return 0;
	default:
		return -ENOENT;
	}
}

int rt_fref_fetch(const struct rt_fref *r, const struct rt_filter_event *e,
		  char tname[RT_THREAD_NAME_LEN], struct rtf_value *v)
{
	switch (r->kind) {
	case RT_FREF_FIELD:
		return fetch_field(r, e, v);
	case RT_FREF_CTX:
		return fetch_ctx(e, tname, r->type, v);
	case RT_FREF_ELEMENT: {
		const uint8_t *p;
		uint32_t len;
		if (part_bytes(r, e, &p, &len) < 0 || r->index >= len)
			return -ENOENT;
		v->type = RTF_UINT;
		v->u = p[r->index];
		return 0;
	}
	default:
		return -ENOENT;
	}
}

static int fetch(void *arg, uint32_t ref, struct rtf_value *v)
{
	struct fetch_arg *a = arg;
	return rt_fref_fetch(&a->f->refs[ref], a->e, a->tname, v);
}

bool rt_filter_pass(const struct rt_filter *f, const struct rt_filter_event *e)
{
	struct fetch_arg a;	/* tname: written before it is read */
	a.f = f;
	a.e = e;
	if (f->simple) {
		struct rtf_value v[RTF_SIMPLE_MAX];
		for (uint32_t i = 0; i < f->s.nr_refs; i++) {
			v[i].type = RTF_NONE;
			v[i].label = NULL;
			if (fetch(&a, i, &v[i]) < 0)
				v[i].type = RTF_NONE;
		}
		return rtf_simple_eval(&f->s, v);
	}
	return rtf_eval(f->prog, fetch, &a);
}
