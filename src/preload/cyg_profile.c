/*
 * cyg_profile.c - libringtrace-cyg-profile.so: function entry and exit of
 * code built with -finstrument-functions (GCC and clang call
 * __cyg_profile_func_enter and __cyg_profile_func_exit around every
 * function), as LTTng-UST's liblttng-ust-cyg-profile records them:
 *
 *   lttng_ust_cyg_profile:func_entry  addr (pointer): the function,
 *                                     call_site (pointer): the return
 *                                     address in its caller
 *   lttng_ust_cyg_profile:func_exit   addr, call_site
 *
 * at log level DEBUG_FUNCTION. Nothing here is instrumented itself, nor is
 * the library's recording path (it is not built with the option), so no
 * event recurses.
 */
#include "preload.h"

#define NOINST __attribute__((no_instrument_function))

RT_PRELOAD_API NOINST void __cyg_profile_func_enter(void *func, void *call_site);
RT_PRELOAD_API NOINST void __cyg_profile_func_exit(void *func, void *call_site);

void __cyg_profile_func_enter(void *func, void *call_site)
{
	rt_event_loglevel(RT_LOGLEVEL_DEBUG_FUNCTION, lttng_ust_cyg_profile, func_entry, addr,
			  func, call_site, call_site);
}

void __cyg_profile_func_exit(void *func, void *call_site)
{
	rt_event_loglevel(RT_LOGLEVEL_DEBUG_FUNCTION, lttng_ust_cyg_profile, func_exit, addr,
			  func, call_site, call_site);
}
