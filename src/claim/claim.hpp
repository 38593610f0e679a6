/*
 * claim.hpp
 *	  The one claim path, for backends (scope backend) and keepers (scope
 *	  server) alike: a worker from the worker table, or with a registry from
 *	  this server's grants (registry/membership/leased_claim.hpp), and its
 *	  release at exit.  A layer of its own above both, since it calls both
 *	  and the leased claim uses the worker table (src/claim/README.md).
 */
#pragma once

#include "core/layout.hpp"
#include "registry/lease_table.hpp"
#include "worker_table/worker_table.hpp"

extern "C" {
#include "postgres.h"

#include <type_traits>
}

namespace uidgen::pg {

/*
 * Whose transaction commits a claim: the caller's, when its transactions
 * are its own and commit before it issues (a keeper), or one apart from it
 * when a later claimant decides from the row alone (Claim::row_decides) and
 * the caller is a backend, whose transaction is its user's
 * (claim_committer.hpp).
 */
enum class ClaimCommit
{
	ByCaller,
	Apart,
};

/*
 * A worker claimed, with its session locks held and its claim written in
 * the current transaction, or committed already.
 */
struct Registration
{
	Oid relid;		/* uidgen.worker_node */
	Layout layout;
	Claim claim;
	bool leased;	/* from a block of the registry's (uidgen.registry) */
	uint64_t joins_seen;	/* joins_so_far() before the claim (lease_table.hpp) */
	LeaseId lease;	/* leased: the lease it came from, which caps it (lease_cap_delta) */
	/*
	 * The claim committed apart (ClaimCommit::Apart), and the caller's
	 * transaction wrote nothing of the registration; otherwise it counts as
	 * written in that transaction.
	 */
	bool committed;
};
static_assert(std::is_trivially_destructible_v<Registration>);

/*
 * Claims a worker as a registering backend does; inside a transaction.
 * With ClaimCommit::Apart, a worker of the worker table whose row alone
 * decides (a released one reused, a copy's fresh one) has its claim
 * committed apart from the caller's transaction; where that cannot be done,
 * a fresh id of the database's sequence is taken instead (a copy errors).
 * (Workers reused from a registry's grants start above what their holders
 * noted in shared memory at exit: grant_issued_until(), lease_table.hpp.)
 */
Registration claim_new_worker(ClaimCommit commit);

/*
 * At exit: releases every worker this process holds, each at the last unit
 * it issued, which its user records first (retire_worker()): a worker still
 * a candidate issued nothing and is only unlocked.  Then unlock_all_workers()
 * (worker_lock.hpp) takes their locks back, even when releasing failed.
 */
void release_at_exit();

} // namespace uidgen::pg
