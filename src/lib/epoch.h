/*
 * epoch.h - per-thread epochs: the grace period that tells when no
 * thread of this process still uses a buffer set the library stopped
 * publishing (daemon mode), so that it can be unmapped.
 *
 * Why: the library's paths write an event between a reservation and a
 * commit outside any rseq section (one_reserve, write_payload, rb_commit:
 * strings, contexts, several targets, version 1's call sites), and load
 * the buffer set from the class's target table before that. A thread may
 * be preempted anywhere in there for as long as the scheduler likes, so
 * neither pinning to a CPU nor membarrier's restart of rseq sections tells
 * when it is done. Each thread therefore says, in a word of its own, that
 * it is inside (and since which epoch); the grace period waits until no
 * word says "inside, since an epoch before mine".
 *
 * The algorithm is the one of liburcu's memb flavour (Desnoyers et al.,
 * "User-Level Implementations of Read-Copy Update", 2012, section 3.2:
 * membarrier makes the readers' side free of fences), with a 64-bit
 * counter instead of a phase bit (no wrap, so one scan after one
 * increment is a grace period) and polled, never blocking: the daemon
 * client's listener advances it when it has something to free and gives
 * up for now when a thread is still inside (a thread stopped in an event,
 * SIGSTOP, a debugger), retrying later. liburcu itself is not used: its
 * only flavour whose readers register themselves (urcu-bp) takes a mutex,
 * calls mmap and sigprocmask at a thread's first read-side section and
 * reaches its per-thread word through another object's TLS
 * (__tls_get_addr at every event); here a thread's first event claims a
 * slot with one compare-and-swap, and the word is one initial-exec TLS
 * load away.
 *
 * A thread's word is a slot of a static array (never freed, so the grace
 * period may read a slot whose thread exited), claimed at the thread's
 * first rt_epoch_enter and given back by a thread-specific-data
 * destructor at its exit. Word: bits 63..32 the epoch the thread entered
 * in, bits 31..0 its nesting depth (0: outside). More threads alive at
 * once than slots: the others share one counter updated with SMP atomics
 * (slower, correct).
 *
 * Concurrency contract:
 *  - rt_epoch_enter / rt_epoch_exit: any thread, signal handlers
 *    included, nested to any depth (a handler's pair runs whole between
 *    two instructions of the interrupted thread, so it leaves the word as
 *    it found it). No lock, no system call, no allocation (the first call
 *    of a thread: one compare-and-swap on a slot and pthread_setspecific
 *    of a key among the first 32, which writes the thread's own block;
 *    with a later key, loaded after the program made 32, every thread
 *    takes the shared slot).
 *  - rt_epoch_advance / rt_epoch_passed: one thread at a time (the
 *    caller's lock: rt_registry_lock); they make system calls
 *    (membarrier) and never block.
 *  - rt_epoch_fork_child: the fork child handler, alone in the process.
 */
#ifndef RINGTRACE_EPOCH_H
#define RINGTRACE_EPOCH_H

#include <stdbool.h>
#include <stdint.h>

#define RT_HIDDEN_EPOCH __attribute__((visibility("hidden")))

/* Threads with a word of their own at once. */
#define RT_EPOCH_SLOTS 4096
/* One epoch step in the word (the nesting depth is below). */
#define RT_EPOCH_ONE (1ULL << 32)
#define RT_EPOCH_NEST_MASK (RT_EPOCH_ONE - 1)

/* A thread's word, alone in its cache line (each thread writes its own
 * at every event: no line shared with another's). */
struct rt_epoch_slot {
	uint64_t word;		/* epoch << 32 | nesting depth */
	uint32_t used;		/* 0: free, 1: a thread's */
} __attribute__((aligned(64)));

/* The current epoch << 32 | 1: what a thread entering stores. Written
 * by rt_epoch_advance only. */
RT_HIDDEN_EPOCH extern uint64_t rt_epoch_gp;
/* The slot of the threads that found none free (shared, SMP atomics). */
RT_HIDDEN_EPOCH extern struct rt_epoch_slot rt_epoch_shared;
/* This thread's slot; NULL before its first rt_epoch_enter. */
RT_HIDDEN_EPOCH extern __thread struct rt_epoch_slot *rt_epoch_mine
	__attribute__((tls_model("initial-exec")));

/* Claim a slot for this thread (or rt_epoch_shared). */
RT_HIDDEN_EPOCH struct rt_epoch_slot *rt_epoch_register(void);
/* The shared slot's enter and exit (SMP atomics). */
RT_HIDDEN_EPOCH void rt_epoch_enter_shared(void);
RT_HIDDEN_EPOCH void rt_epoch_exit_shared(void);

/* Enter: from here until the matching rt_epoch_exit, what this thread
 * loaded from a published table stays mapped. */
static inline __attribute__((always_inline)) void rt_epoch_enter(void)
{
	struct rt_epoch_slot *s = rt_epoch_mine;
	if (__builtin_expect(s == NULL, 0))
		s = rt_epoch_register();
	if (__builtin_expect(s == &rt_epoch_shared, 0)) {
		rt_epoch_enter_shared();
		return;
	}
	/* Relaxed: only this thread (and its signal handlers, which leave
	 * it as they found it) writes the word. */
	uint64_t w = __atomic_load_n(&s->word, __ATOMIC_RELAXED);
	if (__builtin_expect((w & RT_EPOCH_NEST_MASK) == 0, 1)) {
		/* Relaxed load of the epoch: any recent value will do (an
		 * old one only makes a grace period wait for us). Relaxed
		 * store: the signal fence below keeps the loads of the
		 * section after it for the compiler, and rt_epoch_advance's
		 * membarrier orders it for the CPU (the asymmetric fence of
		 * liburcu's memb flavour): either the scan sees the store,
		 * or the section's loads see what was unpublished before
		 * the membarrier. */
		__atomic_store_n(&s->word, __atomic_load_n(&rt_epoch_gp, __ATOMIC_RELAXED),
				 __ATOMIC_RELAXED);
	} else {
		__atomic_store_n(&s->word, w + 1, __ATOMIC_RELAXED);
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/* Exit the section entered last. */
static inline __attribute__((always_inline)) void rt_epoch_exit(void)
{
	struct rt_epoch_slot *s = rt_epoch_mine;
	if (__builtin_expect(s == &rt_epoch_shared, 0)) {
		rt_epoch_exit_shared();
		return;
	}
	/* Signal fence: the section's accesses stay before the store for
	 * the compiler; for the CPU, rt_epoch_advance's membarrier after
	 * its scan orders them before what it frees (pairs with it). */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	uint64_t w = __atomic_load_n(&s->word, __ATOMIC_RELAXED);
	__atomic_store_n(&s->word, w - 1, __ATOMIC_RELAXED);
}

/* Init (the library constructor): the key whose destructor gives a
 * thread's slot back. */
RT_HIDDEN_EPOCH void rt_epoch_init(void);
/* The current epoch: what was unpublished before this call may be freed
 * once rt_epoch_passed(it) says so. */
RT_HIDDEN_EPOCH uint64_t rt_epoch_now(void);
/* Try to end a grace period: membarrier, then if no thread is inside
 * since an epoch before the current one, a new epoch, and membarrier
 * again. Returns 0, -EAGAIN (a thread still inside: try later) or
 * -errno of membarrier (unavailable: nothing may be freed, ever). */
RT_HIDDEN_EPOCH int rt_epoch_advance(void);
/* Whether every thread inside at rt_epoch_now() == since (or before) has
 * left: a completed rt_epoch_advance started after `since`'s epoch
 * ended. */
RT_HIDDEN_EPOCH bool rt_epoch_passed(uint64_t since);
/* Abort every rseq section of this process's threads in progress
 * (membarrier's RSEQ command): after it, a call site's section reads
 * what was stored before. 0 or -errno. */
RT_HIDDEN_EPOCH int rt_epoch_rseq_fence(void);
/* Fork child: the other threads' slots are free again (their threads
 * do not exist here). */
RT_HIDDEN_EPOCH void rt_epoch_fork_child(void);

#endif /* RINGTRACE_EPOCH_H */
