/*
 * pin_missing_cpu - rt_test_pin_cpu on a CPU the machine does not have
 * must skip the test (exit status 77 and the reason), not fail it: what
 * a test that needs two CPUs does on a one-CPU machine.
 */
#include <stdio.h>
#include <sys/sysinfo.h>

#include "rt_test.h"

int main(void)
{
	int missing = get_nprocs_conf();
	if (rt_test_cpu_usable(missing)) {
		printf("CPU %d is usable\n", missing);
		return 1;
	}
	rt_test_pin_cpu(missing);
	printf("pinned to CPU %d, which does not exist\n", missing);
	return 1;
}
