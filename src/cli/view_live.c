/*
 * view_live.c - `ringtrace view --live net://HOST[:PORT][/host/H/S]`:
 * list the sessions a relay serves live (LTTng's lttng-relayd or
 * ringtrace-relayd), or follow one (src/live's viewer feeds the reader),
 * stopping cleanly on SIGINT and SIGTERM. docs/live.md is the user's
 * description.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../live/live_viewer.h"
#include "cli.h"
#include "view.h"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

bool view_live_stopped(void)
{
	return stop_flag;
}

/* One line per host and session name (LTTng's relay lists one entry per
 * domain and ABI: they are summed), as babeltrace2 lists them. */
static void print_sessions(const struct lv_url *u, const struct lv_session *s, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		bool seen = false;
		for (size_t j = 0; j < k && !seen; j++)
			seen = !strcmp(s[j].hostname, s[k].hostname) && !strcmp(s[j].name, s[k].name);
		if (seen)
			continue;
		uint64_t streams = 0, clients = 0;
		for (size_t j = k; j < n; j++)
			if (!strcmp(s[j].hostname, s[k].hostname) && !strcmp(s[j].name, s[k].name)) {
				streams += s[j].streams;
				clients = s[j].clients > clients ? s[j].clients : clients;
			}
		printf("net://%s:%u/host/%s/%s (timer = %" PRIu32 ", %" PRIu64
		       " stream(s), %" PRIu64 " client(s) connected)\n",
		       u->host, u->port, s[k].hostname, s[k].name, s[k].live_timer, streams, clients);
	}
}

int view_live_open(const char *url, struct lv_viewer **v, struct rtr_trace **t)
{
	struct lv_url u;
	char err[512];
	*v = NULL;
	*t = NULL;
	if (lv_url_parse(url, &u, err, sizeof(err)) < 0) {
		cli_usage_error("--live: %s", err);
		return -EINVAL;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: waits end at once */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	int ret = lv_viewer_connect(&u, &stop_flag, v, err, sizeof(err));
	if (ret < 0) {
		cli_error("%s", err);
		return ret;
	}
	if (!u.session[0]) {
		struct lv_session *s;
		size_t n;
		ret = lv_viewer_list(*v, &s, &n, err, sizeof(err));
		if (ret < 0) {
			cli_error("%s", err);
			return ret;
		}
		print_sessions(&u, s, n);
		free(s);
		return 1;
	}
	ret = lv_viewer_attach(*v, u.target, u.session, t, err, sizeof(err));
	if (ret < 0) {
		cli_error("%s", err);
		return ret;
	}
	return 0;
}

void view_live_close(struct lv_viewer *v)
{
	lv_viewer_close(v);
}
