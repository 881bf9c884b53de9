/*
 * lttng_tp.c - instantiates the LTTng-UST probes of lttng_tp.h (the
 * provider is linked into the benchmark programs statically).
 */
#define TRACEPOINT_CREATE_PROBES
#define TRACEPOINT_DEFINE
#include "lttng_tp.h"
