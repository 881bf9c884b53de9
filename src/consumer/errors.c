/*
 * errors.c - a trace's write errors (consumer.h): counted, reported once
 * per failing stretch and when writes work again, summed up on demand.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "consumer.h"

void cons_errors_init(struct cons_errors *e, const char *dir,
		      void (*log)(void *, int, const char *, const char *), void *arg)
{
	*e = (struct cons_errors){ .log = log, .log_arg = arg, .dir = dir };
	pthread_mutex_init(&e->lock, NULL);
}

void cons_errors_fini(struct cons_errors *e)
{
	pthread_mutex_destroy(&e->lock);
}

void cons_errors_failed(struct cons_errors *e, const char *what, int err, uint64_t packets,
			uint64_t events)
{
	pthread_mutex_lock(&e->lock);
	if (!e->failing && e->log) {
		char line[PATH_MAX + 128];
		snprintf(line, sizeof(line), "cannot write %s in %s: %s; events are being lost",
			 what, e->dir, strerror(-err));
		e->log(e->log_arg, err, what, line);
	}
	e->failing = true;
	if (!e->pending) {
		e->pending = err;
		snprintf(e->pending_what, sizeof(e->pending_what), "%s", what);
	}
	e->last = err;
	snprintf(e->last_what, sizeof(e->last_what), "%s", what);
	e->packets += packets;
	e->events += events;
	pthread_mutex_unlock(&e->lock);
}

void cons_errors_ok(struct cons_errors *e)
{
	pthread_mutex_lock(&e->lock);
	if (e->failing && e->log) {
		char line[PATH_MAX + 128];
		snprintf(line, sizeof(line), "writing in %s again; %llu events in %llu packets "
			 "could not be written", e->dir, (unsigned long long)e->events,
			 (unsigned long long)e->packets);
		e->log(e->log_arg, 0, NULL, line);
	}
	e->failing = false;
	pthread_mutex_unlock(&e->lock);
}

int cons_errors_message(struct cons_errors *e, bool take, char *msg, size_t len)
{
	pthread_mutex_lock(&e->lock);
	int err = take ? e->pending : e->last;
	const char *what = take ? e->pending_what : e->last_what;
	if (err)
		snprintf(msg, len, "cannot write %s in %s: %s; %llu events in %llu packets "
			 "could not be written%s", what, e->dir, strerror(-err),
			 (unsigned long long)e->events, (unsigned long long)e->packets,
			 e->failing ? "" : " (written again since)");
	if (take)
		e->pending = 0;
	pthread_mutex_unlock(&e->lock);
	return err;
}
