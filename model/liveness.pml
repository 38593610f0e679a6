/*
 * model/liveness.pml: a member that can reach a healthy registry issues
 * again (MP-5), under rules R2, R3, R6 to R9 and R12 and the agent's
 * schedule (renewal a sixth into a lease, a claim when it holds none);
 * model/README.md states the abstraction, the bounds and the runs.
 *
 * Time is a small integer, counted from the registry's clock: every time
 * in the state (a row's ceiling and reusable_after, the quarantine's end,
 * a member's floor and ceiling, what is left of its lease on its monotonic
 * clock) is stored as its distance from now, and a tick lowers each by
 * one, saturating at LO (or at "passed": -1 for reusable_after, 0 for the
 * quarantine and a lease's rest).  LO lies below every value any time is
 * compared with, so a saturated time decides every comparison as the
 * exact one would; nothing wraps, and a member that keeps renewing comes
 * back to the same state: a cycle of the real protocol, never one the
 * bound makes.  Lease IDs are drawn as the smallest one no state refers
 * to: fresh, as random UUIDs are, and finitely many.
 *
 * Schedule (the timing assumption that gives the bound): each agent makes
 * one round per tick (the real agent wakes each second; a tick here is a
 * third of a lease of at least 30 s), and the registry answers within the
 * round unless a fault loses or delays the call.  Every infinite run has
 * infinitely many ticks, so no fairness is needed.
 *
 * Faults (FAULTS of them a run, then none: the environment may stop them
 * at any time, faults == 0): a claim's reply lost, a renewal lost, its
 * reply lost, delayed or duplicated, an agent restart, a member crash (a
 * new life), a member clock step (within or beyond S), a registry restart
 * (a quarantine begins), a restore from an older backup (rows go back and
 * a quarantine begins).
 *
 * MP-5 (the ltl claim): once faults stopped, a member whose clock is
 * within S of the registry's comes to hold a lease it can issue under at
 * its clock, and holds one from then on.
 *
 * A member role's own calls of registry_rules() with a counter it made up
 * are no fault: nothing stops them, before or after the faults.  The
 * registry heeds only a counter with its proof (R9), which no member role
 * can make, so they change nothing here (COUNTER_WITHOUT_PROOF has them).
 *
 * Mutants (each must fail): QUARANTINE_NEVER_LIFTS (quarantine_until
 * never passes), NO_RENEW_AFTER_RESTART (an agent that stops renewing
 * after a restart), RENEW_AFTER_LAPSE (renewal due only once the lease
 * lapsed, which the agent never renews), COUNTER_WITHOUT_PROOF (the
 * registry heeds a counter without its proof: the code before test 048).
 */

#define TTL   3		/* lease length, in ticks */
#define BR    1		/* max_borrow */
#define S     1		/* the clock bound, max_clock_skew */
#define HB    (TTL + BR + S)	/* registry_holder_bound(): a quarantine */
#define NS    2		/* member servers, each wanting one block */
#define NB    2		/* blocks: one each */
#define LO    (-3)	/* saturated time: below every value compared with */
#ifndef FAULTS
#define FAULTS 2
#endif

/* the registry's rows (uidgen.worker_block); times from its clock */
byte  row_life[NB];	/* 0: never leased */
byte  row_lid[NB];
short row_ceil[NB];	/* ceiling_delta */
short row_reuse[NB];	/* reusable_after; -1: passed */
/* an older copy: a base backup or an asynchronous standby */
byte  bk_life[NB]; byte bk_lid[NB]; short bk_ceil[NB]; short bk_reuse[NB];
bool  have_bk;
byte  backups = 1;
byte  q;		/* quarantine_until: ticks left, 0: none */

/* member servers: one life at a time, one lease each */
byte  life[NS];
short off[NS];		/* member clock - registry clock */
bool  lt_has[NS];
byte  lt_b[NS]; byte lt_lid[NS];
short lt_floor[NS]; short lt_ceil[NS];
byte  left[NS];		/* what is left of the lease, on its monotonic clock */
bool  renewing[NS];	/* NO_RENEW_AFTER_RESTART only */
bool  done[NS];		/* this tick's round made */
byte  nextlife = NS + 1;

/* a renewal the network delayed: it runs at the registry later */
bool  pend; byte p_life; byte p_b; byte p_lid; short p_floor; short p_ceil;

byte  faults = FAULTS;
#ifdef WAIT_BOUND
byte  waited[NS];	/* ticks a healthy member ended unable to issue */
#endif

#define CLOCK_OK(s)	(off[s] <= S && off[s] >= -S)
#define QUARANTINED	(q > 0)
/* renewal_due(): a sixth of the lease has passed (exact, not rounded) */
#ifdef RENEW_AFTER_LAPSE
#define RENEW_DUE(s)	(left[s] == 0)
#else
#define RENEW_DUE(s)	(6 * left[s] < 5 * TTL)
#endif
/* a session can issue a unit at its clock: the lease runs, and some unit
 * above its floor, at or after the clock, at most max_borrow ahead, is
 * within its cap (lease_cap(): the ceiling, and now + rest + max_borrow) */
#define CAN_ISSUE(s)	(lt_has[s] && left[s] > 0 && off[s] <= lt_ceil[s] && \
			 lt_floor[s] + 1 <= lt_ceil[s] && lt_floor[s] + 1 <= off[s] + BR)
#define HEALTHY(s)	(faults == 0 && CLOCK_OK(s))

#ifndef WAIT_BOUND
ltl mp5 { [] (HEALTHY(0) -> <> [] CAN_ISSUE(0)) && [] (HEALTHY(1) -> <> [] CAN_ISSUE(1)) }
#endif

byte b, k, lid, L;
short fl, cl;
bool ok, used;
#define CLR	b = 0; k = 0; lid = 0; L = 0; fl = 0; cl = 0; ok = false; used = false

inline max2(x, y, r) { if :: x >= y -> r = x :: else -> r = y fi }
inline down(v, lo) { if :: v > lo -> v-- :: else -> skip fi }

/* a lease ID no state refers to: the smallest */
inline fresh_lid() {
	lid = 1;
	do
	:: used = false;
		for (k : 0 .. NB - 1) {
			if :: row_life[k] != 0 && row_lid[k] == lid -> used = true :: else -> skip fi;
			if :: have_bk && bk_life[k] != 0 && bk_lid[k] == lid -> used = true :: else -> skip fi
		}
		for (k : 0 .. NS - 1) {
			if :: lt_has[k] && lt_lid[k] == lid -> used = true :: else -> skip fi
		}
		if :: pend && p_lid == lid -> used = true :: else -> skip fi;
		if :: used -> lid++ :: else -> break fi
	od
}

/* registry_renew() of lease (L, b, lid) with the member's floor fl and
 * ceiling cl: ok when renewed or re-asserted; cl becomes the row's ceiling */
inline registry_renew() {
	ok = false;
	if
	:: cl <= S -> skip	/* R6: its ceiling reached, within S */
	:: else ->
		if
		:: row_life[b] == L && row_lid[b] == lid -> ok = true
		/* R7, R8: a re-assertion in a quarantine, of no other life's row,
		 * at a floor at or above the recorded ceiling */
		:: else ->
			if
			:: QUARANTINED && (row_life[b] == 0 || row_life[b] == L) &&
			   (row_life[b] == 0 || row_ceil[b] <= fl) ->
				row_life[b] = L; row_lid[b] = lid; ok = true
			:: else -> skip
			fi
		fi;
		if
		:: ok -> max2(row_ceil[b], TTL + BR, row_ceil[b]); max2(row_reuse[b], HB, row_reuse[b]);
			cl = row_ceil[b]
		:: else -> skip
		fi
	fi
}

/* registry_claim() for life L: the first block reusable or never leased,
 * at a floor of its ceiling and the registry's clock (R2, R3); none in a
 * quarantine (R9).  b == NB: none. */
inline registry_claim() {
	b = NB;
	if
	:: !QUARANTINED ->
		for (k : 0 .. NB - 1) {
			if :: b == NB && (row_life[k] == 0 || row_reuse[k] < 0) -> b = k :: else -> skip fi
		}
	:: else -> skip
	fi;
	if
	:: b < NB ->
		max2(row_ceil[b], 0, fl);
		fresh_lid();
		row_life[b] = L; row_lid[b] = lid;
		max2(row_ceil[b], TTL + BR, row_ceil[b]);
		row_reuse[b] = HB
	:: else -> skip
	fi
}

/* one agent round of server s: drop a lapsed lease, then (clocks within
 * S, R12) renew a lease that is due, or lease a block when it holds none */
inline round(s) {
	if :: lt_has[s] && left[s] == 0 -> lt_has[s] = false :: else -> skip fi;
	if
	:: CLOCK_OK(s) && lt_has[s] && RENEW_DUE(s) && renewing[s] ->
		L = life[s]; b = lt_b[s]; lid = lt_lid[s]; fl = lt_floor[s]; cl = lt_ceil[s];
		if
		:: registry_renew();
			if
			:: ok -> max2(lt_ceil[s], cl, lt_ceil[s]); left[s] = TTL
			:: else -> lt_has[s] = false	/* refused: the block is dropped */
			fi
		:: faults > 0 -> faults--	/* the call is lost */
		:: faults > 0 -> faults--; registry_renew()	/* its reply is lost */
		:: faults > 0 && !pend -> faults--;	/* delayed: it runs later */
			pend = true; p_life = L; p_b = b; p_lid = lid; p_floor = fl; p_ceil = cl
		:: faults > 0 && !pend -> faults--;	/* duplicated: now, and again later */
			pend = true; p_life = L; p_b = b; p_lid = lid; p_floor = fl; p_ceil = cl;
			registry_renew();
			if
			:: ok -> max2(lt_ceil[s], cl, lt_ceil[s]); left[s] = TTL
			:: else -> lt_has[s] = false
			fi
		fi
	:: CLOCK_OK(s) && !lt_has[s] ->
		L = life[s];
		registry_claim();
		if
		:: b < NB ->
			if
			:: lt_has[s] = true; lt_b[s] = b; lt_lid[s] = lid; lt_floor[s] = fl;
				lt_ceil[s] = TTL + BR; left[s] = TTL
			:: faults > 0 -> faults--	/* the reply is lost */
			fi
		:: else -> skip
		fi
	:: else -> skip
	fi;
	done[s] = true
}

active proctype fleet()
{
	life[0] = 1; life[1] = 2;
	renewing[0] = true; renewing[1] = true;
	row_ceil[0] = LO; row_ceil[1] = LO; row_reuse[0] = -1; row_reuse[1] = -1;
	do
	/* each agent's round */
	:: atomic { !done[0] -> round(0); CLR }
	:: atomic { !done[1] -> round(1); CLR }

	/* time passes once both made their round */
	:: atomic { done[0] && done[1] ->
#ifdef WAIT_BOUND
		/* MP-5's bound: a healthy member issues again within WAIT_BOUND ticks */
		for (k : 0 .. NS - 1) {
			if
			:: HEALTHY(k) && !CAN_ISSUE(k) -> waited[k]++; assert(waited[k] <= WAIT_BOUND)
			:: else -> waited[k] = 0
			fi
		}
#endif
		for (k : 0 .. NB - 1) {
			down(row_ceil[k], LO); down(row_reuse[k], -1);
			if :: have_bk -> down(bk_ceil[k], LO); down(bk_reuse[k], -1) :: else -> skip fi
		}
		for (k : 0 .. NS - 1) {
			down(lt_floor[k], LO); down(lt_ceil[k], LO); down(left[k], 0);
			done[k] = false
		}
#ifndef QUARANTINE_NEVER_LIFTS
		down(q, 0);
#endif
		if :: pend -> down(p_floor, LO); down(p_ceil, LO) :: else -> skip fi;
#ifdef COUNTER_WITHOUT_PROOF
		/* a member role calls registry_rules() with a counter above the
		 * registry's that it made up, once a tick or not: heeded, it
		 * quarantines.  The registry ignores it without its proof (R9). */
		if :: q = HB :: skip fi;
#endif
		CLR }

	/* a delayed renewal runs at the registry; its reply comes too late */
	:: atomic { pend ->
		L = p_life; b = p_b; lid = p_lid; fl = p_floor; cl = p_ceil;
		pend = false;
		registry_renew();
		CLR }

	/* a base backup, or an asynchronous standby catching up */
	:: atomic { backups > 0 -> backups--; have_bk = true;
		for (k : 0 .. NB - 1) {
			bk_life[k] = row_life[k]; bk_lid[k] = row_lid[k];
			bk_ceil[k] = row_ceil[k]; bk_reuse[k] = row_reuse[k]
		}
		k = 0 }

	/* faults stop (for good) */
	:: atomic { faults > 0 -> faults = 0 }

	/* an agent restarts: it resumes its lease from shared memory (R5) */
	:: atomic { faults > 0 -> faults--; select(k : 0 .. NS - 1);
#ifdef NO_RENEW_AFTER_RESTART
		renewing[k] = false;
#endif
		k = 0 }

	/* a member server crashes: a new life, its lease table gone */
	:: atomic { faults > 0 -> faults--; select(k : 0 .. NS - 1);
		life[k] = nextlife; nextlife++; lt_has[k] = false; renewing[k] = true;
		lt_b[k] = 0; lt_lid[k] = 0; lt_floor[k] = 0; lt_ceil[k] = 0; left[k] = 0;
		k = 0 }

	/* a member's clock steps, within the bound or beyond it */
	:: atomic { faults > 0 -> faults--; select(k : 0 .. NS - 1);
		if :: off[k] < 2 -> off[k]++ :: off[k] > -2 -> off[k]-- fi;
		k = 0 }

	/* the registry restarts (R9: it cannot tell a restart from lost state) */
	:: atomic { faults > 0 -> faults--; q = HB }

	/* a restore from the backup, or a failover to the stale standby */
	:: atomic { faults > 0 && have_bk -> faults--; have_bk = false;
		for (k : 0 .. NB - 1) {
			row_life[k] = bk_life[k]; row_lid[k] = bk_lid[k];
			row_ceil[k] = bk_ceil[k]; row_reuse[k] = bk_reuse[k];
			bk_life[k] = 0; bk_lid[k] = 0; bk_ceil[k] = 0; bk_reuse[k] = 0
		}
		q = HB;
		k = 0 }
	od
}
