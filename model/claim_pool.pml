/*
 * model/claim_pool.pml: the claim pool's hand-over (INV-8, INV-10, INV-11;
 * src/worker_table/claim_pool.hpp) issues no unit of a worker twice (MP-4).
 *
 * One worker W of one database.  Its two session locks are one lock here
 * (a claimant takes both or neither, INV-8): lk names its holder.  The pool
 * also holds W's mark, mk.  The row is committed state: active or released,
 * and a floor (last_time).  The time reservation resv covers every unit
 * issued; a leak is released at resv.  used is a ghost: the units issued
 * under W, a bit each.  A holder issues units above its floor, each once,
 * so a unit found already used was issued by another holder.
 *
 * The pool claims W when it is released (locks, mark, commit, then lets the
 * locks go) and lets the mark go only while another process holds W's locks;
 * it may give W back (released at its floor) while nobody holds it, or die
 * at any step.  Each session takes W's locks once and then: finds the row
 * released and reuses it (its claim committed first, INV-11); finds it
 * active with the mark held elsewhere and waits for the mark to come free,
 * or gives up; finds it active with the mark free and releases it as a leak
 * above the reservation.  A session that issued exits cleanly (released at
 * its last unit) or dies without writing.
 *
 * A session decides from a list read before it takes the locks; once the
 * mark comes free it reads the row again (the pool may have given W back
 * since), and the pool lets go of its marks before its locks when it gives
 * W back or exits.  Either suffices (the runs with NO_RECHECK or
 * LOCKS_BEFORE_MARK alone pass); without both, a session issues under a
 * row the pool has released (NO_RECHECK with LOCKS_BEFORE_MARK).
 *
 * Mutants: NO_HANDOVER_WAIT (a session issues under a pooled worker as soon
 * as it sees the mark held, without waiting for the pool to let it go),
 * FREE_MARK_IS_POOLED (a session takes an active row of the pool's whose
 * mark is free for the pool's claim, not a leak), RETURN_AFTER_HANDOVER (the
 * pool forgets nothing it handed over, and may give W back at its old
 * floor).
 */

#define U	6		/* units 1 .. U */
#define NS	3		/* sessions */
#define POOL	1		/* lock holders: 1 the pool, 2 .. NS+1 the sessions */

byte lk;		/* holder of W's two locks; 0: free */
byte mk;		/* holder of W's mark; 0: free */
bit act;		/* the row reads active (committed) */
byte rpid;		/* the holder the row names */
byte rfloor;		/* the row's last_time */
byte resv;		/* the time reservation (durable, never lowered) */
byte used;		/* ghost: units issued under W */
bit ready;		/* the pool's memory: W claimed, mark held, not handed over */

/* The pool's exit: its marks first (LockReleaseAll of the advisory locks), then the workers' locks. */
inline die_pool()
{
	atomic {
		if
		:: mk == POOL -> mk = 0
		:: else -> skip
		fi;
		ready = 0
	};
	if
	:: lk == POOL -> lk = 0
	:: else -> skip
	fi
}

active proctype pool()
{
	byte refills = 2;

	do
	:: atomic { refills > 0 && !ready && lk == 0 && !act -> lk = POOL; refills-- } ->
		if :: true :: die_pool(); break fi;
		mk = POOL;
		if :: true :: die_pool(); break fi;
		atomic { act = 1; rpid = POOL };	/* committed, flushed */
		if :: true :: die_pool(); break fi;
		atomic { lk = 0; ready = 1 }
	:: ready && lk != 0 && lk != POOL ->		/* a session holds W: hand over */
		atomic {
			mk = 0;
#ifndef RETURN_AFTER_HANDOVER
			ready = 0
#endif
		}
	:: atomic { ready && lk == 0 -> lk = POOL } ->	/* give W back, released at its floor */
		if :: true :: die_pool(); break fi;
		act = 0;				/* committed */
#ifdef LOCKS_BEFORE_MARK
		lk = 0;
		atomic { mk = 0; ready = 0 }
#else
		atomic { mk = 0; ready = 0 };		/* the mark first, then the locks */
		lk = 0
#endif
	:: die_pool(); break
	od
}

proctype session(byte me)
{
	byte f, u, last;
	bit listed;

	listed = act && rpid == POOL;		/* take_pooled_worker()'s list, read before the locks */
	atomic { lk == 0 -> lk = me };
	if
	:: listed && mk != 0 && mk != me ->	/* listed, and the mark held: wait for the hand-over */
#ifdef NO_HANDOVER_WAIT
		f = rfloor
#else
		if
		:: mk == 0 ->			/* let go while we hold W */
#ifdef NO_RECHECK
			f = rfloor
#else
			if				/* read again: still the pool's committed claim */
			:: act && rpid == POOL -> f = rfloor
			:: else -> lk = 0; goto done
			fi
#endif
		:: true -> lk = 0; goto done	/* gave up, issued nothing */
		fi
#endif
	:: else ->
		if
		:: !act ->			/* released: reuse, its claim committed first */
			atomic { act = 1; rpid = me };
			f = rfloor
		:: act && mk != 0 && mk != me ->	/* a mark on a row it did not list: leave it */
			lk = 0; goto done
		:: act && mk == 0 ->
#ifdef FREE_MARK_IS_POOLED
			if
			:: rpid == POOL -> f = rfloor; goto issue
			:: else -> skip
			fi;
#endif
			atomic {			/* a leak: released above the reservation */
				if
				:: resv > rfloor -> rfloor = resv
				:: else -> skip
				fi;
				act = 0;
				lk = 0
			};
			goto done
		fi
	fi;
issue:
	last = f;
	u = f + 1;
	do
	:: u <= U ->
		atomic {
			if
			:: resv < u -> resv = u		/* the raise is durable before the unit */
			:: else -> skip
			fi;
			assert((used & (1 << u)) == 0);	/* MP-4 */
			used = used | (1 << u);
			last = u
		};
		if
		:: u++
		:: u = u + 2
		:: break
		fi
	:: u > U -> break
	od;
	if
	:: atomic {				/* clean exit: released at its last unit */
			act = 0;
			if
			:: last > rfloor -> rfloor = last
			:: else -> skip
			fi;
			lk = 0
		}
	:: lk = 0				/* dies without writing: the row stays as it was */
	fi;
done:
	skip
}

init
{
	byte i;

	atomic {
		for (i : 2 .. NS + 1) {
			run session(i)
		}
	}
}
