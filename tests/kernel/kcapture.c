/*
 * kcapture.c - records kernel events of its own process in a private
 * tracefs instance (src/kernel) while it writes to a pipe, then has the
 * consumer write the instance's pages as a CTF trace (rtk_writer;
 * test_kernel.py reads it back).
 *
 *   kcapture DIR [WRITES [FORKS]]
 *   kcapture --hold          create the instance, print its name, wait
 *                            (the test kills it: a stale instance)
 *   kcapture --remove-stale  print how many stale instances were removed
 *
 * Enables sched_switch, sched_waking, sched_process_fork and the write
 * system call for this process (and its children: FORKS children each
 * write once). Prints one JSON line: tid, fd, count, writes, instance
 * name, the trace's event and loss counts. Exit 77 with the reason when
 * the kernel domain cannot be used here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctf/ctf_metadata.h"
#include "kernel/kernel.h"
#include "common/clock.h"

#define COUNT 37

static int workload(int writes, int forks, int *fd)
{
	int p[2];
	char buf[COUNT], sink[COUNT];
	memset(buf, 'k', sizeof(buf));
	if (pipe(p) < 0)
		return -errno;
	*fd = p[1];
	for (int i = 0; i < writes; i++) {
		if (write(p[1], buf, COUNT) != COUNT || read(p[0], sink, COUNT) != COUNT)
			return -EIO;
	}
	for (int i = 0; i < forks; i++) {
		pid_t c = fork();
		if (c < 0)
			return -errno;
		if (c == 0)
			_exit(write(p[1], buf, COUNT) == COUNT ? 0 : 1);
		int st;
		if (waitpid(c, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			return -ECHILD;
		if (read(p[0], sink, COUNT) != COUNT)
			return -EIO;
	}
	close(p[0]);
	close(p[1]);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: kcapture DIR [WRITES [FORKS]]\n");
		return 2;
	}
	int writes = argc > 2 ? atoi(argv[2]) : 100;
	int forks = argc > 3 ? atoi(argv[3]) : 0;
	bool hold = !strcmp(argv[1], "--hold");
	char err[1024];
	if (rtk_access(err, sizeof(err)) < 0) {
		printf("skip: %s\n", err);
		return 77;
	}
	if (!strcmp(argv[1], "--remove-stale")) {
		int n = rtk_instances_remove_stale();
		printf("%d\n", n);
		return n < 0;
	}
	rt_clock_init(getenv("RINGTRACE_CLOCK") && !strcmp(getenv("RINGTRACE_CLOCK"), "monotonic"));

	const char *events[] = { "sched_switch", "sched_waking", "sched_process_fork" };
	const char *syscalls[] = { "write" };
	pid_t self = getpid();
	struct rtk_config cfg = {
		.session = "kcapture", .clock_tsc = rt_clock_tsc(), .buffer_size_kb = 2048,
		.events = events, .nr_events = 3, .syscalls = syscalls, .nr_syscalls = 1,
		.pids = &self, .nr_pids = 1,
	};
	struct rtk_instance *in;
	int ret = rtk_instance_create(&cfg, &in, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "kcapture: %s\n", err);
		return 1;
	}
	int fd = -1, status = 1;
	struct rtk_writer *t = NULL;
	if (hold) {
		printf("%s\n", rtk_instance_name(in));
		fflush(stdout);
		pause();
	}
	if (rtk_instance_start(in) < 0 || workload(writes, forks, &fd) < 0 ||
	    rtk_instance_stop(in) < 0) {
		fprintf(stderr, "kcapture: the workload failed\n");
		goto out;
	}
	struct rtk_writer_opts wo = { .dir = argv[1], .trace_name = "kcapture",
				      .buffer_size_kb = cfg.buffer_size_kb };
	ctf_uuid_generate(wo.uuid);
	struct rt_clock_desc d;
	rt_clock_describe(&d, true);
	wo.clock = (struct ctf_clock_info){ .name = d.name, .description = d.description,
					    .freq = d.freq, .offset_s = d.offset_s,
					    .offset = d.offset, .precision = d.precision };
	struct rtk_pages pages;
	if (rtk_instance_pages(in, &pages, err, sizeof(err)) < 0 ||
	    rtk_writer_open(&pages, rtk_instance_formats(in), &wo, &t, err, sizeof(err)) < 0) {
		fprintf(stderr, "kcapture: %s\n", err);
		goto out;
	}
	rtk_writer_drain(t, NULL);
	if (rtk_writer_error(t, true, err, sizeof(err)) < 0) {
		fprintf(stderr, "kcapture: %s\n", err);
		goto out;
	}
	struct rtk_writer_stats st;
	rtk_writer_stats(t, &st);
	printf("{\"tid\": %d, \"fd\": %d, \"count\": %d, \"writes\": %d, \"forks\": %d, "
	       "\"instance\": \"%s\", \"events\": %llu, \"lost\": %llu, \"unknown\": %llu, "
	       "\"classes\": %zu}\n",
	       (int)gettid(), fd, COUNT, writes, forks, rtk_instance_name(in),
	       (unsigned long long)st.events, (unsigned long long)st.lost,
	       (unsigned long long)st.unknown, rtk_formats_count(rtk_instance_formats(in)));
	status = 0;
out:
	rtk_writer_close(t);
	if (rtk_instance_destroy(in) < 0) {
		fprintf(stderr, "kcapture: cannot remove the instance\n");
		status = 1;
	}
	return status;
}
