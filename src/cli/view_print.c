/*
 * view_print.c - one event as a line of text or a JSON object
 * (docs/viewing.md describes both), written into the fmt buffer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis/analysis.h"
#include "view.h"

#define COLOR_NAME "\x1b[1;35m"
#define COLOR_FIELD "\x1b[36m"
#define COLOR_TIME "\x1b[33m"
#define COLOR_OFF "\x1b[0m"

#define put_lit(o, s) fmt_str((o), (s), strlen(s))

/* Payload values decoded per rtr_fields call. */
#define FIELD_BATCH 16
/* An rt_printf message: at most this many arguments (RT_MAX_FIELDS - 1)
 * and bytes. */
#define RTR_PRINTF_MAX_ARGS 31
#define RTR_PRINTF_MAX_MSG 4096

/* Values nest at most this deep in the output (deeper: "..."). */
#define MAX_DEPTH 32

static void put_value(struct fmt_out *o, const struct rtr_value *v, int bytes_base, bool json,
		      unsigned depth);

/* An integer as the text output shows it: in its base (two's complement
 * bits for negative values in base 2, 8 or 16). */
static inline char *put_int_bits(char *p, uint64_t u, bool is_signed, unsigned bits, int base,
				 bool json)
{
	if (is_signed && (json || base == 10 || !base))
		return fmt_put_i64(p, (int64_t)u);
	if (is_signed && bits && bits < 64)
		u &= ((uint64_t)1 << bits) - 1;
	return json || base == 10 ? fmt_put_u64(p, u) : fmt_put_base(p, u, base);
}

static inline char *put_int_at(char *p, const struct rtr_value *v, bool is_signed, bool json)
{
	return put_int_bits(p, v->u, is_signed, v->bits, v->base, json);
}

/* Room for the longest integer put_int_at writes (0b and 64 digits). */
#define INT_ROOM 72

static void put_int(struct fmt_out *o, const struct rtr_value *v, bool is_signed, bool json)
{
	fmt_commit(o, put_int_at(fmt_reserve(o, INT_ROOM), v, is_signed, json));
}

/* Struct members (names) or array elements: { a = 1 } [ [0] = 1 ] in
 * text, {"a":1} [1] in JSON. */
static void put_compound(struct fmt_out *o, const struct rtr_value *v, bool json,
			 unsigned depth)
{
	bool is_struct = v->type == RTR_STRUCT;
	uint32_t n = rtr_value_count(v);
	put_lit(o, is_struct ? "{" : "[");
	if (depth >= MAX_DEPTH) {
		put_lit(o, json ? "" : " ... ");
		put_lit(o, is_struct ? "}" : "]");
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct rtr_value c;
		const char *name = NULL;
		int r = rtr_value_child(v, i, &c, &name);
		if (json) {
			if (i)
				fmt_putc(o, ',');
			if (is_struct) {
				fmt_json_string(o, name ? name : "", name ? strlen(name) : 0);
				fmt_putc(o, ':');
			}
		} else {
			put_lit(o, i ? ", " : " ");
			if (is_struct) {
				fmt_cstr(o, name ? name : "");
			} else {
				fmt_putc(o, '[');
				fmt_u64(o, i);
				fmt_putc(o, ']');
			}
			put_lit(o, " = ");
		}
		if (r == 0)
			put_value(o, &c, 16, json, depth + 1);
		else
			put_lit(o, json ? "null" : "<undecodable>");
	}
	if (!json)
		fmt_putc(o, ' ');	/* also "[ ]" when empty, like babeltrace2 */
	put_lit(o, is_struct ? "}" : "]");
}

/* One value: text (babeltrace-like) or JSON. bytes_base: the base of the
 * elements of an RTR_BYTES value. */
static void put_value(struct fmt_out *o, const struct rtr_value *v, int bytes_base, bool json,
		      unsigned depth)
{
	switch (v->type) {
	case RTR_INT:
		put_int(o, v, true, json);
		return;
	case RTR_UINT:
		put_int(o, v, false, json);
		return;
	case RTR_FLOAT:
	case RTR_DOUBLE:
		fmt_commit(o, fmt_put_double(fmt_reserve(o, 40), v->d, json));
		return;
	case RTR_BOOL:
		put_lit(o, v->b ? "true" : "false");
		return;
	case RTR_STRING:
		if (json)
			fmt_json_string(o, v->s.p, v->s.len);
		else
			fmt_text_string(o, v->s.p, v->s.len);
		return;
	case RTR_ENUM:
		if (json) {
			put_lit(o, "{\"value\":");
			put_int(o, v, v->is_signed, true);
			put_lit(o, ",\"label\":");
			if (v->label)
				fmt_json_string(o, v->label, strlen(v->label));
			else
				put_lit(o, "null");
			fmt_putc(o, '}');
		} else {
			put_lit(o, "( ");
			if (v->label)
				fmt_text_string(o, v->label, strlen(v->label));
			else
				put_lit(o, "<unknown>");
			put_lit(o, " : container = ");
			put_int(o, v, v->is_signed, false);
			put_lit(o, " )");
		}
		return;
	case RTR_STRUCT:
	case RTR_ARRAY:
		put_compound(o, v, json, depth);
		return;
	case RTR_BYTES:
		fmt_bytes(o, v->bytes.p, v->bytes.len, bytes_base, json);
		return;
	}
}

/* After the ip context's value, its symbol when known: " <main+0x1c>"
 * (text) or ,"ip_symbol":"main+0x1c" (JSON). */
static void put_symbol(struct view_printer *pr, const struct rtr_event *ev, uint64_t ip)
{
	char sym[512];
	if (!ra_symbols_resolve(pr->syms, ra_event_vpid(pr->t, ev), ip, sym, sizeof(sym)))
		return;
	if (pr->json) {
		put_lit(pr->out, ",\"ip_symbol\":");
		fmt_json_string(pr->out, sym, strlen(sym));
	} else {
		put_lit(pr->out, " <");
		fmt_str(pr->out, sym, strlen(sym));
		put_lit(pr->out, ">");
	}
}

/* The stream event context and event context fields: " { a = 1 }" (text)
 * or ,"context":{"a":1} (JSON, also when empty). False when a field did
 * not decode. */
static bool put_context(struct view_printer *pr, const struct rtr_event *ev)
{
	static const enum rtr_scope scopes[] = { RTR_SCOPE_STREAM_EVENT_CONTEXT,
						 RTR_SCOPE_EVENT_CONTEXT };
	struct fmt_out *o = pr->out;
	bool json = pr->json, any = false, ok = true;
	for (int s = 0; s < 2; s++) {
		uint32_t n = rtr_scope_count(ev, scopes[s]);
		for (uint32_t i = 0; i < n; i++) {
			struct rtr_value v;
			const char *name = NULL;
			int r = rtr_scope_field(ev, scopes[s], i, &v, &name);
			if (!name)
				name = "";
			if (json) {
				put_lit(o, any ? "," : ",\"context\":{");
				fmt_json_string(o, name, strlen(name));
				fmt_putc(o, ':');
			} else {
				put_lit(o, any ? ", " : " { ");
				if (pr->color)
					put_lit(o, COLOR_FIELD);
				fmt_cstr(o, name);
				if (pr->color)
					put_lit(o, COLOR_OFF);
				put_lit(o, " = ");
			}
			any = true;
			ok &= r == 0;
			if (r == 0)
				put_value(o, &v, 16, json, 1);
			else
				put_lit(o, json ? "null" : "<undecodable>");
			if (r == 0 && pr->syms && v.type == RTR_UINT && !strcmp(name, "ip"))
				put_symbol(pr, ev, v.u);
		}
	}
	if (json)
		put_lit(o, any ? "}" : ",\"context\":{}");
	else if (any)
		put_lit(o, ev->cls->nr_fields ? " }," : " }");
	return ok;
}

/*
 * The constant text of an event class, built once: piece 0 is the name
 * ("types:ints:" / ,"name":"types:ints"), piece 1 opens the payload
 * (" {" / ,"fields":{), pieces 2..n+1 are the field labels (" s8 = " /
 * "s8":), piece n+2 closes the payload (and the line, in text). The
 * contexts go between pieces 0 and 1 (text) or after the payload (JSON).
 */
struct view_layout {
	char *text;		/* owned; NULL until built */
	struct {
		uint32_t off, len;
	} *piece;		/* owned; nr_fields + 3 entries */
	bool has_context;	/* events of the class have context fields (the
				 * scopes' layouts are per class) */
	bool printf;		/* an rt_printf event: its first field, the
				 * format, is shown as the message `msg` */
	bool ctx_cached;	/* its context text is cached (ctx_cache) */
	uint8_t ctx_scopes;	/* 1: the stream event context has fields,
				 * 2: the event context has */
	struct rtr_int_place *ints;	/* owned: when every payload field is
					 * an integer at a fixed place (and
					 * every label a short piece), where */
	struct ctx_cache *ctx;	/* owned; NULL until the first event */
};

/*
 * The context text of a class's recent events, keyed on the bytes of
 * their two context scopes (rtr_scope_bytes: the values come from them
 * alone, the layout is the class's): the contexts ringtrace and LTTng
 * record (vpid, vtid, procname) repeat from one event of a thread to the
 * next, so most events copy their text instead of decoding and
 * formatting it. A few entries, for the threads that take turns on a
 * CPU; replaced in turn.
 */
#define CTX_WAYS 4
/* Larger keys or texts are not cached. */
#define CTX_MAX_KEY 256
#define CTX_MAX_TEXT 2048

struct ctx_entry {
	char *mem;		/* owned: the key bytes, then the text */
	uint32_t cap;
	uint16_t len0, len1;	/* the two scopes' byte counts (the key) */
	uint32_t text_len;	/* 0: unused */
};

struct ctx_cache {
	struct ctx_entry e[CTX_WAYS];
	uint32_t next;		/* the entry to replace next */
	uint32_t last;		/* the entry that matched or was filled last */
};

/* Whether events of class c are rt_printf's: the first payload field is
 * the format (ctf_metadata.h's CTF_PRINTF_FORMAT_FIELD, an enum). */
static bool printf_class(const struct rtr_event_class *c)
{
	return c->nr_fields && c->fields[0].type == RTR_ENUM && !strcmp(c->fields[0].name, "fmt");
}

struct layout_builder {
	struct fmt_out o;	/* collects the text */
	uint32_t mark;
};

static void end_piece(struct layout_builder *b, struct view_layout *l, uint32_t i)
{
	l->piece[i].off = b->mark;
	l->piece[i].len = (uint32_t)b->o.len - b->mark;
	b->mark = (uint32_t)b->o.len;
}

/* Pieces up to this long are copied in blocks (the layout text has the
 * slack fmt_put_blocks reads past the end). */
#define SHORT_PIECE (FMT_MIN_ROOM - 16)

/* Whether the field labels (pieces 2..n+1) are all short pieces. */
static bool fixed_ints(const struct view_layout *l, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (l->piece[i + 2].len > SHORT_PIECE)
			return false;
	return true;
}

/* An `ip` context field (its symbol depends on more than its bytes). */
static bool has_ip_context(const struct rtr_event *ev)
{
	static const enum rtr_scope scopes[] = { RTR_SCOPE_STREAM_EVENT_CONTEXT,
						 RTR_SCOPE_EVENT_CONTEXT };
	for (int s = 0; s < 2; s++) {
		uint32_t n = rtr_scope_count(ev, scopes[s]);
		for (uint32_t i = 0; i < n; i++) {
			struct rtr_value v;
			const char *name = NULL;
			if (rtr_scope_field(ev, scopes[s], i, &v, &name) == 0 && name &&
			    !strcmp(name, "ip"))
				return true;
		}
	}
	return false;
}

__attribute__((noinline)) static int build_layout(struct view_printer *pr,
						  struct view_layout *l,
						  const struct rtr_event *ev)
{
	const struct rtr_event_class *c = ev->cls;
	struct layout_builder b = { .mark = 0 };
	if (fmt_open(&b.o, NULL, 1024) < 0)	/* a memory buffer: it grows */
		return -ENOMEM;
	l->piece = calloc(c->nr_fields + 3, sizeof(*l->piece));
	if (!l->piece) {
		fmt_close(&b.o);
		return -ENOMEM;
	}
	if (pr->json) {
		put_lit(&b.o, ",\"name\":");
		fmt_json_string(&b.o, c->name, strlen(c->name));
		end_piece(&b, l, 0);
		put_lit(&b.o, ",\"fields\":{");
	} else {
		if (pr->color)
			put_lit(&b.o, COLOR_NAME);
		fmt_cstr(&b.o, c->name);
		if (pr->color)
			put_lit(&b.o, COLOR_OFF);
		fmt_putc(&b.o, ':');
		end_piece(&b, l, 0);
		put_lit(&b.o, c->nr_fields ? " {" : "");
	}
	end_piece(&b, l, 1);
	l->printf = printf_class(c);
	for (uint32_t i = 0; i < c->nr_fields; i++) {
		const char *name = l->printf && !i ? "msg" : c->fields[i].name;
		if (pr->json) {
			put_lit(&b.o, i ? "," : "");
			fmt_json_string(&b.o, name, strlen(name));
			fmt_putc(&b.o, ':');
		} else {
			put_lit(&b.o, i ? ", " : " ");
			if (pr->color)
				put_lit(&b.o, COLOR_FIELD);
			fmt_cstr(&b.o, name);
			if (pr->color)
				put_lit(&b.o, COLOR_OFF);
			put_lit(&b.o, " = ");
		}
		end_piece(&b, l, i + 2);
	}
	put_lit(&b.o, pr->json ? "}" : c->nr_fields ? " }\n" : "\n");
	end_piece(&b, l, c->nr_fields + 2);
	fmt_reserve(&b.o, 16);	/* slack for fmt_put_blocks (it grows the buffer) */
	if (b.o.err) {
		fmt_close(&b.o);
		free(l->piece);
		l->piece = NULL;
		return -ENOMEM;
	}
	l->text = b.o.buf;	/* kept: fmt_close is not called */
	l->ctx_scopes = (uint8_t)((rtr_scope_count(ev, RTR_SCOPE_STREAM_EVENT_CONTEXT) ? 1 : 0) |
				  (rtr_scope_count(ev, RTR_SCOPE_EVENT_CONTEXT) ? 2 : 0));
	l->has_context = l->ctx_scopes != 0;
	l->ctx_cached = l->has_context && !pr->plain && !(pr->syms && has_ip_context(ev));
	if (!pr->plain && !l->printf && c->nr_fields && fixed_ints(l, c->nr_fields) &&
	    (l->ints = calloc(c->nr_fields, sizeof(*l->ints))) != NULL &&
	    rtr_payload_ints(ev, l->ints, c->nr_fields) < 0) {
		free(l->ints);
		l->ints = NULL;
	}
	return 0;
}

/* Pieces first..last (consecutive in the text) in one copy. */
static inline void put_pieces(struct fmt_out *o, const struct view_layout *l, uint32_t first,
			      uint32_t last)
{
	uint32_t n = l->piece[last].off + l->piece[last].len - l->piece[first].off;
	const char *src = l->text + l->piece[first].off;
	if (n <= SHORT_PIECE)
		fmt_commit(o, fmt_put_blocks(fmt_reserve(o, FMT_MIN_ROOM), src, n));
	else
		fmt_str(o, src, n);
}

static inline void put_piece(struct fmt_out *o, const struct view_layout *l, uint32_t i)
{
	put_pieces(o, l, i, i);
}

int view_printer_init(struct view_printer *p, size_t nr_classes, bool json)
{
	p->layouts = calloc(nr_classes ? nr_classes : 1, sizeof(*p->layouts));
	if (!p->layouts)
		return -ENOMEM;
	p->nr_layouts = nr_classes;
	p->json = json;
	return 0;
}

void view_printer_free(struct view_printer *p)
{
	for (size_t i = 0; p->layouts && i < p->nr_layouts; i++) {
		free(p->layouts[i].text);
		free(p->layouts[i].piece);
		free(p->layouts[i].ints);
		for (int k = 0; p->layouts[i].ctx && k < CTX_WAYS; k++)
			free(p->layouts[i].ctx->e[k].mem);
		free(p->layouts[i].ctx);
	}
	if (p->scratch.buf)
		fmt_close(&p->scratch);
	free(p->layouts);
	p->layouts = NULL;
}

int view_printer_reset(struct view_printer *p, size_t nr_classes)
{
	void *l = calloc(nr_classes ? nr_classes : 1, sizeof(*p->layouts));
	if (!l)
		return -ENOMEM;
	view_printer_free(p);
	p->layouts = l;
	p->nr_layouts = nr_classes;
	return 0;
}

/* The message of an rt_printf event (rtr_printf: its format, the first
 * field's label, applied to the fields after it), as a string value. */
static void put_message(struct fmt_out *o, const struct rtr_event *ev, bool json)
{
	struct rtr_value args[RTR_PRINTF_MAX_ARGS + 1];
	char msg[RTR_PRINTF_MAX_MSG];
	int n = rtr_fields(ev, 0, args, RTR_PRINTF_MAX_ARGS + 1);
	if (n < 1 || args[0].type != RTR_ENUM || !args[0].label) {
		put_lit(o, json ? "null" : "<undecodable>");
		return;
	}
	struct rtr_value v = { .type = RTR_STRING };
	v.s.p = msg;
	v.s.len = rtr_printf(args[0].label, args + 1, (size_t)n - 1, msg, sizeof(msg));
	put_value(o, &v, 10, json, 0);
}

/* put_context through the class's cache (l->ctx_cached). */
static inline bool ctx_match(const struct ctx_entry *e, const uint8_t *k0, size_t n0,
			     const uint8_t *k1, size_t n1)
{
	return e->text_len && e->len0 == n0 && e->len1 == n1 && !memcmp(e->mem, k0, n0) &&
	       (!n1 || !memcmp(e->mem + n0, k1, n1));
}

static void put_context_cached(struct view_printer *pr, struct view_layout *l,
			       const struct rtr_event *ev)
{
	static const uint8_t none[1];
	const uint8_t *k0 = none, *k1 = none;
	size_t n0 = 0, n1 = 0;
	/* Only the scopes the class has fields in (the same for each of its
	 * events): the others write no text. */
	if (((l->ctx_scopes & 1) &&
	     rtr_scope_bytes(ev, RTR_SCOPE_STREAM_EVENT_CONTEXT, &k0, &n0) < 0) ||
	    ((l->ctx_scopes & 2) && rtr_scope_bytes(ev, RTR_SCOPE_EVENT_CONTEXT, &k1, &n1) < 0) ||
	    n0 + n1 > CTX_MAX_KEY) {
		put_context(pr, ev);
		return;
	}
	if (!n0)	/* absent: NULL, which memcmp and memcpy must not see */
		k0 = none;
	if (!n1)
		k1 = none;
	struct ctx_cache *cc = l->ctx;
	if (cc) {
		/* The entry that matched last first: a thread's events come
		 * in runs. */
		const struct ctx_entry *e = &cc->e[cc->last];
		if (ctx_match(e, k0, n0, k1, n1)) {
			fmt_str(pr->out, e->mem + n0 + n1, e->text_len);
			return;
		}
		for (uint32_t w = 0; w < CTX_WAYS; w++) {
			e = &cc->e[w];
			if (w != cc->last && ctx_match(e, k0, n0, k1, n1)) {
				cc->last = w;
				fmt_str(pr->out, e->mem + n0 + n1, e->text_len);
				return;
			}
		}
	} else if ((cc = l->ctx = calloc(1, sizeof(*cc))) == NULL) {
		put_context(pr, ev);	/* without the cache */
		return;
	}
	/* A miss: the text into the scratch buffer, then the entry and out. */
	struct fmt_out *out = pr->out;
	if (!pr->scratch.buf && fmt_open(&pr->scratch, NULL, CTX_MAX_TEXT) < 0) {
		put_context(pr, ev);
		return;
	}
	pr->scratch.len = 0;
	pr->out = &pr->scratch;
	bool ok = put_context(pr, ev);
	pr->out = out;
	size_t tl = pr->scratch.len;
	fmt_str(out, pr->scratch.buf, tl);
	struct ctx_entry *e = &cc->e[cc->next];
	if (!ok || pr->scratch.err || !tl || tl > CTX_MAX_TEXT)
		return;
	if (e->cap < n0 + n1 + tl) {
		char *m = realloc(e->mem, CTX_MAX_KEY + CTX_MAX_TEXT);
		if (!m)
			return;
		e->mem = m;
		e->cap = CTX_MAX_KEY + CTX_MAX_TEXT;
	}
	memcpy(e->mem, k0, n0);
	memcpy(e->mem + n0, k1, n1);
	memcpy(e->mem + n0 + n1, pr->scratch.buf, tl);
	e->len0 = (uint16_t)n0;
	e->len1 = (uint16_t)n1;
	e->text_len = (uint32_t)tl;
	cc->last = cc->next;
	cc->next = (cc->next + 1) % CTX_WAYS;
}

/* Event name and payload, from the class layout. */
static void put_event(struct view_printer *pr, const struct view_event *e)
{
	struct fmt_out *o = pr->out;
	const struct rtr_event *ev = e->ev;
	const struct rtr_event_class *c = ev->cls;
	struct view_layout *l = &pr->layouts[e->gclass];
	if (!l->text && build_layout(pr, l, ev) < 0) {
		if (!o->err)
			o->err = -ENOMEM;
		return;
	}
	if (!pr->json && l->has_context) {
		put_piece(o, l, 0);
		if (l->ctx_cached)
			put_context_cached(pr, l, ev);
		else
			put_context(pr, ev);
		put_piece(o, l, 1);
	} else {	/* pieces 0 and 1 are contiguous: one copy */
		put_pieces(o, l, 0, 1);
	}
	if (l->ints) {	/* integers at fixed places: straight from the bytes */
		for (uint32_t i = 0; i < c->nr_fields; i++) {
			const struct rtr_int_place *f = &l->ints[i];
			char *p = fmt_reserve(o, FMT_MIN_ROOM + INT_ROOM);
			p = fmt_put_blocks(p, l->text + l->piece[i + 2].off, l->piece[i + 2].len);
			fmt_commit(o, put_int_bits(p, rtr_fixed_int(ev->payload, f), f->is_signed,
						   8u * f->bytes, f->base, pr->json));
		}
		goto end;
	}
	struct rtr_value vals[FIELD_BATCH];
	int got = 0;
	for (uint32_t i = 0; i < c->nr_fields; i++) {
		uint32_t b = i % FIELD_BATCH;
		if (!b)	/* the next batch of values (-EINVAL: none decodes) */
			got = rtr_fields(ev, i, vals, FIELD_BATCH);
		const struct rtr_value *v = &vals[b];
		bool ok = (int)b < got;
		uint32_t n = l->piece[i + 2].len;
		if (l->printf && !i) {
			put_piece(o, l, i + 2);
			put_message(o, ev, pr->json);
			continue;
		}
		if (ok && (v->type == RTR_INT || v->type == RTR_UINT) && n <= SHORT_PIECE) {
			/* The common case in one reservation: label and integer. */
			char *p = fmt_reserve(o, FMT_MIN_ROOM + INT_ROOM);
			p = fmt_put_blocks(p, l->text + l->piece[i + 2].off, n);
			fmt_commit(o, put_int_at(p, v, v->type == RTR_INT, pr->json));
			continue;
		}
		put_piece(o, l, i + 2);
		if (ok)
			put_value(o, v, c->fields[i].base, pr->json, 0);
		else
			put_lit(o, pr->json ? "null" : "<undecodable>");
	}
end:
	put_piece(o, l, c->nr_fields + 2);
	if (!pr->json)
		return;
	if (l->ctx_cached)
		put_context_cached(pr, l, ev);
	else if (l->has_context)
		put_context(pr, ev);
	else
		put_lit(o, ",\"context\":{}");
}

static void print_text(struct view_printer *pr, const struct view_event *e)
{
	struct fmt_out *o = pr->out;
	const struct rtr_event *ev = e->ev;
	char *p = fmt_reserve(o, FMT_MIN_ROOM);
	if (pr->color) {
		memcpy(p, COLOR_TIME, sizeof(COLOR_TIME) - 1);
		p += sizeof(COLOR_TIME) - 1;
	}
	*p++ = '[';
	switch (pr->clock_mode) {
	case VIEW_CLOCK_TIME:
	case VIEW_CLOCK_DATE:
		p = fmt_put_clock(p, &pr->clock, ev->ns);
		break;
	case VIEW_CLOCK_SECONDS:
		p = fmt_put_seconds(p, ev->ns);
		break;
	case VIEW_CLOCK_CYCLES:
		p = fmt_put_u64(p, ev->ticks);
		break;
	}
	*p++ = ']';
	if (pr->color) {
		memcpy(p, COLOR_OFF, sizeof(COLOR_OFF) - 1);
		p += sizeof(COLOR_OFF) - 1;
	}
	if (pr->delta) {
		memcpy(p, " (+", 3);
		p += 3;
		if (pr->have_last) {
			p = fmt_put_seconds(p, ev->ns - pr->last_ns);
		} else {
			memcpy(p, "?.?????????", 11);
			p += 11;
		}
		*p++ = ')';
	}
	pr->have_last = true;
	pr->last_ns = ev->ns;
	if (pr->with_source) {
		memcpy(p, " trace ", 7);
		p = fmt_put_u64(p + 7, e->source);
	}
	if (ev->cpu != UINT32_MAX) {
		memcpy(p, " cpu ", 5);
		p = fmt_put_u64(p + 5, ev->cpu);
	}
	*p++ = ' ';
	fmt_commit(o, p);
	put_event(pr, e);	/* the class's last piece ends the line */
}

static void print_json(struct view_printer *pr, const struct view_event *e)
{
	struct fmt_out *o = pr->out;
	const struct rtr_event *ev = e->ev;
	char *p = fmt_reserve(o, FMT_MIN_ROOM);
	memcpy(p, "{\"ts\":", 6);
	p += 6;
	if (ev->ns >= 1000000000) {
		/* The seconds' digits change once a second: cache them. */
		int64_t sec = ev->ns / 1000000000;
		if (sec != pr->ts_sec) {
			pr->ts_sec = sec;
			pr->ts_sec_len = (uint8_t)(fmt_put_u64(pr->ts_sec_text, (uint64_t)sec) -
						   pr->ts_sec_text);
		}
		memcpy(p, pr->ts_sec_text, pr->ts_sec_len);
		p = fmt_put_9digits(p + pr->ts_sec_len, (uint32_t)(ev->ns % 1000000000));
	} else {
		p = fmt_put_i64(p, ev->ns);
	}
	if (pr->with_source) {
		memcpy(p, ",\"trace\":", 9);
		p = fmt_put_u64(p + 9, e->source);
	}
	if (ev->cpu != UINT32_MAX) {
		memcpy(p, ",\"cpu\":", 7);
		p = fmt_put_u64(p + 7, ev->cpu);
	}
	fmt_commit(o, p);
	put_event(pr, e);
	put_lit(o, "}\n");
}

void view_print(struct view_printer *pr, const struct view_event *e)
{
	if (pr->json)
		print_json(pr, e);
	else
		print_text(pr, e);
}
