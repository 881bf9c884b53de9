/*
 * ringbuffer.pml - a Promela model of one CPU's ring buffer as built in
 * src/ringbuffer (ringbuffer.c, ringbuffer_api.h, rb_rseq.h,
 * rb_equations.h) and include/ringtrace/internal/fast.h, checked
 * exhaustively by spin (tests/model/run_model.sh; docs/reliability.md says
 * what it proves and what it abstracts away).
 *
 * Processes: the writers of one CPU, each a thread that may be preempted
 * (or interrupted by a signal handler that traces: nesting is a special
 * case of that interleaving) between any two steps, and may migrate
 * between its reservation and its commit; and the consumer (the reader:
 * get/put with the overwrite-mode swap, the non-destructive snapshot copy,
 * the flush, then the final flush and drain).
 *   callsite   rt__fast_event: reserve, write and commit in ONE rseq
 *              section (the store of write_count); if the section fails
 *              or aborts (its writes stay past write_count), rt__record:
 *              the library path below.
 *   libwriter  rb_reserve: rb_fast_reserve (reads, then one section that
 *              stores write_count and announced), else rb_reserve_on (the
 *              general path: announce, LCAS, packet switch, push of the
 *              reader); then the slot's writes and rb_commit.
 *
 * Units: one unit stands for a run of bytes. A sub-buffer is S units, its
 * packet header H units, an event 1 or 2 units. Counters do not wrap in a
 * run (the modular equations are unit-tested in tests/unit/test_equations.c).
 *
 * An rseq section is one atomic step: on its CPU nothing else runs during
 * it, and a section preempted, migrated or signalled before its commit has
 * stored nothing (the kernel restarts it at its abort label). Steps of
 * other CPUs (the reader, a migrated committer's SMP add) cannot observe
 * its middle: the bytes it writes lie in a sub-buffer the reader cannot
 * take while write_count is inside it. Every other load and store (the
 * completion test, the table CAS loops, the reader) is a step of its own.
 *
 * Model variable          code (struct rb_cpu_ctl, rb_subbuf_ctl, ...)
 *   wc                    write_count
 *   ann                   announced
 *   com                   committed (rseq adds on the owning CPU)
 *   comr                  committed_remote (SMP adds: migrated committers)
 *   rc                    read_count
 *   cseq[i]               sb[i].commit_seq / S: passes of sub-buffer i
 *                         completed (pass p complete <=> cseq == p + 1)
 *   tidx/ttag/tflag[i]    sb[i].table: physical index, pass tag, writer flag
 *   spare                 reader_subbuf (overwrite mode's extra sub-buffer)
 *   hot_tag, hot_phys     hot_tag, hot_off / S (the hot word)
 *   events_lost           events_lost
 *   subbufs_lost          subbufs_lost
 *   clk                   the clock (rt__rdtsc / client.clock_read)
 *   stamp[]               the data area: per unit, which logical unit was
 *                         written there (write_count value + 1); unit 0
 *                         of a sub-buffer is its packet header
 *                         (subbuf_begin)
 *   pend[p]               the packet's content_size (subbuf_end), as the
 *                         logical offset of the packet's end
 *   ann2, com2, comr2     DEAD: the library writer's account
 *   fr2, to2              DEAD: its out_from, out_to
 *   fr                    RECOVER: the CPU's out_from
 *   vb, ve                DEAD, RECOVER: void_begin, void_end
 * Ghosts (no counterpart, for the assertions): ev_commit/ev_read (event at
 * that logical unit recorded / read back), lostsb (sub-buffer pushed and
 * counted), dropped (events refused and counted), rd_hold/rd_phys (the
 * physical sub-buffer the reader holds between get and put), wdone.
 *
 * Build switches: -DOVERWRITE (overwrite mode, else discard mode);
 * -DPREFILL (start from N complete unread packets, so that the writers'
 * first reservation pushes the reader or finds the buffer full);
 * -DSNAPSHOT (the consumer may also take a snapshot copy); CS_EVENTS,
 * LIB_EVENTS, LIB_SZ, OPS (the writers' events and the consumer's
 * operations while they run); and the seeded mutations, each of which
 * spin must refute (tests/model/run_model.sh):
 *   M_COMPLETE_IGNORES_ANNOUNCED  completion without announced == committed
 *   M_NO_ANNOUNCE_SLOW            the general path announces no slot
 *   M_FAST_NO_ANNOUNCE            rb_rseq_reserve stores write_count only
 *   M_COMPLETE_ORDER              completion reads announced first
 *   M_CLOCK_OUTSIDE               clock read before the reservation loop
 *   M_CS_NO_HOT_CHECK             one-section event trusts a stale hot word
 *   M_PUSH_UNCOUNTED              push of the reader not counted
 *   M_SNAPSHOT_NO_RECHECK         snapshot copy without the re-check
 *
 * Atomic mode (-DSMP: no rseq, every counter an SMP atomic; ringbuffer.h,
 * stamp): two library writers on different CPUs write the one buffer (a
 * thread picks the buffer of the CPU it ran on, and may have migrated
 * since), no call-site events. A reservation is the announcement (an
 * SMP add), then ONE compare-and-swap of the pair {write_count, stamp}
 * (pst) from the pair it read (two loads: possibly torn) to {end, its
 * timestamp}; its clock read may come before those loads (the fast
 * path's unordered TSC read) and is raised to the stamp read
 * (rb_smp_reserve: the physical sub-buffer from the table, not the hot
 * word). Every commit is an SMP add. Mutation: M_SMP_NO_CLAMP (the
 * clock read used as is, the swap of write_count alone).
 *
 * Dead writers (-DDEAD): the library writer is another program, with its
 * own account (struct rb_acct: ann2, com2, comr2) in a buffer the call
 * site's program writes too; it may die (stop for good) after its
 * reservation, before or after writing its slot, never committing it.
 * Once it is dead the consumer may void its account's outstanding work
 * (rb_void_dead: the range of sub-buffers that may hold its slot, from
 * its account's out_from to its out_to, within the passes not complete,
 * then the add to comr2, completion, a flush); the reader gives up the
 * complete sub-buffers in that range (counted in subbufs_lost).
 * Mutations: M_VOID_NO_RANGE (voided, no range given up), M_NO_BOUNDS_SLOW
 * (the general path's reservation stores no out_from/out_to).
 * Recovery (-DRECOVER): any library reservation may be its program's last
 * (killed after reserving, before or after writing, never committing);
 * once every writer is done or dead the consumer runs rb_close_dead
 * (nothing outstanding: complete what write_count left and close the
 * open packet; else rb_cut_dead: publish the passes below the CPU's
 * out_from, close its packet there, give up the rest, count the dead
 * slot) and drains, giving up what stays incomplete (rb_skip_stuck, at
 * once). Every event committed below the cut is read. Mutations:
 * M_CLOSE_DEAD_VOIDS (rb_close_dead voids the outstanding work and
 * completes anyway), M_CUT_AT_WC (the cut at write_count, not at
 * out_from).
 */

#define S 4		/* sub-buffer size (units) */
#define N 2		/* sub-buffers */
#define H 1		/* packet header (units) */
#define NPHYS 3		/* N + 1: the reader's spare in overwrite mode */
#define MAXU 32		/* bound on write_count in a run */
#define NONE 255	/* RB_HOT_TAG_NONE: matches no sub-buffer start */
#define NW 2		/* writers */
#ifndef CS_EVENTS
#define CS_EVENTS 1	/* the call site's events */
#endif
#ifndef LIB_EVENTS
#define LIB_EVENTS 1	/* the library path's events */
#endif
#ifndef LIB_SZ
#define LIB_SZ 1	/* their size */
#endif
#ifndef OPS
#define OPS 1		/* the consumer's operations while they run */
#endif

#ifdef OVERWRITE
#define OVW 1
#else
#define OVW 0
#endif

/* Units the slow path's reservation announces for its slot, and the
 * library fast path's (rb_rseq_reserve): the slot's size. */
#ifdef M_NO_ANNOUNCE_SLOW
#define SLOW_UNITS(sz) 0
#else
#define SLOW_UNITS(sz) (sz)
#endif
#ifdef M_FAST_NO_ANNOUNCE
#define FAST_UNITS(sz) 0
#else
#define FAST_UNITS(sz) (sz)
#endif

byte wc, ann, com, comr, rc;
byte cseq[N];
byte tidx[N], ttag[N];
bit tflag[N];
byte spare = N;
byte hot_tag = NONE, hot_phys;
byte pst;	/* SMP: stamp, paired with write_count */
byte events_lost, subbufs_lost;
byte clk = 1;
byte stamp[NPHYS * S];
byte pend[NPHYS];

#if defined(DEAD) || defined(RECOVER)
byte vb, ve;
/* The sub-buffer at logical o lies in the void range. */
#define IN_VOID(o) ((o) / S * S >= vb && (o) / S * S < ve)
#else
#define IN_VOID(o) false
#endif
#ifdef RECOVER
byte fr;	/* out_from of the CPU's words */
/* In the reservation's section (rb_rseq_reserve, rb_rseq_place): out_from
 * = the slot's start when the words' outstanding work is only the
 * reservation's own `u` units. */
#define FROM_CPU(st, u) if :: ann == com + comr + (u) -> fr = (st) :: else -> skip fi
#else
#define FROM_CPU(st, u) skip
#endif
#ifdef DEAD
byte ann2, com2, comr2;
byte fr2, to2;
bit voided;
#ifdef M_NO_BOUNDS_SLOW
#define BOUNDS_SLOW(st, en, u) skip
#else
#define BOUNDS_SLOW(st, en, u) BOUNDS(st, en, u)
#endif
/* rb_rseq_place's bounds for this process's words: the account's out_from
 * and out_to, or the CPU's out_from. */
#define BOUNDS(st, en, u) \
	if \
	:: acct -> \
		if :: ann2 == com2 + comr2 + (u) -> fr2 = (st) :: else -> skip fi; \
		to2 = (en) \
	:: else -> FROM_CPU(st, u) \
	fi
/* Work announced and committed, the CPU's words and the account's. */
#define ANN_ALL (ann + ann2)
#define DONE_ALL (com + comr + com2 + comr2)
/* This process's words (ringbuffer.h, accounts): the account's for the
 * library writer (acct), the CPU's for the others. */
#define ANN_ADD(x) atomic { ann2 = ann2 + (acct -> (x) : 0); ann = ann + (acct -> 0 : (x)) }
#define COM_ADD(x) atomic { com2 = com2 + (acct -> (x) : 0); com = com + (acct -> 0 : (x)) }
#define COMR_ADD(x) atomic { comr2 = comr2 + (acct -> (x) : 0); comr = comr + (acct -> 0 : (x)) }
#define CAN_DIE acct
#define ACCT_LOCAL , acct
#else
#define acct 0
#define ACCT_LOCAL
#define BOUNDS(st, en, u) FROM_CPU(st, u)
#define BOUNDS_SLOW(st, en, u) FROM_CPU(st, u)
#define ANN_ALL ann
#define DONE_ALL (com + comr)
#define ANN_ADD(x) ann = ann + (x)
#define COM_ADD(x) com = com + (x)
#define COMR_ADD(x) comr = comr + (x)
#ifdef RECOVER
#define CAN_DIE 1
#else
#define CAN_DIE 0
#endif
#endif
#if defined(DEAD) || defined(RECOVER)
bit dead;	/* ghost: a writer died (DEAD: its pidfd is readable) */
#endif
#ifdef RECOVER
byte cut = MAXU;	/* ghost: where rb_cut_dead cut (MAXU: no cut) */
byte torn;		/* ghost: dead slots counted in events_lost */
#endif

byte dropped;
bit ev_commit[MAXU], ev_read[MAXU], lostsb[MAXU / S];
bit rd_hold;
byte rd_phys;
byte wdone;

/* Timestamps monotonic in buffer order: each reservation (the store of
 * write_count) carries a timestamp no older than the one before it in
 * the buffer (the packet header of a switch carries its writer's). */
byte last_res_ts;
#define TS_CHECK(t) assert((t) >= last_res_ts); last_res_ts = (t)

/* No hole: a pass published complete holds its packet header, its
 * size, and every unit up to that size written for this pass (checked
 * when it is published, inside that step; g_p and g_u are scratch). */
byte g_p, g_u;
#if OVW
#define WHOLE_PHYS(idx) tidx[idx]
#else
#define WHOLE_PHYS(idx) (idx)
#endif
#define WHOLE(idx, off) \
	g_p = WHOLE_PHYS(idx); \
	assert(stamp[g_p * S] == (off) / S * S + 1); \
	assert(pend[g_p] >= (off) / S * S + H && pend[g_p] <= (off) / S * S + S); \
	g_u = H; \
	do \
	:: g_u < pend[g_p] - (off) / S * S -> \
		assert(stamp[g_p * S + g_u] == (off) / S * S + g_u + 1); g_u++ \
	:: else -> break \
	od; \
	g_p = 0; g_u = 0

/* Every write into the data area: never into the sub-buffer the reader
 * holds, never past the bound of the run. */
#define WRITABLE(p) assert(!(rd_hold && (p) == rd_phys))

/* rb_subbuf_try_complete(idx, off): sets tc. */
inline try_complete(idx, off)
{
	atomic {
		tgt = (off) / (N * S) + 1;
		raw = cseq[idx];
		tc = (raw == tgt)
	};
	if
	:: raw == tgt || raw + 1 != tgt -> skip
	:: else ->
#ifdef M_COMPLETE_ORDER
		/* Mutation: announced read first. */
		a = ANN_ALL;
		done = com;
		done = done + comr;
		atomic {
			wa = wc;
#else
		/* committed, committed_remote, then write_count, then
		 * announced: acquire loads in this order. */
		done = com;
		done = done + comr;
#ifdef DEAD
		/* The account's committed words (read together: a
		 * simplification of rb_done's loads). */
		done = done + com2 + comr2;
#endif
		wa = wc;
		atomic {
			a = ANN_ALL;
			/* RB_ASSERT: outstanding work never negative. */
			assert(a >= done);
#endif
#ifndef M_COMPLETE_IGNORES_ANNOUNCED
			tc = (wa >= (off) / S * S + S && a == done);
#else
			tc = (wa >= (off) / S * S + S);
#endif
			wa = 0; a = 0; done = 0
		};
		if
		:: tc ->
			/* Seq-cst CAS from the previous pass's value. */
			atomic {
				if
				:: cseq[idx] == raw -> cseq[idx] = tgt;
					/* Published with a hole only when the
					 * reader gives it up (a voided dead
					 * writer's slot). */
					if
					:: IN_VOID(off) -> skip
					:: else -> WHOLE(idx, off)
					fi
				:: else -> skip
				fi
			};
#if OVW
			/* Clear the writer flag of this pass (release CAS). */
			atomic {
				if
				:: tflag[idx] && ttag[idx] == tgt - 1 -> tflag[idx] = 0
				:: else -> skip
				fi
			}
#else
			skip
#endif
		:: else -> skip
		fi
	fi;
	raw = 0;
	tgt = 0
}

/* rb_complete_behind: the passes write_count has left, newest first. */
inline complete_behind()
{
	at = wc / S * S;
	i = 0;
	do
	:: i < N && at != 0 ->
		at = at - S;
		i++;
		cbidx = (at / S) % N;
		if
		:: cseq[cbidx] == at / (N * S) + 1 -> break
		:: else ->
			try_complete(cbidx, at);
			if
			:: !tc -> break
			:: else -> skip
			fi
		fi
	:: else -> break
	od
}

/* rb_commit_units: units of the slow path, on the CPU (rseq add; the
 * migrated case, an SMP add, is the slot commit's below); then complete
 * what write_count left. */
inline commit_units(units)
{
#ifdef SMP
	COMR_ADD(units);
#else
	COM_ADD(units);
#endif
	complete_behind()
}

/* rb_commit_rseq / rb_commit_slow for a slot at st with rm units of room
 * to its sub-buffer's end (0: its reservation switched sub-buffers). */
inline commit_slot(units, st, rm)
{
#ifdef SMP
	COMR_ADD(units);
#else
	if
	:: COM_ADD(units)
	:: COMR_ADD(units)
	fi;
#endif
	w2 = wc;
	if
	:: w2 - (st) >= rm -> complete_behind()
	:: else -> skip
	fi
}

/* rb_lcas_announce: an rseq add to announced (by the caller), then the compare-and-store
 * of write_count, whose failure voids the announcement with a commit.
 * (A section aborted by preemption or migration has the effect of a
 * failed compare: nothing stored, or the announcement voided.) */
inline lcas(w0, newv, units)
{
	atomic {
		if
#ifdef SMP
		/* The swap of {write_count, stamp}. */
		:: wc == w0 && pst == lst -> BOUNDS_SLOW(w0, newv, units); wc = newv; pst = ts;
			ok = 1; TS_CHECK(ts)
#else
		:: wc == w0 -> BOUNDS_SLOW(w0, newv, units); wc = newv; ok = 1; TS_CHECK(ts)
#endif
		:: else -> ok = 0
		fi
	};
	if
	:: !ok -> commit_units(units)
	:: else -> skip
	fi
}

/* rb_writer_phys: the physical sub-buffer holding offset o for a writer
 * (overwrite mode: set this pass's tag and the writer flag by CAS). */
inline writer_phys(o, pp)
{
	ti = ((o) / S) % N;
#if OVW
	tp = (o) / (N * S);
	atomic { lidx = tidx[ti]; ltag = ttag[ti]; lflag = tflag[ti] };
	do
	:: lflag && ltag == tp -> pp = lidx; break
	:: else ->
		atomic {
			if
			:: tidx[ti] == lidx && ttag[ti] == ltag && tflag[ti] == lflag ->
				ttag[ti] = tp; tflag[ti] = 1; lflag = 1; ltag = tp
			:: else ->
				lidx = tidx[ti]; ltag = ttag[ti]; lflag = tflag[ti]
			fi
		}
	od
#else
	pp = ti
#endif
}

/* SWITCH_OLDSUBBUF / END_SWITCH_CURRENT: rb_close_packet (subbuf_end). */
inline close_packet(atx, used)
{
	writer_phys(atx - 1, p);
	atomic { WRITABLE(p); pend[p] = (atx - 1) / S * S + used }
}

/* SWITCH_NEWSUBBUF: subbuf_begin writes the packet header. */
inline open_packet(b)
{
	writer_phys(b, p);
	atomic { WRITABLE(p); stamp[p * S] = b + 1 }
}

/* PUSH_READER (overwrite mode). */
inline push_reader(b)
{
	r = rc;
	do
	:: (b) / S - r / S >= N ->
		atomic {
			if
			:: rc == r ->
				rc = r / S * S + S;
#ifndef M_PUSH_UNCOUNTED
				subbufs_lost++;
#endif
				lostsb[r / S] = 1
			:: else -> skip
			fi;
			r = rc
		}
	:: else -> break
	od
}

/* The slot's writes (header and payload): one step, with the event's
 * ghost. */
inline write_slot(st, sz)
{
	atomic {
		u = 0;
		do
		:: u < sz ->
			WRITABLE(p);
			stamp[p * S + (st) % S + u] = (st) + u + 1;
			u++
		:: else -> break
		od;
		ev_commit[st] = 1;
		assert(wc < MAXU)
	}
}

inline drop()
{
	atomic { events_lost++; dropped++ };
	res = 0
}

/* rb_reserve_on (Algorithms 1 and 2): sets res (1 reserved, 0 dropped),
 * start, units and rm, and p (the slot's physical sub-buffer). */
inline reserve_slow(sz)
{
#ifdef M_CLOCK_OUTSIDE
	/* Mutation: the clock read once, before the reservation loop. */
	atomic { ts = clk; clk++ };
#endif
	do
	:: w = wc;
#ifdef SMP
		lst = pst;
#endif
		atomic {
#ifndef M_CLOCK_OUTSIDE
			ts = clk;
			clk++;
#endif
#ifdef SMP
			/* rb_stamp_after: raised to the stamp read. */
			ts = (ts < lst -> lst : ts);
#endif
			in_sb = w % S;
			begin = w;
			so = 0;
			sn = 0;
			if
			:: in_sb != 0 && in_sb + sz > S -> so = 1; begin = w - in_sb + S
			:: else -> skip
			fi;
			sn = (begin % S == 0);
			nidx = (begin / S) % N
		};
		if
		:: sn ->
			/* Equation (3), helping a migrated committer first. */
			if
			:: cseq[nidx] != begin / (N * S) ->
				try_complete(nidx, begin - N * S)
			:: else -> skip
			fi;
			if
			:: cseq[nidx] != begin / (N * S) -> drop(); break
			:: else -> skip
			fi;
#if !OVW
			/* Equation (1): buffer full. */
			if
			:: begin / S - rc / S >= N -> drop(); break
			:: else -> skip
			fi
#endif
		:: else -> skip
		fi;
		atomic {
			start = begin + (sn -> H : 0);
			endo = start + sz;
			job = so || sn;
			units = SLOW_UNITS(sz);
			ANN_ADD(units + job)	/* the announcement (rseq add) */
		};
		lcas(w, endo, units + job);
		if
		:: !ok -> skip
		:: ok ->
#if OVW
			if
			:: sn -> push_reader(begin)
			:: else -> skip
			fi;
#endif
			if
			:: so -> close_packet(begin, in_sb)
			:: else -> skip
			fi;
			if
			:: sn -> open_packet(begin)
			:: else -> skip
			fi;
			if
			:: endo % S == 0 -> close_packet(endo, S)
			:: else -> skip
			fi;
			if
			:: job -> commit_units(1)
			:: else -> skip
			fi;
			/* rb_ctx_place: the slot's sub-buffer, and the hot word
			 * (rb_rseq_hot_store: only while write_count is still in
			 * that sub-buffer). */
			writer_phys(start, p);
			atomic {
				if
				:: wc / S == start / S -> hot_tag = start / S * S; hot_phys = p
				:: else -> skip
				fi
			};
			rm = (job -> 0 : S - start % S);
			res = 1;
			break
		fi
	od
}

/* rb_reserve, the slot's writes, rb_commit: one event of sz units through
 * the library. */
inline lib_event(sz)
{
#ifdef SMP
	/* rb_smp_reserve: the clock first (unordered: it may run before the
	 * loads), write_count, the stamp, the table entry (overwrite mode),
	 * then the announcement and the swap of the pair. */
	atomic { ts = clk; clk++ };
	w = wc;
	lst = pst;
	in_sb = w % S;
	ti = (w / S) % N;
#if OVW
	atomic { lidx = tidx[ti]; ltag = ttag[ti]; lflag = tflag[ti] };
	ok = (lflag && ltag == w / (N * S));
#else
	lidx = ti;
	ok = 1;
#endif
	if
	:: ok && in_sb != 0 && in_sb + sz < S ->
#ifndef M_SMP_NO_CLAMP
		ts = (ts < lst -> lst : ts);
#endif
		ANN_ADD(sz);
		atomic {
			if
#ifdef M_SMP_NO_CLAMP
			:: wc == w -> BOUNDS(w, w + sz, sz); wc = w + sz; pst = ts; TS_CHECK(ts)
#else
			:: wc == w && pst == lst -> BOUNDS(w, w + sz, sz); wc = w + sz; pst = ts;
				TS_CHECK(ts)
#endif
			:: else -> ok = 0
			fi
		};
		if
		:: !ok -> commit_units(sz)	/* rb_unannounce */
		:: else -> skip
		fi
	:: else -> ok = 0
	fi;
	if
	:: ok -> p = lidx; start = w; units = sz; rm = S - in_sb; res = 1
	:: else -> reserve_slow(sz)
	fi;
#else
	/* rb_fast_reserve: loads, then the section (rb_rseq_reserve). */
	w = wc;
	atomic { lt = hot_tag; lp = hot_phys; in_sb = w % S; ok = 0 };
	if
	:: w - in_sb == lt && in_sb + sz < S && !acct ->
		atomic { ts = clk; clk++ };
		atomic {
			if
			:: wc == w -> FROM_CPU(w, 0); wc = w + sz; ann = ann + FAST_UNITS(sz);
				ok = 1; TS_CHECK(ts)
			:: else -> skip
			fi
		}
#ifdef DEAD
	:: w - in_sb == lt && in_sb + sz < S && acct ->
		/* With an account: the announcement (a section of its own),
		 * then the compare-and-store, whose failure voids it
		 * (rb_unannounce). */
		atomic { ts = clk; clk++ };
		ann2 = ann2 + FAST_UNITS(sz);
		atomic {
			if
			:: wc == w -> BOUNDS(w, w + sz, FAST_UNITS(sz)); wc = w + sz; ok = 1;
				TS_CHECK(ts)
			:: else -> skip
			fi
		};
		if
		:: !ok -> commit_units(FAST_UNITS(sz))
		:: else -> skip
		fi
#endif
	:: else -> skip
	fi;
	if
	:: ok -> p = lp; start = w; units = FAST_UNITS(sz); rm = S - in_sb; res = 1
	:: else -> reserve_slow(sz)
	fi;
#endif
	if
	:: res ->
#if defined(DEAD) || defined(RECOVER)
		/* A program killed with its slot reserved: before writing
		 * it, or after, never committing it. */
		if
		:: CAN_DIE && !dead -> dead = 1; goto died
		:: else -> skip
		fi;
		write_slot(start, sz);
		if
		:: CAN_DIE && !dead -> dead = 1; goto died
		:: else -> skip
		fi;
#else
		write_slot(start, sz);
#endif
		commit_slot(units, start, rm)
	:: else -> skip
	fi
}

#define WRITER_LOCALS \
	byte w, w2, in_sb, begin, start, endo, ts, nidx, r, p, u, ti, tp; \
	byte lidx, ltag, lt, lp, units, rm, at, i, cbidx, tgt, raw, done, wa, a, lst; \
	bit so, sn, job, ok, res, lflag, tc ACCT_LOCAL

/* Dead locals back to 0 after each event, so that states differing only
 * in them are one state. */
#define WRITER_RESET \
	atomic { \
		nev--; w = 0; w2 = 0; in_sb = 0; begin = 0; start = 0; endo = 0; ts = 0; \
		nidx = 0; r = 0; p = 0; u = 0; ti = 0; tp = 0; lidx = 0; ltag = 0; \
		lt = 0; lp = 0; units = 0; rm = 0; at = 0; i = 0; cbidx = 0; \
		so = 0; sn = 0; job = 0; ok = 0; res = 0; lflag = 0; tc = 0; lst = 0 \
	}
#define CONSUMER_RESET \
	atomic { \
		ops++; w = 0; in_sb = 0; ts = 0; r = 0; p = 0; u = 0; ti = 0; tp = 0; \
		lidx = 0; ltag = 0; at = 0; i = 0; cbidx = 0; gidx = 0; se = 0; \
		sf = 0; off = 0; sidx = 0; cs = 0; sp = 0; cpend = 0; cp[0] = 0; \
		cp[1] = 0; cp[2] = 0; cp[3] = 0; ok = 0; lflag = 0; tc = 0; lst = 0 \
	}

/* The call sites' one-section events (rt__fast_event), 1 unit each. */
proctype callsite(byte nev)
{
	WRITER_LOCALS;
	do
	:: nev > 0 ->
		atomic {
			w = wc;
			in_sb = w % S;
			ts = clk;
			clk++;
			ok = 0;
			if
#ifdef M_CS_NO_HOT_CHECK
			/* Mutation: the hot word's tag not compared. */
			:: in_sb + 1 < S ->
#else
			:: hot_tag == w - in_sb && in_sb + 1 < S ->
#endif
				p = hot_phys;
				WRITABLE(p);
				stamp[p * S + in_sb] = w + 1;
				if
				:: wc = w + 1; ev_commit[w] = 1; ok = 1;
					TS_CHECK(ts)
				:: skip	/* aborted before the store: the bytes
					 * stay past write_count */
				fi
			:: else -> skip
			fi
		};
		if
		:: !ok -> lib_event(1)
		:: else -> skip
		fi;
		WRITER_RESET
	:: else -> break
	od;
died:
	wdone++
}

/* Events of the library path, of LIB_SZ units: 1 (its fast path applies
 * in the middle of a packet) or 2 (a string: it may cross a sub-buffer's
 * end, SWITCH_OLDSUBBUF). */
proctype libwriter(byte nev)
{
	WRITER_LOCALS;
#ifdef DEAD
	acct = 1;	/* another program, on its own account */
#endif
	do
	:: nev > 0 -> lib_event(LIB_SZ); WRITER_RESET
	:: nev == 0 -> break
	od;
died:
	wdone++
}

/* The packet the reader took, at logical r in physical p: header, size,
 * every unit of the packet written for this pass (no hole, nothing torn),
 * timestamps monotonic in buffer order. */
inline read_packet(r, p)
{
	atomic {
		assert(stamp[p * S] == r + 1);
		assert(pend[p] >= r + H && pend[p] <= r + S);
		u = H;
		do
		:: u < pend[p] - r ->
			assert(stamp[p * S + u] == r + u + 1);
			ev_read[r + u] = 1;
			u++
		:: else -> break
		od
	}
}

/* rb_get_subbuf (Algorithm 6), the read, rb_put_subbuf (Algorithm 7):
 * sets got. */
inline get_put()
{
	atomic { got = 0; r = rc; gidx = (r / S) % N };
	if
	:: cseq[gidx] != r / (N * S) + 1 -> try_complete(gidx, r)
	:: else -> skip
	fi;
	if
	:: cseq[gidx] == r / (N * S) + 1 ->
		/* Equation (4): not while the writers are in it. */
		if
		:: wc / S != r / S && IN_VOID(r) ->
			/* rb_get_one: a sub-buffer a dead writer's slot may be
			 * in is given up (rb_give_up), never read. */
			atomic {
				if
				:: rc == r -> rc = r / S * S + S; subbufs_lost++; lostsb[r / S] = 1
				:: else -> skip
				fi;
				got = 1
			}
		:: wc / S != r / S && !IN_VOID(r) ->
#if OVW
			atomic { lidx = tidx[gidx]; ltag = ttag[gidx]; lflag = tflag[gidx] };
			if
			:: lflag || ltag != r / (N * S) -> skip
			:: else ->
				/* Acq-rel CAS: swap in the spare. */
				atomic {
					if
					:: tidx[gidx] == lidx && ttag[gidx] == ltag &&
					   tflag[gidx] == lflag ->
						tidx[gidx] = spare;
						tflag[gidx] = 0;
						spare = lidx;
						rd_phys = lidx;
						rd_hold = 1;
						got = 1
					:: else -> skip
					fi
				}
			fi;
#else
			atomic { rd_phys = gidx; rd_hold = 1; got = 1 };
#endif
			if
			:: got ->
				read_packet(r, rd_phys);
				atomic {
					if
					:: rc == r -> rc = r / S * S + S
					:: else -> skip
					fi;
					rd_hold = 0
				}
			:: else -> skip
			fi
		:: else -> skip
		fi
	:: else -> skip
	fi
}

/* rb_snapshot_range + rb_snapshot_copy: copy a complete sub-buffer
 * without taking it (in two steps a writer may come between); a copy
 * that passed the re-check must be whole. */
inline snapshot()
{
	se = wc / S * S;
	sf = rc / S * S;
	if
	:: se - sf > N * S -> sf = se - N * S
	:: else -> skip
	fi;
	if
	:: sf < se ->
		if
		:: off = sf
		:: sf + S < se -> off = sf + S
		fi;
		sidx = (off / S) % N;
		cs = cseq[sidx];
		got = 0;
		if
		:: cs == off / (N * S) + 1 ->
#if OVW
			atomic { lidx = tidx[sidx]; ltag = ttag[sidx]; lflag = tflag[sidx] };
			if
			:: lflag || ltag != off / (N * S) -> skip
			:: else -> sp = lidx; got = 1
			fi
#else
			sp = sidx;
			got = 1
#endif
		:: else -> skip
		fi;
		if
		:: got ->
			atomic { cp[0] = stamp[sp * S]; cp[1] = stamp[sp * S + 1]; cpend = pend[sp] };
			atomic { cp[2] = stamp[sp * S + 2]; cp[3] = stamp[sp * S + 3] };
#ifndef M_SNAPSHOT_NO_RECHECK
			if
			:: cseq[sidx] != cs -> got = 0
			:: else -> skip
			fi;
#if OVW
			if
			:: tidx[sidx] != lidx || ttag[sidx] != ltag || tflag[sidx] != lflag -> got = 0
			:: else -> skip
			fi;
#endif
#endif
			if
			:: got ->
				atomic {
					assert(cp[0] == off + 1);
					assert(cpend >= off + H && cpend <= off + S);
					u = H;
					do
					:: u < cpend - off -> assert(cp[u] == off + u + 1); u++
					:: else -> break
					od
				}
			:: else -> skip
			fi
		:: else -> skip
		fi
	:: else -> skip
	fi
}

/* rb_force_switch (Algorithm 4) on the CPU (the flusher pins itself
 * there: its sections are the CPU's). A flush at a boundary has nothing
 * to close (the final packet that only reports a lost count is not
 * modelled). */
inline flush(final)
{
	do
	:: w = wc;
		in_sb = w % S;
		if
		:: in_sb == 0 -> break
		:: else -> skip
		fi;
#ifdef SMP
		/* Atomic mode: the swap of the pair, its timestamp raised to
		 * the stamp read; commits are SMP adds. */
		lst = pst;
		atomic { ts = clk; clk++; ts = (ts < lst -> lst : ts) };
		ann++;
		atomic {
			if
			:: wc == w && pst == lst -> wc = w - in_sb + S; pst = ts; ok = 1;
				TS_CHECK(ts)
			:: else -> ok = 0
			fi
		};
		if
		:: !ok -> comr++; complete_behind()
		:: ok ->
			close_packet(w - in_sb + S, in_sb);
			comr++;
			complete_behind();
#else
		atomic { ts = clk; clk++ };
		ann++;
		atomic {
			if
			:: wc == w -> FROM_CPU(w, 1); wc = w - in_sb + S; ok = 1
			:: else -> ok = 0
			fi
		};
		if
		:: !ok -> com++; complete_behind()
		:: ok ->
			close_packet(w - in_sb + S, in_sb);
			com++;
			complete_behind();
#endif
			if
			:: !final -> break
			:: else -> skip
			fi
		fi
	od
}

#ifdef DEAD
/* rb_void_dead for the dead library writer's account: the range from the
 * first pass not complete at the read position to the end of the
 * sub-buffer write_count is in (one step: a simplification of its
 * loads), then the void (an SMP add), completion and a flush. */
inline void_dead()
{
	if
	:: dead && !voided && ann2 != com2 + comr2 ->
#ifndef M_VOID_NO_RANGE
		atomic {
			at = rc / S * S;
			ve = (wc + S - 1) / S * S;
			do
			:: at != ve && cseq[(at / S) % N] == at / (N * S) + 1 -> at = at + S
			:: else -> break
			od;
			/* The account's bounds, within the passes not complete
			 * and write_count's sub-buffer. */
			vb = fr2 / S * S;
			if
			:: vb < at -> vb = at
			:: else -> skip
			fi;
			if
			:: (to2 + S - 1) / S * S < ve -> ve = (to2 + S - 1) / S * S
			:: else -> skip
			fi;
			if
			:: ve < vb -> ve = vb
			:: else -> skip
			fi;
			at = 0
		};
#endif
		atomic { comr2 = ann2 - com2; voided = 1 };
		complete_behind();
		flush(0)
	:: else -> skip
	fi
}
#endif

#ifdef RECOVER
/* Recovery's publication of the pass at logical `o` (rb_publish_dead):
 * whole unless given up (the void range). */
inline publish_dead(o)
{
	cbidx = (o / S) % N;
	cseq[cbidx] = o / (N * S) + 1;
	if
	:: IN_VOID(o) -> skip
	:: else -> WHOLE(cbidx, o)
	fi;
#if OVW
	if
	:: tflag[cbidx] && ttag[cbidx] == o / (N * S) -> tflag[cbidx] = 0
	:: else -> skip
	fi;
#endif
	cbidx = 0
}

/* rb_cut_dead, one step (the buffer's only user): the passes below the
 * sub-buffer of the CPU's out_from published, its packet closed there
 * when its header is below, the rest up to the end of write_count's
 * sub-buffer given up (the void range, write_count moved there), the
 * dead slot counted as a lost event. */
inline cut_dead()
{
	atomic {
#ifdef M_CUT_AT_WC
		cut = wc;
#else
		cut = fr;
#endif
		ve = (wc + S - 1) / S * S;
		at = rc / S * S;
		do
		:: at != ve && cseq[(at / S) % N] == at / (N * S) + 1 -> at = at + S
		:: else -> break
		od;
		if
		:: cut / S * S < at -> cut = at
		:: else -> skip
		fi;
		events_lost++;
		torn++;
		vb = ve;
		do
		:: at != cut / S * S -> publish_dead(at); at = at + S
		:: else -> break
		od;
		if
		:: at != ve && cut - at >= H ->
			p = WHOLE_PHYS((at / S) % N);
			pend[p] = cut;
			publish_dead(at);
			at = at + S
		:: else -> skip
		fi;
		vb = at;
		do
		:: at != ve -> publish_dead(at); at = at + S
		:: else -> break
		od;
		wc = ve;
		at = 0;
		p = 0
	}
}

/* rb_close_dead: nothing if work is outstanding; else complete what
 * write_count left and close the open packet (an SMP reservation: no
 * section of anyone runs any more). */
inline close_dead()
{
#ifdef M_CLOSE_DEAD_VOIDS
	/* Mutation: the outstanding work voided, the passes completed. */
	comr = ann - com;
#endif
	if
	:: ann == com + comr -> complete_behind(); flush(0)
	:: else -> cut_dead()
	fi
}

/* rb_skip_stuck at once (the writers are gone): the sub-buffer at the
 * read position, left by write_count and still not complete, given up
 * and counted; sets got. */
inline skip_stuck()
{
	atomic {
		got = 0;
		r = rc;
		if
		:: wc - r / S * S >= S && cseq[(r / S) % N] != r / (N * S) + 1 ->
			rc = r / S * S + S; subbufs_lost++; lostsb[r / S] = 1; got = 1
		:: else -> skip
		fi
	}
}
#endif

proctype consumer()
{
	byte w, in_sb, ts, r, p, u, ti, tp, lidx, ltag, at, i, cbidx;
	byte tgt, raw, done, wa, a, gidx, se, sf, off, sidx, cs, sp, cpend, lst;
	byte cp[S];
	byte lost_count, ops;
	bit got, ok, lflag, tc ACCT_LOCAL;
	/* While the writers run: OPS operations in any order, at any
	 * points (a bound that keeps the check exhaustive in minutes). */
	do
	:: ops < OPS -> get_put(); CONSUMER_RESET
	:: ops < OPS -> flush(0); CONSUMER_RESET
#ifdef SNAPSHOT
	:: ops < OPS -> snapshot(); CONSUMER_RESET
#endif
#ifdef DEAD
	:: dead && !voided -> void_dead()
#endif
	:: wdone == NW -> break
	od;
#ifdef DEAD
	void_dead();
#endif
#ifdef RECOVER
	/* `ringtrace recover`: every writer is gone. */
	close_dead();
	do
	:: get_put();
		if
		:: !got -> skip_stuck()
		:: else -> skip
		fi;
		if
		:: !got -> break
		:: else -> skip
		fi
	od;
	atomic {
		/* Everything reserved consumed or given up. */
		assert(rc == wc || (rc / S == wc / S && rc % S == 0));
#else
	/* The final flush (stop), then everything is read. */
	flush(1);
	do
	:: get_put();
		if
		:: !got -> break
		:: else -> skip
		fi
	od;
	atomic {
		/* Nothing outstanding, everything consumed. */
		assert(ANN_ALL == DONE_ALL);
		assert(rc == wc);
#endif
		/* Nothing lost uncounted: each recorded event was read, or lies
		 * in a sub-buffer pushed (overwrite mode) and counted. */
		i = 0;
		lost_count = 0;
		do
		:: i < MAXU ->
#ifdef RECOVER
			/* But those at or after the cut, where the dead slot
			 * may be (counted as one lost event). */
			assert(!ev_commit[i] || ev_read[i] || lostsb[i / S] || i >= cut);
#else
			assert(!ev_commit[i] || ev_read[i] || lostsb[i / S]);
#endif
			if
			:: i % S == 0 && lostsb[i / S] -> lost_count++
			:: else -> skip
			fi;
			i++
		:: else -> break
		od;
		assert(lost_count == subbufs_lost);
#ifdef RECOVER
		assert(events_lost == dropped + torn);
		assert(torn == (cut != MAXU))
#else
		assert(events_lost == dropped)
#endif
	}
}

init
{
	byte k = 0, u = 0;
	atomic {
		do
		:: k < N -> tidx[k] = k; ttag[k] = NONE; k++
		:: else -> break
		od;
#ifdef PREFILL
		/* The state a sequential history leaves: N packets of 1-unit
		 * events, complete and unread; write_count at the start of
		 * the next pass (the writers' first reservation pushes the
		 * reader in overwrite mode, finds the buffer full in discard
		 * mode). */
		k = 0;
		do
		:: k < N ->
			u = 0;
			do
			:: u < S -> stamp[k * S + u] = k * S + u + 1; u++
			:: else -> break
			od;
			u = H;
			do
			:: u < S -> ev_commit[k * S + u] = 1; u++
			:: else -> break
			od;
			pend[k] = k * S + S;
			cseq[k] = 1;
			ttag[k] = 0;
			k++
		:: else -> break
		od;
		wc = N * S;
		ann = N * (S - H) + 2 * N;
		com = ann;
		hot_tag = (N - 1) * S;
		hot_phys = N - 1;
#endif
#ifdef SMP
		/* Two writers on different CPUs, into this CPU's buffer. */
		run libwriter(LIB_EVENTS);
		run libwriter(LIB_EVENTS);
#else
		run callsite(CS_EVENTS);
		run libwriter(LIB_EVENTS);
#endif
		run consumer()
	}
}
