/*
 * view_filter.c - view --filter: the filter language of src/filter
 * (LTTng's, docs/filters.md) on the events of the traces being read.
 *
 * What view adds: the variables $name (the event's provider:event), $cpu,
 * $ts (ns since the epoch) and $trace (the index of its trace); a bare
 * NAME is a payload field, else a context field of that name; an enum is
 * its integer, or its label against a string. Errors are local
 * (RTF_LOCAL_ERRORS): a comparison with a field the event lacks, or
 * between a string and a number, is false where it stands, and its "!"
 * true, so that one expression can look at events of several kinds.
 *
 * A field's index in an event class is looked up once per class and
 * reference (the context layout is the same for every event of a class).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../filter/filter.h"
#include "view.h"

static const char *const view_vars[] = { "name", "cpu", "ts", "trace", NULL };

struct view_filter {
	struct rtf_program *prog;	/* owned */
	int32_t *index;		/* [class * nr_refs + ref]: -2 not looked up yet, -1 none */
	size_t nr_classes;
};

int view_filter_parse(const char *expr, struct view_filter **out, char *err, size_t errlen)
{
	struct rtf_options opt = { .flags = RTF_LOCAL_ERRORS, .vars = view_vars };
	*out = NULL;
	struct view_filter *f = calloc(1, sizeof(*f));
	if (!f) {
		snprintf(err, errlen, "filter: out of memory");
		return -ENOMEM;
	}
	int ret = rtf_compile(expr, &opt, &f->prog, err, errlen);
	if (ret < 0) {
		free(f);
		return ret;
	}
	*out = f;
	return 0;
}

int view_filter_bind(struct view_filter *f, const struct view_class *classes, size_t nr)
{
	(void)classes;
	size_t n = nr * rtf_nr_refs(f->prog);
	free(f->index);
	f->index = malloc((n ? n : 1) * sizeof(*f->index));
	if (!f->index)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		f->index[i] = -2;
	f->nr_classes = nr;
	return 0;
}

void view_filter_free(struct view_filter *f)
{
	if (!f)
		return;
	rtf_free(f->prog);
	free(f->index);
	free(f);
}

struct fetch_arg {
	struct view_filter *f;
	const struct view_event *e;
};

static int fetch_var(const char *name, const struct view_event *e, struct rtf_value *v)
{
	const struct rtr_event *ev = e->ev;
	switch (name[0]) {
	case 'n':		/* $name */
		v->type = RTF_STRING;
		v->s.p = ev->cls->name;
		v->s.len = strlen(ev->cls->name);
		return 0;
	case 'c':		/* $cpu */
		if (ev->cpu == UINT32_MAX)
			return -ENOENT;
		v->type = RTF_INT;
		v->i = ev->cpu;
		return 0;
	case 't':
		v->type = RTF_INT;
		v->i = name[1] == 's' ? ev->ns : (int64_t)e->source;	/* $ts, $trace */
		return 0;
	default:
		return -ENOENT;
	}
}

static int fetch(void *arg, uint32_t ref, struct rtf_value *v)
{
	struct fetch_arg *a = arg;
	const struct rtf_ref *r = rtf_ref(a->f->prog, ref);
	enum view_scope scope;
	switch (r->scope) {
	case RTF_SCOPE_VAR:
		return fetch_var(r->name, a->e, v);
	case RTF_SCOPE_FIELD: scope = VIEW_SCOPE_ANY; break;
	case RTF_SCOPE_PAYLOAD: scope = VIEW_SCOPE_PAYLOAD; break;
	case RTF_SCOPE_CTX: scope = VIEW_SCOPE_CONTEXT; break;
	default: return -ENOENT;	/* $app: not in ringtrace's traces */
	}
	int32_t *slot = &a->f->index[(size_t)a->e->gclass * rtf_nr_refs(a->f->prog) + ref];
	if (*slot == -2)
		*slot = view_field_index(a->e->ev, scope, r->name);
	struct rtr_value rv;
	if (*slot < 0 || view_field_value(a->e->ev, *slot, &rv) < 0)
		return -ENOENT;
	switch (rv.type) {
	case RTR_INT: v->type = RTF_INT; v->i = rv.i; break;
	case RTR_UINT: v->type = RTF_UINT; v->u = rv.u; break;
	case RTR_FLOAT:
	case RTR_DOUBLE: v->type = RTF_DOUBLE; v->d = rv.d; break;
	case RTR_BOOL: v->type = RTF_INT; v->i = rv.b; break;
	case RTR_STRING: v->type = RTF_STRING; v->s.p = rv.s.p; v->s.len = rv.s.len; break;
	case RTR_ENUM:		/* its integer; its label against a string */
		if (rv.is_signed) {
			v->type = RTF_INT;
			v->i = rv.i;
		} else {
			v->type = RTF_UINT;
			v->u = rv.u;
		}
		v->label = rv.label;
		break;
	default:
		return -ENOENT;
	}
	return 0;
}

bool view_filter_match(struct view_filter *f, const struct view_event *e)
{
	struct fetch_arg a = { .f = f, .e = e };
	return rtf_eval(f->prog, fetch, &a);
}
