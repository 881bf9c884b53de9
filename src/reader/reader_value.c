/*
 * reader_value.c - field values of the current event of a cursor, decoded
 * on demand from the records reader_decode.c laid out (struct, array and
 * sequence children; variants resolved to their selected option).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "reader_stream.h"

static const struct rtr_enum_map *enum_find(const struct rtr_node *n, uint64_t raw)
{
	for (uint32_t k = 0; k < n->nr_maps; k++) {
		const struct rtr_enum_map *mp = &n->maps[k];
		bool in = n->is_signed ? ((int64_t)raw >= mp->lo && (int64_t)raw <= mp->hi)
				       : (raw >= (uint64_t)mp->lo && raw <= (uint64_t)mp->hi);
		if (in)
			return mp;
	}
	return NULL;
}

/* The value of node n at `bit`, record `rec` (UINT64_MAX: no record: a
 * scalar array element, or a static layout where offsets are known). */
static inline void make_value(const struct rtr_recbuf *rb, const struct rtr_node *n, uint64_t bit,
		       uint64_t rec, struct rtr_value *v)
{
	const uint8_t *map = rb->cur->map;
	while (n->kind == RN_VARIANT) {
		rec = rb->r[rec].first;
		n = rb->r[rec].n;
		bit = rb->r[rec].bit;
	}
	v->label = NULL;
	v->is_signed = false;
	v->bits = 0;
	v->base = 10;
	v->type = (enum rtr_type)n->pub;
	v->priv_node_ = n;
	v->priv_cur_ = rb;
	v->priv_bit_ = bit;
	v->priv_rec_ = (uint32_t)rec;
	switch (n->kind) {
	case RN_INT:
	case RN_ENUM: {
		uint64_t raw = read_bits_word(map, rb->cur->size - (bit >> 3), bit, n->size, n->be);
		v->bits = n->size;
		v->base = n->base;
		v->is_signed = n->is_signed;
		v->u = n->is_signed ? (uint64_t)sign_extend(raw, n->size) : raw;
		if (n->pub == RTR_BOOL) {
			v->b = raw != 0;
		} else if (n->kind == RN_ENUM) {
			const struct rtr_enum_map *mp = enum_find(n, v->u);
			v->label = mp ? mp->label : NULL;
		}
		break;
	}
	case RN_FLOAT: {
		uint64_t raw = read_bits(map, bit, n->size, n->be);
		v->bits = n->size;
		if (n->size == 32) {
			uint32_t r32 = (uint32_t)raw;
			float f;
			memcpy(&f, &r32, 4);
			v->d = f;
		} else {
			memcpy(&v->d, &raw, 8);
		}
		break;
	}
	case RN_STRING:
		v->s.p = (const char *)map + bit / 8;
		v->s.len = (size_t)rb->r[rec].first;
		break;
	case RN_ARRAY:
	case RN_SEQ:
		if (n->pub == RTR_STRING) {
			size_t count = (size_t)(rec == UINT64_MAX ? n->length : rb->r[rec].count);
			v->s.p = (const char *)map + bit / 8;
			v->s.len = strnlen(v->s.p, count);
		} else if (n->pub == RTR_BYTES) {
			v->bits = 8;
			v->base = n->children[0]->base;
			v->bytes.p = map + bit / 8;
			v->bytes.len = (size_t)(rec == UINT64_MAX ? n->length : rb->r[rec].count);
		}
		break;
	default:
		break;
	}
}

/* make_value for a plain integer (RN_INT, not a boolean): the same
 * fields set, without the dispatch. */
static inline void int_value(const struct rtr_recbuf *rb, const struct rtr_node *n, uint64_t bit,
			     uint64_t rec, struct rtr_value *v)
{
	uint64_t raw = read_bits_word(rb->cur->map, rb->cur->size - (bit >> 3), bit, n->size, n->be);
	v->type = (enum rtr_type)n->pub;
	v->u = n->is_signed ? (uint64_t)sign_extend(raw, n->size) : raw;
	v->label = NULL;
	v->is_signed = n->is_signed;
	v->base = n->base;
	v->bits = n->size;
	v->priv_node_ = n;
	v->priv_cur_ = rb;
	v->priv_bit_ = bit;
	v->priv_rec_ = (uint32_t)rec;
}

uint32_t rtr_value_count(const struct rtr_value *v)
{
	if (!v || (v->type != RTR_STRUCT && v->type != RTR_ARRAY) || !v->priv_cur_)
		return 0;
	const struct rtr_recbuf *rb = v->priv_cur_;
	const struct rtr_node *n = v->priv_node_;
	if (v->priv_rec_ == UINT32_MAX) /* static layout */
		return n->kind == RN_STRUCT ? n->nr_children : (uint32_t)n->length;
	return (uint32_t)rb->r[v->priv_rec_].count;
}

int rtr_value_child(const struct rtr_value *v, uint32_t i, struct rtr_value *child,
		    const char **name)
{
	if (!v || !child || (v->type != RTR_STRUCT && v->type != RTR_ARRAY) || !v->priv_cur_)
		return -EINVAL;
	const struct rtr_recbuf *rb = v->priv_cur_;
	const struct rtr_node *n = v->priv_node_;
	if (i >= rtr_value_count(v))
		return -EINVAL;
	if (name)
		*name = n->kind == RN_STRUCT ? n->pnames[i] : NULL;
	if (v->priv_rec_ == UINT32_MAX) { /* static layout: no records */
		if (n->kind == RN_STRUCT)
			make_value(rb, n->children[i], v->priv_bit_ + n->offs[i], UINT64_MAX, child);
		else
			make_value(rb, n->children[0], v->priv_bit_ + n->stride * i, UINT64_MAX,
				   child);
		return 0;
	}
	const struct rtr_rec *r = &rb->r[v->priv_rec_];
	if (n->kind != RN_STRUCT && n->elem_fixed) {
		make_value(rb, n->children[0], r->bit + n->stride * i, UINT64_MAX, child);
		return 0;
	}
	const struct rtr_rec *c = &rb->r[r->first + i];
	make_value(rb, c->n, c->bit, r->first + i, child);
	return 0;
}

/* The cursor of `ev` if ev is still its current event. */
static struct rtr_cursor *cursor_of(const struct rtr_event *ev)
{
	if (!ev || !ev->priv_)
		return NULL;
	struct rtr_cursor *c = (struct rtr_cursor *)(uintptr_t)ev->priv_;
	if (c->ev.payload != ev->payload || c->ev.ticks != ev->ticks || c->ev.cls != ev->cls)
		return NULL;
	return c;
}

uint32_t rtr_scope_count(const struct rtr_event *ev, enum rtr_scope s)
{
	const struct rtr_cursor *c = cursor_of(ev);
	if (!c || (unsigned)s >= RTR_NR_SCOPES || c->recs[s].state == RS_ABSENT)
		return 0;
	return c->recs[s].root->nr_children;
}

int rtr_scope_bytes(const struct rtr_event *ev, enum rtr_scope s, const uint8_t **p,
		    size_t *len)
{
	const struct rtr_cursor *c = cursor_of(ev);
	if (!c || !p || !len || (unsigned)s >= RTR_NR_SCOPES)
		return -EINVAL;
	const struct rtr_recbuf *rb = &c->recs[s];
	*p = NULL;
	*len = 0;
	if (rb->state == RS_ABSENT)
		return 0;
	/* Every member's alignment divides the root's (decode_plan.c: a
	 * structure is aligned as its most aligned member; plain and strs
	 * hold no variant, whose options' alignments would not count). */
	if (!(rb->root->plain || rb->root->strs) || rb->start % 8)
		return -ENOTSUP;
	*p = c->map + rb->start / 8;
	*len = (size_t)((rb->end - rb->start + 7) / 8);
	return 0;
}

int rtr_payload_ints(const struct rtr_event *ev, struct rtr_int_place *places, uint32_t n)
{
	const struct rtr_cursor *c = cursor_of(ev);
	if (!c || (!places && n))
		return -EINVAL;
	const struct rtr_recbuf *rb = &c->recs[RTR_SCOPE_PAYLOAD];
	if (rb->state == RS_ABSENT)
		return n ? -ENOTSUP : 0;
	const struct rtr_node *root = rb->root;
	/* Every event's payload begins aligned to the root's alignment:
	 * with a multiple of 8 bits, rtr_event.payload is its first byte. */
	if (!root->offs || root->align % 8 || n > root->nr_children)
		return -ENOTSUP;
	for (uint32_t i = 0; i < n; i++) {
		const struct rtr_node *f = root->children[i];
		if (f->kind != RN_INT || f->pub == RTR_BOOL || root->offs[i] % 8 ||
		    root->offs[i] / 8 > UINT32_MAX ||
		    (f->size != 8 && f->size != 16 && f->size != 32 && f->size != 64))
			return -ENOTSUP;
		places[i].off = (uint32_t)(root->offs[i] / 8);
		places[i].bytes = (uint8_t)(f->size / 8);
		places[i].be = f->be;
		places[i].is_signed = f->is_signed;
		places[i].base = f->base;
	}
	return 0;
}

int rtr_scope_field(const struct rtr_event *ev, enum rtr_scope s, uint32_t i,
		    struct rtr_value *v, const char **name)
{
	struct rtr_cursor *c = cursor_of(ev);
	if (!c || !v || (unsigned)s >= RTR_NR_SCOPES || c->recs[s].state == RS_ABSENT)
		return -EINVAL;
	struct rtr_recbuf *rb = &c->recs[s];
	if (i >= rb->root->nr_children)
		return -EINVAL;
	const struct rtr_node *root = rb->root;
	if (root->offs) {
		/* Static layout: straight to the member, no walk. */
		if (name)
			*name = root->pnames[i];
		make_value(rb, root->children[i], rb->start + root->offs[i], UINT64_MAX, v);
		return 0;
	}
	if (rb->state == RS_SKIPPED && rtr_cursor_expand(c, (int)s) < 0)
		return -EINVAL;
	/* Record 0 is the root structure, its members follow from `first`. */
	const struct rtr_rec *m = &rb->r[rb->r[0].first + i];
	if (name)
		*name = root->pnames[i];
	make_value(rb, m->n, m->bit, rb->r[0].first + i, v);
	return 0;
}

int rtr_field(const struct rtr_event *ev, uint32_t index, struct rtr_value *v)
{
	return rtr_scope_field(ev, RTR_SCOPE_PAYLOAD, index, v, NULL);
}

int rtr_fields(const struct rtr_event *ev, uint32_t first, struct rtr_value *v, uint32_t n)
{
	struct rtr_cursor *c = cursor_of(ev);
	if (!c || (!v && n))
		return -EINVAL;
	struct rtr_recbuf *rb = &c->recs[RTR_SCOPE_PAYLOAD];
	if (rb->state == RS_ABSENT || first >= rb->root->nr_children)
		return 0;
	const struct rtr_node *root = rb->root;
	if (n > root->nr_children - first)
		n = root->nr_children - first;
	if (root->offs) {	/* static layout: no walk */
		for (uint32_t i = 0; i < n; i++) {
			const struct rtr_node *f = root->children[first + i];
			uint64_t bit = rb->start + root->offs[first + i];
			if (f->kind == RN_INT && f->pub != RTR_BOOL)
				int_value(rb, f, bit, UINT64_MAX, &v[i]);
			else
				make_value(rb, f, bit, UINT64_MAX, &v[i]);
		}
		return (int)n;
	}
	if (rb->state == RS_SKIPPED && rtr_cursor_expand(c, RTR_SCOPE_PAYLOAD) < 0)
		return -EINVAL;
	uint64_t r0 = rb->r[0].first + first;
	for (uint32_t i = 0; i < n; i++) {
		const struct rtr_rec *m = &rb->r[r0 + i];
		if (m->n->kind == RN_INT && m->n->pub != RTR_BOOL)
			int_value(rb, m->n, m->bit, r0 + i, &v[i]);
		else
			make_value(rb, m->n, m->bit, r0 + i, &v[i]);
	}
	return (int)n;
}

int rtr_field_by_name(const struct rtr_event *ev, const char *name, struct rtr_value *v)
{
	const struct rtr_cursor *c = cursor_of(ev);
	if (!c || !name)
		return -EINVAL;
	const struct rtr_node *root = c->recs[RTR_SCOPE_PAYLOAD].root;
	if (c->recs[RTR_SCOPE_PAYLOAD].state == RS_ABSENT)
		return -ENOENT;
	for (uint32_t k = 0; k < root->nr_children; k++)
		if (!strcmp(root->pnames[k], name))
			return rtr_field(ev, k, v);
	return -ENOENT;
}
