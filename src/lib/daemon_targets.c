/*
 * daemon_targets.c - the buffer sets a daemon hands to this program and
 * the per-class target tables built from their enable tables (see
 * daemon_client.h for the lifetime and publication rules).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/array.h"
#include "../common/context.h"
#include "daemon_client.h"
#include "epoch.h"

/* Under rt_registry_lock (or a fork child alone). bufs[first_buf ..
 * nr_bufs) belong to the current connection; those before, to dead
 * ones (a lost daemon's, or a fork parent's): never written again, and
 * unmapped after a grace period like those of destroyed sessions (see
 * daemon_client.h). */
static struct rt_dbuf *bufs[RT_DC_MAX_BUFS];	/* never freed */
static uint32_t nr_bufs;
static uint32_t first_buf;
static uint64_t dead_bytes;			/* mappings of dead ones */
static struct rt_target_set *retired;		/* replaced tables, kept */
static size_t retired_bytes;

uint32_t rt_ctx_size(const uint8_t *ctx, uint32_t nr)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < nr; i++) {
		/* The strings: the thread's name is sized by the probe at
		 * each event; the hostname is this process's. */
		if (ctx[i] == RT_CTX_HOSTNAME)
			n += rt_dc_hostname_size;
		else
			n += rt_context_size(ctx[i]);
	}
	return n;
}

static struct rt_dbuf *find_buf(uint64_t key)
{
	for (uint32_t i = first_buf; i < nr_bufs; i++)
		if (bufs[i]->key == key)
			return bufs[i];
	return NULL;
}

/*
 * A buffer set in a file (a daemon session created with --shm-path: its
 * buffers outlive a crash, src/consumer/recovery.h) cannot be sealed. It
 * is accepted from the daemon (the peer of this connection, root or our
 * user: rtp_peer_check) when it is a regular file owned by root or by us
 * with no access for group or others (a memfd, mode 0777, is not one), of
 * exactly the size announced: then only its owner, whom this program
 * trusts with its buffers already, could truncate it under the mapping
 * (docs/security.md). 0 or -EPERM, -errno of fstat.
 */
static int check_buffer_file(int fd, uint64_t map_size)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || (st.st_mode & 077) ||
	    (st.st_uid != 0 && st.st_uid != geteuid()) || (uint64_t)st.st_size != map_size)
		return -EPERM;
	return 0;
}

int rt_dbuf_add(const struct rtp_app_channel *m, int memfd, char *err, size_t errlen)
{
	uint64_t key = m->key, map_size = m->map_size;
	int ret = -EPROTO;
	for (uint32_t i = 0; i < m->nr_contexts; i++)
		if (m->contexts[i] >= RT_CTX_COUNT) {
			snprintf(err, errlen, "unknown context %u", m->contexts[i]);
			return -EPROTO;
		}
	if (find_buf(key) || nr_bufs == RT_DC_MAX_BUFS) {
		snprintf(err, errlen, "buffer set %llu: duplicate or too many",
			 (unsigned long long)key);
		return -EPROTO;
	}
	/* Sealed at its size, or a daemon could truncate it under our
	 * mapping and turn the program's next event into SIGBUS. */
	ret = rb_check_sealed(memfd);
	if (ret < 0 && check_buffer_file(memfd, map_size) < 0) {
		snprintf(err, errlen, "buffer set %llu: its memfd is not sealed against resizing "
			 "(%s), nor a private file of the daemon's of its size",
			 (unsigned long long)key, strerror(-ret));
		return -EPROTO;
	}
	off_t real = lseek(memfd, 0, SEEK_END);
	if (real < 0 || map_size < RB_SHM_HEADER_SIZE || (uint64_t)real != map_size ||
	    map_size > (1ULL << 40)) {
		snprintf(err, errlen, "buffer set size %llu does not match its memfd",
			 (unsigned long long)map_size);
		return -EPROTO;
	}
	struct rt_dbuf *b = calloc(1, sizeof(*b));
	if (!b) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	b->map = mmap(NULL, map_size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (b->map == MAP_FAILED) {
		ret = -errno;
		snprintf(err, errlen, "cannot map a buffer set: %s", strerror(errno));
		goto free_buf;
	}
	b->map_size = map_size;
	ret = rb_attach(&b->rb, b->map, map_size);
	if (ret < 0) {
		snprintf(err, errlen, "buffer set %llu is not a valid ring buffer",
			 (unsigned long long)key);
		goto unmap;
	}
	if (b->rb.hdr_size != CTF_PACKET_HEADER_SIZE ||
	    b->rb.tsc_bits != CTF_COMPACT_TSC_BITS) {
		snprintf(err, errlen, "buffer set %llu: not a CTF buffer", (unsigned long long)key);
		ret = -EPROTO;
		goto unmap;
	}
	if (b->rb.rseq && !rb_rseq_usable())
		b->rb.rseq = false;
	/* Our own account in a set other programs write too: what we leave
	 * outstanding if we die in an event is ours alone to void. */
	if (rb_use_acct(&b->rb, m->account) < 0) {
		snprintf(err, errlen, "buffer set %llu: account %u out of range",
			 (unsigned long long)key, m->account);
		ret = -EPROTO;
		goto unmap;
	}
	_Static_assert(sizeof(b->stream.uuid) == sizeof(m->uuid), "trace uuid");
	memcpy(b->stream.uuid, m->uuid, sizeof(m->uuid));
	b->stream.stream_id = m->channel_id;
	b->stream.subbuf_size = b->rb.subbuf_size;
	b->rb.client = (struct rb_client){
		.subbuf_begin = ctf_packet_begin,
		.subbuf_end = ctf_packet_end,
		.clock_read = rt_clock_read_ordered,
		.priv = &b->stream,
	};
	b->key = key;
	b->session_id = m->session_id;
	memcpy(b->ctx, m->contexts, m->nr_contexts);
	b->nr_ctx = m->nr_contexts;
	b->ctx_size = rt_ctx_size(b->ctx, b->nr_ctx);
	b->live = true;
	bufs[nr_bufs++] = b;
	return 0;

unmap:
	munmap(b->map, map_size);
free_buf:
	free(b);
	return ret;
}

/* A filter of b's last ENABLE with these bytes, or NULL. */
static struct rt_dprog *known_prog(const struct rt_dbuf *b, const struct rtp_app_filter *f)
{
	for (uint32_t i = 0; i < b->nr_progs; i++)
		if (b->progs[i]->len == f->len && !memcmp(b->progs[i]->bytes, f->p, f->len))
			return b->progs[i];
	return NULL;
}

static void free_prog(struct rt_dprog *d)
{
	rtf_free(d->prog);
	free(d->bytes);
	free(d);
}

/* The ENABLE's filters, in its order: those of the last ENABLE with the
 * same bytes are kept, the others loaded (rtf_load checks them: bytes
 * from another process). 0 and *out (NULL without filters), -EPROTO
 * (a filter rtf_load refuses) or -ENOMEM, with a message. */
static int load_progs(const struct rt_dbuf *b, const struct rtp_app_enable *en,
		      struct rt_dprog ***out, char *err, size_t errlen)
{
	bool fresh[RTP_APP_ENABLE_MAX_FILTERS] = { false };
	char why[256];
	int ret = -ENOMEM;
	uint32_t i = 0;
	*out = NULL;
	if (!en->nr_filters)
		return 0;
	struct rt_dprog **progs = calloc(en->nr_filters, sizeof(*progs));
	if (!progs)
		goto fail;
	for (; i < en->nr_filters; i++) {
		const struct rtp_app_filter *f = &en->filters[i];
		if ((progs[i] = known_prog(b, f)))
			continue;
		struct rt_dprog *d = calloc(1, sizeof(*d));
		if (!d || !(d->bytes = malloc(f->len))) {
			free(d);
			goto fail;
		}
		memcpy(d->bytes, f->p, f->len);
		d->len = f->len;
		ret = rtf_load(f->p, f->len, &d->prog, why, sizeof(why));
		if (ret < 0) {
			free(d->bytes);
			free(d);
			goto fail;
		}
		progs[i] = d;
		fresh[i] = true;
		/* Never freed (a table may point to it): counted. The program
		 * takes about what its bytes do. */
		retired_bytes += sizeof(*d) + 2 * (size_t)f->len;
	}
	*out = progs;
	return 0;

fail:
	if (ret == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	else
		snprintf(err, errlen, "filter %u of ENABLE refused: %s", i, why);
	for (uint32_t k = 0; progs && k < i; k++)
		if (fresh[k])
			free_prog(progs[k]);
	free(progs);
	return ret == -ENOMEM ? -ENOMEM : -EPROTO;
}

/* Whether a and b name the same filters in the same order. */
static bool same_filters(const struct rt_target_filters *a, const struct rt_target_filters *b)
{
	if (a->n != b->n)
		return false;
	for (uint32_t i = 0; i < a->n; i++)
		if (a->f[i].prog != b->f[i].prog)
			return false;
	return true;
}

/* Entry `entry`'s filters (nr of the ENABLE's uses name it), bound to
 * class c: *out, the buffer set's current one for the class when it
 * names the same filters. 0, -E2BIG (its programs have more than
 * RT_DC_EVENT_INSNS_MAX instructions in all: what one event would run)
 * or -ENOMEM. */
static int entry_filters(const struct rt_dbuf *b, const struct rtp_app_enable *en,
			 struct rt_dprog **progs, uint32_t entry, uint32_t nr,
			 const struct rt_event_class *c, struct rt_target_filters **out)
{
	size_t size = sizeof(**out) + nr * sizeof((*out)->f[0]);
	struct rt_target_filters *tf = calloc(1, size);
	uint64_t insns = 0;
	*out = NULL;
	if (!tf)
		return -ENOMEM;
	for (uint32_t u = 0; u < en->nr_uses && tf->n < nr; u++) {
		struct rtp_app_enable_use use = rtp_app_enable_use_at(en, u);
		if (use.entry == entry) {
			tf->f[tf->n++].prog = progs[use.filter];
			insns += rtf_nr_insns(progs[use.filter]->prog);
		}
	}
	if (insns > RT_DC_EVENT_INSNS_MAX) {
		free(tf);
		return -E2BIG;
	}
	struct rt_target_filters *old = c->id < b->nr_filt ? b->filt[c->id] : NULL;
	if (old && same_filters(old, tf)) {
		free(tf);
		*out = old;
		return 0;
	}
	for (uint32_t i = 0; i < tf->n; i++) {
		if (rt_filter_bind(c, tf->f[i].prog->prog, &tf->f[i].bound) < 0) {
			while (i--)
				free(tf->f[i].bound);
			free(tf);
			return -ENOMEM;
		}
		size += sizeof(*tf->f[i].bound) + rtf_nr_refs(tf->f[i].prog->prog) *
							 sizeof(tf->f[i].bound->refs[0]);
	}
	retired_bytes += size;
	*out = tf;
	return 0;
}

int rt_dbuf_enable(const struct rtp_app_enable *en, char *err, size_t errlen)
{
	struct rt_dbuf *b = find_buf(en->key);
	if (!b) {
		snprintf(err, errlen, "ENABLE for unknown buffer set %llu",
			 (unsigned long long)en->key);
		return -EPROTO;
	}
	struct rt_event_class **classes;
	size_t nr_classes = rt_registry_classes(&classes);
	struct rt_dprog **progs;
	uint32_t *nr_uses = NULL;
	/* The new tables, by class index. The old ones are only read here
	 * and by rt_targets_publish, both under rt_registry_lock. */
	uint32_t *ids = NULL, nr_ids = 0, nr_filt = 0;
	struct rt_target_filters **filt = NULL;
	int ret = load_progs(b, en, &progs, err, errlen);
	if (ret < 0)
		return ret;
	ret = -ENOMEM;
	if (en->nr_uses && !(nr_uses = calloc(en->n, sizeof(*nr_uses))))
		goto nomem;
	for (uint32_t u = 0; u < en->nr_uses; u++)
		nr_uses[rtp_app_enable_use_at(en, u).entry]++;
	for (uint32_t i = 0; i < en->n; i++) {
		uint32_t idx, id;
		/* The decoder checked idx < RTP_APP_MAX_EVENTS and id <=
		 * RTP_APP_EVENT_ID_MAX (id + 1 below does not wrap to 0). */
		rtp_app_enable_entry(en, i, &idx, &id);
		/* Unlisted classes stay 0 (disabled). */
		if (RT_ARRAY_GROW_ZEROED(ids, nr_ids, (size_t)idx + 1, 16) < 0)
			goto nomem;
		ids[idx] = id + 1;
		/* A class this program does not have is never written: its
		 * filters need no binding. */
		if (nr_uses && nr_uses[i] && idx < nr_classes) {
			if (RT_ARRAY_GROW_ZEROED(filt, nr_filt, (size_t)idx + 1, 16) < 0)
				goto nomem;
			ret = entry_filters(b, en, progs, i, nr_uses[i], classes[idx], &filt[idx]);
			if (ret == -E2BIG) {
				snprintf(err, errlen, "the filters of entry %u of ENABLE have more "
					 "than %u instructions", i, RT_DC_EVENT_INSNS_MAX);
				goto fail;
			}
			if (ret < 0)
				goto nomem;
		}
	}
	/* What was loaded and bound is never freed: past the bound, the
	 * connection ends rather than grow (a hostile daemon's ENABLEs). */
	if (retired_bytes > RT_DC_RETIRED_MAX) {
		ret = -E2BIG;
		snprintf(err, errlen, "too many filter changes");
		goto fail;
	}
	free(nr_uses);
	free(b->ids);
	b->ids = ids;
	b->nr_ids = nr_ids;
	free(b->filt);
	b->filt = filt;
	b->nr_filt = nr_filt;
	free(b->progs);
	b->progs = progs;
	b->nr_progs = en->nr_filters;
	return 0;

nomem:
	ret = -ENOMEM;
	snprintf(err, errlen, "out of memory");
fail:
	/* Nothing of a refused ENABLE was published: what it made is freed,
	 * the tables it built (not the buffer set's, reused) and the
	 * programs it loaded (not the buffer set's, known). */
	for (uint32_t k = 0; filt && k < nr_filt; k++) {
		struct rt_target_filters *tf = filt[k];
		if (!tf || (k < b->nr_filt && tf == b->filt[k]))
			continue;
		for (uint32_t i = 0; i < tf->n; i++)
			free(tf->f[i].bound);
		free(tf);
	}
	for (uint32_t k = 0; progs && k < en->nr_filters; k++) {
		bool held = false;
		for (uint32_t j = 0; j < b->nr_progs && !held; j++)
			held = b->progs[j] == progs[k];
		if (!held)
			free_prog(progs[k]);
	}
	free(filt);
	free(ids);
	free(nr_uses);
	free(progs);
	return ret;
}

int rt_dbuf_disable_session(uint64_t session_id)
{
	for (uint32_t i = first_buf; i < nr_bufs; i++)
		if (bufs[i]->session_id == session_id)
			bufs[i]->live = false;
	return 0;
}

/* The table for one class: every live buffer set that enables it. */
static int build_set(const struct rt_event_class *c, struct rt_target_set **out)
{
	struct rt_target t[RT_DC_MAX_TARGETS];
	uint32_t n = 0;
	*out = NULL;
	for (uint32_t i = first_buf; i < nr_bufs && n < RT_DC_MAX_TARGETS; i++) {
		const struct rt_dbuf *b = bufs[i];
		if (!b->live || c->id >= b->nr_ids || !b->ids[c->id])
			continue;
		uint32_t id = b->ids[c->id] - 1;
		struct rt_target *tt = &t[n++];
		memset(tt, 0, sizeof(*tt));
		tt->buf = bufs[i];
		tt->id = id;
		tt->hdr_compact = (uint16_t)ctf_event_header_size(id, 0);
		tt->filters = c->id < b->nr_filt ? b->filt[c->id] : NULL;
		/* A call site's own fast path writes without the probe: not
		 * for a filtered event. */
		tt->fast_ok = b->nr_ctx == 0 && !tt->filters &&
			      rt_fast_site_init(&tt->site, &b->rb, id);
	}
	if (n == 0)
		return 0;
	struct rt_target_set *s = malloc(sizeof(*s) + n * sizeof(s->t[0]));
	if (!s)
		return -ENOMEM;
	s->retired = NULL;
	s->nr = n;
	memcpy(s->t, t, n * sizeof(t[0]));
	*out = s;
	return 0;
}

static bool same_set(const struct rt_target_set *a, const struct rt_target_set *b)
{
	if (!a || !b)
		return a == b;
	return a->nr == b->nr && !memcmp(a->t, b->t, a->nr * sizeof(a->t[0]));
}

/* Count a replaced table (kept: a probe may still read it). Returns
 * false past RT_DC_RETIRED_MAX. */
static bool retire(struct rt_target_set *old)
{
	if (!old)
		return true;
	old->retired = retired;
	retired = old;
	retired_bytes += sizeof(*old) + old->nr * sizeof(old->t[0]);
	return retired_bytes <= RT_DC_RETIRED_MAX;
}

/* Publish `s` (NULL: nowhere) in class `c`. Returns 0, or -E2BIG once
 * too much was retired (published all the same). */
static int replace_set(struct rt_event_class *c, struct rt_target_set *s)
{
	bool ok = retire(c->targets);
	/* Release: the table (and the buffer sets it points to) is complete
	 * before a probe can load it (acquire in probe.c). */
	__atomic_store_n(&c->targets, s, __ATOMIC_RELEASE);
	return ok ? 0 : -E2BIG;
}

/* Every class's table and call site now names live buffer sets only:
 * the others are unpublished since the current epoch (rt_targets_reclaim
 * unmaps them once it has passed). */
static void mark_unpublished(void)
{
	uint64_t now = rt_epoch_now();
	for (uint32_t i = 0; i < nr_bufs; i++) {
		struct rt_dbuf *b = bufs[i];
		if (!b->live && b->map && !b->unpublished) {
			b->unpublished = true;
			b->dead_since = now;
		}
	}
}

int rt_targets_publish(void)
{
	struct rt_event_class **classes;
	size_t n = rt_registry_classes(&classes);
	int ret = 0;
	size_t i = 0;
	for (; i < n && ret == 0; i++) {
		struct rt_target_set *s;
		ret = build_set(classes[i], &s);
		if (ret < 0)
			break;
		if (same_set(s, classes[i]->targets)) {
			free(s);
			continue;
		}
		ret = replace_set(classes[i], s);
	}
	rt_registry_apply_sites_locked();
	/* Only when every class was rebuilt (a failure leaves some tables
	 * naming dead buffer sets: the disconnection that follows drops
	 * them all). */
	if (i == n && ret == 0)
		mark_unpublished();
	return ret;
}

/* End the current generation: its buffer sets are no longer written nor
 * found by key. `free_ids`: false in a fork child (no allocator calls
 * there). */
static void end_generation(bool free_ids)
{
	for (uint32_t i = first_buf; i < nr_bufs; i++) {
		bufs[i]->live = false;
		if (bufs[i]->map && !bufs[i]->counted_dead) {
			dead_bytes += bufs[i]->map_size;
			bufs[i]->counted_dead = true;
		}
		if (free_ids) {
			/* Read only under rt_registry_lock, from first_buf on. */
			free(bufs[i]->ids);
			bufs[i]->ids = NULL;
			bufs[i]->nr_ids = 0;
			free(bufs[i]->filt);
			bufs[i]->filt = NULL;
			bufs[i]->nr_filt = 0;
			free(bufs[i]->progs);
			bufs[i]->progs = NULL;
			bufs[i]->nr_progs = 0;
		}
	}
	first_buf = nr_bufs;
}

void rt_targets_drop_all(void)
{
	end_generation(true);
	rt_triggers_drop_all();
	struct rt_event_class **classes;
	size_t n = rt_registry_classes(&classes);
	for (size_t i = 0; i < n; i++)
		replace_set(classes[i], NULL);
	rt_registry_apply_sites_locked();
	mark_unpublished();
}

bool rt_targets_may_reconnect(void)
{
	return nr_bufs < RT_DC_MAX_BUFS && dead_bytes <= RT_DC_DEAD_MAX &&
	       retired_bytes <= RT_DC_RETIRED_MAX;
}

void rt_targets_fork_child(bool keep)
{
	/* The parent's buffer sets stay mapped but are forgotten: the new
	 * connection numbers its own from 1. Their accounts are the
	 * parent's (the daemon voids them when the parent dies): the child
	 * writes on the CPUs' own words there. */
	for (uint32_t i = 0; i < nr_bufs; i++)
		rb_use_acct(&bufs[i]->rb, 0);
	end_generation(false);
	/* The parent's ring names the parent: the child's connection
	 * brings its own. */
	rt_triggers_drop_all();
	if (keep)
		return;
	struct rt_event_class **classes;
	size_t n = rt_registry_classes(&classes);
	for (size_t i = 0; i < n; i++)
		replace_set(classes[i], NULL);
	rt_registry_disable_all();
}

/* Make every call site's copy of b's fast site (the tables' targets,
 * retired or not) refuse to record: a section that reads nr_cpus 0 fails
 * at its first check, before it touches the mapping
 * (ringtrace/internal/fast.h). Relaxed stores: the call sites read the
 * word in their rseq section, which rt_epoch_rseq_fence orders after.
 * b->rb.fast itself is left alone: only the library's paths read it,
 * inside the epoch, which has passed. */
static void close_fast_sites(struct rt_dbuf *b)
{
	struct rt_event_class **classes;
	size_t n = rt_registry_classes(&classes);
	for (struct rt_target_set *s = retired; s; s = s->retired)
		for (uint32_t i = 0; i < s->nr; i++)
			if (s->t[i].buf == b)
				__atomic_store_n(&s->t[i].site.buf.nr_cpus, 0, __ATOMIC_RELAXED);
	/* Current tables name live buffer sets only, but a fork child's
	 * inherited ones are its parent's: checked all the same. */
	for (size_t c = 0; c < n; c++) {
		struct rt_target_set *s = classes[c]->targets;
		for (uint32_t i = 0; s && i < s->nr; i++)
			if (s->t[i].buf == b)
				__atomic_store_n(&s->t[i].site.buf.nr_cpus, 0, __ATOMIC_RELAXED);
	}
}

/*
 * Unmap b, whose grace period passed: no thread is inside an event that
 * loaded it (epoch.h). Call sites record without the epoch, in one rseq
 * section, through a fast site they may have loaded long ago: their
 * sites are closed first and every section in progress restarted, and
 * the control area stays mapped as private memory (a call site that
 * committed just before stores the CPU's last_tsc there after its
 * section). Without membarrier (old kernel, seccomp) b stays mapped.
 * 0 or -errno.
 */
static int unmap_buf(struct rt_dbuf *b)
{
	size_t keep = 0;
	if (b->rb.rseq_fast) {
		close_fast_sites(b);
		int r = rt_epoch_rseq_fence();
		if (r < 0)
			return r;
		size_t page = (size_t)sysconf(_SC_PAGESIZE);
		size_t end = (size_t)(b->rb.fast.cpu_ctl - (char *)b->map) +
			     (size_t)b->rb.nr_cpus * b->rb.fast.cpu_ctl_stride;
		keep = (end + page - 1) / page * page;
		if (keep > b->map_size)
			keep = b->map_size;
		/* MAP_FIXED replaces the pages at once: a store lands in
		 * the old page or the new one. */
		if (mmap(b->map, keep, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
			return -errno;
	}
	if (keep < b->map_size && munmap((char *)b->map + keep, b->map_size - keep) < 0)
		return -errno;
	if (b->counted_dead)
		dead_bytes -= b->map_size;
	b->map = NULL;
	return 0;
}

bool rt_targets_reclaim(void)
{
	bool waiting = false, advanced = false;
	for (uint32_t i = 0; i < nr_bufs; i++) {
		struct rt_dbuf *b = bufs[i];
		if (!b->map || !b->unpublished || b->kept)
			continue;
		if (!rt_epoch_passed(b->dead_since) && !advanced) {
			advanced = true;
			int r = rt_epoch_advance();
			/* No membarrier: nothing is ever unmapped. */
			if (r < 0 && r != -EAGAIN)
				return false;
		}
		if (!rt_epoch_passed(b->dead_since))
			waiting = true;
		else if (unmap_buf(b) < 0)
			b->kept = true;
	}
	return waiting;
}
