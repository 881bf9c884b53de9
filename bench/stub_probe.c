/*
 * stub_probe.c - a shared library with the probe's two entry points
 * (rt__reserve/rt__commit signatures) doing nothing but handing out a
 * scratch slot: what the call alone costs (breakdown.c, variant "calls").
 */
#include "stub_probe.h"

static char scratch[64];

bool stub_reserve(struct rt_event_desc *ev, size_t payload_size,
		  struct rt_slot *slot)
{
	(void)ev;
	(void)payload_size;
	slot->p = scratch;
	return true;
}

bool stub_commit(struct rt_slot *slot)
{
	(void)slot;
	return false;
}
