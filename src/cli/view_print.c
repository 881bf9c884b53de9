/*
 * view_print.c - one event as a line of text or a JSON object
 * (docs/viewing.md describes both), written into the fmt buffer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "view.h"

#define COLOR_NAME "\x1b[1;35m"
#define COLOR_FIELD "\x1b[36m"
#define COLOR_TIME "\x1b[33m"
#define COLOR_OFF "\x1b[0m"

#define put_lit(o, s) fmt_str((o), (s), strlen(s))

/* One value: text (babeltrace-like) or JSON. */
static void put_value(struct fmt_out *o, const struct rtr_value *v,
		      const struct rtr_field_class *fc, bool json)
{
	char *p;
	switch (v->type) {
	case RTR_INT:
		fmt_i64(o, v->i);
		return;
	case RTR_UINT:
		p = fmt_reserve(o, 72);
		fmt_commit(o, json ? fmt_put_u64(p, v->u) : fmt_put_base(p, v->u, fc->base));
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
	case RTR_BYTES:
		fmt_putc(o, '[');
		for (size_t i = 0; i < v->bytes.len; i++) {
			p = fmt_reserve(o, 48);
			if (json) {
				if (i)
					*p++ = ',';
				p = fmt_put_u64(p, v->bytes.p[i]);
			} else {
				memcpy(p, i ? ", [" : " [", i ? 3 : 2);
				p += i ? 3 : 2;
				p = fmt_put_u64(p, i);
				memcpy(p, "] = ", 4);
				p = fmt_put_base(p + 4, v->bytes.p[i], fc->base);
			}
			fmt_commit(o, p);
		}
		put_lit(o, json || !v->bytes.len ? "]" : " ]");
		return;
	}
}

/*
 * The constant text of an event class, built once: piece 0 is what follows
 * the event name ("types:ints: {" / ,"name":"types:ints","fields":{), pieces
 * 1..n the field labels (" s8 = " / "s8":), piece n+1 what closes the
 * payload.
 */
struct view_layout {
	char *text;		/* owned; NULL until built */
	struct {
		uint32_t off, len;
	} *piece;		/* owned; nr_fields + 2 entries */
};

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

__attribute__((noinline)) static int build_layout(struct view_printer *pr,
						  struct view_layout *l,
						  const struct rtr_event_class *c)
{
	struct layout_builder b = { .mark = 0 };
	if (fmt_open(&b.o, NULL, 1024) < 0)	/* a memory buffer: it grows */
		return -ENOMEM;
	l->piece = calloc(c->nr_fields + 2, sizeof(*l->piece));
	if (!l->piece) {
		fmt_close(&b.o);
		return -ENOMEM;
	}
	if (pr->json) {
		put_lit(&b.o, ",\"name\":");
		fmt_json_string(&b.o, c->name, strlen(c->name));
		put_lit(&b.o, ",\"fields\":{");
	} else {
		if (pr->color)
			put_lit(&b.o, COLOR_NAME);
		fmt_cstr(&b.o, c->name);
		if (pr->color)
			put_lit(&b.o, COLOR_OFF);
		put_lit(&b.o, c->nr_fields ? ": {" : ":");
	}
	end_piece(&b, l, 0);
	for (uint32_t i = 0; i < c->nr_fields; i++) {
		const char *name = c->fields[i].name;
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
		end_piece(&b, l, i + 1);
	}
	put_lit(&b.o, pr->json ? "}" : c->nr_fields ? " }" : "");
	end_piece(&b, l, c->nr_fields + 1);
	if (b.o.err) {
		fmt_close(&b.o);
		free(l->piece);
		l->piece = NULL;
		return -ENOMEM;
	}
	l->text = b.o.buf;	/* kept: fmt_close is not called */
	return 0;
}

static inline void put_piece(struct fmt_out *o, const struct view_layout *l, uint32_t i)
{
	fmt_str(o, l->text + l->piece[i].off, l->piece[i].len);
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
	}
	free(p->layouts);
	p->layouts = NULL;
}

/* Event name and payload, from the class layout. */
static void put_event(struct view_printer *pr, const struct view_event *e)
{
	struct fmt_out *o = pr->out;
	const struct rtr_event *ev = e->ev;
	const struct rtr_event_class *c = ev->cls;
	struct view_layout *l = &pr->layouts[e->gclass];
	if (!l->text && build_layout(pr, l, c) < 0) {
		if (!o->err)
			o->err = -ENOMEM;
		return;
	}
	put_piece(o, l, 0);
	for (uint32_t i = 0; i < c->nr_fields; i++) {
		struct rtr_value v;
		put_piece(o, l, i + 1);
		if (rtr_field(ev, i, &v) == 0)
			put_value(o, &v, &c->fields[i], pr->json);
		else
			put_lit(o, pr->json ? "null" : "<undecodable>");
	}
	put_piece(o, l, c->nr_fields + 1);
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
	put_event(pr, e);
	fmt_putc(o, '\n');
}

static void print_json(struct view_printer *pr, const struct view_event *e)
{
	struct fmt_out *o = pr->out;
	const struct rtr_event *ev = e->ev;
	char *p = fmt_reserve(o, FMT_MIN_ROOM);
	memcpy(p, "{\"ts\":", 6);
	p = fmt_put_i64(p + 6, ev->ns);
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
	put_lit(o, ",\"context\":{}}\n");
}

void view_print(struct view_printer *pr, const struct view_event *e)
{
	if (pr->json)
		print_json(pr, e);
	else
		print_text(pr, e);
}
