/*
 * tsdl_parser.c - TSDL syntax: types (integer, floating_point, string,
 * enum, struct, variant, arrays and sequences), declarations,
 * typealias/typedef, and top-level blocks as lists of `key = value;` /
 * `key := type;` entries. Unknown attributes and unknown top-level blocks
 * (LTTng's callsite) are skipped; meaning is decode_plan.c's business.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsdl.h"

#define MAX_DEPTH TSDL_MAX_DEPTH

/* Values and attribute lists                                           */

static int parse_value(struct parser *P, struct entry *e)
{
	const struct tok *t = tsdl_cur(P);
	char d[64];
	if (tsdl_tok_is_punct(t, '+') && tsdl_peek(P, 1)->kind == TK_INT) {
		tsdl_advance(P); /* unary plus */
		t = tsdl_cur(P);
	}
	if (tsdl_tok_is_punct(t, '-') && tsdl_peek(P, 1)->kind == TK_INT) {
		tsdl_advance(P);
		e->vk = V_INT;
		e->u = tsdl_cur(P)->val;
		e->neg = e->u != 0;
		tsdl_advance(P);
		return 0;
	}
	switch (t->kind) {
	case TK_INT:
		e->vk = V_INT;
		e->u = t->val;
		tsdl_advance(P);
		return 0;
	case TK_STRING:
		e->vk = V_STR;
		e->s = tsdl_tok_string(P, t);
		tsdl_advance(P);
		return e->s ? 0 : P->rc;
	case TK_IDENT:
		e->vk = V_IDENT;
		e->s = tsdl_parse_dotted(P);
		return e->s ? 0 : P->rc;
	default:
		return tsdl_perr(P, t->off, -EINVAL, "expected a value, found %s",
			    tsdl_tok_desc(P, t, d, sizeof(d)));
	}
}

static struct ty *parse_type(struct parser *P);
static int parse_typealias(struct parser *P);
static int parse_typedef(struct parser *P);

/*
 * Entries up to the closing '}' (consumed): `key = value;`, and when
 * `types` is set also `key := type;` and typealias/typedef.
 */
static int parse_entries(struct parser *P, bool types, struct entry **out, size_t *nout)
{
	struct entry *ents = NULL;
	size_t n = 0, cap = 0;
	char d[64];
	while (!tsdl_tok_is_punct(tsdl_cur(P), '}')) {
		const struct tok *t = tsdl_cur(P);
		if (t->kind == TK_EOF)
			return tsdl_perr(P, t->off, -EINVAL, "missing '}'");
		if (types && tsdl_tok_is_ident(P, t, "typealias")) {
			if (parse_typealias(P) < 0)
				return P->rc;
			continue;
		}
		if (types && tsdl_tok_is_ident(P, t, "typedef")) {
			if (parse_typedef(P) < 0)
				return P->rc;
			continue;
		}
		if (tsdl_arena_grow(P->a, &ents, &cap, n, sizeof(*ents)) < 0)
			return tsdl_oom(P);
		struct entry *e = &ents[n];
		memset(e, 0, sizeof(*e));
		e->off = t->off;
		if (t->kind != TK_IDENT)
			return tsdl_perr(P, t->off, -EINVAL, "expected an attribute name, found %s",
				    tsdl_tok_desc(P, t, d, sizeof(d)));
		e->key = tsdl_parse_dotted(P);
		if (!e->key)
			return P->rc;
		t = tsdl_cur(P);
		if (tsdl_tok_is_punct(t, '=')) {
			tsdl_advance(P);
			if (parse_value(P, e) < 0)
				return P->rc;
		} else if (types && tsdl_tok_is_punct(t, P_ASSIGN_TYPE)) {
			tsdl_advance(P);
			e->vk = V_TYPE;
			e->ty = parse_type(P);
			if (!e->ty)
				return P->rc;
		} else {
			return tsdl_perr(P, t->off, -EINVAL, "expected '=' after '%s', found %s",
				    e->key, tsdl_tok_desc(P, t, d, sizeof(d)));
		}
		if (tsdl_expect_punct(P, ';', "after an attribute") < 0)
			return P->rc;
		n++;
	}
	tsdl_advance(P); /* '}' */
	*out = ents;
	*nout = n;
	return 0;
}

const struct entry *tsdl_find_entry(const struct entry *ents, size_t n, const char *key)
{
	const struct entry *found = NULL;
	for (size_t k = 0; k < n; k++)
		if (!strcmp(ents[k].key, key))
			found = &ents[k]; /* the last one wins */
	return found;
}

bool tsdl_ident_is(const struct entry *e, const char *word)
{
	return e->vk == V_IDENT && !strcmp(e->s, word);
}

int tsdl_attr_uint(struct parser *P, const struct entry *e, uint64_t max, uint64_t *out)
{
	if (e->vk != V_INT || e->neg)
		return tsdl_perr(P, e->off, -EINVAL, "'%s' must be a non-negative integer", e->key);
	if (e->u > max)
		return tsdl_perr(P, e->off, -EINVAL, "'%s' is too large (%" PRIu64 ", at most %" PRIu64 ")",
			    e->key, e->u, max);
	*out = e->u;
	return 0;
}

int tsdl_attr_int(struct parser *P, const struct entry *e, int64_t min, int64_t max,
		    int64_t *out)
{
	if (e->vk != V_INT)
		return tsdl_perr(P, e->off, -EINVAL, "'%s' must be an integer", e->key);
	if (!e->neg && e->u > (uint64_t)max)
		return tsdl_perr(P, e->off, -EINVAL, "'%s' is too large", e->key);
	if (e->neg && (e->u > (uint64_t)INT64_MAX + 1 ||
		       (min > INT64_MIN && e->u > (uint64_t)-min)))
		return tsdl_perr(P, e->off, -EINVAL, "'%s' is too small", e->key);
	*out = e->neg ? (e->u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)e->u)
		      : (int64_t)e->u;
	return 0;
}

int tsdl_attr_bool(struct parser *P, const struct entry *e, bool *out)
{
	if (tsdl_ident_is(e, "true") || tsdl_ident_is(e, "TRUE") || (e->vk == V_INT && !e->neg && e->u == 1))
		*out = true;
	else if (tsdl_ident_is(e, "false") || tsdl_ident_is(e, "FALSE") || (e->vk == V_INT && e->u == 0))
		*out = false;
	else
		return tsdl_perr(P, e->off, -EINVAL, "'%s' must be true or false", e->key);
	return 0;
}

int tsdl_attr_name(struct parser *P, const struct entry *e, const char **out)
{
	if (e->vk != V_STR && e->vk != V_IDENT)
		return tsdl_perr(P, e->off, -EINVAL, "'%s' must be a string", e->key);
	*out = e->s;
	return 0;
}

static int attr_byte_order(struct parser *P, const struct entry *e, int *out)
{
	if (tsdl_ident_is(e, "le"))
		*out = BO_LE;
	else if (tsdl_ident_is(e, "be") || tsdl_ident_is(e, "network"))
		*out = BO_BE;
	else if (tsdl_ident_is(e, "native"))
		*out = BO_DEFAULT;
	else
		return tsdl_perr(P, e->off, -EINVAL, "byte_order must be le, be, network or native");
	return 0;
}

static int attr_align(struct parser *P, const struct entry *e, unsigned *out)
{
	uint64_t v = 0;
	if (tsdl_attr_uint(P, e, 1u << 20, &v) < 0)
		return P->rc;
	if (!v || (v & (v - 1)))
		return tsdl_perr(P, e->off, -EINVAL, "align must be a power of two");
	*out = (unsigned)v;
	return 0;
}

static int attr_encoding(struct parser *P, const struct entry *e, const char **out)
{
	if (tsdl_ident_is(e, "none") || tsdl_ident_is(e, "UTF8") || tsdl_ident_is(e, "ASCII") ||
	    tsdl_ident_is(e, "utf8") || tsdl_ident_is(e, "ascii")) {
		*out = e->s;
		return 0;
	}
	return tsdl_perr(P, e->off, -EINVAL, "encoding must be none, UTF8 or ASCII");
}

static struct ty *new_ty(struct parser *P, enum ty_kind kind, size_t off)
{
	struct ty *t = tsdl_arena_alloc(P->a, sizeof(*t));
	if (!t) {
		tsdl_oom(P);
		return NULL;
	}
	t->kind = kind;
	t->off = off;
	t->base = 10;
	return t;
}

/* integer { ... } */
static struct ty *make_integer(struct parser *P, size_t off, const struct entry *ents, size_t n)
{
	struct ty *t = new_ty(P, TY_INT, off);
	if (!t)
		return NULL;
	bool has_size = false, has_align = false;
	for (size_t k = 0; k < n; k++) {
		const struct entry *e = &ents[k];
		uint64_t v = 0;
		if (!strcmp(e->key, "size")) {
			if (tsdl_attr_uint(P, e, UINT32_MAX, &v) < 0)
				return NULL;
			if (v > 64) {
				tsdl_perr(P, e->off, -ENOTSUP,
				     "integers of %" PRIu64 " bits are not supported (64 at most)", v);
				return NULL;
			}
			if (!v) {
				tsdl_perr(P, e->off, -EINVAL, "integer size must be 1 to 64 bits");
				return NULL;
			}
			t->size = (unsigned)v;
			has_size = true;
		} else if (!strcmp(e->key, "align")) {
			if (attr_align(P, e, &t->align) < 0)
				return NULL;
			has_align = true;
		} else if (!strcmp(e->key, "signed")) {
			if (tsdl_attr_bool(P, e, &t->is_signed) < 0)
				return NULL;
		} else if (!strcmp(e->key, "byte_order")) {
			if (attr_byte_order(P, e, &t->byte_order) < 0)
				return NULL;
		} else if (!strcmp(e->key, "encoding")) {
			if (attr_encoding(P, e, &t->encoding) < 0)
				return NULL;
		} else if (!strcmp(e->key, "map")) {
			if (e->vk != V_IDENT) {
				tsdl_perr(P, e->off, -EINVAL, "map must be clock.<name>.value");
				return NULL;
			}
			t->map = e->s;
		} else if (!strcmp(e->key, "base")) {
			if (e->vk == V_INT && !e->neg &&
			    (e->u == 2 || e->u == 8 || e->u == 10 || e->u == 16))
				t->base = (int)e->u;
			else if (tsdl_ident_is(e, "decimal") || tsdl_ident_is(e, "dec") || tsdl_ident_is(e, "d") ||
				 tsdl_ident_is(e, "i") || tsdl_ident_is(e, "u"))
				t->base = 10;
			else if (tsdl_ident_is(e, "hexadecimal") || tsdl_ident_is(e, "hex") ||
				 tsdl_ident_is(e, "x") || tsdl_ident_is(e, "X") || tsdl_ident_is(e, "p"))
				t->base = 16;
			else if (tsdl_ident_is(e, "octal") || tsdl_ident_is(e, "oct") || tsdl_ident_is(e, "o"))
				t->base = 8;
			else if (tsdl_ident_is(e, "binary") || tsdl_ident_is(e, "b"))
				t->base = 2;
			else {
				tsdl_perr(P, e->off, -EINVAL, "base must be 2, 8, 10 or 16");
				return NULL;
			}
		}
		/* other attributes: ignored */
	}
	if (!has_size) {
		tsdl_perr(P, off, -EINVAL, "integer without size");
		return NULL;
	}
	if (!has_align)
		t->align = t->size % 8 ? 1 : 8;
	return t;
}

/* floating_point { ... } */
static struct ty *make_float(struct parser *P, size_t off, const struct entry *ents, size_t n)
{
	struct ty *t = new_ty(P, TY_FLOAT, off);
	if (!t)
		return NULL;
	t->align = 8;
	for (size_t k = 0; k < n; k++) {
		const struct entry *e = &ents[k];
		uint64_t v = 0;
		if (!strcmp(e->key, "exp_dig") || !strcmp(e->key, "mant_dig")) {
			if (tsdl_attr_uint(P, e, 1024, &v) < 0)
				return NULL;
			if (e->key[0] == 'e')
				t->exp_dig = (unsigned)v;
			else
				t->mant_dig = (unsigned)v;
		} else if (!strcmp(e->key, "align")) {
			if (attr_align(P, e, &t->align) < 0)
				return NULL;
		} else if (!strcmp(e->key, "byte_order")) {
			if (attr_byte_order(P, e, &t->byte_order) < 0)
				return NULL;
		}
	}
	if (!t->exp_dig || !t->mant_dig) {
		tsdl_perr(P, off, -EINVAL, "floating_point needs exp_dig and mant_dig");
		return NULL;
	}
	t->size = t->exp_dig + t->mant_dig;
	return t;
}

/* Declarations up to the closing '}' (consumed). */
static int parse_decls(struct parser *P, struct decl **out, size_t *nout);

static struct ty *find_alias(const struct parser *P, const char *name);
static int add_alias(struct parser *P, const char *name, struct ty *ty);

/* "<kind> <name>" in the arena (named struct, variant and enum types
 * share the alias table under that key). */
static const char *tag_key(struct parser *P, const char *kind, const struct tok *name)
{
	char buf[300];
	int n = snprintf(buf, sizeof(buf), "%s %.*s", kind, (int)name->len, P->src + name->off);
	if (n < 0 || (size_t)n >= sizeof(buf)) {
		tsdl_perr(P, name->off, -EINVAL, "name too long");
		return NULL;
	}
	const char *k = tsdl_arena_strndup(P->a, buf, (size_t)n);
	if (!k)
		tsdl_oom(P);
	return k;
}

/* `kind name` not followed by a body: the type declared earlier. */
static struct ty *named_ref(struct parser *P, const char *kind)
{
	const struct tok *t = tsdl_cur(P);
	const char *key = tag_key(P, kind, t);
	if (!key)
		return NULL;
	struct ty *ty = find_alias(P, key);
	if (!ty) {
		tsdl_perr(P, t->off, -EINVAL, "unknown type '%s'", key);
		return NULL;
	}
	tsdl_advance(P);
	return ty;
}

/* Register `kind name` (the token at name_tok, if any) for later use. */
static int name_type(struct parser *P, const char *kind, const struct tok *name_tok,
		     struct ty *t)
{
	if (!name_tok)
		return 0;
	const char *key = tag_key(P, kind, name_tok);
	return key ? add_alias(P, key, t) : P->rc;
}

/* enum [name] : <integer type> { entries } */
static struct ty *parse_enum(struct parser *P, size_t off)
{
	char d[64];
	const struct tok *name = NULL;
	if (tsdl_cur(P)->kind == TK_IDENT && !tsdl_tok_is_punct(tsdl_peek(P, 1), ':') &&
	    !tsdl_tok_is_punct(tsdl_peek(P, 1), '{'))
		return named_ref(P, "enum");
	if (tsdl_cur(P)->kind == TK_IDENT) {
		name = tsdl_cur(P);
		tsdl_advance(P);
	}
	if (tsdl_expect_punct(P, ':', "before the enum's integer type") < 0)
		return NULL;
	struct ty *container = parse_type(P);
	if (!container)
		return NULL;
	if (container->kind != TY_INT) {
		tsdl_perr(P, container->off, -EINVAL, "an enum's type must be an integer");
		return NULL;
	}
	if (tsdl_expect_punct(P, '{', "to open the enum") < 0)
		return NULL;
	struct ty *t = new_ty(P, TY_ENUM, off);
	if (!t)
		return NULL;
	t->elem = container;
	size_t cap = 0;
	int64_t next = 0;
	while (!tsdl_tok_is_punct(tsdl_cur(P), '}')) {
		const struct tok *tk = tsdl_cur(P);
		struct enum_ent ent = { 0 };
		if (tk->kind == TK_STRING)
			ent.label = tsdl_tok_string(P, tk);
		else if (tk->kind == TK_IDENT)
			ent.label = tsdl_tok_ident(P, tk);
		else {
			tsdl_perr(P, tk->off, -EINVAL, "expected an enum label, found %s",
			     tsdl_tok_desc(P, tk, d, sizeof(d)));
			return NULL;
		}
		if (!ent.label)
			return NULL;
		tsdl_advance(P);
		ent.lo = ent.hi = next;
		if (tsdl_tok_is_punct(tsdl_cur(P), '=')) {
			tsdl_advance(P);
			struct entry v = { .key = "enum value", .off = tsdl_cur(P)->off };
			if (parse_value(P, &v) < 0)
				return NULL;
			if (tsdl_attr_int(P, &v, INT64_MIN, INT64_MAX, &ent.lo) < 0)
				return NULL;
			ent.hi = ent.lo;
			if (tsdl_tok_is_punct(tsdl_cur(P), P_RANGE)) {
				tsdl_advance(P);
				v.off = tsdl_cur(P)->off;
				if (parse_value(P, &v) < 0 ||
				    tsdl_attr_int(P, &v, INT64_MIN, INT64_MAX, &ent.hi) < 0)
					return NULL;
				if (ent.hi < ent.lo) {
					tsdl_perr(P, v.off, -EINVAL, "empty enum range");
					return NULL;
				}
			}
		}
		next = ent.hi == INT64_MAX ? INT64_MAX : ent.hi + 1;
		if (tsdl_arena_grow(P->a, &t->ents, &cap, t->nr_ents, sizeof(ent)) < 0) {
			tsdl_oom(P);
			return NULL;
		}
		t->ents[t->nr_ents++] = ent;
		if (tsdl_tok_is_punct(tsdl_cur(P), ','))
			tsdl_advance(P);
		else if (!tsdl_tok_is_punct(tsdl_cur(P), '}')) {
			tsdl_perr(P, tsdl_cur(P)->off, -EINVAL, "expected ',' or '}' in enum, found %s",
			     tsdl_tok_desc(P, tsdl_cur(P), d, sizeof(d)));
			return NULL;
		}
	}
	if (name_type(P, "enum", name, t) < 0)
		return NULL;
	tsdl_advance(P);
	return t;
}

/* struct [name] { decls } [align(N)] */
static struct ty *parse_struct(struct parser *P, size_t off)
{
	const struct tok *name = NULL;
	if (tsdl_cur(P)->kind == TK_IDENT && !tsdl_tok_is_punct(tsdl_peek(P, 1), '{'))
		return named_ref(P, "struct");
	if (tsdl_cur(P)->kind == TK_IDENT) {
		name = tsdl_cur(P);
		tsdl_advance(P);
	}
	if (tsdl_expect_punct(P, '{', "to open the structure") < 0)
		return NULL;
	struct ty *t = new_ty(P, TY_STRUCT, off);
	if (!t || parse_decls(P, &t->fields, &t->nr_fields) < 0)
		return NULL;
	t->align = 1;
	if (tsdl_tok_is_ident(P, tsdl_cur(P), "align") && tsdl_tok_is_punct(tsdl_peek(P, 1), '(')) {
		tsdl_advance(P);
		tsdl_advance(P);
		struct entry v = { .key = "align", .off = tsdl_cur(P)->off };
		if (parse_value(P, &v) < 0 || attr_align(P, &v, &t->align) < 0 ||
		    tsdl_expect_punct(P, ')', "after the alignment") < 0)
			return NULL;
	}
	if (name_type(P, "struct", name, t) < 0)
		return NULL;
	return t;
}

/* variant [name] [<tag>] { decls } */
static struct ty *parse_variant(struct parser *P, size_t off)
{
	struct ty *t = new_ty(P, TY_VARIANT, off);
	if (!t)
		return NULL;
	const struct tok *name = NULL;
	if (tsdl_cur(P)->kind == TK_IDENT) {
		name = tsdl_cur(P);
		tsdl_advance(P);
	}
	if (tsdl_tok_is_punct(tsdl_cur(P), '<')) {
		tsdl_advance(P);
		t->tag = tsdl_parse_dotted(P);
		if (!t->tag || tsdl_expect_punct(P, '>', "after the variant's tag") < 0)
			return NULL;
	}
	if (name && !tsdl_tok_is_punct(tsdl_cur(P), '{')) {
		/* `variant name <tag>`: the named variant with this tag. */
		const char *key = tag_key(P, "variant", name);
		const struct ty *def = key ? find_alias(P, key) : NULL;
		if (!def) {
			if (key)
				tsdl_perr(P, name->off, -EINVAL, "unknown type '%s'", key);
			return NULL;
		}
		const char *tag = t->tag;
		*t = *def;
		if (tag)
			t->tag = tag;
		return t;
	}
	if (tsdl_expect_punct(P, '{', "to open the variant") < 0)
		return NULL;
	if (parse_decls(P, &t->fields, &t->nr_fields) < 0)
		return NULL;
	if (name_type(P, "variant", name, t) < 0)
		return NULL;
	return t;
}

static struct ty *find_alias(const struct parser *P, const char *name)
{
	for (size_t k = P->nal; k-- > 0;)
		if (!strcmp(P->aliases[k].name, name))
			return P->aliases[k].ty;
	return NULL;
}

/* A type name made of one or more identifiers (`uint32_t`, `unsigned
 * int`): the longest run of identifiers that names an alias. */
static struct ty *parse_alias_use(struct parser *P)
{
	char name[256];
	size_t len = 0, best_words = 0;
	struct ty *best = NULL;
	for (size_t w = 0; w < 8; w++) {
		const struct tok *t = tsdl_peek(P, w);
		if (t->kind != TK_IDENT || len + t->len + 2 > sizeof(name))
			break;
		if (w)
			name[len++] = ' ';
		memcpy(name + len, P->src + t->off, t->len);
		len += t->len;
		name[len] = '\0';
		struct ty *ty = find_alias(P, name);
		if (ty) {
			best = ty;
			best_words = w + 1;
		}
	}
	if (!best) {
		char d[64];
		tsdl_perr(P, tsdl_cur(P)->off, -EINVAL, "unknown type %s",
		     tsdl_tok_desc(P, tsdl_cur(P), d, sizeof(d)));
		return NULL;
	}
	for (size_t w = 0; w < best_words; w++)
		tsdl_advance(P);
	return best;
}

static struct ty *parse_type(struct parser *P)
{
	const struct tok *t = tsdl_cur(P);
	char d[64];
	struct ty *ty = NULL;
	if (t->kind != TK_IDENT) {
		tsdl_perr(P, t->off, -EINVAL, "expected a type, found %s", tsdl_tok_desc(P, t, d, sizeof(d)));
		return NULL;
	}
	if (++P->depth > MAX_DEPTH) {
		tsdl_perr(P, t->off, -EINVAL, "types nested too deep");
		return NULL;
	}
	size_t off = t->off;
	if (tsdl_tok_is_ident(P, t, "integer") || tsdl_tok_is_ident(P, t, "floating_point") ||
	    tsdl_tok_is_ident(P, t, "string")) {
		bool is_int = tsdl_tok_is_ident(P, t, "integer");
		bool is_string = tsdl_tok_is_ident(P, t, "string");
		tsdl_advance(P);
		struct entry *ents = NULL;
		size_t n = 0;
		if (is_string && !tsdl_tok_is_punct(tsdl_cur(P), '{')) {
			ty = new_ty(P, TY_STRING, off);
			goto out;
		}
		if (tsdl_expect_punct(P, '{', "to open the attributes") < 0 ||
		    parse_entries(P, false, &ents, &n) < 0)
			goto out;
		if (is_int) {
			ty = make_integer(P, off, ents, n);
		} else if (is_string) {
			ty = new_ty(P, TY_STRING, off);
			for (size_t k = 0; ty && k < n; k++)
				if (!strcmp(ents[k].key, "encoding") &&
				    attr_encoding(P, &ents[k], &ty->encoding) < 0)
					ty = NULL;
		} else {
			ty = make_float(P, off, ents, n);
		}
	} else if (tsdl_tok_is_ident(P, t, "enum")) {
		tsdl_advance(P);
		ty = parse_enum(P, off);
	} else if (tsdl_tok_is_ident(P, t, "struct")) {
		tsdl_advance(P);
		ty = parse_struct(P, off);
	} else if (tsdl_tok_is_ident(P, t, "variant")) {
		tsdl_advance(P);
		ty = parse_variant(P, off);
	} else {
		ty = parse_alias_use(P);
	}
out:
	P->depth--;
	return ty;
}

/* A declarator: name, then [N] (array) or [field] (sequence) suffixes. */
static int parse_declarator(struct parser *P, struct ty *base, struct decl *dcl)
{
	const struct tok *t = tsdl_cur(P);
	char d[64];
	if (t->kind != TK_IDENT)
		return tsdl_perr(P, t->off, -EINVAL, "expected a field name, found %s",
			    tsdl_tok_desc(P, t, d, sizeof(d)));
	dcl->off = t->off;
	dcl->name = tsdl_tok_ident(P, t);
	if (!dcl->name)
		return P->rc;
	tsdl_advance(P);
	/* `t x[a][b]` is an array of a arrays of b t: wrap from the last. */
	struct ty *dims[8];
	size_t nd = 0;
	while (tsdl_tok_is_punct(tsdl_cur(P), '[')) {
		size_t off = tsdl_cur(P)->off;
		tsdl_advance(P);
		if (nd == sizeof(dims) / sizeof(dims[0]))
			return tsdl_perr(P, off, -EINVAL, "too many dimensions");
		struct ty *a;
		if (tsdl_cur(P)->kind == TK_INT) {
			a = new_ty(P, TY_ARRAY, off);
			if (!a)
				return P->rc;
			a->length = tsdl_cur(P)->val;
			tsdl_advance(P);
		} else {
			a = new_ty(P, TY_SEQ, off);
			if (!a)
				return P->rc;
			a->length_ref = tsdl_parse_dotted(P);
			if (!a->length_ref)
				return P->rc;
		}
		if (tsdl_expect_punct(P, ']', "after the length") < 0)
			return P->rc;
		dims[nd++] = a;
	}
	struct ty *ty = base;
	while (nd > 0) {
		dims[--nd]->elem = ty;
		ty = dims[nd];
	}
	dcl->ty = ty;
	return 0;
}

/* A typealias or typedef statement at `t`: 1 if parsed, 0 if `t` starts
 * something else, -1 on error (P->rc says which). */
static int parse_alias_stmt(struct parser *P, const struct tok *t)
{
	if (tsdl_tok_is_ident(P, t, "typealias"))
		return parse_typealias(P) < 0 ? -1 : 1;
	if (tsdl_tok_is_ident(P, t, "typedef"))
		return parse_typedef(P) < 0 ? -1 : 1;
	return 0;
}

static int parse_decls(struct parser *P, struct decl **out, size_t *nout)
{
	struct decl *v = NULL;
	size_t n = 0, cap = 0;
	while (!tsdl_tok_is_punct(tsdl_cur(P), '}')) {
		const struct tok *t = tsdl_cur(P);
		if (t->kind == TK_EOF)
			return tsdl_perr(P, t->off, -EINVAL, "missing '}'");
		int alias = parse_alias_stmt(P, t);
		if (alias < 0)
			return P->rc;
		if (alias)
			continue;
		struct ty *ty = parse_type(P);
		if (!ty)
			return P->rc;
		if (tsdl_tok_is_punct(tsdl_cur(P), ';')) { /* a type declaration only */
			tsdl_advance(P);
			continue;
		}
		if (tsdl_arena_grow(P->a, &v, &cap, n, sizeof(*v)) < 0)
			return tsdl_oom(P);
		if (parse_declarator(P, ty, &v[n]) < 0 ||
		    tsdl_expect_punct(P, ';', "after a field") < 0)
			return P->rc;
		n++;
	}
	tsdl_advance(P);
	*out = v;
	*nout = n;
	return 0;
}

static int add_alias(struct parser *P, const char *name, struct ty *ty)
{
	if (tsdl_arena_grow(P->a, &P->aliases, &P->alcap, P->nal, sizeof(struct alias)) < 0)
		return tsdl_oom(P);
	P->aliases[P->nal++] = (struct alias){ name, ty };
	return 0;
}

/* typealias <type> := <identifiers> ; */
static int parse_typealias(struct parser *P)
{
	tsdl_advance(P);
	struct ty *ty = parse_type(P);
	if (!ty || tsdl_expect_punct(P, P_ASSIGN_TYPE, "in typealias") < 0)
		return P->rc;
	const struct tok *t = tsdl_cur(P);
	if (t->kind != TK_IDENT) {
		char d[64];
		return tsdl_perr(P, t->off, -EINVAL, "expected the alias name, found %s",
			    tsdl_tok_desc(P, t, d, sizeof(d)));
	}
	const char *name = tsdl_join_idents(P, ' ');
	if (!name || add_alias(P, name, ty) < 0)
		return P->rc;
	return tsdl_expect_punct(P, ';', "after typealias");
}

/* typedef <type> <declarator> ; */
static int parse_typedef(struct parser *P)
{
	tsdl_advance(P);
	struct ty *ty = parse_type(P);
	struct decl dcl;
	if (!ty || parse_declarator(P, ty, &dcl) < 0 || add_alias(P, dcl.name, dcl.ty) < 0)
		return P->rc;
	return tsdl_expect_punct(P, ';', "after typedef");
}

int tsdl_parse_top(struct parser *P)
{
	static const struct {
		const char *word;
		enum block_kind kind;
	} kinds[] = {
		{ "trace", B_TRACE }, { "env", B_ENV }, { "clock", B_CLOCK },
		{ "stream", B_STREAM }, { "event", B_EVENT },
	};
	char d[64];
	while (tsdl_cur(P)->kind != TK_EOF) {
		const struct tok *t = tsdl_cur(P);
		int alias = parse_alias_stmt(P, t);
		if (alias < 0)
			return P->rc;
		if (alias)
			continue;
		if (tsdl_tok_is_ident(P, t, "struct") || tsdl_tok_is_ident(P, t, "variant") ||
		    tsdl_tok_is_ident(P, t, "enum")) {
			/* A named type declared at the top level. */
			if (!parse_type(P) || tsdl_expect_punct(P, ';', "after a type declaration") < 0)
				return P->rc;
			continue;
		}
		if (t->kind != TK_IDENT || !tsdl_tok_is_punct(tsdl_peek(P, 1), '{'))
			return tsdl_perr(P, t->off, -EINVAL,
				    "expected a trace, env, clock, stream or event block, found %s",
				    tsdl_tok_desc(P, t, d, sizeof(d)));
		struct block b = { .kind = B_OTHER, .off = t->off };
		for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
			if (tsdl_tok_is_ident(P, t, kinds[k].word))
				b.kind = kinds[k].kind;
		tsdl_advance(P);
		tsdl_advance(P);
		/* env holds free-form values: no types there. */
		if (parse_entries(P, b.kind != B_ENV, &b.ents, &b.n) < 0 ||
		    tsdl_expect_punct(P, ';', "after a block") < 0)
			return P->rc;
		if (b.kind == B_OTHER)
			continue; /* e.g. LTTng's callsite: nothing for us */
		if (tsdl_arena_grow(P->a, &P->blocks, &P->blkcap, P->nblk, sizeof(b)) < 0)
			return tsdl_oom(P);
		P->blocks[P->nblk++] = b;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Meaning: header layouts                                              */
