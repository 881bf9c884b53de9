/*
 * idle_prog.c - a traced program that does nothing: its one call site
 * registers at load time (with ringtraced in daemon mode, or embedded
 * mode's session), it records one event, then waits for a signal. The
 * many-programs rows of run.sh start a hundred of them in one per-user
 * session, and the memory rows read what one costs (docs/performance.md).
 */
#include <signal.h>
#include <unistd.h>

#include <ringtrace/ringtrace.h>

int main(void)
{
	rt_event(rtbench, idle, pid, (int32_t)getpid());
	for (;;)
		pause();
}
