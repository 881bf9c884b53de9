/*
 * ctl_trigger_ring.c - event-rule-matches conditions on user events. The
 * programs evaluate them on their own events and write each match into
 * their notification ring (src/proto/trig_ring.h; rules and rings are
 * handed out by app_triggers.c); a timer of the loop has the data plane
 * read every ring each CTL_TRIGGER_RING_MS while such a trigger exists,
 * and each notification fires its trigger (ctl_trigger_fire: actions in
 * order with their rate policies, notifications carrying pid, tid and the
 * captures).
 *
 * A timer rather than a wakeup from the program: waking the daemon takes
 * a system call (an eventfd write), which the probe never makes, and a
 * filter that matches often would make one per event. Reading costs the
 * daemon one load per ring when nothing matched, and adds at most
 * CTL_TRIGGER_RING_MS to the time from the event to its actions
 * (docs/performance.md measures it).
 *
 * Concurrency: main thread, rtd_lock held.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "../common/warn.h"
#include "ctl.h"

static int ring_fd = -1;
static bool ring_armed;

static void fire(struct rtd_user_trigger *ut, const struct rtp_kv *values, void *arg)
{
	(void)arg;
	struct ctl_trigger *t =
		(struct ctl_trigger *)(void *)((char *)ut - offsetof(struct ctl_trigger, ut));
	ctl_trigger_fire(t, values);
}

static void on_timer(int fd, short revents, void *arg)
{
	(void)revents;
	(void)arg;
	uint64_t ticks;
	if (read(fd, &ticks, sizeof(ticks)) < 0)
		return;
	dp_user_triggers_read(fire, NULL);
}

void ctl_trigger_ring_update(void)
{
	bool want = rtd_user_triggers != NULL;
	if (want && ring_fd < 0) {
		ring_fd = rtd_loop_add_timer(on_timer, NULL);
		if (ring_fd < 0) {
			rt_warn("cannot watch the programs' trigger notifications: %s",
				strerror(-ring_fd));
			ring_fd = -1;
			return;
		}
	}
	if (ring_fd < 0 || want == ring_armed)
		return;
	if (rtd_loop_timer_set(ring_fd, want ? CTL_TRIGGER_RING_MS : 0) == 0)
		ring_armed = want;
}

void ctl_trigger_ring_fini(void)
{
	if (ring_fd >= 0)
		close(ring_fd);
	ring_fd = -1;
	ring_armed = false;
}
