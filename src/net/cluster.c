/*
 * cluster.c - the payload of a cluster request (net.h's struct
 * rnet_cluster_req): pure functions over buffers.
 */
#include <errno.h>

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
