/*
 * kwrites.c - for `record -k` (test_kernel.py): N times, a user event, a
 * write(2) of COUNT bytes on a pipe, another user event; then a forked
 * child writes once. The pipe's write end is kwrites:setup's fd.
 *
 *   kwrites N
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ringtrace/ringtrace.h>

#define COUNT 29

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100;
	int p[2];
	char buf[COUNT], sink[COUNT];
	memset(buf, 'w', sizeof(buf));
	if (pipe(p) < 0)
		return 1;
	rt_event(kwrites, setup, fd, (int32_t)p[1], count, (int32_t)COUNT);
	for (int i = 0; i < n; i++) {
		rt_event(kwrites, before, i, (int32_t)i);
		if (write(p[1], buf, COUNT) != COUNT)
			return 1;
		rt_event(kwrites, after, i, (int32_t)i);
		if (read(p[0], sink, COUNT) != COUNT)
			return 1;
	}
	pid_t c = fork();
	if (c == 0)
		_exit(write(p[1], buf, COUNT) == COUNT ? 0 : 1);
	int st;
	if (c < 0 || waitpid(c, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		return 1;
	rt_event(kwrites, child, pid, (int32_t)c);
	return 0;
}
