/*
 * notification.h - receive the notifications of triggers in a program.
 *
 * A trigger added with `ringtrace add-trigger ... --action=notify` sends
 * a notification each time its condition fires (docs/triggers.md). A
 * program receives those of the triggers its user may see (its own; for
 * root, everyone's) from its user's session daemon:
 *
 *   #include <ringtrace/notification.h>
 *   struct rt_notification_channel *ch;
 *   char err[256];
 *   const char *names[] = { "full" };
 *   if (rt_notification_channel_open(names, 1, &ch, err, sizeof(err)) < 0)
 *           errx(1, "%s", err);
 *   for (;;) {
 *           struct rt_notification *n;
 *           int r = rt_notification_channel_read(ch, -1, &n);
 *           if (r < 0)
 *                   break;                  // -ECONNRESET: the daemon is gone
 *           printf("%s fired at %s\n", rt_notification_trigger(n),
 *                  rt_notification_get(n, "time-ns"));
 *           rt_notification_free(n);
 *   }
 *   rt_notification_channel_close(ch);
 *
 * A notification is a list of key/value text entries, in this order:
 *   trigger      the trigger's name
 *   owner-uid    its owner
 *   condition    its condition type (e.g. channel-buffer-usage-ge)
 *   time-ns      when it fired: CLOCK_REALTIME, nanoseconds since the epoch
 *   host         the daemon's host name
 *   fired        how many times the condition fired, this time included
 *   then what the condition reports: session, channel, domain,
 *   buffer-usage (0 to 1), consumed-size (bytes); pid and tid of the
 *   program where an event matched; capture entries "FIELD=VALUE" (one
 *   per --capture, in order; FIELD[INDEX] an element's value), a
 *   byte sequence's as capture-bytes "FIELD=HEX" (its bytes, two
 *   lowercase hexadecimal digits each); and snapshot (the directory written by a
 *   snapshot-session action that ran before the notify action).
 * Keys not listed may appear in later versions: skip what you do not know.
 *
 * Link with libringtrace (`pkg-config --libs ringtrace`). The daemon is
 * found as `ringtrace` finds it (RINGTRACE_RUNDIR, else the user's run
 * directory) and checked the same way (its run directory must be the
 * user's, the daemon must run as the user or root).
 *
 * Delivery: the daemon queues each notification for each subscriber and
 * closes a subscriber that has not taken what is queued within 2 s (a
 * read then returns -ECONNRESET); read promptly, or from a thread of its
 * own. Nothing is kept for a subscriber that is not connected.
 *
 * Errors are negative errno values. Concurrency: a channel is used by one
 * thread at a time; notifications are independent objects. These
 * functions block (read up to its timeout, open up to 5 s) and are not
 * for a signal handler or a tracing fast path.
 */
#ifndef RINGTRACE_NOTIFICATION_H
#define RINGTRACE_NOTIFICATION_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RT_NOTIFY_API __attribute__((visibility("default")))

struct rt_notification_channel;
struct rt_notification;

/*
 * Connect to the user's session daemon and subscribe to the
 * notifications of the triggers names[0 .. nr) (nr 0: every trigger the
 * user may see). Returns 0 with *out set, or -ENOENT / -ECONNREFUSED (no
 * daemon, or a trigger of that name does not exist), -EACCES, -EPERM
 * (the daemon or its run directory is not to be trusted), -ETIMEDOUT,
 * -ENOMEM, -errno; err (errlen bytes, may be NULL) then says why in one
 * line.
 */
RT_NOTIFY_API int rt_notification_channel_open(const char *const *names, size_t nr,
					       struct rt_notification_channel **out,
					       char *err, size_t errlen);
/* The channel's socket, readable when a notification arrives (for poll;
 * read it with rt_notification_channel_read only). */
RT_NOTIFY_API int rt_notification_channel_fd(const struct rt_notification_channel *ch);
/*
 * The next notification, waiting at most timeout_ms (-1: no limit).
 * Returns 0 with *out set (free it with rt_notification_free), or
 * -ETIMEDOUT (nothing came), -ECONNRESET (the daemon closed the
 * channel: it exited, or this reader was too slow), -EPROTO (a malformed
 * message; the channel is unusable), -ENOMEM.
 */
RT_NOTIFY_API int rt_notification_channel_read(struct rt_notification_channel *ch,
					       int timeout_ms, struct rt_notification **out);
RT_NOTIFY_API void rt_notification_channel_close(struct rt_notification_channel *ch);

/* The value of the first entry `key`, or NULL. */
RT_NOTIFY_API const char *rt_notification_get(const struct rt_notification *n,
					      const char *key);
/* The trigger's name (never NULL). */
RT_NOTIFY_API const char *rt_notification_trigger(const struct rt_notification *n);
/* Every entry in order: start with *pos = 0; returns 1 with key and value
 * set, 0 after the last. */
RT_NOTIFY_API int rt_notification_next(const struct rt_notification *n, size_t *pos,
				       const char **key, const char **value);
RT_NOTIFY_API void rt_notification_free(struct rt_notification *n);

#ifdef __cplusplus
}
#endif

#endif /* RINGTRACE_NOTIFICATION_H */
