/*
 * tsdl_lexer.c - TSDL tokens (identifiers, integers, string literals,
 * punctuation; comments and white space skipped), the arena the parser
 * allocates from, and error reporting with line, column and byte offset.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/array.h"
#include "../common/hex.h"
#include "tsdl.h"


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
void *tsdl_arena_alloc(struct rtr_arena *a, size_t size)
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

char *tsdl_arena_strndup(struct rtr_arena *a, const char *s, size_t n)
{
	char *p = tsdl_arena_alloc(a, n + 1);
	if (p) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

/* Make room for one more element in an arena-backed array. */
int tsdl_arena_grow(struct rtr_arena *a, void *arrp, size_t *cap, size_t n,
		      size_t elem)
{
	void **arr = arrp;
	if (n < *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 8;
	void *p = tsdl_arena_alloc(a, nc * elem);
	if (!p)
		return -ENOMEM;
	if (n)
		memcpy(p, *arr, n * elem);
	*arr = p;
	*cap = nc;
	return 0;
}

void tsdl_arena_free(struct rtr_arena *a)
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
__attribute__((format(printf, 4, 5)))
int tsdl_perr(struct parser *P, size_t off, int code, const char *fmt, ...)
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

int tsdl_oom(struct parser *P)
{
	return tsdl_perr(P, 0, -ENOMEM, "out of memory");
}

static bool is_ident_start(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_ident_char(int c)
{
	return is_ident_start(c) || (c >= '0' && c <= '9');
}

static int push_tok(struct parser *P, const struct tok *t)
{
	if (RT_ARRAY_GROW(P->toks, P->tokcap, P->ntok + 1, 1024) < 0)
		return tsdl_oom(P);
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
		int d = rt_hex_digit((unsigned char)s[j]);
		if (d < 0 || (unsigned)d >= base)
			break;
		if (v > (UINT64_MAX - (unsigned)d) / base)
			return tsdl_perr(P, start, -EINVAL, "integer literal too large");
		v = v * base + (unsigned)d;
	}
	if (base == 16 && digits == 0)
		return tsdl_perr(P, start, -EINVAL, "bad hexadecimal literal");
	while (j < P->len && (s[j] == 'u' || s[j] == 'U' || s[j] == 'l' || s[j] == 'L'))
		j++;
	if (j < P->len && is_ident_char((unsigned char)s[j]))
		return tsdl_perr(P, start, -EINVAL, "bad integer literal");
	*k = j;
	*out = v;
	return 0;
}

int tsdl_tokenize(struct parser *P)
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
				return tsdl_perr(P, k, -EINVAL, "unterminated comment");
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
				return tsdl_perr(P, k, -EINVAL, "unterminated string literal");
			t.kind = TK_STRING;
			t.len = (uint32_t)(j + 1 - k);
			k = j + 1;
		} else if (c == '\'') {
			/* A character literal: an integer ('a', '\n', '\x41', '\0'). */
			size_t j = k + 1;
			uint64_t v = j < n ? (unsigned char)s[j] : 0;
			if (j < n && s[j] == '\\' && j + 1 < n) {
				switch (s[j + 1]) {
				case 'n': v = '\n'; break;
				case 't': v = '\t'; break;
				case 'r': v = '\r'; break;
				case '0': v = 0; break;
				default: v = (unsigned char)s[j + 1]; break;
				}
				j++;
				if (s[j] == 'x') {
					v = 0;
					while (j + 1 < n && rt_hex_digit((unsigned char)s[j + 1]) >= 0)
						v = v * 16 + (uint64_t)rt_hex_digit((unsigned char)s[++j]);
				}
			}
			j++;
			if (j >= n || s[j] != '\'')
				return tsdl_perr(P, k, -EINVAL, "unterminated character literal");
			t.kind = TK_INT;
			t.val = v & 0xff;
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
		} else if (strchr("{}[]()<>;,=.:-+", c) && c) {
			t.kind = TK_PUNCT;
			t.punct = (char)c;
			t.len = 1;
			k++;
		} else if (c >= 0x20 && c < 0x7f) {
			return tsdl_perr(P, k, -EINVAL, "unexpected character '%c'", c);
		} else {
			return tsdl_perr(P, k, -EINVAL, "unexpected byte 0x%02x", c);
		}
		if (t.len > UINT32_MAX / 2)
			return tsdl_perr(P, t.off, -EINVAL, "token too long");
		if (push_tok(P, &t) < 0)
			return P->rc;
	}
	struct tok eof = { .kind = TK_EOF, .off = n };
	return push_tok(P, &eof);
}

/* ------------------------------------------------------------------ */
/* Token helpers                                                        */

const struct tok *tsdl_cur(const struct parser *P)
{
	return &P->toks[P->i];
}

const struct tok *tsdl_peek(const struct parser *P, size_t ahead)
{
	size_t j = P->i + ahead;
	return &P->toks[j < P->ntok ? j : P->ntok - 1];
}

void tsdl_advance(struct parser *P)
{
	if (P->i + 1 < P->ntok)
		P->i++;
}

bool tsdl_tok_is_punct(const struct tok *t, char c)
{
	return t->kind == TK_PUNCT && t->punct == c;
}

bool tsdl_tok_is_ident(const struct parser *P, const struct tok *t, const char *word)
{
	size_t n = strlen(word);
	return t->kind == TK_IDENT && t->len == n && memcmp(P->src + t->off, word, n) == 0;
}

/* Describe a token for a message: 'xyz', end of file, ... */
const char *tsdl_tok_desc(const struct parser *P, const struct tok *t, char *buf,
			    size_t size)
{
	if (t->kind == TK_EOF)
		return "end of file";
	int n = (int)(t->len > 40 ? 40 : t->len);
	snprintf(buf, size, "'%.*s%s'", n, P->src + t->off, t->len > 40 ? "..." : "");
	return buf;
}

int tsdl_expect_punct(struct parser *P, char c, const char *what)
{
	const struct tok *t = tsdl_cur(P);
	if (tsdl_tok_is_punct(t, c)) {
		tsdl_advance(P);
		return 0;
	}
	char d[64];
	const char *shown = c == P_ASSIGN_TYPE ? ":=" : (char[2]){ c, 0 };
	return tsdl_perr(P, t->off, -EINVAL, "expected '%s' %s, found %s", shown, what,
		    tsdl_tok_desc(P, t, d, sizeof(d)));
}

const char *tsdl_tok_ident(struct parser *P, const struct tok *t)
{
	const char *s = tsdl_arena_strndup(P->a, P->src + t->off, t->len);
	if (!s)
		tsdl_oom(P);
	return s;
}

/* The value of a string literal token, escapes resolved. */
const char *tsdl_tok_string(struct parser *P, const struct tok *t)
{
	const char *s = P->src + t->off + 1;
	size_t n = t->len - 2;
	char *out = tsdl_arena_alloc(P->a, n + 1);
	if (!out) {
		tsdl_oom(P);
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
			while (digits < 2 && k + 1 < n && rt_hex_digit((unsigned char)s[k + 1]) >= 0) {
				v = v * 16 + rt_hex_digit((unsigned char)s[++k]);
				digits++;
			}
			if (!digits) {
				tsdl_perr(P, t->off + 1 + k, -EINVAL, "bad \\x escape");
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
			tsdl_perr(P, t->off + 1 + k, -EINVAL, "bad character escape in string literal");
			return NULL;
		}
		out[o++] = (char)v;
	}
	out[o] = '\0';
	return out;
}

/* IDENT (sep IDENT)* from the current token (sep '.': dotted names, ' ':
 * consecutive identifiers), joined with `sep`; the tokens are consumed. */
const char *tsdl_join_idents(struct parser *P, char sep)
{
	size_t first = P->i, len = 0, n = 0;
	for (;;) {
		len += P->toks[P->i].len + 1;
		n++;
		tsdl_advance(P);
		if (sep == '.' && tsdl_tok_is_punct(tsdl_cur(P), '.') && tsdl_peek(P, 1)->kind == TK_IDENT)
			tsdl_advance(P);
		else if (sep != ' ' || tsdl_cur(P)->kind != TK_IDENT)
			break;
	}
	char *s = tsdl_arena_alloc(P->a, len);
	if (!s) {
		tsdl_oom(P);
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
const char *tsdl_parse_dotted(struct parser *P)
{
	const struct tok *t = tsdl_cur(P);
	if (t->kind != TK_IDENT) {
		char d[64];
		tsdl_perr(P, t->off, -EINVAL, "expected an identifier, found %s",
		     tsdl_tok_desc(P, t, d, sizeof(d)));
		return NULL;
	}
	return tsdl_join_idents(P, '.');
}

/* ------------------------------------------------------------------ */
struct rtr_arena *tsdl_arena_new(void)
{
	return calloc(1, sizeof(struct rtr_arena));
}
