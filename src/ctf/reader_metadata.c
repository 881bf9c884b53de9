/*
 * reader_metadata.c - the TSDL subset that ringtrace writes (see
 * ctf_metadata.c), parsed in three steps:
 *
 *  1. tokens: identifiers, integers, string literals, punctuation; comments
 *     and white space skipped;
 *  2. a syntax tree of types (integer, floating_point, string, enum,
 *     struct, variant, arrays and sequences) and of top-level blocks as
 *     lists of `key = value;` / `key := type;` entries, with typealias and
 *     typedef; unknown attributes and unknown top-level blocks are kept
 *     out of the way, not interpreted;
 *  3. meaning: the trace, clock, stream and event blocks are checked
 *     against what ringtrace writes (packet header and context, event
 *     header) and every event class gets a decoding plan (reader_internal.h).
 *
 * Step 2 knows general TSDL syntax; only step 3 limits what is accepted, so
 * a fuller reader extends step 3. Everything allocated lives in an arena
 * freed by rtr_meta_free. Input is untrusted: every error is reported with
 * its line, column and byte offset; nesting depth is bounded.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader_internal.h"

#define MAX_DEPTH 32		/* nested types */
#define MAX_FIELDS 65535	/* per event class */
#define MAX_ARRAY_LEN (1u << 30)
#define BY_ID_TABLE_MAX 65536u	/* direct id lookup up to this id */

/* ------------------------------------------------------------------ */
/* Arena                                                                */

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, cap;
};

struct rtr_arena {
	struct arena_chunk *head;
};

#define CHUNK_HDR ((sizeof(struct arena_chunk) + 15) & ~(size_t)15)
#define CHUNK_SIZE (64 * 1024)

/* Zeroed memory aligned to 16 bytes, or NULL. */
static void *arena_alloc(struct rtr_arena *a, size_t size)
{
	if (size > SIZE_MAX / 4)
		return NULL;
	size = size ? (size + 15) & ~(size_t)15 : 16;
	struct arena_chunk *c = a->head;
	if (!c || c->cap - c->used < size) {
		size_t cap = size > CHUNK_SIZE - CHUNK_HDR ? size : CHUNK_SIZE - CHUNK_HDR;
		struct arena_chunk *n = malloc(CHUNK_HDR + cap);
		if (!n)
			return NULL;
		n->used = 0;
		n->cap = cap;
		if (c && size >= cap / 2 && c->cap - c->used > 1024) {
			/* A big block: keep filling the current chunk. */
			n->next = c->next;
			c->next = n;
		} else {
			n->next = c;
			a->head = n;
		}
		c = n;
	}
	void *p = (char *)c + CHUNK_HDR + c->used;
	c->used += size;
	memset(p, 0, size);
	return p;
}

static char *arena_strndup(struct rtr_arena *a, const char *s, size_t n)
{
	char *p = arena_alloc(a, n + 1);
	if (p) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

/* Make room for one more element in an arena-backed array. */
static int arena_grow(struct rtr_arena *a, void *arrp, size_t *cap, size_t n,
		      size_t elem)
{
	void **arr = arrp;
	if (n < *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 8;
	void *p = arena_alloc(a, nc * elem);
	if (!p)
		return -ENOMEM;
	if (n)
		memcpy(p, *arr, n * elem);
	*arr = p;
	*cap = nc;
	return 0;
}

static void arena_free(struct rtr_arena *a)
{
	if (!a)
		return;
	struct arena_chunk *c = a->head;
	while (c) {
		struct arena_chunk *n = c->next;
		free(c);
		c = n;
	}
	free(a);
}

/* ------------------------------------------------------------------ */
/* Tokens                                                               */

enum tok_kind { TK_EOF, TK_IDENT, TK_INT, TK_STRING, TK_PUNCT };

/* Punctuation is its character, but ":=" is 'A' and "..." is 'R'. */
#define P_ASSIGN_TYPE 'A'
#define P_RANGE 'R'

struct tok {
	uint8_t kind;
	char punct;
	uint32_t len;		/* source bytes */
	size_t off;		/* byte offset in the metadata */
	uint64_t val;		/* TK_INT */
};

/* ------------------------------------------------------------------ */
/* Syntax tree                                                          */

enum ty_kind { TY_INT, TY_FLOAT, TY_ENUM, TY_STRING, TY_STRUCT, TY_VARIANT,
	       TY_ARRAY, TY_SEQ };
enum { BO_DEFAULT, BO_LE, BO_BE };

struct decl {
	const char *name;
	struct ty *ty;
	size_t off;
};

struct enum_ent {
	const char *label;
	int64_t lo, hi;
};

struct ty {
	enum ty_kind kind;
	size_t off;
	unsigned size, align;		/* bits (integer, floating_point) */
	bool is_signed;
	int base, byte_order;
	const char *map, *encoding;
	unsigned exp_dig, mant_dig;
	struct ty *elem;		/* enum container, array/sequence element */
	uint64_t length;		/* array */
	const char *length_ref;		/* sequence */
	struct decl *fields;		/* struct, variant */
	size_t nr_fields;
	const char *tag;		/* variant */
	struct enum_ent *ents;
	size_t nr_ents;
};

enum val_kind { V_INT, V_STR, V_IDENT, V_TYPE };

struct entry {
	const char *key;
	size_t off;
	enum val_kind vk;
	uint64_t u;
	bool neg;			/* V_INT: -u */
	const char *s;			/* V_STR, V_IDENT */
	struct ty *ty;			/* V_TYPE */
};

enum block_kind { B_TRACE, B_ENV, B_CLOCK, B_STREAM, B_EVENT, B_OTHER };

struct block {
	enum block_kind kind;
	size_t off;
	struct entry *ents;
	size_t n;
};

struct alias {
	const char *name;
	struct ty *ty;
};

struct parser {
	const char *path;
	const char *src;
	size_t len;
	struct rtr_arena *a;
	struct tok *toks;		/* on the heap, freed after parsing */
	size_t ntok, tokcap;
	size_t i;			/* current token */
	int depth;
	struct alias *aliases;
	size_t nal, alcap;
	struct block *blocks;
	size_t nblk, blkcap;
	char *err;
	size_t errlen;
	int rc;
};

/* Report the first error; returns its code. */
__attribute__((format(printf, 4, 5)))
static int perr(struct parser *P, size_t off, int code, const char *fmt, ...)
{
	if (P->rc)
		return P->rc;
	P->rc = code;
	if (!P->err || !P->errlen)
		return code;
	if (off > P->len)
		off = P->len;
	unsigned line = 1, col = 1;
	for (size_t k = 0; k < off; k++) {
		if (P->src[k] == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
	}
	int n = snprintf(P->err, P->errlen, "%s: line %u, column %u (byte offset %zu): ",
			 P->path, line, col, off);
	if (n >= 0 && (size_t)n < P->errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(P->err + n, P->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return code;
}

static int oom(struct parser *P)
{
	return perr(P, 0, -ENOMEM, "out of memory");
}

static bool is_ident_start(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_ident_char(int c)
{
	return is_ident_start(c) || (c >= '0' && c <= '9');
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int push_tok(struct parser *P, const struct tok *t)
{
	if (P->ntok == P->tokcap) {
		size_t cap = P->tokcap ? P->tokcap * 2 : 1024;
		struct tok *v = realloc(P->toks, cap * sizeof(*v));
		if (!v)
			return oom(P);
		P->toks = v;
		P->tokcap = cap;
	}
	P->toks[P->ntok++] = *t;
	return 0;
}

/* Read an integer literal at s[*k]: decimal, 0x hexadecimal or 0 octal,
 * with optional u/l suffixes. */
static int lex_number(struct parser *P, size_t *k, uint64_t *out)
{
	const char *s = P->src;
	size_t start = *k, j = *k;
	unsigned base = 10;
	if (s[j] == '0' && j + 1 < P->len && (s[j + 1] == 'x' || s[j + 1] == 'X')) {
		base = 16;
		j += 2;
	} else if (s[j] == '0') {
		base = 8;
	}
	uint64_t v = 0;
	size_t digits = 0;
	for (; j < P->len; j++, digits++) {
		int d = hexval((unsigned char)s[j]);
		if (d < 0 || (unsigned)d >= base)
			break;
		if (v > (UINT64_MAX - (unsigned)d) / base)
			return perr(P, start, -EINVAL, "integer literal too large");
		v = v * base + (unsigned)d;
	}
	if (base == 16 && digits == 0)
		return perr(P, start, -EINVAL, "bad hexadecimal literal");
	while (j < P->len && (s[j] == 'u' || s[j] == 'U' || s[j] == 'l' || s[j] == 'L'))
		j++;
	if (j < P->len && is_ident_char((unsigned char)s[j]))
		return perr(P, start, -EINVAL, "bad integer literal");
	*k = j;
	*out = v;
	return 0;
}

static int tokenize(struct parser *P)
{
	const char *s = P->src;
	size_t k = 0, n = P->len;
	while (k < n) {
		unsigned char c = (unsigned char)s[k];
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
			k++;
			continue;
		}
		if (c == '/' && k + 1 < n && s[k + 1] == '*') {
			const char *end = memmem(s + k + 2, n - k - 2, "*/", 2);
			if (!end)
				return perr(P, k, -EINVAL, "unterminated comment");
			k = (size_t)(end - s) + 2;
			continue;
		}
		if (c == '/' && k + 1 < n && s[k + 1] == '/') {
			while (k < n && s[k] != '\n')
				k++;
			continue;
		}
		struct tok t = { .off = k };
		if (is_ident_start(c)) {
			size_t j = k + 1;
			while (j < n && is_ident_char((unsigned char)s[j]))
				j++;
			t.kind = TK_IDENT;
			t.len = (uint32_t)(j - k);
			k = j;
		} else if (c >= '0' && c <= '9') {
			t.kind = TK_INT;
			if (lex_number(P, &k, &t.val) < 0)
				return P->rc;
			t.len = (uint32_t)(k - t.off);
		} else if (c == '"') {
			size_t j = k + 1;
			while (j < n && s[j] != '"') {
				if (s[j] == '\\')
					j++;
				j++;
			}
			if (j >= n)
				return perr(P, k, -EINVAL, "unterminated string literal");
			t.kind = TK_STRING;
			t.len = (uint32_t)(j + 1 - k);
			k = j + 1;
		} else if (c == ':' && k + 1 < n && s[k + 1] == '=') {
			t.kind = TK_PUNCT;
			t.punct = P_ASSIGN_TYPE;
			t.len = 2;
			k += 2;
		} else if (c == '.' && k + 2 < n && s[k + 1] == '.' && s[k + 2] == '.') {
			t.kind = TK_PUNCT;
			t.punct = P_RANGE;
			t.len = 3;
			k += 3;
		} else if (strchr("{}[]()<>;,=.:-", c) && c) {
			t.kind = TK_PUNCT;
			t.punct = (char)c;
			t.len = 1;
			k++;
		} else if (c >= 0x20 && c < 0x7f) {
			return perr(P, k, -EINVAL, "unexpected character '%c'", c);
		} else {
			return perr(P, k, -EINVAL, "unexpected byte 0x%02x", c);
		}
		if (t.len > UINT32_MAX / 2)
			return perr(P, t.off, -EINVAL, "token too long");
		if (push_tok(P, &t) < 0)
			return P->rc;
	}
	struct tok eof = { .kind = TK_EOF, .off = n };
	return push_tok(P, &eof);
}

/* ------------------------------------------------------------------ */
/* Token helpers                                                        */

static const struct tok *cur(const struct parser *P)
{
	return &P->toks[P->i];
}

static const struct tok *peek(const struct parser *P, size_t ahead)
{
	size_t j = P->i + ahead;
	return &P->toks[j < P->ntok ? j : P->ntok - 1];
}

static void advance(struct parser *P)
{
	if (P->i + 1 < P->ntok)
		P->i++;
}

static bool tok_is_punct(const struct tok *t, char c)
{
	return t->kind == TK_PUNCT && t->punct == c;
}

static bool tok_is_ident(const struct parser *P, const struct tok *t, const char *word)
{
	size_t n = strlen(word);
	return t->kind == TK_IDENT && t->len == n && memcmp(P->src + t->off, word, n) == 0;
}

/* Describe a token for a message: 'xyz', end of file, ... */
static const char *tok_desc(const struct parser *P, const struct tok *t, char *buf,
			    size_t size)
{
	if (t->kind == TK_EOF)
		return "end of file";
	int n = (int)(t->len > 40 ? 40 : t->len);
	snprintf(buf, size, "'%.*s%s'", n, P->src + t->off, t->len > 40 ? "..." : "");
	return buf;
}

static int expect_punct(struct parser *P, char c, const char *what)
{
	const struct tok *t = cur(P);
	if (tok_is_punct(t, c)) {
		advance(P);
		return 0;
	}
	char d[64];
	const char *shown = c == P_ASSIGN_TYPE ? ":=" : (char[2]){ c, 0 };
	return perr(P, t->off, -EINVAL, "expected '%s' %s, found %s", shown, what,
		    tok_desc(P, t, d, sizeof(d)));
}

static const char *tok_ident(struct parser *P, const struct tok *t)
{
	const char *s = arena_strndup(P->a, P->src + t->off, t->len);
	if (!s)
		oom(P);
	return s;
}

/* The value of a string literal token, escapes resolved. */
static const char *tok_string(struct parser *P, const struct tok *t)
{
	const char *s = P->src + t->off + 1;
	size_t n = t->len - 2;
	char *out = arena_alloc(P->a, n + 1);
	if (!out) {
		oom(P);
		return NULL;
	}
	size_t o = 0;
	for (size_t k = 0; k < n; k++) {
		unsigned char c = (unsigned char)s[k];
		if (c != '\\') {
			out[o++] = (char)c;
			continue;
		}
		if (++k >= n)
			break;
		c = (unsigned char)s[k];
		int v;
		switch (c) {
		case 'n': v = '\n'; break;
		case 't': v = '\t'; break;
		case 'r': v = '\r'; break;
		case 'a': v = '\a'; break;
		case 'b': v = '\b'; break;
		case 'f': v = '\f'; break;
		case 'v': v = '\v'; break;
		case 'x': {
			v = 0;
			int digits = 0;
			while (digits < 2 && k + 1 < n && hexval((unsigned char)s[k + 1]) >= 0) {
				v = v * 16 + hexval((unsigned char)s[++k]);
				digits++;
			}
			if (!digits) {
				perr(P, t->off + 1 + k, -EINVAL, "bad \\x escape");
				return NULL;
			}
			break;
		}
		default:
			if (c >= '0' && c <= '7') {
				v = c - '0';
				for (int d = 0; d < 2 && k + 1 < n && s[k + 1] >= '0' && s[k + 1] <= '7'; d++)
					v = v * 8 + (s[++k] - '0');
			} else {
				v = c; /* \" \\ \' \? and anything else: itself */
			}
		}
		if (v == 0 || v > 0xff) {
			perr(P, t->off + 1 + k, -EINVAL, "bad character escape in string literal");
			return NULL;
		}
		out[o++] = (char)v;
	}
	out[o] = '\0';
	return out;
}

/* IDENT (sep IDENT)* from the current token (sep '.': dotted names, ' ':
 * consecutive identifiers), joined with `sep`; the tokens are consumed. */
static const char *join_idents(struct parser *P, char sep)
{
	size_t first = P->i, len = 0, n = 0;
	for (;;) {
		len += P->toks[P->i].len + 1;
		n++;
		advance(P);
		if (sep == '.' && tok_is_punct(cur(P), '.') && peek(P, 1)->kind == TK_IDENT)
			advance(P);
		else if (sep != ' ' || cur(P)->kind != TK_IDENT)
			break;
	}
	char *s = arena_alloc(P->a, len);
	if (!s) {
		oom(P);
		return NULL;
	}
	size_t o = 0;
	for (size_t k = first; n > 0; k++) {
		const struct tok *t = &P->toks[k];
		if (t->kind != TK_IDENT)
			continue;
		if (o)
			s[o++] = sep;
		memcpy(s + o, P->src + t->off, t->len);
		o += t->len;
		n--;
	}
	s[o] = '\0';
	return s;
}

/* IDENT ('.' IDENT)*, joined with dots. */
static const char *parse_dotted(struct parser *P)
{
	const struct tok *t = cur(P);
	if (t->kind != TK_IDENT) {
		char d[64];
		perr(P, t->off, -EINVAL, "expected an identifier, found %s",
		     tok_desc(P, t, d, sizeof(d)));
		return NULL;
	}
	return join_idents(P, '.');
}

/* ------------------------------------------------------------------ */
/* Values and attribute lists                                           */

static int parse_value(struct parser *P, struct entry *e)
{
	const struct tok *t = cur(P);
	char d[64];
	if (tok_is_punct(t, '-') && peek(P, 1)->kind == TK_INT) {
		advance(P);
		e->vk = V_INT;
		e->u = cur(P)->val;
		e->neg = e->u != 0;
		advance(P);
		return 0;
	}
	switch (t->kind) {
	case TK_INT:
		e->vk = V_INT;
		e->u = t->val;
		advance(P);
		return 0;
	case TK_STRING:
		e->vk = V_STR;
		e->s = tok_string(P, t);
		advance(P);
		return e->s ? 0 : P->rc;
	case TK_IDENT:
		e->vk = V_IDENT;
		e->s = parse_dotted(P);
		return e->s ? 0 : P->rc;
	default:
		return perr(P, t->off, -EINVAL, "expected a value, found %s",
			    tok_desc(P, t, d, sizeof(d)));
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
	while (!tok_is_punct(cur(P), '}')) {
		const struct tok *t = cur(P);
		if (t->kind == TK_EOF)
			return perr(P, t->off, -EINVAL, "missing '}'");
		if (types && tok_is_ident(P, t, "typealias")) {
			if (parse_typealias(P) < 0)
				return P->rc;
			continue;
		}
		if (types && tok_is_ident(P, t, "typedef")) {
			if (parse_typedef(P) < 0)
				return P->rc;
			continue;
		}
		if (arena_grow(P->a, &ents, &cap, n, sizeof(*ents)) < 0)
			return oom(P);
		struct entry *e = &ents[n];
		memset(e, 0, sizeof(*e));
		e->off = t->off;
		if (t->kind != TK_IDENT)
			return perr(P, t->off, -EINVAL, "expected an attribute name, found %s",
				    tok_desc(P, t, d, sizeof(d)));
		e->key = parse_dotted(P);
		if (!e->key)
			return P->rc;
		t = cur(P);
		if (tok_is_punct(t, '=')) {
			advance(P);
			if (parse_value(P, e) < 0)
				return P->rc;
		} else if (types && tok_is_punct(t, P_ASSIGN_TYPE)) {
			advance(P);
			e->vk = V_TYPE;
			e->ty = parse_type(P);
			if (!e->ty)
				return P->rc;
		} else {
			return perr(P, t->off, -EINVAL, "expected '=' after '%s', found %s",
				    e->key, tok_desc(P, t, d, sizeof(d)));
		}
		if (expect_punct(P, ';', "after an attribute") < 0)
			return P->rc;
		n++;
	}
	advance(P); /* '}' */
	*out = ents;
	*nout = n;
	return 0;
}

static const struct entry *find_entry(const struct entry *ents, size_t n, const char *key)
{
	const struct entry *found = NULL;
	for (size_t k = 0; k < n; k++)
		if (!strcmp(ents[k].key, key))
			found = &ents[k]; /* the last one wins */
	return found;
}

static bool ident_is(const struct entry *e, const char *word)
{
	return e->vk == V_IDENT && !strcmp(e->s, word);
}

static int attr_uint(struct parser *P, const struct entry *e, uint64_t max, uint64_t *out)
{
	if (e->vk != V_INT || e->neg)
		return perr(P, e->off, -EINVAL, "'%s' must be a non-negative integer", e->key);
	if (e->u > max)
		return perr(P, e->off, -EINVAL, "'%s' is too large (%" PRIu64 ", at most %" PRIu64 ")",
			    e->key, e->u, max);
	*out = e->u;
	return 0;
}

static int attr_int(struct parser *P, const struct entry *e, int64_t min, int64_t max,
		    int64_t *out)
{
	if (e->vk != V_INT)
		return perr(P, e->off, -EINVAL, "'%s' must be an integer", e->key);
	if (!e->neg && e->u > (uint64_t)max)
		return perr(P, e->off, -EINVAL, "'%s' is too large", e->key);
	if (e->neg && (e->u > (uint64_t)INT64_MAX + 1 ||
		       (min > INT64_MIN && e->u > (uint64_t)-min)))
		return perr(P, e->off, -EINVAL, "'%s' is too small", e->key);
	*out = e->neg ? (e->u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)e->u)
		      : (int64_t)e->u;
	return 0;
}

static int attr_bool(struct parser *P, const struct entry *e, bool *out)
{
	if (ident_is(e, "true") || ident_is(e, "TRUE") || (e->vk == V_INT && !e->neg && e->u == 1))
		*out = true;
	else if (ident_is(e, "false") || ident_is(e, "FALSE") || (e->vk == V_INT && e->u == 0))
		*out = false;
	else
		return perr(P, e->off, -EINVAL, "'%s' must be true or false", e->key);
	return 0;
}

static int attr_name(struct parser *P, const struct entry *e, const char **out)
{
	if (e->vk != V_STR && e->vk != V_IDENT)
		return perr(P, e->off, -EINVAL, "'%s' must be a string", e->key);
	*out = e->s;
	return 0;
}

static int attr_byte_order(struct parser *P, const struct entry *e, int *out)
{
	if (ident_is(e, "le"))
		*out = BO_LE;
	else if (ident_is(e, "be") || ident_is(e, "network"))
		*out = BO_BE;
	else if (ident_is(e, "native"))
		*out = BO_DEFAULT;
	else
		return perr(P, e->off, -EINVAL, "byte_order must be le, be, network or native");
	return 0;
}

static int attr_align(struct parser *P, const struct entry *e, unsigned *out)
{
	uint64_t v = 0;
	if (attr_uint(P, e, 1u << 20, &v) < 0)
		return P->rc;
	if (!v || (v & (v - 1)))
		return perr(P, e->off, -EINVAL, "align must be a power of two");
	*out = (unsigned)v;
	return 0;
}

static int attr_encoding(struct parser *P, const struct entry *e, const char **out)
{
	if (ident_is(e, "none") || ident_is(e, "UTF8") || ident_is(e, "ASCII") ||
	    ident_is(e, "utf8") || ident_is(e, "ascii")) {
		*out = e->s;
		return 0;
	}
	return perr(P, e->off, -EINVAL, "encoding must be none, UTF8 or ASCII");
}

static struct ty *new_ty(struct parser *P, enum ty_kind kind, size_t off)
{
	struct ty *t = arena_alloc(P->a, sizeof(*t));
	if (!t) {
		oom(P);
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
			if (attr_uint(P, e, 64, &v) < 0)
				return NULL;
			if (!v) {
				perr(P, e->off, -EINVAL, "integer size must be 1 to 64 bits");
				return NULL;
			}
			t->size = (unsigned)v;
			has_size = true;
		} else if (!strcmp(e->key, "align")) {
			if (attr_align(P, e, &t->align) < 0)
				return NULL;
			has_align = true;
		} else if (!strcmp(e->key, "signed")) {
			if (attr_bool(P, e, &t->is_signed) < 0)
				return NULL;
		} else if (!strcmp(e->key, "byte_order")) {
			if (attr_byte_order(P, e, &t->byte_order) < 0)
				return NULL;
		} else if (!strcmp(e->key, "encoding")) {
			if (attr_encoding(P, e, &t->encoding) < 0)
				return NULL;
		} else if (!strcmp(e->key, "map")) {
			if (e->vk != V_IDENT) {
				perr(P, e->off, -EINVAL, "map must be clock.<name>.value");
				return NULL;
			}
			t->map = e->s;
		} else if (!strcmp(e->key, "base")) {
			if (e->vk == V_INT && !e->neg &&
			    (e->u == 2 || e->u == 8 || e->u == 10 || e->u == 16))
				t->base = (int)e->u;
			else if (ident_is(e, "decimal") || ident_is(e, "dec") || ident_is(e, "d") ||
				 ident_is(e, "i") || ident_is(e, "u"))
				t->base = 10;
			else if (ident_is(e, "hexadecimal") || ident_is(e, "hex") ||
				 ident_is(e, "x") || ident_is(e, "X") || ident_is(e, "p"))
				t->base = 16;
			else if (ident_is(e, "octal") || ident_is(e, "oct") || ident_is(e, "o"))
				t->base = 8;
			else if (ident_is(e, "binary") || ident_is(e, "b"))
				t->base = 2;
			else {
				perr(P, e->off, -EINVAL, "base must be 2, 8, 10 or 16");
				return NULL;
			}
		}
		/* other attributes: ignored */
	}
	if (!has_size) {
		perr(P, off, -EINVAL, "integer without size");
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
			if (attr_uint(P, e, 1024, &v) < 0)
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
		perr(P, off, -EINVAL, "floating_point needs exp_dig and mant_dig");
		return NULL;
	}
	t->size = t->exp_dig + t->mant_dig;
	return t;
}

/* Declarations up to the closing '}' (consumed). */
static int parse_decls(struct parser *P, struct decl **out, size_t *nout);

/* enum [name] : <integer type> { entries } */
static struct ty *parse_enum(struct parser *P, size_t off)
{
	char d[64];
	if (cur(P)->kind == TK_IDENT && tok_is_punct(peek(P, 1), ':'))
		advance(P); /* the enum's name: not needed */
	if (expect_punct(P, ':', "before the enum's integer type") < 0)
		return NULL;
	struct ty *container = parse_type(P);
	if (!container)
		return NULL;
	if (container->kind != TY_INT) {
		perr(P, container->off, -EINVAL, "an enum's type must be an integer");
		return NULL;
	}
	if (expect_punct(P, '{', "to open the enum") < 0)
		return NULL;
	struct ty *t = new_ty(P, TY_ENUM, off);
	if (!t)
		return NULL;
	t->elem = container;
	size_t cap = 0;
	int64_t next = 0;
	while (!tok_is_punct(cur(P), '}')) {
		const struct tok *tk = cur(P);
		struct enum_ent ent = { 0 };
		if (tk->kind == TK_STRING)
			ent.label = tok_string(P, tk);
		else if (tk->kind == TK_IDENT)
			ent.label = tok_ident(P, tk);
		else {
			perr(P, tk->off, -EINVAL, "expected an enum label, found %s",
			     tok_desc(P, tk, d, sizeof(d)));
			return NULL;
		}
		if (!ent.label)
			return NULL;
		advance(P);
		ent.lo = ent.hi = next;
		if (tok_is_punct(cur(P), '=')) {
			advance(P);
			struct entry v = { .key = "enum value", .off = cur(P)->off };
			if (parse_value(P, &v) < 0)
				return NULL;
			if (attr_int(P, &v, INT64_MIN, INT64_MAX, &ent.lo) < 0)
				return NULL;
			ent.hi = ent.lo;
			if (tok_is_punct(cur(P), P_RANGE)) {
				advance(P);
				v.off = cur(P)->off;
				if (parse_value(P, &v) < 0 ||
				    attr_int(P, &v, INT64_MIN, INT64_MAX, &ent.hi) < 0)
					return NULL;
				if (ent.hi < ent.lo) {
					perr(P, v.off, -EINVAL, "empty enum range");
					return NULL;
				}
			}
		}
		next = ent.hi == INT64_MAX ? INT64_MAX : ent.hi + 1;
		if (arena_grow(P->a, &t->ents, &cap, t->nr_ents, sizeof(ent)) < 0) {
			oom(P);
			return NULL;
		}
		t->ents[t->nr_ents++] = ent;
		if (tok_is_punct(cur(P), ','))
			advance(P);
		else if (!tok_is_punct(cur(P), '}')) {
			perr(P, cur(P)->off, -EINVAL, "expected ',' or '}' in enum, found %s",
			     tok_desc(P, cur(P), d, sizeof(d)));
			return NULL;
		}
	}
	advance(P);
	return t;
}

/* struct [name] { decls } [align(N)] */
static struct ty *parse_struct(struct parser *P, size_t off)
{
	if (cur(P)->kind == TK_IDENT && tok_is_punct(peek(P, 1), '{'))
		advance(P); /* the struct's name: not needed */
	if (!tok_is_punct(cur(P), '{')) {
		perr(P, cur(P)->off, -ENOTSUP,
		     "references to named structures are not supported");
		return NULL;
	}
	advance(P);
	struct ty *t = new_ty(P, TY_STRUCT, off);
	if (!t || parse_decls(P, &t->fields, &t->nr_fields) < 0)
		return NULL;
	t->align = 1;
	if (tok_is_ident(P, cur(P), "align") && tok_is_punct(peek(P, 1), '(')) {
		advance(P);
		advance(P);
		struct entry v = { .key = "align", .off = cur(P)->off };
		if (parse_value(P, &v) < 0 || attr_align(P, &v, &t->align) < 0 ||
		    expect_punct(P, ')', "after the alignment") < 0)
			return NULL;
	}
	return t;
}

/* variant [name] [<tag>] { decls } */
static struct ty *parse_variant(struct parser *P, size_t off)
{
	struct ty *t = new_ty(P, TY_VARIANT, off);
	if (!t)
		return NULL;
	if (cur(P)->kind == TK_IDENT)
		advance(P); /* name */
	if (tok_is_punct(cur(P), '<')) {
		advance(P);
		t->tag = parse_dotted(P);
		if (!t->tag || expect_punct(P, '>', "after the variant's tag") < 0)
			return NULL;
	}
	if (expect_punct(P, '{', "to open the variant") < 0)
		return NULL;
	if (parse_decls(P, &t->fields, &t->nr_fields) < 0)
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
		const struct tok *t = peek(P, w);
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
		perr(P, cur(P)->off, -EINVAL, "unknown type %s",
		     tok_desc(P, cur(P), d, sizeof(d)));
		return NULL;
	}
	for (size_t w = 0; w < best_words; w++)
		advance(P);
	return best;
}

static struct ty *parse_type(struct parser *P)
{
	const struct tok *t = cur(P);
	char d[64];
	struct ty *ty = NULL;
	if (t->kind != TK_IDENT) {
		perr(P, t->off, -EINVAL, "expected a type, found %s", tok_desc(P, t, d, sizeof(d)));
		return NULL;
	}
	if (++P->depth > MAX_DEPTH) {
		perr(P, t->off, -EINVAL, "types nested too deep");
		return NULL;
	}
	size_t off = t->off;
	if (tok_is_ident(P, t, "integer") || tok_is_ident(P, t, "floating_point") ||
	    tok_is_ident(P, t, "string")) {
		bool is_int = tok_is_ident(P, t, "integer");
		bool is_string = tok_is_ident(P, t, "string");
		advance(P);
		struct entry *ents = NULL;
		size_t n = 0;
		if (is_string && !tok_is_punct(cur(P), '{')) {
			ty = new_ty(P, TY_STRING, off);
			goto out;
		}
		if (expect_punct(P, '{', "to open the attributes") < 0 ||
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
	} else if (tok_is_ident(P, t, "enum")) {
		advance(P);
		ty = parse_enum(P, off);
	} else if (tok_is_ident(P, t, "struct")) {
		advance(P);
		ty = parse_struct(P, off);
	} else if (tok_is_ident(P, t, "variant")) {
		advance(P);
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
	const struct tok *t = cur(P);
	char d[64];
	if (t->kind != TK_IDENT)
		return perr(P, t->off, -EINVAL, "expected a field name, found %s",
			    tok_desc(P, t, d, sizeof(d)));
	dcl->off = t->off;
	dcl->name = tok_ident(P, t);
	if (!dcl->name)
		return P->rc;
	advance(P);
	/* `t x[a][b]` is an array of a arrays of b t: wrap from the last. */
	struct ty *dims[8];
	size_t nd = 0;
	while (tok_is_punct(cur(P), '[')) {
		size_t off = cur(P)->off;
		advance(P);
		if (nd == sizeof(dims) / sizeof(dims[0]))
			return perr(P, off, -EINVAL, "too many dimensions");
		struct ty *a;
		if (cur(P)->kind == TK_INT) {
			a = new_ty(P, TY_ARRAY, off);
			if (!a)
				return P->rc;
			a->length = cur(P)->val;
			advance(P);
		} else {
			a = new_ty(P, TY_SEQ, off);
			if (!a)
				return P->rc;
			a->length_ref = parse_dotted(P);
			if (!a->length_ref)
				return P->rc;
		}
		if (expect_punct(P, ']', "after the length") < 0)
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
	if (tok_is_ident(P, t, "typealias"))
		return parse_typealias(P) < 0 ? -1 : 1;
	if (tok_is_ident(P, t, "typedef"))
		return parse_typedef(P) < 0 ? -1 : 1;
	return 0;
}

static int parse_decls(struct parser *P, struct decl **out, size_t *nout)
{
	struct decl *v = NULL;
	size_t n = 0, cap = 0;
	while (!tok_is_punct(cur(P), '}')) {
		const struct tok *t = cur(P);
		if (t->kind == TK_EOF)
			return perr(P, t->off, -EINVAL, "missing '}'");
		int alias = parse_alias_stmt(P, t);
		if (alias < 0)
			return P->rc;
		if (alias)
			continue;
		struct ty *ty = parse_type(P);
		if (!ty)
			return P->rc;
		if (arena_grow(P->a, &v, &cap, n, sizeof(*v)) < 0)
			return oom(P);
		if (parse_declarator(P, ty, &v[n]) < 0 ||
		    expect_punct(P, ';', "after a field") < 0)
			return P->rc;
		n++;
	}
	advance(P);
	*out = v;
	*nout = n;
	return 0;
}

static int add_alias(struct parser *P, const char *name, struct ty *ty)
{
	if (arena_grow(P->a, &P->aliases, &P->alcap, P->nal, sizeof(struct alias)) < 0)
		return oom(P);
	P->aliases[P->nal++] = (struct alias){ name, ty };
	return 0;
}

/* typealias <type> := <identifiers> ; */
static int parse_typealias(struct parser *P)
{
	advance(P);
	struct ty *ty = parse_type(P);
	if (!ty || expect_punct(P, P_ASSIGN_TYPE, "in typealias") < 0)
		return P->rc;
	const struct tok *t = cur(P);
	if (t->kind != TK_IDENT) {
		char d[64];
		return perr(P, t->off, -EINVAL, "expected the alias name, found %s",
			    tok_desc(P, t, d, sizeof(d)));
	}
	const char *name = join_idents(P, ' ');
	if (!name || add_alias(P, name, ty) < 0)
		return P->rc;
	return expect_punct(P, ';', "after typealias");
}

/* typedef <type> <declarator> ; */
static int parse_typedef(struct parser *P)
{
	advance(P);
	struct ty *ty = parse_type(P);
	struct decl dcl;
	if (!ty || parse_declarator(P, ty, &dcl) < 0 || add_alias(P, dcl.name, dcl.ty) < 0)
		return P->rc;
	return expect_punct(P, ';', "after typedef");
}

static int parse_top(struct parser *P)
{
	static const struct {
		const char *word;
		enum block_kind kind;
	} kinds[] = {
		{ "trace", B_TRACE }, { "env", B_ENV }, { "clock", B_CLOCK },
		{ "stream", B_STREAM }, { "event", B_EVENT },
	};
	char d[64];
	while (cur(P)->kind != TK_EOF) {
		const struct tok *t = cur(P);
		int alias = parse_alias_stmt(P, t);
		if (alias < 0)
			return P->rc;
		if (alias)
			continue;
		if (t->kind != TK_IDENT || !tok_is_punct(peek(P, 1), '{'))
			return perr(P, t->off, -EINVAL,
				    "expected a trace, env, clock, stream or event block, found %s",
				    tok_desc(P, t, d, sizeof(d)));
		struct block b = { .kind = B_OTHER, .off = t->off };
		for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
			if (tok_is_ident(P, t, kinds[k].word))
				b.kind = kinds[k].kind;
		advance(P);
		advance(P);
		/* env holds free-form values: no types there. */
		if (parse_entries(P, b.kind != B_ENV, &b.ents, &b.n) < 0 ||
		    expect_punct(P, ';', "after a block") < 0)
			return P->rc;
		if (b.kind == B_OTHER)
			continue; /* e.g. LTTng's callsite: nothing for us */
		if (arena_grow(P->a, &P->blocks, &P->blkcap, P->nblk, sizeof(b)) < 0)
			return oom(P);
		P->blocks[P->nblk++] = b;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Meaning: header layouts                                              */

static bool byte_order_ok(const struct ty *t)
{
	return t->byte_order != BO_BE;
}

static bool is_uint(const struct ty *t, unsigned bits)
{
	return t && t->kind == TY_INT && t->size == bits && !t->is_signed && byte_order_ok(t);
}

static const struct decl *field_named(const struct ty *st, const char *name)
{
	for (size_t k = 0; k < st->nr_fields; k++)
		if (!strcmp(st->fields[k].name, name))
			return &st->fields[k];
	return NULL;
}

struct want {
	const char *name;
	unsigned bits;
	unsigned count;	/* array of `count` elements; 0: scalar */
};

/*
 * A structure of unsigned integers (and byte arrays) in this order. With
 * their natural alignment or less, the layout is the packed one of
 * ctf_packet.h, since every offset there is a multiple of the size.
 */
static int check_flat_struct(struct parser *P, const struct ty *st, size_t off,
			     const char *what, const struct want *w, size_t n)
{
	if (!st || st->kind != TY_STRUCT)
		return perr(P, st ? st->off : off, -EINVAL, "%s must be a structure", what);
	if (st->nr_fields != n)
		return perr(P, st->off, -ENOTSUP,
			    "%s has %zu fields; ringtrace's has %zu (this reader only decodes ringtrace traces)",
			    what, st->nr_fields, n);
	for (size_t k = 0; k < n; k++) {
		const struct decl *dcl = &st->fields[k];
		const struct ty *t = dcl->ty;
		bool ok = !strcmp(dcl->name, w[k].name);
		if (ok && w[k].count)
			ok = t->kind == TY_ARRAY && t->length == w[k].count &&
			     is_uint(t->elem, w[k].bits) && t->elem->align <= w[k].bits;
		else if (ok)
			ok = is_uint(t, w[k].bits) && t->align <= w[k].bits;
		if (!ok) {
			char expect[96];
			if (w[k].count)
				snprintf(expect, sizeof(expect), "%u-bit unsigned integer array %s[%u]",
					 w[k].bits, w[k].name, w[k].count);
			else
				snprintf(expect, sizeof(expect), "%u-bit unsigned integer %s",
					 w[k].bits, w[k].name);
			return perr(P, dcl->off, -ENOTSUP,
				    "%s: field %zu should be the little-endian %s, as ringtrace writes it",
				    what, k + 1, expect);
		}
	}
	return 0;
}

static const char *enum_label(const struct ty *t, int64_t v)
{
	for (size_t k = 0; k < t->nr_ents; k++)
		if (v >= t->ents[k].lo && v <= t->ents[k].hi)
			return t->ents[k].label;
	return "";
}

/* enum : uint5_t { compact = 0 ... 30, extended = 31 } id;
 * variant <id> { struct { uint27 timestamp; } compact;
 *                struct { uint32 id; uint64 timestamp; } extended; } v; */
static int check_event_header(struct parser *P, const struct ty *st, size_t off)
{
	const char *what = "stream event.header";
	if (!st || st->kind != TY_STRUCT)
		return perr(P, st ? st->off : off, -EINVAL, "%s must be a structure", what);
	const struct decl *id = st->nr_fields == 2 ? &st->fields[0] : NULL;
	const struct decl *v = st->nr_fields == 2 ? &st->fields[1] : NULL;
	bool ok = id && !strcmp(id->name, "id") && id->ty->kind == TY_ENUM &&
		  is_uint(id->ty->elem, 5) && id->ty->elem->align == 1 &&
		  !strcmp(enum_label(id->ty, 0), "compact") &&
		  !strcmp(enum_label(id->ty, 30), "compact") &&
		  !strcmp(enum_label(id->ty, 31), "extended");
	ok = ok && !strcmp(v->name, "v") && v->ty->kind == TY_VARIANT && v->ty->tag &&
	     !strcmp(v->ty->tag, "id");
	const struct decl *c = ok ? field_named(v->ty, "compact") : NULL;
	const struct decl *x = ok ? field_named(v->ty, "extended") : NULL;
	ok = c && x && v->ty->nr_fields == 2 && c->ty->kind == TY_STRUCT &&
	     x->ty->kind == TY_STRUCT && c->ty->nr_fields == 1 && x->ty->nr_fields == 2;
	ok = ok && !strcmp(c->ty->fields[0].name, "timestamp") &&
	     is_uint(c->ty->fields[0].ty, 27) && c->ty->fields[0].ty->align == 1;
	ok = ok && !strcmp(x->ty->fields[0].name, "id") && is_uint(x->ty->fields[0].ty, 32) &&
	     x->ty->fields[0].ty->align <= 8 && x->ty->align <= 8;
	ok = ok && !strcmp(x->ty->fields[1].name, "timestamp") &&
	     is_uint(x->ty->fields[1].ty, 64) && x->ty->fields[1].ty->align <= 8;
	if (!ok)
		return perr(P, st->off, -ENOTSUP,
			    "%s is not ringtrace's compact/extended header (5-bit id; 27-bit or "
			    "32-bit id + 64-bit timestamp); this reader only decodes ringtrace traces",
			    what);
	return 0;
}

/* A structure that must be absent or empty (event.context, context). */
static int check_empty(struct parser *P, const struct entry *e)
{
	if (!e)
		return 0;
	if (e->vk != V_TYPE || e->ty->kind != TY_STRUCT || e->ty->nr_fields)
		return perr(P, e->off, -ENOTSUP, "'%s' is not supported", e->key);
	return 0;
}

static int parse_uuid(struct parser *P, const struct entry *e, uint8_t out[16])
{
	const char *s = e->vk == V_STR ? e->s : "";
	size_t n = 0;
	for (size_t k = 0; s[k]; k++) {
		if ((k == 8 || k == 13 || k == 18 || k == 23) && s[k] == '-')
			continue;
		int h = hexval((unsigned char)s[k]), l = s[k + 1] ? hexval((unsigned char)s[k + 1]) : -1;
		if (h < 0 || l < 0 || n == 16)
			break;
		out[n++] = (uint8_t)(h * 16 + l);
		k++;
	}
	if (n != 16 || strlen(s) != 36)
		return perr(P, e->off, -EINVAL, "bad uuid (want \"xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx\")");
	return 0;
}

static int do_trace(struct parser *P, const struct block *b, struct rtr_meta *m)
{
	const struct entry *e;
	uint64_t v = 0;
	if ((e = find_entry(b->ents, b->n, "major"))) {
		if (attr_uint(P, e, UINT32_MAX, &v) < 0)
			return P->rc;
		if (v != 1)
			return perr(P, e->off, -ENOTSUP, "CTF major version %" PRIu64 " is not supported", v);
	}
	if ((e = find_entry(b->ents, b->n, "minor"))) {
		if (attr_uint(P, e, UINT32_MAX, &v) < 0)
			return P->rc;
		if (v != 8)
			return perr(P, e->off, -ENOTSUP, "CTF 1.%" PRIu64 " is not supported (1.8 only)", v);
	}
	if ((e = find_entry(b->ents, b->n, "uuid"))) {
		if (parse_uuid(P, e, m->uuid) < 0)
			return P->rc;
		m->has_uuid = 1;
	}
	e = find_entry(b->ents, b->n, "byte_order");
	if (!e)
		return perr(P, b->off, -EINVAL, "the trace block has no byte_order");
	if (!ident_is(e, "le"))
		return perr(P, e->off, -ENOTSUP, "only little-endian traces (byte_order = le) are supported");
	static const struct want hdr[] = {
		{ "magic", 32, 0 }, { "uuid", 8, 16 }, { "stream_id", 32, 0 },
		{ "stream_instance_id", 64, 0 },
	};
	e = find_entry(b->ents, b->n, "packet.header");
	if (!e)
		return perr(P, b->off, -EINVAL, "the trace block has no packet.header");
	return check_flat_struct(P, e->vk == V_TYPE ? e->ty : NULL, e->off,
				 "trace packet.header", hdr, sizeof(hdr) / sizeof(hdr[0]));
}

static int do_clock(struct parser *P, const struct block *b, struct rtr_meta *m)
{
	const struct entry *e;
	if ((e = find_entry(b->ents, b->n, "name")) && attr_name(P, e, &m->clock_name) < 0)
		return P->rc;
	if ((e = find_entry(b->ents, b->n, "freq"))) {
		if (attr_uint(P, e, UINT64_MAX, &m->freq) < 0)
			return P->rc;
		if (!m->freq)
			return perr(P, e->off, -EINVAL, "clock frequency 0");
	}
	if ((e = find_entry(b->ents, b->n, "offset_s")) &&
	    attr_int(P, e, INT64_MIN, INT64_MAX, &m->offset_s) < 0)
		return P->rc;
	if ((e = find_entry(b->ents, b->n, "offset")) && attr_uint(P, e, UINT64_MAX, &m->offset) < 0)
		return P->rc;
	return 0;
}

static int do_stream(struct parser *P, const struct block *b, struct rtr_stream_class *sc)
{
	const struct entry *e;
	uint64_t v = 0;
	if ((e = find_entry(b->ents, b->n, "id")) && attr_uint(P, e, UINT32_MAX, &v) < 0)
		return P->rc;
	sc->id = (uint32_t)v;
	e = find_entry(b->ents, b->n, "event.header");
	if (!e)
		return perr(P, b->off, -ENOTSUP, "stream %u has no event.header", sc->id);
	if (check_event_header(P, e->vk == V_TYPE ? e->ty : NULL, e->off) < 0)
		return P->rc;
	static const struct want ctx[] = {
		{ "timestamp_begin", 64, 0 }, { "timestamp_end", 64, 0 },
		{ "content_size", 64, 0 }, { "packet_size", 64, 0 },
		{ "packet_seq_num", 64, 0 }, { "events_discarded", 64, 0 },
		{ "cpu_id", 32, 0 },
	};
	e = find_entry(b->ents, b->n, "packet.context");
	if (!e)
		return perr(P, b->off, -ENOTSUP, "stream %u has no packet.context", sc->id);
	if (check_flat_struct(P, e->vk == V_TYPE ? e->ty : NULL, e->off, "stream packet.context",
			      ctx, sizeof(ctx) / sizeof(ctx[0])) < 0)
		return P->rc;
	return check_empty(P, find_entry(b->ents, b->n, "event.context"));
}

/* ------------------------------------------------------------------ */
/* Meaning: event classes and their plans                               */

/* An integer payload field (or enum container): its size in bytes. */
static int payload_int(struct parser *P, const struct ty *t, const char *ev, const char *f,
		       unsigned *bytes)
{
	if (t->size != 8 && t->size != 16 && t->size != 32 && t->size != 64)
		return perr(P, t->off, -ENOTSUP, "event '%s', field '%s': %u-bit integers are not supported",
			    ev, f, t->size);
	if (t->align != 1 && t->align != 8)
		return perr(P, t->off, -ENOTSUP,
			    "event '%s', field '%s': alignment of %u bits is not supported (byte-aligned fields only)",
			    ev, f, t->align);
	if (!byte_order_ok(t))
		return perr(P, t->off, -ENOTSUP, "event '%s', field '%s': big-endian fields are not supported",
			    ev, f);
	*bytes = t->size / 8;
	return 0;
}

static bool enum_is_bool(const struct ty *t)
{
	if (t->nr_ents != 2)
		return false;
	bool f = false, tr = false;
	for (size_t k = 0; k < 2; k++) {
		const struct enum_ent *e = &t->ents[k];
		if (!strcmp(e->label, "false") && e->lo == 0 && e->hi == 0)
			f = true;
		if (!strcmp(e->label, "true") && e->lo == 1 && e->hi == 1)
			tr = true;
	}
	return f && tr;
}

static const char *strip_underscore(const char *name)
{
	return name[0] == '_' ? name + 1 : name;
}

static int compile_fields(struct parser *P, const char *ev, const struct ty *st,
			  struct rtr_class_plan **out)
{
	size_t n = st ? st->nr_fields : 0;
	if (n > MAX_FIELDS)
		return perr(P, st->off, -ENOTSUP, "event '%s' has too many fields", ev);
	if (st && st->align > 8)
		return perr(P, st->off, -ENOTSUP, "event '%s': alignment of %u bits is not supported",
			    ev, st->align);
	struct rtr_class_plan *cp = arena_alloc(P->a, sizeof(*cp) + n * sizeof(cp->fields[0]));
	struct rtr_field_plan *plan = arena_alloc(P->a, (n ? n : 1) * sizeof(*plan));
	if (!cp || !plan)
		return oom(P);
	cp->plan = plan;
	cp->nr_fields = (uint32_t)n;
	uint64_t off = 0;
	bool fixed = true;
	int slots = 0;
	for (size_t k = 0; k < n; k++) {
		const struct decl *dcl = &st->fields[k];
		const struct ty *t = dcl->ty;
		struct rtr_field_class *fc = &cp->fields[k];
		struct rtr_field_plan *fp = &plan[k];
		const char *f = dcl->name;
		unsigned bytes = 0;
		fc->name = strip_underscore(f);
		fc->base = 10;
		fp->len_slot = -1;
		fp->len_from = -1;
		fp->static_off = fixed ? (int64_t)off : -1;
		switch (t->kind) {
		case TY_INT:
			if (payload_int(P, t, ev, f, &bytes) < 0)
				return P->rc;
			fc->type = t->is_signed ? RTR_INT : RTR_UINT;
			fc->bits = t->size;
			fc->base = t->base;
			break;
		case TY_ENUM:
			if (payload_int(P, t->elem, ev, f, &bytes) < 0)
				return P->rc;
			fc->type = enum_is_bool(t) ? RTR_BOOL : t->elem->is_signed ? RTR_INT : RTR_UINT;
			fc->bits = t->elem->size;
			break;
		case TY_FLOAT:
			if (t->exp_dig == 8 && t->mant_dig == 24)
				fc->type = RTR_FLOAT;
			else if (t->exp_dig == 11 && t->mant_dig == 53)
				fc->type = RTR_DOUBLE;
			else
				return perr(P, t->off, -ENOTSUP,
					    "event '%s', field '%s': floating_point with exp_dig %u, mant_dig %u is not supported",
					    ev, f, t->exp_dig, t->mant_dig);
			if (t->align != 1 && t->align != 8)
				return perr(P, t->off, -ENOTSUP,
					    "event '%s', field '%s': alignment of %u bits is not supported",
					    ev, f, t->align);
			if (!byte_order_ok(t))
				return perr(P, t->off, -ENOTSUP,
					    "event '%s', field '%s': big-endian fields are not supported", ev, f);
			fc->bits = t->size;
			bytes = t->size / 8;
			break;
		case TY_STRING:
			fc->type = RTR_STRING;
			fp->op = RTR_OP_STRING;
			break;
		case TY_ARRAY:
		case TY_SEQ:
			if (t->elem->kind != TY_INT || t->elem->size != 8)
				return perr(P, t->off, -ENOTSUP,
					    "event '%s', field '%s': only arrays and sequences of bytes are supported",
					    ev, f);
			if (payload_int(P, t->elem, ev, f, &bytes) < 0)
				return P->rc;
			fc->type = RTR_BYTES;
			fc->bits = 8;
			fc->base = t->elem->base;
			if (t->kind == TY_ARRAY) {
				if (t->length > MAX_ARRAY_LEN)
					return perr(P, t->off, -ENOTSUP,
						    "event '%s', field '%s': array too long", ev, f);
				fp->op = RTR_OP_ARRAY;
				fp->count = t->length;
				bytes = 0;
				break;
			}
			fp->op = RTR_OP_SEQ;
			bytes = 0;
			const char *ref = t->length_ref;
			if (!strncmp(ref, "event.fields.", 13))
				ref += 13;
			size_t j = 0;
			while (j < k && strcmp(st->fields[j].name, ref))
				j++;
			if (j == k)
				return perr(P, t->off, -ENOTSUP,
					    "event '%s', field '%s': the length '%s' is not an earlier field of the event",
					    ev, f, t->length_ref);
			if (plan[j].op != RTR_OP_FIXED || cp->fields[j].type != RTR_UINT)
				return perr(P, t->off, -EINVAL,
					    "event '%s', field '%s': the length '%s' is not an unsigned integer",
					    ev, f, t->length_ref);
			if (plan[j].len_slot < 0) {
				if (slots == RTR_MAX_LEN_SLOTS)
					return perr(P, t->off, -ENOTSUP, "event '%s': too many sequences", ev);
				plan[j].len_slot = (int16_t)slots++;
			}
			fp->len_from = plan[j].len_slot;
			fp->len_field = (uint32_t)j;
			break;
		case TY_STRUCT:
		case TY_VARIANT:
			return perr(P, t->off, -ENOTSUP,
				    "event '%s', field '%s': nested structures and variants are not supported",
				    ev, f);
		}
		if (fp->op == RTR_OP_ARRAY) {
			off += fp->count;
		} else if (fp->op == RTR_OP_FIXED) {
			fp->size = (uint8_t)bytes;
			off += bytes;
		} else {
			fixed = false;
		}
	}
	cp->all_fixed = fixed;
	cp->fixed_len = fixed ? (size_t)off : 0;
	*out = cp;
	return 0;
}

static int do_event(struct parser *P, const struct block *b, struct rtr_meta *m,
		    struct rtr_event_class *ec)
{
	const struct entry *e;
	uint64_t v = 0;
	int64_t s = 0;
	if (!(e = find_entry(b->ents, b->n, "name")))
		return perr(P, b->off, -EINVAL, "event without a name");
	if (attr_name(P, e, &ec->name) < 0)
		return P->rc;
	if (!(e = find_entry(b->ents, b->n, "id")))
		return perr(P, b->off, -EINVAL, "event '%s' has no id", ec->name);
	if (attr_uint(P, e, UINT32_MAX, &v) < 0)
		return P->rc;
	ec->id = (uint32_t)v;
	if ((e = find_entry(b->ents, b->n, "stream_id"))) {
		if (attr_uint(P, e, UINT32_MAX, &v) < 0)
			return P->rc;
		ec->stream_id = (uint32_t)v;
	} else if (m->nr_streams == 1) {
		ec->stream_id = m->streams[0].id;
	} else {
		return perr(P, b->off, -EINVAL, "event '%s' has no stream_id", ec->name);
	}
	size_t k = 0;
	while (k < m->nr_streams && m->streams[k].id != ec->stream_id)
		k++;
	if (k == m->nr_streams)
		return perr(P, e ? e->off : b->off, -EINVAL,
			    "event '%s': stream %u is not declared", ec->name, ec->stream_id);
	ec->loglevel = -1;
	if ((e = find_entry(b->ents, b->n, "loglevel"))) {
		if (attr_int(P, e, INT32_MIN, INT32_MAX, &s) < 0)
			return P->rc;
		ec->loglevel = (int)s;
	}
	if (check_empty(P, find_entry(b->ents, b->n, "context")) < 0)
		return P->rc;
	const struct ty *st = NULL;
	if ((e = find_entry(b->ents, b->n, "fields"))) {
		if (e->vk != V_TYPE || e->ty->kind != TY_STRUCT)
			return perr(P, e->off, -EINVAL, "event '%s': fields must be a structure", ec->name);
		st = e->ty;
	}
	struct rtr_class_plan *cp = NULL;
	if (compile_fields(P, ec->name, st, &cp) < 0)
		return P->rc;
	ec->nr_fields = cp->nr_fields;
	ec->fields = cp->fields;
	return 0;
}

static int cmp_class(const void *a, const void *b)
{
	const struct rtr_event_class *x = a, *y = b;
	if (x->stream_id != y->stream_id)
		return x->stream_id < y->stream_id ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* An event class and where it was declared. */
struct decl_ref {
	const struct rtr_event_class *cls;
	size_t off;
};

static int cmp_ref(const void *a, const void *b)
{
	const struct decl_ref *x = a, *y = b;
	int c = cmp_class(x->cls, y->cls);
	return c ? c : x->off < y->off ? -1 : x->off > y->off;
}

static int build(struct parser *P, struct rtr_meta *m)
{
	size_t nstreams = 0, nevents = 0;
	const struct block *trace = NULL, *clock = NULL;
	for (size_t k = 0; k < P->nblk; k++) {
		const struct block *b = &P->blocks[k];
		if (b->kind == B_TRACE) {
			if (trace)
				return perr(P, b->off, -EINVAL, "more than one trace block");
			trace = b;
		} else if (b->kind == B_CLOCK && !clock) {
			clock = b; /* one clock: ringtrace writes one */
		}
		nstreams += b->kind == B_STREAM;
		nevents += b->kind == B_EVENT;
	}
	if (!trace)
		return perr(P, P->len, -EINVAL, "no trace block");
	if (do_trace(P, trace, m) < 0)
		return P->rc;
	m->freq = 1000000000u;
	if (clock && do_clock(P, clock, m) < 0)
		return P->rc;

	m->streams = arena_alloc(P->a, (nstreams ? nstreams : 1) * sizeof(*m->streams));
	m->classes = arena_alloc(P->a, (nevents ? nevents : 1) * sizeof(*m->classes));
	if (!m->streams || !m->classes)
		return oom(P);
	size_t *ev_off = calloc(nevents ? nevents : 1, sizeof(size_t));
	if (!ev_off)
		return oom(P);
	for (size_t k = 0; k < P->nblk; k++) {
		const struct block *b = &P->blocks[k];
		if (b->kind != B_STREAM)
			continue;
		struct rtr_stream_class *sc = &m->streams[m->nr_streams];
		if (do_stream(P, b, sc) < 0)
			goto out;
		for (size_t j = 0; j < m->nr_streams; j++)
			if (m->streams[j].id == sc->id) {
				perr(P, b->off, -EINVAL, "stream id %u declared twice", sc->id);
				goto out;
			}
		m->nr_streams++;
	}
	for (size_t k = 0; k < P->nblk; k++) {
		const struct block *b = &P->blocks[k];
		if (b->kind != B_EVENT)
			continue;
		if (do_event(P, b, m, &m->classes[m->nr_classes]) < 0)
			goto out;
		ev_off[m->nr_classes] = b->off;
		m->nr_classes++;
	}
	/* Duplicate ids: sort the declarations, report the later one. */
	struct decl_ref *refs = calloc(m->nr_classes ? m->nr_classes : 1, sizeof(*refs));
	if (!refs) {
		oom(P);
		goto out;
	}
	for (size_t k = 0; k < m->nr_classes; k++)
		refs[k] = (struct decl_ref){ &m->classes[k], ev_off[k] };
	qsort(refs, m->nr_classes, sizeof(*refs), cmp_ref);
	for (size_t k = 1; k < m->nr_classes; k++) {
		const struct rtr_event_class *a = refs[k - 1].cls, *b = refs[k].cls;
		if (a->stream_id == b->stream_id && a->id == b->id) {
			perr(P, refs[k].off, -EINVAL,
			     "event '%s': id %u of stream %u is already used by '%s'",
			     b->name, b->id, b->stream_id, a->name);
			break;
		}
	}
	free(refs);
	if (P->rc)
		goto out;
	qsort(m->classes, m->nr_classes, sizeof(*m->classes), cmp_class);
	/* Per stream class: its range of classes and a direct table. */
	for (size_t s = 0; s < m->nr_streams; s++) {
		struct rtr_stream_class *sc = &m->streams[s];
		size_t k = 0;
		while (k < m->nr_classes && m->classes[k].stream_id != sc->id)
			k++;
		sc->first = &m->classes[k];
		while (k + sc->count < m->nr_classes && m->classes[k + sc->count].stream_id == sc->id)
			sc->count++;
		if (!sc->count || sc->first[sc->count - 1].id >= BY_ID_TABLE_MAX)
			continue;
		sc->by_id_len = sc->first[sc->count - 1].id + 1;
		sc->by_id = arena_alloc(P->a, sc->by_id_len * sizeof(*sc->by_id));
		if (!sc->by_id) {
			oom(P);
			goto out;
		}
		for (size_t j = 0; j < sc->count; j++)
			sc->by_id[sc->first[j].id] = &sc->first[j];
	}
out:
	free(ev_off);
	return P->rc;
}

/* ------------------------------------------------------------------ */

int rtr_meta_parse(const char *path, const char *src, size_t len, struct rtr_meta *m,
		   char *err, size_t errlen)
{
	memset(m, 0, sizeof(*m));
	struct parser P = { .path = path, .src = src, .len = len, .err = err, .errlen = errlen };
	m->arena = P.a = calloc(1, sizeof(*P.a));
	if (!P.a) {
		if (err && errlen)
			snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	static const char sig[] = "/* CTF 1.8";
	if (len >= 4 && (uint8_t)src[0] == 0x57 && (uint8_t)src[1] == 0x1d &&
	    (uint8_t)src[2] == 0xd1 && (uint8_t)src[3] == 0x75)
		return perr(&P, 0, -ENOTSUP, "packetized metadata is not supported");
	if (len < sizeof(sig) - 1 || memcmp(src, sig, sizeof(sig) - 1))
		return perr(&P, 0, -EINVAL,
			    "not CTF 1.8 metadata (it must begin with \"/* CTF 1.8 */\")");
	if (tokenize(&P) == 0 && parse_top(&P) == 0)
		build(&P, m);
	free(P.toks);
	return P.rc;
}

void rtr_meta_free(struct rtr_meta *m)
{
	arena_free(m->arena);
	memset(m, 0, sizeof(*m));
}
