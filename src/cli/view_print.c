/*
 * view_print.c - one event as a line of text or a JSON object
 * (docs/viewing.md describes both), written into the fmt buffer.
 */
#include <string.h>

#include "view.h"

#define COLOR_NAME "\x1b[1;35m"
#define COLOR_FIELD "\x1b[36m"
#define COLOR_TIME "\x1b[33m"
#define COLOR_OFF "\x1b[0m"

static void put_lit(struct fmt_out *o, const char *s)
{
	fmt_cstr(o, s);
}

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

/* The payload as " { a = 1, b = 2 }" (text) or {"a":1,"b":2} (JSON). */
static void put_payload(struct view_printer *pr, const struct rtr_event *ev, bool json)
{
	struct fmt_out *o = pr->out;
	const struct rtr_event_class *c = ev->cls;
	if (json)
		fmt_putc(o, '{');
	else if (c->nr_fields)
		put_lit(o, " {");
	for (uint32_t i = 0; i < c->nr_fields; i++) {
		const struct rtr_field_class *fc = &c->fields[i];
		struct rtr_value v;
		if (json) {
			if (i)
				fmt_putc(o, ',');
			fmt_json_string(o, fc->name, strlen(fc->name));
			fmt_putc(o, ':');
		} else {
			put_lit(o, i ? ", " : " ");
			if (pr->color)
				put_lit(o, COLOR_FIELD);
			fmt_cstr(o, fc->name);
			if (pr->color)
				put_lit(o, COLOR_OFF);
			put_lit(o, " = ");
		}
		if (rtr_field(ev, i, &v) == 0)
			put_value(o, &v, fc, json);
		else
			put_lit(o, json ? "null" : "<undecodable>");
	}
	if (json)
		fmt_putc(o, '}');
	else if (c->nr_fields)
		put_lit(o, " }");
}

void view_print_text(struct view_printer *pr, const struct view_event *e)
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
	if (pr->color)
		put_lit(o, COLOR_NAME);
	fmt_cstr(o, ev->cls->name);
	if (pr->color)
		put_lit(o, COLOR_OFF);
	fmt_putc(o, ':');
	put_payload(pr, ev, false);
	fmt_putc(o, '\n');
}

void view_print_json(struct view_printer *pr, const struct view_event *e)
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
	memcpy(p, ",\"name\":", 8);
	fmt_commit(o, p + 8);
	fmt_json_string(o, ev->cls->name, strlen(ev->cls->name));
	put_lit(o, ",\"fields\":");
	put_payload(pr, ev, true);
	put_lit(o, ",\"context\":{}}\n");
}
