/*
 * pl_dl - loads the library named by its argument with dlopen
 * (RTLD_NOW), calls pl_lib_answer, closes it; not linked with
 * libringtrace. Prints "answer 42".
 *
 * usage: pl_dl LIBRARY
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "pl_dl: %s\n", dlerror());
		return 1;
	}
	int (*answer)(void) = (int (*)(void))dlsym(h, "pl_lib_answer");
	printf("answer %d\n", answer ? answer() : -1);
	return dlclose(h) ? 1 : 0;
}
