/*
 * dp_placeholder.c - link-time placeholders for the data plane's hooks
 * (rtd.h) until the app registry and the consumers are merged: every hook
 * fails with -ENOSYS and "data plane not available". Deleted when the
 * real ones land.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rtd.h"

static int unavailable(char *err, size_t errlen)
{
	snprintf(err, errlen, "data plane not available");
	return -ENOSYS;
}

void dp_app_connected(int fd, const struct ucred *peer, struct rtp_msg *first,
		      int *fds, unsigned nfds)
{
	(void)peer;
	(void)first;
	for (unsigned i = 0; i < nfds; i++)
		close(fds[i]);
	close(fd);
}

int dp_session_start(struct rtd_session *s, char *err, size_t errlen)
{
	(void)s;
	return unavailable(err, errlen);
}

int dp_session_stop(struct rtd_session *s, char *err, size_t errlen)
{
	(void)s;
	return unavailable(err, errlen);
}

void dp_session_destroy(struct rtd_session *s)
{
	(void)s;
}

int dp_session_rules_changed(struct rtd_session *s, char *err, size_t errlen)
{
	(void)s;
	return unavailable(err, errlen);
}

int dp_snapshot_record(struct rtd_session *s, const char *dir, uint64_t max_size,
		       char *out_path, size_t out_len, char *err, size_t errlen)
{
	(void)s;
	(void)dir;
	(void)max_size;
	(void)out_path;
	(void)out_len;
	return unavailable(err, errlen);
}

int dp_channel_stats(const struct rtd_session *s, const struct rtd_channel *c,
		     struct rtd_channel_stats *st)
{
	(void)s;
	(void)c;
	(void)st;
	return -ENOSYS;
}

void dp_list_events(void (*fn)(const struct rtd_app_event *e, void *arg), void *arg)
{
	(void)fn;
	(void)arg;
}

void dp_shutdown(void)
{
}
