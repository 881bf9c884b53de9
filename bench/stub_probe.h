/* stub_probe.h - see stub_probe.c. */
#ifndef RTBENCH_STUB_PROBE_H
#define RTBENCH_STUB_PROBE_H

#include <ringtrace/ringtrace.h>

__attribute__((visibility("default"))) bool
stub_reserve(struct rt_event_desc *ev, size_t payload_size, struct rt_slot *slot);
__attribute__((visibility("default"))) bool stub_commit(struct rt_slot *slot);

#endif
