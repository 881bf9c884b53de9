/*
 * app_trace.c - the traces a session writes for its programs (one per
 * user for per-uid channels, one per program for per-pid channels), their
 * buffer sets (rb_create: a memfd handed to each program), event-id
 * assignment per trace and channel, and the CHANNEL / ENABLE messages
 * that tell a program where each of its events goes.
 *
 * A trace has one dp_bufset per channel of the session; the channels of
 * the other buffer type leave theirs empty (channel == NULL).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#include <urcu.h>
#include <urcu/rculfhash.h>

#include "../common/array.h"
#include "../common/clock.h"
#include "../consumer/recovery.h"
#include "app.h"
#include "../common/warn.h"

/* One class of a trace in its class_index (dp.h). Nodes never move (the
 * index links them, while t->events is reallocated as it grows); they are
 * freed with the trace, after a grace period. */
struct dp_class_node {
	struct cds_lfht_node node;
	uint32_t i;			/* in t->events */
	struct dp_class_node *next;	/* t->class_nodes */
};

enum rtp_app_clock app_clock_kind(void)
{
	static bool decided;
	if (!decided) {
		rt_clock_init(false);
		decided = true;
	}
	return rt_clock_tsc() ? RTP_APP_CLOCK_TSC : RTP_APP_CLOCK_MONOTONIC;
}

struct app_session *app_session_of(struct rtd_session *s)
{
	if (!s->dp)
		s->dp = calloc(1, sizeof(struct app_session));
	return s->dp;
}


/* One clock description for every trace of the daemon (same uuid, same
 * calibration), so that readers can merge them. The first call waits for
 * a 20 ms calibration baseline, once (app_clock_prepare, at the first
 * session start, so that no registration pays for it). */
void app_clock_info(struct ctf_clock_info *ci)
{
	static struct ctf_clock_info clock;
	if (!clock.name) {
		struct rt_clock_desc d;
		app_clock_kind();
		rt_clock_describe(&d, true);
		clock = (struct ctf_clock_info){
			.name = d.name, .description = d.description, .freq = d.freq,
			.offset_s = d.offset_s, .offset = d.offset, .precision = d.precision,
			.has_uuid = true,
		};
		ctf_uuid_generate(clock.uuid);
	}
	*ci = clock;
}

void app_clock_prepare(void)
{
	struct ctf_clock_info ci;
	app_clock_info(&ci);
}

/* Whether a per-pid trace directory name is taken: by a trace of the
 * session, or on disk (a trace of a program that exited). */
static bool dir_taken(const struct app_session *as, const char *dir)
{
	struct stat st;
	for (const struct dp_trace *t = as->traces; t; t = t->next)
		if (!strcmp(t->dir, dir))
			return true;
	return lstat(dir, &st) == 0 || errno != ENOENT;
}

/* The trace directory (dp.h's layout). A per-pid directory is
 * PROCNAME-PID-DATE as LTTng names it, with "-N" added when that name is
 * taken: the same pid registers again within the second when a program
 * execs another linked program, or when a program's first connection
 * failed. Returns 0, -ENAMETOOLONG, or -EEXIST when 100 names are taken. */
static int trace_dir(const struct rtd_session *s, const struct app_session *as,
		     const struct app *a, bool per_pid, char *out, size_t len)
{
	int n;
	const char *root = rtd_session_chunk(s);
	if (!root[0])
		n = snprintf(out, len, "%s", "");
	else if (s->flat && !per_pid)
		n = snprintf(out, len, "%s", root);
	else if (!per_pid)
		n = snprintf(out, len, "%s/ust/uid/%u/%u-bit", root, (unsigned)a->uid,
			     (unsigned)(sizeof(void *) * 8));
	else {
		char date[32];
		time_t now = time(NULL);
		struct tm tm;
		localtime_r(&now, &tm);
		strftime(date, sizeof(date), "%Y%m%d-%H%M%S", &tm);
		for (unsigned k = 0; k < 100; k++) {
			char suffix[8] = "";
			if (k)
				snprintf(suffix, sizeof(suffix), "-%u", k);
			n = snprintf(out, len, "%s/ust/pid/%s-%d-%s%s", root, a->procname,
				     (int)a->pid, date, suffix);
			if (n < 0 || (size_t)n >= len)
				return -ENAMETOOLONG;
			if (!dir_taken(as, out))
				return 0;
		}
		return -EEXIST;
	}
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Empty and destroy the class index. The table is liburcu's (made for
 * concurrent readers; here only the main thread uses it, registered with
 * RCU in main.c): removed nodes are freed after a grace period, as its
 * contract says. */
static void class_index_free(struct dp_trace *t)
{
	if (t->class_index) {
		struct cds_lfht_iter it;
		struct dp_class_node *n;
		rcu_read_lock();
		cds_lfht_for_each_entry(t->class_index, &it, n, node)
			cds_lfht_del(t->class_index, &n->node);
		rcu_read_unlock();
		if (cds_lfht_destroy(t->class_index, NULL) < 0)
			rt_warn("cannot free the event index of %s", t->dir);
		synchronize_rcu();
		t->class_index = NULL;
	}
	while (t->class_nodes) {
		struct dp_class_node *n = t->class_nodes;
		t->class_nodes = n->next;
		free(n);
	}
	free(t->channel_classes);
	t->channel_classes = NULL;
}

_Static_assert(sizeof(((struct dp_bufset *)0)->shm_name) > CONS_RECOVERY_NAME_MAX,
	       "shm_name holds a buffer set's name");

/* --shm-path: the files of buffer set b are removed when `written`
 * (everything in it is in the trace), else kept for `ringtrace recover`
 * (said in the daemon's log). */
static void bufset_files_end(const struct dp_trace *t, struct dp_bufset *b, bool written)
{
	if (!b->shm_name[0])
		return;
	if (written)
		cons_recovery_remove(t->session->shm_path, b->shm_name);
	else
		rt_warn("buffers kept in %s/%s" CONS_RING_SUFFIX " for ringtrace recover",
			t->session->shm_path, b->shm_name);
	b->shm_name[0] = '\0';
}

static void free_trace_mem(struct dp_trace *t)
{
	class_index_free(t);
	for (uint32_t i = 0; i < t->nr_bufsets; i++) {
		/* Not consumed (a trace that failed to start): nothing in it. */
		bufset_files_end(t, &t->bufsets[i], true);
		if (t->bufsets[i].channel) {
			app_shm_guard_remove(t->bufsets[i].rb.shm);
			dp_accts_free(&t->bufsets[i]);
			rb_destroy(&t->bufsets[i].rb);
		}
	}
	free(t->bufsets);
	for (uint32_t i = 0; i < t->nr_events; i++) {
		struct dp_event_class *e = &t->events[i];
		for (uint32_t f = 0; f < e->nr_fields; f++)
			free((char *)(uintptr_t)e->fields[f].name);
		free(e->fields);
		free(e->provider);
		free(e->name);
	}
	free(t->events);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

void app_trace_free(struct dp_trace *t)
{
	if (t->consumer) {
		consumer_trace_drain(t);
		app_session_keep_stats(t);
		for (uint32_t i = 0; i < t->nr_bufsets; i++) {
			struct rtd_channel_stats st = { 0 };
			struct dp_bufset *b = &t->bufsets[i];
			if (b->shm_name[0])
				bufset_files_end(t, b, consumer_bufset_stats(b, &st) == 0 &&
						       st.used_bytes == 0 && st.subbufs_lost == 0);
		}
		consumer_trace_remove(t);
	}
	free_trace_mem(t);
}

/* --shm-path: the buffer set in a new file of the session's shm_path
 * (recovery.h), named SESSION-uid-UID-CHANNEL (per-uid) or
 * SESSION-pid-PID-CHANNEL (per-pid), its name in b->shm_name. 0 or
 * -errno with a message in err. */
static int bufset_in_file(struct dp_trace *t, const struct rtd_channel *c, struct dp_bufset *b,
			  const struct rb_config *rc, const struct rb_client *client, char *err,
			  size_t errlen)
{
	const struct rtd_session *s = t->session;
	char prefix[CONS_RECOVERY_NAME_MAX + 1], why[PATH_MAX + 256];
	snprintf(prefix, sizeof(prefix), "%s-%s-%u-%s", s->name, t->pid ? "pid" : "uid",
		 t->pid ? (unsigned)t->pid : (unsigned)t->uid, c->name);
	int fd = cons_recovery_create(s->shm_path, prefix, b->shm_name, why, sizeof(why));
	if (fd < 0) {
		/* err: the registry's short buffer; why names the file. */
		snprintf(err, errlen, "cannot create the buffers of channel %.63s: %.120s", c->name,
			 why);
		return fd;
	}
	int ret = rb_create_in(&b->rb, rc, client, fd);
	if (ret == 0)
		app_shm_guard_add(b->rb.shm, b->rb.map_size);
	if (ret < 0) {
		close(fd);
		cons_recovery_remove(s->shm_path, b->shm_name);
		b->shm_name[0] = '\0';
		snprintf(err, errlen, "cannot allocate the buffers of channel %.63s in %.120s: %s",
			 c->name, s->shm_path, strerror(-ret));
	}
	return ret;
}

static int make_bufset(struct dp_trace *t, struct rtd_channel *c, char *err, size_t errlen)
{
	struct dp_bufset *b = &t->bufsets[c->id];
	int nr_cpus = get_nprocs_conf();
	struct rb_config rc = {
		.subbuf_size = c->subbuf_size,
		.num_subbuf = c->num_subbuf,
		.nr_cpus = (uint32_t)(nr_cpus > 0 ? nr_cpus : 1),
		/* Snapshot sessions' channels are in overwrite mode but
		 * those created --discard (they stream, ctl_rules.c). */
		.mode = c->overwrite ? RB_MODE_OVERWRITE : RB_MODE_DISCARD,
		.tsc_bits = CTF_COMPACT_TSC_BITS,
		.subbuf_header_size = CTF_PACKET_HEADER_SIZE,
		.use_rseq = true,
		/* Per-uid: several programs write it, each on its own
		 * account (dp_accts.c: a dead one's work is voided). */
		.nr_accts = t->pid == 0 ? DP_ACCTS : 0,
	};
	b->trace = t;
	memcpy(b->stream.uuid, t->uuid, sizeof(t->uuid));
	b->stream.stream_id = c->id;
	b->stream.subbuf_size = c->subbuf_size;
	struct rb_client client = {
		.subbuf_begin = ctf_packet_begin,
		.subbuf_end = ctf_packet_end,
		.clock_read = rt_clock_read_ordered,
		.priv = &b->stream,
	};
	int ret;
	if (t->session->shm_path[0]) {
		ret = bufset_in_file(t, c, b, &rc, &client, err, errlen);
		if (ret < 0)
			return ret;
	} else if ((ret = rb_create(&b->rb, &rc, &client)) < 0) {
		snprintf(err, errlen, "cannot allocate the buffers of channel %s (%u x %llu bytes per CPU): %s",
			 c->name, c->num_subbuf, (unsigned long long)c->subbuf_size,
			 strerror(-ret));
		return ret;
	}
	if (rc.nr_accts && dp_accts_init(b) < 0) {
		app_shm_guard_remove(b->rb.shm);
		rb_destroy(&b->rb);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	b->channel = c;
	return 0;
}

/* The session's trace for this program (per-uid or per-pid), created with
 * the buffers of every channel of that type. NULL with err on failure. */
static struct dp_trace *get_trace(struct rtd_session *s, const struct app *a, bool per_pid,
				  char *err, size_t errlen)
{
	struct app_session *as = app_session_of(s);
	if (!as) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	for (struct dp_trace *t = as->traces; t; t = t->next)
		if (t->uid == a->uid && t->pid == (per_pid ? a->pid : 0))
			return t;
	struct dp_trace *t = calloc(1, sizeof(*t));
	if (!t || !(t->bufsets = calloc(s->nr_channels ? s->nr_channels : 1,
					sizeof(*t->bufsets)))) {
		free(t);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&t->lock, NULL);
	t->session = s;
	t->uid = a->uid;
	t->pid = per_pid ? a->pid : 0;
	memcpy(t->procname, a->procname, sizeof(t->procname));
	t->nr_bufsets = s->nr_channels;
	t->channel_classes = calloc(t->nr_bufsets ? t->nr_bufsets : 1, sizeof(uint32_t));
	/* Resized by event_id itself, in step with the classes (the table's
	 * automatic resizing runs in a worker thread, which lags behind a
	 * program registering thousands of classes at once). */
	t->class_buckets = 64;
	t->class_index = cds_lfht_new(t->class_buckets, t->class_buckets, 0, 0, NULL);
	if (!t->channel_classes || !t->class_index) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	ctf_uuid_generate(t->uuid);
	app_clock_info(&t->clock);
	int ret = trace_dir(s, as, a, per_pid, t->dir, sizeof(t->dir));
	if (ret < 0) {
		snprintf(err, errlen, ret == -EEXIST ? "no free per-pid trace directory name"
						     : "trace directory name too long");
		goto fail;
	}
	for (struct rtd_channel *c = s->channels; c; c = c->next) {
		if (c->id >= t->nr_bufsets ||
		    (c->buffers == RTD_BUFFERS_PER_PID) != per_pid)
			continue;
		if (make_bufset(t, c, err, errlen) < 0)
			goto fail;
	}
	if (consumer_trace_add(t, err, errlen) < 0)
		goto fail;
	t->next = as->traces;
	as->traces = t;
	return t;
fail:
	free_trace_mem(t);
	return NULL;
}

static bool same_fields(const struct dp_event_class *d, const struct app_event *e)
{
	if (d->loglevel != e->loglevel || d->nr_fields != e->nr_fields ||
	    strcmp(d->provider, e->provider) || strcmp(d->name, e->name))
		return false;
	for (uint32_t i = 0; i < d->nr_fields; i++)
		if (d->fields[i].type != e->fields[i].type ||
		    strcmp(d->fields[i].name, e->fields[i].name))
			return false;
	return true;
}

/* FNV-1a over what makes a class: channel, level, names, field types. */
static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static unsigned long class_hash(uint32_t channel_id, const struct app_event *e)
{
	uint64_t h = 0xcbf29ce484222325ull;
	h = hash_bytes(h, &channel_id, sizeof(channel_id));
	h = hash_bytes(h, &e->loglevel, sizeof(e->loglevel));
	h = hash_bytes(h, e->provider, strlen(e->provider) + 1);
	h = hash_bytes(h, e->name, strlen(e->name) + 1);
	for (uint32_t i = 0; i < e->nr_fields; i++) {
		h = hash_bytes(h, &e->fields[i].type, sizeof(e->fields[i].type));
		h = hash_bytes(h, e->fields[i].name, strlen(e->fields[i].name) + 1);
	}
	return (unsigned long)h;
}

struct class_key {
	const struct dp_trace *t;
	uint32_t channel_id;
	const struct app_event *e;
};

static int class_match(struct cds_lfht_node *node, const void *key)
{
	const struct class_key *k = key;
	const struct dp_class_node *n = caa_container_of(node, struct dp_class_node, node);
	const struct dp_event_class *d = &k->t->events[n->i];
	return d->channel_id == k->channel_id && same_fields(d, k->e);
}

/* The event's id in the trace's channel, appended if new (under the
 * trace's lock, for the consumers). *added says whether the metadata
 * changed. Returns the id or -ENOMEM. */
static int64_t event_id(struct dp_trace *t, uint32_t channel_id, const struct app_event *e,
			bool *added)
{
	struct class_key key = { .t = t, .channel_id = channel_id, .e = e };
	unsigned long hash = class_hash(channel_id, e);
	struct cds_lfht_iter it;
	rcu_read_lock();
	cds_lfht_lookup(t->class_index, hash, class_match, &key, &it);
	struct cds_lfht_node *found = cds_lfht_iter_get_node(&it);
	rcu_read_unlock();
	if (found)
		return t->events[caa_container_of(found, struct dp_class_node, node)->i].id;

	int64_t id = -ENOMEM;
	struct dp_class_node *node = calloc(1, sizeof(*node));
	if (!node)
		return id;
	pthread_mutex_lock(&t->lock);
	if (RT_ARRAY_GROW(t->events, t->cap_events, (size_t)t->nr_events + 1, 1024) < 0)
		goto out;
	struct dp_event_class *d = &t->events[t->nr_events];
	memset(d, 0, sizeof(*d));
	d->id = t->channel_classes[channel_id];
	d->channel_id = channel_id;
	d->loglevel = e->loglevel;
	d->provider = strdup(e->provider);
	d->name = strdup(e->name);
	d->fields = calloc(e->nr_fields + 1, sizeof(*d->fields));
	bool ok = d->provider && d->name && d->fields;
	for (uint32_t f = 0; ok && f < e->nr_fields; f++) {
		d->fields[f].type = e->fields[f].type;
		d->fields[f].name = strdup(e->fields[f].name);
		ok = d->fields[f].name != NULL;
		d->nr_fields += ok;
	}
	if (!ok) {
		for (uint32_t f = 0; f < d->nr_fields; f++)
			free((char *)(uintptr_t)d->fields[f].name);
		free(d->fields);
		free(d->provider);
		free(d->name);
		goto out;
	}
	node->i = t->nr_events;
	t->nr_events++;
	t->generation++;
	t->channel_classes[channel_id]++;
	*added = true;
	id = d->id;
out:
	pthread_mutex_unlock(&t->lock);
	if (id < 0) {
		free(node);
		return id;
	}
	cds_lfht_node_init(&node->node);
	rcu_read_lock();
	cds_lfht_add(t->class_index, hash, &node->node);
	rcu_read_unlock();
	node->next = t->class_nodes;
	t->class_nodes = node;
	if (t->nr_events > t->class_buckets) {
		t->class_buckets *= 4;
		cds_lfht_resize(t->class_index, t->class_buckets);
	}
	return id;
}

static struct app_sent *find_sent(struct app *a, const struct dp_bufset *bs)
{
	for (uint32_t i = 0; i < a->nr_sent; i++)
		if (a->sent[i].bs == bs)
			return &a->sent[i];
	return NULL;
}

/* CHANNEL: hand the buffer set to the program once. */
static struct app_sent *send_channel(struct app *a, struct dp_bufset *bs)
{
	struct app_sent *sent = find_sent(a, bs);
	if (sent)
		return sent;
	if (RT_ARRAY_GROW(a->sent, a->cap_sent, (size_t)a->nr_sent + 1, 8) < 0)
		return NULL;
	struct rtd_channel *c = bs->channel;
	struct rtp_app_buf b = { 0 };
	uint64_t key = a->next_key++;
	struct rtp_app_channel m = {
		.key = key,
		.session_id = bs->trace->session->id,
		.channel_id = c->id,
		.nr_contexts = c->nr_contexts,
		.map_size = bs->rb.map_size,
		.account = dp_acct_take(bs, a->pid),
	};
	_Static_assert(sizeof(m.uuid) == sizeof(bs->trace->uuid), "trace uuid");
	memcpy(m.uuid, bs->trace->uuid, sizeof(m.uuid));
	for (uint32_t i = 0; i < c->nr_contexts && i < RTP_APP_MAX_CONTEXTS; i++)
		m.contexts[i] = (uint8_t)c->contexts[i];
	rtp_app_channel_encode(&b, &m);
	int r = b.err ? b.err : app_send(a, RTP_APP_CHANNEL, 0, b.data, b.len, bs->rb.fd);
	rtp_app_buf_free(&b);
	if (r < 0)
		return NULL;
	sent = &a->sent[a->nr_sent++];
	*sent = (struct app_sent){ .key = key, .bs = bs };
	return sent;
}

/* An ENABLE's filters and their uses, as send_enable collects them. */
struct enable_filters {
	struct rtp_app_filter f[RTP_APP_ENABLE_MAX_FILTERS];
	uint32_t nr;
	struct rtp_app_enable_use *uses;
	uint32_t nr_uses, cap_uses;
};

/* Entry `entry` (event e, after every entry already added) is written
 * under the filters of c's rules that match it: each filter sent once
 * per ENABLE, and named once by the entry's uses, in order (two rules
 * with the same filter are one use: the decoder refuses repeats). 0,
 * -E2BIG (more distinct filters than an ENABLE carries) or -ENOMEM. */
static int add_filters(struct enable_filters *ef, const struct rtd_channel *c,
		       const struct app_event *e, uint32_t entry)
{
	uint32_t first = ef->nr_uses;
	for (const struct rtd_rule *r = c->rules; r; r = r->next) {
		if (!r->filter_bin || !rtd_rule_matches(r, e->full, e->loglevel))
			continue;
		uint32_t k = 0;
		while (k < ef->nr && (ef->f[k].len != r->filter_len ||
				      memcmp(ef->f[k].p, r->filter_bin, r->filter_len)))
			k++;
		if (k == ef->nr) {
			if (ef->nr == RTP_APP_ENABLE_MAX_FILTERS)
				return -E2BIG;
			ef->f[ef->nr++] = (struct rtp_app_filter){ r->filter_bin, r->filter_len };
		}
		uint32_t at = first;
		while (at < ef->nr_uses && ef->uses[at].filter < k)
			at++;
		if (at < ef->nr_uses && ef->uses[at].filter == k)
			continue;
		if (RT_ARRAY_GROW(ef->uses, ef->cap_uses, (size_t)ef->nr_uses + 1, 16) < 0)
			return -ENOMEM;
		memmove(ef->uses + at + 1, ef->uses + at, (ef->nr_uses - at) * sizeof(*ef->uses));
		ef->uses[at] = (struct rtp_app_enable_use){ entry, k };
		ef->nr_uses++;
	}
	return 0;
}

/* ENABLE: the program's events this buffer set records now, each with
 * the filters of the rules that want it (none when one of them has
 * none). */
static int send_enable(struct app *a, const struct app_sent *sent, bool on)
{
	struct dp_bufset *bs = sent->bs;
	struct dp_trace *t = bs->trace;
	struct rtd_channel *c = bs->channel;
	struct rtp_app_buf b = { 0 };
	struct enable_filters *ef = calloc(1, sizeof(*ef));
	bool added = false;
	uint32_t entries = 0;
	if (!ef)
		return -ENOMEM;
	rtp_app_enable_begin(&b, sent->key);
	for (uint32_t i = 0; on && i < a->nr_events; i++) {
		const struct app_event *e = &a->events[i];
		if (!rtd_channel_wants(c, e->full, e->loglevel))
			continue;
		int64_t id = event_id(t, c->id, e, &added);
		if (id < 0)
			continue;
		if (!rtd_channel_unfiltered(c, e->full, e->loglevel)) {
			uint32_t uses = ef->nr_uses;
			int r = add_filters(ef, c, e, entries);
			if (r < 0) {
				ef->nr_uses = uses;
				/* Not written at all rather than unfiltered. */
				rt_warn("program %d: event %s not enabled in channel %s: %s",
					(int)a->pid, e->full, c->name,
					r == -E2BIG ? "too many distinct filters"
						    : "out of memory");
				continue;
			}
		}
		rtp_app_enable_add(&b, e->index, (uint32_t)id);
		entries++;
	}
	if (added)
		consumer_metadata_changed(t);
	rtp_app_enable_finish_filtered(&b, ef->f, ef->nr, ef->uses, ef->nr_uses);
	int r = b.err ? b.err : app_send(a, RTP_APP_ENABLE, 0, b.data, b.len, -1);
	rtp_app_buf_free(&b);
	free(ef->uses);
	free(ef);
	return r;
}

int app_sync_session(struct app *a, struct rtd_session *s, bool active)
{
	char err[256];
	bool tracked = active && rtd_session_tracks(s, a->pid);
	int ret = 0;
	for (struct rtd_channel *c = s->channels; c; c = c->next) {
		bool per_pid = c->buffers == RTD_BUFFERS_PER_PID;
		struct app_session *as = app_session_of(s);
		struct dp_trace *t = NULL;
		if (as)
			for (t = as->traces; t; t = t->next)
				if (t->uid == a->uid && t->pid == (per_pid ? a->pid : 0))
					break;
		if (!t && !tracked)
			continue;
		if (!t && !(t = get_trace(s, a, per_pid, err, sizeof(err)))) {
			rt_warn("session %s, program %d: %s", s->name,
				(int)a->pid, err);
			ret = -ENOMEM;
			continue;
		}
		if (c->id >= t->nr_bufsets || !t->bufsets[c->id].channel)
			continue;
		struct app_sent *sent = tracked ? send_channel(a, &t->bufsets[c->id])
						: find_sent(a, &t->bufsets[c->id]);
		if (sent)
			send_enable(a, sent, tracked);
	}
	return ret;
}

void app_disable_session(struct app *a, const struct rtd_session *s)
{
	for (uint32_t i = 0; i < a->nr_sent; i++)
		if (a->sent[i].bs->trace->session == s)
			send_enable(a, &a->sent[i], false);
}

void app_forget_session(struct app *a, const struct rtd_session *s)
{
	uint32_t w = 0;
	for (uint32_t i = 0; i < a->nr_sent; i++)
		if (a->sent[i].bs->trace->session != s)
			a->sent[w++] = a->sent[i];
	a->nr_sent = w;
}
