/*
 * list_kernel.c - `ringtrace list -k [--syscall]`: the kernel's
 * tracepoints or system calls, as `lttng list -k` prints them, read from
 * tracefs here (no daemon involved).
 */
#include <stdbool.h>
#include <stdio.h>

#include "../kernel/kernel.h"
#include "cli.h"

static int print_tracepoint(const char *system, const char *event, void *arg)
{
	(void)system;
	(void)arg;
	printf("      %s (type: tracepoint)\n", event);
	return 0;
}

static int print_syscall(const char *name, void *arg)
{
	(void)arg;
	printf("      %s (type: syscall)\n", name);
	return 0;
}

int cli_list_kernel(bool syscalls)
{
	char err[1024];
	int ret = rtk_access(err, sizeof(err));
	if (ret < 0) {
		cli_error("%s", err);
		return CLI_EXIT_FAILURE;
	}
	if (syscalls) {
		printf("System calls:\n-------------\n");
		ret = rtk_list_syscalls(print_syscall, NULL, err, sizeof(err));
	} else {
		printf("Kernel events:\n-------------\n");
		ret = rtk_list_tracepoints(print_tracepoint, NULL, err, sizeof(err));
	}
	if (ret < 0) {
		fflush(stdout);
		cli_error("%s", err);
		return CLI_EXIT_FAILURE;
	}
	return 0;
}
