/*
 * kworkload.c - a program for the kernel analyses' recorded test
 * (test_kernel_analyses.py, record -k): system calls that fail with known
 * errnos, reads, writes to a file followed by fsync (block I/O and
 * writeback), a thread that spins on the CPU for a while, and sleeps.
 *
 *   kworkload FILE ROUNDS
 * Each round: 5 open("FILE.missing") (ENOENT), 1 close(-1) (EBADF),
 * 64 KiB written to FILE at its start, fsync, a read of /dev/zero, a
 * 1 ms sleep. The spinner thread (named "spinner") spins 20 ms of CPU.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ringtrace/ringtrace.h>

static void *spinner(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "spinner");
	struct timespec a, b;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	do
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 20000000L);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	int rounds = atoi(argv[2]);
	char missing[4096];
	snprintf(missing, sizeof(missing), "%s.missing", argv[1]);
	static char buf[65536];
	memset(buf, 'k', sizeof(buf));
	int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int zero = open("/dev/zero", O_RDONLY);
	if (fd < 0 || zero < 0)
		return 1;
	pthread_t t;
	if (pthread_create(&t, NULL, spinner, NULL) != 0)
		return 1;
	rt_event(kworkload, start, rounds, (int32_t)rounds);
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < 5; i++)
			if (open(missing, O_RDONLY) >= 0)
				return 1;
		if (close(-1) == 0)
			return 1;
		if (pwrite(fd, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf) || fsync(fd) != 0)
			return 1;
		if (read(zero, buf, 4096) != 4096)
			return 1;
		usleep(1000);
	}
	pthread_join(t, NULL);
	rt_event(kworkload, stop, rounds, (int32_t)rounds);
	close(fd);
	close(zero);
	unlink(argv[1]);
	return 0;
}
