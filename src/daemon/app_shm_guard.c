/*
 * app_shm_guard.c - the daemon survives a --shm-path buffer file
 * truncated under its mapping (app.h, docs/security.md). A memfd is
 * sealed against shrinking; a file cannot be, and any process of the
 * session's user (a traced program holds the file open for writing, so
 * ftruncate works on its descriptor) can truncate it, after which the
 * daemon's next access to a page past the new end raises SIGBUS, which
 * killed the daemon and every session it served. The handler here
 * replaces the mapping from the faulting page to its end with anonymous
 * zero pages (mmap MAP_FIXED, a direct system call that takes no
 * user-space lock) and returns: the access is retried and reads zeros,
 * which the consumer treats as it treats every value in shared buffers
 * (untrusted: impossible counters are given up and counted). A SIGBUS
 * elsewhere gets the default action.
 *
 * Concurrency: app_shm_guard_add/_remove on the main thread (rtd_lock)
 * only; the handler runs on any thread and reads the table with acquire
 * loads. A range is removed before its munmap, after its consumer
 * stopped reading it (consumer_trace_remove), so no handler can be
 * working on it then.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../common/warn.h"
#include "app.h"

#define GUARD_RANGES 4096

/* start 0: a free slot. end is stored before start (release) when a
 * range is added, start cleared first when it is removed. */
static struct {
	uintptr_t start, end;
} ranges[GUARD_RANGES];
static uintptr_t page_mask;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int install_err;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	uintptr_t a = (uintptr_t)si->si_addr;
	for (size_t i = 0; i < GUARD_RANGES; i++) {
		/* Acquire: pairs with the release store of start in
		 * app_shm_guard_add (end is set before). */
		uintptr_t s = __atomic_load_n(&ranges[i].start, __ATOMIC_ACQUIRE);
		uintptr_t e = __atomic_load_n(&ranges[i].end, __ATOMIC_RELAXED);
		if (!s || a < s || a >= e)
			continue;
		uintptr_t p = a & page_mask;
		if (mmap((void *)p, e - p, PROT_READ | PROT_WRITE,
			 MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED)
			break;
		static const char msg[] = "ringtraced: a --shm-path buffer file was truncated "
					  "under the daemon: its lost pages now read as zeros\n";
		ssize_t w = write(STDERR_FILENO, msg, sizeof(msg) - 1);
		(void)w;
		return;
	}
	/* Not ours: the default action when the access is retried. */
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
}

static void install(void)
{
	page_mask = ~((uintptr_t)sysconf(_SC_PAGESIZE) - 1);
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO | SA_RESTART };
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, NULL) < 0)
		install_err = 1;
}

void app_shm_guard_add(const void *map, size_t size)
{
	pthread_once(&once, install);
	for (size_t i = 0; i < GUARD_RANGES && !install_err; i++) {
		if (ranges[i].start)
			continue;
		ranges[i].end = (uintptr_t)map + size;
		/* Release: end is visible before start (on_sigbus). */
		__atomic_store_n(&ranges[i].start, (uintptr_t)map, __ATOMIC_RELEASE);
		return;
	}
	rt_warn("buffers in a file not guarded against truncation (%s): a truncated file "
		"would stop the daemon", install_err ? "no SIGBUS handler" : "too many");
}

void app_shm_guard_remove(const void *map)
{
	for (size_t i = 0; i < GUARD_RANGES; i++) {
		if (ranges[i].start == (uintptr_t)map) {
			/* Relaxed: no handler works on this range now
			 * (the header's concurrency note). */
			__atomic_store_n(&ranges[i].start, 0, __ATOMIC_RELAXED);
			return;
		}
	}
}
