/*
 * model/layout.pml: uid_configure.  A database's layout (bit widths, epoch,
 * unit) changes only before its first claim, a reinstall starts above the
 * old install's reach whatever layout it takes, and under a registry the
 * layout is the registry's, fixed by its first lease (INV-7, INV-13; MP-7
 * in docs/design.md; model/README.md says which code enforces each rule).
 *
 * An ID is the integer composed from (unit, worker, sequence) under the
 * layout its database has when it is issued, so that an ID issued under one
 * layout can equal one issued under the other.  MP-7: no integer is issued
 * twice.  Time is a small integer C (1 .. TM), read alike by every session.
 *
 * Profiles: without FLEET one database without a registry, two sessions,
 * one reinstall (DROP EXTENSION; CREATE EXTENSION); with FLEET a registry
 * and two member databases, one session each, whose workers come from
 * disjoint blocks.
 *
 * Mutants (each must fail): CONFIGURE_AFTER_CLAIM (a layout change after
 * the database's first claim), REACH_AS_UNIT (the reach kept as a unit of
 * the old install's layout rather than an ID), and, with FLEET,
 * REGISTRY_CONFIGURE_AFTER_LEASE (the registry's layout changed after its
 * first lease: members that join later take the new one).
 */

#define TM   4		/* the clock runs 1 .. TM */
#define NSES 2		/* sessions */

/* Layout 0, the one CREATE EXTENSION writes: epoch 0, a unit of one tick,
 * 2 worker bits, 1 sequence bit.  Layout 1: epoch 1, a unit of two ticks,
 * 2 worker bits, 2 sequence bits.  (0: C, w, s) = 8C + 2w + s and
 * (1: u, w, s) = 16u + 4w + s meet, e.g. (0: 2, 2, 0) = (1: 1, 1, 0) = 20. */
#define UNIT(l, c)	((l) == 0 -> (c) : ((c) - 1) / 2)
#define SMAX(l)		((l) == 0 -> 1 : 3)
#define ID(l, u, w, s)	((l) == 0 -> 8 * (u) + 2 * (w) + (s) : 16 * (u) + 4 * (w) + (s))
/* unit_floor_above(): the unit of ID x; every later unit's IDs are above x */
#define UNIT_OF(l, x)	((l) == 0 -> (x) / 8 : (x) / 16)

/* IDs issued: below 64, a bit each */
int used_lo, used_hi;
#define USED(x)	((x) < 32 -> (used_lo & (1 << (x))) != 0 : (used_hi & (1 << ((x) - 32))) != 0)

byte C = 1;

#ifdef FLEET
#define NDB 2
#define DB(s)	(s)
byte rlay;		/* the registry's layout (its uidgen.config) */
bool leased;		/* registry_has_leased(): uidgen.worker_block has a row */
#else
#define NDB 1
#define DB(s)	0
byte nextw = 1;		/* the worker sequence */
byte reach;		/* uidgen_reach.max_id: above every ID the old install issued */
byte maxid;		/* the largest ID this install issued (what keep_reach() keeps) */
byte reinstalls = 1;
#ifdef REACH_AS_UNIT
byte reach_unit;	/* the mutant's: the old install's last unit */
#endif
#endif
byte lay[NDB];		/* each database's layout (uidgen.config) */
bool claimed[NDB];	/* worker_ever_claimed() */
byte configures = 2;	/* uid_configure calls that change a layout, over the run */

/* sessions: worker (0: none), the unit its worker starts above, last unit
 * and sequence issued under it */
byte sw[NSES];
byte sfloor[NSES];
byte lu[NSES];
byte sq[NSES];
bool any[NSES];		/* issued under this worker yet */

byte s, d, u, x;
#define CLR	s = 0; d = 0; u = 0; x = 0

active proctype db()
{
	do
	:: atomic { C < TM -> C++ }

	/* uid_configure in a database: the other layout (change_layout()) */
	:: atomic { configures > 0 -> select(d : 0 .. NDB - 1);
		if
#ifdef CONFIGURE_AFTER_CLAIM
		:: true ->
#else
		/* refused once a worker was ever claimed (INV-7) */
		:: !claimed[d] ->
#endif
			configures--; lay[d] = 1 - lay[d]
		:: else -> skip
		fi;
		CLR }

#ifdef FLEET
	/* uid_configure at the registry */
	:: atomic { configures > 0 &&
#ifndef REGISTRY_CONFIGURE_AFTER_LEASE
		/* refused once it leased a block (registry_has_leased()) */
		!leased &&
#endif
		true -> configures--; rlay = 1 - rlay }
#endif

	/* a session claims a worker, reading the layout under its lock */
	:: atomic { select(s : 0 .. NSES - 1); d = DB(s);
		if
		:: sw[s] == 0 ->
#ifdef FLEET
			/* the first claim adopts the registry's layout
			 * (adopt_layout_if_unclaimed()); later ones are refused
			 * under another */
			if
			:: !claimed[d] -> lay[d] = rlay
			:: else -> skip
			fi;
			if
			:: lay[d] == rlay ->
				leased = true;		/* the member's block */
				claimed[d] = true;
				sw[s] = s + 1; sfloor[s] = 0; lu[s] = 0; sq[s] = 0; any[s] = false
			:: else -> skip
			fi
#else
			if
			:: nextw <= NSES ->
				claimed[d] = true;
				sw[s] = nextw; nextw++; lu[s] = 0; sq[s] = 0; any[s] = false;
				/* above the reach of earlier installs (INV-13):
				 * install_floor_delta() under the layout in force */
#ifdef REACH_AS_UNIT
				sfloor[s] = reach_unit
#else
				sfloor[s] = UNIT_OF(lay[d], reach)
#endif
			:: else -> skip
			fi
#endif
		:: else -> skip
		fi;
		CLR }

	/* a session issues the next ID of its worker under its database's
	 * layout (a relcache invalidation makes every backend read it again) */
	:: atomic { select(s : 0 .. NSES - 1); d = DB(s);
		if
		:: sw[s] != 0 ->
			u = UNIT(lay[d], C);
			if
			:: u > sfloor[s] && (!any[s] || u > lu[s]) -> sq[s] = 0; lu[s] = u; any[s] = true
			:: u > sfloor[s] && any[s] && u == lu[s] && sq[s] < SMAX(lay[d]) -> sq[s]++
			:: else -> goto issued
			fi;
			x = ID(lay[d], lu[s], sw[s], sq[s]);
			/* MP-7: no integer twice */
			assert(!USED(x));
			if
			:: x < 32 -> used_lo = used_lo | (1 << x)
			:: else -> used_hi = used_hi | (1 << (x - 32))
			fi;
#ifndef FLEET
			if :: x > maxid -> maxid = x :: else -> skip fi;
#endif
		:: else -> skip
		fi;
issued:
		CLR }

#ifndef FLEET
	/* DROP EXTENSION; CREATE EXTENSION: the reach outlives the drop as an
	 * ID (keep_reach()); the new install has the default layout, no
	 * worker claimed, and its sessions start over */
	:: atomic { reinstalls > 0 -> reinstalls--;
		if :: maxid > reach -> reach = maxid :: else -> skip fi;
#ifdef REACH_AS_UNIT
		s = 0;
		do
		:: s < NSES -> if :: sw[s] != 0 && any[s] && lu[s] > reach_unit -> reach_unit = lu[s] :: else -> skip fi; s++
		:: else -> break
		od;
#endif
		maxid = 0; nextw = 1; claimed[0] = false; lay[0] = 0;
		for (s : 0 .. NSES - 1) { sw[s] = 0; sfloor[s] = 0; lu[s] = 0; sq[s] = 0; any[s] = false }
		CLR }
#endif
	od
}
