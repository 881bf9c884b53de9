/*
 * live_viewer.h - a viewer of the LTTng live protocol (live_proto.h):
 * list the sessions a relay daemon serves, or follow one while it is
 * recorded, as a live trace set of the reader (reader.h) that rtr_next
 * reads like a directory.
 *
 *   struct lv_viewer *v;
 *   if (lv_viewer_connect(&url, &stop_flag, &v, err, sizeof(err)) < 0) ...
 *   struct rtr_trace *t;
 *   if (lv_viewer_attach(v, url.target, url.session, &t, err, sizeof(err)) < 0) ...
 *   while ((r = rtr_next(t, &ev)) > 0) ...   (0: the session ended;
 *                                            -EINTR: *stop was set)
 *   rtr_close(t);
 *   lv_viewer_close(v);                      (detaches)
 *
 * Every session of the relay with that host and session name is attached
 * (LTTng's relay lists one per domain and ABI) from its beginning, so the
 * events still on the relay are all read. Streams and metadata that
 * appear later are followed; a stream with nothing new is asked again
 * every retry period (100 ms), and one the relay says is inactive until
 * a time no longer holds back the others.
 *
 * Authentication: with the relay's secret (src/net's secret file), the
 * viewer opens with ringtrace's handshake (role RNET_ROLE_VIEWER); a relay
 * that does not speak it (LTTng's closes the connection) is connected to
 * again without; a relay that refuses the secret is an error (-EACCES,
 * "authentication failed"). Without a secret file: as LTTng's viewers.
 *
 * Bounds (a hostile relay gets a clear error, never a crash or a hang):
 * each reply is read within the I/O timeout (30 s), a packet is at most
 * LV_PACKET_MAX bytes, metadata at most LV_METADATA_MAX, at most
 * LV_STREAMS_MAX streams and LV_SESSIONS_MAX listed sessions; a reply of
 * the wrong size or status ends the connection with what was wrong.
 *
 * Errors: negative errno with a message in err: -ECONNREFUSED and the
 * other connect errors, -ETIMEDOUT (a reply too slow), -ECONNRESET (the
 * relay closed the connection), -EPROTO (a reply that breaks the
 * protocol), -ENOENT (no such session), -EBUSY (another viewer is
 * attached), -EACCES (authentication failed), -EINTR (*stop set),
 * -ENOMEM.
 *
 * Concurrency: one thread per viewer; *stop may be set by a signal
 * handler (it is polled between and during socket waits).
 */
#ifndef RINGTRACE_LIVE_VIEWER_H
#define RINGTRACE_LIVE_VIEWER_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "../reader/reader.h"
#include "live_proto.h"

#define LV_PACKET_MAX (64u << 20)
#define LV_METADATA_MAX (64u << 20)
#define LV_STREAMS_MAX 16384u
#define LV_SESSIONS_MAX 65536u

struct lv_viewer;

/* Connect to the relay of u and agree on the protocol version. */
int lv_viewer_connect(const struct lv_url *u, const volatile sig_atomic_t *stop,
		      struct lv_viewer **out, char *err, size_t errlen);
/* The relay's sessions (malloc'ed array in *out, to free). */
int lv_viewer_list(struct lv_viewer *v, struct lv_session **out, size_t *n, char *err,
		   size_t errlen);
/* Attach to every session named `session` of host `host`; *out is the
 * live trace set to read (close it before the viewer). */
int lv_viewer_attach(struct lv_viewer *v, const char *host, const char *session,
		     struct rtr_trace **out, char *err, size_t errlen);
/* Detach (when attached and still connected) and free. */
void lv_viewer_close(struct lv_viewer *v);

#endif /* RINGTRACE_LIVE_VIEWER_H */
