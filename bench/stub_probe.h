/* stub_probe.h - see stub_probe.c. */
#ifndef RTBENCH_STUB_PROBE_H
#define RTBENCH_STUB_PROBE_H

#include <ringtrace/ringtrace.h>

/* Shaped like rt__record: the payload is serialized by the caller. */
__attribute__((visibility("default"))) void
stub_record(struct rt_event_desc *ev, const void *payload, size_t size);

#endif
