/*
 * stub_probe.c - a shared library with an entry point shaped like the
 * probe's rt__record, doing nothing: what the call alone costs
 * (breakdown.c, variant "calls").
 */
#include "stub_probe.h"

void stub_record(struct rt_event_desc *ev, const void *payload, size_t size)
{
	(void)ev;
	(void)payload;
	(void)size;
}
