/*
 * probe_events.c - user-space probes as the kernel's uprobe events
 * (kernel_internal.h): defined in tracefs's uprobe_events under a group
 * of their instance's owner, "ringtrace_OWNERPID_N", removed with the
 * instance, and removed as stale (rtk_instances_remove_stale) once their
 * owner is gone, as instances are. A uprobe event exists once for the
 * whole machine (every instance sees it); each instance enables its own.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tracefs/tracefs.h>

#include "kernel_internal.h"

#define UPROBE_TYPES (TRACEFS_DYNEVENT_UPROBE | TRACEFS_DYNEVENT_URETPROBE)

int rtk_probe_check_name(const char *name, char *err, size_t errlen)
{
	bool ok = name && (isalpha((unsigned char)*name) || *name == '_') &&
		  strlen(name) <= RTK_PROBE_NAME_MAX;
	for (const char *c = name; ok && *c; c++)
		ok = isalnum((unsigned char)*c) || *c == '_';
	if (!ok) {
		rt_errf(err, errlen, "probe event name '%s': letters, digits and '_', not "
			"starting with a digit, at most %d characters (ftrace's rule)",
			name ? name : "", RTK_PROBE_NAME_MAX);
		return -EINVAL;
	}
	return 0;
}

int rtk_probe_check(const char *name, const char *spec, char *err, size_t errlen)
{
	struct rtk_probe_site s;
	int ret = rtk_probe_check_name(name, err, errlen);
	return ret < 0 ? ret : rtk_probe_resolve(spec, &s, err, errlen);
}

void rtk_probe_group(char *out, size_t len)
{
	static unsigned seq;	/* atomic: groups of one process are distinct */
	snprintf(out, len, RTK_PROBE_GROUP_PREFIX "%d_%u", (int)getpid(),
		 __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
}

int rtk_probe_define(const char *group, const char *event, const struct rtk_probe_site *s,
		     char *err, size_t errlen)
{
	char line[PATH_MAX + 1024], ref[32] = "";
	if (s->ref_ctr)
		snprintf(ref, sizeof(ref), "(0x%" PRIx64 ")", s->ref_ctr);
	int n = snprintf(line, sizeof(line), "%c:%s/%s %s:0x%" PRIx64 "%s%s", s->ret ? 'r' : 'p',
			 group, event, s->path, s->offset, ref, s->args);
	if (n < 0 || n >= (int)sizeof(line)) {
		rt_errf(err, errlen, "the probe %s is too long to define", event);
		return -E2BIG;
	}
	tracefs_error_clear(NULL);
	errno = 0;
	if (tracefs_instance_file_append(NULL, "uprobe_events", line) < 0) {
		int ret = errno ? -errno : -EIO;
		char *why = tracefs_error_last(NULL);
		rt_errf(err, errlen, "the kernel refuses the probe '%s': %s%s%s", line,
			strerror(-ret), why && *why ? ": " : "", why && *why ? why : "");
		free(why);
		return ret;
	}
	return 0;
}

/* Remove the uprobe events of the groups `drop` names; the number
 * removed. */
static int remove_where(bool (*drop)(const char *system, const void *arg), const void *arg)
{
	struct tracefs_dynevent **evs = tracefs_dynevent_get_all(UPROBE_TYPES, NULL);
	int removed = 0;
	for (size_t i = 0; evs && evs[i]; i++) {
		char *system = NULL;
		tracefs_dynevent_info(evs[i], &system, NULL, NULL, NULL, NULL);
		/* force: disabled in every instance first (ours only). */
		if (system && drop(system, arg) && tracefs_dynevent_destroy(evs[i], true) == 0)
			removed++;
		free(system);
	}
	tracefs_dynevent_list_free(evs);
	return removed;
}

static bool same_group(const char *system, const void *arg)
{
	return !strcmp(system, arg);
}

void rtk_probes_remove(const char *group)
{
	remove_where(same_group, group);
}

/* A group whose owner process is gone. */
static bool stale_group(const char *system, const void *arg)
{
	(void)arg;
	size_t plen = strlen(RTK_PROBE_GROUP_PREFIX);
	char *end;
	if (strncmp(system, RTK_PROBE_GROUP_PREFIX, plen))
		return false;
	long pid = strtol(system + plen, &end, 10);
	return pid > 0 && *end == '_' && kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

int rtk_probes_remove_stale(void)
{
	return remove_where(stale_group, NULL);
}
