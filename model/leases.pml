/*
 * model/leases.pml: leases, renewals, quarantine and lost registry state
 * (steps F1 to F3 and F6 of the fleet argument in docs/design.md: INV-16, INV-17,
 * INV-20 under ASM-1 and ASM-3; model/README.md says what is
 * abstracted and which code site enforces each rule).
 *
 * Time is a small integer: R is true time, the registry's clock is R + roff,
 * a member's clock is R + off[s].  A block is one worker (a block's workers
 * share one lease; two databases of one life never share a worker, step F4,
 * which this model does not cover).  An ID is a (block, unit) cell; each
 * issuer (a grant of a lease to a session or keeper) records the units it
 * issued as a bit mask.  MP-1: no two issuers ever issue the same cell.
 *
 * Profiles: MEMBER_FAULTS (member clocks, agent restarts, releases, a change
 * of the registry's rules mid-lease), REGISTRY_FAULTS (lost registry state),
 * BLOCK_SIZES (two blocks over two workers, a change of the block size).
 *
 * Mutants (each must fail, model/README.md):
 *   AGENT_FORGETS_BLOCKS, QUARANTINE_NEEDS_BLOCKS, REASSERT_REVIVES_STALE,
 *   MEMBER_CLOCK_CAP, RELEASE_BELOW_CAP, REASSERT_MOVES_OTHER_LIFE,
 *   RULES_LOWER_CEILING, BLOCK_SIZE_CHANGE_WITH_BLOCKS
 * Faults beyond the assumptions (expected counterexamples):
 *   FAULT_UNNOTICED_RESTORE (ASM-1, ASM-5: a memory revert the registry cannot see),
 *   FAULT_REGISTRY_CLOCK_BACK (ASM-3: the registry's clock after lost state
 *   more than S behind the lost state's latest reading)
 */

#ifdef MEMBER_FAULTS
#define RULE_CHANGES
#endif
#ifdef RULE_CHANGES
/* uid_registry_configure() changes the rules at any time, leases in flight
 * included: rules 0 are a TTL of 2, max_borrow 1 and S 1; rules 1 a TTL of
 * 1, max_borrow 0 and S 0, each shorter */
byte rules;
byte rchanges = 1;	/* from rules 0 to rules 1: a change that shortens */
#define TTL   (rules == 0 -> 2 : 1)
#define BR    (rules == 0 -> 1 : 0)
#define S     (rules == 0 -> 1 : 0)
#else
#define TTL   2		/* lease length (the TTL) */
#define BR    1		/* max_borrow */
#define S     1		/* the clock bound, max_clock_skew */
#endif
#define HB    (TTL + BR + S)	/* registry_holder_bound() */
#ifndef RMAX
#define RMAX  7		/* true time runs 1 .. RMAX */
#endif
#ifdef BLOCK_SIZES
/* two blocks over two workers: block b (from 0) has the workers
 * b * size + 1 .. (b + 1) * size that exist, fixed in its row when the row
 * is made (registry_claim()); the block size is 1 or 2 */
#define NB    2
#define NW    2
byte bsize = 2;
byte bchanges = 1;
byte row_first[NB]; byte row_last[NB];
#ifdef BLOCK_SIZE_CHANGE_WITH_BLOCKS
#define NO_BLOCK_ROWS	true
#else
#define NO_BLOCK_ROWS	(row_life[0] == 0 && row_life[1] == 0)
#endif
#else
#define NB    1		/* blocks: a block is one worker */
#endif
#define NS    2		/* member servers */
#define NI    2		/* issuers (grants) over the whole run: a duplicate takes two */
#define UMAX  14	/* no unit reaches it */
#define LEASES 3	/* claims and forged re-assertions over the whole run */

/* the registry: its tables as state (uidgen.worker_block) */
byte row_life[NB];	/* 0: no row */
byte row_lid[NB];
byte row_ceil[NB];	/* ceiling_delta: only rises */
byte row_reuse[NB];	/* reusable_after */
bool row_rel[NB];	/* status = 'released' */
/* an older copy of them: a base backup, an asynchronous standby */
byte bk_life[NB]; byte bk_lid[NB]; byte bk_ceil[NB]; byte bk_reuse[NB]; bool bk_rel[NB];
byte quar;		/* registry_state.quarantine_until */
byte regid = 1;		/* registry_identity.registry_id */
byte created;		/* registry_identity.created_at */
bool fleet = true;	/* fleet_started_at is set (uid_registry_start_fleet) */
byte R = 1;		/* true time */
int  roff;		/* registry clock - true time */
byte nextlid = 1;	/* lease IDs are random: never reused, even across a restore */

/* member servers: one life at a time, its lease table in shared memory */
byte life[NS];
byte pin[NS];		/* registry identity the agent pinned (registry_pin.hpp) */
int  off[NS];		/* member clock - true time */
bool lt_has[NS * NB];
byte lt_lid[NS * NB];
byte lt_floor[NS * NB];
byte lt_ceil[NS * NB];
byte nextlife = 3;

/* one renewal in flight (of server p_srv): it may be delayed, lost or
 * duplicated */
bool pend; byte p_srv; byte p_life; byte p_b; byte p_lid; byte p_floor; byte p_ceil;
bool p_forged;

/* issuers: a grant of a lease's worker, with its reservation */
bool i_on[NI]; byte i_srv[NI]; byte i_life[NI]; byte i_b[NI]; byte i_lid[NI];
#ifdef BLOCK_SIZES
byte i_w[NI];		/* its worker, one of its block's */
#define I_W(t)	i_w[t]
#else
#define I_W(t)	i_b[t]
#endif
byte i_first[NI];	/* first unit issued, 0: none yet */
byte i_last[NI];	/* last unit issued: every unit from first to last */
byte nissuers;

/* bounds on faults and operator actions */
#ifdef BLOCK_SIZES
byte faults = 0;	/* the block size's rule needs none */
#else
byte faults = 2;	/* lost-state events, crashes, restarts, clock steps */
#endif
byte dups = 1;
byte backups = 1;
byte forges = 1;

#define REGCLK	(R + roff)
#define MEMCLK(s)	(R + off[s])
#define LT(s, b)	((s) * NB + (b))
#define QUARANTINED	(REGCLK < quar || (!fleet && REGCLK < created + HB))
#define CLOCK_OK(s)	(off[s] - roff <= S && roff - off[s] <= S)

/* a lease the registry lost: one granted after the state it kept starts
 * above every ceiling that state records */
#ifdef REASSERT_REVIVES_STALE
#define NO_RENEW_CEILING_CHECK
#define NO_REASSERT_FLOOR_CHECK
#endif
#ifdef NO_REASSERT_FLOOR_CHECK
#define REASSERT_ALLOWED	true
#else
#define REASSERT_ALLOWED	(row_life[b] == 0 || row_ceil[b] <= p_floor)
#endif

inline max2(a, b, r) { if :: a >= b -> r = a :: else -> r = b fi }

/* registry_check_state() after lost state: quarantine for HB */
inline lose_state() {
#ifdef QUARANTINE_NEEDS_BLOCKS
	if
	:: row_life[0] != 0 -> quar = REGCLK + HB
	:: else -> skip
	fi
#else
	/* CREATE EXTENSION recorded the state: always something to lose */
	quar = REGCLK + HB
#endif
}

/* the cap an issuer's reservation may reach now (lease_cap_delta()) */
inline cap_of(i, c, ok) {
	ok = false;
	k = LT(i_srv[i], i_b[i]);
	if
#ifdef AGENT_FORGETS_BLOCKS
	/* grants matched by worker range: any lease of the block will do */
	:: lt_has[k] && life[i_srv[i]] == i_life[i] -> ok = true
#else
	:: lt_has[k] && lt_lid[k] == i_lid[i] && life[i_srv[i]] == i_life[i] -> ok = true
#endif
	:: else -> skip
	fi;
	if
	:: ok ->
#ifdef MEMBER_CLOCK_CAP
		/* the member's own clock bounds it, not the registry's ceiling */
		c = MEMCLK(i_srv[i]) + BR
#else
		c = lt_ceil[k];
		if :: MEMCLK(i_srv[i]) + BR < c -> c = MEMCLK(i_srv[i]) + BR :: else -> skip fi
#endif
		/* a clock before time 0 (R 1, two behind, no borrowing) issues
		 * nothing yet: c stays a byte */
		; if :: MEMCLK(i_srv[i]) + BR < 0 -> c = 0 :: else -> skip fi
	:: else -> skip
	fi
}

byte b, k, j, u, lo, hi, c, t;
bool ok;

/* State nothing reads again back to 0 after each step, so that states that
 * differ only there are one: a renewal's fields once it is no longer in
 * flight, a lease's once the member dropped it, an issuer's once it can
 * issue no more (its lease is gone from its server's table, and lease IDs
 * never come back; only its block and the units it issued still count). */
inline tidy() {
	t = 0;
	do
	:: t < NI ->
#ifndef AGENT_FORGETS_BLOCKS
		k = LT(i_srv[t], i_b[t]);
		if
		:: i_on[t] && !(lt_has[k] && lt_lid[k] == i_lid[t] && life[i_srv[t]] == i_life[t]) -> i_on[t] = false
		:: else -> skip
		fi;
#endif
		if :: !i_on[t] -> i_srv[t] = 0; i_life[t] = 0; i_lid[t] = 0 :: else -> skip fi;
		t++
	:: else -> break
	od;
	k = 0;
	do
	:: k < NS * NB -> if :: !lt_has[k] -> lt_lid[k] = 0; lt_floor[k] = 0; lt_ceil[k] = 0 :: else -> skip fi; k++
	:: else -> break
	od;
	if
	:: !pend -> p_srv = 0; p_life = 0; p_b = 0; p_lid = 0; p_floor = 0; p_ceil = 0; p_forged = false
	:: else -> skip
	fi
}

/* temporaries back to 0 after each step, so that they add no states */
#define CLR	tidy(); j = 0; b = 0; k = 0; u = 0; lo = 0; hi = 0; c = 0; t = 0; ok = false

active proctype world()
{
	life[0] = 1; life[1] = 2;
	created = 0;
	do
	/* time passes */
	:: atomic { R < RMAX -> R++ }

#ifdef MEMBER_FAULTS
	/* server 0's clock steps (any size: the design trusts no member clock) */
	:: atomic { faults > 0 -> faults--;
		if :: off[0] < 2 -> off[0]++ :: off[0] > -2 -> off[0]-- fi;
		CLR }

#endif
#ifdef REGISTRY_FAULTS
	/* the registry's clock steps back within the bound, or forward */
	:: atomic { faults > 0 && roff == 0 -> faults--;
		if :: roff = -S :: roff = 1 fi }

#endif
#ifdef RULE_CHANGES
	/* uid_registry_configure() of the TTL, max_borrow and clock bound, at
	 * any time: claims and renewals use the rules in force when they run */
	:: atomic { rchanges > 0 -> rchanges--; rules = 1 - rules }

#endif
#ifdef BLOCK_SIZES
	/* uid_registry_configure(block_size => ...): only while the registry
	 * has no block row, leased or imported */
	:: atomic { bchanges > 0 && NO_BLOCK_ROWS -> bchanges--; bsize = 3 - bsize }

#endif
	/* claim: registry_claim(), committed, reply maybe lost */
	:: atomic { select(j : 0 .. NS - 1);
		if
		:: nextlid <= LEASES && (pin[j] == 0 || pin[j] == regid) && CLOCK_OK(j) && !QUARANTINED ->
		pin[j] = regid;
		/* the oldest reusable block, else one never used */
		b = NB;
		k = 0;
		do
		:: k < NB && row_life[k] != 0 && row_reuse[k] < REGCLK -> b = k; break
		:: k < NB && !(row_life[k] != 0 && row_reuse[k] < REGCLK) -> k++
		:: k >= NB -> break
		od;
		if
		:: b == NB ->
			k = 0;
			do
			:: k < NB && row_life[k] == 0 -> b = k; break
			:: k < NB && row_life[k] != 0 -> k++
			:: k >= NB -> break
			od;
			lo = REGCLK;	/* a block never used: at the registry's clock */
#ifdef BLOCK_SIZES
			/* its workers follow from the block size, in its row */
			if
			:: b < NB && b * bsize + 1 <= NW ->
				row_first[b] = b * bsize + 1;
				if :: (b + 1) * bsize < NW -> row_last[b] = (b + 1) * bsize :: else -> row_last[b] = NW fi
			:: else -> b = NB	/* no block left: its first worker is beyond the layout */
			fi;
#endif
			skip
		:: else -> max2(row_ceil[b], REGCLK, lo)
		fi;
		if
		:: b < NB ->	/* else: no block left, the claim fails */
		hi = REGCLK + TTL + BR;
		row_life[b] = life[j]; row_lid[b] = nextlid; row_rel[b] = false;
		max2(row_ceil[b], hi, row_ceil[b]);
		row_reuse[b] = REGCLK + TTL + BR + S;
		if
		:: k = LT(j, b); lt_has[k] = true; lt_lid[k] = nextlid; lt_floor[k] = lo;
#ifdef MEMBER_CLOCK_CAP
			lt_ceil[k] = MEMCLK(j) + TTL + BR
#else
			lt_ceil[k] = hi
#endif
		:: faults > 0 -> faults--	/* the reply is lost */
		fi;
		nextlid++
		:: else -> skip
		fi
		:: else -> skip
		fi;
		CLR }

	/* the agent sends a renewal of a lease it holds (registry_renew()) */
	:: atomic { select(j : 0 .. NS - 1); select(b : 0 .. NB - 1);
		k = LT(j, b);
		if
		:: !pend && lt_has[k] && pin[j] == regid && CLOCK_OK(j) ->
			pend = true; p_srv = j; p_life = life[j]; p_b = b; p_lid = lt_lid[k];
			p_floor = lt_floor[k]; p_ceil = lt_ceil[k]; p_forged = false
		:: else -> skip
		fi;
		CLR }

#ifdef REGISTRY_FAULTS
	/* a member role re-asserts a block it does not hold, naming the
	 * recorded ceiling as its floor (issue 32, item 5) */
	:: atomic { forges > 0 && nextlid <= LEASES && QUARANTINED -> select(j : 0 .. NS - 1); select(b : 0 .. NB - 1);
		if
		:: !pend && row_life[b] != 0 && row_life[b] != life[j] && pin[j] == regid ->
			forges--;
			pend = true; p_srv = j; p_life = life[j]; p_b = b; p_lid = nextlid; nextlid++;
			p_floor = row_ceil[b]; p_ceil = REGCLK + TTL + BR; p_forged = true
		:: else -> skip
		fi;
		CLR }

#endif
	/* the registry runs a renewal, at any later time; the reply may be lost;
	 * the message may run again (duplicated) */
	:: atomic { pend ->
		j = p_srv;
		if
		:: true ->
		b = p_b;
		ok = false;
		/* the adversary of issue 32 item 5 reaches another life's live row
		 * only: a member that lies about its own floor for a block the
		 * registry has no live row for (none, or a reusable one a restore
		 * left) is beyond any check the registry can make (README, ASM-8) */
		if :: p_forged && (row_life[b] == 0 || row_life[b] == p_life || row_reuse[b] < REGCLK) -> goto renewed
		   :: else -> skip fi;
#ifndef NO_RENEW_CEILING_CHECK
		/* a lease whose ceiling the registry's clock passed lapsed */
		if :: p_ceil <= REGCLK + S -> goto renewed :: else -> skip fi;
#endif
		hi = REGCLK + TTL + BR;
		if
		:: row_life[b] == p_life && row_lid[b] == p_lid && !row_rel[b] ->
#ifdef RULES_LOWER_CEILING
			/* the ceiling and reusable_after of the rules in force, even
			 * below those recorded under longer ones */
			row_ceil[b] = hi; row_reuse[b] = REGCLK + TTL + BR + S;
#else
			/* recorded ceilings and reusable_after only rise, whatever
			 * the rules are now (R1, R3) */
			max2(row_ceil[b], hi, row_ceil[b]);
			max2(row_reuse[b], REGCLK + TTL + BR + S, row_reuse[b]);
#endif
			ok = true
		:: else ->
			if
			:: QUARANTINED ->
				/* re-assertion of a lease the registry lost */
				if
				:: REASSERT_ALLOWED ->
#ifndef REASSERT_MOVES_OTHER_LIFE
					/* never another life's row before it is reusable (R8;
					 * registry_renew()) */
					if :: row_life[b] != 0 && row_life[b] != p_life && row_reuse[b] >= REGCLK -> goto renewed
					   :: else -> skip fi;
#endif
					row_life[b] = p_life; row_lid[b] = p_lid; row_rel[b] = false;
					max2(row_ceil[b], hi, row_ceil[b]);
					max2(row_reuse[b], REGCLK + TTL + BR + S, row_reuse[b]);
					ok = true
				:: else -> skip
				fi
			:: else -> skip
			fi
		fi;
		/* the reply reaches the member unless lost or the life is gone */
		if
		:: ok && life[j] == p_life ->
			k = LT(j, b);
			if
			:: p_forged -> lt_has[k] = true; lt_lid[k] = p_lid; lt_floor[k] = p_floor; lt_ceil[k] = row_ceil[b]
			:: !p_forged && lt_has[k] && lt_lid[k] == p_lid ->
#ifdef MEMBER_CLOCK_CAP
				lt_ceil[k] = MEMCLK(j) + TTL + BR
#else
				lt_ceil[k] = row_ceil[b]
#endif
			:: else -> skip
			fi
		:: else -> skip
		fi;
renewed:
		if
		:: pend = false
		:: dups > 0 -> dups--	/* it will run again */
		:: faults > 0 -> faults--; pend = false	/* the reply is lost */
		fi
		:: else -> skip
		fi;
		CLR }

	/* the agent drops a lease: its deadline passed on its own clock (or a
	 * suspended member's monotonic clock missed it: then it does not) */
	:: atomic { select(j : 0 .. NS - 1); select(b : 0 .. NB - 1);
		lt_has[LT(j, b)] = false; CLR }

#ifdef MEMBER_FAULTS
	/* the agent restarts: it resumes the leases from shared memory */
	:: atomic { faults > 0 -> faults--; select(j : 0 .. NS - 1);
#ifdef AGENT_FORGETS_BLOCKS
		for (k : 0 .. NB - 1) { lt_has[LT(j, k)] = false }
#endif
		CLR }

#endif
	/* a grant: a session or keeper takes the lease's worker, above its floor */
	:: atomic { nissuers < NI -> select(j : 0 .. NS - 1); select(b : 0 .. NB - 1);
		k = LT(j, b);
		if
		:: lt_has[k] ->
		t = 0;
		do
		:: t < nissuers && i_on[t] && i_srv[t] == j && i_lid[t] == lt_lid[k] -> break
		:: t < nissuers && !(i_on[t] && i_srv[t] == j && i_lid[t] == lt_lid[k]) -> t++
		:: t >= nissuers -> break
		od;
		if
		:: t >= nissuers ->	/* one grant of the worker per lease */
			t = nissuers; nissuers++;
			i_on[t] = true; i_srv[t] = j; i_life[t] = life[j]; i_b[t] = b; i_lid[t] = lt_lid[k];
#ifdef BLOCK_SIZES
			/* one of the lease's workers (the claim's reply names them) */
			select(u : row_first[b] .. row_last[b]); i_w[t] = u;
#endif
			i_first[t] = 0; i_last[t] = lt_floor[k]
		:: else -> skip
		fi
		:: else -> skip
		fi;
		CLR }

	/* an issuer raises its reservation to its cap and issues every unit
	 * up to it, from above its floor (a busy issuer: every other order
	 * issues a subset); MP-1 checked against every other issuer */
	:: atomic { select(t : 0 .. NI - 1);
		if
		:: i_on[t] ->
			cap_of(t, c, ok);
			if
			:: ok && c > i_last[t] ->
				assert(c < UMAX);
				if :: i_first[t] == 0 -> i_first[t] = i_last[t] + 1 :: else -> skip fi;
				j = 0;
				do
				:: j < NI ->
					/* MP-1: [last + 1, c] meets no other issuer's units of the block */
					assert(j == t || I_W(j) != I_W(t) || i_first[j] == 0 ||
					       c < i_first[j] || i_last[t] + 1 > i_last[j]);
					j++
				:: else -> break
				od;
				i_last[t] = c
			:: else -> skip
			fi
		:: else -> skip
		fi;
		CLR }

	/* a member server crashes and restarts: a new life, nothing in memory */
	:: atomic { faults > 0 && nextlife < 5 -> faults--; select(j : 0 .. NS - 1);
		
		life[j] = nextlife; nextlife++; pin[j] = 0;
		for (k : 0 .. NB - 1) { lt_has[LT(j, k)] = false }
		t = 0;
		do
		:: t < NI -> if :: i_srv[t] == j -> i_on[t] = false :: else -> skip fi; t++
		:: else -> break
		od;
		CLR }

#ifdef MEMBER_FAULTS
	/* uid_registry_release() of a life that is gone */
	:: atomic { select(b : 0 .. NB - 1);
		if
		:: row_life[b] != 0 && row_life[b] != life[0] && row_life[b] != life[1] && !row_rel[b] ->
			row_rel[b] = true;
#ifdef RELEASE_BELOW_CAP
			/* released at the registry's clock, below the cap its holder had */
			row_ceil[b] = REGCLK; row_reuse[b] = REGCLK - 1;
#endif
			skip
		:: else -> skip
		fi;
		CLR }

#endif
#ifdef REGISTRY_FAULTS
	/* a base backup (or an asynchronous standby catching up) */
	:: atomic { backups > 0 -> backups--;
		for (k : 0 .. NB - 1) {
			bk_life[k] = row_life[k]; bk_lid[k] = row_lid[k]; bk_ceil[k] = row_ceil[k];
			bk_reuse[k] = row_reuse[k]; bk_rel[k] = row_rel[k]
		} }

#endif
#ifdef REGISTRY_FAULTS
	/* registry restart: nothing lost, but the registry cannot tell */
	:: atomic { faults > 0 -> faults--; lose_state() }

#endif
#ifdef REGISTRY_FAULTS
	/* restore from the backup, or failover to the stale standby: noticed
	 * (another timeline or start time); its clock within S (ASM-3) */
	:: atomic { faults > 0 && backups == 0 && regid == 1 -> faults--;
		for (k : 0 .. NB - 1) {
			row_life[k] = bk_life[k]; row_lid[k] = bk_lid[k]; row_ceil[k] = bk_ceil[k];
			row_reuse[k] = bk_reuse[k]; row_rel[k] = bk_rel[k]
		}
		if :: roff = roff :: roff == 0 -> roff = -S fi;
#ifdef FAULT_REGISTRY_CLOCK_BACK
		if :: R >= 3 -> roff = -3 :: skip fi;
#endif
#ifdef FAULT_UNNOTICED_RESTORE
		if :: lose_state() :: skip fi
#else
		lose_state()
#endif
	}

#endif
#ifdef REGISTRY_FAULTS
	/* the registry is created again: another identity, an empty table, a
	 * wait of HB since its creation (no uid_registry_start_fleet) */
	:: atomic { faults > 0 && regid == 1 -> faults--;
		regid = 2; created = REGCLK; fleet = false; quar = 0;
		pend = false;	/* their connections broke */
		for (k : 0 .. NB - 1) { row_life[k] = 0; row_lid[k] = 0; row_ceil[k] = 0; row_reuse[k] = 0; row_rel[k] = false }
		CLR }
#endif
	od
}
