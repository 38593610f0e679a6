/*
 * model/session.pml: one session's IDs strictly increase across worker
 * changes (MP-2), and a reinstall of the extension issues no ID of the old
 * install again (MP-3), under rules S1 and S2 (model/README.md says which
 * code enforces them).
 *
 * Time is a small integer C (the session's clock, stepped back or forward
 * within the run); an ID is (unit, worker, sequence), ordered in that order.
 * The session issues under one worker at a time; a worker change (a join, a
 * move, a withdrawn lease, lost locks, a reinstall) gives it another worker
 * whose claim floor is any unit.  The mark is the time reservation, kept
 * where it outlives the extension; a generator issues only units the mark
 * covers.  In scope server the keeper's cursor stands in for the session's
 * last unit, with the same rule.
 *
 * Mutants: SESSION_BELOW_LAST (a new worker starts at its claim's floor and
 * the clock, not above the session's last unit), REINSTALL_AT_CLOCK (a new
 * install's workers start at the clock, not above the old mark).
 */

#define TM  5		/* the clock runs 0 .. TM */
#define BR  1		/* max_borrow */
#define NW  2		/* workers of one install */

byte C;			/* the clock */
byte mark;		/* time reservation that outlives the extension */
byte oldmark;		/* the mark when the old install was dropped */
byte inst;		/* install generation: 0 or 1 (one reinstall) */
byte w = 1;		/* the session's worker */
byte wi;		/* the install it came from */
byte lu;		/* the session's last unit (0: none yet) */
byte lw;		/* ... and worker */
byte floor;		/* the unit the worker starts above */
short used[4];		/* per (install, worker): units issued, a bit each */
byte steps = 2;		/* clock steps back */
byte changes = 3;	/* worker changes */
byte u, x, f;

active proctype session()
{
	do
	:: atomic { C < TM -> C++ }
	:: atomic { steps > 0 && C > 0 -> steps--; C-- }

	/* issue: the next unit at or above the clock and above the last (the
	 * generator borrows up to BR ahead when the clock is behind), covered
	 * by the mark (raised by a window when the extension exists) */
	:: atomic {
		x = floor + 1;
		if :: lu + 1 > x && lw == w && wi == inst -> x = lu + 1 :: else -> skip fi;
		if :: C > x -> x = C :: else -> skip fi;
		if
		:: x <= C + BR && x < 8 ->
			if :: wi == inst && mark < x + 1 -> mark = x + 1 :: else -> skip fi;
			if
			:: x <= mark ->
				/* MP-2: strictly after the session's last ID */
				assert(lu == 0 || x > lu || (x == lu && w >= lw));
				/* MP-3: no (unit, worker) issued under the other install */
				assert((used[(1 - wi) * 2 + w - 1] & (1 << x)) == 0);
				used[wi * 2 + w - 1] = used[wi * 2 + w - 1] | (1 << x);
				lu = x; lw = w
			:: else -> skip
			fi
		:: else -> skip
		fi;
		x = 0 }

	/* a worker change: another worker, its claim floor any unit at or
	 * above the worker's own last issued unit in this install */
	:: atomic { changes > 0 -> changes--;
		w = 3 - w; wi = inst;
		select(f : 0 .. TM);
		/* the worker's row: it starts above what it issued before */
		u = 7;
		do
		:: u > 0 && (used[wi * 2 + w - 1] & (1 << u)) == 0 -> u--
		:: u == 0 || (used[wi * 2 + w - 1] & (1 << u)) != 0 -> break
		od;
		if :: u > f -> f = u :: else -> skip fi;
#ifndef REINSTALL_AT_CLOCK
		/* a worker of the new install starts above the old one's mark */
		if :: wi == 1 && oldmark > f -> f = oldmark :: else -> skip fi;
#endif
#ifndef SESSION_BELOW_LAST
		/* S1: above the session's last unit */
		if :: lu > f -> f = lu :: else -> skip fi;
#endif
		floor = f; f = 0; u = 0 }

	/* DROP EXTENSION; CREATE EXTENSION: the session's next worker is one
	 * of the new install, whose workers start above the old mark */
	:: atomic { inst == 0 && changes > 0 -> changes--;
		inst = 1; wi = 1; w = 1; oldmark = mark;
#ifdef REINSTALL_AT_CLOCK
		floor = C;
#else
		/* S2: the reach outlives the extension */
		if :: mark > C -> floor = mark :: else -> floor = C fi;
#endif
		/* the same session (its last unit counts, MP-2), or a new one */
		if
		:: lu > floor -> floor = lu
		:: lu = 0; lw = 0
		:: else -> skip
		fi }
	od
}
