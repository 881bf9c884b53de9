/*
 * chrome.c - Chrome trace-event JSON, streamed.
 *
 * Output: {"traceEvents":[...],"displayTimeUnit":"ns","metadata":{...}}.
 * An event whose key has no open pair is written at once. Once a begin
 * opens a pair on a key, that key's events are held (their args already
 * rendered to text) until its stack is empty again, then written in order:
 * a closed begin becomes one complete event ("ph":"X" with "dur"), an
 * unclosed begin an instant. So "ts" never decreases within a thread, and
 * memory grows only with the events of keys inside an open pair.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "../common/array.h"

#define SYNTHETIC_TID 0x40000000	/* + key index, for non-numeric keys */

enum item_kind { ITEM_INSTANT, ITEM_OPEN, ITEM_CLOSED };

#define PROC_UNNAMED UINT32_MAX

struct proc {			/* a process and the name written for it */
	int64_t pid;
	uint32_t name;		/* 0: its trace's directory; else its main
				 * thread's name's index in src.threads + 1 */
};

struct item {			/* one held event */
	int64_t ns, dur_ns;
	int64_t pid;
	uint32_t name;		/* event name; the pair type for ITEM_CLOSED */
	enum item_kind kind;
	size_t args_off, args_len;	/* in key_hold.text */
	size_t end_off, end_len;	/* the end event's args (ITEM_CLOSED) */
};

struct key_hold {
	struct item *items;	/* owned */
	size_t nr, cap;
	char *text;		/* owned: rendered args */
	size_t len, size;
};

struct chrome {
	FILE *out;		/* borrowed */
	struct ra_source src;
	struct ra_pairer pairer;
	FILE *scratch;		/* owned: open_memstream, renders held args */
	char *scratch_buf;	/* owned by scratch until fclose */
	size_t scratch_len;
	struct key_hold *holds;	/* owned, per key */
	uint32_t nr_holds;
	int64_t start_ns;
	uint64_t written;
	uint32_t *named;	/* owned, per (key, trace): 0 no thread_name yet,
				 * 1 one without a name, else the name's index
				 * in src.threads + 2 */
	size_t nr_named;
	struct proc *procs;	/* owned: processes with a process_name */
	size_t nr_procs, cap_procs;
};

static void write_ts(FILE *f, int64_t rel_ns)
{
	uint64_t a = rel_ns < 0 ? 0 - (uint64_t)rel_ns : (uint64_t)rel_ns;
	fprintf(f, "%s%" PRIu64 ".%03" PRIu64, rel_ns < 0 ? "-" : "", a / 1000, a % 1000);
}

static void begin_event(struct chrome *c)
{
	fputs(c->written++ ? ",\n" : "\n", c->out);
}

static int64_t tid_of(const struct chrome *c, uint32_t key)
{
	const char *k = c->src.keys.str[key];
	char *end;
	errno = 0;
	long long v = strtoll(k, &end, 10);
	if (!errno && end != k && !*end)
		return v;
	return SYNTHETIC_TID + key;
}

/* The event's process (ra_event_vpid), else a number per trace. */
static int64_t pid_of(const struct chrome *c, const struct ra_event *ev)
{
	int64_t pid = ra_event_vpid(c->src.t, ev->raw);
	return pid ? pid : ev->trace + 1;
}

/* The process_name metadata event: at the process's first event, and
 * again when its main thread (tid = pid) has a new name: that name, else
 * the trace's directory. The thread_name one, again when the thread's
 * name changed: "NAME" when the procname context gave one, else
 * "KEY_FIELD KEY". */
static int name_thread(struct chrome *c, const struct ra_event *ev, int64_t pid)
{
	size_t i;
	for (i = 0; i < c->nr_procs && c->procs[i].pid != pid; i++)
		;
	if (i == c->nr_procs) {
		if (RT_ARRAY_GROW(c->procs, c->cap_procs, c->nr_procs + 1, 8) < 0)
			return -ENOMEM;
		c->procs[c->nr_procs++] = (struct proc){ .pid = pid, .name = PROC_UNNAMED };
	}
	const char *tname = ra_source_thread_name(&c->src, ev->key);
	bool main_thread = tname && tid_of(c, ev->key) == pid;
	uint32_t proc_name = main_thread ? c->src.key_thread[ev->key] : 0;
	struct proc *p = &c->procs[i];
	if (p->name == PROC_UNNAMED || (proc_name && p->name != proc_name)) {
		p->name = proc_name;
		begin_event(c);
		fprintf(c->out, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%" PRId64
			",\"tid\":0,\"args\":{\"name\":", pid);
		const char *name = main_thread ? tname : ra_source_trace_path(&c->src, ev->trace);
		ra_json_string(c->out, name, strlen(name));
		fputs("}}", c->out);
	}
	size_t slot = (size_t)ev->key * rtr_trace_count(c->src.t) + ev->trace;
	if (RT_ARRAY_GROW_ZEROED(c->named, c->nr_named, slot + 1, 64) < 0)
		return -ENOMEM;
	const char *name = ra_source_thread_name(&c->src, ev->key);
	uint32_t want = name ? c->src.key_thread[ev->key] + 1 : 1;
	if (c->named[slot] == want || (c->named[slot] && !name))
		return 0;
	c->named[slot] = want;
	begin_event(c);
	fprintf(c->out, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%" PRId64
		",\"tid\":%" PRId64 ",\"args\":{\"name\":", pid, tid_of(c, ev->key));
	char label[160];
	if (!name)
		snprintf(label, sizeof(label), "%s %s", c->src.key_field,
			 c->src.keys.str[ev->key]);
	ra_json_string(c->out, name ? name : label, strlen(name ? name : label));
	fputs("}}", c->out);
	return 0;
}

/* "name":..,"cat":..,"ph":.. up to the args' opening brace. */
static void event_head(struct chrome *c, const char *name, const char *ph,
		       int64_t ns, int64_t pid, uint32_t key)
{
	const char *colon = strchr(name, ':');
	begin_event(c);
	fputs("{\"name\":", c->out);
	ra_json_string(c->out, name, strlen(name));
	fputs(",\"cat\":", c->out);
	ra_json_string(c->out, name, colon ? (size_t)(colon - name) : strlen(name));
	fprintf(c->out, ",\"ph\":\"%s\",", ph);
	if (ph[0] == 'i')
		fputs("\"s\":\"t\",", c->out);
	fputs("\"ts\":", c->out);
	write_ts(c->out, ra_ns_diff(ns, c->start_ns));
	fprintf(c->out, ",\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"args\":{", pid,
		tid_of(c, key));
}

/* Render the args of ev into the key's text. */
static int hold_args(struct chrome *c, struct key_hold *h,
		     const struct ra_event *ev, size_t *off, size_t *len)
{
	if (fseeko(c->scratch, 0, SEEK_SET) != 0)
		return -EIO;
	ra_write_payload_json(c->scratch, ev->raw);
	off_t n = ftello(c->scratch);
	if (n < 0 || fflush(c->scratch) != 0)
		return -ENOMEM;
	if (RT_ARRAY_GROW(h->text, h->size, h->len + (size_t)n, 4096) < 0)
		return -ENOMEM;
	memcpy(h->text + h->len, c->scratch_buf, (size_t)n);
	*off = h->len;
	*len = (size_t)n;
	h->len += (size_t)n;
	return 0;
}

static struct item *hold_item(struct key_hold *h)
{
	if (RT_ARRAY_GROW(h->items, h->cap, h->nr + 1, 64) < 0)
		return NULL;
	struct item *it = &h->items[h->nr++];
	memset(it, 0, sizeof(*it));
	return it;
}

static void flush_key(struct chrome *c, uint32_t key)
{
	struct key_hold *h = &c->holds[key];
	for (size_t i = 0; i < h->nr; i++) {
		const struct item *it = &h->items[i];
		bool x = it->kind == ITEM_CLOSED;
		const char *name = x ? c->pairer.types[it->name].label
				     : c->src.names.str[it->name];
		event_head(c, name, x ? "X" : "i", it->ns, it->pid, key);
		fwrite(h->text + it->args_off, 1, it->args_len, c->out);
		if (x) {
			fputs(it->args_len ? ",\"end\":{" : "\"end\":{", c->out);
			fwrite(h->text + it->end_off, 1, it->end_len, c->out);
			fputs("}},\"dur\":", c->out);
			write_ts(c->out, it->dur_ns);
			fputc('}', c->out);
		} else {
			fputs("}}", c->out);
		}
	}
	h->nr = 0;
	h->len = 0;
}

static int grow_holds(struct chrome *c, uint32_t key)
{
	return RT_ARRAY_GROW_ZEROED(c->holds, c->nr_holds, (size_t)key + 1, 16);
}

static int one_event(struct chrome *c, const struct ra_event *ev)
{
	int64_t pid = pid_of(c, ev);
	if (grow_holds(c, ev->key) < 0 || name_thread(c, ev, pid) < 0)
		return -ENOMEM;
	struct key_hold *h = &c->holds[ev->key];
	struct ra_pair_done d;
	int r = ra_pairer_feed(&c->pairer, &c->src.names, ev, h->nr, &d);
	if (r < 0)
		return r;
	if (r == RA_PAIR_NONE || r == RA_PAIR_UNMATCHED_END) {
		if (!h->nr) {
			event_head(c, c->src.names.str[ev->name], "i", ev->ns, pid, ev->key);
			ra_write_payload_json(c->out, ev->raw);
			fputs("}}", c->out);
			return 0;
		}
		struct item *it = hold_item(h);
		if (!it)
			return -ENOMEM;
		*it = (struct item){ .ns = ev->ns, .pid = pid, .name = ev->name,
				     .kind = ITEM_INSTANT };
		return hold_args(c, h, ev, &it->args_off, &it->args_len);
	}
	if (r == RA_PAIR_BEGIN) {
		struct item *it = hold_item(h);
		if (!it)
			return -ENOMEM;
		*it = (struct item){ .ns = ev->ns, .pid = pid, .name = ev->name,
				     .kind = ITEM_OPEN };
		return hold_args(c, h, ev, &it->args_off, &it->args_len);
	}
	struct item *it = &h->items[d.begin_seq];
	it->kind = ITEM_CLOSED;
	it->name = d.type;
	it->dur_ns = ra_ns_diff(d.end_ns, d.begin_ns);
	int ret = hold_args(c, h, ev, &it->end_off, &it->end_len);
	if (ret == 0 && c->pairer.stacks[ev->key].nr == 0)
		flush_key(c, ev->key);
	return ret;
}

static void chrome_free(struct chrome *c)
{
	for (uint32_t k = 0; k < c->nr_holds; k++) {
		free(c->holds[k].items);
		free(c->holds[k].text);
	}
	free(c->holds);
	free(c->procs);
	free(c->named);
	if (c->scratch)
		fclose(c->scratch);
	free(c->scratch_buf);
	ra_pairer_free(&c->pairer);
	ra_source_close(&c->src);
}

int ra_export_chrome(FILE *f, const char *const *dirs, size_t nr,
		     const struct ra_options *opt, char *err, size_t errlen)
{
	struct chrome c = { .out = f };
	ra_pairer_init(&c.pairer, opt->auto_pairs);
	int ret = 0;
	for (size_t i = 0; ret == 0 && i < opt->nr_pairs; i++)
		ret = ra_pairer_add(&c.pairer, opt->pairs[i], err, errlen);
	if (ret == 0)
		ret = ra_source_open(&c.src, dirs, nr, opt->key_field, err, errlen);
	if (ret < 0)
		goto cleanup;
	c.scratch = open_memstream(&c.scratch_buf, &c.scratch_len);
	if (!c.scratch) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto cleanup;
	}
	fputs("{\"traceEvents\":[", f);
	struct ra_event ev;
	bool first = true;
	while ((ret = ra_source_next(&c.src, &ev, err, errlen)) > 0) {
		if (first)
			c.start_ns = ev.ns;
		first = false;
		ret = one_event(&c, &ev);
		if (ret < 0) {
			snprintf(err, errlen, "out of memory");
			goto cleanup;
		}
	}
	if (ret < 0)
		goto cleanup;
	for (uint32_t k = 0; k < c.nr_holds; k++)
		flush_key(&c, k);	/* unclosed begins become instants */
	uint64_t lost_events, lost_packets;
	ra_source_lost(&c.src, &lost_events, &lost_packets);
	fprintf(f, "\n],\"displayTimeUnit\":\"ns\",\"metadata\":{\"producer\":"
		"\"ringtrace export\",\"trace_start_ns\":%" PRId64 ",\"ts_unit\":"
		"\"microseconds since trace_start_ns\",\"events\":%" PRIu64
		",\"lost_events\":%" PRIu64 ",\"lost_packets\":%" PRIu64
		",\"key_field\":", c.start_ns, c.src.events, lost_events, lost_packets);
	ra_json_string(f, c.src.key_field, strlen(c.src.key_field));
	fputs(",\"traces\":[", f);
	for (size_t i = 0; i < nr; i++) {
		if (i)
			fputc(',', f);
		ra_json_string(f, dirs[i], strlen(dirs[i]));
	}
	fputs("]}}\n", f);
cleanup:
	chrome_free(&c);
	return ret;
}
