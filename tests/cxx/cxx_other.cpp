/* cxx_other.cpp - the second translation unit of cxx_events: the shared
 * inline function's event from here, and a template instantiated here
 * and in cxx_events.cpp with the same type. */
#include "cxx_shared.h"

void other_unit(int n)
{
	for (int i = 0; i < n; i++)
		shared_event("other", i);
}
