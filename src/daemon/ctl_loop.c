/*
 * ctl_loop.c - the daemon's poll loop: the signal fd, descriptors watched
 * with a callback (the listening socket) and every connection (ctl_io.c),
 * on the main thread. Callbacks run with rtd_lock held.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "../common/array.h"
#include "ctl.h"

/* Watched descriptors (for the daemon's life). Owner: this file. */
struct loop_entry {
	int fd;
	rtd_fd_fn fn;
	void *arg;
	int64_t paused_until;	/* rtd_now_ms() before which it is not polled */
};

static struct loop_entry *entries;
static size_t nr_entries, cap_entries;
static struct pollfd *pfds;
static size_t cap_pfds;

int rtd_loop_add(int fd, rtd_fd_fn fn, void *arg)
{
	if (fd < 0 || !fn)
		return -EINVAL;
	for (size_t i = 0; i < nr_entries; i++)
		if (entries[i].fd == fd)
			return -EEXIST;
	if (RT_ARRAY_GROW(entries, cap_entries, nr_entries + 1, 16) < 0)
		return -ENOMEM;
	entries[nr_entries++] = (struct loop_entry){ .fd = fd, .fn = fn, .arg = arg };
	return 0;
}

void rtd_loop_del(int fd)
{
	for (size_t i = 0; i < nr_entries; i++) {
		if (entries[i].fd == fd) {
			entries[i] = entries[--nr_entries];
			return;
		}
	}
}

void rtd_loop_pause(int fd, int ms)
{
	for (size_t i = 0; i < nr_entries; i++)
		if (entries[i].fd == fd)
			entries[i].paused_until = rtd_now_ms() + ms;
}

int rtd_loop_add_timer(rtd_fd_fn fn, void *arg)
{
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	int ret = rtd_loop_add(fd, fn, arg);
	if (ret < 0) {
		close(fd);
		return ret;
	}
	return fd;
}

int rtd_loop_timer_set(int fd, uint32_t period_ms)
{
	struct timespec period = { .tv_sec = period_ms / 1000,
				   .tv_nsec = (long)(period_ms % 1000) * 1000000L };
	struct itimerspec its = { .it_interval = period, .it_value = period };
	return timerfd_settime(fd, 0, &its, NULL) < 0 ? -errno : 0;
}

/* Call the callback of fd. */
static void dispatch(int fd, short revents)
{
	for (size_t i = 0; i < nr_entries; i++) {
		if (entries[i].fd == fd) {
			struct loop_entry e = entries[i];
			e.fn(fd, revents, e.arg);
			return;
		}
	}
}

int ctl_loop_run(int sigfd)
{
	for (;;) {
		if (RT_ARRAY_GROW(pfds, cap_pfds, nr_entries + 1, 16) < 0)
			return -ENOMEM;
		/* Paused entries are left out until their time (poll wakes
		 * up then). */
		int64_t now = rtd_now_ms(), wake = -1;
		pfds[0] = (struct pollfd){ .fd = sigfd, .events = POLLIN };
		size_t n = 1;
		for (size_t i = 0; i < nr_entries; i++) {
			if (entries[i].paused_until > now) {
				int64_t d = entries[i].paused_until - now;
				if (wake < 0 || d < wake)
					wake = d;
				continue;
			}
			pfds[n++] = (struct pollfd){ .fd = entries[i].fd, .events = POLLIN };
		}
		int r = ctl_io_round(pfds, n, NULL, (int)wake, false);
		if (r < 0)
			return r;
		if (pfds[0].revents) {
			struct signalfd_siginfo si;
			if (read(sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si) &&
			    (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT))
				return 0;
		}
		pthread_mutex_lock(&rtd_lock);
		for (size_t i = 1; i < n; i++)
			if (pfds[i].revents)
				dispatch(pfds[i].fd, pfds[i].revents);
		pthread_mutex_unlock(&rtd_lock);
	}
}

void ctl_loop_fini(void)
{
	free(entries);
	free(pfds);
	entries = NULL;
	pfds = NULL;
	nr_entries = cap_entries = cap_pfds = 0;
}
