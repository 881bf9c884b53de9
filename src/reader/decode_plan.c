/*
 * decode_plan.c - give the TSDL syntax tree (tsdl.h) its meaning: the
 * trace, env, clock, stream and event blocks, and one tree of decode nodes
 * (reader_internal.h) per scope: packet header, packet context, event
 * header, stream event context, event context, payload.
 *
 * Compiling a scope expands aliases, resolves byte orders (native = the
 * trace's), sizes and alignments, static sizes (so a fixed-size scope is
 * skipped with one addition), sequence lengths and variant tags (a field
 * path, relative like `len` / `_v.len` or absolute like
 * `stream.event.header.id`, resolved once to a value slot), and the roles
 * of header fields (packet size, timestamps, event id ...).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/hex.h"
#include "reader_internal.h"
#include "tsdl.h"

#define MAX_NODES (1u << 20)	/* per metadata: bounds alias expansion */
#define MAX_ARRAY_LEN (1ull << 32)
#define BY_ID_TABLE_MAX 65536u

enum { SC_PH, SC_PC, SC_EH, SC_SEC, SC_EC, SC_EF, SC_N };

struct frame {
	struct rtr_node *st;	/* members compiled so far: st->nr_children */
};

struct cctx {
	struct parser *P;
	struct rtr_meta *m;
	struct rtr_node *roots[SC_N];
	int scope;		/* the scope being compiled */
	struct frame frames[TSDL_MAX_DEPTH + 2];
	int nframes;
	int depth;
	uint32_t nodes;
	size_t nr_events;	/* event blocks in the metadata */
	bool ringtrace;		/* env.tracer_name = "ringtrace": byte sequences are RTR_BYTES */
};

static struct rtr_node *new_node(struct cctx *C, enum rtr_node_kind kind, size_t off)
{
	if (++C->nodes > MAX_NODES) {
		tsdl_perr(C->P, off, -EINVAL, "the metadata declares too many fields (over %u)", MAX_NODES);
		return NULL;
	}
	struct rtr_node *n = tsdl_arena_alloc(C->P->a, sizeof(*n));
	if (!n) {
		tsdl_oom(C->P);
		return NULL;
	}
	n->kind = (uint8_t)kind;
	n->slot = -1;
	n->ref_slot = -1;
	n->static_bits = -1;
	n->base = 10;
	n->align = 1;
	return n;
}

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

static bool is_scalar(const struct rtr_node *n)
{
	return n->kind == RN_INT || n->kind == RN_ENUM || n->kind == RN_FLOAT;
}

/* ------------------------------------------------------------------ */
/* Field paths                                                          */

static struct rtr_node *child_named(const struct rtr_node *st, const char *name, size_t len)
{
	if (!st || st->kind != RN_STRUCT)
		return NULL;
	for (uint32_t k = 0; k < st->nr_children; k++)
		if (strlen(st->names[k]) == len && !memcmp(st->names[k], name, len))
			return st->children[k];
	return NULL;
}

/* Follow `rest` (dot-separated member names) from n. */
static struct rtr_node *descend(struct rtr_node *n, const char *rest)
{
	while (n && *rest) {
		const char *dot = strchr(rest, '.');
		size_t len = dot ? (size_t)(dot - rest) : strlen(rest);
		n = child_named(n, rest, len);
		rest = dot ? dot + 1 : rest + len;
	}
	return n;
}

static struct rtr_node *resolve(struct cctx *C, const char *path)
{
	static const struct {
		const char *prefix;
		int scope;
	} abs[] = {
		{ "trace.packet.header.", SC_PH }, { "stream.packet.context.", SC_PC },
		{ "stream.event.header.", SC_EH }, { "stream.event.context.", SC_SEC },
		{ "event.context.", SC_EC }, { "event.fields.", SC_EF },
		{ "packet.header.", SC_PH }, { "packet.context.", SC_PC },
		{ "event.header.", SC_EH },
	};
	for (size_t k = 0; k < sizeof(abs) / sizeof(abs[0]); k++) {
		size_t pl = strlen(abs[k].prefix);
		if (strncmp(path, abs[k].prefix, pl))
			continue;
		/* The scope being compiled: its root is the outermost frame. */
		if (abs[k].scope == C->scope && C->nframes > 0)
			return descend(C->frames[0].st, path + pl);
		return descend(C->roots[abs[k].scope], path + pl);
	}
	const char *dot = strchr(path, '.');
	size_t len = dot ? (size_t)(dot - path) : strlen(path);
	const char *rest = dot ? dot + 1 : "";
	for (int f = C->nframes; f-- > 0;) {
		struct rtr_node *n = child_named(C->frames[f].st, path, len);
		if (n)
			return descend(n, rest);
	}
	for (int s = C->scope - 1; s >= 0; s--) {
		struct rtr_node *n = child_named(C->roots[s], path, len);
		if (n)
			return descend(n, rest);
	}
	return NULL;
}

/* The integer (or enum) at `path`, given a value slot. */
static int ref_slot(struct cctx *C, const char *path, size_t off, bool want_enum,
		    int32_t *out)
{
	struct rtr_node *n = resolve(C, path);
	if (!n)
		return tsdl_perr(C->P, off, -EINVAL, "cannot resolve the field path '%s'", path);
	if (want_enum ? n->kind != RN_ENUM : (n->kind != RN_INT && n->kind != RN_ENUM))
		return tsdl_perr(C->P, off, -EINVAL, "'%s' is not %s", path,
			    want_enum ? "an enumeration (a variant's tag must be)" :
					"an integer (a sequence's length must be)");
	if (n->slot < 0)
		n->slot = (int32_t)C->m->nr_slots++;
	*out = n->slot;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Types                                                                */

static struct rtr_node *compile(struct cctx *C, const struct ty *t, const char *name);

static void scalar_common(struct cctx *C, struct rtr_node *n, const struct ty *t)
{
	n->size = t->size;
	n->align = t->align ? t->align : 1;
	n->be = t->byte_order == BO_BE || (t->byte_order == BO_DEFAULT && C->m->big_endian);
	n->static_bits = t->size;
}

static struct rtr_node *compile_int(struct cctx *C, const struct ty *t)
{
	struct rtr_node *n = new_node(C, RN_INT, t->off);
	if (!n)
		return NULL;
	scalar_common(C, n, t);
	n->is_signed = t->is_signed;
	n->base = (uint8_t)t->base;
	n->pub = t->is_signed ? RTR_INT : RTR_UINT;
	if (t->map && !strncmp(t->map, "clock.", 6))
		n->role = RR_CLOCK;
	return n;
}

static bool enum_is_bool(const struct ty *t)
{
	return t->nr_ents == 2 && !strcmp(t->ents[0].label, "false") && t->ents[0].lo == 0 &&
	       t->ents[0].hi == 0 && !strcmp(t->ents[1].label, "true") && t->ents[1].lo == 1 &&
	       t->ents[1].hi == 1;
}

static struct rtr_node *compile_enum(struct cctx *C, const struct ty *t)
{
	struct rtr_node *n = compile_int(C, t->elem);
	if (!n)
		return NULL;
	n->kind = RN_ENUM;
	n->pub = enum_is_bool(t) && C->ringtrace ? RTR_BOOL : RTR_ENUM;
	struct rtr_enum_map *maps = tsdl_arena_alloc(C->P->a, (t->nr_ents + 1) * sizeof(*maps));
	if (!maps) {
		tsdl_oom(C->P);
		return NULL;
	}
	for (size_t k = 0; k < t->nr_ents; k++)
		maps[k] = (struct rtr_enum_map){ t->ents[k].lo, t->ents[k].hi, t->ents[k].label, -1 };
	n->maps = maps;
	n->nr_maps = (uint32_t)t->nr_ents;
	return n;
}

static struct rtr_node *compile_float(struct cctx *C, const struct ty *t)
{
	if (!((t->exp_dig == 8 && t->mant_dig == 24) || (t->exp_dig == 11 && t->mant_dig == 53))) {
		tsdl_perr(C->P, t->off, -ENOTSUP,
		     "floating_point with exp_dig %u, mant_dig %u is not supported (8/24 or 11/53 only)",
		     t->exp_dig, t->mant_dig);
		return NULL;
	}
	struct rtr_node *n = new_node(C, RN_FLOAT, t->off);
	if (!n)
		return NULL;
	scalar_common(C, n, t);
	n->pub = t->size == 32 ? RTR_FLOAT : RTR_DOUBLE;
	return n;
}

static int alloc_children(struct cctx *C, struct rtr_node *n, size_t count, bool names)
{
	n->children = tsdl_arena_alloc(C->P->a, (count + 1) * sizeof(*n->children));
	if (names) {
		n->names = tsdl_arena_alloc(C->P->a, (count + 1) * sizeof(*n->names));
		n->pnames = tsdl_arena_alloc(C->P->a, (count + 1) * sizeof(*n->pnames));
	}
	if (!n->children || (names && (!n->names || !n->pnames)))
		return tsdl_oom(C->P);
	return 0;
}

static struct rtr_node *compile_struct(struct cctx *C, const struct ty *t)
{
	struct rtr_node *n = new_node(C, RN_STRUCT, t->off);
	if (!n || alloc_children(C, n, t->nr_fields, true) < 0)
		return NULL;
	n->pub = RTR_STRUCT;
	n->align = t->align ? t->align : 1;
	if (C->nframes >= (int)(sizeof(C->frames) / sizeof(C->frames[0]))) {
		tsdl_perr(C->P, t->off, -EINVAL, "structures nested too deep");
		return NULL;
	}
	C->frames[C->nframes++].st = n;
	for (size_t k = 0; k < t->nr_fields; k++) {
		struct rtr_node *c = compile(C, t->fields[k].ty, t->fields[k].name);
		if (!c) {
			C->nframes--;
			return NULL;
		}
		n->children[k] = c;
		n->names[k] = t->fields[k].name;
		n->pnames[k] = n->names[k][0] == '_' ? n->names[k] + 1 : n->names[k];
		n->nr_children = (uint32_t)k + 1;
		if (c->align > n->align)
			n->align = c->align;
	}
	C->nframes--;
	n->flat = 1;
	for (uint32_t k = 0; k < n->nr_children; k++)
		n->flat &= is_scalar(n->children[k]);
	uint64_t bits = 0;
	uint64_t *offs = tsdl_arena_alloc(C->P->a, (n->nr_children + 1) * sizeof(*offs));
	if (!offs) {
		tsdl_oom(C->P);
		return NULL;
	}
	for (uint32_t k = 0; k < n->nr_children; k++) {
		const struct rtr_node *c = n->children[k];
		if (c->static_bits < 0)
			return n;
		bits = round_up(bits, c->align);
		offs[k] = bits;
		bits += (uint64_t)c->static_bits;
		if (bits > (1ull << 40))
			return n;
	}
	n->static_bits = (int64_t)bits;
	n->offs = offs;
	return n;
}

static struct rtr_node *compile_variant(struct cctx *C, const struct ty *t)
{
	if (!t->tag) {
		tsdl_perr(C->P, t->off, -ENOTSUP, "untagged variants are not supported");
		return NULL;
	}
	struct rtr_node *n = new_node(C, RN_VARIANT, t->off);
	if (!n || alloc_children(C, n, t->nr_fields, true) < 0)
		return NULL;
	if (ref_slot(C, t->tag, t->off, true, &n->ref_slot) < 0)
		return NULL;
	const struct rtr_node *tag = resolve(C, t->tag);
	for (size_t k = 0; k < t->nr_fields; k++) {
		struct rtr_node *c = compile(C, t->fields[k].ty, t->fields[k].name);
		if (!c)
			return NULL;
		n->children[k] = c;
		n->names[k] = t->fields[k].name;
		n->pnames[k] = n->names[k][0] == '_' ? n->names[k] + 1 : n->names[k];
		n->nr_children = (uint32_t)k + 1;
	}
	n->pub = n->nr_children ? n->children[0]->pub : RTR_STRUCT;
	struct rtr_enum_map *maps = tsdl_arena_alloc(C->P->a, (tag->nr_maps + 1) * sizeof(*maps));
	if (!maps) {
		tsdl_oom(C->P);
		return NULL;
	}
	for (uint32_t k = 0; k < tag->nr_maps; k++) {
		maps[k] = tag->maps[k];
		maps[k].option = -1;
		const char *l = maps[k].label;
		for (uint32_t o = 0; o < n->nr_children; o++) {
			const char *on = n->names[o];
			if (!strcmp(on, l) || (on[0] == '_' && !strcmp(on + 1, l)))
				maps[k].option = (int32_t)o;
		}
	}
	n->maps = maps;
	n->nr_maps = tag->nr_maps;
	return n;
}

static struct rtr_node *compile_array(struct cctx *C, const struct ty *t)
{
	bool seq = t->kind == TY_SEQ;
	if (!seq && t->length >= MAX_ARRAY_LEN) {
		tsdl_perr(C->P, t->off, -EINVAL, "array length %" PRIu64 " is too large", t->length);
		return NULL;
	}
	struct rtr_node *n = new_node(C, seq ? RN_SEQ : RN_ARRAY, t->off);
	if (!n || alloc_children(C, n, 1, false) < 0)
		return NULL;
	if (seq && ref_slot(C, t->length_ref, t->off, false, &n->ref_slot) < 0)
		return NULL;
	struct rtr_node *e = compile(C, t->elem, NULL);
	if (!e)
		return NULL;
	n->children[0] = e;
	n->nr_children = 1;
	n->length = t->length;
	n->align = e->align;
	n->pub = RTR_ARRAY;
	const struct ty *et = t->elem;
	if (et->kind == TY_INT && et->size == 8 && e->align <= 8) {
		bool text = et->encoding && strcmp(et->encoding, "none");
		if (text)
			n->pub = RTR_STRING;
		else if (C->ringtrace && !et->is_signed)
			n->pub = RTR_BYTES;
	}
	if (is_scalar(e)) {
		n->elem_fixed = 1;
		n->stride = round_up(e->size, e->align);
	}
	if (!seq && e->static_bits >= 0) {
		uint64_t stride = round_up((uint64_t)e->static_bits, e->align);
		n->stride = stride;
		if (n->length == 0)
			n->static_bits = 0;
		else if (stride <= (1ull << 40) / n->length)
			n->static_bits = (int64_t)(stride * (n->length - 1) + (uint64_t)e->static_bits);
	}
	return n;
}

static struct rtr_node *compile(struct cctx *C, const struct ty *t, const char *name)
{
	if (++C->depth > 2 * TSDL_MAX_DEPTH) {
		tsdl_perr(C->P, t->off, -EINVAL, "types nested too deep");
		return NULL;
	}
	struct rtr_node *n = NULL;
	switch (t->kind) {
	case TY_INT:
		n = compile_int(C, t);
		break;
	case TY_FLOAT:
		n = compile_float(C, t);
		break;
	case TY_ENUM:
		n = compile_enum(C, t);
		break;
	case TY_STRING:
		n = new_node(C, RN_STRING, t->off);
		if (n) {
			n->align = 8;
			n->pub = RTR_STRING;
		}
		break;
	case TY_STRUCT:
		n = compile_struct(C, t);
		break;
	case TY_VARIANT:
		n = compile_variant(C, t);
		break;
	default:
		n = compile_array(C, t);
		break;
	}
	C->depth--;
	if (n)
		n->decl_name = !name ? "[]" : name[0] == '_' ? name + 1 : name;
	return n;
}

/* Compile the type of entry `e` (NULL: no such scope) as scope `scope`. */
static int compile_scope(struct cctx *C, const struct entry *e, int scope,
			 const struct rtr_node **out)
{
	C->scope = scope;
	C->roots[scope] = NULL;
	*out = NULL;
	if (!e)
		return 0;
	if (e->vk != V_TYPE || e->ty->kind != TY_STRUCT)
		return tsdl_perr(C->P, e->off, -EINVAL, "'%s' must be a structure", e->key);
	C->nframes = 0;
	struct rtr_node *n = compile(C, e->ty, e->key);
	if (!n)
		return C->P->rc;
	C->roots[scope] = n;
	*out = n;
	return 0;
}

/* Mark `plain` (and `strs`) bottom-up (slots are known only once
 * everything is compiled). */
static bool finalize(struct rtr_node *n)
{
	if (!n)
		return true;
	bool plain = n->static_bits >= 0 && n->role == RR_NONE && n->slot < 0;
	for (uint32_t k = 0; k < n->nr_children; k++)
		plain &= finalize(n->children[k]);
	n->plain = plain;
	n->strs = n->kind == RN_STRUCT && n->role == RR_NONE && n->slot < 0;
	for (uint32_t k = 0; n->strs && k < n->nr_children; k++) {
		const struct rtr_node *c = n->children[k];
		n->strs = (c->kind == RN_STRING && c->role == RR_NONE && c->slot < 0) ||
			  (c->kind <= RN_FLOAT && c->plain);
	}
	n->nr_runs = 0;
	bool bytes = n->strs && n->align % 8 == 0;
	uint32_t r = 0;
	memset(n->runs, 0, sizeof(n->runs));
	for (uint32_t k = 0; bytes && k < n->nr_children; k++) {
		const struct rtr_node *c = n->children[k];
		if (c->kind == RN_STRING)
			bytes = ++r < RTR_RUNS;
		else if (c->static_bits % 8 || (uint64_t)c->static_bits / 8 > UINT32_MAX - n->runs[r])
			bytes = false;
		else
			n->runs[r] += (uint32_t)(c->static_bits / 8);
	}
	if (bytes)
		n->nr_runs = (uint8_t)(r + 1);
	return plain;
}

/* Roles of the top-level members of a packet header or context. */
static void set_roles(const struct rtr_node *st, bool header)
{
	static const struct {
		const char *name;
		uint8_t role;
		bool header;
	} roles[] = {
		{ "magic", RR_MAGIC, true }, { "uuid", RR_UUID, true },
		{ "stream_id", RR_STREAM_ID, true },
		{ "timestamp_begin", RR_TS_BEGIN, false }, { "timestamp_end", RR_TS_END, false },
		{ "content_size", RR_CONTENT_SIZE, false }, { "packet_size", RR_PACKET_SIZE, false },
		{ "packet_seq_num", RR_SEQ_NUM, false }, { "events_discarded", RR_DISCARDED, false },
		{ "cpu_id", RR_CPU_ID, false },
	};
	if (!st)
		return;
	for (uint32_t k = 0; k < st->nr_children; k++) {
		struct rtr_node *c = st->children[k];
		/* Without the metadata's leading '_', as every field name
		 * (babeltrace2's sink.ctf.fs writes the packet context's
		 * cpu_id of a source as _cpu_id). */
		const char *name = st->names[k] + (st->names[k][0] == '_');
		for (size_t r = 0; r < sizeof(roles) / sizeof(roles[0]); r++) {
			if (roles[r].header != header || strcmp(name, roles[r].name))
				continue;
			bool ok = roles[r].role == RR_UUID
					  ? (c->kind == RN_ARRAY && c->length == 16 &&
					     c->children[0]->size == 8)
					  : (c->kind == RN_INT || c->kind == RN_ENUM);
			c->role = ok ? roles[r].role : RR_NONE;
		}
	}
}

/* Event header: every integer named id is the event id, every integer
 * named timestamp (or mapped to a clock) updates the clock. */
static void set_header_roles(struct rtr_node *n, const char *name)
{
	if (n->kind == RN_INT || n->kind == RN_ENUM) {
		if (name && !strcmp(name, "id"))
			n->role = RR_EVENT_ID;
		else if (name && !strcmp(name, "timestamp"))
			n->role = RR_CLOCK;
		return;
	}
	if (n->kind == RN_STRUCT || n->kind == RN_VARIANT)
		for (uint32_t k = 0; k < n->nr_children; k++)
			set_header_roles(n->children[k], n->names[k]);
}

/* ------------------------------------------------------------------ */
/* Blocks                                                               */

static int parse_uuid(struct parser *P, const struct entry *e, uint8_t out[16])
{
	const char *s = e->vk == V_STR ? e->s : "";
	size_t n = 0;
	for (size_t k = 0; s[k]; k++) {
		if ((k == 8 || k == 13 || k == 18 || k == 23) && s[k] == '-')
			continue;
		int h = rt_hex_digit((unsigned char)s[k]);
		int l = s[k + 1] ? rt_hex_digit((unsigned char)s[k + 1]) : -1;
		if (h < 0 || l < 0 || n == 16)
			break;
		out[n++] = (uint8_t)(h * 16 + l);
		k++;
	}
	if (n != 16 || strlen(s) != 36)
		return tsdl_perr(P, e->off, -EINVAL, "bad uuid (want \"xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx\")");
	return 0;
}

static int do_trace(struct cctx *C, const struct block *b)
{
	struct parser *P = C->P;
	struct rtr_meta *m = C->m;
	const struct entry *e;
	uint64_t v = 0;
	if ((e = tsdl_find_entry(b->ents, b->n, "major"))) {
		if (tsdl_attr_uint(P, e, UINT32_MAX, &v) < 0)
			return P->rc;
		if (v != 1)
			return tsdl_perr(P, e->off, -ENOTSUP, "CTF major version %" PRIu64 " is not supported", v);
	}
	if ((e = tsdl_find_entry(b->ents, b->n, "minor"))) {
		if (tsdl_attr_uint(P, e, UINT32_MAX, &v) < 0)
			return P->rc;
		if (v != 8)
			return tsdl_perr(P, e->off, -ENOTSUP, "CTF 1.%" PRIu64 " is not supported (1.8 only)", v);
	}
	if ((e = tsdl_find_entry(b->ents, b->n, "uuid"))) {
		if (parse_uuid(P, e, m->uuid) < 0)
			return P->rc;
		m->has_uuid = 1;
	}
	e = tsdl_find_entry(b->ents, b->n, "byte_order");
	if (!e)
		return tsdl_perr(P, b->off, -EINVAL, "the trace block has no byte_order");
	if (tsdl_ident_is(e, "be") || tsdl_ident_is(e, "network"))
		m->big_endian = true;
	else if (!tsdl_ident_is(e, "le") && !tsdl_ident_is(e, "native"))
		return tsdl_perr(P, e->off, -EINVAL, "byte_order must be le, be, network or native");
	return 0;
}

static int do_env(struct cctx *C, const struct block *b)
{
	struct rtr_meta *m = C->m;
	m->env = tsdl_arena_alloc(C->P->a, (b->n + 1) * sizeof(*m->env));
	if (!m->env)
		return tsdl_oom(C->P);
	for (size_t k = 0; k < b->n; k++) {
		const struct entry *e = &b->ents[k];
		struct rtr_env *v = &m->env[m->nr_env];
		v->key = e->key;
		if (e->vk == V_INT) {
			char buf[32];
			v->i = e->neg ? -(int64_t)e->u : (int64_t)e->u;
			snprintf(buf, sizeof(buf), "%" PRId64, v->i);
			v->s = tsdl_arena_strndup(C->P->a, buf, strlen(buf));
			if (!v->s)
				return tsdl_oom(C->P);
		} else if (e->vk == V_STR || e->vk == V_IDENT) {
			v->is_string = true;
			v->s = e->s;
		} else {
			continue;
		}
		m->nr_env++;
		if (!strcmp(e->key, "tracer_name") && v->is_string && !strcmp(v->s, "ringtrace"))
			C->ringtrace = true;
	}
	return 0;
}

static int do_clock(struct parser *P, const struct block *b, struct rtr_meta *m)
{
	const struct entry *e;
	if ((e = tsdl_find_entry(b->ents, b->n, "name")) && tsdl_attr_name(P, e, &m->clock_name) < 0)
		return P->rc;
	if ((e = tsdl_find_entry(b->ents, b->n, "freq"))) {
		if (tsdl_attr_uint(P, e, UINT64_MAX, &m->freq) < 0)
			return P->rc;
		if (!m->freq)
			return tsdl_perr(P, e->off, -EINVAL, "clock frequency 0");
	}
	if ((e = tsdl_find_entry(b->ents, b->n, "offset_s")) &&
	    tsdl_attr_int(P, e, INT64_MIN, INT64_MAX, &m->offset_s) < 0)
		return P->rc;
	if ((e = tsdl_find_entry(b->ents, b->n, "offset")) && tsdl_attr_uint(P, e, UINT64_MAX, &m->offset) < 0)
		return P->rc;
	return 0;
}

static int do_stream(struct cctx *C, const struct block *b, struct rtr_stream_class *sc)
{
	const struct entry *e;
	uint64_t v = 0;
	if ((e = tsdl_find_entry(b->ents, b->n, "id")) && tsdl_attr_uint(C->P, e, UINT64_MAX, &v) < 0)
		return C->P->rc;
	sc->id = v;
	if (compile_scope(C, tsdl_find_entry(b->ents, b->n, "packet.context"), SC_PC,
			  &sc->packet_context) < 0 ||
	    compile_scope(C, tsdl_find_entry(b->ents, b->n, "event.header"), SC_EH,
			  &sc->event_header) < 0 ||
	    compile_scope(C, tsdl_find_entry(b->ents, b->n, "event.context"), SC_SEC,
			  &sc->event_context) < 0)
		return C->P->rc;
	set_roles(sc->packet_context, false);
	if (sc->event_header)
		set_header_roles(C->roots[SC_EH], NULL);
	return 0;
}

static int do_event(struct cctx *C, const struct block *b, struct rtr_event_class *ec,
		    struct rtr_class_nodes *cn)
{
	struct parser *P = C->P;
	struct rtr_meta *m = C->m;
	const struct entry *e;
	uint64_t v = 0;
	int64_t lv = -1;
	ec->loglevel = -1;
	if ((e = tsdl_find_entry(b->ents, b->n, "name")) && tsdl_attr_name(P, e, &ec->name) < 0)
		return P->rc;
	if (!ec->name)
		return tsdl_perr(P, b->off, -EINVAL, "event without a name");
	e = tsdl_find_entry(b->ents, b->n, "id");
	if (!e && C->nr_events > 1)
		return tsdl_perr(P, b->off, -EINVAL, "event '%s' has no id", ec->name);
	if (e && tsdl_attr_uint(P, e, UINT32_MAX, &v) < 0)
		return P->rc;
	ec->id = (uint32_t)v;
	v = m->nr_streams == 1 ? m->streams[0].id : 0;
	if ((e = tsdl_find_entry(b->ents, b->n, "stream_id")) && tsdl_attr_uint(P, e, UINT32_MAX, &v) < 0)
		return P->rc;
	ec->stream_id = (uint32_t)v;
	if ((e = tsdl_find_entry(b->ents, b->n, "loglevel"))) {
		if (tsdl_attr_int(P, e, INT32_MIN, INT32_MAX, &lv) < 0)
			return P->rc;
		ec->loglevel = (int)lv;
	}
	if ((e = tsdl_find_entry(b->ents, b->n, "model.emf.uri")) && tsdl_attr_name(P, e, &ec->emf_uri) < 0)
		return P->rc;
	const struct rtr_stream_class *sc = NULL;
	for (size_t k = 0; k < m->nr_streams; k++)
		if (m->streams[k].id == ec->stream_id)
			sc = &m->streams[k];
	if (!sc)
		return tsdl_perr(P, b->off, -EINVAL, "event '%s': stream %u is not declared", ec->name,
			    ec->stream_id);
	C->roots[SC_PC] = (struct rtr_node *)(uintptr_t)sc->packet_context;
	C->roots[SC_EH] = (struct rtr_node *)(uintptr_t)sc->event_header;
	C->roots[SC_SEC] = (struct rtr_node *)(uintptr_t)sc->event_context;
	if (compile_scope(C, tsdl_find_entry(b->ents, b->n, "context"), SC_EC, &cn->context) < 0 ||
	    compile_scope(C, tsdl_find_entry(b->ents, b->n, "fields"), SC_EF, &cn->payload) < 0)
		return P->rc;
	const struct rtr_node *pl = cn->payload;
	uint32_t nf = pl ? pl->nr_children : 0;
	struct rtr_field_class *fc = tsdl_arena_alloc(P->a, (nf + 1) * sizeof(*fc));
	if (!fc)
		return tsdl_oom(P);
	for (uint32_t k = 0; k < nf; k++) {
		const struct rtr_node *c = pl->children[k];
		const char *nm = pl->names[k];
		fc[k].name = nm[0] == '_' ? nm + 1 : nm;
		fc[k].type = (enum rtr_type)c->pub;
		fc[k].bits = is_scalar(c) ? c->size : c->pub == RTR_BYTES ? 8 : 0;
		fc[k].base = is_scalar(c) ? c->base : c->pub == RTR_BYTES ? c->children[0]->base : 10;
	}
	ec->fields = fc;
	ec->nr_fields = nf;
	return 0;
}

/* ------------------------------------------------------------------ */
/* The whole metadata                                                   */

struct class_ref {
	struct rtr_event_class ec;
	struct rtr_class_nodes cn;
	size_t off;
};

static int cmp_class(const void *a, const void *b)
{
	const struct class_ref *x = a, *y = b;
	if (x->ec.stream_id != y->ec.stream_id)
		return x->ec.stream_id < y->ec.stream_id ? -1 : 1;
	if (x->ec.id != y->ec.id)
		return x->ec.id < y->ec.id ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* Per stream class: its range of classes and a direct table. */
static int index_classes(struct cctx *C)
{
	struct rtr_meta *m = C->m;
	for (size_t s = 0; s < m->nr_streams; s++) {
		struct rtr_stream_class *sc = &m->streams[s];
		size_t k = 0;
		while (k < m->nr_classes && m->classes[k].stream_id != sc->id)
			k++;
		sc->first = (uint32_t)k;
		while (k + sc->count < m->nr_classes &&
		       m->classes[k + sc->count].stream_id == sc->id)
			sc->count++;
		if (!sc->count || m->classes[sc->first + sc->count - 1].id >= BY_ID_TABLE_MAX)
			continue;
		sc->by_id_len = m->classes[sc->first + sc->count - 1].id + 1;
		sc->by_id = tsdl_arena_alloc(C->P->a, sc->by_id_len * sizeof(*sc->by_id));
		if (!sc->by_id)
			return tsdl_oom(C->P);
		memset(sc->by_id, 0xff, sc->by_id_len * sizeof(*sc->by_id));
		for (uint32_t j = 0; j < sc->count; j++)
			sc->by_id[m->classes[sc->first + j].id] = sc->first + j;
	}
	return 0;
}

static int build(struct cctx *C)
{
	struct parser *P = C->P;
	struct rtr_meta *m = C->m;
	size_t nstreams = 0, nevents = 0;
	const struct block *trace = NULL, *clock = NULL;
	for (size_t k = 0; k < P->nblk; k++) {
		const struct block *b = &P->blocks[k];
		if (b->kind == B_TRACE) {
			if (trace)
				return tsdl_perr(P, b->off, -EINVAL, "more than one trace block");
			trace = b;
		} else if (b->kind == B_CLOCK && !clock) {
			clock = b;
		} else if (b->kind == B_ENV && do_env(C, b) < 0) {
			return P->rc;
		}
		nstreams += b->kind == B_STREAM;
		nevents += b->kind == B_EVENT;
	}
	if (!trace)
		return tsdl_perr(P, P->len, -EINVAL, "no trace block");
	C->nr_events = nevents;
	if (do_trace(C, trace) < 0)
		return P->rc;
	m->freq = 1000000000u;
	if (clock && do_clock(P, clock, m) < 0)
		return P->rc;
	if (compile_scope(C, tsdl_find_entry(trace->ents, trace->n, "packet.header"), SC_PH,
			  &m->packet_header) < 0)
		return P->rc;
	set_roles(m->packet_header, true);

	m->streams = tsdl_arena_alloc(P->a, (nstreams + 1) * sizeof(*m->streams));
	struct class_ref *refs = tsdl_arena_alloc(P->a, (nevents + 1) * sizeof(*refs));
	m->classes = tsdl_arena_alloc(P->a, (nevents + 1) * sizeof(*m->classes));
	m->class_nodes = tsdl_arena_alloc(P->a, (nevents + 1) * sizeof(*m->class_nodes));
	if (!m->streams || !refs || !m->classes || !m->class_nodes)
		return tsdl_oom(P);
	for (size_t k = 0; k < P->nblk; k++) {
		const struct block *b = &P->blocks[k];
		if (b->kind != B_STREAM)
			continue;
		struct rtr_stream_class *sc = &m->streams[m->nr_streams];
		if (do_stream(C, b, sc) < 0)
			return P->rc;
		for (size_t j = 0; j < m->nr_streams; j++)
			if (m->streams[j].id == sc->id)
				return tsdl_perr(P, b->off, -EINVAL, "stream id %" PRIu64 " declared twice",
					    sc->id);
		m->nr_streams++;
	}
	if (!m->nr_streams) /* CTF allows no stream block: one class, id 0 */
		m->nr_streams = 1;
	for (size_t k = 0; k < P->nblk; k++) {
		const struct block *b = &P->blocks[k];
		if (b->kind != B_EVENT)
			continue;
		struct class_ref *r = &refs[m->nr_classes];
		r->off = b->off;
		if (do_event(C, b, &r->ec, &r->cn) < 0)
			return P->rc;
		m->nr_classes++;
	}
	qsort(refs, m->nr_classes, sizeof(*refs), cmp_class);
	for (size_t k = 0; k < m->nr_classes; k++) {
		if (k && refs[k - 1].ec.stream_id == refs[k].ec.stream_id &&
		    refs[k - 1].ec.id == refs[k].ec.id)
			return tsdl_perr(P, refs[k].off, -EINVAL,
				    "event '%s': id %u of stream %u is already used by '%s'",
				    refs[k].ec.name, refs[k].ec.id, refs[k].ec.stream_id,
				    refs[k - 1].ec.name);
		m->classes[k] = refs[k].ec;
		m->class_nodes[k] = refs[k].cn;
	}
	finalize((struct rtr_node *)(uintptr_t)m->packet_header);
	for (size_t s = 0; s < m->nr_streams; s++) {
		finalize((struct rtr_node *)(uintptr_t)m->streams[s].packet_context);
		finalize((struct rtr_node *)(uintptr_t)m->streams[s].event_header);
		finalize((struct rtr_node *)(uintptr_t)m->streams[s].event_context);
		m->streams[s].fast_header = rtr_hdr_fast_build(P->a, m->streams[s].event_header);
	}
	for (size_t k = 0; k < m->nr_classes; k++) {
		finalize((struct rtr_node *)(uintptr_t)m->class_nodes[k].context);
		finalize((struct rtr_node *)(uintptr_t)m->class_nodes[k].payload);
	}
	return index_classes(C);
}

int rtr_meta_parse(const char *path, const char *src, size_t len, struct rtr_meta *m,
		   char *err, size_t errlen)
{
	memset(m, 0, sizeof(*m));
	struct parser P = { .path = path, .src = src, .len = len, .err = err, .errlen = errlen };
	m->arena = P.a = tsdl_arena_new();
	if (!P.a) {
		if (err && errlen)
			snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	struct cctx C = { .P = &P, .m = m };
	if (tsdl_tokenize(&P) == 0 && tsdl_parse_top(&P) == 0)
		build(&C);
	free(P.toks);
	return P.rc;
}

void rtr_meta_free(struct rtr_meta *m)
{
	tsdl_arena_free(m->arena);
	memset(m, 0, sizeof(*m));
}
