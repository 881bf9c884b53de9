/*
 * epoch.c - per-thread epochs (epoch.h): the threads' slots and the
 * polled grace period.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "epoch.h"

uint64_t rt_epoch_gp = RT_EPOCH_ONE | 1;
struct rt_epoch_slot rt_epoch_shared;
__thread struct rt_epoch_slot *rt_epoch_mine __attribute__((tls_model("initial-exec")));

static struct rt_epoch_slot slots[RT_EPOCH_SLOTS];
/* Slots ever claimed: [0, hwm). Release increment after the claim,
 * acquire load by the scan (pairs): a slot below it is initialized. */
static uint32_t hwm;
static pthread_key_t key;
static bool key_ok;
/* Written and read by the advancing thread only (caller's lock). */
static uint64_t completed;	/* the epoch of the last grace period ended */
static pid_t registered_pid;	/* membarrier registered in this process */

/* A thread exits: its slot is free again. Its later events (other
 * destructors) take the shared slot. */
static void slot_free(void *p)
{
	struct rt_epoch_slot *s = p;
	rt_epoch_mine = &rt_epoch_shared;
	/* Signal fence: a handler that runs from here on uses the shared
	 * slot, not this one. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&s->word, 0, __ATOMIC_RELAXED);
	/* Release: the word's reset is visible before another thread can
	 * claim the slot (its acquire compare-and-swap). */
	__atomic_store_n(&s->used, 0, __ATOMIC_RELEASE);
}

/* glibc keeps the values of its first 32 keys in the thread's own
 * descriptor; a later key's block is allocated by a thread's first
 * pthread_setspecific, which a first event in a signal handler must not
 * do. */
#define RT_EPOCH_KEY_INLINE 32

void rt_epoch_init(void)
{
	/* A later key (a program that created 32 keys before loading us):
	 * every thread takes the shared slot (rt_epoch_register), none
	 * claims one it could not give back at its exit. */
	if (pthread_key_create(&key, slot_free) != 0)
		return;
	if (key >= RT_EPOCH_KEY_INLINE) {
		pthread_key_delete(key);
		return;
	}
	key_ok = true;
}

struct rt_epoch_slot *rt_epoch_register(void)
{
	struct rt_epoch_slot *s = &rt_epoch_shared;
	for (uint32_t i = 0; key_ok && i < RT_EPOCH_SLOTS; i++) {
		uint32_t zero = 0;
		/* Acquire: pairs with slot_free's release (the previous
		 * owner's word is reset). Relaxed load first: most taken
		 * slots are skipped without a locked instruction. */
		if (__atomic_load_n(&slots[i].used, __ATOMIC_RELAXED) == 0 &&
		    __atomic_compare_exchange_n(&slots[i].used, &zero, 1, false,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			s = &slots[i];
			/* Release: pairs with the scan's acquire of hwm. */
			uint32_t h = __atomic_load_n(&hwm, __ATOMIC_RELAXED);
			while (h < i + 1 &&
			       !__atomic_compare_exchange_n(&hwm, &h, i + 1, false,
							    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
				;
			break;
		}
	}
	/* A signal handler may have registered this thread meanwhile (it
	 * ran whole): its slot stays, ours goes back. Compare-and-swap on
	 * our own variable: a handler between a check and a store would
	 * leave two. */
	struct rt_epoch_slot *none = NULL;
	if (!__atomic_compare_exchange_n(&rt_epoch_mine, &none, s, false, __ATOMIC_RELAXED,
					 __ATOMIC_RELAXED)) {
		if (s != &rt_epoch_shared)
			__atomic_store_n(&s->used, 0, __ATOMIC_RELEASE);
		return none;
	}
	/* The destructor that gives it back at the thread's exit (a key
	 * among the first 32, rt_epoch_init: its value lives in the
	 * thread's descriptor, nothing is allocated). */
	if (s != &rt_epoch_shared)
		pthread_setspecific(key, s);
	return s;
}

void rt_epoch_enter_shared(void)
{
	/* Sequentially consistent: a full fence on both sides of the
	 * increment, so the scan that does not see it was before the
	 * section's loads. */
	__atomic_fetch_add(&rt_epoch_shared.word, 1, __ATOMIC_SEQ_CST);
}

void rt_epoch_exit_shared(void)
{
	/* Sequentially consistent: the section's accesses are done before
	 * the scan can see the decrement. */
	__atomic_fetch_sub(&rt_epoch_shared.word, 1, __ATOMIC_SEQ_CST);
}

uint64_t rt_epoch_now(void)
{
	return __atomic_load_n(&rt_epoch_gp, __ATOMIC_RELAXED) >> 32;
}

static int membarrier(int cmd)
{
	return syscall(__NR_membarrier, cmd, 0, 0) < 0 ? -errno : 0;
}

/* Register this process for the expedited commands (once per process:
 * again in a fork child). */
static int registered(void)
{
	pid_t pid = getpid();
	if (registered_pid == pid)
		return 0;
	int r = membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
	if (r == 0)
		r = membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ);
	if (r == 0)
		registered_pid = pid;
	return r;
}

int rt_epoch_advance(void)
{
	int r = registered();
	if (r < 0)
		return r;
	/* Every thread's full fence (pairs with the readers' signal fences,
	 * epoch.h): what the caller unpublished before is seen by every
	 * section whose word the scan below does not see. */
	if ((r = membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)) < 0)
		return r;
	/* Relaxed: the membarrier above orders the unpublishing before it;
	 * a thread that reads the new epoch read it after the fence. */
	uint64_t gp = __atomic_load_n(&rt_epoch_gp, __ATOMIC_RELAXED) + RT_EPOCH_ONE;
	__atomic_store_n(&rt_epoch_gp, gp, __ATOMIC_RELAXED);
	/* Acquire: pairs with rt_epoch_register's release of hwm. */
	uint32_t n = __atomic_load_n(&hwm, __ATOMIC_ACQUIRE);
	/* Relaxed loads of the words: ordered by the membarriers around. */
	if (__atomic_load_n(&rt_epoch_shared.word, __ATOMIC_RELAXED) != 0)
		return -EAGAIN;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t w = __atomic_load_n(&slots[i].word, __ATOMIC_RELAXED);
		if ((w & RT_EPOCH_NEST_MASK) && (w >> 32) < (gp >> 32))
			return -EAGAIN;
	}
	/* Every thread's full fence again (pairs with the readers' exit):
	 * the accesses of the sections the scan saw ended are done before
	 * the caller frees what they used. */
	if ((r = membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)) < 0)
		return r;
	completed = gp >> 32;
	return 0;
}

bool rt_epoch_passed(uint64_t since)
{
	return completed > since;
}

int rt_epoch_rseq_fence(void)
{
	int r = registered();
	return r < 0 ? r : membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ);
}

void rt_epoch_fork_child(void)
{
	uint32_t n = __atomic_load_n(&hwm, __ATOMIC_RELAXED);
	for (uint32_t i = 0; i < n; i++) {
		if (&slots[i] == rt_epoch_mine)
			continue;
		slots[i].word = 0;
		slots[i].used = 0;
	}
	rt_epoch_shared.word = 0;
}
