/*
 * statedump.c - the library's state dump: events that name this
 * process's threads and the objects it has loaded, so that a trace (a
 * snapshot taken hours after the program started) names its threads and
 * resolves the `ip` context to symbols (docs/statedump.md).
 *
 * The events are LTTng-UST's (lttng_ust_statedump:*, lttng_ust_dl:*,
 * same names, fields and meaning, so that babeltrace2's debug-info filter
 * and Trace Compass read them too), plus lttng_ust_statedump:thread, ours:
 *
 *   lttng_ust_statedump:start       (no field)
 *   lttng_ust_statedump:procname    procname (string): the process's name
 *   lttng_ust_statedump:thread      tid (s32), name (string): one per thread
 *   lttng_ust_statedump:bin_info    baddr (pointer): the object's lowest
 *                                   PT_LOAD address in memory; memsz (u64):
 *                                   from there to the end of its highest
 *                                   PT_LOAD; path (string); is_pic (u8);
 *                                   has_build_id (u8); has_debug_link (u8)
 *   lttng_ust_statedump:build_id    baddr, build_id (bytes): the object's
 *                                   NT_GNU_BUILD_ID note
 *   lttng_ust_statedump:debug_link  baddr, crc (u32), filename (string):
 *                                   its .gnu_debuglink section
 *   lttng_ust_statedump:end         (no field)
 *   lttng_ust_dl:dlopen             baddr, memsz, path, has_build_id,
 *                                   has_debug_link: an instrumented object
 *                                   loaded after the last dump (its events
 *                                   registered), then lttng_ust_dl:build_id
 *                                   and lttng_ust_dl:debug_link
 *   lttng_ust_statedump:thread      also when a thread names itself with
 *                                   pthread_setname_np (thread_name.c)
 *
 * They are event classes of the library's own and recorded like any
 * other, where the session's rules want them (`lttng_ust_statedump:*`).
 *
 * When: embedded mode dumps when tracing starts (the library's
 * constructor; in a fork child, its consumer thread at its first wake-up,
 * or the final flush if that comes first), and a flight-recorder session
 * again before its final flush; in daemon mode the listener
 * thread dumps after each registration and when the daemon asks
 * (RTP_APP_STATEDUMP, before every snapshot). Never on the event fast
 * path, never in a program's thread but at its own registration or exit.
 *
 * The objects, their build ids and debug links: src/common/loaded_objects.h.
 *
 * Concurrency: rt_statedump_run may run in several threads at once (the
 * dumps interleave, each complete); the list of objects of the last dump
 * is replaced and read under rt_registry_lock.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/array.h"
#include "../common/loaded_objects.h"
#include "rt_internal.h"

/* The call sites below go to a section of their own, registered only by
 * rt_statedump_init: a library loaded by a program must not take event
 * ids (the compact header's first 31) from it when no dump is wanted. */
#undef RT__SECTION
#define RT__SECTION "rt_statedump"
extern struct rt_event_desc *const __start_rt_statedump[]
	__attribute__((weak, visibility("hidden")));
extern struct rt_event_desc *const __stop_rt_statedump[]
	__attribute__((weak, visibility("hidden")));

/* Bases of the objects the last dump listed (a registration looks one
 * up), under rt_registry_lock; `dump_pid`: the process whose dump ran
 * last (relaxed: a fork child compares it with its own pid). */
static uintptr_t *last_bases;
static size_t nr_last, cap_last;
static int32_t dump_pid;
/* rt_statedump_init ran (set once, before any dump can run). */
static bool registered;

static void emit_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		long tid = strtol(e->d_name, &end, 10);
		if (e->d_name[0] < '0' || e->d_name[0] > '9' || *end || tid <= 0 || tid > INT32_MAX)
			continue;
		char path[64], name[RT_THREAD_NAME_LEN + 1] = "";
		snprintf(path, sizeof(path), "/proc/self/task/%ld/comm", tid);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;	/* the thread ended meanwhile */
		ssize_t n = read(fd, name, sizeof(name) - 1);
		close(fd);
		if (n <= 0)
			continue;
		name[n] = '\0';
		name[strcspn(name, "\n")] = '\0';
		int32_t t = (int32_t)tid;
		const char *s = name;
		rt_event(lttng_ust_statedump, thread, tid, t, name, s);
	}
	closedir(d);
}

void rt_statedump_thread_named(const char *name)
{
	/* Only after a dump: a process not traced does nothing here. */
	if (!__atomic_load_n(&dump_pid, __ATOMIC_RELAXED))
		return;
	int32_t t = (int32_t)gettid();
	rt_event(lttng_ust_statedump, thread, tid, t, name, name);
}

static void emit_object(const struct rt_loaded_obj *o, bool dl)
{
	void *baddr = (void *)o->baddr;
	uint64_t memsz = o->memsz;
	const char *path = o->path;
	uint8_t has_id = o->build_id_len > 0, has_link = o->has_debug_link;
	const char *link = o->debug_link;
	uint32_t crc = o->crc;
	if (dl) {
		rt_event(lttng_ust_dl, dlopen, baddr, baddr, memsz, memsz, path, path,
			 has_build_id, has_id, has_debug_link, has_link);
		if (has_id)
			rt_event(lttng_ust_dl, build_id, baddr, baddr, build_id,
				 rt_bytes(o->build_id, o->build_id_len));
		if (has_link)
			rt_event(lttng_ust_dl, debug_link, baddr, baddr, crc, crc,
				 filename, link);
		return;
	}
	uint8_t is_pic = o->is_pic;
	rt_event(lttng_ust_statedump, bin_info, baddr, baddr, memsz, memsz, path, path,
		 is_pic, is_pic, has_build_id, has_id, has_debug_link, has_link);
	if (has_id)
		rt_event(lttng_ust_statedump, build_id, baddr, baddr, build_id,
			 rt_bytes(o->build_id, o->build_id_len));
	if (has_link)
		rt_event(lttng_ust_statedump, debug_link, baddr, baddr, crc, crc, filename,
			 link);
}

/* Whether some session records one of the dump's events: a program whose
 * dump nobody records reads no file and lists nothing. */
static bool any_enabled(void)
{
	for (struct rt_event_desc *const *d = __start_rt_statedump; d < __stop_rt_statedump; d++)
		/* Relaxed: the flag alone, as the call site reads it. */
		if (*d && __atomic_load_n(&(*d)->enabled, __ATOMIC_RELAXED))
			return true;
	return false;
}

void rt_statedump_run(void)
{
	if (!__atomic_load_n(&registered, __ATOMIC_ACQUIRE) || !any_enabled())
		return;
	struct rt_loaded_list l;
	int ret = rt_loaded_objects(&l, 0);
	uintptr_t *bases = ret == 0 ? calloc(l.nr, sizeof(*bases)) : NULL;
	pthread_mutex_lock(&rt_registry_lock);
	if (bases) {
		for (size_t i = 0; i < l.nr; i++)
			bases[i] = l.v[i].baddr;
		free(last_bases);
		last_bases = bases;
		nr_last = cap_last = l.nr;
	}
	__atomic_store_n(&dump_pid, (int32_t)getpid(), __ATOMIC_RELAXED);
	pthread_mutex_unlock(&rt_registry_lock);

	rt_event(lttng_ust_statedump, start);
	/* The process's name: its main thread's (the dump may run in
	 * another). */
	char procname[RT_THREAD_NAME_LEN + 1] = "";
	int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, procname, sizeof(procname) - 1) : -1;
	if (fd >= 0)
		close(fd);
	procname[n > 0 ? n : 0] = '\0';
	procname[strcspn(procname, "\n")] = '\0';
	if (!procname[0])
		snprintf(procname, sizeof(procname), "unknown");
	const char *pn = procname;
	rt_event(lttng_ust_statedump, procname, procname, pn);
	emit_threads();
	for (size_t i = 0; i < l.nr; i++)
		emit_object(&l.v[i], false);
	rt_event(lttng_ust_statedump, end);
	free(l.v);
}

void rt_statedump_module(const void *addr)
{
	if (!__atomic_load_n(&dump_pid, __ATOMIC_RELAXED))
		return;
	struct rt_loaded_list l;
	rt_loaded_objects(&l, (uintptr_t)addr);
	if (l.nr == 1) {
		bool known = false;
		pthread_mutex_lock(&rt_registry_lock);
		for (size_t i = 0; i < nr_last && !known; i++)
			known = last_bases[i] == l.v[0].baddr;
		if (!known && RT_ARRAY_GROW(last_bases, cap_last, nr_last + 1, 32) == 0)
			last_bases[nr_last++] = l.v[0].baddr;
		pthread_mutex_unlock(&rt_registry_lock);
		if (!known)
			emit_object(&l.v[0], true);
	}
	free(l.v);
}

bool rt_statedump_done(void)
{
	return __atomic_load_n(&dump_pid, __ATOMIC_RELAXED) == (int32_t)getpid();
}

void rt_statedump_init(void)
{
	rt__register(__start_rt_statedump, __stop_rt_statedump);
	/* Release: pairs with rt_statedump_run's acquire load. */
	__atomic_store_n(&registered, true, __ATOMIC_RELEASE);
}
