/*
 * ringbuffer.c - slow paths of the lockless per-CPU ring buffer (Desnoyers & Dagenais 2012,
 * section 4): creation of the shared-memory buffers, sub-buffer switches
 * (Algorithms 1, 2 and the SWITCH_OLD/NEW/END_SWITCH_CURRENT steps), force
 * switch (Algorithm 4), push reader, and the reader's side: get/put
 * sub-buffer (Algorithms 6 and 7), the skip of a stuck sub-buffer and the
 * snapshot's non-destructive copy.
 *
 * Correctness of the per-CPU rseq scheme (docs/ring-buffer.md). Each word
 * has exactly one way of being written at any time:
 *
 *  write_count  rseq mode: only by rseq sections that check they run on
 *               the owning CPU (reserve, and the flush, whose thread pins
 *               itself to that CPU first). A thread migrated between
 *               reading write_count and its store is aborted by the kernel
 *               and retries on its new CPU. A thread without rseq (raw
 *               clone) never writes it: its events are dropped and counted.
 *               Atomic mode: SMP CAS only (with stamp: one 16-byte
 *               compare-and-swap of the pair, rb_cas_stamp and
 *               rb_smp_reserve).
 *  announced    rseq mode: rseq sections on the owning CPU (the library's
 *               reservation stores it with write_count in one 16-byte
 *               store, rb_rseq_reserve; the slow path adds before its
 *               LCAS). Atomic mode: the word is stamp, and the CPU's
 *               announced is announced_smp, SMP adds only.
 *  committed    only rseq sections on the owning CPU (commit of work
 *               announced on that CPU, by a thread still there).
 *  committed_remote, commit_seq, read_count, table, events_lost,
 *               subbufs_lost: SMP atomics only, from any CPU.
 *  last_tsc     plain relaxed stores from anywhere; only a hint that may go
 *               stale towards the past (which makes headers larger).
 *  out_from, out_to  rseq mode: stores inside the reservation's section,
 *               before its store of write_count; atomic mode: an SMP
 *               store (out_to a CAS maximum) before its compare-and-swap.
 *               Read only by a reader whose writers are gone.
 *
 * Migration between reserve and commit: the slot's commit goes to
 * committed_remote with an atomic add; what is committed is the sum of
 * both words. Completion (equation (3)) may then be seen by neither
 * committer (store buffering on the local add); the reader and the next
 * writer to enter that sub-buffer recompute the sums and complete it
 * (rb_subbuf_try_complete), so a sub-buffer is never lost, only delivered
 * one read-timer later.
 *
 * Remote flush and stop: rb_flush_cpu pins the calling thread to the CPU
 * and runs the same rseq LCAS; if the CPU cannot be used (not in our
 * affinity set, offline) no thread of ours can run there either, and a
 * final flush falls back to an SMP CAS.
 */
#define _GNU_SOURCE
#include "ringbuffer_api.h"
#include "rb_check.h"

#include <errno.h>
#include <fcntl.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define RB_NOINLINE __attribute__((noinline))
#define RB_CACHELINE 64

/* The per-CPU control words call sites and rb_rseq.h use
 * (ringtrace/internal/fast_layout.h, whose own assertions cover struct
 * rt_fast_buf), where struct rb_cpu_ctl has them. */
_Static_assert(offsetof(struct rb_cpu_ctl, write_count) == RT__CTL_WRITE_COUNT,
	       "write_count offset is ABI");
_Static_assert(offsetof(struct rb_cpu_ctl, announced) == RT__CTL_ANNOUNCE,
	       "announced must follow write_count (rb_rseq_reserve)");
_Static_assert(offsetof(struct rb_cpu_ctl, last_tsc) == RT__CTL_LAST_TSC,
	       "last_tsc offset is ABI");
_Static_assert(offsetof(struct rb_cpu_ctl, hot_tag) == RT__CTL_HOT &&
		       offsetof(struct rb_cpu_ctl, hot_off) == RT__CTL_HOT_OFF,
	       "hot word offsets are ABI (and rb_rseq_hot_store's)");
_Static_assert(offsetof(struct rb_cpu_ctl, committed) == RT__CTL_COMMIT,
	       "committed offset");
_Static_assert(offsetof(struct rb_cpu_ctl, out_from) == RB_CTL_OUT_FROM &&
		       offsetof(struct rb_cpu_ctl, committed_remote) == RB_CTL_COMMIT_REMOTE,
	       "the offsets rb_rseq_reserve uses");
_Static_assert(offsetof(struct rb_acct, committed) == 8 &&
		       offsetof(struct rb_acct, committed_remote) == 16 &&
		       offsetof(struct rb_acct, out_from) == 24 &&
		       offsetof(struct rb_acct, out_to) == 32 && sizeof(struct rb_acct) == 64,
	       "an account's words as rb_words_of and the layout say");

static bool is_pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

static unsigned ilog2(uint64_t x)
{
	return 63u - (unsigned)__builtin_clzll(x);
}

static size_t align_up(size_t x, size_t a)
{
	return (x + a - 1) & ~(a - 1);
}

#if RB_CHECKS
static void rb_check_write(const char *str)
{
	ssize_t w = write(2, str, strlen(str));
	(void)w;
}

/* rb_check.h: one line on stderr, then abort; write(2) and abort only
 * (async-signal-safe: the slow paths run in signal handlers too). */
static void rb_check_abort(const char *file, int line, const char *cond)
{
	char num[16];
	size_t i = sizeof(num);
	num[--i] = '\0';
	do
		num[--i] = (char)('0' + line % 10);
	while ((line /= 10) > 0 && i > 0);
	rb_check_write(file);
	rb_check_write(":");
	rb_check_write(num + i);
	rb_check_write(": ring buffer invariant broken: ");
	rb_check_write(cond);
	rb_check_write("\n");
	abort();
}

void (*rb_check_hook)(const char *file, int line, const char *cond) = rb_check_abort;
#endif

/* How much announced work a CPU's buffer can have outstanding: the slots
 * of writers between their reservation and their commit all lie in the N
 * sub-buffers from the oldest incomplete one (equation (3) keeps writers
 * out of the next), so at most N x S bytes, plus one unit per packet
 * opened or closed there (2N); plus, per writer between its announcement
 * and a failed compare-and-store that voids it, up to a slot and a unit
 * that were never reserved. The checks allow RB_CHECK_WRITERS of those at
 * once (the tests run a handful of threads per CPU). */
#define RB_CHECK_WRITERS 16u
static __attribute__((unused)) uint64_t rb_outstanding_max(const struct rb *rb)
{
	return (uint64_t)rb->num_subbuf * (rb->subbuf_size + 2) +
	       RB_CHECK_WRITERS * (rb->subbuf_size + 1);
}

/* Account i (0-based) of a CPU's control area (ringbuffer.h). */
static struct rb_acct *rb_acct_at(const struct rb *rb, struct rb_cpu_ctl *c, uint32_t i)
{
	return (struct rb_acct *)((char *)c + rb->acct_base) + i;
}

/* Work committed on a CPU's buffer: its own words and every account's.
 * Acquire loads: pair with the committers' adds (what they wrote before
 * is visible once their count is). */
static uint64_t rb_done(const struct rb *rb, struct rb_cpu_ctl *c)
{
	uint64_t d = __atomic_load_n(&c->committed, __ATOMIC_ACQUIRE) +
		     __atomic_load_n(&c->committed_remote, __ATOMIC_ACQUIRE);
	for (uint32_t i = 0; i < rb->nr_accts; i++) {
		struct rb_acct *a = rb_acct_at(rb, c, i);
		d += __atomic_load_n(&a->committed, __ATOMIC_ACQUIRE) +
		     __atomic_load_n(&a->committed_remote, __ATOMIC_ACQUIRE);
	}
	return d;
}

/* Work announced on a CPU's buffer, its own word (announced_smp in
 * atomic mode) and every account's. Acquire loads: pair with the
 * announcements (rseq stores, SMP adds). */
static uint64_t rb_announced(const struct rb *rb, struct rb_cpu_ctl *c)
{
	uint64_t a = __atomic_load_n(rb->rseq ? &c->announced : &c->announced_smp,
				     __ATOMIC_ACQUIRE);
	for (uint32_t i = 0; i < rb->nr_accts; i++)
		a += __atomic_load_n(&rb_acct_at(rb, c, i)->announced, __ATOMIC_ACQUIRE);
	return a;
}

/* Outstanding work read the other way round from the completion test:
 * announced first, then what is committed, so concurrent work can only
 * make it smaller, even negative (work announced and committed between
 * the loads): an upper bound of what was outstanding (checks only). */
static __attribute__((unused)) int64_t rb_outstanding_now(const struct rb *rb,
							   struct rb_cpu_ctl *c)
{
	uint64_t a = rb_announced(rb, c);
	return (int64_t)(a - rb_done(rb, c));
}

/* Overwrite mode: the table's physical indexes and the reader's spare
 * are N + 1 different sub-buffers, so no writer is ever given the one the
 * reader holds. Only the reader changes indexes (its swap), so the reader
 * can check this one CPU at a time (checks only; O(N)). */
static __attribute__((unused)) bool rb_phys_permutation(const struct rb *rb,
							 struct rb_cpu_ctl *c)
{
	uint64_t seen[(RB_MAX_NUM_SUBBUF + 1 + 63) / 64];
	uint32_t words = (rb->num_subbuf + 1 + 63) / 64;
	memset(seen, 0, words * sizeof(seen[0]));
	for (uint32_t i = 0; i <= rb->num_subbuf; i++) {
		uint64_t p = i < rb->num_subbuf
				     ? RB_TABLE_IDX(__atomic_load_n(&c->sb[i].table,
								     __ATOMIC_RELAXED))
				     : c->reader_subbuf;
		if (p > rb->num_subbuf || (seen[p / 64] >> (p % 64)) & 1)
			return false;
		seen[p / 64] |= 1ULL << (p % 64);
	}
	return true;
}

bool rb_rseq_usable(void)
{
#if RB_HAVE_RSEQ
	if (&__rseq_size == NULL || &__rseq_offset == NULL || __rseq_size < 20)
		return false;
	return rb_rseq_cpu(rb_rseq_off()) >= 0;
#else
	return false;
#endif
}

int32_t rb_getcpu(void)
{
	return sched_getcpu();
}

/* enum rb_smp_cpu for this process (ringbuffer.h). */
static uint8_t rb_smp_cpu_source(void)
{
	if (rb_rseq_usable())
		return RB_CPU_RSEQ;
#if defined(__x86_64__)
	unsigned a, b, c, d;
	/* CPUID leaf 7: ECX bit 22, RDPID. */
	if (__get_cpuid_count(7, 0, &a, &b, &c, &d) && (c & (1u << 22)))
		return RB_CPU_RDPID;
#endif
	return RB_CPU_GETCPU;
}

/* The CPU whose buffer a thread without a usable rseq area writes to. */
static uint32_t rb_current_cpu(const struct rb *rb)
{
	int cpu = sched_getcpu();
	if (cpu < 0 || (uint32_t)cpu >= rb->nr_cpus)
		cpu = 0;
	return (uint32_t)cpu;
}

static void rb_geom_init(struct rb *rb)
{
	rb->geom.sbfbits = ilog2(rb->subbuf_size);
	rb->geom.nsbbits = ilog2(rb->num_subbuf);
	rb->geom.bfbits = rb->geom.sbfbits + rb->geom.nsbbits;
}

/* Where a CPU's accounts start in its control area: after the sub-buffer
 * array, on a cache line of their own. */
static size_t rb_acct_base(uint32_t num_subbuf)
{
	return align_up(sizeof(struct rb_cpu_ctl) + num_subbuf * sizeof(struct rb_subbuf_ctl),
			RB_CACHELINE);
}

static int rb_layout(const struct rb_config *cfg, size_t *ctl_stride,
		     size_t *data_stride, size_t *total)
{
	if (!is_pow2(cfg->subbuf_size) || cfg->subbuf_size < RB_MIN_SUBBUF_SIZE ||
	    cfg->subbuf_size > RB_MAX_SUBBUF_SIZE)
		return -EINVAL;
	if (!is_pow2(cfg->num_subbuf) || cfg->num_subbuf < 2 ||
	    cfg->num_subbuf > RB_MAX_NUM_SUBBUF)
		return -EINVAL;
	if (cfg->nr_cpus == 0 || cfg->nr_cpus > RB_MAX_CPUS)
		return -EINVAL;
	if (cfg->subbuf_header_size == 0 ||
	    cfg->subbuf_header_size >= cfg->subbuf_size / 2 ||
	    cfg->tsc_bits == 0 || cfg->tsc_bits > 63)
		return -EINVAL;
	if (cfg->nr_accts > RB_MAX_ACCTS)
		return -EINVAL;
	uint64_t nphys = cfg->num_subbuf + (cfg->mode == RB_MODE_OVERWRITE);
	*ctl_stride = align_up(rb_acct_base(cfg->num_subbuf) +
				       cfg->nr_accts * sizeof(struct rb_acct),
			       RB_CACHELINE);
	*data_stride = (size_t)(nphys * cfg->subbuf_size);
	size_t ctl_total = align_up(*ctl_stride * cfg->nr_cpus, 4096);
	if (*data_stride / cfg->subbuf_size != nphys ||
	    (SIZE_MAX - RB_SHM_HEADER_SIZE - ctl_total) / cfg->nr_cpus < *data_stride)
		return -EINVAL;
	*total = RB_SHM_HEADER_SIZE + ctl_total + *data_stride * cfg->nr_cpus;
	return 0;
}

#if defined(__SANITIZE_THREAD__)
/* ThreadSanitizer builds (RINGTRACE_SANITIZE=thread): the bytes of the
 * sub-buffers are handed from writer to writer and from writers to the
 * reader by the per-CPU counters, moved by rseq sequences TSan does not
 * see, so it reports their events and packet headers as races. They are
 * declared benign, the sub-buffers only (the counters are atomics and
 * stay checked); docs/ring-buffer.md says why each kind is ordered. The
 * runtime keeps the range after the unmap. */
void AnnotateBenignRaceSized(const char *file, int line, const volatile void *mem,
			     unsigned long size, const char *description);
#define rb_tsan_benign(p, n)                                                   \
	AnnotateBenignRaceSized(__FILE__, __LINE__, p, n, "ring buffer sub-buffers")
#else
#define rb_tsan_benign(p, n) ((void)0)
#endif

/* Take the geometry from a validated header and build the per-CPU
 * pointer table. Returns 0 or -ENOMEM. */
static int rb_adopt(struct rb *rb, struct rb_shm_header *h, size_t size)
{
	rb->shm = h;
	rb->map_size = size;
	rb->subbuf_size = h->subbuf_size;
	rb->num_subbuf = h->num_subbuf;
	rb->nr_cpus = h->nr_cpus;
	rb->mode = (enum rb_mode)h->mode;
	rb->tsc_bits = h->tsc_bits;
	rb->hdr_size = h->subbuf_header_size;
	rb->rseq = h->flags & RB_SHM_F_RSEQ;
	rb->data = (char *)h + h->data_offset;
	rb->data_stride = h->data_stride;
	rb->initial_count = h->initial_count;
	rb->nr_accts = h->nr_accts;
	rb->acct_base = h->acct_offset;
	rb->acct_off = 0;
	rb_tsan_benign(rb->data, (unsigned long)(rb->nr_cpus * rb->data_stride));
	rb_geom_init(rb);
	rb->commit_mask = (1ULL << (64 - rb->geom.nsbbits)) - 1;
	/* Without a usable rseq area this process only takes the slow
	 * path, which drops its events (it could not follow the rule). */
	rb->rseq_fast = rb->rseq && rb_rseq_usable();
	struct rt_fast_buf *fb = &rb->fast;
	fb->cpu_ctl = (char *)h + h->cpu_ctl_offset;
	fb->cpu_ctl_stride = h->cpu_ctl_stride;
	fb->data = rb->data;
	fb->off_max = (uint64_t)rb->nr_cpus * rb->data_stride - rb->subbuf_size;
	fb->subbuf_size = rb->subbuf_size;
	fb->tsc_max = (1ULL << h->tsc_bits) - 1;
	fb->rseq_off = rb->rseq_fast ? rb_rseq_off() : 0;
	/* Atomic mode: rb_smp_reserve, and how it learns its CPU. */
	rb->smp_fast = !rb->rseq && RB_HAVE_SMP_PAIR;
	rb->smp_cpu = rb_smp_cpu_source();
	rb->smp_cpu_off = rb->smp_cpu == RB_CPU_RSEQ ? rb_rseq_off() : 0;
	fb->nr_cpus = rb->nr_cpus;
	fb->offset_mask = rb->subbuf_size - 1;
	rb->cpus = calloc(rb->nr_cpus, sizeof(*rb->cpus));
	if (!rb->cpus)
		return -ENOMEM;
	for (uint32_t cpu = 0; cpu < rb->nr_cpus; cpu++) {
		rb->cpus[cpu].ctl = (struct rb_cpu_ctl *)(fb->cpu_ctl +
							   (size_t)cpu * fb->cpu_ctl_stride);
		rb->cpus[cpu].data = rb->data + (size_t)cpu * rb->data_stride;
	}
	return 0;
}

int rb_check_sealed(int fd)
{
	int seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0)
		return -errno;
	return (seals & RB_SEALS) == RB_SEALS ? 0 : -EPERM;
}

/* Lay a new buffer set out in `fd` (sized `total` by the caller) with
 * the geometry of `cfg`; on success rb owns fd. Returns 0 or -ENOMEM,
 * -errno of mmap (rb->fd is then -1 and fd the caller's). */
static int rb_init_in(struct rb *rb, const struct rb_config *cfg,
		      const struct rb_client *client, int fd, size_t ctl_stride,
		      size_t data_stride, size_t total)
{
	int ret;
	memset(rb, 0, sizeof(*rb));
	rb->fd = -1;
	/* MAP_POPULATE allocates and maps every page now: steady-state
	 * tracing takes no page fault. */
	void *map = mmap(NULL, total, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_POPULATE, fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	rb->fd = fd;

	struct rb_shm_header *h = map;
	memcpy(h->magic, RB_SHM_MAGIC, sizeof(h->magic));
	h->version = RB_SHM_VERSION;
	h->header_size = sizeof(*h);
	h->total_size = total;
	h->subbuf_size = cfg->subbuf_size;
	h->num_subbuf = cfg->num_subbuf;
	h->nr_cpus = cfg->nr_cpus;
	h->mode = cfg->mode;
	h->tsc_bits = cfg->tsc_bits;
	h->subbuf_header_size = cfg->subbuf_header_size;
	h->flags = (cfg->use_rseq && rb_rseq_usable()) ? RB_SHM_F_RSEQ : 0;
	h->cpu_ctl_offset = RB_SHM_HEADER_SIZE;
	h->cpu_ctl_stride = ctl_stride;
	h->data_offset = RB_SHM_HEADER_SIZE + align_up(ctl_stride * cfg->nr_cpus, 4096);
	h->data_stride = data_stride;
	h->initial_count = cfg->initial_count;
	h->nr_accts = cfg->nr_accts;
	h->acct_offset = (uint32_t)rb_acct_base(cfg->num_subbuf);
	ret = rb_adopt(rb, h, total);
	if (ret < 0)
		goto err_unmap;
	rb->client = *client;

	/* Counters start at initial_count, which must be a multiple of the
	 * buffer size so that pass numbers and packet sequence numbers start
	 * at a whole pass. commit_seq encodes the pass: pass p complete <=>
	 * commit_seq == (p + 1) * S. Nothing is announced yet. */
	uint64_t start = cfg->initial_count & ~((1ULL << rb->geom.bfbits) - 1);
	h->initial_count = start;
	rb->initial_count = start;
	uint64_t start_commit = (start >> rb->geom.bfbits) << rb->geom.sbfbits;
	for (uint32_t cpu = 0; cpu < rb->nr_cpus; cpu++) {
		struct rb_cpu_ctl *c = rb_cpu(rb, cpu);
		c->write_count = start;
		c->read_count = start;
		c->reader_subbuf = rb->num_subbuf;
		c->hot_tag = RB_HOT_TAG_NONE;
		c->hot_off = 0;
		c->announced = 0;	/* stamp in atomic mode */
		c->announced_smp = 0;
		c->committed = 0;
		c->closed = 0;
		c->committed_remote = 0;
		c->void_begin = c->void_end = start;
		c->out_from = start;
		memset((char *)c + rb->acct_base, 0, rb->nr_accts * sizeof(struct rb_acct));
		for (uint32_t i = 0; i < rb->nr_accts; i++)
			rb_acct_at(rb, c, i)->out_from = rb_acct_at(rb, c, i)->out_to = start;
		for (uint32_t i = 0; i < rb->num_subbuf; i++) {
			c->sb[i].commit_seq = start_commit;
			uint64_t pass = (start >> rb->geom.bfbits) - 1;
			c->sb[i].table = RB_TABLE_MAKE(i, pass & RB_TABLE_TAG_MASK, 0);
		}
	}
	return 0;

err_unmap:
	munmap(map, total);
	rb->fd = -1;
	return ret;
}

int rb_create(struct rb *rb, const struct rb_config *cfg,
	      const struct rb_client *client)
{
	size_t ctl_stride, data_stride, total;
	int ret = rb_layout(cfg, &ctl_stride, &data_stride, &total);
	if (ret)
		return ret;
	int fd = memfd_create("ringtrace-buffer", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	/* Sealed at its size: every process that maps it (producers,
	 * consumers) can rely on its pages staying there, a truncation
	 * would turn their next access into SIGBUS (rb_check_sealed). */
	if (ftruncate(fd, (off_t)total) < 0 ||
	    fcntl(fd, F_ADD_SEALS, RB_SEALS | F_SEAL_SEAL) < 0) {
		ret = -errno;
		goto err_close;
	}
	ret = rb_init_in(rb, cfg, client, fd, ctl_stride, data_stride, total);
	if (ret < 0)
		goto err_close;
	return 0;

err_close:
	close(fd);
	return ret;
}

int rb_create_in(struct rb *rb, const struct rb_config *cfg,
		 const struct rb_client *client, int fd)
{
	size_t ctl_stride, data_stride, total;
	int ret = rb_layout(cfg, &ctl_stride, &data_stride, &total);
	if (ret)
		return ret;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_size != 0)
		return -EINVAL;
	/* Blocks allocated now (posix_fallocate returns the error itself):
	 * a full file system fails here, not as SIGBUS at some later
	 * event's first touch of a page. */
	ret = posix_fallocate(fd, 0, (off_t)total);
	if (ret)
		return -ret;
	ret = rb_init_in(rb, cfg, client, fd, ctl_stride, data_stride, total);
	if (ret < 0 && ftruncate(fd, 0) < 0)
		ret = -errno;
	return ret;
}

void rb_destroy(struct rb *rb)
{
	free(rb->cpus);
	rb->cpus = NULL;
	if (rb->shm)
		munmap(rb->shm, rb->map_size);
	if (rb->fd >= 0)
		close(rb->fd);
	rb->shm = NULL;
	rb->fd = -1;
}

int rb_attach(struct rb *rb, void *map, size_t size)
{
	const struct rb_shm_header *h = map;
	if (size < RB_SHM_HEADER_SIZE || memcmp(h->magic, RB_SHM_MAGIC, 8) != 0)
		return -EINVAL;
	if (h->version != RB_SHM_VERSION)
		return -EPROTO;
	if (h->header_size != sizeof(*h))
		return -EINVAL;
	struct rb_config cfg = {
		.subbuf_size = h->subbuf_size,
		.num_subbuf = h->num_subbuf,
		.nr_cpus = h->nr_cpus,
		.mode = (enum rb_mode)h->mode,
		.tsc_bits = h->tsc_bits,
		.subbuf_header_size = h->subbuf_header_size,
		.nr_accts = h->nr_accts,
	};
	size_t ctl_stride, data_stride, total;
	if (h->mode > RB_MODE_OVERWRITE ||
	    rb_layout(&cfg, &ctl_stride, &data_stride, &total) != 0)
		return -EINVAL;
	if (h->total_size != total || total > size ||
	    h->cpu_ctl_offset != RB_SHM_HEADER_SIZE ||
	    h->cpu_ctl_stride != ctl_stride || h->data_stride != data_stride ||
	    h->acct_offset != rb_acct_base(cfg.num_subbuf) ||
	    h->data_offset != RB_SHM_HEADER_SIZE + align_up(ctl_stride * cfg.nr_cpus, 4096))
		return -EINVAL;
	memset(rb, 0, sizeof(*rb));
	rb->fd = -1;
	int ret = rb_adopt(rb, map, size);
	rb->shm = NULL; /* not ours to unmap */
	return ret;
}

void rb_count_lost(struct rb *rb, uint32_t cpu)
{
	if (cpu >= rb->nr_cpus)
		cpu = 0;
	/* Relaxed: a statistic; read by the packet writer (subbuf_end) and
	 * rb_get_stats, which need no ordering with the data. */
	__atomic_fetch_add(&rb_cpu(rb, cpu)->events_lost, 1, __ATOMIC_RELAXED);
}

void rb_get_stats(const struct rb *rb, uint32_t cpu, struct rb_stats *st)
{
	struct rb_cpu_ctl *c = rb_cpu(rb, cpu);
	st->bytes_reserved = __atomic_load_n(&c->write_count, __ATOMIC_RELAXED) -
			     rb->initial_count;
	st->bytes_consumed = __atomic_load_n(&c->read_count, __ATOMIC_RELAXED) -
			     rb->initial_count;
	st->events_lost = __atomic_load_n(&c->events_lost, __ATOMIC_RELAXED);
	st->subbufs_lost = __atomic_load_n(&c->subbufs_lost, __ATOMIC_RELAXED);
}

/* rb_subbuf_try_complete on the passes write_count has left, newest
 * first, up to N of them: a pass may wait for work announced in a later
 * sub-buffer (the counts are the CPU's), so the commit that ends the wait
 * completes them all. Stops at the first pass already complete or not
 * completable now (the reader and the writers entering a sub-buffer help
 * the older ones, as after a migrated commit). */
static void rb_complete_behind(struct rb *rb, uint32_t cpu)
{
	struct rb_cpu_ctl *c = rb_cpu(rb, cpu);
	const uint64_t S = rb->subbuf_size;
	uint64_t at = rb_mask_high_u64(__atomic_load_n(&c->write_count, __ATOMIC_ACQUIRE),
				       rb->geom.sbfbits);
	for (uint32_t i = 0; i < rb->num_subbuf && at != rb->initial_count; i++) {
		at -= S;
		uint32_t idx = rb_subbuf_index(rb, at);
		uint64_t seq = __atomic_load_n(&c->sb[idx].commit_seq, __ATOMIC_RELAXED);
		if (rb_mask_low_u64(seq, 64 - rb->geom.nsbbits) == rb_ctx_target(rb, at) ||
		    !rb_subbuf_try_complete(rb, cpu, idx, at))
			return;
	}
}

RB_NOINLINE void rb_commit_slow(struct rb *rb, const struct rb_slot *f,
				uint64_t remote_units)
{
	struct rb_cpu_ctl *c = rb_cpu(rb, (uint32_t)f->cpu);
	/* SMP add, sequentially consistent: orders the slot's data before the
	 * count (pairs with the acquire loads in rb_subbuf_try_complete) and
	 * the count before our load of write_count. */
	if (remote_units)
		__atomic_fetch_add(rb_remote_word(c, f->com), remote_units, __ATOMIC_SEQ_CST);
	uint64_t wc = __atomic_load_n(&c->write_count, __ATOMIC_RELAXED);
	if (rb_left_subbuf(wc, f->offset, f->room))
		rb_complete_behind(rb, (uint32_t)f->cpu);
}

/* The commit bookkeeping of a slot reserved at `offset` in `cpu`'s buffer
 * (all of struct rb_slot but addr and tsc). */
static void rb_slot_at(struct rb *rb, uint32_t cpu, uint64_t offset, struct rb_slot *f)
{
	f->ctl = (char *)rb_cpu(rb, cpu);
	f->com = rb_com_word(rb, f->ctl);
	f->offset = offset;
	f->room = rb_room(rb, offset);
	f->rseq_off = rb->fast.rseq_off;
	f->cpu = (int32_t)cpu;
}

/* Commit `units` announced by the slow path on `cpu`'s buffer: locally
 * when on that CPU in rseq mode, remotely otherwise; then complete the
 * passes write_count has left (the switch's own packet writes may have
 * been the last thing they waited for). */
static void rb_commit_units(struct rb *rb, bool smp, uint32_t cpu, uint64_t units)
{
	struct rb_cpu_ctl *c = rb_cpu(rb, cpu);
	uint64_t *com = rb_com_word(rb, (char *)c);
#if RB_HAVE_RSEQ
	/* The asm's "memory" clobber orders the packet writes before the
	 * add, as in rb_commit_rseq. */
	if (rb->rseq && !smp && rb_rseq_add(com, units, (int32_t)cpu, rb_rseq_off()) == 0)
		units = 0;
#else
	(void)smp;
#endif
	/* Seq-cst: as rb_commit_slow's add. */
	if (units)
		__atomic_fetch_add(rb_remote_word(c, com), units, __ATOMIC_SEQ_CST);
	rb_complete_behind(rb, cpu);
}

RB_NOINLINE void rb_unannounce(struct rb *rb, uint32_t cpu, uint64_t units)
{
	rb_commit_units(rb, false, cpu, units);
}

/*
 * Algorithm 3 lines 3-7 (and the reader's help): if the pass of sub-buffer
 * `idx` holding `offset` is complete, move commit_seq from the previous
 * pass's value to this one by CAS, and in overwrite mode clear the writer
 * flag so the reader may swap the sub-buffer out. Returns whether the pass
 * is complete (now or before).
 *
 * Announced bytes (the completion test): a pass is complete once
 * write_count has left it and every unit of work announced on this CPU
 * has been committed. Every writer that writes into a sub-buffer after
 * its LCAS announces first (the library's reservation in the same store
 * as the LCAS, the slow path before it); the call sites' one-section
 * events write before their LCAS, which is their commit. The counts are
 * free-running and only grow, and are read in this order: committed
 * first, then write_count, then announced. So equality means nothing was
 * outstanding when announced was read, and nothing can be announced for a
 * pass after write_count left it (its writers reserve before).
 */
RB_NOINLINE bool rb_subbuf_try_complete(struct rb *rb, uint32_t cpu,
					uint32_t idx, uint64_t offset)
{
	struct rb_cpu_ctl *c = rb_cpu(rb, cpu);
	struct rb_subbuf_ctl *s = &c->sb[idx];
	unsigned bits = 64 - rb->geom.nsbbits;
	uint64_t target = rb_ctx_target(rb, offset);
	/* Acquire: pairs with the CAS that published the previous pass. */
	uint64_t raw = __atomic_load_n(&s->commit_seq, __ATOMIC_ACQUIRE);
	uint64_t seq = rb_mask_low_u64(raw, bits);
	if (seq == target)
		return true;
	if (seq != rb_mask_low_u64(target - rb->subbuf_size, bits))
		return false;
	/* Acquire, in this order (see above): pairs with the committers'
	 * adds (their slots' data is visible), then with the LCAS that
	 * left the pass (the data the one-section events wrote before it),
	 * then with the announcements. With accounts, every committed word
	 * is read before write_count and every announced word after it:
	 * each only grows and each account's announced bounds its committed
	 * words, so equality of the sums still means nothing was
	 * outstanding when write_count was read. */
	uint64_t done = rb_done(rb, c);
	uint64_t wc = __atomic_load_n(&c->write_count, __ATOMIC_ACQUIRE);
	uint64_t announced = rb_announced(rb, c);
	/* Outstanding work is never negative (every commit was announced
	 * before, and `done` was read first) and bounded. */
	RB_ASSERT((int64_t)(announced - done) >= 0);
	RB_ASSERT(rb_outstanding_now(rb, c) <= (int64_t)rb_outstanding_max(rb));
	uint64_t end = rb_mask_high_u64(offset, rb->geom.sbfbits) + rb->subbuf_size;
	if ((int64_t)(wc - end) < 0 || announced != done)
		return false;
	/* Seq-cst CAS from the previous pass's value read above: publishes
	 * the pass; pairs with the acquire load of commit_seq in
	 * rb_get_subbuf (equation (2)). Losing the race means another helper
	 * published it. */
	__atomic_compare_exchange_n(&s->commit_seq, &raw, target, false,
				    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
	if (rb->mode == RB_MODE_OVERWRITE) {
		uint64_t pass = (offset >> rb->geom.bfbits) & RB_TABLE_TAG_MASK;
		uint64_t e = __atomic_load_n(&s->table, __ATOMIC_RELAXED);
		while ((e & RB_TABLE_FLAG) && RB_TABLE_TAG(e) == pass) {
			/* Release: our reads of the entry happen before the
			 * reader may take the sub-buffer (its acquire CAS). */
			if (__atomic_compare_exchange_n(&s->table, &e,
							e & ~RB_TABLE_FLAG, false,
							__ATOMIC_RELEASE,
							__ATOMIC_RELAXED))
				break;
		}
	}
	return true;
}

/*
 * Set the writer reference flag and this pass's tag on the table entry of
 * sub-buffer `idx` (Algorithm 2 line 8). From then on the reader cannot
 * exchange it until the pass is complete. Returns the physical index.
 */
static RB_NOINLINE uint32_t rb_table_acquire_slow(struct rb *rb, uint32_t cpu,
						  uint32_t idx, uint64_t offset)
{
	struct rb_subbuf_ctl *s = &rb_cpu(rb, cpu)->sb[idx];
	uint64_t pass = (offset >> rb->geom.bfbits) & RB_TABLE_TAG_MASK;
	uint64_t e = __atomic_load_n(&s->table, __ATOMIC_ACQUIRE);
	for (;;) {
		/* Untrusted shared memory: an index out of the N + 1
		 * physical sub-buffers means it was corrupted; write into the
		 * logical sub-buffer instead (the trace may be garbage, the
		 * writes stay inside the mapping). */
		RB_ASSERT(RB_TABLE_IDX(e) <= rb->num_subbuf);
		if (RB_TABLE_IDX(e) > rb->num_subbuf)
			return idx;
		if ((e & RB_TABLE_FLAG) && RB_TABLE_TAG(e) == pass)
			return RB_TABLE_IDX(e);
		uint64_t n = RB_TABLE_MAKE(RB_TABLE_IDX(e), pass, 1);
		/* Acq-rel CAS: pairs with the reader's swap CAS; once it
		 * succeeds the physical index is ours for the whole pass. */
		if (__atomic_compare_exchange_n(&s->table, &e, n, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return RB_TABLE_IDX(n);
	}
}

/*
 * Physical sub-buffer that holds `offset` for a writer. Discard mode: the
 * logical index itself. Overwrite mode: the table entry, which must carry
 * this pass's tag and the writer flag before anything is written (a nested
 * writer can get here before the writer that switched in has set it).
 */
static uint32_t rb_writer_phys(struct rb *rb, uint32_t cpu, uint64_t offset)
{
	uint32_t idx = rb_subbuf_index(rb, offset);
	if (rb->mode == RB_MODE_DISCARD)
		return idx;
	/* Acquire: pairs with the CAS in rb_table_acquire_slow() or the
	 * reader's swap, so the index we use is the one the flag protects. */
	uint64_t e = __atomic_load_n(&rb_cpu(rb, cpu)->sb[idx].table,
				     __ATOMIC_ACQUIRE);
	uint64_t pass = (offset >> rb->geom.bfbits) & RB_TABLE_TAG_MASK;
	/* Shared memory another process can write: an index past the N + 1
	 * physical sub-buffers goes to the slow path, which never returns
	 * one. */
	if ((e & RB_TABLE_FLAG) && RB_TABLE_TAG(e) == pass &&
	    RB_TABLE_IDX(e) <= rb->num_subbuf)
		return RB_TABLE_IDX(e);
	return rb_table_acquire_slow(rb, cpu, idx, offset);
}

/* Store the hot word of `cpu`'s buffer for the sub-buffer holding
 * `offset`, whose physical sub-buffer is `hoff` bytes from rb->data
 * (ringbuffer.h: in rseq mode only from that CPU, and only while
 * write_count is in that sub-buffer). */
static void rb_hot_store(struct rb *rb, uint32_t cpu, uint64_t offset, uint64_t hoff)
{
	struct rb_cpu_ctl *c = rb_cpu(rb, cpu);
	uint64_t tag = RB_HOT_TAG(offset, rb->subbuf_size);
	RB_ASSERT(hoff <= rb->fast.off_max);
#if RB_HAVE_RSEQ
	if (rb->rseq) {
		rb_rseq_hot_store((char *)c, tag, hoff, rb->subbuf_size - 1, (int32_t)cpu,
				  rb_rseq_off());
		return;
	}
#endif
	/* Relaxed: atomic mode has no fast path that reads them. */
	__atomic_store_n(&c->hot_off, hoff, __ATOMIC_RELAXED);
	__atomic_store_n(&c->hot_tag, tag, __ATOMIC_RELAXED);
}

/* Fill the slot's address once its offset is reserved, and refresh the
 * CPU's hot word for the fast path (ringbuffer.h: any writer holding the
 * pass may store it; a stale store only costs a later slow path). */
static void rb_ctx_place(struct rb *rb, struct rb_ctx *ctx, uint32_t cpu,
			 uint64_t offset)
{
	/* A slot never crosses a sub-buffer's end. */
	RB_ASSERT((offset & (rb->subbuf_size - 1)) + ctx->slot_size <= rb->subbuf_size);
	char *sub = rb_phys_addr(rb, cpu, rb_writer_phys(rb, cpu, offset));
	rb_hot_store(rb, cpu, offset, (uint64_t)(sub - rb->data));
	rb_slot_at(rb, cpu, offset, &ctx->r);
	ctx->r.addr = sub + (offset & (rb->subbuf_size - 1));
}

/* Atomic mode's reservation of [old, new) up to its swap, shared by
 * rb_cas_announce_split and rb_cas_stamp: the work done read before
 * the announcement (rb_done_smp), the announcement (an SMP add on this
 * process's announced word: its account's, or the CPU's own; seq-cst:
 * visible before the reservation, as the completion test reads
 * write_count, then announced), a closed buffer refused when `writer`
 * (closed read after the announcement: seq-cst, as the closing flush's
 * store of it; the announcement is then voided with a commit), and the
 * dead writers' bounds (rb_bounds_smp). Returns 2 when refused, 0 when
 * the caller swaps (and voids the announcement if its swap fails). */
static int rb_smp_announce(struct rb *rb, uint32_t cpu, uint64_t old, uint64_t new,
			   uint64_t units, bool writer)
{
	struct rb_cpu_ctl *c = rb_cpu(rb, cpu);
	uint64_t done = rb_done_smp(rb, c);
	uint64_t ann = __atomic_add_fetch(rb_ann_word(rb, (char *)c), units, __ATOMIC_SEQ_CST);
	if (writer && __atomic_load_n(&c->closed, __ATOMIC_SEQ_CST)) {
		rb_commit_units(rb, true, cpu, units);
		return 2;
	}
	rb_bounds_smp(rb, c, ann, done, old, new, units);
	return 0;
}

/* An SMP reservation in two steps: announce (an SMP add on this
 * process's announced word: its account's, or the CPU's own), then CAS
 * write_count; if the CAS fails, void the announcement with a commit, as
 * the rseq path does. Seq-cst: the announcement is visible before the
 * reservation (the completion test reads write_count, then announced). A
 * writer refuses a closed buffer (checked after its announcement:
 * seq-cst, as the closing flush's store of closed). Atomic mode without
 * the 16-byte swap (not x86-64), and rb_cas_announce's with an account.
 * Returns as rb_cas_announce. */
static int rb_cas_announce_split(struct rb *rb, uint32_t cpu, uint64_t old, uint64_t new,
				 uint64_t units, bool writer)
{
	struct rb_cpu_ctl *c = rb_cpu(rb, cpu);
	if (rb_smp_announce(rb, cpu, old, new, units, writer))
		return 2;
	if (__atomic_compare_exchange_n(&c->write_count, &old, new, false,
					__ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		return 0;
	rb_commit_units(rb, true, cpu, units);
	return 1;
}

#if RB_HAVE_SMP_PAIR
/* An SMP reservation in an rseq-mode buffer (the flush of a CPU no thread
 * of ours can run on, recovery's close: no rseq section runs there): one
 * lock cmpxchg16b of {write_count, announced} from {old, announced read}
 * to {new, + units}, retried while only announced moved; with an account
 * (whose announced word is elsewhere), rb_cas_announce_split. Returns 0,
 * 1 if write_count is not `old` (nothing stored), 2 if a writer found
 * the buffer closed (nothing stored). Sequentially consistent (a locked
 * instruction): orders the clock read and the checks before it with the
 * slot's use after it, and pairs with the acquire loads of the
 * completion test. */
static int rb_cas_announce(struct rb *rb, uint32_t cpu, uint64_t old, uint64_t new,
			   uint64_t units, bool writer)
{
	if (rb->acct_off)
		return rb_cas_announce_split(rb, cpu, old, new, units, writer);
	struct rb_cpu_ctl *c = rb_cpu(rb, cpu);
	uint64_t a = __atomic_load_n(&c->announced, __ATOMIC_ACQUIRE);
	for (;;) {
		/* A writer refuses a closed buffer (acquire, after the load
		 * of announced). */
		if (writer && __atomic_load_n(&c->closed, __ATOMIC_ACQUIRE))
			return 2;
		/* out_from (ringbuffer.h): nothing outstanding at `a`, and the
		 * exchange below succeeds only if announced is still `a`.
		 * Relaxed store: the locked exchange after it orders it (x86),
		 * and it is read only once the writers are gone. */
		if (a - __atomic_load_n(&c->committed, __ATOMIC_ACQUIRE) -
			    __atomic_load_n(&c->committed_remote, __ATOMIC_ACQUIRE) ==
		    0)
			__atomic_store_n(&c->out_from, old, __ATOMIC_RELAXED);
		uint64_t lo = old, hi = a;
		if (rb_cas_pair(&c->write_count, &lo, &hi, new, a + units))
			return 0;
		if (lo != old)
			return 1;
		a = hi;
	}
}
#else
static int rb_cas_announce(struct rb *rb, uint32_t cpu, uint64_t old, uint64_t new,
			   uint64_t units, bool writer)
{
	return rb_cas_announce_split(rb, cpu, old, new, units, writer);
}
#endif

#if RB_HAVE_SMP_PAIR
/* Atomic mode's reservation on x86-64 (rb->smp_fast; ringbuffer.h,
 * stamp): announce (an SMP add on this process's announced word), the
 * dead writers' bounds (rb_bounds_smp), then one lock cmpxchg16b of
 * {write_count, stamp} from {old, st_old}, the pair the caller read, to
 * {new, st_new}, its timestamp (no older than st_old); if the swap fails, void the announcement with a commit. A
 * writer refuses a closed buffer: closed is read after the announcement
 * and after the caller's loads of the pair (seq-cst, as the closing
 * flush's store of closed and its move of the pair, rb_close_smp: a
 * swap from a pair read before that move fails). Seq-cst: the
 * announcement is visible before the reservation (the completion test
 * reads write_count, then announced). Returns as rb_cas_announce. */
static int rb_cas_stamp(struct rb *rb, uint32_t cpu, uint64_t old, uint64_t new,
			uint64_t st_old, uint64_t st_new, uint64_t units, bool writer)
{
	struct rb_cpu_ctl *c = rb_cpu(rb, cpu);
	if (rb_smp_announce(rb, cpu, old, new, units, writer))
		return 2;
	if (rb_cas_pair(&c->write_count, &old, &st_old, new, st_new))
		return 0;
	rb_commit_units(rb, true, cpu, units);
	return 1;
}
#endif

/* Atomic mode with the stamp pair (rb->smp_fast): the timestamp of a
 * reservation from a pair whose stamp is `stamp`: the clock read `tsc`,
 * raised to stamp if older (ringbuffer.h, stamp). Otherwise `tsc`. */
static uint64_t rb_stamp_after(const struct rb *rb, uint64_t tsc, uint64_t stamp)
{
	return rb->smp_fast && (int64_t)(tsc - stamp) < 0 ? stamp : tsc;
}

/*
 * The LCAS of Algorithms 2 and 4, which also announces `units` of work
 * (rb_subbuf_try_complete): rseq mode, two sections on the owning CPU, the
 * announcement (a local add) and the compare-and-store, whose failure
 * voids the announcement (a commit); `smp` in rseq mode, one SMP
 * compare-and-swap of both words; atomic mode, the announcement and the
 * compare-and-swap of {write_count, stamp} from {old, st_old} to {new,
 * st_new} (rb_cas_stamp). A `writer` (not the flush's own
 * reservations) also refuses a closed buffer (ringbuffer.h, closed).
 * Returns 0 when reserved and announced, -1 (rseq: not on `cpu`) or 1
 * (write_count moved) when neither: retry; 2 (closed) when neither: give
 * up.
 * The slow path does not use rb_rseq_reserve's single 16-byte store:
 * its reservations may leave a sub-buffer, and a reader on another CPU
 * must not see write_count leave before the announcement (the two halves
 * of a plain 16-byte store are only atomic on CPUs that promise it).
 */
static int rb_lcas_announce(struct rb *rb, bool smp, struct rb_cpu_ctl *c,
			    uint32_t cpu, uint64_t old, uint64_t new, uint64_t units,
			    bool writer, uint64_t st_old, uint64_t st_new)
{
#if RB_HAVE_SMP_PAIR
	if (rb->smp_fast)
		return rb_cas_stamp(rb, cpu, old, new, st_old, st_new, units, writer);
#else
	(void)st_old;
	(void)st_new;
#endif
#if RB_HAVE_RSEQ
	if (rb->rseq && !smp) {
		struct rb_words w = rb_words_of(rb, (char *)c);
		if (rb_rseq_add(w.ann, units, (int32_t)cpu, rb_rseq_off()) != 0)
			return -1;
		int r = rb_rseq_place(&c->write_count, writer ? &c->closed : NULL, &w, old, new,
				      units, (int32_t)cpu, rb_rseq_off());
		if (r == 0)
			return 0;
		rb_commit_units(rb, smp, cpu, units);
		return r == 2 ? 2 : 1;
	}
#else
	(void)smp;
	(void)c;
#endif
	return rb_cas_announce(rb, cpu, old, new, units, writer);
}

/* The CPU to reserve on, or -1 if this thread may not write (rseq mode
 * without a registered rseq area: it could not take part in the rule). */
static int32_t rb_reserve_cpu(struct rb *rb)
{
#if RB_HAVE_RSEQ
	if (rb->rseq) {
		if (&__rseq_size == NULL || __rseq_size < 20)
			return -1;
		int32_t cpu = rb_rseq_cpu(rb_rseq_off());
		return (uint32_t)cpu < rb->nr_cpus ? cpu : -1;
	}
#endif
	return (int32_t)rb_current_cpu(rb);
}

/* PUSH_READER: in overwrite mode, move read_count past sub-buffers the
 * writer is about to overwrite (equation (1) true at `begin`). */
static void rb_push_reader(struct rb *rb, struct rb_cpu_ctl *c, uint64_t begin)
{
	uint64_t rcnt = __atomic_load_n(&c->read_count, __ATOMIC_ACQUIRE);
	while (rb_eq1_buffer_full_u64(&rb->geom, begin, rcnt)) {
		uint64_t next = rb_mask_high_u64(rcnt, rb->geom.sbfbits) +
				rb->subbuf_size;
		/* Seq-cst CAS: pairs with the reader's CAS in rb_put_subbuf;
		 * exactly one of us moves read_count past a sub-buffer. */
		if (__atomic_compare_exchange_n(&c->read_count, &rcnt, next,
						false, __ATOMIC_SEQ_CST,
						__ATOMIC_ACQUIRE))
			__atomic_fetch_add(&c->subbufs_lost, 1, __ATOMIC_RELAXED);
	}
}

/* SWITCH_OLDSUBBUF / END_SWITCH_CURRENT: close the packet that holds
 * offset `at` (its last used byte is at - 1 or it is exactly full). */
static void rb_close_packet(struct rb *rb, uint32_t cpu, uint64_t at,
			    uint64_t used, uint64_t tsc)
{
	struct rb_cpu_ctl *c = rb_cpu(rb, cpu);
	uint64_t start = at - 1;	/* an offset inside the packet */
	/* A packet holds at least its header (a flush never closes an
	 * empty one) and fits its sub-buffer. */
	RB_ASSERT(used >= rb->hdr_size && used <= rb->subbuf_size);
	uint32_t phys = rb_writer_phys(rb, cpu, start);
	uint64_t lost = __atomic_load_n(&c->events_lost, __ATOMIC_RELAXED);
	rb->client.subbuf_end(rb->client.priv, cpu, rb_phys_addr(rb, cpu, phys),
			      tsc, used, lost);
	__atomic_store_n(&c->records_lost_reported, lost, __ATOMIC_RELAXED);
}

/*
 * Algorithms 1 and 2 in full: the reservation that opens or crosses a
 * sub-buffer boundary, or that fills one exactly, and every reservation in
 * SMP-atomic mode. `want_cpu` >= 0 forces the buffer (flush); it must be
 * the CPU we run on in rseq mode.
 */
/* rb_reserve_on flags. */
#define RB_RES_SMP 0x1		/* SMP CAS even in rseq mode (CPU unusable) */
#define RB_RES_QUIET 0x2	/* the flush's own reservation: failure is not an
				 * event lost, and a closed buffer takes it */

static void rb_lost_unless(struct rb *rb, uint32_t cpu, unsigned flags)
{
	if (!(flags & RB_RES_QUIET))
		rb_count_lost(rb, cpu);
}

/* Whether write_count moved since the reservation read it as `wc`: then
 * what it read after wc (a sub-buffer's commit_seq, read_count) may be
 * newer than wc, and equation (3) or (1) failing on them says nothing
 * about the sub-buffer wc points to (that thread was preempted, or a
 * signal handler recorded, between the loads, and other writers filled
 * and completed that sub-buffer meanwhile): the caller retries instead
 * of dropping the event. write_count only grows, so when it has not
 * moved, the loads between the two of it saw it current. Acquire: after
 * those loads. */
static bool rb_wc_moved(struct rb_cpu_ctl *c, uint64_t wc)
{
	return __atomic_load_n(&c->write_count, __ATOMIC_ACQUIRE) != wc;
}

static int rb_reserve_on(struct rb *rb, struct rb_ctx *ctx, int32_t want_cpu,
			 unsigned flags)
{
	const bool smp = flags & RB_RES_SMP;
	const uint64_t S = rb->subbuf_size;
	for (;;) {
		int32_t cpu = want_cpu >= 0 ? want_cpu : rb_reserve_cpu(rb);
		if (cpu < 0) {
			rb_lost_unless(rb, 0, flags);
			return -ENOBUFS;
		}
		struct rb_cpu_ctl *c = rb_cpu(rb, (uint32_t)cpu);

		/* TRY_RESERVE_SLOT (Algorithm 1). */
		uint64_t wc = __atomic_load_n(&c->write_count, __ATOMIC_ACQUIRE);
		/* Atomic mode: the pair's stamp (acquire: closed is read
		 * after it, rb_cas_stamp); the swap checks the two whole. */
		uint64_t last = rb->smp_fast ? __atomic_load_n(&c->stamp, __ATOMIC_ACQUIRE)
					     : __atomic_load_n(&c->last_tsc, __ATOMIC_RELAXED);
		uint64_t tsc = rb_stamp_after(rb, rb->client.clock_read(), last);
		bool full = ((tsc - last) >> rb->tsc_bits) != 0;
		uint64_t slot = (full ? ctx->hdr_full : ctx->hdr_compact) +
				(uint64_t)ctx->payload_size;
		uint64_t in_sb = wc & (S - 1);
		uint64_t begin = wc;
		bool switch_old = false, switch_new = false;

		if (in_sb != 0 && in_sb + slot > S) {
			switch_old = true;
			begin = rb_mask_high_u64(wc, rb->geom.sbfbits) + S;
		}
		if ((begin & (S - 1)) == 0) {
			switch_new = true;
			/* First event of a packet: its delta is from the
			 * packet's timestamp_begin, which is this tsc. */
			full = false;
			slot = ctx->hdr_compact + (uint64_t)ctx->payload_size;
			if (rb->hdr_size + slot > S) {
				rb_lost_unless(rb, (uint32_t)cpu, flags);
				return -EMSGSIZE;
			}
			uint32_t nidx = rb_subbuf_index(rb, begin);
			/* Equation (3): the sub-buffer we enter must be
			 * complete for its previous pass. Help complete it
			 * first (a migrated committer may have missed it). */
			uint64_t wcommit = __atomic_load_n(&c->sb[nidx].commit_seq,
							   __ATOMIC_ACQUIRE);
			/* commit_seq moves one pass at a time, in order: the
			 * sub-buffer we are to enter for pass p has completed
			 * pass p - 2 (writers entered p - 1 only then) and not
			 * pass p (no writer has entered it), unless write_count
			 * has moved since we read it (then the LCAS fails). */
			RB_ASSERT(rb_mask_low_u64(rb_ctx_target(rb, begin) - wcommit,
						  64 - rb->geom.nsbbits) - S <= S ||
				  __atomic_load_n(&c->write_count, __ATOMIC_ACQUIRE) != wc);
			if (!rb_eq3_fully_committed_u64(&rb->geom, begin, wcommit)) {
				rb_subbuf_try_complete(rb, (uint32_t)cpu, nidx,
						       begin - (1ULL << rb->geom.bfbits));
				wcommit = __atomic_load_n(&c->sb[nidx].commit_seq,
							  __ATOMIC_ACQUIRE);
			}
			if (!rb_eq3_fully_committed_u64(&rb->geom, begin, wcommit)) {
				if (rb_wc_moved(c, wc))
					continue;
				rb_lost_unless(rb, (uint32_t)cpu, flags);
				return -ENOBUFS;
			}
			/* Equation (1): buffer full. Acquire pairs with the
			 * reader's CAS in rb_put_subbuf: its reads of the
			 * sub-buffer are done before we overwrite it. */
			uint64_t rcnt = __atomic_load_n(&c->read_count,
							__ATOMIC_ACQUIRE);
			if (rb->mode == RB_MODE_DISCARD &&
			    rb_eq1_buffer_full_u64(&rb->geom, begin, rcnt)) {
				if (rb_wc_moved(c, wc))
					continue;
				rb_lost_unless(rb, (uint32_t)cpu, flags);
				return -ENOBUFS;
			}
		} else if (in_sb + slot > S) {
			rb_lost_unless(rb, (uint32_t)cpu, flags);
			return -EMSGSIZE;
		}
		uint64_t start = switch_new ? begin + rb->hdr_size : begin;
		uint64_t end = start + slot;

		/* Algorithm 2 line 6: LCAS of write_count, announcing the
		 * slot and, when packets are closed or opened below, one unit
		 * for their header writes (rb_subbuf_try_complete). */
		const uint64_t job = switch_old || switch_new;
		int l = rb_lcas_announce(rb, smp, c, (uint32_t)cpu, wc, end, slot + job,
					 !(flags & RB_RES_QUIET), last, tsc);
		/* Closed (rb_close_cpu): not recorded, counted as discarded
		 * (the next packet of the CPU's stream, or the header-only
		 * packet of the next final flush, carries the count). */
		if (l == 2) {
			rb_lost_unless(rb, (uint32_t)cpu, flags);
			return -ESHUTDOWN;
		}
		if (l != 0) {
			if (want_cpu >= 0 && rb->rseq && !smp &&
			    rb_rseq_cpu(rb_rseq_off()) != want_cpu)
				return -EAGAIN;
			continue;
		}
		if (!rb->smp_fast)
			__atomic_store_n(&c->last_tsc, tsc, __ATOMIC_RELAXED);
		/* commit_seq moves one pass at a time, in order: the
		 * sub-buffer we entered for pass p has completed pass p - 1
		 * (equation (3)) and cannot complete pass p before our
		 * announced unit is committed. */
		RB_ASSERT(!switch_new ||
			  rb_mask_low_u64(__atomic_load_n(&c->sb[rb_subbuf_index(rb, begin)]
								 .commit_seq,
							 __ATOMIC_RELAXED),
					  64 - rb->geom.nsbbits) ==
				  rb_mask_low_u64(rb_ctx_target(rb, begin) - rb->subbuf_size,
						  64 - rb->geom.nsbbits));

		/* Out-of-order part (Algorithm 2 lines 7-11). */
		if (switch_new && rb->mode == RB_MODE_OVERWRITE)
			rb_push_reader(rb, c, begin);
		if (switch_old)
			rb_close_packet(rb, (uint32_t)cpu, begin, in_sb, tsc);
		if (switch_new) {
			uint32_t phys = rb_writer_phys(rb, (uint32_t)cpu, begin);
			rb->client.subbuf_begin(rb->client.priv, (uint32_t)cpu,
						rb_phys_addr(rb, (uint32_t)cpu, phys),
						tsc, rb_packet_seq(rb, begin));
		}
		if ((end & (S - 1)) == 0 && slot > 0)
			rb_close_packet(rb, (uint32_t)cpu, end, S, tsc);
		/* The packet writes are done; the slot's units are the
		 * caller's to commit (rb_commit). */
		if (job)
			rb_commit_units(rb, smp, (uint32_t)cpu, 1);

		ctx->r.tsc = tsc;
		ctx->slot_size = (uint32_t)slot;
		ctx->full_tsc = full;
		rb_ctx_place(rb, ctx, (uint32_t)cpu, start);
		/* The passes this reservation left wait for its slot's units
		 * too (the counts are the CPU's): its commit completes them
		 * (room 0: rb_left_subbuf always holds). */
		if (job)
			ctx->r.room = 0;
		return 0;
	}
}

RB_NOINLINE int rb_reserve_slow(struct rb *rb, struct rb_ctx *ctx)
{
	return rb_reserve_on(rb, ctx, -1, 0);
}

/* Pin the calling thread to `cpu`, saving its affinity in `saved`.
 * Returns 0 or -errno (the CPU is not in our allowed set or offline). */
static int rb_pin(uint32_t cpu, cpu_set_t *saved)
{
	cpu_set_t one;
	if (sched_getaffinity(0, sizeof(*saved), saved) < 0)
		return -errno;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one) < 0)
		return -errno;
	return 0;
}

/* Nothing for a flush to do: no packet open at `wc` and, unless `final`,
 * nothing to report; with `final`, no loss since the last packet. */
static bool rb_flush_idle(const struct rb *rb, struct rb_cpu_ctl *c,
			  uint64_t wc, bool final)
{
	if (wc & (rb->subbuf_size - 1))
		return false;
	return !final || __atomic_load_n(&c->events_lost, __ATOMIC_RELAXED) ==
				 __atomic_load_n(&c->records_lost_reported,
						 __ATOMIC_RELAXED);
}

/* Algorithm 4 on one CPU's buffer, run where the LCAS is allowed: on
 * `cpu` itself in rseq mode, anywhere with `smp`. */
static int rb_force_switch(struct rb *rb, uint32_t cpu, bool final, bool smp)
{
	struct rb_cpu_ctl *c = rb_cpu(rb, cpu);
	const uint64_t S = rb->subbuf_size;
	for (int tries = 0; tries < 1000; tries++) {
		uint64_t wc = __atomic_load_n(&c->write_count, __ATOMIC_ACQUIRE);
		uint64_t in_sb = wc & (S - 1);
		if (rb_flush_idle(rb, c, wc, final))
			return 0;
		if (in_sb == 0) {
			/* Open a header-only packet that carries the final
			 * lost count; the loop then closes it. */
			struct rb_ctx ctx = { 0 };
			int ret = rb_reserve_on(rb, &ctx, (int32_t)cpu,
						RB_RES_QUIET | (smp ? RB_RES_SMP : 0));
			if (ret == -ENOBUFS)
				return -EAGAIN;
			if (ret < 0)
				return ret;
			continue;
		}
		/* Atomic mode: the pair's stamp, as rb_reserve_on. */
		uint64_t last = rb->smp_fast ? __atomic_load_n(&c->stamp, __ATOMIC_ACQUIRE) : 0;
		uint64_t tsc = rb_stamp_after(rb, rb->client.clock_read(), last);
		uint64_t next = rb_mask_high_u64(wc, rb->geom.sbfbits) + S;
		/* One unit of announced work: closing the packet. */
		if (rb_lcas_announce(rb, smp, c, cpu, wc, next, 1, false, last, tsc) != 0)
			continue;
		rb_close_packet(rb, cpu, next, in_sb, tsc);
		rb_commit_units(rb, smp, cpu, 1);
		if (!final)
			return 0;
	}
	return -EAGAIN;
}

/* Atomic mode's grace period for a closing flush: the pair {write_count,
 * stamp} moved (stamp + 1, one tick later), so that every writer whose
 * compare-and-swap of the pair read it before (and closed before the
 * store of closed) fails and reads closed on its retry (rb_cas_stamp,
 * rb_smp_reserve). Without the pair (not x86-64), one unit announced and
 * committed. Seq-cst (a locked instruction): after the store of
 * closed. */
static void rb_close_smp(struct rb *rb, uint32_t cpu)
{
	struct rb_cpu_ctl *c = rb_cpu(rb, cpu);
#if RB_HAVE_SMP_PAIR
	uint64_t wc = __atomic_load_n(&c->write_count, __ATOMIC_RELAXED);
	uint64_t st = __atomic_load_n(&c->stamp, __ATOMIC_RELAXED);
	/* A failed swap reads the pair whole for the next try. */
	while (!rb_cas_pair(&c->write_count, &wc, &st, wc, st + 1))
		;
#else
	__atomic_fetch_add(&c->announced_smp, 1, __ATOMIC_SEQ_CST);
	rb_commit_units(rb, true, cpu, 1);
#endif
}

void rb_reopen(struct rb *rb)
{
	/* Release: the reader's reads of the closed buffer (its drain) come
	 * before writers may open packets again. */
	for (uint32_t cpu = 0; cpu < rb->nr_cpus; cpu++)
		__atomic_store_n(&rb_cpu(rb, cpu)->closed, 0, __ATOMIC_RELEASE);
}

/* rb_flush_cpu, and with `close` rb_close_cpu (a final flush that
 * closes the buffer first). */
static int rb_flush(struct rb *rb, uint32_t cpu, bool final, bool close)
{
	if (cpu >= rb->nr_cpus)
		return -EINVAL;
	struct rb_cpu_ctl *c = rb_cpu(rb, cpu);
	/* Seq-cst: before the grace period below (the pinned run on the CPU
	 * in rseq mode, rb_close_smp in atomic mode), which every writer
	 * that did not see it is waited for by. */
	if (close)
		__atomic_store_n(&c->closed, 1, __ATOMIC_SEQ_CST);
	if (!rb->rseq) {
		if (close)
			rb_close_smp(rb, cpu);
		return rb_force_switch(rb, cpu, final, true);
	}
	/* Nothing open and nothing to report: spare the two affinity
	 * changes (the common case for idle CPUs on every switch timer). A
	 * close always runs on the CPU: that run is its grace period (every
	 * section in progress there is aborted). */
	if (!close && rb_flush_idle(rb, c, __atomic_load_n(&c->write_count, __ATOMIC_RELAXED),
				    final))
		return 0;

	cpu_set_t saved;
	int ret = rb_pin(cpu, &saved);
	if (ret < 0) {
		if (!final)
			return -EAGAIN;
		/* No thread of ours can run on this CPU, so no rseq
		 * section can write its write_count: a CAS is safe. */
		return rb_force_switch(rb, cpu, final, true);
	}
	ret = -EAGAIN;
	for (int tries = 0; tries < 100 && ret == -EAGAIN; tries++) {
		if (rb_rseq_cpu(rb_rseq_off()) != (int32_t)cpu) {
			sched_yield();
			continue;
		}
		ret = rb_force_switch(rb, cpu, final, false);
	}
	sched_setaffinity(0, sizeof(saved), &saved);
	return ret;
}

int rb_flush_cpu(struct rb *rb, uint32_t cpu, bool final)
{
	return rb_flush(rb, cpu, final, false);
}

int rb_close_cpu(struct rb *rb, uint32_t cpu)
{
	return rb_flush(rb, cpu, true, true);
}

/* Whether the sub-buffer that starts at `at` may hold a dead writer's
 * slot (rb_void_dead): in [void_begin, void_end). Reader only. */
static bool rb_voided(struct rb_cpu_ctl *c, uint64_t at)
{
	uint64_t b = __atomic_load_n(&c->void_begin, __ATOMIC_RELAXED);
	uint64_t e = __atomic_load_n(&c->void_end, __ATOMIC_RELAXED);
	return at - b < e - b;
}

/* Move the reader past the sub-buffer at `rcnt` without reading it and
 * count it lost. Seq-cst CAS, as rb_put_subbuf's (pairs with the
 * writers' acquire load of read_count before equation (1) and with their
 * push CAS): exactly one of us moves read_count past it, and the one that
 * does counts it. Returns whether we did. */
static bool rb_give_up(struct rb *rb, struct rb_cpu_ctl *c, uint64_t rcnt)
{
	uint64_t next = rb_mask_high_u64(rcnt, rb->geom.sbfbits) + rb->subbuf_size;
	if (!__atomic_compare_exchange_n(&c->read_count, &rcnt, next, false,
					 __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		return false;
	/* Relaxed: a statistic (rb_get_stats). */
	__atomic_fetch_add(&c->subbufs_lost, 1, __ATOMIC_RELAXED);
	return true;
}

/* rb_get_subbuf for the sub-buffer at the read position: 0 (taken),
 * 1 (given up: it may hold a dead writer's slot, rb_void_dead), or
 * rb_get_subbuf's errors. */
static int rb_get_one(struct rb *rb, uint32_t cpu, struct rb_cpu_ctl *c, struct rb_read *r)
{
	/* Acquire: pairs with the writers' push CAS. */
	uint64_t rcnt = __atomic_load_n(&c->read_count, __ATOMIC_ACQUIRE);
	uint32_t idx = rb_subbuf_index(rb, rcnt);
	struct rb_subbuf_ctl *s = &c->sb[idx];
	/* Acquire: pairs with the seq-cst CAS publishing commit_seq; the
	 * packet's data is visible once the pass is. */
	uint64_t rcommit = __atomic_load_n(&s->commit_seq, __ATOMIC_ACQUIRE);
	if (!rb_eq2_subbuf_ready_u64(&rb->geom, rcnt, rcommit)) {
		rb_subbuf_try_complete(rb, cpu, idx, rcnt);
		rcommit = __atomic_load_n(&s->commit_seq, __ATOMIC_ACQUIRE);
		if (!rb_eq2_subbuf_ready_u64(&rb->geom, rcnt, rcommit))
			return -EAGAIN;
	}
	uint64_t wcnt = __atomic_load_n(&c->write_count, __ATOMIC_ACQUIRE);
	if (rb_eq4_subbuf_written_u64(&rb->geom, wcnt, rcnt))
		return -EAGAIN;
	/* The reader is never ahead of the writers; in discard mode they
	 * are never more than the buffer ahead of it (equation (1); only we
	 * move read_count there, so rcnt is still current). */
	RB_ASSERT((int64_t)(wcnt - rcnt) > 0);
	RB_ASSERT(rb->mode != RB_MODE_DISCARD ||
		  wcnt - rb_mask_high_u64(rcnt, rb->geom.sbfbits) <=
			  (uint64_t)rb->num_subbuf * rb->subbuf_size);
	if (rb_voided(c, rb_mask_high_u64(rcnt, rb->geom.sbfbits))) {
		/* Failing means a writer pushed us past it (and counted it). */
		rb_give_up(rb, c, rcnt);
		return 1;
	}

	uint32_t phys = idx;
	if (rb->mode == RB_MODE_OVERWRITE) {
		/* Exchange our spare with the sub-buffer, if no writer holds
		 * it and it still holds the pass we want (the tag). */
		uint64_t pass = (rcnt >> rb->geom.bfbits) & RB_TABLE_TAG_MASK;
		uint64_t e = __atomic_load_n(&s->table, __ATOMIC_ACQUIRE);
		if ((e & RB_TABLE_FLAG) || RB_TABLE_TAG(e) != pass)
			return -EAGAIN;
		/* Both indexes come from shared memory: refuse a corrupted
		 * one rather than hand out memory outside the buffer. */
		RB_ASSERT(RB_TABLE_IDX(e) <= rb->num_subbuf &&
			  c->reader_subbuf <= rb->num_subbuf);
		if (RB_TABLE_IDX(e) > rb->num_subbuf || c->reader_subbuf > rb->num_subbuf)
			return -EIO;
		uint64_t n = RB_TABLE_MAKE(c->reader_subbuf, pass, 0);
		/* Acq-rel CAS: pairs with rb_table_acquire_slow; after it the
		 * old physical sub-buffer is private to the reader. */
		if (!__atomic_compare_exchange_n(&s->table, &e, n, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			return -EAGAIN;
		phys = RB_TABLE_IDX(e);
		c->reader_subbuf = phys;
		/* The sub-buffer we now own is in no table entry: no writer
		 * can be given it until we swap it back. */
		RB_ASSERT(rb_phys_permutation(rb, c));
	}
	r->count = rcnt;
	r->seq = rb_packet_seq(rb, rcnt);
	r->data = rb_phys_addr(rb, cpu, phys);
	r->data_size = rb->subbuf_size;
	return 0;
}

/* READ_GETSUBBUF (Algorithm 6). */
int rb_get_subbuf(struct rb *rb, uint32_t cpu, struct rb_read *r)
{
	if (cpu >= rb->nr_cpus)
		return -EINVAL;
	struct rb_cpu_ctl *c = rb_cpu(rb, cpu);
	/* Each sub-buffer given up moves read_count on: at most the N of
	 * the buffer in a row (shared memory: bounded whatever it holds). */
	int ret = 1;
	for (uint32_t turn = 0; ret == 1 && turn <= rb->num_subbuf; turn++)
		ret = rb_get_one(rb, cpu, c, r);
	return ret == 1 ? -EAGAIN : ret;
}

/* READ_PUTSUBBUF (Algorithm 7). */
void rb_put_subbuf(struct rb *rb, uint32_t cpu, const struct rb_read *r)
{
	struct rb_cpu_ctl *c = rb_cpu(rb, cpu);
	uint64_t expect = r->count;
	uint64_t next = rb_mask_high_u64(r->count, rb->geom.sbfbits) +
			rb->subbuf_size;
	/* Seq-cst CAS: our reads of the packet happen before a writer may
	 * reuse it (pairs with the acquire load of read_count before
	 * equation (1)). Fails only if a writer pushed us in overwrite mode,
	 * which is fine: we owned the sub-buffer while reading. */
	__atomic_compare_exchange_n(&c->read_count, &expect, next, false,
				    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
}

int rb_skip_stuck(struct rb *rb, uint32_t cpu, struct rb_stuck *st, uint64_t now,
		  uint64_t after)
{
	if (cpu >= rb->nr_cpus)
		return -EINVAL;
	struct rb_cpu_ctl *c = rb_cpu(rb, cpu);
	/* Acquire loads: pair with the writers' LCAS and push CAS; only
	 * compared, never used to read data. */
	uint64_t rcnt = __atomic_load_n(&c->read_count, __ATOMIC_ACQUIRE);
	uint64_t wcnt = __atomic_load_n(&c->write_count, __ATOMIC_ACQUIRE);
	if (wcnt - rb_mask_high_u64(rcnt, rb->geom.sbfbits) < rb->subbuf_size) {
		st->seen = false;	/* the writers are still in it */
		return 0;
	}
	if (!st->seen || st->count != rcnt) {
		*st = (struct rb_stuck){ .count = rcnt, .since = now, .seen = true };
		return 0;
	}
	if (now - st->since < after)
		return 0;
	st->seen = false;
	return rb_give_up(rb, c, rcnt) ? 1 : 0;
}

int rb_snapshot_range(const struct rb *rb, uint32_t cpu, uint64_t *first, uint64_t *end)
{
	if (cpu >= rb->nr_cpus)
		return -EINVAL;
	struct rb_cpu_ctl *c = rb_cpu(rb, cpu);
	const uint64_t S = rb->subbuf_size;
	/* Acquire: pairs with the writers' LCAS and push CAS. */
	uint64_t e = __atomic_load_n(&c->write_count, __ATOMIC_ACQUIRE) & ~(S - 1);
	uint64_t f = __atomic_load_n(&c->read_count, __ATOMIC_ACQUIRE) & ~(S - 1);
	uint64_t span = (uint64_t)rb->num_subbuf * S;
	if (e - f > span)
		f = e - span;
	*first = f;
	*end = e;
	return 0;
}

int rb_snapshot_copy(const struct rb *rb, uint32_t cpu, uint64_t off, void *dst,
		     uint64_t *seq)
{
	if (cpu >= rb->nr_cpus)
		return -EINVAL;
	struct rb_cpu_ctl *c = rb_cpu(rb, cpu);
	uint32_t idx = rb_subbuf_index(rb, off);
	struct rb_subbuf_ctl *s = &c->sb[idx];
	/* Acquire: pairs with the seq-cst CAS that publishes commit_seq; the
	 * pass's data is visible once it is. */
	uint64_t cseq = __atomic_load_n(&s->commit_seq, __ATOMIC_ACQUIRE);
	if (cseq != rb_ctx_target(rb, off) || rb_voided(c, off & ~(rb->subbuf_size - 1)))
		return -EAGAIN;
	uint32_t phys = idx;
	uint64_t e = 0;
	if (rb->mode == RB_MODE_OVERWRITE) {
		uint64_t pass = (off >> rb->geom.bfbits) & RB_TABLE_TAG_MASK;
		/* Acquire: pairs with the writers' acq-rel CAS setting the
		 * tag and flag (rb_table_acquire_slow). */
		e = __atomic_load_n(&s->table, __ATOMIC_ACQUIRE);
		if ((e & RB_TABLE_FLAG) || RB_TABLE_TAG(e) != pass)
			return -EAGAIN;
		phys = RB_TABLE_IDX(e);
		/* Shared with the programs: the index must stay inside the
		 * CPU's N + 1 physical sub-buffers. */
		RB_ASSERT(phys <= rb->num_subbuf);
		if (phys > rb->num_subbuf)
			return -EIO;
	}
	memcpy(dst, rb_phys_addr(rb, cpu, phys), rb->subbuf_size);
	/* Acquire fence: orders the copy's loads before the re-reads below,
	 * so a writer store seen by the copy implies its earlier table CAS
	 * (acq-rel: before its data stores) is seen by the re-read (the
	 * seqlock pattern). */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&s->commit_seq, __ATOMIC_RELAXED) != cseq)
		return -EAGAIN;
	if (rb->mode == RB_MODE_OVERWRITE && __atomic_load_n(&s->table, __ATOMIC_RELAXED) != e)
		return -EAGAIN;
	*seq = rb_packet_seq(rb, off);
	return 0;
}

/* The start of the oldest pass not complete at or after the read
 * position, up to `end` (a sub-buffer start): where work may still be
 * outstanding. Reader only. */
static uint64_t rb_first_incomplete(struct rb *rb, struct rb_cpu_ctl *c, uint64_t end)
{
	const uint64_t S = rb->subbuf_size;
	/* Acquire: pairs with the writers' LCAS and push CAS (only
	 * compared, never used to address memory). */
	uint64_t at = rb_mask_high_u64(__atomic_load_n(&c->read_count, __ATOMIC_ACQUIRE),
				       rb->geom.sbfbits);
	for (uint32_t i = 0; i <= rb->num_subbuf && at != end; i++, at += S) {
		/* Acquire: pairs with the CAS that published the pass. */
		uint64_t seq = __atomic_load_n(&c->sb[rb_subbuf_index(rb, at)].commit_seq,
					       __ATOMIC_ACQUIRE);
		if (rb_mask_low_u64(seq, 64 - rb->geom.nsbbits) != rb_ctx_target(rb, at))
			break;
	}
	return at;
}

/* Whether `x` may be a bound of work outstanding in a buffer whose
 * write_count is `wc`: not past it, not more than the buffer and its
 * open sub-buffer behind it (shared memory: checked before use). */
static bool rb_bound_ok(const struct rb *rb, uint64_t x, uint64_t wc)
{
	return wc - x <= ((uint64_t)rb->num_subbuf + 1) * rb->subbuf_size;
}

/* Recovery: the lowest out_from of the words with work outstanding (the
 * CPU's own and each account's: below it every slot is written), how
 * many such words in *sets. Returns false when a bound is unusable. The
 * writers are gone: the words are final. */
static bool rb_dead_from(struct rb *rb, struct rb_cpu_ctl *c, uint64_t wc, uint64_t *from,
			 uint32_t *sets)
{
	uint64_t low = wc;
	*sets = 0;
	for (uint32_t i = 0; i <= rb->nr_accts; i++) {
		uint64_t ann, com, comr, f;
		if (i == 0) {
			ann = rb->rseq ? c->announced : c->announced_smp;
			com = c->committed, comr = c->committed_remote;
			f = c->out_from;
		} else {
			struct rb_acct *a = rb_acct_at(rb, c, i - 1);
			ann = a->announced, com = a->committed, comr = a->committed_remote;
			f = a->out_from;
		}
		if (ann - com - comr == 0)
			continue;
		if (!rb_bound_ok(rb, f, wc))
			return false;
		if (wc - f > wc - low)
			low = f;
		(*sets)++;
	}
	*from = low;
	return true;
}

/* Recovery's publication of the pass at `at` (the buffer's only user):
 * its commit count at the pass's target and, in overwrite mode, its
 * writer flag cleared, so that the reader takes it or, in the void
 * range, gives it up. */
static void rb_publish_dead(struct rb *rb, struct rb_cpu_ctl *c, uint64_t at)
{
	struct rb_subbuf_ctl *s = &c->sb[rb_subbuf_index(rb, at)];
	s->commit_seq = rb_ctx_target(rb, at);
	uint64_t pass = (at >> rb->geom.bfbits) & RB_TABLE_TAG_MASK;
	if (rb->mode == RB_MODE_OVERWRITE && RB_TABLE_TAG(s->table) == pass)
		s->table &= ~RB_TABLE_FLAG;
}

/* rb_close_dead when a writer died between reserving and committing:
 * every slot below `from` is written. The passes before its sub-buffer
 * are published, its packet is closed at `from` (when its header is
 * below: the events before the dead slot are read), the sub-buffers
 * after it up to the end of write_count's are given up (the void range;
 * write_count is moved there), and the `sets` dead slots (at least one
 * per word set with work outstanding) counted as lost events. Returns 0,
 * or -EAGAIN with nothing changed when read_count cannot be right. */
static int rb_cut_dead(struct rb *rb, uint32_t cpu, uint64_t wc, uint64_t from, uint32_t sets)
{
	struct rb_cpu_ctl *c = rb_cpu(rb, cpu);
	const uint64_t S = rb->subbuf_size;
	uint64_t end = rb_mask_high_u64(wc + S - 1, rb->geom.sbfbits);
	uint64_t x = rb_mask_high_u64(from, rb->geom.sbfbits);
	uint64_t at = rb_first_incomplete(rb, c, end);
	/* `at` comes from read_count, in the buffer (a file recover copied:
	 * untrusted): past write_count's sub-buffer, or further behind it
	 * than the buffer and its open sub-buffer, the loops below would run
	 * up to 2^64 / S times. Damaged: left as it is. */
	if (!rb_bound_ok(rb, at, end))
		return -EAGAIN;
	c->events_lost += sets;
	/* Only what lies at or after the first pass not complete is ours
	 * to close or give up. */
	if ((int64_t)(x - at) < 0)
		x = at, from = at;
	for (; at != x; at += S)
		rb_publish_dead(rb, c, at);
	if (x != end && from - x >= rb->hdr_size) {
		rb_close_packet(rb, cpu, from, from - x, rb->client.clock_read());
		rb_publish_dead(rb, c, x);
		x += S;
	}
	c->void_begin = x;
	c->void_end = end;
	for (at = x; at != end; at += S)
		rb_publish_dead(rb, c, at);
	c->write_count = end;
	return 0;
}

int rb_close_dead(struct rb *rb, uint32_t cpu, uint64_t *outstanding)
{
	if (cpu >= rb->nr_cpus)
		return -EINVAL;
	struct rb_cpu_ctl *c = rb_cpu(rb, cpu);
	/* No writer is left (the caller's promise); the words are only
	 * compared. */
	uint64_t out = rb_announced(rb, c) - rb_done(rb, c);
	*outstanding = out;
	if (out) {
		uint64_t wc = c->write_count, from;
		uint32_t sets;
		if (!rb_dead_from(rb, c, wc, &from, &sets))
			return 0;	/* damaged bounds: left incomplete */
		return rb_cut_dead(rb, cpu, wc, from, sets);
	}
	/* A writer that died between its commit and the completion test
	 * left passes complete but unpublished. */
	rb_complete_behind(rb, cpu);
	/* SMP mode: no rseq section of anyone runs here any more. */
	return rb_force_switch(rb, cpu, false, true);
}

int rb_use_acct(struct rb *rb, uint32_t acct)
{
	if (acct > rb->nr_accts)
		return -EINVAL;
	rb->acct_off = acct ? rb->acct_base + (acct - 1) * (uint32_t)sizeof(struct rb_acct) : 0;
	return 0;
}

uint64_t rb_acct_outstanding(const struct rb *rb, uint32_t cpu, uint32_t acct)
{
	if (cpu >= rb->nr_cpus || acct == 0 || acct > rb->nr_accts)
		return 0;
	struct rb_acct *a = rb_acct_at(rb, rb_cpu(rb, cpu), acct - 1);
	/* Relaxed: a count, compared only (announced first: work announced
	 * and committed meanwhile can only make it smaller). */
	uint64_t ann = __atomic_load_n(&a->announced, __ATOMIC_RELAXED);
	return ann - __atomic_load_n(&a->committed, __ATOMIC_RELAXED) -
	       __atomic_load_n(&a->committed_remote, __ATOMIC_RELAXED);
}

/* rb_void_dead's range: the sub-buffers that may hold the slots of the
 * dead accounts marked in `dead`: from their lowest out_from to the end
 * of the sub-buffer of their highest out_to (ringbuffer.h), but from no
 * earlier than the first pass not complete at or after the read
 * position (a pass holding a slot outstanding cannot have completed) and
 * to no later than the end of the sub-buffer write_count is in; joined
 * to a range not yet passed. Bounds that cannot be right (damaged by a
 * program) give the whole of that. Reader only. */
static void rb_void_range(struct rb *rb, struct rb_cpu_ctl *c, const uint64_t *dead)
{
	const uint64_t S = rb->subbuf_size;
	/* Acquire: pairs with the writers' LCAS (only compared). */
	uint64_t wc = __atomic_load_n(&c->write_count, __ATOMIC_ACQUIRE);
	uint64_t end = rb_mask_high_u64(wc + S - 1, rb->geom.sbfbits);
	uint64_t at = rb_first_incomplete(rb, c, end);
	uint64_t lo = wc, hi = at;
	bool ok = true;
	for (uint32_t i = 0; i < rb->nr_accts && ok; i++) {
		if (!(dead[i / 64] >> (i % 64) & 1))
			continue;
		/* Relaxed: the owner is gone, its words are final. */
		struct rb_acct *a = rb_acct_at(rb, c, i);
		uint64_t f = __atomic_load_n(&a->out_from, __ATOMIC_RELAXED);
		uint64_t t = __atomic_load_n(&a->out_to, __ATOMIC_RELAXED);
		ok = rb_bound_ok(rb, f, wc) && rb_bound_ok(rb, t, wc) && (int64_t)(t - f) > 0;
		if (wc - f > wc - lo)
			lo = f;
		if (wc - t < wc - hi)
			hi = t;
	}
	uint64_t b = rb_mask_high_u64(lo, rb->geom.sbfbits);
	uint64_t e = rb_mask_high_u64(hi + S - 1, rb->geom.sbfbits);
	if (!ok || (int64_t)(e - end) > 0)
		e = end;
	if (!ok || (int64_t)(b - at) < 0)
		b = at;
	if ((int64_t)(e - b) < 0)
		e = b;
	/* A range not passed yet stays: the hull of both. */
	uint64_t rcnt = __atomic_load_n(&c->read_count, __ATOMIC_ACQUIRE);
	uint64_t ob = c->void_begin, oe = c->void_end;
	if ((int64_t)(oe - rcnt) > 0) {
		if ((int64_t)(ob - b) < 0)
			b = ob;
		if ((int64_t)(oe - e) > 0)
			e = oe;
	}
	c->void_begin = b;
	c->void_end = e;
}

int rb_void_dead(struct rb *rb, uint32_t cpu, bool (*gone)(void *arg, uint32_t acct),
		 void *arg)
{
	if (cpu >= rb->nr_cpus)
		return -EINVAL;
	struct rb_cpu_ctl *c = rb_cpu(rb, cpu);
	uint64_t dead[(RB_MAX_ACCTS + 63) / 64] = { 0 };
	uint64_t out[RB_MAX_ACCTS];
	int n = 0;
	for (uint32_t i = 0; i < rb->nr_accts; i++) {
		if (rb_acct_outstanding(rb, cpu, i + 1) == 0 || !gone(arg, i + 1))
			continue;
		/* Gone: no thread of its owner runs any more, so the words are
		 * final. Read again after `gone` said so. */
		out[i] = rb_acct_outstanding(rb, cpu, i + 1);
		if ((int64_t)out[i] <= 0)
			continue;	/* nothing, or damaged: leave it */
		dead[i / 64] |= 1ULL << (i % 64);
		n++;
	}
	if (!n)
		return 0;
	rb_void_range(rb, c, dead);
	for (uint32_t i = 0; i < rb->nr_accts; i++) {
		if (!(dead[i / 64] >> (i % 64) & 1))
			continue;
		/* Seq-cst: after the range is set (the reader's own, read by
		 * it and by snapshots it serialises with); pairs with the
		 * acquire loads of the completion test, as a commit does. */
		__atomic_fetch_add(&rb_acct_at(rb, c, i)->committed_remote, out[i],
				   __ATOMIC_SEQ_CST);
	}
	rb_complete_behind(rb, cpu);
	/* Close the packet the range ends with now (a flush, as the switch
	 * timer's), rather than when the writers fill it: the events after
	 * it are read. Failing (-EAGAIN) only delays that. */
	rb_flush_cpu(rb, cpu, false);
	return n;
}
