/*
 * ctl_rotate.c - session rotation (docs/rotation.md), as LTTng 2.11+
 * does it: `rotate` archives the session's current trace chunk and the
 * session goes on recording into the next one; `enable-rotation` and
 * `disable-rotation` set its automatic schedule (a period, a size of the
 * chunk), checked every CTL_ROTATION_CHECK_MS by a timer of the loop,
 * armed while some session has a schedule.
 *
 * Layout (rtd.h's struct rtd_rotation): chunk 0 is written in OUTPUT
 * itself (OUTPUT/ust/..., OUTPUT/kernel), chunk N > 0 in OUTPUT/BEGIN-N.
 * A rotation has every trace of the session end its packets at that point
 * and go on in the next chunk's directory (dp_session_rotate,
 * dp_kernel_rotate), then renames the ended chunk to
 * OUTPUT/archives/BEGIN-END-N (chunk 0: its ust/ and kernel/ moved
 * there). Destroying a session that was rotated archives its last chunk
 * too, so that every event is in exactly one archive.
 *
 * Concurrency: main thread, rtd_lock held.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../common/fs_util.h"
#include "../common/warn.h"
#include "ctl.h"

static int timer_fd = -1;
static bool timer_armed;

/* LTTng's chunk times: YYYYmmddTHHMMSS+HHMM, local time. */
static void chunk_time(time_t t, char *buf, size_t len)
{
	struct tm tm;
	localtime_r(&t, &tm);
	strftime(buf, len, "%Y%m%dT%H%M%S%z", &tm);
}

uint64_t ctl_session_bytes_written(struct rtd_session *s)
{
	uint64_t bytes = 0;
	for (const struct rtd_channel *ch = s->channels; ch; ch = ch->next) {
		struct rtd_channel_stats st = { 0 };
		if (dp_channel_stats(s, ch, &st) == 0)
			bytes += st.bytes_written;
	}
	struct rtd_channel_stats kst;
	if (s->kchannels && dp_kernel_stats(s, &kst) == 0)
		bytes += kst.bytes_written;
	return bytes;
}

/* Why the session cannot rotate at all (0: it can). */
static int refused(const struct rtd_session *s, char *err, size_t errlen)
{
	if (s->snapshot) {
		snprintf(err, errlen, "session %s is a snapshot session: its buffers stay in "
			 "memory and 'snapshot record' writes them; only a session that writes "
			 "its trace can rotate", s->name);
		return -EOPNOTSUPP;
	}
	if (s->flat) {
		snprintf(err, errlen, "session %s is a 'ringtrace record' session: it does not "
			 "rotate", s->name);
		return -EOPNOTSUPP;
	}
	if (s->net && s->live_delay_us) {
		snprintf(err, errlen, "session %s is a live session: as in LTTng, it does not "
			 "rotate (its viewers follow one trace)", s->name);
		return -EOPNOTSUPP;
	}
	for (int d = 0; d < 2; d++)
		for (const struct rtd_channel *c = d ? s->kchannels : s->channels; c; c = c->next)
			if (c->tracefile_size || c->tracefile_count) {
				snprintf(err, errlen, "channel %s of session %s has a "
					 "--tracefile-size or --tracefile-count: its files "
					 "rotate on their own, so the session cannot (as in LTTng)",
					 c->name, s->name);
				return -EOPNOTSUPP;
			}
	return 0;
}

/* Move what the chunk `dir` holds (chunk 0: the output's ust/ and
 * kernel/; later ones: the whole directory) to `archive`; where it is
 * now in `where` (on a relay: the session's URL and the archive's path
 * in the relay's output). */
static int archive_chunk(struct rtd_session *s, const char *archive, char *where,
			 size_t wlen, char *err, size_t errlen)
{
	char why[PATH_MAX + 256], parent[PATH_MAX];
	snprintf(where, wlen, "%s", archive);
	if (s->net) {
		const char *chunk = strrchr(s->rot.dir, '/'), *name = strrchr(archive, '/');
		int ret = dp_relay_archive(s, chunk ? chunk + 1 : "", name ? name + 1 : archive,
					   why, sizeof(why), err, errlen);
		if (!ret)
			snprintf(where, wlen, "%s/%s", s->output, why);
		return ret;
	}
	if (snprintf(parent, sizeof(parent), "%s/archives", s->output) >= (int)sizeof(parent))
		goto too_long;
	int ret = rt_mkdir_p(parent, why, sizeof(why));
	if (ret < 0 && ret != -EEXIST) {
		rt_errf(err, errlen, "cannot create %s: %s", parent, why);
		return ret;
	}
	if (s->rot.dir[0]) {
		if (rename(s->rot.dir, archive) < 0) {
			ret = -errno;
			rt_errf(err, errlen, "cannot move %s to %s: %s", s->rot.dir, archive,
				 strerror(errno));
			return ret;
		}
		return 0;
	}
	ret = rt_mkdir_p(archive, why, sizeof(why));
	if (ret < 0) {
		rt_errf(err, errlen, "cannot create %s: %s", archive,
			 ret == -EEXIST ? "it exists" : why);
		return ret;
	}
	static const char *const domains[] = { "ust", "kernel" };
	for (size_t i = 0; i < sizeof(domains) / sizeof(domains[0]); i++) {
		char from[PATH_MAX], to[PATH_MAX];
		if (snprintf(from, sizeof(from), "%s/%s", s->output, domains[i]) >= (int)sizeof(from) ||
		    snprintf(to, sizeof(to), "%s/%s", archive, domains[i]) >= (int)sizeof(to))
			goto too_long;
		if (rename(from, to) < 0 && errno != ENOENT) {
			ret = -errno;
			rt_errf(err, errlen, "cannot move %s to %s: %s", from, to, strerror(errno));
			return ret;
		}
	}
	return 0;
too_long:
	rt_errf(err, errlen, "archive path too long under %s", s->output);
	return -ENAMETOOLONG;
}

/* The archive's path for the current chunk ending at `end`. */
static int archive_path(const struct rtd_session *s, time_t end, char *out, size_t len)
{
	char b[32], e[32];
	chunk_time(s->rot.begin, b, sizeof(b));
	chunk_time(end, e, sizeof(e));
	int n = snprintf(out, len, "%s/archives/%s-%s-%llu", s->output, b, e,
			 (unsigned long long)s->rot.chunk);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int ctl_session_rotate(struct rtd_session *s, char *out_path, size_t out_len, char *err,
		       size_t errlen)
{
	out_path[0] = '\0';
	int ret = refused(s, err, errlen);
	if (ret < 0)
		return ret;
	if (!s->ever_started) {
		snprintf(err, errlen, "session %s has never been started: it has no trace chunk "
			 "to archive", s->name);
		return -ENODATA;
	}
	if (!s->active && !s->rot.recorded) {
		snprintf(err, errlen, "session %s was rotated since it stopped: its current trace "
			 "chunk is empty", s->name);
		return -ENODATA;
	}
	time_t now = time(NULL);
	char root[PATH_MAX], archive[PATH_MAX], t[32];
	chunk_time(now, t, sizeof(t));
	uint64_t next = s->rot.chunk + 1;
	int n = snprintf(root, sizeof(root), "%s/%s-%llu", s->output, t, (unsigned long long)next);
	if (n < 0 || (size_t)n >= sizeof(root) || archive_path(s, now, archive, sizeof(archive)) < 0 ||
	    strlen(archive) >= out_len) {
		snprintf(err, errlen, "trace chunk path too long under %s", s->output);
		return -ENAMETOOLONG;
	}
	/* Every trace ends its chunk here and goes on in the next one; the
	 * ended chunk is archived even if some trace could not write all of
	 * it (reported), since the session records into the next already. */
	char kerr[RTD_ERRLEN] = "";
	ret = dp_session_rotate(s, root, err, errlen);
	int kret = dp_kernel_rotate(s, root, kerr, sizeof(kerr));
	if (kret < 0 && !ret) {
		ret = kret;
		snprintf(err, errlen, "%s", kerr);
	}
	char aerr[CTL_ERRLEN];
	int aret = archive_chunk(s, archive, out_path, out_len, aerr, sizeof(aerr));
	if (aret < 0 && !ret) {
		ret = aret;
		snprintf(err, errlen, "%s", aerr);
	}
	s->rot.chunk = next;
	s->rot.begin = now;
	memcpy(s->rot.dir, root, strlen(root) + 1);
	s->rot.recorded = s->active;
	s->rot.base_bytes = ctl_session_bytes_written(s);
	if (s->rot.timer_us)
		s->rot.due_ms = rtd_now_ms() + (int64_t)(s->rot.timer_us / 1000);
	return ret;
}

void ctl_rotation_started(struct rtd_session *s)
{
	if (!s->ever_started)
		s->rot.begin = time(NULL);
	s->rot.recorded = true;
	if (s->rot.timer_us && !s->rot.due_ms)
		s->rot.due_ms = rtd_now_ms() + (int64_t)(s->rot.timer_us / 1000);
}

void ctl_rotation_destroyed(struct rtd_session *s)
{
	if (!s->rot.chunk)
		return;
	if (!s->rot.recorded) {
		/* Rotated after the session stopped: the chunk holds only the
		 * traces' metadata, nothing to archive. */
		int fd = rt_dir_open(s->rot.dir, 0, NULL, NULL, 0);
		if (fd >= 0) {
			rt_remove_traces(fd, 8);
			close(fd);
			rmdir(s->rot.dir);
		}
		return;
	}
	char path[PATH_MAX], where[PATH_MAX], err[CTL_ERRLEN];
	if (archive_path(s, time(NULL), path, sizeof(path)) < 0 ||
	    archive_chunk(s, path, where, sizeof(where), err, sizeof(err)) < 0)
		rt_warn("session %s: its last trace chunk stays in %s: %s", s->name, s->rot.dir,
			err);
}

/* The schedules whose time has come (active sessions only). */
static void check(int fd, short revents, void *arg)
{
	(void)revents;
	(void)arg;
	uint64_t ticks;
	if (read(fd, &ticks, sizeof(ticks)) < 0)
		return;
	int64_t now = rtd_now_ms();
	for (struct rtd_session *s = rtd_sessions; s; s = s->next) {
		if (!s->active || (!s->rot.timer_us && !s->rot.size))
			continue;
		bool due = s->rot.timer_us && now >= s->rot.due_ms;
		if (!due && s->rot.size)
			due = ctl_session_bytes_written(s) - s->rot.base_bytes >= s->rot.size;
		if (!due)
			continue;
		char path[PATH_MAX], err[CTL_ERRLEN];
		if (ctl_session_rotate(s, path, sizeof(path), err, sizeof(err)) < 0)
			rt_warn("session %s: automatic rotation: %s", s->name, err);
	}
}

static void timer_update(void)
{
	bool want = false;
	for (const struct rtd_session *s = rtd_sessions; s && !want; s = s->next)
		want = s->rot.timer_us || s->rot.size;
	if (want && timer_fd < 0 && (timer_fd = rtd_loop_add_timer(check, NULL)) < 0) {
		rt_warn("cannot watch the rotation schedules: %s", strerror(-timer_fd));
		timer_fd = -1;
		return;
	}
	if (timer_fd < 0 || want == timer_armed)
		return;
	if (rtd_loop_timer_set(timer_fd, want ? CTL_ROTATION_CHECK_MS : 0) == 0)
		timer_armed = want;
}

void ctl_rotation_fini(void)
{
	if (timer_fd >= 0)
		close(timer_fd);
	timer_fd = -1;
	timer_armed = false;
}

void ctl_rotation_describe(FILE *out, const struct rtd_session *s)
{
	if (s->rot.timer_us || s->rot.size) {
		fprintf(out, "    Automatic rotation schedules:\n");
		if (s->rot.timer_us)
			fprintf(out, "      timer period: %llu us\n",
				(unsigned long long)s->rot.timer_us);
		if (s->rot.size)
			fprintf(out, "      size threshold: %llu bytes\n",
				(unsigned long long)s->rot.size);
	}
	if (s->rot.chunk)
		fprintf(out, "    Current trace chunk: %s (%llu)\n", s->rot.dir,
			(unsigned long long)s->rot.chunk);
}

/* rotate: session. */
int ctl_rotate(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err, size_t errlen)
{
	struct rtd_session *s = ctl_session_of(r, err, errlen);
	if (!s)
		return -ENOENT;
	char path[PATH_MAX];
	int ret = ctl_session_rotate(s, path, sizeof(path), err, errlen);
	if (!path[0])
		return ret;	/* refused: nothing done */
	rtp_kv_add(reply, "path", path);
	fprintf(out, "Trace chunk archive for session %s is now readable at %s\n", s->name, path);
	return ret;
}

/* enable-rotation: session, timer-us, size (at least one, not 0). */
int ctl_enable_rotation(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err,
			size_t errlen)
{
	(void)reply;
	struct rtd_session *s = ctl_session_of(r, err, errlen);
	if (!s)
		return -ENOENT;
	uint64_t us = 0, size = 0;
	bool has_us, has_size;
	int ret = ctl_get_u64(r, "timer-us", UINT64_MAX / 2, &us, &has_us, err, errlen);
	if (ret < 0 || (ret = ctl_get_u64(r, "size", UINT64_MAX, &size, &has_size, err,
					  errlen)) < 0)
		return ret;
	if ((!has_us && !has_size) || (has_us && us < 1000) || (has_size && !size)) {
		snprintf(err, errlen, "enable-rotation needs --timer=PERIOD (1 ms at least) "
			 "and/or --size=SIZE (not 0)");
		return -EINVAL;
	}
	if ((ret = refused(s, err, errlen)) < 0)
		return ret;
	if (has_us) {
		s->rot.timer_us = us;
		s->rot.due_ms = s->active ? rtd_now_ms() + (int64_t)(us / 1000) : 0;
		fprintf(out, "Enabled periodic rotations every %llu us on session %s\n",
			(unsigned long long)us, s->name);
	}
	if (has_size) {
		s->rot.size = size;
		fprintf(out, "Enabled size-based rotations every %llu bytes written on session %s\n",
			(unsigned long long)size, s->name);
	}
	timer_update();
	return 0;
}

/* disable-rotation: session, timer=1, size=1 (at least one). */
int ctl_disable_rotation(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err,
			 size_t errlen)
{
	(void)reply;
	struct rtd_session *s = ctl_session_of(r, err, errlen);
	if (!s)
		return -ENOENT;
	const char *timer = ctl_get(r, "timer"), *size = ctl_get(r, "size");
	if (!timer && !size) {
		snprintf(err, errlen, "disable-rotation needs --timer and/or --size");
		return -EINVAL;
	}
	if ((timer && !s->rot.timer_us) || (size && !s->rot.size)) {
		snprintf(err, errlen, "session %s has no %s rotation schedule", s->name,
			 timer && !s->rot.timer_us ? "periodic" : "size-based");
		return -ENOENT;
	}
	if (timer) {
		s->rot.timer_us = 0;
		s->rot.due_ms = 0;
		fprintf(out, "Disabled periodic rotation on session %s\n", s->name);
	}
	if (size) {
		s->rot.size = 0;
		fprintf(out, "Disabled size-based rotation on session %s\n", s->name);
	}
	timer_update();
	return 0;
}
