/*
 * claim_committer.hpp
 *	  Commits a backend's claim of a reused worker in a transaction of its
 *	  own, by a background worker started for that one write, before the
 *	  backend issues under the worker (INV-11).
 *
 * A backend's own transaction is its user's: it may roll back, or the
 * server may crash before it ends.  A claim written only there leaves a
 * reused worker's row reading "released" at its previous holder's time
 * while the backend issues above it; a backend that then dies without its
 * exit release would have the next claimant start from that old floor.
 * Once the claim is committed, such a death leaves the row active with no
 * holder: a leak, released later above the time reservation.
 */
#pragma once

extern "C" {
#include "postgres.h"
}

#include <cstdint>

namespace uidgen::pg {

/*
 * Has a background worker write worker's row as active and held by this
 * backend, which holds its session locks, and commit it, flushed to local
 * disk; waits for it.  True once the committed row says so.  False when no
 * background worker could be started (max_worker_processes) or it failed:
 * the claim is then not committed, and the caller must not rely on it.
 * A cancel during the wait is an error; the background worker may still
 * commit the row, which then reads active with no holder, a leak.
 */
bool commit_claim_apart(int64_t worker);

} // namespace uidgen::pg

extern "C" {
PGDLLEXPORT void uidgen_claim_committer_main(Datum main_arg);
}
