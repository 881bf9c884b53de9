/*
 * klanes.c - the report's kernel lanes: what each CPU ran, each thread's
 * state over time and the block requests per device, from the kernel
 * state model (kstate.c) in one streamed pass.
 *
 * Memory: each lane keeps at most 2 x cap bars while streaming. When a
 * lane reaches that, every other bar is dropped and the lane from then on
 * keeps one bar in `step` (doubled): the bars kept are those whose
 * sequence number in the lane is a multiple of step, as the event lanes'
 * downsampling keeps one event in step. The writer thins to at most cap.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../common/array.h"
#include "analysis_internal.h"

struct kl_bar {
	int64_t begin, end;
	int64_t who;		/* CPU lane: tid; thread lane: CPU; I/O: issuer tid */
	uint64_t bytes;		/* I/O lane */
	int32_t syscall;	/* thread lane: index in ks.syscalls, -1 */
	int32_t waker;		/* thread lane: index in wakers, -1 */
	uint8_t state;		/* thread lane: enum ra_kstate_kind; I/O: write */
	uint8_t preempted;	/* thread lane, RUNNABLE: preempted, not woken */
	uint8_t open;		/* still open at the end of the trace */
};

struct kl_lane {
	struct kl_bar *bar;
	size_t nr, cap;
	uint64_t total, step;
	uint64_t key;		/* CPU, thread index or device */
	bool used;
};

struct ra_klanes {
	struct ra_kstate ks;
	size_t lane_cap;
	struct kl_lane *cpu, *th, *io;	/* cpu[c], th[thread index], io[k] */
	size_t nr_cpu, cap_cpu, nr_th, cap_th, nr_io, cap_io;
	struct ra_strtab wakers;
	int err;
};

static void lane_add(struct ra_klanes *k, struct kl_lane *l, const struct kl_bar *b)
{
	l->used = true;
	if (!l->step)
		l->step = 1;
	if (l->total++ % l->step)
		return;
	if (RT_ARRAY_GROW(l->bar, l->cap, l->nr + 1, 64) < 0) {
		k->err = -ENOMEM;
		return;
	}
	l->bar[l->nr++] = *b;
	if (l->nr < 2 * k->lane_cap)
		return;
	for (size_t i = 0; 2 * i < l->nr; i++)
		l->bar[i] = l->bar[2 * i];
	l->nr = (l->nr + 1) / 2;
	l->step *= 2;
}

/* Lane `index` of *lanes (grown, zeroed). NULL (k->err set) on ENOMEM. */
static struct kl_lane *lane_at(struct ra_klanes *k, struct kl_lane **lanes, size_t *nr,
			       size_t *cap, size_t index)
{
	if (index >= *nr) {
		if (RT_ARRAY_GROW_ZEROED(*lanes, *cap, index + 1, 16) < 0) {
			k->err = -ENOMEM;
			return NULL;
		}
		*nr = index + 1;
	}
	return &(*lanes)[index];
}

static void on_span(void *arg, const struct ra_kspan *sp)
{
	struct ra_klanes *k = arg;
	if (sp->th->tid == 0)
		return;		/* the idle task: a CPU lane's gaps */
	size_t ti = (size_t)(sp->th - k->ks.th);
	struct kl_lane *l = lane_at(k, &k->th, &k->nr_th, &k->cap_th, ti);
	if (!l)
		return;
	l->key = ti;
	struct kl_bar b = { .begin = sp->begin, .end = sp->end, .who = sp->cpu == UINT32_MAX
			    ? -1 : (int64_t)sp->cpu, .syscall = -1, .waker = -1,
			    .state = sp->state, .preempted = sp->preempted,
			    .open = sp->open };
	if (sp->state == RA_KS_BLOCKED || sp->state == RA_KS_IOWAIT)
		b.syscall = sp->syscall;
	if ((sp->state == RA_KS_BLOCKED || sp->state == RA_KS_IOWAIT ||
	     sp->state == RA_KS_RUNNABLE) && sp->waker.kind != RA_WAKER_NONE) {
		char label[160];
		ra_kwaker_label(&k->ks, &sp->waker, label, sizeof(label));
		int64_t w = ra_strtab_intern(&k->wakers, label);
		if (w < 0) {
			k->err = (int)w;
			return;
		}
		b.waker = (int32_t)w;
	}
	lane_add(k, l, &b);
	if (sp->state != RA_KS_RUNNING || sp->cpu == UINT32_MAX)
		return;
	l = lane_at(k, &k->cpu, &k->nr_cpu, &k->cap_cpu, sp->cpu);
	if (!l)
		return;
	l->key = sp->cpu;
	lane_add(k, l, &(struct kl_bar){ .begin = sp->begin, .end = sp->end, .who = sp->th->tid,
					 .syscall = -1, .waker = -1, .open = sp->open });
}

static void on_io(void *arg, const struct ra_ks_io *io)
{
	struct ra_klanes *k = arg;
	if (io->issue_ns == INT64_MIN)
		return;		/* its issue was not recorded: no bar */
	size_t d = 0;
	while (d < k->nr_io && k->io[d].key != io->dev)
		d++;
	struct kl_lane *l = lane_at(k, &k->io, &k->nr_io, &k->cap_io, d);
	if (!l)
		return;
	l->key = io->dev;
	lane_add(k, l, &(struct kl_bar){ .begin = io->issue_ns, .end = io->complete_ns,
					 .who = io->issuer ? io->issuer->tid : -1,
					 .bytes = io->bytes, .syscall = -1, .waker = -1,
					 .state = io->write, .open = io->open });
}

int ra_klanes_run(const char *const *dirs, size_t nr, size_t lane_cap,
		  struct ra_klanes **out, char *err, size_t errlen)
{
	struct ra_klanes *k = calloc(1, sizeof(*k));
	*out = k;
	if (!k || !lane_cap) {
		snprintf(err, errlen, k ? "no lane capacity" : "out of memory");
		return k ? -EINVAL : -ENOMEM;
	}
	k->lane_cap = lane_cap;
	static const struct ra_kstate_ops ops = { .span = on_span, .io = on_io };
	ra_kstate_init(&k->ks, &ops, k);
	return ra_kstate_read(&k->ks, dirs, nr, NULL, NULL, &k->err, NULL, err, errlen);
}

bool ra_klanes_empty(const struct ra_klanes *k)
{
	return !k || (!k->nr_cpu && !k->nr_th && !k->nr_io);
}

static void jstr(FILE *f, const char *s)
{
	ra_json_string(f, s, strlen(s));
}

/* "spans", "step" and the bars of l, at most cap, from first_ns. */
static void write_bars(FILE *f, const struct kl_lane *l, size_t cap, int64_t first_ns,
		       char kind)
{
	size_t stride = l->nr <= cap ? 1 : (l->nr + cap - 1) / cap;
	fprintf(f, ",\"spans\":%" PRIu64 ",\"step\":%" PRIu64 ",\"bars\":[", l->total,
		l->step * stride);
	for (size_t i = 0; i < l->nr; i += stride) {
		const struct kl_bar *b = &l->bar[i];
		fprintf(f, "%s[%" PRId64 ",%" PRId64 ",%" PRId64, i ? "," : "",
			ra_ns_diff(b->begin, first_ns), ra_ns_diff(b->end, b->begin), b->who);
		if (kind == 't')
			fprintf(f, ",%u,%" PRId32 ",%" PRId32 ",%u", b->state, b->syscall,
				b->waker, b->preempted);
		else if (kind == 'i')
			fprintf(f, ",%u,%" PRIu64, b->state, b->bytes);
		fprintf(f, ",%u]", b->open);
	}
	fputs("]}", f);
}

void ra_klanes_write_json(FILE *f, const struct ra_klanes *k, int64_t first_ns)
{
	fputs("{\"states\":[", f);
	for (unsigned s = 0; s < RA_KS_NR; s++) {
		fputs(s ? "," : "", f);
		jstr(f, ra_kstate_name(s));
	}
	fputs("],\"syscalls\":[", f);
	for (uint32_t i = 0; i < k->ks.syscalls.nr; i++) {
		fputs(i ? "," : "", f);
		jstr(f, k->ks.syscalls.str[i]);
	}
	fputs("],\"wakers\":[", f);
	for (uint32_t i = 0; i < k->wakers.nr; i++) {
		fputs(i ? "," : "", f);
		jstr(f, k->wakers.str[i]);
	}
	fputs("],\"cpus\":[", f);
	bool first = true;
	for (size_t c = 0; c < k->nr_cpu; c++) {
		if (!k->cpu[c].used)
			continue;
		fprintf(f, "%s{\"cpu\":%zu", first ? "" : ",", c);
		first = false;
		write_bars(f, &k->cpu[c], k->lane_cap, first_ns, 'c');
	}
	fputs("],\"threads\":[", f);
	first = true;
	for (size_t t = 0; t < k->nr_th; t++) {
		if (!k->th[t].used)
			continue;
		const struct ra_ks_thread *th = &k->ks.th[t];
		fprintf(f, "%s{\"tid\":%" PRId64 ",\"pid\":%" PRId64 ",\"name\":",
			first ? "" : ",", th->tid, th->pid);
		first = false;
		jstr(f, th->comm[0] ? th->comm : "?");
		write_bars(f, &k->th[t], k->lane_cap, first_ns, 't');
	}
	fputs("],\"io\":[", f);
	for (size_t d = 0; d < k->nr_io; d++) {
		/* The kernel's dev_t: major in the bits above 20, minor below. */
		fprintf(f, "%s{\"device\":\"%" PRIu64 ":%" PRIu64 "\"", d ? "," : "",
			k->io[d].key >> 20, k->io[d].key & 0xfffff);
		write_bars(f, &k->io[d], k->lane_cap, first_ns, 'i');
	}
	fputs("]}", f);
}

void ra_klanes_free(struct ra_klanes *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->nr_cpu; i++)
		free(k->cpu[i].bar);
	for (size_t i = 0; i < k->nr_th; i++)
		free(k->th[i].bar);
	for (size_t i = 0; i < k->nr_io; i++)
		free(k->io[i].bar);
	free(k->cpu);
	free(k->th);
	free(k->io);
	ra_strtab_free(&k->wakers);
	ra_kstate_free(&k->ks);
	free(k);
}
