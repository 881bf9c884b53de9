/*
 * session.c - embedded mode: when the environment asks for it
 * (RINGTRACE_OUTPUT, set by `ringtrace record`), the library creates its
 * channel, starts its consumer thread and enables the wanted events when
 * it is loaded, and writes everything out when the process exits
 * (exit() from any thread, return from main, SIGINT/SIGTERM when the
 * program left them at their default action). Without it, nothing
 * happens: no thread, no memory, every event disabled.
 *
 * Environment (all optional but the first):
 *   RINGTRACE_OUTPUT          trace directory (created if missing; must
 *                             not hold a trace already)
 *   RINGTRACE_SUBBUF_SIZE     sub-buffer size (power of two >= 4k)
 *   RINGTRACE_NUM_SUBBUF      sub-buffers per CPU (power of two >= 2)
 *   RINGTRACE_OVERWRITE       1: flight-recorder mode
 *   RINGTRACE_SWITCH_TIMER_MS flush period (0: none)
 *   RINGTRACE_READ_TIMER_MS   consumer polling period
 *   RINGTRACE_EVENTS          comma-separated globs on provider:event
 *   RINGTRACE_LOGLEVEL        record events of this level or more severe
 *   RINGTRACE_CLOCK           tsc | monotonic
 *   RINGTRACE_RSEQ            0: SMP atomics instead of rseq
 *   RINGTRACE_CONTEXTS        contexts recorded with each event
 *                             (vtid,procname; default none)
 *   RINGTRACE_NO_INHERIT      1: trace this process only (see below)
 *   RINGTRACE_SHM_PATH        keep the buffers in files of this
 *                             directory (created private if missing),
 *                             for `ringtrace recover` after a crash
 *                             (docs/recovery.md); removed at a clean end
 *   RINGTRACE_DONE_FD         a file descriptor (`ringtrace record`'s
 *                             pipe): each traced process writes 's' and
 *                             its pid (int32) when its tracing starts,
 *                             'd' and its pid once its final flush wrote
 *                             everything; 's' alone: it ended without
 *                             one (_exit, a crash, exec)
 * A bad value disables tracing with a message on stderr; the program
 * itself always runs on.
 *
 * Process trees: unless RINGTRACE_NO_INHERIT=1, the whole tree is traced
 * into the one trace (trace_dir.h). A fork child gets its own channel,
 * slot and consumer thread in the fork child handler, before fork
 * returns, so it records from its first event and writes its events out
 * itself, whenever it exits (before or after its parent). The variables
 * above stay in the environment, with RINGTRACE_TRACE_UUID (the trace's
 * uuid, 32 hex digits; `ringtrace record` sets it itself) added: a
 * program linked with libringtrace that a process of the tree execs
 * joins the trace in a slot of its own. With
 * RINGTRACE_NO_INHERIT=1 the variables are removed from the environment
 * and a fork child records nothing (its parent's consumer is not its).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "../common/config_parse.h"
#include "daemon_client.h"
#include "epoch.h"
#include "../common/fs_util.h"
#include "../common/hex.h"
#include "../common/rule.h"
#include "rt_internal.h"
#include "../consumer/recovery.h"
#include "../consumer/trace_dir.h"

#define RT_DEFAULT_SUBBUF_SIZE (256 * 1024)
#define RT_DEFAULT_NUM_SUBBUF 4
#define RT_DEFAULT_READ_TIMER_MS 10

RT_HIDDEN struct rt_channel *rt_active_channel;
RT_HIDDEN struct rt_config rt_cfg;

static struct rt_channel channel;
static pthread_mutex_t stop_lock = PTHREAD_MUTEX_INITIALIZER;
static bool started, stopped;
static bool inherit;	/* RINGTRACE_NO_INHERIT is not 1 */
static int done_fd = -1;	/* RINGTRACE_DONE_FD */

/* Whether the channel records the ip context (the state dump then
 * comes along, rule.h). */
static bool records_ip(void)
{
	for (uint32_t i = 0; i < rt_cfg.nr_ctx; i++)
		if (rt_cfg.ctx[i] == RT_CTX_IP)
			return true;
	return false;
}

/* Whether some state dump event may be wanted: the ip context, or a
 * pattern that names them (rule.h). */
static bool statedump_wanted(void)
{
	for (size_t i = 0; i < rt_cfg.nr_patterns; i++)
		if (!strncmp(rt_cfg.patterns[i], "lttng_ust_", 10))
			return true;
	return records_ip();
}

bool rt_event_wanted(const struct rt_event_class *c)
{
	if (!rt_level_matches(RT_LEVEL_RANGE, rt_cfg.loglevel_max, c->loglevel))
		return false;
	char full[512];
	snprintf(full, sizeof(full), "%s:%s", c->provider, c->name);
	/* The state dump (rule.h): with the ip context, or when named. */
	if (rt_is_statedump_event(full)) {
		if (records_ip())
			return true;
		for (size_t i = 0; i < rt_cfg.nr_patterns; i++)
			if (!strncmp(rt_cfg.patterns[i], "lttng_ust_", 10) &&
			    rt_glob_any((const char *const *)&rt_cfg.patterns[i], 1, full))
				return true;
		return false;
	}
	if (rt_cfg.nr_patterns == 0)
		return true;
	return rt_glob_any((const char *const *)rt_cfg.patterns, rt_cfg.nr_patterns, full);
}

static int split_patterns(const char *s, struct rt_config *cfg)
{
	char *copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	size_t n = 1;
	for (const char *p = s; *p; p++)
		n += *p == ',';
	cfg->patterns = calloc(n, sizeof(char *));
	if (!cfg->patterns) {
		free(copy);
		return -ENOMEM;
	}
	char *save = NULL;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (*tok)
			cfg->patterns[cfg->nr_patterns++] = tok;
	return 0;
}

/* Fill cfg from the environment. Returns 0 or -EINVAL with a message. */
static int config_from_env(struct rt_config *cfg)
{
	char err[RT_ERRLEN];
	const char *v;
	cfg->subbuf_size = RT_DEFAULT_SUBBUF_SIZE;
	cfg->num_subbuf = RT_DEFAULT_NUM_SUBBUF;
	cfg->read_timer_ms = RT_DEFAULT_READ_TIMER_MS;
	cfg->loglevel_max = RT_LOGLEVEL_DEBUG;

#define RT_ENV(name, parse, dst)                                               \
	if ((v = getenv(name)) && parse(v, dst, err) < 0) {                    \
		rt_warn("%s: %s; tracing disabled", name, err);                \
		return -EINVAL;                                                \
	}
	RT_ENV("RINGTRACE_SUBBUF_SIZE", rt_parse_size, &cfg->subbuf_size)
	RT_ENV("RINGTRACE_NUM_SUBBUF", rt_parse_u32, &cfg->num_subbuf)
	RT_ENV("RINGTRACE_OVERWRITE", rt_parse_bool, &cfg->overwrite)
	RT_ENV("RINGTRACE_SWITCH_TIMER_MS", rt_parse_u32, &cfg->switch_timer_ms)
	cfg->read_timer_set = getenv("RINGTRACE_READ_TIMER_MS") != NULL;
	RT_ENV("RINGTRACE_READ_TIMER_MS", rt_parse_u32, &cfg->read_timer_ms)
	RT_ENV("RINGTRACE_LOGLEVEL", rt_parse_loglevel, &cfg->loglevel_max)
#undef RT_ENV
	if (rt_check_subbuf(cfg->subbuf_size, cfg->num_subbuf, err) < 0) {
		rt_warn("%s; tracing disabled", err);
		return -EINVAL;
	}
	if (cfg->read_timer_ms == 0 || cfg->read_timer_ms > 60000) {
		rt_warn("RINGTRACE_READ_TIMER_MS must be 1 to 60000; tracing disabled");
		return -EINVAL;
	}
	if ((v = getenv("RINGTRACE_CLOCK"))) {
		if (!strcmp(v, "monotonic"))
			cfg->force_monotonic = true;
		else if (strcmp(v, "tsc")) {
			rt_warn("RINGTRACE_CLOCK: '%s' is not tsc or monotonic; tracing disabled", v);
			return -EINVAL;
		}
	}
	if ((v = getenv("RINGTRACE_RSEQ"))) {
		bool on;
		if (rt_parse_bool(v, &on, err) < 0) {
			rt_warn("RINGTRACE_RSEQ: %s; tracing disabled", err);
			return -EINVAL;
		}
		cfg->no_rseq = !on;
	}
	if ((v = getenv("RINGTRACE_CONTEXTS")) &&
	    rt_parse_contexts(v, cfg->ctx, &cfg->nr_ctx, err) < 0) {
		rt_warn("RINGTRACE_CONTEXTS: %s; tracing disabled", err);
		return -EINVAL;
	}
	if ((v = getenv("RINGTRACE_EVENTS")) && *v && split_patterns(v, cfg) < 0)
		return -ENOMEM;
	if ((v = getenv("RINGTRACE_SHM_PATH")) && *v && !(cfg->shm_path = strdup(v)))
		return -ENOMEM;
	cfg->output = strdup(getenv("RINGTRACE_OUTPUT"));
	return cfg->output ? 0 : -ENOMEM;
}

/* mkdir -p (safely, fs_util.h), then refuse a directory that already
 * holds a trace, unless `join`ing it (a process of the tree that writes
 * it). Returns 0 or -errno with a message in err. */
static int prepare_output(const char *dir, bool join, char *err, size_t errlen)
{
	int dfd = rt_dir_open(dir, RT_DIR_CREATE, NULL, err, errlen);
	if (dfd < 0)
		return dfd;
	struct stat st;
	int ret = 0;
	if (!join && fstatat(dfd, "metadata", &st, AT_SYMLINK_NOFOLLOW) == 0) {
		ret = -EEXIST;
		snprintf(err, errlen, "it already holds a trace");
	} else if (faccessat(dfd, ".", W_OK, AT_EACCESS) < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s", strerror(-ret));
	}
	close(dfd);
	return ret;
}

static void on_signal(int sig)
{
	rt_consumer_signal_stop(sig);
}

/* SIGINT/SIGTERM left at their default action would kill the process
 * with the last events still in memory: catch them, let the consumer
 * write everything, then it re-raises the signal. */
static void install_signal_handlers(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction old;
		if (sigaction(sigs[i], NULL, &old) < 0 || old.sa_handler != SIG_DFL ||
		    (old.sa_flags & SA_SIGINFO))
			continue;
		struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };
		sigemptyset(&sa.sa_mask);
		sigaction(sigs[i], &sa, NULL);
	}
}

void rt_session_fork_prepare(void)
{
	pthread_mutex_lock(&stop_lock);
}

void rt_session_fork_parent(void)
{
	pthread_mutex_unlock(&stop_lock);
}

_Static_assert(sizeof(((struct rt_channel *)0)->shm_name) > CONS_RECOVERY_NAME_MAX,
	       "shm_name holds a buffer set's name");

/* The buffers of ch in a new file of rt_cfg.shm_path (recovery.h), named
 * after this process. Returns 0 or -errno (message printed). */
static int buffers_in_file(struct rt_channel *ch, const struct rb_config *rc,
			   const struct rb_client *client)
{
	char prefix[32], err[PATH_MAX + 256];
	snprintf(prefix, sizeof(prefix), "ust-%d", (int)getpid());
	int fd = cons_recovery_create(rt_cfg.shm_path, prefix, ch->shm_name, err, sizeof(err));
	if (fd < 0) {
		rt_warn("RINGTRACE_SHM_PATH: %s", err);
		return fd;
	}
	int ret = rb_create_in(&ch->rb, rc, client, fd);
	if (ret < 0) {
		close(fd);
		cons_recovery_remove(rt_cfg.shm_path, ch->shm_name);
		ch->shm_name[0] = '\0';
	}
	return ret;
}

/* Set up channel ch for this process: its slot (0 when `first` and free,
 * else the pid or one of the next numbers), fragment, stream class and
 * buffers. Returns 0 or -errno (message printed). */
static int channel_open(struct rt_channel *ch, bool first, const uint8_t uuid[16])
{
	int fd = first ? cons_trace_dir_claim(rt_cfg.output, 0, 1, &ch->slot) : -ENOSPC;
	if (fd == -ENOSPC)
		fd = cons_trace_dir_claim(rt_cfg.output, (uint32_t)getpid(), 64, &ch->slot);
	if (fd < 0) {
		rt_warn("cannot claim a place in the trace %s: %s", rt_cfg.output,
			strerror(-fd));
		return fd;
	}
	int ret = rt_owned_fd_take(&ch->fragment, fd);
	if (ret < 0)
		return ret;
	snprintf(ch->name, sizeof(ch->name), "channel0");
	memcpy(ch->ctx, rt_cfg.ctx, sizeof(ch->ctx));
	ch->nr_ctx = rt_cfg.nr_ctx;
	ch->ctx_size = rt_ctx_size(ch->ctx, ch->nr_ctx);
	ch->stream.stream_id = ch->slot;
	ch->stream.subbuf_size = rt_cfg.subbuf_size;
	memcpy(ch->stream.uuid, uuid, sizeof(ch->stream.uuid));

	int nr_cpus = get_nprocs_conf();
	struct rb_config rc = {
		.subbuf_size = rt_cfg.subbuf_size,
		.num_subbuf = rt_cfg.num_subbuf,
		.nr_cpus = (uint32_t)(nr_cpus > 0 ? nr_cpus : 1),
		.mode = rt_cfg.overwrite ? RB_MODE_OVERWRITE : RB_MODE_DISCARD,
		.tsc_bits = CTF_COMPACT_TSC_BITS,
		.subbuf_header_size = CTF_PACKET_HEADER_SIZE,
		.use_rseq = !rt_cfg.no_rseq,
	};
	struct rb_client client = {
		.subbuf_begin = ctf_packet_begin,
		.subbuf_end = ctf_packet_end,
		.clock_read = rt_clock_read_ordered,
		.priv = &ch->stream,
	};
	ret = rt_cfg.shm_path ? buffers_in_file(ch, &rc, &client) : rb_create(&ch->rb, &rc, &client);
	if (ret == 0)
		ret = rt_owned_fd_take(&ch->memfd, ch->rb.fd);
	if (ret < 0)
		rt_warn("cannot allocate the trace buffers (%u x %llu bytes per CPU): %s",
			rt_cfg.num_subbuf, (unsigned long long)rt_cfg.subbuf_size,
			strerror(-ret));
	return ret;
}

/* A new random (version 4) uuid, or the one RINGTRACE_TRACE_UUID gives
 * (*join set). Returns 0 or -EINVAL (message printed). */
static int trace_uuid(uint8_t uuid[16], bool *join)
{
	const char *v = getenv("RINGTRACE_TRACE_UUID");
	*join = v != NULL;
	if (v) {
		if (rt_hex_decode(v, uuid, 16) < 0) {
			rt_warn("RINGTRACE_TRACE_UUID: '%s' is not 32 hex digits; tracing disabled", v);
			return -EINVAL;
		}
		return 0;
	}
	ctf_uuid_generate(uuid);
	return 0;
}

/* Start recording in channel ch: consumer thread, then the probes. */
static int channel_start(struct rt_channel *ch)
{
	int ret = rt_consumer_start(ch);
	if (ret < 0) {
		rt_warn("cannot start the consumer thread: %s", strerror(-ret));
		return ret;
	}
	/* Release: the channel is complete before a probe can use it
	 * (pairs with the acquire load in the probe, probe.c). */
	__atomic_store_n(&rt_active_channel, ch, __ATOMIC_RELEASE);
	rt_registry_apply_rules();
	return 0;
}

/* Tell RINGTRACE_DONE_FD's reader that this process started tracing
 * ('s') or wrote everything out ('d'): the tag and the pid, 5 bytes in
 * one write (atomic on a pipe). Nothing to do if the reader is gone. */
static void done_mark(char tag)
{
	if (done_fd < 0)
		return;
	char m[5];
	int32_t pid = (int32_t)getpid();
	m[0] = tag;
	memcpy(m + 1, &pid, sizeof(pid));
	ssize_t n = write(done_fd, m, sizeof(m));
	(void)n;
}

static int session_start(void)
{
	uint8_t uuid[16];
	bool join;
	int ret = trace_uuid(uuid, &join);
	if (ret < 0)
		return ret;
	char err[1024];
	ret = prepare_output(rt_cfg.output, join, err, sizeof(err));
	if (ret < 0) {
		rt_warn("cannot use %s as trace directory: %s", rt_cfg.output, err);
		return ret;
	}
	rt_clock_init(rt_cfg.force_monotonic);
	rt_dc_cache_identity();
	if (statedump_wanted())
		rt_statedump_init();
	ret = channel_open(&channel, true, uuid);
	if (ret < 0)
		return ret;
	ret = channel_start(&channel);
	if (ret < 0)
		return ret;
	rt_statedump_run();
	if (inherit && !join) {
		char hex[33];
		rt_hex_encode(uuid, 16, hex);
		setenv("RINGTRACE_TRACE_UUID", hex, 1);
	}
	atexit(rt_session_stop);
	done_mark('s');
	install_signal_handlers();
	started = true;
	return 0;
}

/* A fork child shares the buffers' memory with its parent, whose
 * consumer writes them out: it stops writing there, and when the tree is
 * traced gets a channel, slot and consumer of its own before fork
 * returns (the library's locks are already reset, fork.c). On any
 * failure it records nothing. */
void rt_session_fork_child(void)
{
	pthread_mutex_init(&stop_lock, NULL);
	if (!started || stopped)
		return;
	__atomic_store_n(&rt_active_channel, NULL, __ATOMIC_RELEASE);
	rt_registry_disable_all();
	rt_consumer_fork_child();
	/* The parent's: its fragment and its buffers' memfd (the mapping
	 * stays, never written again: the old channel's contents are
	 * overwritten below). */
	rt_owned_fd_close(&channel.fragment);
	rt_owned_fd_close(&channel.memfd);
	uint8_t uuid[16];
	memcpy(uuid, channel.stream.uuid, sizeof(uuid));
	if (!inherit || channel_open(&channel, false, uuid) < 0) {
		stopped = true;
		return;
	}
	rt_dc_cache_identity();
	rt_registry_fork_child();
	if (channel_start(&channel) < 0)
		stopped = true;
	else
		done_mark('s');
}

void rt_session_stop(void)
{
	pthread_mutex_lock(&stop_lock);
	if (started && !stopped) {
		stopped = true;
		/* A flight recorder keeps only its last events: the state
		 * dump of its start is overwritten by now. A fork child
		 * that had no time to dump does it now. */
		if (rt_cfg.overwrite || !rt_statedump_done())
			rt_statedump_run();
		/* Stop recording first, like `lttng stop`: what was recorded
		 * before this point is written out by the final flush. */
		__atomic_store_n(&rt_active_channel, NULL, __ATOMIC_RELEASE);
		rt_registry_apply_rules();
		rt_consumer_stop();
		done_mark('d');
	}
	pthread_mutex_unlock(&stop_lock);
}

__attribute__((constructor)) static void rt_lib_init(void)
{
	rt_fork_init();
	rt_epoch_init();
	const char *out = getenv("RINGTRACE_OUTPUT");
	if (!out || !*out) {
		/* The daemon's rules decide; its ids are per trace. */
		rt_statedump_init();
		rt_daemon_client_init();
		return;
	}
	int ret = config_from_env(&rt_cfg);
	const char *ni = getenv("RINGTRACE_NO_INHERIT");
	inherit = !ni || strcmp(ni, "1");
	const char *v = getenv("RINGTRACE_DONE_FD");
	char *end;
	long fd = v ? strtol(v, &end, 10) : -1;
	struct stat st;
	/* Only a pipe (a stale or wrong number must not make us write into
	 * a file the program opened); kept across exec when the tree is
	 * traced: a program the tree execs reports on it too. */
	if (v && *v && !*end && fd > 2 && fd < INT_MAX && fstat((int)fd, &st) == 0 &&
	    S_ISFIFO(st.st_mode) && fcntl((int)fd, F_SETFD, inherit ? 0 : FD_CLOEXEC) == 0)
		done_fd = (int)fd;
	if (ret == 0)
		session_start();
	if (inherit)
		return;
	/* The trace is this process's: programs it runs are not traced into
	 * the same directory. */
	static const char *const vars[] = {
		"RINGTRACE_OUTPUT", "RINGTRACE_SUBBUF_SIZE", "RINGTRACE_NUM_SUBBUF",
		"RINGTRACE_OVERWRITE", "RINGTRACE_SWITCH_TIMER_MS",
		"RINGTRACE_READ_TIMER_MS", "RINGTRACE_EVENTS", "RINGTRACE_LOGLEVEL",
		"RINGTRACE_CLOCK", "RINGTRACE_RSEQ", "RINGTRACE_CONTEXTS",
		"RINGTRACE_TRACE_UUID", "RINGTRACE_SHM_PATH",
		"RINGTRACE_DONE_FD",
	};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}
