/*
 * reader_fast.c - the event header fast path's plan (struct rtr_hdr_fast,
 * reader_internal.h): for a header made of integers and at most one final
 * variant of structures of integers, the offset of every integer the
 * reader needs, per variant option. reader_decode.c then decodes such a
 * header with a few direct loads instead of walking its nodes.
 *
 * Offsets are taken from the header's start aligned to the header's
 * alignment; they are static only when no member asks for a larger
 * alignment than that, which the builder checks (else: no fast path).
 */
#include <stdbool.h>
#include <stdint.h>

#include "reader_stream.h"
#include "tsdl.h"

#define MAX_FORM_FIELDS 8u	/* integers with a role or slot per form */

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* Integer n at *bits (relative to the header's start) into form f. */
static bool add_int(struct rtr_hdr_form *f, const struct rtr_node *n, uint64_t *bits,
		    uint32_t align)
{
	if ((n->kind != RN_INT && n->kind != RN_ENUM) || n->align > align || !n->size ||
	    n->size > 64)
		return false;
	*bits = round_up(*bits, n->align);
	if (n->role || n->slot >= 0) {
		if (f->nr == MAX_FORM_FIELDS || *bits > UINT32_MAX)
			return false;
		struct rtr_hdr_field *h = &f->f[f->nr++];
		h->off = (uint32_t)*bits;
		h->size = (uint8_t)n->size;
		h->be = n->be;
		h->is_signed = n->is_signed;
		h->role = n->role;
		h->slot = n->slot;
		h->mask = n->size == 64 ? UINT64_MAX : (1ull << n->size) - 1;
		if ((*bits & 7) + n->size > 64)
			f->word = false;
		if ((*bits >> 3) + 8 > f->span)
			f->span = (uint32_t)(*bits >> 3) + 8;
	}
	*bits += n->size;
	return true;
}

static bool new_form(struct rtr_arena *a, struct rtr_hdr_form *f)
{
	f->nr = 0;
	f->word = true;
	f->span = 0;
	f->f = tsdl_arena_alloc(a, MAX_FORM_FIELDS * sizeof(*f->f));
	return f->f != NULL;
}

/* Option o of variant v after `bits` of prefix: its form, or false. */
static bool build_option(struct rtr_arena *a, const struct rtr_hdr_form *prefix, int32_t tag,
			 const struct rtr_node *v, const struct rtr_node *o, uint32_t align,
			 struct rtr_hdr_form *f)
{
	if (!new_form(a, f) || o->kind != RN_STRUCT || o->align > align || v->align > align)
		return false;
	for (uint32_t k = 0; k < prefix->nr; k++)
		if ((int32_t)k != tag)
			f->f[f->nr++] = prefix->f[k];
	f->word = prefix->word;
	f->span = prefix->span;
	uint64_t bits = round_up(round_up(prefix->bits, v->align), o->align);
	for (uint32_t k = 0; k < o->nr_children; k++)
		if (!add_int(f, o->children[k], &bits, align))
			return false;
	f->bits = bits;
	return true;
}

const struct rtr_hdr_fast *rtr_hdr_fast_build(struct rtr_arena *a, const struct rtr_node *n)
{
	if (!n || n->kind != RN_STRUCT || !n->nr_children || n->align % 8)
		return NULL;
	struct rtr_hdr_fast *fh = tsdl_arena_alloc(a, sizeof(*fh));
	if (!fh || !new_form(a, &fh->prefix))
		return NULL;
	fh->align = n->align;
	fh->variant = NULL;
	fh->opts = NULL;
	uint64_t bits = 0;
	uint32_t last = n->nr_children - 1;
	for (uint32_t k = 0; k < n->nr_children; k++) {
		const struct rtr_node *c = n->children[k];
		if (k == last && c->kind == RN_VARIANT && c->role == RR_NONE && c->slot < 0) {
			fh->variant = c;
			break;
		}
		if (!add_int(&fh->prefix, c, &bits, fh->align))
			return NULL;
	}
	fh->prefix.bits = bits;
	fh->word = fh->prefix.word;
	fh->span = fh->prefix.span;
	fh->tag = -1;
	fh->pick = NULL;
	fh->pick_bits = NULL;
	fh->nr_pick = 0;
	if (!fh->variant)
		return fh;
	const struct rtr_node *v = fh->variant;
	fh->opts = tsdl_arena_alloc(a, (v->nr_children + 1) * sizeof(*fh->opts));
	if (!fh->opts)
		return NULL;
	for (uint32_t k = 0; k < fh->prefix.nr; k++)
		if (fh->prefix.f[k].slot == v->ref_slot)
			fh->tag = (int32_t)k;
	for (uint32_t o = 0; o < v->nr_children; o++) {
		struct rtr_hdr_form *f = &fh->opts[o];
		if (!build_option(a, &fh->prefix, fh->tag, v, v->children[o], fh->align, f))
			return NULL;
		fh->word &= f->word;
		if (f->span > fh->span)
			fh->span = f->span;
	}
	if (fh->tag >= 0 && fh->prefix.f[fh->tag].size <= 8 && !fh->prefix.f[fh->tag].is_signed &&
	    v->nr_children <= INT8_MAX) {
		uint32_t nr = 1u << fh->prefix.f[fh->tag].size;
		int8_t *pick = tsdl_arena_alloc(a, nr);
		uint64_t *sizes = tsdl_arena_alloc(a, nr * sizeof(*sizes));
		if (!pick || !sizes)
			return NULL;
		for (uint32_t t = 0; t < nr; t++) {
			pick[t] = (int8_t)variant_pick(v, t);
			sizes[t] = pick[t] < 0 ? 0 : fh->opts[pick[t]].bits;
		}
		fh->pick = pick;
		fh->pick_bits = sizes;
		fh->nr_pick = nr;
	}
	return fh;
}
