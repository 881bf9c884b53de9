/*
 * net_cluster.c - a session's cluster requests on the relay
 * (consumer_net.h): the connection that listens to them, and a
 * trigger's request.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "consumer_net.h"

/* The daemon's requests, numbered across its sessions: the relay takes
 * on one connection only numbers above the last (no replay). */
static uint64_t cluster_seq;

int cons_net_cluster_listen(struct cons_net *n, char *err, size_t errlen)
{
	err[0] = 0;
	pthread_mutex_lock(&n->lock);
	int ret = cons_net_connect_locked(n, err, errlen);
	uint64_t sid = n->relay_session;
	pthread_mutex_unlock(&n->lock);
	if (ret < 0)
		return ret;
	int fd = cons_net_dial(n, RNET_ROLE_CTRL, err, errlen);
	if (fd < 0)
		return fd;
	struct rnet_wr w = { 0 };
	uint64_t v;
	rnet_put_u64(&w, sid);
	ret = cons_net_request(fd, RNET_CLUSTER_LISTEN, &w, &v, NULL, err, errlen);
	rnet_wr_free(&w);
	if (ret < 0) {
		close(fd);
		return ret;
	}
	return fd;
}

int cons_net_cluster_trigger(struct cons_net *n, uint64_t fired_ns, uint64_t *id,
			     uint32_t *asked, char *err, size_t errlen)
{
	err[0] = 0;
	pthread_mutex_lock(&n->lock);
	int ret = cons_net_connect_locked(n, err, errlen);
	if (!ret) {
		struct rnet_wr w = { 0 };
		uint64_t hosts = 0;
		rnet_put_u64(&w, n->relay_session);
		rnet_put_u64(&w, fired_ns + (uint64_t)n->clock_offset_ns);
		/* Relaxed: a unique, growing number is all it gives; it
		 * orders nothing else. */
		rnet_put_u64(&w, __atomic_add_fetch(&cluster_seq, 1, __ATOMIC_RELAXED));
		ret = cons_net_request(n->ctrl, RNET_CLUSTER_TRIGGER, &w, id, &hosts, err, errlen);
		rnet_wr_free(&w);
		*asked = (uint32_t)hosts;
		/* The relay's refusals leave the connection as it was; the
		 * connection's errors end it. */
		if (ret < 0 && strncmp(err, "the relay refused", 17))
			cons_net_disconnect_locked(n);
	}
	pthread_mutex_unlock(&n->lock);
	return ret;
}
