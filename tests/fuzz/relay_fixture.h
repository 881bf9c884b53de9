/*
 * relay_fixture.h - the relay's table as the relay and live harnesses
 * (fuzz_relay.c, fuzz_live.c) set it up: a private output directory, a
 * session with streams, emptied between inputs, and a connection served
 * against a scripted peer (fuzz.h). One thread (libFuzzer's).
 */
#ifndef RINGTRACE_FUZZ_RELAY_FIXTURE_H
#define RINGTRACE_FUZZ_RELAY_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "../../src/relay/relay.h"

#define FUZZ_TRACE "ust/uid/0/64-bit"

/* Once: relay_cfg's output a new directory of /tmp named after `who`
 * (removed at exit), LTTng's viewers served, a fixed secret. */
void fuzz_relay_setup(const char *who);
/* Between inputs: the table emptied, the output directory's content
 * removed. */
void fuzz_relay_reset(void);
/* Session 1 (host, name), live, with its metadata (stream 1) and
 * channel0_0 (stream 2) holding two packets, its last beacon at 500. */
struct relay_session *fuzz_relay_fixture(const char *host, const char *name);
/* Serve data[0..size) with fn on one end of a socket pair
 * (non-blocking, as the relay's accepted sockets are), the scripted peer
 * on the other; host: what the connection authenticated as. */
void fuzz_relay_serve(void (*fn)(int fd, const char *host), const char *host,
		      const uint8_t *data, size_t size);

#endif
