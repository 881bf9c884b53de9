/*
 * pl_func - built with -finstrument-functions, not linked with
 * libringtrace: main calls outer(3), which calls leaf three times; the
 * cyg-profile helper records each entry and exit (test_preload.py finds
 * them with the functions' symbols).
 */
#include <stdio.h>

__attribute__((noinline)) int leaf(int x);
__attribute__((noinline)) int outer(int n);

int leaf(int x)
{
	return x * 2;
}

int outer(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += leaf(i);
	return s;
}

int main(void)
{
	printf("sum %d\n", outer(3));
	return 0;
}
