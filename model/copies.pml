/*
 * model/copies.pml: copies of the registry running beside the original
 * (step F6 of the fleet argument in docs/design.md: INV-20, R9, under ASM-1,
 * ASM-2 and ASM-3; model/README.md says what is abstracted and which code
 * site enforces each rule).
 *
 * Registry 0 is the original; registry 1 is a copy of its state, taken at
 * any time and started later.  Each has state of its own: block 0's row
 * (life, lease ID, ceiling, reusable_after), its quarantine, its identity
 * (registry_identity: ID, created_at, fleet started) and its counter
 * (uidgen.registry_counter).  The copy is one of two kinds:
 *   - one PostgreSQL tells apart (a template copy, a dump restored: another
 *     database OID or system identifier): it draws a new identity, with no
 *     fleet started and no predecessors, and quarantines (R9, R11); the
 *     original goes on serving;
 *   - one it cannot (a file-level copy of the stopped server, a revert to a
 *     memory snapshot): the same identity and counter; it takes the
 *     original's place (ASM-2: never two writable registries with one
 *     identity at once), with a quarantine (the file copy's start is
 *     noticed) or none (a snapshot).
 * Member servers (NM) each have one life at a time, the identity its agent
 * pinned at its first call, the highest counter it saw there (its witness,
 * core/counter_witness.hpp) and its lease table; it starts at the
 * original, and a name switch (DNS, a proxy) points it at the copy.  Time is one small integer R, every clock's (the
 * clocks' part is leases.pml's).  A block is one worker; an ID is a
 * (block, unit) cell.  MP-1: no two issuers of one fleet (leases of one
 * registry identity: two identities are two ID spaces) issue the same cell.
 *
 * Counters are exact up to order: after each step the live values (both
 * registries' counters, the members' witnesses) are renumbered 1, 2, ...
 * keeping their order and equalities, which are all the protocol compares
 * (registry_rules(): counter <= counter_seen; note_reply(): reply <=
 * sent), so calls are unbounded and the state space finite.
 *
 * Bounds: 2 member servers (NM), 1 block, 2 issuers, 3 lease IDs, one copy;
 * RMAX 7 with no crash (2 lives), or RMAX 5 with one crash (-DCRASHES=1: a
 * third life, no pin, no witness); NM 3 exceeds the budget.  Member clocks,
 * message loss and registry clock steps are leases.pml's.
 *
 * Mutants (each must fail): COPY_KEEPS_IDENTITY (a copy PostgreSQL tells
 * apart keeps the original's identity and only quarantines: the code
 * before test 099), NO_COUNTER_WITNESS (the registry does not compare the
 * counter a member saw: the code before test 074).
 * Fault beyond the assumptions (an expected counterexample):
 * FAULT_UNSEEN_REVERT (ASM-1's witness clause broken: the copy that went
 * back leases before any member that saw the original's later counter
 * calls it), FAULT_TWO_WRITABLE (ASM-2 broken: the copy PostgreSQL cannot
 * tell apart serves beside the original, both writable with one identity).
 */

#define TTL   2		/* lease length (the TTL) */
#define BR    1		/* max_borrow */
#define S     1		/* the clock bound, max_clock_skew */
#define HB    (TTL + BR + S)	/* registry_holder_bound() */
#ifndef RMAX
#define RMAX  7		/* time runs 1 .. RMAX */
#endif
#ifndef NM
#define NM    2		/* member servers (2 or 3) */
#endif
#define NI    2		/* issuers over the whole run: a duplicate takes two */
#define LEASES 3	/* lease IDs drawn over the whole run */
#ifndef CRASHES
#define CRASHES 0	/* member crashes (each a new life: no pin, no witness) */
#endif

/* registries: 0 the original, 1 the copy */
bool up[2];
byte regid[2];		/* registry_identity.registry_id; 0: none */
byte created[2];	/* registry_identity.created_at */
bool fleet[2];		/* fleet_started_at is set */
byte quar[2];		/* registry_state.quarantine_until */
byte ctr[2];		/* uidgen.registry_counter */
byte row_life[2]; byte row_lid[2]; byte row_ceil[2]; byte row_reuse[2];
bool copied;		/* the copy was taken (not necessarily started) */
bool started;		/* the copy was started */
/* the copy went back: a member saw a later counter of the original since
 * the copy was taken, and no member that saw one has called the copy yet */
bool stale;

/* members */
byte life[NM];
byte pin[NM];		/* identity pinned; 0: none yet */
byte wit[NM];		/* highest counter seen at pin; 0: none */
byte point[NM];		/* the registry uidgen.registry's name reaches */
bool lt_has[NM]; byte lt_lid[NM]; byte lt_floor[NM]; byte lt_ceil[NM];
byte nextlife = NM + 1;
byte crashes = CRASHES;
byte nextlid = 1;

/* issuers: a grant of a lease's worker, with the units it issued */
bool i_on[NI]; byte i_srv[NI]; byte i_life[NI]; byte i_lid[NI]; byte i_fleet[NI];
byte i_first[NI];	/* first unit issued, 0: none yet */
byte i_last[NI];	/* last unit issued (or the floor): every unit from first to last */
byte nissuers;

#define QUAR(r)	(R < quar[r] || (!fleet[r] && R < created[r] + HB))
#ifdef FAULT_UNSEEN_REVERT
#define WITNESS_FIRST(r)	true
#else
/* ASM-1: a member that saw the original's later counter calls the copy
 * before its next lease */
#define WITNESS_FIRST(r)	(r == 0 || !stale)
#endif

byte R = 1;
byte m, r, k, v, n, c, lo, hi, t;
bool ok;
#define CLR	m = 0; r = 0; k = 0; v = 0; n = 0; c = 0; lo = 0; hi = 0; t = 0; ok = false

inline max2(a, b, x) { if :: a >= b -> x = a :: else -> x = b fi }

/* renumber the live counters 1, 2, ... in order (0 stays 0): each
 * becomes one more than the number of distinct live values below it */
byte cv[NM + 2];
#if NM > 2
#define CV_HAS(x)	(cv[0] == x || cv[1] == x || cv[2] == x || cv[3] == x || cv[4] == x)
#else
#define CV_HAS(x)	(cv[0] == x || cv[1] == x || cv[2] == x || cv[3] == x)
#endif
inline renumber_one(x) {
	if
	:: x != 0 ->
		n = 1; k = 1;
		do
		:: k < x ->
			if
			:: CV_HAS(k) -> n++
			:: else -> skip
			fi;
			k++
		:: else -> break
		od;
		x = n
	:: else -> skip
	fi
}
inline renumber() {
	cv[0] = ctr[0]; cv[1] = ctr[1]; cv[2] = wit[0]; cv[3] = wit[1];
#if NM > 2
	cv[4] = wit[2];
#endif
	renumber_one(ctr[0]); renumber_one(ctr[1]); renumber_one(wit[0]); renumber_one(wit[1]);
#if NM > 2
	renumber_one(wit[2]);
#endif
	for (k : 0 .. NM + 1) { cv[k] = 0 }
}

active proctype world()
{
	up[0] = true; regid[0] = 1; fleet[0] = true; ctr[0] = 1;
	for (k : 0 .. NM - 1) { life[k] = k + 1 }; k = 0;
	do
	/* time passes */
	:: atomic { R < RMAX -> R++ }

	/* the registry's state is copied (a template copy, a dump, a file copy
	 * of the stopped server, a memory snapshot): started later */
	:: atomic { !copied ->
		copied = true;
		regid[1] = regid[0]; created[1] = created[0]; fleet[1] = fleet[0];
		quar[1] = quar[0]; ctr[1] = ctr[0];
		row_life[1] = row_life[0]; row_lid[1] = row_lid[0];
		row_ceil[1] = row_ceil[0]; row_reuse[1] = row_reuse[0];
		stale = false }

	/* the copy starts, one PostgreSQL tells apart: registry_check_state()
	 * draws a new identity (no fleet, no predecessors) and quarantines */
	:: atomic { copied && !started ->
		started = true; up[1] = true;
		quar[1] = R + HB;
#ifndef COPY_KEEPS_IDENTITY
		regid[1] = 2; created[1] = R; fleet[1] = false; stale = false
#endif
	   }

	/* the copy starts, one PostgreSQL cannot tell apart: it takes the
	 * original's place (ASM-2); a file copy's start quarantines, a
	 * snapshot's revert does not */
	:: atomic { copied && !started ->
		started = true; up[1] = true;
#ifndef FAULT_TWO_WRITABLE
		up[0] = false;
#endif
		if :: quar[1] = R + HB :: skip fi }

	/* a name switch: a member's uidgen.registry now reaches the other */
	:: atomic { started -> select(m : 0 .. NM - 1); point[m] = 1; CLR }

	/* an agent's round at the registry its name reaches: the identity
	 * (check_identity()), the rules with the counter (registry_rules(),
	 * note_counter()), then a claim or a renewal */
	:: atomic { select(m : 0 .. NM - 1);
		r = point[m];
		if
		:: up[r] && (pin[m] == 0 || pin[m] == regid[r]) ->
			if :: pin[m] == 0 -> pin[m] = regid[r]; wit[m] = 0 :: else -> skip fi;
			/* registry_rules(counter_seen) */
			if
			:: r == 1 && stale && wit[m] > ctr[1] -> stale = false	/* a witness calls */
			:: else -> skip
			fi;
			if
			:: r == 0 && copied && regid[1] == regid[0] -> stale = true	/* a counter the copy never had */
			:: else -> skip
			fi;
			v = ctr[r] + 1;
#ifndef NO_COUNTER_WITNESS
			if
			:: wit[m] != 0 && v <= wit[m] ->
				/* went back: quarantine, the counter moves up, the round fails */
				max2(quar[r], R + HB, quar[r]);
				ctr[r] = wit[m];
				ok = false
			:: else -> ctr[r] = v; wit[m] = v; ok = true
			fi;
#else
			ctr[r] = v; max2(wit[m], v, wit[m]); ok = true;
#endif
			if
			:: ok && !lt_has[m] && !QUAR(r) && WITNESS_FIRST(r) && nextlid <= LEASES ->
				/* registry_claim(): block 0 if never leased or reusable */
				if
				:: row_life[r] == 0 -> lo = R; ok = true
				:: row_life[r] != 0 && row_reuse[r] < R -> max2(row_ceil[r], R, lo); ok = true
				:: else -> ok = false
				fi;
				if
				:: ok ->
					hi = R + TTL + BR;
					row_life[r] = life[m]; row_lid[r] = nextlid;
					max2(row_ceil[r], hi, row_ceil[r]);
					row_reuse[r] = R + TTL + BR + S;
					lt_has[m] = true; lt_lid[m] = nextlid; lt_floor[m] = lo; lt_ceil[m] = hi;
					nextlid++
				:: else -> skip
				fi
			:: ok && lt_has[m] ->
				/* registry_renew(): R6, then its own row, or a re-assertion in
				 * a quarantine (R7, R8); refused: the agent drops the lease */
				hi = R + TTL + BR;
				if
				:: lt_ceil[m] <= R + S -> ok = false
				:: lt_ceil[m] > R + S && row_life[r] == life[m] && row_lid[r] == lt_lid[m] ->
					max2(row_ceil[r], hi, row_ceil[r]);
					max2(row_reuse[r], R + TTL + BR + S, row_reuse[r])
				:: lt_ceil[m] > R + S && !(row_life[r] == life[m] && row_lid[r] == lt_lid[m]) ->
					if
					:: (QUAR(r) && WITNESS_FIRST(r) &&
					    (row_life[r] == 0 || row_ceil[r] <= lt_floor[m]) &&
					    !(row_life[r] != 0 && row_life[r] != life[m] && row_reuse[r] >= R)) ->
						row_life[r] = life[m]; row_lid[r] = lt_lid[m];
						max2(row_ceil[r], hi, row_ceil[r]);
						max2(row_reuse[r], R + TTL + BR + S, row_reuse[r])
					:: else -> ok = false
					fi
				fi;
				if
				:: ok -> lt_ceil[m] = row_ceil[r]
				:: else -> lt_has[m] = false
				fi
			:: else -> skip	/* a round with nothing to do, or one that failed */
			fi
		:: else -> skip	/* refused (another identity) or unreachable */
		fi;
		renumber();
		CLR }

	/* the agent drops its lease: its deadline (ceiling - max_borrow) passed
	 * (earlier only by a refusal or a crash, above) */
	:: atomic { select(m : 0 .. NM - 1);
		if :: lt_has[m] && R + BR >= lt_ceil[m] -> lt_has[m] = false :: else -> skip fi;
		CLR }

	/* a member server crashes: a new life, nothing in memory */
	:: atomic { crashes > 0 -> crashes--; select(m : 0 .. NM - 1);
		life[m] = nextlife; nextlife++; pin[m] = 0; wit[m] = 0; lt_has[m] = false;
		t = 0;
		do
		:: t < NI -> if :: i_srv[t] == m -> i_on[t] = false :: else -> skip fi; t++
		:: else -> break
		od;
		renumber();
		CLR }

	/* a grant: a session takes the lease's worker, above its floor */
	:: atomic { nissuers < NI -> select(m : 0 .. NM - 1);
		if
		:: lt_has[m] ->
			t = 0;
			do
			:: t < nissuers && !(i_on[t] && i_srv[t] == m && i_lid[t] == lt_lid[m]) -> t++
			:: else -> break
			od;
			if
			:: t >= nissuers ->	/* one grant per lease */
				t = nissuers; nissuers++;
				i_on[t] = true; i_srv[t] = m; i_life[t] = life[m]; i_lid[t] = lt_lid[m];
				i_fleet[t] = pin[m]; i_first[t] = 0; i_last[t] = lt_floor[m]
			:: else -> skip
			fi
		:: else -> skip
		fi;
		CLR }

	/* an issuer raises its reservation to its cap (its lease's ceiling,
	 * found by lease ID, and now + max_borrow) and issues every unit up to
	 * it; MP-1 against every other issuer of its fleet */
	:: atomic { select(t : 0 .. NI - 1);
		if
		:: i_on[t] && lt_has[i_srv[t]] && lt_lid[i_srv[t]] == i_lid[t] && life[i_srv[t]] == i_life[t] ->
			c = lt_ceil[i_srv[t]];
			if :: R + BR < c -> c = R + BR :: else -> skip fi;
			if
			:: c > i_last[t] ->
				if :: i_first[t] == 0 -> i_first[t] = i_last[t] + 1 :: else -> skip fi;
				k = 0;
				do
				:: k < NI ->
					assert(k == t || i_fleet[k] != i_fleet[t] || i_first[k] == 0 ||
					       c < i_first[k] || i_last[t] + 1 > i_last[k]);
					k++
				:: else -> break
				od;
				i_last[t] = c
			:: else -> skip
			fi
		:: else -> skip
		fi;
		CLR }
	od
}
