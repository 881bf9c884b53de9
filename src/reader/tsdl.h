/*
 * tsdl.h - internal to rt_reader: the TSDL (CTF 1.8 metadata) syntax tree
 * and the parser that builds it (tsdl_lexer.c: arena, tokens, errors;
 * tsdl_parser.c: types, declarations, typealias/typedef, top-level
 * blocks). decode_plan.c gives the tree its meaning.
 *
 * Everything the parser allocates lives in an arena freed at once.
 * Single-threaded: one parser per metadata.
 */
#ifndef RINGTRACE_CTF_TSDL_H
#define RINGTRACE_CTF_TSDL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TSDL_MAX_DEPTH 32	/* nested types */

struct rtr_arena;

/* Zeroed memory aligned to 16 bytes, or NULL. */
void *tsdl_arena_alloc(struct rtr_arena *a, size_t size);
char *tsdl_arena_strndup(struct rtr_arena *a, const char *s, size_t n);
/* Make room for one more element in an arena-backed array: 0, -ENOMEM. */
int tsdl_arena_grow(struct rtr_arena *a, void *arrp, size_t *cap, size_t n, size_t elem);
struct rtr_arena *tsdl_arena_new(void);
void tsdl_arena_free(struct rtr_arena *a);

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
/* Report the first error ("path: line L, column C (byte offset O): ...");
 * returns its code (the first one if several). */
__attribute__((format(printf, 4, 5)))
int tsdl_perr(struct parser *P, size_t off, int code, const char *fmt, ...);
int tsdl_oom(struct parser *P);

/* Lexer (tsdl_lexer.c). */
int tsdl_tokenize(struct parser *P);
const struct tok *tsdl_cur(const struct parser *P);
const struct tok *tsdl_peek(const struct parser *P, size_t ahead);
void tsdl_advance(struct parser *P);
bool tsdl_tok_is_punct(const struct tok *t, char c);
bool tsdl_tok_is_ident(const struct parser *P, const struct tok *t, const char *word);
const char *tsdl_tok_desc(const struct parser *P, const struct tok *t, char *buf, size_t len);
int tsdl_expect_punct(struct parser *P, char c, const char *what);
const char *tsdl_tok_ident(struct parser *P, const struct tok *t);
const char *tsdl_tok_string(struct parser *P, const struct tok *t);
const char *tsdl_join_idents(struct parser *P, char sep);
const char *tsdl_parse_dotted(struct parser *P);

/* Parser (tsdl_parser.c): every top-level block into P->blocks. */
int tsdl_parse_top(struct parser *P);
const struct entry *tsdl_find_entry(const struct entry *ents, size_t n, const char *key);
bool tsdl_ident_is(const struct entry *e, const char *word);
int tsdl_attr_uint(struct parser *P, const struct entry *e, uint64_t max, uint64_t *out);
int tsdl_attr_int(struct parser *P, const struct entry *e, int64_t min, int64_t max, int64_t *out);
int tsdl_attr_bool(struct parser *P, const struct entry *e, bool *out);
int tsdl_attr_name(struct parser *P, const struct entry *e, const char **out);

#endif /* RINGTRACE_CTF_TSDL_H */
