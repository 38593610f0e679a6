/*
 * keeper.hpp
 *	  The keeper: one background worker per database that uses the
 *	  server-wide generator.
 *
 * It does every write the shared generator needs, in transactions of its
 * own, so that a backend never writes to issue an ID (a read-only
 * transaction, a trigger or a prepared transaction can take one):
 *
 *	- it claims the database's worker in uidgen.worker_node, as a
 *	  registering backend would, commits, and holds the worker's session
 *	  locks for as long as it lives;
 *	- it keeps the time reservation (reservation.hpp) a few seconds ahead of
 *	  the cursor and of the clock, and raises it at once when a backend
 *	  asks;
 *	- it claims the private workers that it lends to backends whose demand
 *	  outruns the shared cursor;
 *	- at exit it closes the cursor and releases its workers above every
 *	  unit they may have issued.
 *
 * It leaves after uidgen.keeper_idle_timeout without IDs, and at once when
 * DROP DATABASE, a rename or a template copy waits on its lock on the
 * database (database_worker.hpp): it never holds a database open.
 */
#pragma once

#include "server_scope/shared_state.hpp"

extern "C" {
#include "postgres.h"
}

namespace uidgen::pg {

/*
 * Starts the keeper of generator (its stage already Starting); false when
 * no background worker slot is free.
 */
bool launch_keeper(SharedState *state, SharedGenerator *generator);

} // namespace uidgen::pg

extern "C" {
PGDLLEXPORT void uidgen_keeper_main(Datum main_arg);
}
