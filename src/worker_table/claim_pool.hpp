/*
 * claim_pool.hpp
 *	  The claim pool: a background worker per database that claims released
 *	  workers and commits their claims ahead of demand, so that a backend
 *	  that reuses a worker issues under a claim already on disk, without
 *	  starting a claim committer of its own (claim_committer.hpp).
 *
 * A pooled worker's row reads active, held by the pool (application_name
 * "uidgen claim pool"), committed with its WAL flushed; the pool holds the
 * worker's pool mark (worker_lock.hpp) and neither of its two locks.
 * Nothing is ever issued under a worker while the pool holds its mark:
 *
 *	- a backend takes the worker's two locks, finds the mark held by another
 *	  process, wakes the pool and waits for the mark to come free: the pool
 *	  lets it go only once someone else holds the worker's advisory lock
 *	  (or when it exits).  From then on the backend holds a committed claim
 *	  under which nothing has been issued, and starts above the row's
 *	  last_time, the floor of the release the pool reused;
 *	- whoever takes the two locks of an active row later and finds the mark
 *	  free treats the row as any other claim whose holder is gone: a leak,
 *	  released above the time reservation (worker_table.hpp).
 *
 * So a backend that dies after the hand-over, without releasing, leaves a
 * leak as a claim committer's backend would; one that gives up before the
 * mark came free issued nothing.  The pool never issues.
 *
 * The pool holds a session lock on its database that DROP DATABASE, ALTER
 * DATABASE ... RENAME and CREATE DATABASE ... TEMPLATE conflict with, and
 * leaves as soon as one of them waits for it, so that it never holds a
 * database open.  It leaves after claim_pool_idle_ms without a hand-over,
 * giving its workers back as they were released.
 */
#pragma once

#include "worker_table/worker_table.hpp"

extern "C" {
#include "postgres.h"
}

#include <optional>

namespace uidgen::pg {

/* The application_name (and backend type) of the pool, which its claim rows carry. */
constexpr const char *claim_pool_name = "uidgen claim pool";

/*
 * Inside the registration's SPI connection: a worker of this database's
 * pool whose last unit has passed by this backend's clock (now_delta), as
 * for any reuse, handed over to this backend with its two locks held (a
 * candidate, worker_lock.hpp) and its claim committed; nullopt when the
 * pool has none ready or does not hand one over in time.
 */
std::optional<Claim> take_pooled_worker(Oid worker_table, const char *identity, int64_t now_delta);

/*
 * Starts this database's claim pool unless one runs (uidgen.claim_pool_size
 * 0: never).  Does not wait for it; a backend that needed a committer calls
 * it, so that the next one need not.
 */
void wake_claim_pool();

} // namespace uidgen::pg

extern "C" {
PGDLLEXPORT void uidgen_claim_pool_main(Datum main_arg);
}
