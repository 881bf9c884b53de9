/*
 * cluster.c - the payload of a cluster request (net.h's struct
 * rnet_cluster_req), pure functions over buffers; and a daemon's side of
 * its listening connection: a request read and checked, its answer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net.h"

void rnet_cluster_req_encode(struct rnet_wr *w, const struct rnet_cluster_req *q)
{
	rnet_put_u64(w, q->id);
	rnet_put_u64(w, q->fired_ns);
	rnet_put_str(w, q->session);
	rnet_put_str(w, q->origin);
	rnet_put_str(w, q->name);
}

int rnet_cluster_req_decode(const void *p, size_t len, struct rnet_cluster_req *q)
{
	struct rnet_rd r = { .p = p, .len = len };
	q->id = rnet_get_u64(&r);
	q->fired_ns = rnet_get_u64(&r);
	rnet_get_str(&r, q->session, RNET_NAME_MAX);
	rnet_get_str(&r, q->origin, RNET_HOST_MAX);
	rnet_get_str(&r, q->name, RNET_NAME_MAX);
	if (rnet_rd_end(&r) < 0 || rnet_check_name(q->session, RNET_NAME_MAX) < 0 ||
	    rnet_check_name(q->origin, RNET_HOST_MAX) < 0 ||
	    rnet_check_name(q->name, RNET_NAME_MAX) < 0)
		return -EBADMSG;
	return 0;
}

int rnet_cluster_recv(int fd, int timeout_ms, struct rnet_cluster_req *q)
{
	struct rnet_hdr h;
	uint8_t *p = NULL;
	int ret = rnet_recv(fd, &h, &p, timeout_ms);
	if (!ret && h.type != RNET_CLUSTER_SNAPSHOT)
		ret = -EBADMSG;
	if (!ret)
		ret = rnet_cluster_req_decode(p, h.length, q);
	free(p);
	return ret;
}

int rnet_cluster_check(const struct rnet_cluster_req *q, const char *session, uint64_t last_id,
		       char *err, size_t errlen)
{
	if (strcmp(q->session, session)) {
		snprintf(err, errlen, "not a request of session %s", session);
		return -EINVAL;
	}
	if (q->id <= last_id) {
		snprintf(err, errlen, "request %llu replayed (the last was %llu)",
			 (unsigned long long)q->id, (unsigned long long)last_id);
		return -EALREADY;
	}
	return 0;
}

int rnet_cluster_done(int fd, uint64_t id, int status, const char *msg, int timeout_ms)
{
	struct rnet_wr w = { 0 };
	char m[RNET_MSG_MAX + 1];
	snprintf(m, sizeof(m), "%s", msg);
	rnet_put_u64(&w, id);
	rnet_put_u32(&w, (uint32_t)status);
	rnet_put_str(&w, m);
	int ret = w.err ? w.err : rnet_send(fd, RNET_CLUSTER_DONE, w.p, (uint32_t)w.len,
					    timeout_ms);
	rnet_wr_free(&w);
	return ret;
}
