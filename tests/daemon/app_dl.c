/*
 * app_dl.c - an instrumented program that loads a library with dlopen
 * when told to, driven line by line on stdin like app_prog (each command
 * answers one line on stdout when done):
 *   load PATH      dlopen(PATH) and keep it loaded ("ok")
 *   work R         call the library's plugin_work(R) ("ok")
 *   exit           exit(0)
 * At start it prints "ready PID". Used to check that a program registers
 * a library's events again when it reconnects to a restarted daemon.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ringtrace/ringtrace.h>

int main(void)
{
	char line[4096], path[4000];
	int round;
	void (*work)(int) = NULL;
	setvbuf(stdout, NULL, _IOLBF, 0);
	rt_event(host, before, n, 1);
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		if (sscanf(line, "load %3999s", path) == 1) {
			void *h = dlopen(path, RTLD_NOW);
			work = h ? (void (*)(int))dlsym(h, "plugin_work") : NULL;
			if (work)
				printf("ok\n");
			else
				printf("dlopen failed: %s\n", dlerror());
		} else if (sscanf(line, "work %d", &round) == 1 && work) {
			work(round);
			printf("ok\n");
		} else if (!strncmp(line, "exit", 4)) {
			exit(0);
		} else {
			printf("unknown command\n");
		}
	}
	return 0;
}
