/*
 * notification.c - the receiving end of triggers' notifications, the
 * public API of include/ringtrace/notification.h (in libringtrace, and
 * used by `ringtrace notifications`).
 *
 * Protocol (proto.h): a control request cmd=notifications with one
 * trigger=NAME per name; the daemon answers with a reply (status 0, or
 * an error) and then sends one RTP_CTL_NOTIFICATION frame (key=value
 * entries, checked here) per notification, until either end closes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ringtrace/notification.h>

#include "proto.h"

#define OPEN_TIMEOUT_MS 5000
#define FRAME_TIMEOUT_MS 2000	/* the rest of a frame once it began */

struct rt_notification_channel {
	int fd;
};

/* m's payload, and a copy of it where each entry's first '=' is a NUL
 * (the keys of rt_notification_next). */
struct rt_notification {
	struct rtp_msg m;
	char *split;
};

static void say(char *err, size_t errlen, const char *msg)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
}

int rt_notification_channel_open(const char *const *names, size_t nr,
				 struct rt_notification_channel **out, char *err, size_t errlen)
{
	char why[512] = "";
	struct rtp_kv kv = { 0 };
	struct rtp_msg reply = { 0 };
	int ret;
	rtp_kv_add(&kv, "cmd", "notifications");
	for (size_t i = 0; i < nr; i++)
		rtp_kv_add(&kv, "trigger", names[i]);
	if (kv.err) {
		ret = kv.err;
		say(err, errlen, "request too large or out of memory");
		goto out_kv;
	}
	int fd = rtp_connect(OPEN_TIMEOUT_MS, why, sizeof(why));
	if (fd < 0) {
		ret = fd;
		char path[256];
		if (rtp_socket_path(path, sizeof(path)) < 0)
			snprintf(path, sizeof(path), "(run directory path too long)");
		if (!why[0] && (fd == -ENOENT || fd == -ECONNREFUSED))
			snprintf(why, sizeof(why), "no session daemon (nothing listens at %s)", path);
		else if (!why[0])
			snprintf(why, sizeof(why), "cannot connect to the session daemon at %s: %s",
				 path, strerror(-fd));
		say(err, errlen, why);
		goto out_kv;
	}
	ret = rtp_send(fd, RTP_CTL_REQUEST, 0, kv.data, kv.len, NULL, 0, OPEN_TIMEOUT_MS);
	/* A refused peer gets an error reply: read it even if the send failed. */
	int q = rtp_recv(fd, &reply, NULL, 0, NULL, OPEN_TIMEOUT_MS);
	if (q < 0) {
		ret = q == -ETIMEDOUT || ret == -ETIMEDOUT ? -ETIMEDOUT : -ECONNRESET;
		say(err, errlen, ret == -ETIMEDOUT ? "ringtraced does not answer"
			: "ringtraced closed the connection");
		goto out_fd;
	}
	if (reply.type != RTP_CTL_REPLY || rtp_kv_validate(reply.payload, reply.length) < 0) {
		ret = -EPROTO;
		say(err, errlen, "ringtraced sent a malformed reply");
		goto out_reply;
	}
	if (reply.status < 0) {
		const char *e = rtp_kv_get(reply.payload, reply.length, "error");
		ret = reply.status;
		say(err, errlen, e ? e : strerror(-ret));
		goto out_reply;
	}
	struct rt_notification_channel *ch = malloc(sizeof(*ch));
	if (!ch) {
		ret = -ENOMEM;
		say(err, errlen, "out of memory");
		goto out_reply;
	}
	ch->fd = fd;
	*out = ch;
	rtp_msg_free(&reply);
	rtp_kv_free(&kv);
	return 0;
out_reply:
	rtp_msg_free(&reply);
out_fd:
	close(fd);
out_kv:
	rtp_kv_free(&kv);
	return ret;
}

int rt_notification_channel_fd(const struct rt_notification_channel *ch)
{
	return ch->fd;
}

int rt_notification_channel_read(struct rt_notification_channel *ch, int timeout_ms,
				 struct rt_notification **out)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	int r;
	do
		r = poll(&p, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (r == 0)
		return -ETIMEDOUT;
	struct rt_notification *n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	r = rtp_recv(ch->fd, &n->m, NULL, 0, NULL, FRAME_TIMEOUT_MS);
	if (r == 0 && (n->m.type != RTP_CTL_NOTIFICATION ||
		       rtp_kv_validate(n->m.payload, n->m.length) < 0 ||
		       !rtp_kv_get(n->m.payload, n->m.length, "trigger"))) {
		rtp_msg_free(&n->m);
		r = -EPROTO;
	}
	if (r < 0) {
		free(n);
		return r == -ECONNRESET || r == -ENOMEM ? r : -EPROTO;
	}
	n->split = malloc(n->m.length + 1);
	if (!n->split) {
		rt_notification_free(n);
		return -ENOMEM;
	}
	memcpy(n->split, n->m.payload, n->m.length + 1);
	for (uint32_t pos = 0; pos < n->m.length; pos += (uint32_t)strlen(n->m.payload + pos) + 1)
		n->split[strchr(n->m.payload + pos, '=') - n->m.payload] = '\0';
	*out = n;
	return 0;
}

void rt_notification_channel_close(struct rt_notification_channel *ch)
{
	if (!ch)
		return;
	close(ch->fd);
	free(ch);
}

const char *rt_notification_get(const struct rt_notification *n, const char *key)
{
	return rtp_kv_get(n->m.payload, n->m.length, key);
}

const char *rt_notification_trigger(const struct rt_notification *n)
{
	return rt_notification_get(n, "trigger");
}

int rt_notification_next(const struct rt_notification *n, size_t *pos, const char **key,
			 const char **value)
{
	if (*pos >= n->m.length)
		return 0;
	*key = n->split + *pos;
	*value = *key + strlen(*key) + 1;
	*pos += strlen(*key) + strlen(*value) + 2;
	return 1;
}

void rt_notification_free(struct rt_notification *n)
{
	if (!n)
		return;
	rtp_msg_free(&n->m);
	free(n->split);
	free(n);
}
