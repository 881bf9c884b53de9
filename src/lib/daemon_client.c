/*
 * daemon_client.c - daemon mode: at load, when no embedded session is
 * asked for and RINGTRACE_NO_DAEMON is not 1, connect to ringtraced,
 * register this program and its events and apply the buffers and
 * enablement it sends, all within the registration timeout (50 ms, or
 * RINGTRACE_DAEMON_TIMEOUT_MS: 1 to 10000); then a listener
 * thread handles the daemon's later messages. No daemon: nothing is kept
 * (no thread, no memory).
 *
 * The daemon is never trusted: any malformed message, unexpected type,
 * timeout during registration or lost connection makes the program stop
 * writing to the daemon's buffers (targets dropped), close the socket and
 * carry on untraced, with one warning at most in the process's life.
 *
 * Reconnection: a program that was registered once keeps its listener
 * thread; when the connection is lost the listener retries (jittered
 * backoff, 100 ms doubling to 2 s; each attempt bounded by the
 * registration timeout) and on success registers again with every event
 * class known by then, like a program that just started. Only the
 * listener waits for the daemon. What a dead connection leaves behind
 * (buffer sets kept mapped, see daemon_targets.c) is bounded: at most
 * RT_DC_MAX_CONNECTIONS registrations over the program's life, and the
 * limits of rt_targets_may_reconnect(); past them the program stays
 * untraced. A program that found no daemon at start has no listener and
 * never looks again.
 *
 * Fork: the child drops every target (it must not write into the
 * parent's per-pid buffers), forgets the parent's connection and
 * registers anew from a thread it starts, so fork() never blocks on the
 * daemon. Exit: GOODBYE (bounded) so the daemon drains this program's
 * buffers at once.
 *
 * Concurrency: the socket is read by one thread at a time (the
 * constructor, then the listener, which also closes it); sends and the
 * close are serialised by send_lock, and `sock` is read under state_lock.
 * Lock order: rt_registry_lock or send_lock before state_lock.
 * Buffer and enable state changes take rt_registry_lock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "../proto/proto.h"
#include "daemon_client.h"
#include "tracer_thread.h"
#include "../common/owned_fd.h"

#define RT_DC_TIMEOUT_MS 50	/* connect + register + reply, in all; also
				 * EVENTS until its reply */
#define RT_DC_TIMEOUT_MAX_MS 10000
#define RT_DC_GOODBYE_MS 20
#define RT_DC_BACKOFF_MIN_MS 100	/* first retry after a lost daemon */
#define RT_DC_BACKOFF_MAX_MS 2000	/* retries then every 1 to 2 s */

RT_HIDDEN int32_t rt_dc_pid;
RT_HIDDEN char rt_dc_procname[RTP_APP_PROCNAME_LEN + 1];
RT_HIDDEN uint32_t rt_dc_procname_size;
RT_HIDDEN char rt_dc_hostname[RTP_APP_STR_MAX + 1];
RT_HIDDEN uint32_t rt_dc_hostname_size;

static pthread_mutex_t send_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t state_cond = PTHREAD_COND_INITIALIZER;
/* Under state_lock: */
static int sock = -1;			/* -1: not connected */
/* The connection's socket as fstat saw it when it was made: the program
 * may close the number under us (a loop closing every descriptor) and
 * get it again for something of its own, so the socket is read, written,
 * shut down or closed only while fd_ours() says the number still is it
 * (owned_fd.h).
 * Written by the connecting thread (constructor, then the listener)
 * under state_lock; read by it, or by others under state_lock. */
static struct rt_owned_fd conn = RT_OWNED_FD_NONE;
static bool exiting;			/* say_goodbye ran: no reconnection */
static uint32_t connections;		/* successful registrations, ever */
static uint32_t classes_sent;		/* classes the daemon knows */
static uint64_t events_sent, events_acked;	/* EVENTS messages */
static bool warned;
/* Set once by the constructor when the listener runs; a fork child
 * starts its own. */
static bool listening;
/* Under rt_registry_lock: a fork child still writes to its parent's
 * targets; its own are published at its registration's reply. */
static bool inherited;
/* The registration timeout, set once by rt_daemon_client_init. */
static int timeout_ms = RT_DC_TIMEOUT_MS;

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Whether fd is still the connection's socket (see conn). */
static bool fd_ours(int fd)
{
	struct rt_owned_fd o = conn;
	o.fd = fd;
	return rt_owned_fd_ok(&o);
}

/* Close fd if it still is the connection's socket. */
static void close_if_ours(int fd)
{
	if (fd_ours(fd))
		close(fd);
}

static void warn_once(const char *what, const char *detail)
{
	if (warned)
		return;
	warned = true;
	rt_warn("daemon %s (%s); tracing through the daemon disabled", what, detail);
}

/* Cache the context values of this process, once per process (the
 * first registration, or a fork child's): never again on reconnection,
 * since a probe still writing into a dead connection's buffers may be
 * copying them with the sizes it reserved. */
void rt_dc_cache_identity(void)
{
	if (rt_dc_pid == (int32_t)getpid())
		return;
	rt_dc_pid = (int32_t)getpid();
	memset(rt_dc_procname, 0, sizeof(rt_dc_procname));
	if (prctl(PR_GET_NAME, rt_dc_procname, 0, 0, 0) < 0 || !rt_dc_procname[0])
		snprintf(rt_dc_procname, sizeof(rt_dc_procname), "unknown");
	rt_dc_procname_size = (uint32_t)strlen(rt_dc_procname) + 1;
	struct utsname u;
	if (uname(&u) == 0)
		snprintf(rt_dc_hostname, sizeof(rt_dc_hostname), "%s", u.nodename);
	else
		snprintf(rt_dc_hostname, sizeof(rt_dc_hostname), "unknown");
	rt_dc_hostname_size = (uint32_t)strlen(rt_dc_hostname) + 1;
}

/* Append the event classes [from, nr) as an event list. Caller holds
 * rt_registry_lock. Returns the new count of classes described. */
static uint32_t put_events(struct rtp_app_buf *b, uint32_t from)
{
	struct rt_event_class **classes;
	size_t n = rt_registry_classes(&classes);
	if (n > RTP_APP_MAX_EVENTS)
		n = RTP_APP_MAX_EVENTS;
	rtp_app_event_list_encode(b, from < n ? (uint32_t)(n - from) : 0);
	for (size_t i = from; i < n; i++) {
		struct rtp_app_event_out e = {
			.index = classes[i]->id,
			.loglevel = classes[i]->loglevel,
			.provider = classes[i]->provider,
			.name = classes[i]->name,
			.nr_fields = classes[i]->nr_fields,
			.fields = classes[i]->fields,
		};
		rtp_app_event_encode(b, &e);
	}
	return (uint32_t)n;
}

static void send_events(bool wait);

/* Drop everything the daemon gave us and close. Any thread but a fork
 * child; caller holds neither lock. */
static void disconnect(const char *what, const char *detail)
{
	pthread_mutex_lock(&rt_registry_lock);
	rt_targets_drop_all();
	pthread_mutex_unlock(&rt_registry_lock);
	pthread_mutex_lock(&state_lock);
	if (sock >= 0 && what)
		warn_once(what, detail);
	if (fd_ours(sock)) {
		/* shutdown wakes the listener's poll; the fd is closed by
		 * whoever owns the reading side (see listener). */
		shutdown(sock, SHUT_RDWR);
	}
	events_acked = events_sent;	/* nobody waits for a dead daemon */
	pthread_cond_broadcast(&state_cond);
	pthread_mutex_unlock(&state_lock);
}

/* Handle one daemon message (constructor or listener) from socket fd.
 * Returns 0, 1 for the registration reply, or -EPROTO with a message. */
static int handle(int fd, struct rtp_msg *m, int *fds, unsigned nfds, char *err,
		  size_t errlen)
{
	uint64_t cookie = 0;
	bool sync = false, dump = false;
	struct rtp_app_cursor c = rtp_app_cursor(m->payload, m->length);
	int ret = 0;
	/* CHANNEL brings its memfd, the first TRIGGERS the ring's. */
	bool fds_ok = m->type == RTP_APP_CHANNEL ? nfds == 1
		      : m->type == RTP_APP_TRIGGERS ? nfds <= 1 : nfds == 0;
	if (!fds_ok) {
		snprintf(err, errlen, "message %u with %u descriptors", m->type, nfds);
		return -EPROTO;
	}
	pthread_mutex_lock(&rt_registry_lock);
	switch (m->type) {
	case RTP_APP_CHANNEL: {
		struct rtp_app_channel ch;
		if (rtp_app_channel_decode(&c, &ch) < 0) {
			snprintf(err, errlen, "malformed CHANNEL message");
			ret = -EPROTO;
			break;
		}
		ret = rt_dbuf_add(&ch, fds[0], err, errlen);
		break;
	}
	case RTP_APP_ENABLE: {
		struct rtp_app_enable en;
		if (rtp_app_enable_decode(&c, &en) < 0) {
			snprintf(err, errlen, "malformed ENABLE message");
			ret = -EPROTO;
			break;
		}
		ret = rt_dbuf_enable(&en, err, errlen);
		if (ret == 0 && !inherited && (ret = rt_targets_publish()) < 0)
			snprintf(err, errlen, "too many enablement changes");
		break;
	}
	case RTP_APP_DISABLE_SESSION: {
		uint64_t id;
		if (rtp_app_disable_session_decode(&c, &id) < 0) {
			snprintf(err, errlen, "malformed DISABLE_SESSION");
			ret = -EPROTO;
			break;
		}
		rt_dbuf_disable_session(id);
		if (!inherited && (ret = rt_targets_publish()) < 0)
			snprintf(err, errlen, "too many enablement changes");
		break;
	}
	case RTP_APP_TRIGGERS:
		ret = rt_triggers_apply(&c, nfds ? fds[0] : -1, err, errlen);
		break;
	case RTP_APP_SYNC:
	case RTP_APP_STATEDUMP:
		if (rtp_app_sync_decode(&c, &cookie) < 0) {
			snprintf(err, errlen, "malformed %s",
				 m->type == RTP_APP_SYNC ? "SYNC" : "STATEDUMP");
			ret = -EPROTO;
		}
		sync = ret == 0;
		dump = sync && m->type == RTP_APP_STATEDUMP;
		break;
	case RTP_APP_REGISTER_REPLY:
	case RTP_APP_EVENTS_REPLY:
		if (m->status == -E2BIG) {
			/* The daemon's per-program cap (its log says more). */
			snprintf(err, errlen, "refused: more event classes than the daemon "
				 "takes from one program");
			ret = -EPROTO;
		} else if (m->status < 0) {
			snprintf(err, errlen, "refused: %s", strerror(-m->status));
			ret = -EPROTO;
		} else if (m->type == RTP_APP_REGISTER_REPLY) {
			enum rtp_app_clock clk;
			if (rtp_app_register_reply_decode(&c, &clk) < 0) {
				snprintf(err, errlen, "malformed registration reply");
				ret = -EPROTO;
			} else {
				rt_clock_adopt(clk == RTP_APP_CLOCK_TSC);
				ret = 1;
				/* A fork child's own targets replace its
				 * parent's, every class at once. */
				if (inherited && rt_targets_publish() < 0) {
					snprintf(err, errlen, "too many enablement changes");
					ret = -EPROTO;
				}
				inherited = false;
			}
		} else if (rtp_app_end(&c) < 0) {
			snprintf(err, errlen, "malformed EVENTS_REPLY");
			ret = -EPROTO;
		} else {
			pthread_mutex_lock(&state_lock);
			events_acked++;
			pthread_cond_broadcast(&state_cond);
			pthread_mutex_unlock(&state_lock);
		}
		break;
	default:
		snprintf(err, errlen, "unexpected message type %u", m->type);
		ret = -EPROTO;
	}
	pthread_mutex_unlock(&rt_registry_lock);
	for (unsigned i = 0; i < nfds; i++)
		close(fds[i]);
	/* The daemon waits (bounded) for the answer, then snapshots. */
	if (dump)
		rt_statedump_run();
	if (sync) {
		uint8_t reply[RTP_APP_SYNC_SIZE];
		rtp_app_sync_encode(reply, cookie);
		pthread_mutex_lock(&send_lock);
		int r = !fd_ours(fd) ? -EBADF :
			rtp_send(fd, RTP_APP_SYNC_REPLY, 0, reply, sizeof(reply), NULL, 0,
				 timeout_ms);
		pthread_mutex_unlock(&send_lock);
		if (r < 0) {
			snprintf(err, errlen, "cannot answer: %s", strerror(-r));
			ret = -EPROTO;
		}
	}
	return ret;
}

/* Wait until fd is readable (at most wait_ms, -1: no limit), then
 * check that it still is the connection's socket: the program may have
 * closed it while we waited (poll keeps the old socket), and reused the
 * number. Returns 0, -ETIMEDOUT, or -EBADF (not ours any more). */
static int wait_readable(int fd, int wait_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int r;
	while ((r = poll(&p, 1, wait_ms)) < 0 && errno == EINTR)
		;
	if (r == 0)
		return -ETIMEDOUT;
	return fd_ours(fd) ? 0 : -EBADF;
}

/* Unmap the dead buffer sets whose grace period passed (daemon_targets.c);
 * returns whether some still wait. The listener thread only. */
static bool reclaim(void)
{
	pthread_mutex_lock(&rt_registry_lock);
	bool waiting = rt_targets_reclaim();
	pthread_mutex_unlock(&rt_registry_lock);
	return waiting;
}

/* Read and apply the daemon's messages on `fd` until the connection is
 * lost or a message is bad; then drop every target and close (unless the
 * program closed it under us). While dead buffer sets wait for their
 * grace period, it wakes every RT_DC_RECLAIM_MS to try again. The
 * listener thread only. */
static void serve(int fd)
{
	char err[160];
	for (;;) {
		struct rtp_msg m;
		int fds[RTP_MAX_FDS];
		unsigned nfds = 0;
		int r;
		while ((r = wait_readable(fd, reclaim() ? RT_DC_RECLAIM_MS : -1)) == -ETIMEDOUT)
			;
		if (r == 0)
			r = rtp_recv(fd, &m, fds, 1, &nfds, -1);
		if (r < 0) {
			/* Quietly: a daemon that went away, or a socket
			 * the program closed (-EBADF): the listener
			 * connects again. */
			disconnect(r == -ECONNRESET || r == -EPIPE || r == -EBADF ? NULL
										: "connection failed",
				   strerror(-r));
			break;
		}
		r = handle(fd, &m, fds, nfds, err, sizeof(err));
		rtp_msg_free(&m);
		if (r < 0) {
			disconnect("sent a bad message", err);
			break;
		}
	}
	/* Under send_lock: a sender that saw sock == fd keeps the number
	 * valid until it is done. */
	pthread_mutex_lock(&send_lock);
	pthread_mutex_lock(&state_lock);
	if (sock == fd)
		sock = -1;
	pthread_mutex_unlock(&state_lock);
	close_if_ours(fd);
	pthread_mutex_unlock(&send_lock);
}

/* Send REGISTER on `fd` and apply what comes until the reply, within
 * `deadline`. Sets *sent to the classes described. Returns 0, -EPROTO
 * (err set) or -errno of the socket. */
static int register_on(int fd, int64_t deadline, uint32_t *sent, char *err,
		       size_t errlen)
{
	rt_dc_cache_identity();
	struct rtp_app_buf b = { 0 };
	struct rtp_app_register reg = {
		.pid = (uint32_t)rt_dc_pid,
		.uid = (uint32_t)getuid(),
		.abi = RT_ABI_VERSION,
		.ptr_size = (uint8_t)sizeof(void *),
#if defined(__x86_64__) || defined(__i386__)
		.clocks = RTP_APP_CAN_TSC | RTP_APP_CAN_MONOTONIC,
#else
		.clocks = RTP_APP_CAN_MONOTONIC,
#endif
	};
	memcpy(reg.procname, rt_dc_procname, strnlen(rt_dc_procname, RTP_APP_PROCNAME_LEN - 1));
	rtp_app_register_encode(&b, &reg);
	pthread_mutex_lock(&rt_registry_lock);
	*sent = put_events(&b, 0);
	pthread_mutex_unlock(&rt_registry_lock);
	int r = b.err;
	if (r == 0)
		r = !fd_ours(fd) ? -EBADF :
			rtp_send(fd, RTP_APP_REGISTER, 0, b.data, b.len, NULL, 0,
				 (int)(deadline - now_ms()));
	rtp_app_buf_free(&b);
	while (r == 0) {
		int left = (int)(deadline - now_ms());
		struct rtp_msg m;
		int fds[RTP_MAX_FDS];
		unsigned nfds = 0;
		if (left <= 0)
			return -ETIMEDOUT;
		r = wait_readable(fd, left);
		if (r == 0)
			r = rtp_recv(fd, &m, fds, 1, &nfds, left);
		if (r < 0)
			break;
		r = handle(fd, &m, fds, nfds, err, errlen);
		rtp_msg_free(&m);
		if (r == 1)
			return 0;
	}
	return r;
}

/* One connection attempt: connect, register, publish the socket.
 * Bounded by timeout_ms. No daemon: returns -errno at once, nothing
 * kept. A daemon that fails the registration: targets dropped, one
 * warning. Returns the socket or -errno. */
static int connect_once(void)
{
	int64_t deadline = now_ms() + timeout_ms;
	char err[1024];
	int fd = rtp_connect(timeout_ms, err, sizeof(err));
	if (fd < 0 && err[0]) {
		pthread_mutex_lock(&state_lock);
		warn_once("not trusted", err);
		pthread_mutex_unlock(&state_lock);
	}
	if (fd < 0)
		return fd;
	struct rt_owned_fd o;
	int r = rt_owned_fd_take(&o, fd);
	if (r < 0)
		return r;
	pthread_mutex_lock(&state_lock);
	conn = o;
	pthread_mutex_unlock(&state_lock);
	uint32_t sent = 0;
	r = register_on(fd, deadline, &sent, err, sizeof(err));
	if (r < 0)
		goto fail;
	pthread_mutex_lock(&state_lock);
	if (exiting) {
		pthread_mutex_unlock(&state_lock);
		r = -ECANCELED;
		snprintf(err, sizeof(err), "program exiting");
		goto fail;
	}
	sock = fd;
	classes_sent = sent;
	connections++;
	pthread_mutex_unlock(&state_lock);
	/* Classes registered while we were not connected (dlopen in another
	 * thread): described now; the listener takes the reply. */
	send_events(false);
	return fd;

fail:
	pthread_mutex_lock(&rt_registry_lock);
	rt_targets_drop_all();
	pthread_mutex_unlock(&rt_registry_lock);
	close_if_ours(fd);
	pthread_mutex_lock(&state_lock);
	if (r != -ECANCELED)
		warn_once("registration failed", err[0] ? err : strerror(-r));
	pthread_mutex_unlock(&state_lock);
	return r;
}

/* Whether the listener may connect again: the program is not exiting and
 * the bounds on what dead connections leave behind (daemon_targets.c,
 * RT_DC_MAX_CONNECTIONS) are not reached. */
static bool may_reconnect(void)
{
	pthread_mutex_lock(&rt_registry_lock);
	bool ok = rt_targets_may_reconnect();
	pthread_mutex_unlock(&rt_registry_lock);
	pthread_mutex_lock(&state_lock);
	ok = ok && !exiting && connections < RT_DC_MAX_CONNECTIONS;
	pthread_mutex_unlock(&state_lock);
	return ok;
}

/* Sleep about `ms` (a random 50 to 100 %, so that programs that lost the
 * same daemon do not all come back at once). */
static void backoff_sleep(unsigned ms, unsigned *seed)
{
	unsigned half = ms / 2;
	unsigned d = half + (unsigned)rand_r(seed) % (half + 1);
	struct timespec ts = { d / 1000, (long)(d % 1000) * 1000000L };
	nanosleep(&ts, NULL);	/* EINTR: a shorter sleep, still no spin */
}

/*
 * The listener thread: serves the connection `arg` (or, in a fork child,
 * -1: connects first), and whenever the connection is lost retries with
 * a jittered backoff, RT_DC_BACKOFF_MIN_MS doubling to
 * RT_DC_BACKOFF_MAX_MS (back to the minimum only after a connection that
 * lasted RT_DC_BACKOFF_MAX_MS), until may_reconnect() says no. Only this thread
 * waits on the daemon; the program's threads never do (except
 * rt_daemon_client_new_events' bounded wait for a connected daemon).
 */
static void *listener(void *arg)
{
	rt__tracer_thread = 1;
	int fd = (int)(intptr_t)arg;
	unsigned delay = RT_DC_BACKOFF_MIN_MS;
	unsigned seed = (unsigned)getpid() ^ (unsigned)now_ms();
	if (fd < 0 && may_reconnect())
		fd = connect_once();
	/* A fork child that could not register stops writing where its
	 * parent's events went. */
	pthread_mutex_lock(&rt_registry_lock);
	if (inherited)
		rt_targets_drop_all();
	inherited = false;
	pthread_mutex_unlock(&rt_registry_lock);
	for (;;) {
		if (fd >= 0) {
			/* The name tells the registration is done (tests wait
			 * for it after fork). */
			pthread_setname_np(pthread_self(), "rt-listener");
			/* Registered: the sessions that record the state dump
			 * have their buffers now. */
			rt_statedump_run();
			int64_t since = now_ms();
			serve(fd);
			/* A daemon that drops us at once (bad messages) is
			 * retried no faster than one that is absent. */
			if (now_ms() - since >= RT_DC_BACKOFF_MAX_MS)
				delay = RT_DC_BACKOFF_MIN_MS;
		}
		reclaim();
		if (!may_reconnect())
			break;
		backoff_sleep(delay, &seed);
		delay = delay * 2 > RT_DC_BACKOFF_MAX_MS ? RT_DC_BACKOFF_MAX_MS : delay * 2;
		if (!may_reconnect())
			break;
		fd = connect_once();
	}
	return NULL;
}

static int start_listener(int fd)
{
	pthread_t th;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	int r = pthread_create(&th, &attr, listener, (void *)(intptr_t)fd);
	pthread_attr_destroy(&attr);
	return -r;
}

/* The constructor's attempt: connect and register, then start the
 * listener. Returns 0 or -errno (no daemon: nothing kept). */
static int connect_and_register(void)
{
	int fd = connect_once();
	if (fd < 0)
		return fd;
	int r = start_listener(fd);
	if (r < 0) {
		disconnect("registration failed", "no listener thread");
		pthread_mutex_lock(&state_lock);
		sock = -1;
		pthread_mutex_unlock(&state_lock);
		close_if_ours(fd);
	}
	return r;
}

/* Describe to the daemon the classes registered since the last REGISTER
 * or EVENTS; with `wait`, wait (bounded) for its EVENTS_REPLY. Any
 * thread but the listener when `wait`; caller holds no lock. */
static void send_events(bool wait)
{
	pthread_mutex_lock(&state_lock);
	if (sock < 0) {
		pthread_mutex_unlock(&state_lock);
		return;
	}
	int fd = sock;
	uint32_t from = classes_sent;
	pthread_mutex_unlock(&state_lock);

	struct rtp_app_buf b = { 0 };
	pthread_mutex_lock(&rt_registry_lock);
	uint32_t upto = put_events(&b, from);
	pthread_mutex_unlock(&rt_registry_lock);
	if (b.err || upto <= from) {
		rtp_app_buf_free(&b);
		return;
	}
	pthread_mutex_lock(&send_lock);
	pthread_mutex_lock(&state_lock);
	bool stale = sock != fd || classes_sent != from || !fd_ours(fd);
	uint64_t mine = 0;
	if (!stale) {
		classes_sent = upto;
		mine = ++events_sent;
	}
	pthread_mutex_unlock(&state_lock);
	int r = stale ? 0 : rtp_send(fd, RTP_APP_EVENTS, 0, b.data, b.len, NULL, 0,
				     timeout_ms);
	pthread_mutex_unlock(&send_lock);
	rtp_app_buf_free(&b);
	if (r < 0) {
		/* A daemon that went away (-EPIPE, -ECONNRESET) is no
		 * failure to report: the listener sees it too and connects
		 * again, as for a loss it reads itself. */
		disconnect(r == -EPIPE || r == -ECONNRESET ? NULL : "connection failed",
			   strerror(-r));
		return;
	}
	if (stale || !wait)
		return;
	/* Wait (bounded) for the daemon's enablement of the new events, so
	 * a library's events are recorded from its first one. */
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&state_lock);
	while (events_acked < mine &&
	       pthread_cond_timedwait(&state_cond, &state_lock, &until) == 0)
		;
	pthread_mutex_unlock(&state_lock);
}

void rt_daemon_client_new_events(void)
{
	send_events(true);
}

static void say_goodbye(void)
{
	pthread_mutex_lock(&send_lock);
	pthread_mutex_lock(&state_lock);
	exiting = true;		/* the listener connects no more */
	int fd = sock;
	pthread_mutex_unlock(&state_lock);
	if (fd_ours(fd))
		rtp_send(fd, RTP_APP_GOODBYE, 0, NULL, 0, NULL, 0, RT_DC_GOODBYE_MS);
	pthread_mutex_unlock(&send_lock);
}

void rt_daemon_client_fork_prepare_outer(void)
{
	pthread_mutex_lock(&send_lock);
}

void rt_daemon_client_fork_prepare_inner(void)
{
	pthread_mutex_lock(&state_lock);
}

void rt_daemon_client_fork_parent_inner(void)
{
	pthread_mutex_unlock(&state_lock);
}

void rt_daemon_client_fork_parent_outer(void)
{
	pthread_mutex_unlock(&send_lock);
}

/* Fork child: single-threaded, with every lock taken before fork (fork.c)
 * and initialized anew. The parent had a listener (connected or
 * retrying): the child gets its own, which registers it as a new program
 * (and retries like the parent's). Until that registration is done, the
 * child records where its parent did (the buffer sets are shared memory
 * the daemon reads), with its own vpid and vtid; RINGTRACE_NO_INHERIT=1:
 * it records nothing until then. */
void rt_daemon_client_fork_child(void)
{
	pthread_mutex_init(&send_lock, NULL);
	pthread_mutex_init(&state_lock, NULL);
	pthread_cond_init(&state_cond, NULL);
	if (!listening)
		return;
	rt_dc_cache_identity();
	const char *ni = getenv("RINGTRACE_NO_INHERIT");
	inherited = !ni || strcmp(ni, "1");
	rt_targets_fork_child(inherited);
	close_if_ours(sock);	/* the parent's connection: not the child's */
	sock = -1;
	classes_sent = 0;
	events_sent = events_acked = 0;
	exiting = false;
	start_listener(-1);
}

void rt_daemon_client_init(void)
{
	const char *v = getenv("RINGTRACE_NO_DAEMON");
	if (v && !strcmp(v, "1"))
		return;
	if ((v = getenv("RINGTRACE_DAEMON_TIMEOUT_MS"))) {
		char *end;
		long ms = strtol(v, &end, 10);
		if (*v && !*end && ms >= 1 && ms <= RT_DC_TIMEOUT_MAX_MS)
			timeout_ms = (int)ms;
		else
			rt_warn("RINGTRACE_DAEMON_TIMEOUT_MS: '%s' is not 1 to %d; using %d",
				v, RT_DC_TIMEOUT_MAX_MS, RT_DC_TIMEOUT_MS);
	}
	if (connect_and_register() < 0)
		return;
	listening = true;
	atexit(say_goodbye);
}
