/*
 * procs.c - the process table behind the kernel contexts pid, procname
 * and prio (kernel_internal.h): an open-addressing hash table of thread
 * ids (linear probing, deletion by shifting the following entries back),
 * at most half full.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/proc_stat.h"
#include "kernel_internal.h"

static size_t slot_of(const struct rtk_procs *p, int32_t tid)
{
	return ((uint32_t)tid * 0x9e3779b1u) & (p->cap - 1);
}

static struct rtk_proc *find(const struct rtk_procs *p, int32_t tid)
{
	if (!p->cap)
		return NULL;
	for (size_t i = slot_of(p, tid);; i = (i + 1) & (p->cap - 1)) {
		if (p->slots[i].tid == tid)
			return &p->slots[i];
		if (!p->slots[i].tid)
			return NULL;
	}
}

/* The free slot for tid (not in the table). */
static struct rtk_proc *slot_for(struct rtk_procs *p, int32_t tid)
{
	size_t i = slot_of(p, tid);
	while (p->slots[i].tid)
		i = (i + 1) & (p->cap - 1);
	return &p->slots[i];
}

static int grow(struct rtk_procs *p)
{
	size_t cap = p->cap ? p->cap * 2 : 256;
	struct rtk_proc *old = p->slots, *slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	size_t old_cap = p->cap;
	p->slots = slots;
	p->cap = cap;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].tid)
			*slot_for(p, old[i].tid) = old[i];
	free(old);
	return 0;
}

struct rtk_proc *rtk_procs_get(struct rtk_procs *p, int32_t tid)
{
	struct rtk_proc *e = find(p, tid);
	if (e)
		return e;
	if ((p->used + 1) * 2 > p->cap && grow(p) < 0)
		return NULL;
	e = slot_for(p, tid);
	*e = (struct rtk_proc){ .tid = tid, .pid = -1, .prio = RTK_PRIO_UNKNOWN };
	p->used++;
	return e;
}

void rtk_procs_remove(struct rtk_procs *p, int32_t tid)
{
	struct rtk_proc *e = find(p, tid);
	if (!e)
		return;
	size_t hole = (size_t)(e - p->slots), mask = p->cap - 1;
	p->slots[hole].tid = 0;
	p->used--;
	/* Shift back the entries after the hole that probed past it. */
	for (size_t i = (hole + 1) & mask; p->slots[i].tid; i = (i + 1) & mask) {
		size_t home = slot_of(p, p->slots[i].tid);
		if (((i - home) & mask) >= ((i - hole) & mask)) {
			p->slots[hole] = p->slots[i];
			p->slots[i].tid = 0;
			hole = i;
		}
	}
}

void rtk_procs_freed(struct rtk_procs *p, int32_t tid)
{
	struct rtk_proc *e = p->keep_freed ? find(p, tid) : NULL;
	if (e) {
		p->nr_freed += !e->freed;
		e->freed = p->sweeps + 1;
	} else {
		rtk_procs_remove(p, tid);
	}
}

void rtk_procs_sweep(struct rtk_procs *p)
{
	p->sweeps++;
	if (!p->nr_freed)
		return;
	/* A removal shifts later entries back into slot i: look at it
	 * again (an entry shifted from the start to the end of the array
	 * is looked at twice: harmless). */
	size_t kept = 0;
	for (size_t i = 0; i < p->cap;) {
		const struct rtk_proc *e = &p->slots[i];
		if (e->tid && e->freed && e->freed + 1 <= p->sweeps) {
			rtk_procs_remove(p, e->tid);
			continue;
		}
		kept += e->tid && e->freed;
		i++;
	}
	p->nr_freed = kept;
}

void rtk_procs_move(struct rtk_procs *p, int32_t from, int32_t to)
{
	struct rtk_proc *e = find(p, from);
	if (!e || from == to)
		return;
	struct rtk_proc copy = *e;
	rtk_procs_remove(p, from);
	struct rtk_proc *d = rtk_procs_get(p, to);
	if (d) {
		*d = copy;
		d->tid = to;
	}
}

/* The thread group of `tid` (/proc/TID/status's Tgid), or -1. */
static int32_t tgid_of(int32_t tid)
{
	char path[64], text[4096];
	int v;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	return rt_proc_status_read(AT_FDCWD, path, text, sizeof(text)) == 0 &&
		       rt_proc_status_ids(text, "Tgid", &v, 1) >= 1 && v > 0 ? v : -1;
}

struct rtk_proc *rtk_procs_resolve(struct rtk_procs *p, int32_t tid)
{
	struct rtk_proc *e = rtk_procs_get(p, tid);
	if (!e || e->looked_up ||
	    (e->pid >= 0 && e->comm[0] && e->prio != RTK_PRIO_UNKNOWN))
		return e;
	e->looked_up = true;
	char path[64];
	struct rt_proc_stat st;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)tid);
	if (rt_proc_stat_read(AT_FDCWD, path, &st) < 0)
		return e;	/* gone: what is known stays */
	if (!e->comm[0])
		memcpy(e->comm, st.comm, sizeof(e->comm));
	if (e->prio == RTK_PRIO_UNKNOWN)
		e->prio = st.priority;
	if (e->pid < 0)
		e->pid = tgid_of(tid);
	return e;
}

void rtk_procs_free(struct rtk_procs *p)
{
	free(p->slots);
	*p = (struct rtk_procs){ 0 };
}
