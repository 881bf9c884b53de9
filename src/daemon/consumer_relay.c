/*
 * consumer_relay.c - rtd.h's dp_relay_* hooks: a session's connection to
 * ringtrace-relayd (src/consumer's network sink, consumer_net.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/fs_util.h"

#include "../consumer/consumer_net.h"
#include "rtd.h"

int dp_relay_open(struct rtd_session *s, char *err, size_t errlen)
{
	struct cons_net *n = calloc(1, sizeof(*n));
	if (!n) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	int ret = cons_net_open(n, s->relay_host, s->relay_ctrl_port, s->relay_data_port, s->name,
				s->created, s->live_delay_us, err, errlen);
	if (ret < 0) {
		free(n);
		return ret;
	}
	s->relay = n;
	return 0;
}

void dp_relay_close(struct rtd_session *s)
{
	if (!s->relay)
		return;
	cons_net_close(s->relay);
	free(s->relay);
	s->relay = NULL;
}

void dp_relay_status(struct rtd_session *s, char *line, size_t len)
{
	struct cons_net *n = s->relay;
	if (!n) {
		snprintf(line, len, "not connected");
		return;
	}
	pthread_mutex_lock(&n->lock);
	if (n->ctrl >= 0)
		snprintf(line, len, "connected as host %s (connection %llu), clock offset %lld ns "
			 "+- %llu ns", n->host, (unsigned long long)n->epoch,
			 (long long)n->clock_offset_ns, (unsigned long long)n->clock_error_ns);
	else
		snprintf(line, len, "not connected (%s); retrying", n->last_error[0] ?
			 n->last_error : "connection lost");
	pthread_mutex_unlock(&n->lock);
}

int dp_relay_upload(struct rtd_session *s, const char *local, const char *name, char *err,
		    size_t errlen)
{
	if (!s->relay) {
		snprintf(err, errlen, "session %s has no relay connection", s->name);
		return -ENOTCONN;
	}
	int ret = cons_net_upload(s->relay, local, name, err, errlen);
	/* Sent or not, the copy here goes: snapshots live on the relay. */
	int fd = open(local, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		rt_remove_traces(fd, 8);
		close(fd);
		rmdir(local);
	}
	return ret;
}

int dp_relay_cluster_listen(struct rtd_session *s, char *err, size_t errlen)
{
	if (!s->relay) {
		snprintf(err, errlen, "session %s has no relay connection", s->name);
		return -ENOTCONN;
	}
	return cons_net_cluster_listen(s->relay, err, errlen);
}

int dp_relay_cluster_trigger(struct rtd_session *s, uint64_t fired_ns, uint64_t *id,
			     uint32_t *asked, char *err, size_t errlen)
{
	if (!s->relay) {
		snprintf(err, errlen, "session %s has no relay connection", s->name);
		return -ENOTCONN;
	}
	return cons_net_cluster_trigger(s->relay, fired_ns, id, asked, err, errlen);
}

int dp_relay_archive(struct rtd_session *s, const char *chunk, const char *name, char *where,
		     size_t wlen, char *err, size_t errlen)
{
	if (!s->relay) {
		snprintf(err, errlen, "session %s has no relay connection", s->name);
		return -ENOTCONN;
	}
	int ret = cons_net_archive(s->relay, chunk, name, where, wlen, err, errlen);
	if (ret < 0) {
		char why[256];
		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "cannot archive the trace chunk on the relay at %s: %s",
			 s->output, why);
	}
	return ret;
}
