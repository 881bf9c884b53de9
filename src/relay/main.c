/*
 * main.c - ringtrace-relayd: options, the secret, the listening ports,
 * and a thread per connection (relay.h), each authenticated first.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>

#include "../common/fs_util.h"
#include "relay.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ringtrace-relayd [-o DIR] [--listen ADDR] [-C URL] [-D URL] [-L URL]\n"
		"\n"
		"Receive the traces that ringtrace session daemons stream over the network\n"
		"(`ringtrace create S --set-url=net://HOST`) and store them as\n"
		"DIR/HOSTNAME/SESSION-DATE-TIME/... Every connection is authenticated with the\n"
		"relay's secret ($RINGTRACE_RELAY_SECRET, default RUNDIR/relay.secret, created\n"
		"with mode 0600 when missing): copy that file to each machine that streams here.\n"
		"\n"
		"  -o, --output DIR       where traces go (default ~/ringtrace-traces)\n"
		"      --listen ADDR      the address of every port (default 127.0.0.1:\n"
		"                         this machine only)\n"
		"  -C, --control-port URL tcp://ADDR[:PORT] for the control port (5342)\n"
		"  -D, --data-port URL    tcp://ADDR[:PORT] for the data port (5343)\n"
		"  -L, --live-port URL    tcp://ADDR[:PORT] for the live port (5344)\n"
		"      --live-open        serve LTTng's viewers (no secret) on a live port\n"
		"                         that is not on loopback\n"
		"  -h, --help             this help\n"
		"  -V, --version          print the version\n"
		"\n"
		"SIGTERM or SIGINT: stop, with every packet received written.\n");
}

/* tcp://ADDR[:PORT], ADDR[:PORT] or PORT, into addr and *port. */
static int parse_url(const char *s, char *addr, size_t len, int *port)
{
	/* Port 0: one the kernel chooses (logged at start). */
	if (!strncmp(s, "tcp://", 6))
		s += 6;
	else if (!strncmp(s, "tcp6://", 7))
		s += 7;
	char *end;
	long v = strtol(s, &end, 10);
	if (*s && !*end) {
		if (v < 0 || v > 65535)
			return -EINVAL;
		*port = (int)v;
		return 0;
	}
	return rnet_parse_hostport(s, *port, addr, len, port);
}

static atomic_uint nr_conns;

struct conn_arg {
	int fd;
	uint32_t role;		/* the port's */
};

static const char *role_name(uint32_t role)
{
	return role == RNET_ROLE_CTRL ? "control" : role == RNET_ROLE_DATA ? "data" : "live";
}

static void *conn_thread(void *p)
{
	struct conn_arg a = *(struct conn_arg *)p;
	free(p);
	if (a.role == RNET_ROLE_VIEWER) {	/* authenticates, or not (live_server.c) */
		relay_serve_live(a.fd);
		close(a.fd);
		atomic_fetch_sub(&nr_conns, 1);
		return NULL;
	}
	char host[RNET_HOST_MAX + 1] = "", err[512];
	uint32_t role = 0;
	int ret = rnet_server_handshake(a.fd, &relay_cfg.secret, &role, host, RNET_HANDSHAKE_MS,
					err, sizeof(err));
	if (ret == 0 && role != a.role) {
		snprintf(err, sizeof(err), "a %s connection on the %s port", role_name(role),
			 role_name(a.role));
		ret = -EPROTO;
	}
	if (ret < 0)
		relay_log("%s port: connection refused: %s", role_name(a.role), err);
	else if (role == RNET_ROLE_CTRL)
		relay_serve_ctrl(a.fd, host);
	else
		relay_serve_data(a.fd, host);
	close(a.fd);
	atomic_fetch_sub(&nr_conns, 1);
	return NULL;
}

static void accept_one(int lfd, uint32_t role)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	if (atomic_fetch_add(&nr_conns, 1) >= RELAY_CONNS_MAX) {
		atomic_fetch_sub(&nr_conns, 1);
		relay_log("%s port: refused a connection: %u connections already",
			  role_name(role), RELAY_CONNS_MAX);
		close(fd);
		return;
	}
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	struct conn_arg *a = malloc(sizeof(*a));
	pthread_t t;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (a) {
		*a = (struct conn_arg){ .fd = fd, .role = role };
		if (pthread_create(&t, &attr, conn_thread, a) == 0) {
			pthread_attr_destroy(&attr);
			return;
		}
		free(a);
	}
	pthread_attr_destroy(&attr);
	close(fd);
	atomic_fetch_sub(&nr_conns, 1);
}

/* Whether a listening socket is bound to a loopback address. */
static bool on_loopback(int fd)
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &l) < 0)
		return false;
	if (ss.ss_family == AF_INET)
		return (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss.ss_family == AF_INET6) {
		const struct in6_addr *a = &((struct sockaddr_in6 *)&ss)->sin6_addr;
		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

/* Stream files stay open while the relay runs: as many descriptors as
 * the hard limit allows. */
static void raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "listen", required_argument, NULL, 'l' },
		{ "control-port", required_argument, NULL, 'C' },
		{ "data-port", required_argument, NULL, 'D' },
		{ "live-port", required_argument, NULL, 'L' },
		{ "live-open", no_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	struct relay_config *cfg = &relay_cfg;
	const char *listen_addr = "127.0.0.1", *ctrl_url = NULL, *data_url = NULL,
		   *live_url = NULL;
	bool live_open = false;
	char err[PATH_MAX + 256];
	int c;
	cfg->ctrl_port = RNET_CTRL_PORT;
	cfg->data_port = RNET_DATA_PORT;
	cfg->live_port = RNET_LIVE_PORT;
	while ((c = getopt_long(argc, argv, "o:C:D:L:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (strlen(optarg) >= sizeof(cfg->output) - 2 * NAME_MAX) {
				fprintf(stderr, "ringtrace-relayd: output directory too long\n");
				return 2;
			}
			snprintf(cfg->output, sizeof(cfg->output), "%s", optarg);
			break;
		case 'l':
			listen_addr = optarg;
			break;
		case 'C':
			ctrl_url = optarg;
			break;
		case 'D':
			data_url = optarg;
			break;
		case 'L':
			live_url = optarg;
			break;
		case 'O':
			live_open = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("ringtrace-relayd %s\n", RINGTRACE_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "ringtrace-relayd: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	snprintf(cfg->ctrl_addr, sizeof(cfg->ctrl_addr), "%s", listen_addr);
	snprintf(cfg->data_addr, sizeof(cfg->data_addr), "%s", listen_addr);
	snprintf(cfg->live_addr, sizeof(cfg->live_addr), "%s", listen_addr);
	const struct {
		const char *url, *opt;
		char *addr;
		int *port;
	} urls[] = { { ctrl_url, "-C", cfg->ctrl_addr, &cfg->ctrl_port },
		     { data_url, "-D", cfg->data_addr, &cfg->data_port },
		     { live_url, "-L", cfg->live_addr, &cfg->live_port } };
	for (size_t i = 0; i < 3; i++) {
		if (urls[i].url && parse_url(urls[i].url, urls[i].addr, 256, urls[i].port) < 0) {
			fprintf(stderr, "ringtrace-relayd: %s %s: expected tcp://ADDR[:PORT]\n",
				urls[i].opt, urls[i].url);
			return 2;
		}
	}
	if (!cfg->output[0]) {
		const char *home = getenv("HOME");
		if (!home || !*home || strlen(home) > sizeof(cfg->output) - 2 * NAME_MAX) {
			fprintf(stderr, "ringtrace-relayd: no HOME: give the output with -o DIR\n");
			return 2;
		}
		snprintf(cfg->output, sizeof(cfg->output), "%s/ringtrace-traces", home);
	}
	if (rnet_secret_load(&cfg->secret, true, err, sizeof(err)) < 0) {
		fprintf(stderr, "ringtrace-relayd: %s\n", err);
		return 1;
	}
	int ret = rt_mkdir_p(cfg->output, err, sizeof(err));
	if (ret < 0 && ret != -EEXIST) {
		fprintf(stderr, "ringtrace-relayd: cannot use the output directory: %s\n", err);
		return 1;
	}
	raise_nofile();
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	int cfd = rnet_listen(cfg->ctrl_addr, cfg->ctrl_port, err, sizeof(err));
	int dfd = cfd < 0 ? cfd : rnet_listen(cfg->data_addr, cfg->data_port, err, sizeof(err));
	int lfd = dfd < 0 ? dfd : rnet_listen(cfg->live_addr, cfg->live_port, err, sizeof(err));
	if (sfd < 0 || cfd < 0 || dfd < 0 || lfd < 0) {
		fprintf(stderr, "ringtrace-relayd: %s\n", sfd < 0 ? strerror(errno) : err);
		return 1;
	}
	/* Port 0 (tests): the ports the kernel chose, logged below. */
	cfg->ctrl_port = rnet_local_port(cfd);
	cfg->data_port = rnet_local_port(dfd);
	cfg->live_port = rnet_local_port(lfd);
	cfg->live_plain = live_open || on_loopback(lfd);
	relay_log("control port %s:%d, data port %s:%d, live port %s:%d%s, traces in %s",
		  cfg->ctrl_addr, cfg->ctrl_port, cfg->data_addr, cfg->data_port, cfg->live_addr,
		  cfg->live_port, cfg->live_plain ? "" : " (viewers with the secret only)",
		  cfg->output);
	for (;;) {
		struct pollfd p[4] = { { .fd = cfd, .events = POLLIN },
				       { .fd = dfd, .events = POLLIN },
				       { .fd = sfd, .events = POLLIN },
				       { .fd = lfd, .events = POLLIN } };
		if (poll(p, 4, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[2].revents) {
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si) &&
			    si.ssi_signo != SIGPIPE)
				break;
		}
		if (p[0].revents)
			accept_one(cfd, RNET_ROLE_CTRL);
		if (p[1].revents)
			accept_one(dfd, RNET_ROLE_DATA);
		if (p[3].revents)
			accept_one(lfd, RNET_ROLE_VIEWER);
	}
	relay_log("exiting");
	/* Packets are written as they come (pwrite, no buffering of ours):
	 * every whole packet received is in its file and its index. */
	return 0;
}
