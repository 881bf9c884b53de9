/*
 * owned_fd.h - a descriptor the library opened, remembered with its
 * identity (device and inode, from fstat when it was opened). A program
 * may close every descriptor (daemons and sandboxes do) and get the
 * numbers again for files or sockets of its own: the library reads,
 * writes, shuts down or closes one of its descriptors only while
 * rt_owned_fd_ok() says the number still is what it opened, and never
 * touches it again otherwise.
 *
 * Concurrency: a struct rt_owned_fd is used by one thread at a time (its
 * owner's rule); rt_owned_fd_ok is async-signal-safe (one fstat).
 */
#ifndef RINGTRACE_OWNED_FD_H
#define RINGTRACE_OWNED_FD_H

#include <stdbool.h>
#include <sys/types.h>

#define RT_HIDDEN __attribute__((visibility("hidden")))

struct rt_owned_fd {
	int fd;			/* -1: none */
	dev_t dev;
	ino_t ino;
};

#define RT_OWNED_FD_NONE ((struct rt_owned_fd){ .fd = -1 })

/* Remember fd (just opened by the library). Returns 0, or -errno of
 * fstat (o->fd is then -1 and fd is closed). */
RT_HIDDEN int rt_owned_fd_take(struct rt_owned_fd *o, int fd);
/* Whether o->fd still is the file the library opened. */
RT_HIDDEN bool rt_owned_fd_ok(const struct rt_owned_fd *o);
/* The same, and whether the file is still in the file system (a removed
 * directory leaves open files writable, and what is written lost): 0,
 * -EBADF (not ours any more, or none), -ENOENT (ours, removed). */
RT_HIDDEN int rt_owned_fd_check(const struct rt_owned_fd *o);
/* Close o->fd if it still is ours; o->fd becomes -1 either way. */
RT_HIDDEN void rt_owned_fd_close(struct rt_owned_fd *o);

#endif /* RINGTRACE_OWNED_FD_H */
