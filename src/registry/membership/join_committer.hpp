/*
 * join_committer.hpp
 *	  Commits a database's join of its registry in a transaction of its own,
 *	  by a background worker started for that one write, before the session
 *	  that asked for it issues (INV-19, INV-20).
 *
 * A join written in the joining session's transaction makes every other
 * session of the database that joins before it commits wait for it (the
 * membership row is a singleton): two sessions whose transactions each hold
 * a lock the other wants then deadlock.  Committed apart, the join is seen
 * by the next session at once; and no ID issued under the registry can
 * commit without the membership row that records which registry it was.
 */
#pragma once

extern "C" {
#include "postgres.h"

#include "utils/uuid.h"
}

#include <cstdint>

namespace uidgen::pg {

/*
 * Has a background worker join this database to registry (the text of
 * uidgen.registry without secrets, as describe_current_registry() gives
 * it), whose identity the server's agent pinned as registry_id, and commit
 * it, flushed to local disk; waits for it to end.  True once it ended, in
 * success or error: the caller then reads the membership row, which is
 * absent when the background worker failed or saw another uidgen.registry
 * (a reload between) and wrote nothing.  False when none could be started
 * or the postmaster died.  Either way, a caller that finds no row joins in
 * its own transaction.  With adopt_layout, it first adopts the registry's
 * layout (adopt_layout_if_unclaimed()); only a caller that holds no lock on
 * uidgen.config may ask for that, or the committer waits for it.
 */
bool commit_join_apart(const char *registry, const pg_uuid_t &registry_id, int64_t now_delta, int64_t borrow_units,
					   bool adopt_layout);

} // namespace uidgen::pg

extern "C" {
PGDLLEXPORT void uidgen_join_committer_main(Datum main_arg);
}
