/*
 * worker_lock.hpp
 *	  The session locks that claim a worker id for the life of a backend, and
 *	  the one list of the workers this backend holds.
 *
 * A worker id is guarded by two session-level locks, both taken without
 * waiting, and a backend that holds either one holds the worker:
 *
 *	- an object lock in the default lock method on (uidgen.worker_node's OID,
 *	  worker id).  DISCARD ALL and pg_advisory_unlock_all() do not release it,
 *	  but every top-level transaction abort does (ProcReleaseLocks releases
 *	  default-method session locks when aborting), so it is taken again
 *	  right after the abort (see backend_generator.cpp);
 *	- an advisory lock on (database, worker_node's OID, worker id, 3).  Aborts
 *	  leave it alone; DISCARD ALL and pg_advisory_unlock_all() release it, so
 *	  it is taken again at the end of the transaction.
 *
 * A claimant must take both, so a worker whose holder lives is never handed
 * out, whichever of the two a statement has just released.  Both show in
 * pg_locks.  The fourth advisory key, 3, is one that the SQL advisory lock
 * functions never use (they use 1 and 2), so no user lock can collide.
 */
#pragma once

#include "layout/catalog.hpp"

extern "C" {
#include "postgres.h"
}

#include <cstdint>
#include <type_traits>

namespace uidgen::pg {

/* Why this backend holds a worker's locks. */
enum class WorkerUse
{
	Candidate,	/* a registration is looking at it; given back at transaction end */
	Issuing,	/* the backend's generator issues under it */
	Retired,	/* it issued under it, lost a lock, and keeps it to release at exit */
};

struct HeldWorker
{
	Oid worker_table;
	int64_t worker;
	WorkerUse use;
	int64_t last_delta;	/* Retired: the last time unit issued under it */
};
static_assert(std::is_trivially_destructible_v<HeldWorker>);

/* Takes both locks or neither, never waiting; on success the worker is a Candidate. */
bool try_lock_worker(Oid worker_table, int64_t worker);

/* Releases whichever of the two this backend holds, and forgets the worker. */
void unlock_worker(Oid worker_table, int64_t worker);

/* The candidate a registration chose: the backend issues under it now. */
void start_issuing(Oid worker_table, int64_t worker);

/* The issuing worker lost a lock that could not be taken back: keep it to release at exit. */
void retire_worker(Oid worker_table, int64_t worker, int64_t last_delta);

/*
 * Gives back every candidate: the worker of a registration that failed, or
 * those a registration looked at and passed over.
 */
void unlock_candidates();

/*
 * Releases every worker's locks and forgets them all.  Nothing in PostgreSQL
 * releases default-method session locks at a clean exit, so whatever is not
 * released would stay with this PGPROC for the next backend.
 */
void unlock_all_workers();

/*
 * Takes whichever of the two this backend has lost, without waiting and
 * without raising an error (it runs during transaction abort); returns
 * whether both are now held.
 */
bool relock_worker(Oid worker_table, int64_t worker);

/*
 * The entry of a worker this backend issues under: this list is the one
 * record of which workers a backend holds, and of which worker table.
 * nullptr when it holds no such worker.
 */
const HeldWorker *issuing_entry(int64_t worker);

/*
 * Whether another process holds the worker (its advisory lock): a try that,
 * when it succeeds, gives the lock back at once.  For the claim pool, which
 * hands a worker over once a backend holds it (claim_pool.hpp).
 */
bool worker_locked_elsewhere(Oid worker_table, int64_t worker);

/*
 * The pool mark: a third session lock on a worker id, an advisory lock on
 * (database, worker_node's OID, worker id, 6), held by the claim pool while
 * the worker's claim is committed in its name and nothing has been issued
 * under it (claim_pool.hpp).  Taken without waiting; false when another
 * process holds it.
 */
bool take_pool_mark(Oid worker_table, int64_t worker);
void release_pool_mark(Oid worker_table, int64_t worker);

/*
 * Whether another process holds the worker's pool mark: a try that gives
 * the mark back at once when it succeeds.  A worker whose row reads active
 * and whose two locks are free is a leak only when this is false.
 */
bool pool_mark_held_elsewhere(Oid worker_table, int64_t worker);

/* The workers this backend holds, in no particular order. */
int held_worker_count();
const HeldWorker &held_worker(int index);

} // namespace uidgen::pg
