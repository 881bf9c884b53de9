/* preload_func.c - the function preload_bench's `func` case calls, built
 * with -finstrument-functions (its entry and exit call the cyg-profile
 * helper, when one is preloaded). */
#include <stdint.h>

int preload_bench_func(int32_t v);

__attribute__((noinline)) int preload_bench_func(int32_t v)
{
	return v + 1;
}
