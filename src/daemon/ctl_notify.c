/*
 * ctl_notify.c - the subscribers of `ringtrace notifications` (and of the
 * C API, include/ringtrace/notification.h): connections that asked for
 * the notifications of some triggers and get one RTP_CTL_NOTIFICATION
 * frame per firing of those triggers' notify actions.
 *
 * A subscriber gets the notifications of the triggers it may see
 * (ctl_trigger_visible: its own; root: everyone's), optionally only
 * those named in its request. It sends nothing after its request (a
 * frame closes it). Like every connection (ctl_io.c), one that does not
 * take what is queued for it within SUB_OUT_MS is closed: a stuck
 * subscriber costs the daemon no more than that, and never delays the
 * actions or the other subscribers.
 *
 * Concurrency: main thread, rtd_lock held.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "../common/array.h"
#include "ctl.h"

#define SUB_IN_MS 1000
#define SUB_OUT_MS 2000
#define SUB_MAX_NAMES 64

struct sub {
	struct rtd_conn *c;
	uid_t uid;
	char **names;		/* NULL: every trigger it may see */
	size_t nr_names;
	struct sub *next;
};

static struct sub *subs;

static int sub_check(uint16_t type, uint32_t length)
{
	(void)type;
	(void)length;
	return -EBADMSG;
}

static int sub_frame(struct rtd_conn *c, struct rtp_msg *m, int *fds, unsigned nfds)
{
	(void)c;
	(void)m;
	(void)fds;
	(void)nfds;
	return -EBADMSG;
}

static void sub_free(struct sub *s)
{
	for (size_t i = 0; i < s->nr_names; i++)
		free(s->names[i]);
	free(s->names);
	free(s);
}

static void sub_closed(struct rtd_conn *c, int why)
{
	(void)why;
	for (struct sub **p = &subs; *p; p = &(*p)->next) {
		if ((*p)->c == c) {
			struct sub *s = *p;
			*p = s->next;
			sub_free(s);
			return;
		}
	}
}

static const struct rtd_conn_ops sub_ops = {
	.check = sub_check,
	.frame = sub_frame,
	.closed = sub_closed,
};

static bool exists_for(uid_t uid, const char *name)
{
	for (const struct ctl_trigger *t = ctl_triggers; t; t = t->next)
		if (ctl_trigger_visible(uid, t->owner) && !strcmp(t->t.name, name))
			return true;
	return false;
}

int ctl_notify_subscribe(struct rtd_conn *c, const struct ctl_req *r, char *err,
			 size_t errlen)
{
	struct sub *s = calloc(1, sizeof(*s));
	size_t cap = 0;
	if (!s)
		goto nomem;
	s->c = c;
	s->uid = r->uid;
	for (uint32_t pos = 0;;) {
		const char *k, *v;
		size_t kl;
		if (!rtp_kv_next(r->p, r->len, &pos, &k, &kl, &v))
			break;
		if (kl != 7 || memcmp(k, "trigger", 7))
			continue;
		if (!exists_for(r->uid, v)) {
			snprintf(err, errlen, "no trigger named '%.64s'", v);
			sub_free(s);
			return -ENOENT;
		}
		if (s->nr_names >= SUB_MAX_NAMES) {
			snprintf(err, errlen, "more than %d triggers named", SUB_MAX_NAMES);
			sub_free(s);
			return -EINVAL;
		}
		if (RT_ARRAY_GROW(s->names, cap, s->nr_names + 1, 4) < 0)
			goto nomem_sub;
		if (!(s->names[s->nr_names] = strdup(v)))
			goto nomem_sub;
		s->nr_names++;
	}
	struct rtp_kv kv = { 0 };
	rtp_kv_add(&kv, "subscribed", "1");
	int ret = kv.err ? kv.err : rtd_conn_send(c, RTP_CTL_REPLY, 0, kv.data, kv.len, -1);
	rtp_kv_free(&kv);
	if (ret < 0)
		goto nomem_sub;
	rtd_conn_set_ops(c, &sub_ops, s, SUB_IN_MS, SUB_OUT_MS);
	s->next = subs;
	subs = s;
	return 0;
nomem_sub:
	sub_free(s);
nomem:
	snprintf(err, errlen, "out of memory");
	return -ENOMEM;
}

static bool wants(const struct sub *s, uid_t owner, const char *name)
{
	if (!ctl_trigger_visible(s->uid, owner))
		return false;
	if (!s->names)
		return true;
	for (size_t i = 0; i < s->nr_names; i++)
		if (!strcmp(s->names[i], name))
			return true;
	return false;
}

void ctl_notify_send(uid_t owner, const char *name, const struct rtp_kv *n)
{
	for (struct sub *s = subs; s; s = s->next)
		if (!rtd_conn_closing(s->c) && wants(s, owner, name))
			rtd_conn_send(s->c, RTP_CTL_NOTIFICATION, 0, n->data, n->len, -1);
}
