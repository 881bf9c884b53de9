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
 * The build id is read from the object's PT_NOTE segments in memory; the
 * debug link from the object's file (opened read-only, non-blocking,
 * regular files only, section headers and the section bounded in size).
 * The vdso is not listed (it has no file).
 *
 * Concurrency: rt_statedump_run may run in several threads at once (the
 * dumps interleave, each complete); the list of objects of the last dump
 * is replaced and read under rt_registry_lock.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/array.h"
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

/* Objects one dump lists at most; notes and sections read at most. */
#define SD_MAX_OBJECTS 4096
#define SD_BUILD_ID_MAX 64
#define SD_MAX_SECTIONS 4096
#define SD_SHSTRTAB_MAX (1u << 20)
#define SD_DEBUGLINK_MAX 4096

struct sd_obj {
	uintptr_t baddr;
	uint64_t memsz;
	uint8_t is_pic;
	uint32_t build_id_len;		/* 0: none */
	uint8_t build_id[SD_BUILD_ID_MAX];
	char path[PATH_MAX];
	/* Filled outside dl_iterate_phdr (the file is read). */
	bool has_debug_link;
	uint32_t crc;
	char debug_link[256];
};

struct sd_list {
	struct sd_obj *v;
	size_t nr, cap;
	uintptr_t only;			/* collect the object holding this address */
};

/* Bases of the objects the last dump listed (a registration looks one
 * up), under rt_registry_lock; `dump_pid`: the process whose dump ran
 * last (relaxed: a fork child compares it with its own pid). */
static uintptr_t *last_bases;
static size_t nr_last, cap_last;
static int32_t dump_pid;
/* rt_statedump_init ran (set once, before any dump can run). */
static bool registered;

/* The NT_GNU_BUILD_ID note among the object's PT_NOTE segments, in
 * memory (they are loaded), bounded by each segment's size. */
static void note_build_id(const struct dl_phdr_info *info, struct sd_obj *o)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		size_t left = ph->p_memsz, align = ph->p_align == 8 ? 8 : 4;
		while (left >= sizeof(ElfW(Nhdr))) {
			ElfW(Nhdr) nh;
			memcpy(&nh, p, sizeof(nh));
			size_t namesz = (nh.n_namesz + align - 1) & ~(align - 1);
			size_t descsz = (nh.n_descsz + align - 1) & ~(align - 1);
			if (namesz > left - sizeof(nh) || descsz > left - sizeof(nh) - namesz)
				break;
			const uint8_t *name = p + sizeof(nh), *desc = name + namesz;
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp(name, "GNU", 4) && nh.n_descsz > 0 &&
			    nh.n_descsz <= SD_BUILD_ID_MAX) {
				memcpy(o->build_id, desc, nh.n_descsz);
				o->build_id_len = nh.n_descsz;
				return;
			}
			p += sizeof(nh) + namesz + descsz;
			left -= sizeof(nh) + namesz + descsz;
		}
	}
}

/* dl_iterate_phdr's callback: one object (or, with l->only, the one
 * holding that address). Nothing but copies from memory here: files are
 * read afterwards, outside the loader's lock. */
static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct sd_list *l = arg;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		if (info->dlpi_addr + ph->p_vaddr < lo)
			lo = info->dlpi_addr + ph->p_vaddr;
		if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi)
			hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
	}
	if (lo >= hi || (l->only && (l->only < lo || l->only >= hi)))
		return 0;
	/* The vdso has no file to resolve symbols in. */
	if (info->dlpi_addr && info->dlpi_addr == getauxval(AT_SYSINFO_EHDR))
		return 0;
	if (l->nr >= SD_MAX_OBJECTS || RT_ARRAY_GROW(l->v, l->cap, l->nr + 1, 32) < 0)
		return 1;
	struct sd_obj *o = &l->v[l->nr];
	memset(o, 0, sizeof(*o));
	o->baddr = lo;
	o->memsz = hi - lo;
	o->is_pic = info->dlpi_addr != 0;
	const char *name = info->dlpi_name;
	if (!name || !*name) {
		/* The main program (glibc gives it no name). */
		ssize_t n = readlink("/proc/self/exe", o->path, sizeof(o->path) - 1);
		o->path[n > 0 ? n : 0] = '\0';
	} else {
		snprintf(o->path, sizeof(o->path), "%s", name);
	}
	note_build_id(info, o);
	l->nr++;
	return l->only ? 1 : 0;
}

static bool read_exact(int fd, void *buf, size_t len, uint64_t off)
{
	return pread(fd, buf, len, (off_t)off) == (ssize_t)len;
}

/* The object's .gnu_debuglink (file name, then padding to 4 bytes, then
 * the CRC-32 of the debug file), from its section headers. A file that
 * cannot be read, or is not a 64-bit ELF file, has none. */
static void read_debug_link(struct sd_obj *o)
{
	if (o->path[0] != '/')
		return;
	int fd = open(o->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return;
	struct stat st;
	Elf64_Ehdr eh;
	Elf64_Shdr *sh = NULL;
	char *names = NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !read_exact(fd, &eh, sizeof(eh), 0) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 ||
	    eh.e_shnum > SD_MAX_SECTIONS || eh.e_shstrndx >= eh.e_shnum)
		goto out;
	sh = calloc(eh.e_shnum, sizeof(*sh));
	if (!sh || !read_exact(fd, sh, (size_t)eh.e_shnum * sizeof(*sh), eh.e_shoff))
		goto out;
	const Elf64_Shdr *ss = &sh[eh.e_shstrndx];
	if (ss->sh_size == 0 || ss->sh_size > SD_SHSTRTAB_MAX)
		goto out;
	names = malloc(ss->sh_size + 1);
	if (!names || !read_exact(fd, names, ss->sh_size, ss->sh_offset))
		goto out;
	names[ss->sh_size] = '\0';
	for (unsigned i = 0; i < eh.e_shnum; i++) {
		if (sh[i].sh_name >= ss->sh_size ||
		    strcmp(names + sh[i].sh_name, ".gnu_debuglink"))
			continue;
		char buf[SD_DEBUGLINK_MAX];
		if (sh[i].sh_size < 8 || sh[i].sh_size > sizeof(buf) ||
		    !read_exact(fd, buf, sh[i].sh_size, sh[i].sh_offset))
			break;
		size_t len = strnlen(buf, sh[i].sh_size);
		size_t crc_at = (len + 1 + 3) & ~(size_t)3;
		if (len == 0 || len >= sizeof(o->debug_link) || crc_at + 4 > sh[i].sh_size)
			break;
		memcpy(o->debug_link, buf, len + 1);
		memcpy(&o->crc, buf + crc_at, 4);
		o->has_debug_link = true;
		break;
	}
out:
	free(names);
	free(sh);
	close(fd);
}

/* The loaded objects (or the one holding `only`, if not 0), with their
 * debug links. Returns 0 or -ENOMEM; *l is the caller's to free. */
static int list_objects(struct sd_list *l, uintptr_t only)
{
	memset(l, 0, sizeof(*l));
	l->only = only;
	dl_iterate_phdr(collect, l);
	for (size_t i = 0; i < l->nr; i++)
		read_debug_link(&l->v[i]);
	return l->nr || only ? 0 : -ENOMEM;
}

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

static void emit_object(const struct sd_obj *o, bool dl)
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
	struct sd_list l;
	int ret = list_objects(&l, 0);
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
	struct sd_list l;
	list_objects(&l, (uintptr_t)addr);
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
