/*
 * join_move.pml: joining a registry and moving a fleet to another one
 * (design F5, F6; INV-3, INV-19, INV-20), checked by SPIN (model/README.md).
 *
 * Time is a small integer T (one clock: the clocks' part is leases.pml's).
 * There is one worker number, 1, which every registry's block 1 and every
 * database's own numbering use, so an ID is a time unit u and two issuers
 * of one unit issue the same ID.  Two member databases m = 0, 1 (one per
 * server) and two registries r = 0 (the old) and 1 (the new; made fresh,
 * waiting out a lost predecessor's holders until WAIT, unless it imported
 * r = 0's export or was started as a new fleet).
 *
 * A registry is block 1's row: its recorded ceiling ceil[r], its holder,
 * whether it is sealed (exported) and whether it imported the other.  A
 * member has the registry its uidgen.registry text reaches (text[m]), the
 * identity its agent pinned (pin[m]), the one its database joined (mem[m])
 * with its join floor, its lease (registry, floor, ceiling) and one session
 * (its last unit), and the reach: the greatest unit its database issued.
 *
 * MP-6: no covered unit (above its database's join floor, as that floor
 * stands at the end) is issued twice within one fleet; and MP-2's
 * assertion: a session's units strictly increase across every worker
 * change.  Profiles -DMOVE (export, import, reload to registry 1, move)
 * and -DREJOIN (a reload of the same registry, unset and set again);
 * mutants and the fault FAULT_LOST_MOVE in model/README.md.
 */

#define NONE 2
#ifndef TMAX
#define TMAX 4
#endif
#define L 2			/* a lease's ceiling: its grant + TTL + max_borrow */
#define B 1			/* max_borrow: a unit at most B ahead of the clock */
#define WAIT 3		/* a fresh registry's creation + holder bound */

byte T = 0;
/* registries */
short ceil[2] = -1;
byte holder[2] = NONE;
bool ever_leased[2];
bool sealed[2];
bool imported[2];		/* imported[1]: registry 1 imported registry 0's export */
bool started[2];		/* uid_registry_start_fleet() */
short exported = -1;	/* the sealed ceiling registry 0's export carries */
bool taken_over;		/* registry 1 took registry 0's fleet over: by an import, or a lost move */
/* members: each starts outside any fleet, issuing under its own numbering */
byte text[2];
byte pin[2] = NONE;
byte mem[2] = NONE;
short jfloor[2] = -1;
byte lreg[2] = NONE;
short lfloor[2];
short lcap[2];
bool forgot[2];			/* TEXT_FORGETS_BLOCKS: the agent forgot the lease its session issues under */
bool outside[2] = true;	/* uidgen.registry unset: the database issues under its own numbering */
short local_last[2] = -1;
short slast[2] = -1;	/* the session's last unit */
short reach[2] = -1;
/* which members issued each unit (bits), and which of them twice */
byte cell[TMAX + B + 2];
byte twice;
byte events = 0;		/* exports, imports, reloads, unsets: at most EVENTS a run */
#ifndef EVENTS
#define EVENTS 3
#endif

inline issue_unit(m, u)
{
	/* MP-2: the session's units strictly increase */
	assert(u > slast[m]);
	slast[m] = u;
	if
	:: reach[m] < u -> reach[m] = u
	:: else -> skip
	fi;
	if
	:: (cell[u] & (1 << m)) != 0 && u > jfloor[m] -> twice = twice | (1 << m)
	:: (cell[u] & (1 << m)) != 0 && u <= jfloor[m] -> skip
	:: else -> cell[u] = cell[u] | (1 << m)
	fi
}

inline raise_floor(m)
{
	if
	:: jfloor[m] < reach[m] -> jfloor[m] = reach[m]
	:: else -> skip
	fi
}

/* registry_claim() at r for m: the registry pinned (or a first), the one
   its database joined (or its join now), never a sealed one (INV-20); the
   block above its recorded ceiling and the clock (F2). */
inline claim(m, r)
{
	atomic {
		(lreg[m] == NONE && !outside[m] && text[m] == r && (pin[m] == r || pin[m] == NONE)
		 && (mem[m] == r || mem[m] == NONE) && !sealed[r]
		 && (T >= WAIT || started[r] || imported[r])
		 && (holder[r] == NONE || T > ceil[r])) ->
		pin[m] = r;
		if
		:: mem[m] == NONE -> mem[m] = r; raise_floor(m)	/* the join (INV-19) */
		:: else -> skip
		fi;
		lreg[m] = r;
		forgot[m] = false;
		lfloor[m] = (ceil[r] > T -> ceil[r] : T);
		lcap[m] = T + L;
		ceil[r] = (ceil[r] > T + L -> ceil[r] : T + L);
		holder[r] = m;
		ever_leased[r] = true
	}
}

/* registry_renew(): a sealed registry raises no ceiling (INV-20) */
inline renew(m)
{
	atomic {
		(lreg[m] != NONE && !forgot[m] && holder[lreg[m]] == m && lcap[m] > T
#ifndef NO_SEAL
		 && !sealed[lreg[m]]
#endif
		) ->
		lcap[m] = T + L;
		ceil[lreg[m]] = (ceil[lreg[m]] > T + L -> ceil[lreg[m]] : T + L)
	}
}

/* A session issues under its lease: above the lease's floor, its join
   floor and its own last unit, up to the cap and B ahead of the clock. */
inline issue_leased(m)
{
	atomic {
		(lreg[m] != NONE && !outside[m]) ->
		u = T;
		if
		:: u <= lfloor[m] -> u = lfloor[m] + 1
		:: else -> skip
		fi;
		if
		:: u <= jfloor[m] -> u = jfloor[m] + 1
		:: else -> skip
		fi;
#ifndef SESSION_BELOW_LAST
		if
		:: u <= slast[m] -> u = slast[m] + 1
		:: else -> skip
		fi;
#endif
		/* a busy session: every unit up to its limit (any other order issues a subset) */
		do
		:: u <= lcap[m] && u <= T + B -> issue_unit(m, u); u++
		:: else -> break
		od;
		u = 0
	}
}

/* Outside a fleet, under the database's own numbering: above its own last
   unit and, as every new worker, the session's (INV-3, S1). */
inline issue_outside(m)
{
	atomic {
		outside[m] ->
		u = (local_last[m] >= T -> local_last[m] + 1 : T);
#ifndef SESSION_BELOW_LAST
		if
		:: u <= slast[m] -> u = slast[m] + 1
		:: else -> skip
		fi;
#endif
		do
		:: u <= T + B -> local_last[m] = u; issue_unit(m, u); u++
		:: else -> break
		od;
		u = 0
	}
}

/* A reload of uidgen.registry to registry 1: the agent takes it up only
   if it imported the one pinned (INV-20), dropping the old blocks. */
inline reload_other(m)
{
	atomic {
		(events < EVENTS && text[m] == 0 && !outside[m]) ->
		events++;
		text[m] = 1;
		if
		:: pin[m] == 0 && (imported[1]
#ifdef FAULT_LOST_MOVE
		                   || true
#endif
		                  ) -> pin[m] = 1; lreg[m] = NONE; lfloor[m] = 0; lcap[m] = 0; taken_over = true
		:: else -> skip	/* refused: the agent stays with registry 0 (or pins 1 as its first) */
		fi
	}
}

/* uid_registry_move(): the database joins the registry pinned, above
   everything it issued or may still issue (INV-19). */
inline move(m)
{
	atomic {
		(pin[m] != NONE && mem[m] != NONE && mem[m] != pin[m]) ->
		mem[m] = pin[m];
		raise_floor(m)
	}
}

/* A reload of the same registry under another text (a new password): the
   agent keeps its blocks, and the session its cap. */
inline reload_same(m)
{
	atomic {
		(events < EVENTS && lreg[m] != NONE && !forgot[m]) ->
		events++;
#ifdef TEXT_FORGETS_BLOCKS
		forgot[m] = true;
		lcap[m] = TMAX + B + 1
#else
		skip
#endif
	}
}

/* uidgen.registry unset: the blocks go and the database issues on its
   own; set again, it joins again above everything it issued (J2). */
inline unset(m)
{
	atomic {
		(events < EVENTS && !outside[m] && mem[m] != NONE) ->
		events++;
		outside[m] = true;
		lreg[m] = NONE;
		lfloor[m] = 0;
		lcap[m] = 0
	}
}

/* uidgen.registry set, the first time: the database joins at its next claim */
inline first_set(m)
{
	atomic {
		(outside[m] && mem[m] == NONE) ->
		outside[m] = false
	}
}

inline set_again(m)
{
	atomic {
		(outside[m] && mem[m] != NONE) ->
		outside[m] = false;
#ifndef STALE_MEMBERSHIP_FLOOR
		raise_floor(m)
#else
		skip
#endif
	}
}

/* A lease at its cap ends at the member; the registry's row keeps its ceiling. */
inline lapse(m)
{
	atomic {
		(lreg[m] != NONE && !forgot[m] && T >= lcap[m]) ->
		if
		:: holder[lreg[m]] == m -> holder[lreg[m]] = NONE
		:: else -> skip
		fi;
		lreg[m] = NONE;
		lfloor[m] = 0;
		lcap[m] = 0
	}
}

active proctype world()
{
	short u;
	byte i;
	started[0] = true;
	do
	:: atomic { T < TMAX -> T++ }
	:: claim(0, 0)
	:: claim(0, 1)
	:: claim(1, 0)
	:: claim(1, 1)
	:: renew(0)
	:: renew(1)
	:: issue_leased(0)
	:: issue_leased(1)
	:: issue_outside(0)
	:: issue_outside(1)
	:: first_set(0)
	:: first_set(1)
#ifdef MOVE
	/* registry 0's export seals it */
	:: atomic {
		(events < EVENTS && !sealed[0]) ->
		events++;
		sealed[0] = true;
		exported = ceil[0]
	   }
	/* registry 1 imports it, before its first lease */
	:: atomic {
		(events < EVENTS && sealed[0] && !imported[1] && !ever_leased[1]) ->
		events++;
		imported[1] = true;
		taken_over = true;
#ifndef NO_IMPORT
		ceil[1] = (ceil[1] > exported -> ceil[1] : exported)
#else
		skip
#endif
	   }
	:: reload_other(0)
	:: reload_other(1)
	:: move(0)
	:: move(1)
#endif
#ifdef REJOIN
	:: reload_same(0)
	:: reload_same(1)
	:: unset(0)
	:: unset(1)
	:: set_again(0)
	:: set_again(1)
#endif
	:: lapse(0)
	:: lapse(1)
	/* MP-6 at the end of time: no unit above both join floors issued by
	   both databases of one fleet (they joined one registry, or registry
	   1 took registry 0's fleet over: other fleets are other ID spaces),
	   nor twice by one above its floor.  A database that
	   never joined, or is outside now, joins, when it does, above all it
	   issued (INV-19, J2): its floor is its reach. */
	:: atomic {
		T == TMAX ->
		i = 0;
		do
		:: i <= TMAX + B ->
			if
			:: outside[0] || mem[0] == NONE -> raise_floor(0)
			:: else -> skip
			fi;
			if
			:: outside[1] || mem[1] == NONE -> raise_floor(1)
			:: else -> skip
			fi;
			assert(!(cell[i] == 3 && i > jfloor[0] && i > jfloor[1]
			         && (mem[0] == mem[1] || taken_over)));
			i++
		:: else -> break
		od;
		assert(twice == 0);
		break
	   }
	od
}
