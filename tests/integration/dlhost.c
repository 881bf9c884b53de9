/*
 * dlhost.c - records events of its own, then loads plugin.so with dlopen
 * (its events register while recording), calls it, unloads it, loads it
 * again and calls it once more.
 *
 * usage: dlhost PATH/TO/plugin.so
 */
#include <dlfcn.h>
#include <stdio.h>

#include <ringtrace/ringtrace.h>

static int run_plugin(const char *path, int round)
{
	void *h = dlopen(path, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	void (*work)(int) = (void (*)(int))dlsym(h, "plugin_work");
	if (!work) {
		fprintf(stderr, "dlsym: %s\n", dlerror());
		return 1;
	}
	work(round);
	dlclose(h);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	rt_event(host, before, n, 1);
	if (run_plugin(argv[1], 1) || run_plugin(argv[1], 2))
		return 1;
	rt_event(host, after, n, 2);
	return 0;
}
