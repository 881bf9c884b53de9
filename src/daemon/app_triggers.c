/*
 * app_triggers.c - user event-rule-matches triggers evaluated in the
 * programs (docs/triggers.md): the RTP_APP_TRIGGERS message each program
 * gets (the triggers of its user and of root, each with the program's
 * events its rule selects, matched here with rule.h's matcher as the
 * enablement is), the program's notification ring (src/proto/trig_ring.h,
 * created with its first TRIGGERS), and the reading of the rings.
 *
 * Everything a ring holds was written by the program: a slot that does
 * not parse, or names a token the program was not sent, is refused
 * (counted, the first one per program logged); pid is the one the kernel
 * gave the connection, the rest is the program's word.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/array.h"
#include "../common/hex.h"
#include "../common/warn.h"
#include "../proto/proto.h"
#include "../proto/trig_ring.h"
#include "app.h"

struct rtd_user_trigger *rtd_user_triggers;

/* A program's ring and what it was sent. Owner: its app; then, once the
 * program is gone, the `gone` list until its ring was read a last time. */
struct app_trig {
	pid_t pid;
	char procname[RTP_APP_PROCNAME_LEN + 1];
	struct app_trig *next_gone;
	struct rttr_ring ring;
	int fd;				/* until it was sent */
	struct rttr_reader rd;
	uint64_t *tokens;		/* of the last TRIGGERS */
	uint32_t nr_tokens, cap_tokens;
	uint64_t refused;		/* slots refused (bad, unknown token) */
};

/* Rings of programs that went away, read once more (what they wrote
 * just before they exited) by the next dp_user_triggers_read. */
static struct app_trig *gone;

static bool applies(const struct rtd_user_trigger *t, const struct app *a)
{
	return t->owner == a->uid || t->owner == 0;
}

static struct app_trig *trig_new(void)
{
	struct app_trig *tr = calloc(1, sizeof(*tr));
	if (!tr)
		return NULL;
	int ret = rttr_create(&tr->ring, RTTR_DEFAULT_SLOTS, RTTR_DEFAULT_SLOT_SIZE, &tr->fd);
	if (ret < 0) {
		rt_warn("cannot create a trigger notification ring: %s", strerror(-ret));
		free(tr);
		return NULL;
	}
	return tr;
}

static void trig_free(struct app_trig *tr)
{
	rttr_unmap(&tr->ring);
	if (tr->fd >= 0)
		close(tr->fd);
	free(tr->tokens);
	free(tr);
}

void app_triggers_free(struct app *a)
{
	struct app_trig *tr = a->trig;
	if (!tr)
		return;
	a->trig = NULL;
	if (!rtd_user_triggers) {
		trig_free(tr);	/* nothing would fire: no need to read it */
		return;
	}
	tr->next_gone = gone;
	gone = tr;
}

/* The record of trigger t for program a: its events that t's rule
 * selects, in idx (room for a->nr_events). */
static void encode_one(struct rtp_app_buf *b, const struct rtd_user_trigger *t,
		       const struct app *a, uint32_t *idx)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < a->nr_events; i++)
		if (rt_rule_matches(&t->rule, a->events[i].full, a->events[i].loglevel))
			idx[n++] = a->events[i].index;
	struct rtp_app_trigger_out out = {
		.token = t->token, .events = idx, .nr_events = n,
		.filter = t->filter, .filter_len = t->filter_len,
		.captures = t->captures, .nr_captures = t->nr_captures,
	};
	rtp_app_trigger_encode(b, &out);
}

void app_send_triggers(struct app *a)
{
	uint32_t n = 0;
	for (const struct rtd_user_trigger *t = rtd_user_triggers; t; t = t->next)
		n += applies(t, a);
	if ((!n && !a->trig) || !a->conn)
		return;
	if (n > RTP_APP_MAX_TRIGGERS) {
		rt_warn("program %d (%s): %u user triggers apply, the first %u are evaluated",
			(int)a->pid, a->procname, n, RTP_APP_MAX_TRIGGERS);
		n = RTP_APP_MAX_TRIGGERS;
	}
	if (!a->trig && !(a->trig = trig_new()))
		return;
	a->trig->pid = a->pid;
	memcpy(a->trig->procname, a->procname, sizeof(a->procname));
	struct app_trig *tr = a->trig;
	uint32_t *idx = malloc(((size_t)a->nr_events + 1) * sizeof(*idx));
	struct rtp_app_buf b = { 0 };
	if (!idx || RT_ARRAY_GROW(tr->tokens, tr->cap_tokens, (size_t)n + 1, 8) < 0) {
		free(idx);
		rt_warn("program %d (%s): out of memory for its triggers", (int)a->pid,
			a->procname);
		return;
	}
	tr->nr_tokens = 0;
	rtp_app_triggers_encode(&b, n);
	for (const struct rtd_user_trigger *t = rtd_user_triggers; t && tr->nr_tokens < n;
	     t = t->next) {
		if (!applies(t, a))
			continue;
		encode_one(&b, t, a, idx);
		tr->tokens[tr->nr_tokens++] = t->token;
	}
	free(idx);
	int ret = b.err ? b.err : app_send(a, RTP_APP_TRIGGERS, 0, b.data, b.len, tr->fd);
	rtp_app_buf_free(&b);
	if (ret < 0) {
		rt_warn("program %d (%s): cannot send its triggers: %s", (int)a->pid, a->procname,
			strerror(-ret));
		return;
	}
	/* The ring goes with the first message only. */
	if (tr->fd >= 0) {
		close(tr->fd);
		tr->fd = -1;
	}
}

void dp_user_triggers_changed(void)
{
	for (struct app *a = app_list; a; a = a->next)
		app_send_triggers(a);
}

static struct rtd_user_trigger *find_token(uint64_t token)
{
	for (struct rtd_user_trigger *t = rtd_user_triggers; t; t = t->next)
		if (t->token == token)
			return t;
	return NULL;
}

static bool token_sent(const struct app_trig *tr, uint64_t token)
{
	for (uint32_t i = 0; i < tr->nr_tokens; i++)
		if (tr->tokens[i] == token)
			return true;
	return false;
}

/* "NAME=VALUE" of one capture; a string's bytes as they are but NULs. */
static void add_capture(struct rtp_kv *kv, const char *name, const struct rttr_value *v)
{
	switch (v->type) {
	case RTTR_S64:
		rtp_kv_addf(kv, "capture", "%s=%lld", name, (long long)v->i);
		break;
	case RTTR_U64:
		rtp_kv_addf(kv, "capture", "%s=%llu", name, (unsigned long long)v->u);
		break;
	case RTTR_DOUBLE:
		rtp_kv_addf(kv, "capture", "%s=%.17g", name, v->d);
		break;
	case RTTR_STRING: {
		char s[RTTR_SLOT_MAX + 1];
		size_t n = v->s.len < RTTR_SLOT_MAX ? v->s.len : RTTR_SLOT_MAX;
		memcpy(s, v->s.p, n);
		s[n] = '\0';
		for (size_t i = 0; i < n; i++)
			if (!s[i])
				s[i] = '?';
		rtp_kv_addf(kv, "capture", "%s=%s", name, s);
		break;
	}
	case RTTR_BYTES: {
		/* A byte sequence: its bytes in hexadecimal, under its own
		 * key (notification.h). */
		char hex[2 * RTTR_SLOT_MAX + 1];
		size_t n = v->s.len < RTTR_SLOT_MAX ? v->s.len : RTTR_SLOT_MAX;
		rt_hex_encode((const uint8_t *)v->s.p, n, hex);
		rtp_kv_addf(kv, "capture-bytes", "%s=%s", name, hex);
		break;
	}
	default:
		break;		/* not available: left out */
	}
}

struct pending {
	uint64_t token;
	struct rtp_kv kv;
};

static void refuse(struct app_trig *tr, const char *why)
{
	if (tr->refused++ == 0)
		rt_warn("program %d (%s): %s in its trigger notification ring; refused "
			"(further ones are counted, not logged)", (int)tr->pid, tr->procname, why);
}

/* Read a program's ring (at most one ring's worth) into the pending
 * list. */
static void read_ring(struct app_trig *tr, struct pending **list, size_t *n, size_t *cap,
		      int64_t now)
{
	struct rttr_record rec;
	size_t first = *n;
	for (uint32_t k = 0; k < tr->ring.nr_slots; k++) {
		int r = rttr_read(&tr->ring, &tr->rd, now, &rec);
		if (r == 0)
			break;
		if (r < 0) {
			refuse(tr, "a slot that does not parse");
			continue;
		}
		/* No such trigger: one removed since (the program wrote
		 * before it applied its new set), ignored. One it was not
		 * given: refused. */
		struct rtd_user_trigger *t = find_token(rec.token);
		if (!t)
			continue;
		if (!token_sent(tr, rec.token)) {
			refuse(tr, "a notification of a trigger it was not given");
			continue;
		}
		if (RT_ARRAY_GROW(*list, *cap, *n + 1, 16) < 0)
			break;
		struct pending *p = &(*list)[(*n)++];
		*p = (struct pending){ .token = rec.token };
		rtp_kv_addf(&p->kv, "pid", "%d", (int)tr->pid);
		rtp_kv_addf(&p->kv, "tid", "%u", rec.tid);
		rtp_kv_addf(&p->kv, "event-time-ns", "%llu", (unsigned long long)rec.time_ns);
		for (uint32_t i = 0; i < rec.nr_captures && i < t->nr_captures; i++)
			add_capture(&p->kv, t->captures[i], &rec.captures[i]);
	}
	uint64_t lost = rttr_lost(&tr->ring, &tr->rd) + tr->rd.given_up;
	tr->rd.given_up = 0;
	if (!lost)
		return;
	if (*n > first)
		rtp_kv_addf(&(*list)[*n - 1].kv, "lost", "%llu", (unsigned long long)lost);
	else
		rt_warn("program %d (%s): %llu trigger notifications lost (its ring was full)",
			(int)tr->pid, tr->procname, (unsigned long long)lost);
}

void dp_user_triggers_read(void (*fn)(struct rtd_user_trigger *t, const struct rtp_kv *values,
				      void *arg),
			   void *arg)
{
	struct pending *list = NULL;
	size_t n = 0, cap = 0;
	int64_t now = rtd_now_ms();
	for (struct app *a = app_list; a; a = a->next)
		if (a->trig)
			read_ring(a->trig, &list, &n, &cap, now);
	while (gone) {
		struct app_trig *tr = gone;
		gone = tr->next_gone;
		read_ring(tr, &list, &n, &cap, now);
		trig_free(tr);
	}
	/* The programs are not walked any more: an action may wait for
	 * them (a snapshot's state dump), and one may go away meanwhile. */
	for (size_t i = 0; i < n; i++) {
		struct rtd_user_trigger *t = find_token(list[i].token);
		if (t)
			fn(t, &list[i].kv, arg);
		rtp_kv_free(&list[i].kv);
	}
	free(list);
}
