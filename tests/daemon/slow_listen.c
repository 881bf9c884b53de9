/*
 * slow_listen.c - an LD_PRELOAD shim for the daemon tests: listen() waits
 * 300 ms first, which makes the moment between a socket's bind() and its
 * listen() long enough to be seen (test_security.py SocketName).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/socket.h>
#include <time.h>

__attribute__((visibility("default"))) int listen(int fd, int backlog)
{
	static int (*real)(int, int);
	if (!real)
		real = (int (*)(int, int))dlsym(RTLD_NEXT, "listen");
	struct timespec ts = { 0, 300000000L };
	nanosleep(&ts, NULL);
	return real(fd, backlog);
}
