/*
 * rt_test.c - the C tests' shared helpers (rt_test.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_test.h"

void rt_test_skip(const char *fmt, ...)
{
	va_list ap;
	fputs("skipped: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(RT_TEST_SKIP);
}

/* The calling thread's affinity mask; exits with status 2 on failure. */
static void allowed_set(cpu_set_t *set)
{
	if (sched_getaffinity(0, sizeof(*set), set) < 0) {
		perror("sched_getaffinity");
		exit(2);
	}
}

static int pin(int cpu)
{
	cpu_set_t one;
	if (cpu < 0 || cpu >= CPU_SETSIZE)
		return -EINVAL;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	return sched_setaffinity(0, sizeof(one), &one) < 0 ? -errno : 0;
}

bool rt_test_cpu_usable(int cpu)
{
	cpu_set_t set;
	allowed_set(&set);
	int err = pin(cpu);
	if (err == 0 && sched_setaffinity(0, sizeof(set), &set) < 0) {
		perror("sched_setaffinity");
		exit(2);
	}
	return err == 0;
}

void rt_test_pin_cpu(int cpu)
{
	int err = pin(cpu);
	if (err == -EINVAL)
		rt_test_skip("needs CPU %d, which this machine (or its cpuset) does not have "
			     "(%ld CPUs online)", cpu, sysconf(_SC_NPROCESSORS_ONLN));
	if (err < 0) {
		fprintf(stderr, "cannot pin to CPU %d: %s\n", cpu, strerror(-err));
		exit(2);
	}
}

int rt_test_pin_nth_cpu(int n)
{
	cpu_set_t set;
	allowed_set(&set);
	for (int cpu = 0, k = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &set) || k++ != n)
			continue;
		return pin(cpu) < 0 ? -1 : cpu;
	}
	return -1;
}

char *rt_test_tmpdir(const char *tag)
{
	const char *base = getenv("TMPDIR");
	char *path = NULL;
	if (!base || !*base)
		base = "/tmp";
	if (asprintf(&path, "%s/%s.XXXXXX", base, tag) < 0) {
		perror("asprintf");
		exit(2);
	}
	if (!mkdtemp(path)) {
		fprintf(stderr, "mkdtemp %s: %s\n", path, strerror(errno));
		exit(2);
	}
	return path;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	int r = flag == FTW_DP ? rmdir(path) : unlink(path);
	return r < 0 ? -errno : 0;
}

int rt_test_rmtree(const char *dir)
{
	int r = nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	return r < 0 ? -errno : r;
}
