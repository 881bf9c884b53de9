/*
 * ctl_requests.c - the control requests: dispatch, and the session life
 * cycle (create, destroy, start, stop, snapshot record, set-session).
 * Rules and channels are in ctl_rules.c, list/status in ctl_report.c,
 * save/load in ctl_save.c.
 *
 * Request keys (all values text; the `ringtrace` command builds them):
 *   cmd=NAME first, session=NAME to name a session (else the current
 *   one), then the command's own keys listed with each handler.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/fs_util.h"
#include "../net/net.h"
#include "ctl.h"

const char *ctl_get(const struct ctl_req *r, const char *key)
{
	return rtp_kv_get(r->p, r->len, key);
}

struct rtd_session *ctl_session_of(const struct ctl_req *r, char *err, size_t errlen)
{
	const char *name = ctl_get(r, "session");
	if (!name) {
		if (!model_current)
			snprintf(err, errlen, "no current session: name one with -s SESSION "
				 "or create one with 'ringtrace create'");
		return model_current;
	}
	struct rtd_session *s = model_session_find(name);
	if (!s)
		snprintf(err, errlen, "session '%s' not found", name);
	return s;
}

int ctl_get_u64(const struct ctl_req *r, const char *key, uint64_t max, uint64_t *out,
		bool *present, char *err, size_t errlen)
{
	const char *v = ctl_get(r, key);
	if (present)
		*present = v != NULL;
	if (!v)
		return 0;
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	if (!*v || *v == '-' || *end || errno || n > max) {
		snprintf(err, errlen, "%s: '%s' is not a number from 0 to %" PRIu64, key, v, max);
		return -EINVAL;
	}
	*out = n;
	return 0;
}

void ctl_rules_changed(struct rtd_session *s, struct rtp_kv *reply)
{
	char err[CTL_ERRLEN] = "";
	if (dp_session_rules_changed(s, err, sizeof(err)) < 0)
		rtp_kv_addf(reply, "warning", "session %s: the change applies at the next start "
			    "(%s)", s->name, err[0] ? err : "data plane error");
}

static void stamp(char *buf, size_t len)
{
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	strftime(buf, len, "%Y%m%d-%H%M%S", &tm);
}

/* Whether two absolute paths are the same directory or one holds the
 * other (as written: paths are compared, not what they resolve to). */
static bool paths_nest(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), n = la < lb ? la : lb;
	while (n > 1 && (a[n - 1] == '/' || b[n - 1] == '/'))
		n--;
	if (strncmp(a, b, n))
		return false;
	char ca = a[n], cb = b[n];
	return (ca == '\0' || ca == '/') && (cb == '\0' || cb == '/');
}

/*
 * The output of a new session, at create rather than at the first write:
 * created if missing (mode 0750) under directories that are ours or
 * root's, itself ours and not writable by others (fs_util.h), writable
 * (a read-only file system is refused here), not the output of a session
 * that exists (never, even with force), and, unless snapshot or force,
 * empty: a directory holding another trace is refused, or with force the
 * traces it holds are removed (rt_remove_traces).
 */
static int check_output(const char *path, bool is_snap, bool force, FILE *out, char *err,
			size_t errlen)
{
	for (const struct rtd_session *o = rtd_sessions; o; o = o->next) {
		if (o->output[0] && paths_nest(o->output, path)) {
			snprintf(err, errlen, "output %s: session %s writes in %s; give another "
				 "directory", path, o->name, o->output);
			return -EBUSY;
		}
	}
	char why[CTL_ERRLEN];
	bool created;
	int dfd = rt_dir_open(path, RT_DIR_CREATE, &created, why, sizeof(why));
	if (dfd < 0) {
		snprintf(err, errlen, "cannot use output %s: %s", path, why);
		return dfd;
	}
	int ret = 0;
	if (faccessat(dfd, ".", W_OK, AT_EACCESS) < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot use output %s: %s", path, strerror(-ret));
	} else if (!created && !is_snap && (ret = rt_dir_is_empty(dfd)) <= 0) {
		if (ret == 0 && !force) {
			ret = -EEXIST;
			snprintf(err, errlen, "output %s is not empty (it may hold another trace); "
				 "give a new or empty directory, or --force to replace the traces "
				 "it holds", path);
		} else if (ret == 0 && (ret = rt_remove_traces(dfd, 8)) < 0) {
			snprintf(err, errlen, "output %s: cannot remove the traces it holds: %s",
				 path, strerror(-ret));
		} else if (ret > 0) {
			fprintf(out, "Removed %d trace%s from %s (--force).\n", ret,
				ret == 1 ? "" : "s", path);
		} else if (ret < 0) {
			snprintf(err, errlen, "cannot read output %s: %s", path, strerror(-ret));
		}
	}
	close(dfd);
	return ret < 0 ? ret : 0;
}

/* A session streamed to a relay (create's set-url, or ctrl-url and
 * data-url, or live alone: the relay on this machine): where, into s's
 * relay fields and its output ("net://HOST:CTRL:DATA"). live: the live
 * timer in microseconds, "" for LTTng's default (1 s). 0 or -EINVAL. */
static int relay_url(const struct ctl_req *r, struct rtd_session *s, char *err, size_t errlen)
{
	const char *set = ctl_get(r, "set-url"), *cu = ctl_get(r, "ctrl-url"),
		   *du = ctl_get(r, "data-url"), *live = ctl_get(r, "live");
	char dhost[256];
	int unused, ret = 0;
	if (set && (cu || du)) {
		snprintf(err, errlen, "--set-url and --ctrl-url/--data-url are exclusive");
		return -EINVAL;
	}
	if (!cu != !du) {
		snprintf(err, errlen, "--ctrl-url and --data-url go together");
		return -EINVAL;
	}
	if (set)
		ret = rnet_parse_url(set, false, s->relay_host, sizeof(s->relay_host),
				     &s->relay_ctrl_port, &s->relay_data_port);
	else if (cu)
		ret = rnet_parse_url(cu, true, s->relay_host, sizeof(s->relay_host),
				     &s->relay_ctrl_port, &unused);
	else
		ret = rnet_parse_url("net://127.0.0.1", false, s->relay_host,
				     sizeof(s->relay_host), &s->relay_ctrl_port,
				     &s->relay_data_port);
	if (!ret && du) {
		ret = rnet_parse_url(du, true, dhost, sizeof(dhost), &s->relay_data_port, &unused);
		if (!ret && strcmp(dhost, s->relay_host)) {
			snprintf(err, errlen, "--ctrl-url and --data-url must name the same relay");
			return -EINVAL;
		}
	}
	if (ret < 0) {
		snprintf(err, errlen, "bad relay URL '%s': expected net://HOST[:CTRL[:DATA]] "
			 "(--ctrl-url/--data-url: tcp://HOST[:PORT])", set ? set : cu ? cu : du);
		return ret;
	}
	if (live) {
		char *end;
		errno = 0;
		unsigned long v = *live ? strtoul(live, &end, 10) : 1000000ul;
		if (*live && (errno || *end || !v || v > UINT32_MAX || *live == '-')) {
			snprintf(err, errlen, "--live=%s: a timer in microseconds (1 to %u)", live,
				 UINT32_MAX);
			return -EINVAL;
		}
		s->live_delay_us = (uint32_t)v;
	}
	if (snprintf(s->output, sizeof(s->output), "net://%s:%d:%d", s->relay_host,
		     s->relay_ctrl_port, s->relay_data_port) >= (int)sizeof(s->output))
		return -ENAMETOOLONG;
	s->net = true;
	s->created = (uint64_t)time(NULL);
	return 0;
}

/* --shm-path: an absolute directory, created (0700) when missing, ours
 * and private (RT_DIR_PRIVATE: its files are the buffers programs map),
 * checked now so that create refuses it rather than the first program.
 * 0 or -errno with a message in err. */
static int check_shm_path(const char *path, char *err, size_t errlen)
{
	char why[CTL_ERRLEN];
	if (path[0] != '/' || strlen(path) >= PATH_MAX) {
		snprintf(err, errlen, "--shm-path '%s' must be an absolute path", path);
		return -EINVAL;
	}
	int dfd = rt_dir_open(path, RT_DIR_CREATE | RT_DIR_PRIVATE, NULL, why, sizeof(why));
	if (dfd < 0) {
		snprintf(err, errlen, "cannot use --shm-path %s: %s", path, why);
		return dfd;
	}
	close(dfd);
	return 0;
}

/* create: name, output (absolute), snapshot=1, flat=1 (hidden sessions of
 * `ringtrace record`: output required, name may start with '.'), force=1
 * (an output that is not empty: its traces are removed), shm-path
 * (absolute: the buffers in files there). */
int ctl_create(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err, size_t errlen)
{
	const char *name = ctl_get(r, "name"), *output = ctl_get(r, "output");
	const char *snap = ctl_get(r, "snapshot"), *flat = ctl_get(r, "flat");
	const char *force = ctl_get(r, "force"), *shm = ctl_get(r, "shm-path");
	bool is_snap = snap && !strcmp(snap, "1"), is_flat = flat && !strcmp(flat, "1");
	char date[32], auto_name[RTD_NAME_MAX];
	stamp(date, sizeof(date));
	if (!name) {
		snprintf(auto_name, sizeof(auto_name), "auto-%s", date);
		for (int i = 1; model_session_find(auto_name) && i < 1000; i++)
			snprintf(auto_name, sizeof(auto_name), "auto-%s-%d", date, i);
		name = auto_name;
	}
	if (!model_name_ok(name, is_flat)) {
		snprintf(err, errlen, "invalid session name '%s' (1-63 letters, digits, '_', "
			 "'.', '-'; not starting with '.' or '-')", name);
		return -EINVAL;
	}
	if (model_session_find(name)) {
		snprintf(err, errlen, "session '%s' already exists", name);
		return -EEXIST;
	}
	if (output && output[0] != '/') {
		snprintf(err, errlen, "output '%s' must be an absolute path", output);
		return -EINVAL;
	}
	if (is_flat && (!output || is_snap)) {
		snprintf(err, errlen, "a flat session needs an output and no snapshot mode");
		return -EINVAL;
	}
	int shm_ret = shm ? check_shm_path(shm, err, errlen) : 0;
	if (shm_ret < 0)
		return shm_ret;
	bool net = ctl_get(r, "set-url") || ctl_get(r, "ctrl-url") || ctl_get(r, "data-url") ||
		   ctl_get(r, "live");
	if (net && (output || is_flat)) {
		snprintf(err, errlen, "a session streamed to a relay has no -o");
		return -EINVAL;
	}
	if (net) {
		struct rtd_session *s = model_session_new(name);
		if (!s) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		s->snapshot = is_snap;
		if (shm)
			snprintf(s->shm_path, sizeof(s->shm_path), "%s", shm);
		int ret = relay_url(r, s, err, errlen);
		if (!ret)
			ret = dp_relay_open(s, err, errlen);
		if (ret < 0) {
			model_session_free(s);
			return ret;
		}
		ctl_cluster_add(s);
		model_current = s;
		rtp_kv_add(reply, "session", s->name);
		rtp_kv_add(reply, "output", s->output);
		fprintf(out, "%s session %s created.\n", is_snap ? "Snapshot" : "Tracing",
			s->name);
		fprintf(out, "%s to the relay at %s%s\n", is_snap ? "Snapshots will be sent"
			: "Traces will be streamed", s->output, s->live_delay_us ? " (live)" : "");
		return 0;
	}
	char path[PATH_MAX];
	if (output) {
		if (snprintf(path, sizeof(path), "%s", output) >= (int)sizeof(path))
			goto too_long;
	} else {
		const char *home = getenv("HOME");
		if (snprintf(path, sizeof(path), "%s/ringtrace-traces/%s-%s",
			     home && *home ? home : "/tmp", name, date) >= (int)sizeof(path))
			goto too_long;
	}
	int ret = check_output(path, is_snap, force && !strcmp(force, "1"), out, err, errlen);
	if (ret < 0)
		return ret;
	struct rtd_session *s = model_session_new(name);
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memcpy(s->output, path, strlen(path) + 1);
	if (shm)
		snprintf(s->shm_path, sizeof(s->shm_path), "%s", shm);
	s->snapshot = is_snap;
	s->flat = is_flat;
	if (!is_flat)
		model_current = s;
	rtp_kv_add(reply, "session", s->name);
	rtp_kv_add(reply, "output", s->output);
	fprintf(out, "%s session %s created.\n", is_snap ? "Snapshot" : "Tracing", s->name);
	fprintf(out, "%s %s\n", is_snap ? "Default snapshot output:" : "Traces will be written in",
		s->output);
	if (shm)
		fprintf(out, "Buffers kept in files under %s\n", s->shm_path);
	return 0;
too_long:
	snprintf(err, errlen, "output path too long");
	return -ENAMETOOLONG;
}

/* Stop both domains of an active session: programs no longer record for
 * it, the kernel's instance is off, and everything recorded is written.
 * 0, or the first -errno of the domains with its message in err. */
static int session_stop(struct rtd_session *s, char *err, size_t errlen)
{
	char kerr[RTD_ERRLEN] = "";
	int ret = dp_session_stop(s, err, errlen);
	int kret = dp_kernel_stop(s, kerr, sizeof(kerr));
	if (kret < 0 && ret == 0) {
		ret = kret;
		snprintf(err, errlen, "%s", kerr);
	}
	return ret;
}

int ctl_session_destroy(struct rtd_session *s, char *err, size_t errlen)
{
	char msg[RTD_ERRLEN] = "";
	int ret = s->active ? session_stop(s, msg, sizeof(msg))
			    : dp_session_errors(s, true, msg, sizeof(msg));
	if (ret < 0)
		snprintf(err, errlen, "session %s destroyed, but its trace is incomplete: %s",
			 s->name, msg);
	s->active = false;
	dp_kernel_destroy(s);
	dp_session_destroy(s);
	ctl_rotation_destroyed(s);
	ctl_cluster_forget(s);
	dp_relay_close(s);
	model_session_free(s);
	return ret;
}

/* destroy: session, or all=1 (every session but the hidden ones). */
int ctl_destroy(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err, size_t errlen)
{
	(void)reply;
	const char *all = ctl_get(r, "all");
	if (all && !strcmp(all, "1")) {
		/* Not the hidden sessions of running `ringtrace record`s:
		 * their commands destroy them. */
		unsigned n = 0;
		int ret = 0;
		struct rtd_session *s = rtd_sessions;
		while (s) {
			struct rtd_session *next = s->next;
			if (!s->flat) {
				char e[CTL_ERRLEN];
				int one = ctl_session_destroy(s, e, sizeof(e));
				if (one < 0 && !ret) {
					ret = one;
					snprintf(err, errlen, "%s", e);
				}
				n++;
			}
			s = next;
		}
		fprintf(out, "%u session%s destroyed.\n", n, n == 1 ? "" : "s");
		return ret;
	}
	struct rtd_session *s = ctl_session_of(r, err, errlen);
	if (!s)
		return -ENOENT;
	fprintf(out, "Session %s destroyed.\n", s->name);
	return ctl_session_destroy(s, err, errlen);
}

int ctl_session_start(struct rtd_session *s, char *err, size_t errlen)
{
	if (s->active) {
		snprintf(err, errlen, "session %s is already started", s->name);
		return -EALREADY;
	}
	if (s->net && s->kchannels) {
		snprintf(err, errlen, "session %s streams to a relay: its kernel channel cannot "
			 "(the kernel domain writes local files only)", s->name);
		return -EOPNOTSUPP;
	}
	/* The kernel first: its instance is what may be refused (no access,
	 * a rule matching no event, a filter ftrace refuses). */
	int ret = dp_kernel_start(s, err, errlen);
	if (ret < 0)
		return ret;
	ret = dp_session_start(s, err, errlen);
	if (ret < 0) {
		char kerr[RTD_ERRLEN];
		dp_kernel_stop(s, kerr, sizeof(kerr));
		return ret;
	}
	ctl_rotation_started(s);
	s->active = true;
	s->ever_started = true;
	return 0;
}

static int ctl_start(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err,
		     size_t errlen)
{
	(void)reply;
	struct rtd_session *s = ctl_session_of(r, err, errlen);
	if (!s)
		return -ENOENT;
	int ret = ctl_session_start(s, err, errlen);
	if (ret < 0)
		return ret;
	fprintf(out, "Tracing started for session %s.\n", s->name);
	return 0;
}

int ctl_session_stop(struct rtd_session *s, char *err, size_t errlen)
{
	if (!s->active) {
		snprintf(err, errlen, "session %s is not started", s->name);
		return -EALREADY;
	}
	/* Stopped even when some of the trace could not be written: the
	 * programs no longer record for it and its buffers are drained. */
	char msg[RTD_ERRLEN];
	int ret = session_stop(s, msg, sizeof(msg));
	s->active = false;
	if (ret < 0)
		snprintf(err, errlen, "session %s stopped, but its trace is incomplete: %s",
			 s->name, msg);
	return ret;
}

static int ctl_stop(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err,
		    size_t errlen)
{
	(void)reply;
	struct rtd_session *s = ctl_session_of(r, err, errlen);
	if (!s)
		return -ENOENT;
	int ret = ctl_session_stop(s, err, errlen);
	if (ret != -EALREADY)
		fprintf(out, "Tracing stopped for session %s.\n", s->name);
	return ret;
}

/* RUNDIR/snapshots, where a relay's snapshots are written before they
 * are sent (the private run directory: no other user sees them). */
static int relay_staging(char *out, size_t len, char *err, size_t errlen)
{
	char rundir[PATH_MAX], why[CTL_ERRLEN];
	if (rtp_rundir(rundir, sizeof(rundir)) < 0 ||
	    snprintf(out, len, "%s/snapshots", rundir) >= (int)len) {
		snprintf(err, errlen, "run directory path too long");
		return -ENAMETOOLONG;
	}
	int ret = rt_mkdir_p(out, why, sizeof(why));
	if (ret < 0 && ret != -EEXIST) {
		snprintf(err, errlen, "cannot make %s: %s", out, why);
		return ret;
	}
	return 0;
}

/* ctl_session_snapshot, and sent to the relay as relay_name (NULL: its
 * local directory's name) when it goes there. */
static int snapshot_as(struct rtd_session *s, const char *dir, uint64_t max_size,
		       const char *relay_name, char *out_path, size_t out_len, char *err,
		       size_t errlen)
{
	if (!s->snapshot) {
		snprintf(err, errlen, "session %s is not a snapshot session (create it with "
			 "--snapshot)", s->name);
		return -EOPNOTSUPP;
	}

	if (!s->ever_started) {
		snprintf(err, errlen, "session %s has never been started: its buffers are empty",
			 s->name);
		return -ENODATA;
	}
	/* A session streamed to a relay: written in the private run
	 * directory, then sent there (and removed here). */
	char staging[PATH_MAX];
	bool to_relay = s->net && !dir;
	if (to_relay) {
		int r = relay_staging(staging, sizeof(staging), err, errlen);
		if (r < 0)
			return r;
		dir = staging;
	}
	/* The kernel's trace shares max_size with the programs'. */
	uint64_t share = max_size;
	int ret = dp_snapshot_record(s, dir, max_size, s->kdp ? 1 : 0, &share, out_path, out_len,
				     err, errlen);
	if (ret < 0 || (ret = dp_kernel_snapshot(s, out_path, share, err, errlen)) < 0)
		return ret;
	if (to_relay) {
		const char *name = relay_name ? relay_name : strrchr(out_path, '/') + 1;
		ret = dp_relay_upload(s, out_path, name, err, errlen);
		if (ret < 0)
			return ret;
		char sent[PATH_MAX];
		snprintf(sent, sizeof(sent), "%s (on the relay, under %s's directory)", name,
			 s->name);
		snprintf(out_path, out_len, "%s", sent);
	}
	return 0;
}

int ctl_session_snapshot(struct rtd_session *s, const char *dir, uint64_t max_size,
			 char *out_path, size_t out_len, char *err, size_t errlen)
{
	return snapshot_as(s, dir, max_size, NULL, out_path, out_len, err, errlen);
}

int ctl_session_snapshot_relay(struct rtd_session *s, const char *name, char *out_path,
			       size_t out_len, char *err, size_t errlen)
{
	if (!s->net) {
		snprintf(err, errlen, "session %s does not send its snapshots to a relay", s->name);
		return -EOPNOTSUPP;
	}
	return snapshot_as(s, NULL, 0, name, out_path, out_len, err, errlen);
}

/* snapshot-record: session, output (absolute dir), max-size (bytes). */
static int ctl_snapshot_record(const struct ctl_req *r, FILE *out, struct rtp_kv *reply,
			       char *err, size_t errlen)
{
	struct rtd_session *s = ctl_session_of(r, err, errlen);
	if (!s)
		return -ENOENT;
	const char *dir = ctl_get(r, "output");
	if (dir && dir[0] != '/') {
		snprintf(err, errlen, "output '%s' must be an absolute path", dir);
		return -EINVAL;
	}
	uint64_t max = 0;
	int ret = ctl_get_u64(r, "max-size", UINT64_MAX, &max, NULL, err, errlen);
	if (ret < 0)
		return ret;
	char path[PATH_MAX] = "";
	ret = ctl_session_snapshot(s, dir, max, path, sizeof(path), err, errlen);
	if (ret < 0)
		return ret;
	rtp_kv_add(reply, "path", path);
	fprintf(out, "Snapshot recorded in %s\n", path);
	return 0;
}

static int ctl_set_session(const struct ctl_req *r, FILE *out, struct rtp_kv *reply,
			   char *err, size_t errlen)
{
	(void)reply;
	const char *name = ctl_get(r, "session");
	struct rtd_session *s = name ? model_session_find(name) : NULL;
	if (!s) {
		snprintf(err, errlen, "session '%s' not found", name ? name : "");
		return -ENOENT;
	}
	model_current = s;
	fprintf(out, "Session set to %s\n", s->name);
	return 0;
}

static const struct {
	const char *name;
	ctl_handler fn;
} handlers[] = {
	{ "create", ctl_create },
	{ "destroy", ctl_destroy },
	{ "start", ctl_start },
	{ "stop", ctl_stop },
	{ "set-session", ctl_set_session },
	{ "snapshot-record", ctl_snapshot_record },
	{ "enable-channel", ctl_enable_channel },
	{ "enable-event", ctl_enable_event },
	{ "disable-event", ctl_disable_event },
	{ "add-context", ctl_add_context },
	{ "track", ctl_track },
	{ "untrack", ctl_untrack },
	{ "list", ctl_list },
	{ "status", ctl_status },
	{ "save", ctl_save },
	{ "load", ctl_load },
	{ "add-trigger", ctl_add_trigger },
	{ "list-triggers", ctl_list_triggers },
	{ "remove-trigger", ctl_remove_trigger },
	{ "rotate", ctl_rotate },
	{ "enable-rotation", ctl_enable_rotation },
	{ "disable-rotation", ctl_disable_rotation },
};

int ctl_handle(const struct ctl_req *r, struct rtp_kv *reply, char *err, size_t errlen)
{
	uint32_t pos = 0;
	const char *key, *cmd;
	size_t kl;
	if (!rtp_kv_next(r->p, r->len, &pos, &key, &kl, &cmd) || kl != 3 ||
	    memcmp(key, "cmd", 3)) {
		snprintf(err, errlen, "malformed request: no cmd=NAME first");
		return -EPROTO;
	}
	for (size_t i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++) {
		if (strcmp(cmd, handlers[i].name))
			continue;
		char *text = NULL;
		size_t tlen = 0;
		FILE *out = open_memstream(&text, &tlen);
		if (!out) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		int ret = handlers[i].fn(r, out, reply, err, errlen);
		fclose(out);
		if (ret == 0 && tlen)
			rtp_kv_add(reply, "out", text);
		free(text);
		if (ret == 0 && reply->err) {
			snprintf(err, errlen, "reply too large or out of memory");
			ret = reply->err;
		}
		return ret;
	}
	snprintf(err, errlen, "unknown command '%.64s'", cmd);
	return -EOPNOTSUPP;
}
