/*
 * pl_alloc - a program NOT linked with libringtrace whose allocations the
 * libc helper records (tests/preload/test_preload.py). It prints each call
 * it makes (pid, function, arguments, result) for the test to find the
 * events:
 *
 *   env LD_PRELOAD          what it ran with
 *   PID malloc SIZE PTR     N blocks of distinct sizes, then
 *   PID free PTR            each freed
 *   PID calloc NMEMB SIZE PTR, realloc IN SIZE PTR, memalign ALIGN SIZE PTR,
 *   PID posix_memalign ALIGN SIZE PTR RESULT, aligned_alloc ALIGN SIZE PTR
 *   boot ...                the allocations dlsym made (below)
 *   PID fork-malloc SIZE PTR    in a fork child
 *   PID exec-malloc SIZE PTR    in another, which executes this program
 *                               again ("exec" mode)
 *
 * It defines dlsym: the helper looks the C library's functions up with it
 * before it knows them, and this one allocates (as some C libraries'
 * dlsym do), so those allocations come from the helper's static pool;
 * main checks they are usable (calloc's zeroed, realloc keeps the
 * contents, free ignores them).
 *
 * usage: pl_alloc N [exec]
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned char *boot_calloc, *boot_malloc;
static int dlsym_calls;

__attribute__((visibility("default"))) void *dlsym(void *restrict handle,
						   const char *restrict symbol);
void *dlsym(void *restrict handle, const char *restrict symbol)
{
	static void *(*real)(void *, const char *);
	if (!real) {
		real = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
		if (!real)
			real = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym",
								    "GLIBC_2.2.5");
		if (!real)
			abort();
	}
	if (!dlsym_calls++) {
		boot_calloc = calloc(3, 40);
		boot_malloc = malloc(24);
	}
	return real(handle, symbol);
}

static void check_boot(void)
{
	if (!dlsym_calls || !boot_calloc || !boot_malloc) {
		printf("boot none\n");
		return;
	}
	int zero = 1;
	for (int i = 0; i < 120; i++)
		zero &= boot_calloc[i] == 0;
	memset(boot_calloc, 0xab, 120);
	memcpy(boot_malloc, "pool block", 11);
	unsigned char *moved = realloc(boot_malloc, 4000);
	int kept = moved && !memcmp(moved, "pool block", 11);
	printf("boot calloc %p zeroed %d realloc %p kept %d\n", (void *)boot_calloc, zero,
	       (void *)moved, kept);
	free(boot_calloc);
	free(moved);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10;
	int pid = (int)getpid();
	if (argc > 2 && !strcmp(argv[2], "exec")) {
		void *p = malloc(515151);
		printf("%d exec-malloc 515151 %p\n", pid, p);
		free(p);
		return 0;
	}
	const char *pre = getenv("LD_PRELOAD");
	printf("env LD_PRELOAD %s\n", pre ? pre : "");
	check_boot();
	void **blocks = calloc((size_t)n, sizeof(*blocks));
	if (!blocks)
		return 1;
	for (int i = 0; i < n; i++) {
		size_t size = 100000 + 13 * (size_t)i;
		blocks[i] = malloc(size);
		printf("%d malloc %zu %p\n", pid, size, blocks[i]);
	}
	for (int i = 0; i < n; i++) {
		printf("%d free %p\n", pid, blocks[i]);
		free(blocks[i]);
	}
	free(blocks);
	void *c = calloc(7, 24);
	printf("%d calloc 7 24 %p\n", pid, c);
	uintptr_t in = (uintptr_t)c;
	void *r = realloc(c, 5000);
	printf("%d realloc 0x%jx 5000 %p\n", pid, (uintmax_t)in, r);
	free(r);
	void *m = memalign(64, 100);
	printf("%d memalign 64 100 %p\n", pid, m);
	free(m);
	void *q = NULL;
	int res = posix_memalign(&q, 128, 200);
	printf("%d posix_memalign 128 200 %p %d\n", pid, q, res);
	free(q);
	void *a = aligned_alloc(256, 512);
	printf("%d aligned_alloc 256 512 %p\n", pid, a);
	free(a);
	/* A fork child that allocates and exits; another that executes
	 * this program again, which allocates. (In embedded mode, events a
	 * process buffered before it executes another program are lost:
	 * docs/preload.md. This one records none before.) */
	for (int k = 0; k < 2; k++) {
		fflush(stdout);
		pid_t child = fork();
		if (child == 0) {
			if (k == 1) {
				execl("/proc/self/exe", argv[0], "0", "exec", (char *)NULL);
				_exit(127);
			}
			void *p = malloc(424242);
			printf("%d fork-malloc 424242 %p\n", (int)getpid(), p);
			free(p);
			return 0;
		}
		int status;
		if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			return 1;
	}
	return 0;
}
