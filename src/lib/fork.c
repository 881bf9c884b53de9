/*
 * fork.c - the library's fork handlers, registered once by the library
 * constructor whatever the mode (embedded session, daemon client, or
 * no tracing at all: the registry's lock exists in every mode and
 * rt__unregister takes it when a fork child exits).
 *
 * Every lock the library owns is taken before fork in one fixed order
 * and released after it, so a child never inherits one that a thread
 * which does not exist there was holding:
 *   session stop_lock -> daemon client send_lock -> rt_registry_lock ->
 *   daemon client state_lock
 * (the order the library's code nests them in; send_lock and
 * rt_registry_lock are never nested elsewhere). The parent releases them
 * in reverse; the child, alone in its process with state that is
 * consistent since nobody was inside a critical section, initializes
 * them anew (the owner recorded in a mutex is a thread of the parent)
 * and then resets what belonged to the parent's other threads: the
 * embedded consumer's and the daemon listener's (session.c,
 * daemon_client.c).
 *
 * Each lock is held only for bounded work (a send with a deadline, a
 * registration, the embedded session's final flush), so fork waits at
 * most that long.
 */
#define _GNU_SOURCE
#include <pthread.h>

#include "daemon_client.h"
#include "epoch.h"
#include "rt_internal.h"

static void fork_prepare(void)
{
	rt_session_fork_prepare();
	rt_daemon_client_fork_prepare_outer();
	pthread_mutex_lock(&rt_registry_lock);
	rt_daemon_client_fork_prepare_inner();
}

static void fork_parent(void)
{
	rt_daemon_client_fork_parent_inner();
	pthread_mutex_unlock(&rt_registry_lock);
	rt_daemon_client_fork_parent_outer();
	rt_session_fork_parent();
}

static void fork_child(void)
{
	pthread_mutex_init(&rt_registry_lock, NULL);
	rt_epoch_fork_child();
	rt_probe_fork_child();
	rt_daemon_client_fork_child();
	rt_session_fork_child();
}

void rt_fork_init(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}
