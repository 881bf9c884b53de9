/*
 * cluster.c - cluster requests (relay.h, docs/relay.md): a trigger on one
 * host asks every host that has a session of the same name listening
 * here for a snapshot; each answers once its snapshot is stored, and the
 * relay logs how long after the trigger the last one was.
 *
 * cluster_lock guards the listeners' list and the requests' ring; pushes
 * to listeners are written under it (one writer per connection: the
 * listener's own thread only reads), each within CLUSTER_PUSH_MS, so a
 * daemon that stops reading costs that much once (its connection is then
 * shut down) and never blocks the relay. Lock order: relay_lock is never
 * taken under cluster_lock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sys/socket.h>

#include "relay.h"

#define CLUSTER_PUSH_MS 200

struct listener {
	int fd;
	char host[RNET_HOST_MAX + 1];
	char session[RNET_NAME_MAX + 1];
	struct listener *next;
};

/* One host asked by a request. */
struct asked {
	const struct listener *l;	/* NULL once it answered or went away */
	char host[RNET_HOST_MAX + 1];
	int32_t status;
	double ms;			/* after the trigger, when it answered */
	char msg[RNET_MSG_MAX + 1];
};

struct request {
	struct rnet_cluster_req q;	/* q.id 0: a free slot */
	uint64_t asked_mono_ns;		/* when the relay asked (rate limit) */
	uint32_t nr, nr_done;
	struct asked h[RELAY_CLUSTER_HOSTS];
};

static pthread_mutex_t cluster_lock = PTHREAD_MUTEX_INITIALIZER;
static struct listener *listeners;
static struct request reqs[RELAY_CLUSTER_REQS];
static uint64_t next_id = 1;

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The request's summary, once every host asked answered (or went
 * away). cluster_lock held. */
static void finish(struct request *r)
{
	char line[768];
	size_t n = 0;
	double last = 0;
	uint32_t ok = 0;
	for (uint32_t i = 0; i < r->nr; i++) {
		const struct asked *a = &r->h[i];
		if (a->status == 0) {
			ok++;
			if (a->ms > last)
				last = a->ms;
		}
		int w = a->status == 0 ? snprintf(line + n, sizeof(line) - n, "%s%s %.1f ms",
						  i ? ", " : "", a->host, a->ms)
				       : snprintf(line + n, sizeof(line) - n, "%s%s failed: %s",
						  i ? ", " : "", a->host, a->msg);
		if (w < 0 || (size_t)w >= sizeof(line) - n)
			break;
		n += (size_t)w;
	}
	relay_log("cluster snapshot %llu of session %s (trigger on host %s): %u of %u hosts "
		  "stored as %s, the last %.1f ms after the trigger (%s)",
		  (unsigned long long)r->q.id, r->q.session, r->q.origin, ok, r->nr, r->q.name,
		  last, line);
}

/* Host entry i of r answered (status, msg) or went away. */
static void answered(struct request *r, uint32_t i, int32_t status, const char *msg)
{
	struct asked *a = &r->h[i];
	a->l = NULL;
	a->status = status;
	a->ms = (double)((int64_t)(rnet_realtime_ns() - r->q.fired_ns)) / 1e6;
	snprintf(a->msg, sizeof(a->msg), "%s", msg);
	if (++r->nr_done == r->nr)
		finish(r);
}

int relay_cluster_request(const char *origin, const struct relay_session *s, uint64_t fired_ns,
			  uint64_t *id, uint32_t *asked, char *err, size_t errlen)
{
	pthread_mutex_lock(&cluster_lock);
	uint64_t now = mono_ns();
	struct request *r = &reqs[next_id % RELAY_CLUSTER_REQS];
	/* At most one request a second per session name, and never one
	 * that would forget a request of the last second. */
	bool busy = r->q.id && now - r->asked_mono_ns < RELAY_CLUSTER_MIN_MS * 1000000ull;
	for (size_t i = 0; i < RELAY_CLUSTER_REQS && !busy; i++)
		busy = reqs[i].q.id && !strcmp(reqs[i].q.session, s->name) &&
		       now - reqs[i].asked_mono_ns < RELAY_CLUSTER_MIN_MS * 1000000ull;
	if (busy) {
		pthread_mutex_unlock(&cluster_lock);
		snprintf(err, errlen, "cluster requests of session %s: at most one every %u ms",
			 s->name, RELAY_CLUSTER_MIN_MS);
		return -EBUSY;
	}
	memset(r, 0, sizeof(*r));
	r->q.id = next_id++;
	r->q.fired_ns = fired_ns;
	r->asked_mono_ns = now;
	snprintf(r->q.session, sizeof(r->q.session), "%s", s->name);
	snprintf(r->q.origin, sizeof(r->q.origin), "%s", origin);
	char date[32];
	time_t t = time(NULL);
	struct tm tm;
	localtime_r(&t, &tm);
	strftime(date, sizeof(date), "%Y%m%d-%H%M%S", &tm);
	snprintf(r->q.name, sizeof(r->q.name), "cluster-%llu-%s", (unsigned long long)r->q.id,
		 date);
	struct rnet_wr w = { 0 };
	rnet_cluster_req_encode(&w, &r->q);
	for (struct listener *l = listeners; l && !w.err; l = l->next) {
		if (strcmp(l->session, s->name))
			continue;
		if (r->nr == RELAY_CLUSTER_HOSTS) {
			relay_log("cluster snapshot %llu of session %s: more than %u hosts, "
				  "host %s not asked", (unsigned long long)r->q.id, s->name,
				  RELAY_CLUSTER_HOSTS, l->host);
			continue;
		}
		int ret = rnet_send(l->fd, RNET_CLUSTER_SNAPSHOT, w.p, (uint32_t)w.len,
				    CLUSTER_PUSH_MS);
		if (ret < 0) {
			relay_log("host %s: cannot ask for cluster snapshot %llu: %s", l->host,
				  (unsigned long long)r->q.id, strerror(-ret));
			shutdown(l->fd, SHUT_RDWR);	/* its thread ends it */
			continue;
		}
		struct asked *a = &r->h[r->nr++];
		a->l = l;
		snprintf(a->host, sizeof(a->host), "%s", l->host);
	}
	int ret = w.err;
	rnet_wr_free(&w);
	*id = r->q.id;
	*asked = r->nr;
	relay_log("cluster snapshot %llu of session %s: trigger on host %s, %u hosts asked",
		  (unsigned long long)r->q.id, s->name, origin, r->nr);
	pthread_mutex_unlock(&cluster_lock);
	if (ret < 0)
		snprintf(err, errlen, "%s", strerror(-ret));
	return ret;
}

/* A CLUSTER_DONE of listener l. cluster_lock held. */
static int done(const struct listener *l, const uint8_t *p, uint32_t len)
{
	struct rnet_rd rd = { .p = p, .len = len };
	char msg[RNET_MSG_MAX + 1];
	uint64_t id = rnet_get_u64(&rd);
	int32_t status = (int32_t)rnet_get_u32(&rd);
	rnet_get_str(&rd, msg, RNET_MSG_MAX);
	if (rnet_rd_end(&rd) < 0 || status > 0)
		return -EBADMSG;
	struct request *r = &reqs[id % RELAY_CLUSTER_REQS];
	for (uint32_t i = 0; id && r->q.id == id && i < r->nr; i++) {
		if (r->h[i].l == l) {
			answered(r, i, status, msg);
			return 0;
		}
	}
	relay_log("host %s: an answer to cluster snapshot %llu, which it was not asked for "
		  "(or forgotten): ignored", l->host, (unsigned long long)id);
	return 0;
}

int relay_cluster_listen(int fd, const char *host, const struct relay_session *s)
{
	struct listener *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->fd = fd;
	snprintf(l->host, sizeof(l->host), "%s", host);
	snprintf(l->session, sizeof(l->session), "%s", s->name);
	pthread_mutex_lock(&cluster_lock);
	l->next = listeners;
	listeners = l;
	pthread_mutex_unlock(&cluster_lock);
	relay_log("host %s: cluster requests of session %s listened to", host, s->name);
	int ret = 0;
	while (!ret) {
		struct rnet_hdr h;
		uint8_t *p = NULL;
		ret = rnet_recv(fd, &h, &p, -1);
		if (!ret && h.type != RNET_CLUSTER_DONE)
			ret = -EBADMSG;
		if (!ret) {
			pthread_mutex_lock(&cluster_lock);
			ret = done(l, p, h.length);
			pthread_mutex_unlock(&cluster_lock);
		}
		free(p);
	}
	pthread_mutex_lock(&cluster_lock);
	for (struct listener **pp = &listeners; *pp; pp = &(*pp)->next) {
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	}
	for (size_t i = 0; i < RELAY_CLUSTER_REQS; i++)
		for (uint32_t j = 0; reqs[i].q.id && j < reqs[i].nr; j++)
			if (reqs[i].h[j].l == l)
				answered(&reqs[i], j, -ECONNRESET, "connection lost");
	pthread_mutex_unlock(&cluster_lock);
	free(l);
	return ret;
}
