/*
 * dl.c - libringtrace-dl.so: events for the objects a program loads and
 * unloads with dlopen and dlclose, with what symbolization needs (LTTng-UST's
 * liblttng-ust-dl events):
 *
 *   lttng_ust_dl:dlopen      baddr (pointer): the object's lowest PT_LOAD
 *                            address; memsz (u64); flags (s32): dlopen's;
 *                            path (string); has_build_id (u8);
 *                            has_debug_link (u8)
 *   lttng_ust_dl:build_id    baddr, build_id (bytes): its NT_GNU_BUILD_ID
 *   lttng_ust_dl:debug_link  baddr, crc (u32), filename (string)
 *   lttng_ust_dl:dlclose     baddr
 *
 * after each successful dlopen (every call, also of an object already
 * loaded: the path is the object's, not the argument), and before each
 * dlclose of a handle that names an object (while it is still mapped).
 * `ringtrace analyze` and `view` resolve addresses in these objects with
 * them (src/analysis/symbols.c), like the library's state dump.
 *
 * Costs an object lookup and a read of the object's section headers per
 * dlopen and dlclose call (not per event of the program).
 */
#define _GNU_SOURCE
#include <link.h>
#include <stdint.h>
#include <stdlib.h>

#include "../common/loaded_objects.h"
#include "preload.h"

/* The loaded object `handle` names (one of its addresses: its dynamic
 * section), in *l (l->v to free); false if there is none. */
static bool object_of(void *handle, struct rt_loaded_list *l)
{
	struct link_map *lm;
	l->v = NULL;
	if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) < 0 || !lm || !lm->l_ld)
		return false;
	return rt_loaded_objects(l, (uintptr_t)lm->l_ld) == 0 && l->nr == 1;
}

static void record_dlopen(const struct rt_loaded_obj *o, int flags)
{
	void *baddr = (void *)o->baddr;
	uint8_t has_id = o->build_id_len > 0, has_link = o->has_debug_link;
	rt_event(lttng_ust_dl, dlopen, baddr, baddr, memsz, o->memsz, flags, flags,
		 path, o->path, has_build_id, has_id, has_debug_link, has_link);
	if (has_id)
		rt_event(lttng_ust_dl, build_id, baddr, baddr, build_id,
			 rt_bytes(o->build_id, o->build_id_len));
	if (has_link)
		rt_event(lttng_ust_dl, debug_link, baddr, baddr, crc, o->crc, filename,
			 o->debug_link);
}

RT_PRELOAD_API void *dlopen(const char *filename, int flags)
{
	RT_PRELOAD_REAL(dlopen);
	void *handle = fn(filename, flags);
	void *caller = RT_PRELOAD_CALLER();
	struct rt_loaded_list l = { 0 };
	if (handle && rt_preload_begin(caller)) {
		if (object_of(handle, &l))
			record_dlopen(&l.v[0], flags);
		free(l.v);
		rt_preload_end();
	}
	return handle;
}

RT_PRELOAD_API int dlclose(void *handle)
{
	RT_PRELOAD_REAL(dlclose);
	void *caller = RT_PRELOAD_CALLER();
	struct rt_loaded_list l = { 0 };
	if (rt_preload_begin(caller)) {
		if (object_of(handle, &l)) {
			void *baddr = (void *)l.v[0].baddr;
			rt_event(lttng_ust_dl, dlclose, baddr, baddr);
		}
		free(l.v);
		rt_preload_end();
	}
	return fn(handle);
}
