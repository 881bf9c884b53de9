/*
 * ctl_cluster.c - cluster requests on the daemon's side (ctl.h,
 * docs/relay.md). Each snapshot session sent to a relay has one more
 * connection to it, authenticated as the others (the relay's secret,
 * both ways), on which the relay sends the requests of every trigger
 * with a snapshot-session --cluster action of that session's name, from
 * whichever host: each is a snapshot, sent to the relay under the name
 * the relay gave (the same on every host), then answered with its
 * outcome. Requests come from that connection only, for its session,
 * each with a number above the last one (a request replayed on it is
 * refused). A lost connection is opened again by the loop's timer, at
 * most every CTL_CLUSTER_RETRY_MS.
 *
 * Concurrency: main thread, rtd_lock held.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/array.h"
#include "../common/warn.h"
#include "../net/net.h"
#include "ctl.h"

struct listening {
	struct rtd_session *s;
	int fd;				/* -1 while not connected */
	uint64_t last_id;		/* the last request taken on fd */
	int64_t retry_ms;		/* no new connection before (rtd_now_ms) */
};

static struct listening *ls;
static size_t nr_ls, cap_ls;
static int timer_fd = -1;

static struct listening *by_fd(int fd)
{
	for (size_t i = 0; i < nr_ls; i++)
		if (ls[i].fd == fd)
			return &ls[i];
	return NULL;
}

static void drop(struct listening *l)
{
	if (l->fd < 0)
		return;
	rtd_loop_del(l->fd);
	close(l->fd);
	l->fd = -1;
	l->retry_ms = rtd_now_ms() + CTL_CLUSTER_RETRY_MS;
}

static void on_request(int fd, short revents, void *arg)
{
	(void)revents;
	(void)arg;
	struct listening *l = by_fd(fd);
	if (!l)
		return;
	struct rnet_cluster_req q;
	/* Readable: the frame's bytes are there or on their way. */
	int ret = rnet_cluster_recv(fd, 1000, &q);
	if (ret < 0) {
		rt_warn("session %s: the relay's cluster requests connection closed: %s",
			l->s->name, ret == -ECONNRESET ? "closed by the relay" : strerror(-ret));
		drop(l);
		return;
	}
	char path[PATH_MAX] = "", err[CTL_ERRLEN] = "";
	ret = rnet_cluster_check(&q, l->s->name, l->last_id, err, sizeof(err));
	if (!ret) {
		l->last_id = q.id;
		ret = ctl_session_snapshot_relay(l->s, q.name, path, sizeof(path), err, sizeof(err));
	}
	if (ret < 0)
		rt_warn("session %s: cluster snapshot %llu (trigger on host %s) refused: %s",
			l->s->name, (unsigned long long)q.id, q.origin, err);
	else
		rt_warn("session %s: cluster snapshot %llu (trigger on host %s) recorded in %s",
			l->s->name, (unsigned long long)q.id, q.origin, path);
	if (rnet_cluster_done(fd, q.id, ret, err, 1000) < 0)
		drop(l);
}

static void connect_one(struct listening *l)
{
	char err[CTL_ERRLEN];
	int fd = dp_relay_cluster_listen(l->s, err, sizeof(err));
	if (fd >= 0 && rtd_loop_add(fd, on_request, NULL) < 0) {
		close(fd);
		fd = -ENOMEM;
		snprintf(err, sizeof(err), "out of memory");
	}
	if (fd < 0) {
		rt_warn("session %s: cannot listen to the relay's cluster requests: %s",
			l->s->name, err);
		l->retry_ms = rtd_now_ms() + CTL_CLUSTER_RETRY_MS;
		return;
	}
	l->fd = fd;
	l->last_id = 0;
}

static void on_timer(int fd, short revents, void *arg)
{
	(void)revents;
	(void)arg;
	uint64_t ticks;
	if (read(fd, &ticks, sizeof(ticks)) < 0)
		return;
	int64_t now = rtd_now_ms();
	for (size_t i = 0; i < nr_ls; i++)
		if (ls[i].fd < 0 && now >= ls[i].retry_ms)
			connect_one(&ls[i]);
}

static void timer_update(void)
{
	if (nr_ls && timer_fd < 0) {
		timer_fd = rtd_loop_add_timer(on_timer, NULL);
		if (timer_fd < 0) {
			rt_warn("cluster requests: no timer to connect again: %s",
				strerror(-timer_fd));
			return;
		}
	}
	if (timer_fd >= 0)
		rtd_loop_timer_set(timer_fd, nr_ls ? CTL_CLUSTER_RETRY_MS : 0);
}

void ctl_cluster_add(struct rtd_session *s)
{
	if (!s->net || !s->snapshot)
		return;
	if (RT_ARRAY_GROW(ls, cap_ls, nr_ls + 1, 4) < 0) {
		rt_warn("session %s: out of memory: no cluster requests", s->name);
		return;
	}
	struct listening *l = &ls[nr_ls++];
	*l = (struct listening){ .s = s, .fd = -1 };
	connect_one(l);
	timer_update();
}

void ctl_cluster_forget(struct rtd_session *s)
{
	for (size_t i = 0; i < nr_ls; i++) {
		if (ls[i].s != s)
			continue;
		drop(&ls[i]);
		ls[i] = ls[--nr_ls];
		break;
	}
	timer_update();
}

void ctl_cluster_fini(void)
{
	while (nr_ls)
		ctl_cluster_forget(ls[0].s);
	free(ls);
	ls = NULL;
	cap_ls = 0;
	if (timer_fd >= 0) {
		rtd_loop_del(timer_fd);
		close(timer_fd);
	}
	timer_fd = -1;
}

int ctl_cluster_trigger(struct rtd_session *s, uint64_t fired_ns, struct rtp_kv *n, char *err,
			size_t errlen)
{
	if (!s->net || !s->snapshot) {
		snprintf(err, errlen, "session %s does not send snapshots to a relay: --cluster "
			 "needs one created with --snapshot --set-url=net://RELAY", s->name);
		return -EOPNOTSUPP;
	}
	uint64_t id = 0;
	uint32_t asked = 0;
	int ret = dp_relay_cluster_trigger(s, fired_ns, &id, &asked, err, errlen);
	if (ret < 0)
		return ret;
	rtp_kv_addf(n, "cluster-request", "%llu", (unsigned long long)id);
	rtp_kv_addf(n, "cluster-hosts", "%u", asked);
	return 0;
}
