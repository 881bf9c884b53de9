/*
 * kernel_app.c - an instrumented program for the kernel sessions' test:
 * prints "ready PID", waits for a line on stdin (the session is set up to
 * record it), then N times: user event kapp:before { seq }, write(2) of
 * 1 + seq % 100 bytes on a pipe, user event kapp:after { seq, ret },
 * reading the pipe empty in between. Prints "done FD" (the pipe's write
 * end) at the end.
 *
 * usage: kernel_app N
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <ringtrace/ringtrace.h>

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 0, fds[2];
	char buf[128] = { 0 }, line[16];
	if (n <= 0 || pipe(fds) < 0) {
		fprintf(stderr, "usage: kernel_app N\n");
		return 2;
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	for (int i = 0; i < n; i++) {
		rt_event(kapp, before, seq, i);
		ssize_t r = write(fds[1], buf, (size_t)(1 + i % 100));
		rt_event(kapp, after, seq, i, ret, (int)r);
		if (r < 0 || read(fds[0], buf, sizeof(buf)) != r)
			return 1;
	}
	printf("done %d\n", fds[1]);
	return 0;
}
