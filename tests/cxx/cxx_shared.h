/*
 * cxx_shared.h - an inline function with an event, called from two
 * translation units (cxx_events.cpp, cxx_other.cpp): its call site is one
 * descriptor however many units emit it, registered once.
 */
#ifndef CXX_SHARED_H
#define CXX_SHARED_H

#include <ringtrace/ringtrace.h>

inline void shared_event(const char *unit, int k)
{
	rt_event(cxx, shared, unit, unit, k, k);
}

void other_unit(int n);

#endif
