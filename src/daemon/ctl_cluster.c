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
 * Connecting (connect, the handshake, CLUSTER_LISTEN's reply) can wait
 * RNET_CONNECT_MS at each step on a relay that does not answer (a host
 * that drops the packets, a relay that stopped accepting): each attempt
 * runs on a thread of its own, so that the loop goes on serving commands
 * and programs; the thread says it is done on an eventfd the loop
 * watches, and the loop takes the connection.
 *
 * Concurrency: main thread, rtd_lock held; an attempt's thread uses only
 * its struct attempt and the session's relay connection (dp_relay_*,
 * which has its own lock; the session outlives the attempt:
 * ctl_cluster_forget joins it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "../common/array.h"
#include "../common/warn.h"
#include "../net/net.h"
#include "ctl.h"

/* One connection attempt, on its own thread. */
struct attempt {
	struct rtd_session *s;
	pthread_t thread;
	int fd;				/* the connection, or -errno */
	char err[CTL_ERRLEN];
	/* Set by the thread after fd and err (release), read by the main
	 * thread before them (acquire). */
	bool done;
};

struct listening {
	struct rtd_session *s;
	int fd;				/* -1 while not connected */
	uint64_t last_id;		/* the last request taken on fd */
	int64_t retry_ms;		/* no new connection before (rtd_now_ms) */
	struct attempt *at;		/* the attempt running, or NULL */
};

static struct listening *ls;
static size_t nr_ls, cap_ls;
static int timer_fd = -1, done_fd = -1;

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

static void *attempt_main(void *arg)
{
	struct attempt *a = arg;
	a->fd = dp_relay_cluster_listen(a->s, a->err, sizeof(a->err));
	__atomic_store_n(&a->done, true, __ATOMIC_RELEASE);
	uint64_t one = 1;
	if (write(done_fd, &one, sizeof(one)) < 0)
		rt_warn("cluster requests: cannot wake the loop: %s", strerror(errno));
	return NULL;
}

/* Start connecting l on a thread. */
static void connect_one(struct listening *l)
{
	struct attempt *a = calloc(1, sizeof(*a));
	int e = a ? 0 : ENOMEM;
	if (a) {
		a->s = l->s;
		e = pthread_create(&a->thread, NULL, attempt_main, a);
	}
	if (e) {
		rt_warn("session %s: cannot listen to the relay's cluster requests: %s",
			l->s->name, strerror(e));
		free(a);
		l->retry_ms = rtd_now_ms() + CTL_CLUSTER_RETRY_MS;
		return;
	}
	l->at = a;
}

/* The attempt of l ended (or is about to: joined): its connection
 * watched, or its error said. */
static void connected(struct listening *l)
{
	struct attempt *a = l->at;
	pthread_join(a->thread, NULL);
	l->at = NULL;
	int fd = a->fd;
	if (fd >= 0 && rtd_loop_add(fd, on_request, NULL) < 0) {
		close(fd);
		fd = -ENOMEM;
		snprintf(a->err, sizeof(a->err), "out of memory");
	}
	if (fd < 0) {
		rt_warn("session %s: cannot listen to the relay's cluster requests: %s",
			l->s->name, a->err);
		l->retry_ms = rtd_now_ms() + CTL_CLUSTER_RETRY_MS;
	} else {
		l->fd = fd;
		l->last_id = 0;
	}
	free(a);
}

static void on_done(int fd, short revents, void *arg)
{
	(void)revents;
	(void)arg;
	uint64_t n;
	if (read(fd, &n, sizeof(n)) < 0)
		return;
	for (size_t i = 0; i < nr_ls; i++)
		if (ls[i].at && __atomic_load_n(&ls[i].at->done, __ATOMIC_ACQUIRE))
			connected(&ls[i]);
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
		if (ls[i].fd < 0 && !ls[i].at && now >= ls[i].retry_ms)
			connect_one(&ls[i]);
}

static void timer_update(void)
{
	if (nr_ls && done_fd < 0) {
		done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (done_fd >= 0 && rtd_loop_add(done_fd, on_done, NULL) < 0) {
			close(done_fd);
			done_fd = -1;
			errno = ENOMEM;
		}
		if (done_fd < 0) {
			rt_warn("cluster requests: cannot watch connections being made: %s",
				strerror(errno));
			return;
		}
	}
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
	timer_update();
	if (done_fd >= 0)
		connect_one(l);
}

void ctl_cluster_forget(struct rtd_session *s)
{
	for (size_t i = 0; i < nr_ls; i++) {
		if (ls[i].s != s)
			continue;
		/* The attempt uses the session's relay connection: it ends
		 * first (within its timeouts). */
		if (ls[i].at)
			connected(&ls[i]);
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
	if (done_fd >= 0) {
		rtd_loop_del(done_fd);
		close(done_fd);
	}
	done_fd = -1;
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
