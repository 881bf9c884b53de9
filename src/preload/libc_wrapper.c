/*
 * libc_wrapper.c - libringtrace-libc-wrapper.so: an event for each call
 * of the C library's allocation functions (LTTng-UST's
 * liblttng-ust-libc-wrapper events, plus the caller and aligned_alloc):
 *
 *   lttng_ust_libc:malloc          size (u64), ptr (pointer), caller
 *   lttng_ust_libc:calloc          nmemb, size, ptr, caller
 *   lttng_ust_libc:realloc         in_ptr, size, ptr, caller
 *   lttng_ust_libc:free            ptr, caller
 *   lttng_ust_libc:memalign        alignment, size, ptr, caller
 *   lttng_ust_libc:posix_memalign  out_ptr, alignment, size, result (s32),
 *                                  caller
 *   lttng_ust_libc:aligned_alloc   alignment, size, ptr, caller
 *
 * recorded after the real function returns (ptr is its result).
 *
 * The real functions are found with dlsym(RTLD_NEXT) on first use. dlsym
 * may itself allocate (glibc's error buffer), before any real function
 * is known: those allocations come from a static pool (`bootstrap`,
 * never freed; free() and realloc() recognize its addresses).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "preload.h"

struct real_alloc {
	void *(*malloc)(size_t);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void (*free)(void *);
	void *(*memalign)(size_t, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
};

/* The real functions: each pointer stored once found (relaxed: threads
 * that look them up at the same time store the same values), then
 * `ready` (release). */
static struct real_alloc real;
static int ready;
/* This thread is inside dlsym looking the functions up. */
static __thread int looking __attribute__((tls_model("initial-exec")));

/* The static pool: each block is preceded by its size (for realloc),
 * and aligned to 16 bytes. Bump allocation, atomic (threads may race
 * before the real functions are known). */
#define BOOTSTRAP_SIZE 65536
static _Alignas(16) unsigned char bootstrap[BOOTSTRAP_SIZE];
static size_t bootstrap_used;

static bool in_bootstrap(const void *p)
{
	return (const unsigned char *)p >= bootstrap &&
	       (const unsigned char *)p < bootstrap + BOOTSTRAP_SIZE;
}

/* A zeroed block of `size` bytes aligned to 16, or NULL with errno
 * ENOMEM when the pool is exhausted (it is zeroed: never used before). */
static void *bootstrap_alloc(size_t size)
{
	size_t need = 16 + ((size + 15) & ~(size_t)15);
	if (size > BOOTSTRAP_SIZE)
		goto nomem;
	/* Relaxed: the bump only hands out disjoint ranges. */
	size_t at = __atomic_fetch_add(&bootstrap_used, need, __ATOMIC_RELAXED);
	if (at + need > BOOTSTRAP_SIZE)
		goto nomem;
	memcpy(bootstrap + at, &size, sizeof(size));
	return bootstrap + at + 16;
nomem:
	errno = ENOMEM;
	return NULL;
}

static size_t bootstrap_size(const void *p)
{
	size_t size;
	memcpy(&size, (const unsigned char *)p - 16, sizeof(size));
	return size;
}

/* A real function (relaxed: see `real`), NULL until found. */
#define REAL(name) (__atomic_load_n(&real.name, __ATOMIC_RELAXED))
#define LOOKUP(name)                                                           \
	__atomic_store_n(&real.name, (__typeof__(real.name))dlsym(RTLD_NEXT, #name), \
			 __ATOMIC_RELAXED)

/* Whether the real functions are known; false while this thread looks
 * them up (its allocations then come from the pool). Several threads may
 * look them up at once: each finds the same addresses. */
static bool have_real(void)
{
	/* Acquire: pairs with the release store below; every pointer of
	 * `real` is set. */
	if (__builtin_expect(__atomic_load_n(&ready, __ATOMIC_ACQUIRE), 1))
		return true;
	if (looking)
		return false;
	looking++;
	LOOKUP(malloc);
	LOOKUP(calloc);
	LOOKUP(realloc);
	LOOKUP(free);
	LOOKUP(memalign);
	LOOKUP(posix_memalign);
	LOOKUP(aligned_alloc);
	looking--;
	if (!REAL(malloc) || !REAL(calloc) || !REAL(realloc) || !REAL(free) ||
	    !REAL(memalign) || !REAL(posix_memalign) || !REAL(aligned_alloc))
		abort();	/* no C library behind us: nothing can allocate */
	/* Release: the pointers are stored before `ready` says so. */
	__atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
	return true;
}

/* Each wrapper: the real function, then the event unless the tracer
 * called or this thread is already recording one of this helper's
 * (preload.h). */

RT_PRELOAD_API void *malloc(size_t size)
{
	void *caller = RT_PRELOAD_CALLER();
	if (!have_real())
		return bootstrap_alloc(size);
	void *ptr = REAL(malloc)(size);
	if (rt_preload_begin(caller)) {
		rt_event(lttng_ust_libc, malloc, size, size, ptr, ptr, caller, caller);
		rt_preload_end();
	}
	return ptr;
}

RT_PRELOAD_API void *calloc(size_t nmemb, size_t size)
{
	void *caller = RT_PRELOAD_CALLER();
	if (!have_real()) {
		if (size && nmemb > SIZE_MAX / size) {
			errno = ENOMEM;
			return NULL;
		}
		return bootstrap_alloc(nmemb * size);
	}
	void *ptr = REAL(calloc)(nmemb, size);
	if (rt_preload_begin(caller)) {
		rt_event(lttng_ust_libc, calloc, nmemb, nmemb, size, size, ptr, ptr, caller,
			 caller);
		rt_preload_end();
	}
	return ptr;
}

RT_PRELOAD_API void *realloc(void *in_ptr, size_t size)
{
	void *caller = RT_PRELOAD_CALLER();
	void *ptr;
	if (in_bootstrap(in_ptr)) {
		/* A pool block moves to a new block (the pool's, or the real
		 * malloc's once known); it is never freed. */
		bool known = have_real();
		ptr = known ? REAL(malloc)(size) : bootstrap_alloc(size);
		if (ptr) {
			size_t old = bootstrap_size(in_ptr);
			memcpy(ptr, in_ptr, old < size ? old : size);
		}
		if (!known)
			return ptr;
	} else if (!have_real()) {
		/* Only pool blocks exist yet. */
		return in_ptr ? NULL : bootstrap_alloc(size);
	} else {
		ptr = REAL(realloc)(in_ptr, size);
	}
	if (rt_preload_begin(caller)) {
		rt_event(lttng_ust_libc, realloc, in_ptr, in_ptr, size, size, ptr, ptr, caller,
			 caller);
		rt_preload_end();
	}
	return ptr;
}

RT_PRELOAD_API void free(void *ptr)
{
	void *caller = RT_PRELOAD_CALLER();
	if (in_bootstrap(ptr))
		return;
	if (!have_real())
		return;		/* only pool blocks exist yet */
	REAL(free)(ptr);
	if (rt_preload_begin(caller)) {
		rt_event(lttng_ust_libc, free, ptr, ptr, caller, caller);
		rt_preload_end();
	}
}

RT_PRELOAD_API void *memalign(size_t alignment, size_t size)
{
	void *caller = RT_PRELOAD_CALLER();
	if (!have_real())
		return alignment <= 16 ? bootstrap_alloc(size) : NULL;
	void *ptr = REAL(memalign)(alignment, size);
	if (rt_preload_begin(caller)) {
		rt_event(lttng_ust_libc, memalign, alignment, alignment, size, size, ptr, ptr,
			 caller, caller);
		rt_preload_end();
	}
	return ptr;
}

RT_PRELOAD_API int posix_memalign(void **memptr, size_t alignment, size_t size)
{
	void *caller = RT_PRELOAD_CALLER();
	if (!have_real()) {
		if (alignment > 16)
			return ENOMEM;
		*memptr = bootstrap_alloc(size);
		return *memptr ? 0 : ENOMEM;
	}
	int result = REAL(posix_memalign)(memptr, alignment, size);
	if (rt_preload_begin(caller)) {
		void *out_ptr = result == 0 ? *memptr : NULL;
		rt_event(lttng_ust_libc, posix_memalign, out_ptr, out_ptr, alignment, alignment,
			 size, size, result, result, caller, caller);
		rt_preload_end();
	}
	return result;
}

RT_PRELOAD_API void *aligned_alloc(size_t alignment, size_t size)
{
	void *caller = RT_PRELOAD_CALLER();
	if (!have_real())
		return alignment <= 16 ? bootstrap_alloc(size) : NULL;
	void *ptr = REAL(aligned_alloc)(alignment, size);
	if (rt_preload_begin(caller)) {
		rt_event(lttng_ust_libc, aligned_alloc, alignment, alignment, size, size, ptr,
			 ptr, caller, caller);
		rt_preload_end();
	}
	return ptr;
}
