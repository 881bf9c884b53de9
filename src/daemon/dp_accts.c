/*
 * dp_accts.c - the writers' accounts of per-uid buffer sets (dp.h,
 * ringbuffer.h "accounts"): each program writing a set gets its own, so
 * that what it leaves outstanding when it dies in the middle of an event
 * is known and can be voided (rb_void_dead, from the consumer's reads):
 * the other programs writing that CPU's buffer go on.
 *
 * Death is read from a pidfd taken when the account is given (the pid
 * the program's socket credentials name): it becomes readable once every
 * thread of the process exited, so no write of it can come later. A
 * program that only closed its socket (exec, or a library that said
 * goodbye while threads still run) is not dead, and its account waits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/warn.h"
#include "dp.h"

int dp_accts_init(struct dp_bufset *b)
{
	b->accts = calloc(b->rb.nr_accts, sizeof(*b->accts));
	if (!b->accts)
		return -ENOMEM;
	for (uint32_t i = 0; i < b->rb.nr_accts; i++)
		b->accts[i].pidfd = -1;
	pthread_mutex_init(&b->acct_lock, NULL);
	return 0;
}

void dp_accts_free(struct dp_bufset *b)
{
	if (!b->accts)
		return;
	for (uint32_t i = 0; i < b->rb.nr_accts; i++)
		if (b->accts[i].pidfd >= 0)
			close(b->accts[i].pidfd);
	pthread_mutex_destroy(&b->acct_lock);
	free(b->accts);
	b->accts = NULL;
}

/* Whether pidfd says its process is gone: readable once every thread of
 * it exited (a zombie too). */
static bool exited(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* Account k is free: never given, or its owner gone with nothing left
 * outstanding on any CPU (voided or committed). Caller holds acct_lock. */
static bool acct_free(struct dp_bufset *b, uint32_t k)
{
	if (b->accts[k].pidfd < 0)
		return true;
	if (!exited(b->accts[k].pidfd))
		return false;
	for (uint32_t cpu = 0; cpu < b->rb.nr_cpus; cpu++)
		if (rb_acct_outstanding(&b->rb, cpu, k + 1))
			return false;
	return true;
}

uint32_t dp_acct_take(struct dp_bufset *b, pid_t pid)
{
	if (!b->accts)
		return 0;
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0)
		return 0;
	pthread_mutex_lock(&b->acct_lock);
	uint32_t k = 0;
	while (k < b->rb.nr_accts && !acct_free(b, k))
		k++;
	if (k < b->rb.nr_accts) {
		if (b->accts[k].pidfd >= 0)
			close(b->accts[k].pidfd);
		b->accts[k] = (struct dp_acct){ .pidfd = fd, .pid = pid };
	}
	pthread_mutex_unlock(&b->acct_lock);
	if (k == b->rb.nr_accts) {
		close(fd);
		return 0;
	}
	return k + 1;
}

bool dp_acct_gone(void *arg, uint32_t acct)
{
	struct dp_bufset *b = arg;
	if (!b->accts || acct == 0 || acct > b->rb.nr_accts)
		return false;
	pthread_mutex_lock(&b->acct_lock);
	struct dp_acct a = b->accts[acct - 1];
	bool gone = a.pidfd >= 0 && exited(a.pidfd);
	pthread_mutex_unlock(&b->acct_lock);
	if (gone)
		rt_warn("program %d died in the middle of an event in channel %s: its "
			"unfinished events are voided, the sub-buffers that may hold them "
			"given up (counted as lost packets)", (int)a.pid,
			b->channel ? b->channel->name : "?");
	return gone;
}
