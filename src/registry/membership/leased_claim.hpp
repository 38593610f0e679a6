/*
 * leased_claim.hpp
 *	  A leased claim: a database claiming a worker from the blocks this server
 *	  leased from its registry (the glossary of docs/design.md).
 *
 * Both run inside an SPI connection, as the extension owner, in the
 * registering transaction (worker_table.hpp's conventions).
 */
#pragma once

#include "core/layout.hpp"
#include "registry/lease_table.hpp"
#include "worker_table/worker_table.hpp"

#include <optional>

namespace uidgen::pg {

/*
 * Makes this database's layout the registry's when no worker has ever
 * registered in it, or errors when it differs; waits for the registry
 * agent's first exchange.  Run before the registration locks uidgen.config.
 * The join committer adopts it with the database's join, in a transaction
 * of its own; only when it cannot is the layout changed in the caller's
 * transaction, and then this returns true.
 */
bool adopt_registry_layout(Oid worker_table);

/* Errors (55000) when layout, read under the registration's lock, is not the registry's. */
void refuse_unless_registry_layout(const Layout &layout);

/* The join committer's part of that, in its transaction: true when it changed the layout. */
bool adopt_layout_if_unclaimed();

/*
 * claim_worker() with a registry: joins the registry first if this
 * database has not (a join floor above every ID it issued before), then
 * reuses a released worker this server life granted to this database, or
 * takes a fresh one from the server's blocks.  Takes its session locks.
 * Sets lease to the lease the worker came from.
 */
Claim claim_leased_worker(const Layout &layout, const Claimant &claimant, Oid worker_table, int64_t now_delta,
						int64_t borrow_units, bool reuse, LeaseId *lease);

/*
 * The time unit above every ID this database issued, or may still issue
 * under a worker it holds (its workers' last units, its time reservation
 * once no raise is under way; not this server's clock); Generator::no_floor when
 * it cannot have issued any (worker_ever_claimed(), or a registry joined before).  Counts a join first (lease_table.hpp,
 * joins_so_far()), so that a worker claimed without a registry extends its
 * reservation no further.
 */
int64_t floor_above_all_issued(int64_t now_delta, int64_t borrow_units);

/*
 * The floor at which this database joined the registry of identity pinned
 * (as text), whatever uidgen.registry's text (registry, without secrets)
 * was then; nullopt when it has not joined it.  Errors (08004) when it
 * joined another registry under the name registry.
 */
std::optional<int64_t> joined_floor(const char *registry, const char *pinned);

/*
 * Joins this database to registry in the current transaction: records its
 * join floor (floor_above_all_issued()) and the registry's identity in
 * uidgen.membership, and releases its leaked workers at that floor.
 * Returns the floor it joined at, another session's when that one joined
 * first.
 */
int64_t write_join(const char *registry, const char *pinned, const char *identity, Oid worker_table,
				   int64_t now_delta, int64_t borrow_units);

/*
 * Errors (55000) when this database is a member of a registry (it has a row
 * in uidgen.membership) and the session has no uidgen.registry: a worker of
 * its own numbering may be one the registry leased to another member since.
 * It issues again once the registry is set again, or once it left the
 * registry on purpose (uid_registry_leave()).  Inside an SPI connection.
 */
void refuse_membership_without_registry();

} // namespace uidgen::pg
