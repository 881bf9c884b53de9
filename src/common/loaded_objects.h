/*
 * loaded_objects.h - the objects (executable, shared libraries) loaded in
 * this process, as symbolization needs them: where each lies in memory,
 * its file, its build id and its debug link. Used by the library's state
 * dump (src/lib/statedump.c) and the dlopen helper (src/preload/dl.c).
 *
 * The build id is read from the object's PT_NOTE segments in memory; the
 * debug link from the object's file (opened read-only, non-blocking,
 * regular files only, section headers and the section bounded in size).
 * The vdso is not listed (it has no file).
 *
 * Concurrency: any thread, any number at once (dl_iterate_phdr holds the
 * loader's lock while the memory is copied; files are read after it).
 * Allocates: not for the fast path or a signal handler.
 */
#ifndef RINGTRACE_COMMON_LOADED_OBJECTS_H
#define RINGTRACE_COMMON_LOADED_OBJECTS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Objects one list holds at most; the largest build id kept. */
#define RT_LOADED_MAX_OBJECTS 4096
#define RT_BUILD_ID_MAX 64

struct rt_loaded_obj {
	uintptr_t baddr;		/* lowest PT_LOAD address in memory */
	uint64_t memsz;			/* from there to the end of the highest */
	uint8_t is_pic;
	uint32_t build_id_len;		/* 0: none */
	uint8_t build_id[RT_BUILD_ID_MAX];	/* NT_GNU_BUILD_ID */
	char path[PATH_MAX];		/* the main program: /proc/self/exe's target */
	bool has_debug_link;		/* .gnu_debuglink: */
	uint32_t crc;
	char debug_link[256];
};

struct rt_loaded_list {
	struct rt_loaded_obj *v;
	size_t nr, cap;
	uintptr_t only;			/* collect the object holding this address */
};

/* The loaded objects (or, when `only` is not 0, the one holding that
 * address: none if no object does), with their debug links. Returns 0,
 * or -ENOMEM when nothing could be listed; l->v is the caller's to free
 * in both cases. */
int rt_loaded_objects(struct rt_loaded_list *l, uintptr_t only);

#endif /* RINGTRACE_COMMON_LOADED_OBJECTS_H */
