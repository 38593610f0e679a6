/*
 * worker_table.hpp
 *	  uidgen.worker_node: claiming, re-claiming and releasing worker ids.
 *
 * Every function here runs inside an SPI connection, as the extension owner
 * with a pinned search_path (spi.hpp), in the calling transaction.
 */
#pragma once

#include "core/layout.hpp"

extern "C" {
#include "postgres.h"

#include "datatype/timestamp.h"
#include "storage/lockdefs.h"
}

#include <cstdint>
#include <optional>
#include <type_traits>

namespace uidgen::pg {

struct Claim
{
	int64_t worker;
	int64_t floor_delta;	/* the generator starts after it */
	/*
	 * Whether a later claimant decides from the worker's row alone that it is
	 * free: a released worker reused, or a copy's fresh id (a copy has no
	 * sequence of its own).  Such a claim must commit before anything is
	 * issued under it (claim_committer.hpp).  Not a fresh id of the
	 * database's sequence, which never hands it out again.
	 */
	bool row_decides;
};
static_assert(std::is_trivially_destructible_v<Claim>);

/*
 * The database a registration claims for: its identity, and whether the
 * worker table was made by another database, the original (this one is a
 * restored or template copy of it, which may still be generating).  The
 * original's identity is in uidgen.config.origin, a name 1.0.0 released;
 * "origin" is otherwise where an ID came from (the glossary of docs/design.md).
 */
struct Claimant
{
	const char *identity;	/* uidgen.database_identity() */
	bool is_copy;			/* the original's identity differs from it */
};
static_assert(std::is_trivially_destructible_v<Claimant>);

/* Compares the original's identity (uidgen.config.origin) with this database. */
Claimant identify_claimant(const char *original_identity);

/*
 * Claims a worker id for this backend and takes its session locks: a
 * released worker of this database whose last_time has passed when reuse is
 * on, otherwise a fresh id from the identity.  Workers of this database left
 * active by dead backends are released on the way, with last_time the
 * greater of now + borrow and the time reservation (reservation.hpp).
 * Errors with program_limit_exceeded when nothing is left.  Does not write
 * the claim.
 *
 * A copy of a database shares the original's worker table and sequence up to
 * the moment of the copy, so it never reuses the workers it inherited and
 * counts its fresh ids down from the top of the range while the original
 * counts up: the two never share a worker until together they have used
 * every worker id.
 */
Claim claim_worker(const Layout &layout, const Claimant &claimant, Oid worker_table, int64_t now_delta,
				   int64_t borrow_units, bool reuse);

/*
 * 1.0's reuse: a released worker of this database whose last_time has
 * passed, among the ids of only (a bigint[] literal) unless it is null,
 * locked; its floor is the row's last_time.  False when none is.
 */
bool claim_released_worker(const Layout &layout, const char *identity, Oid worker_table, int64_t now_delta,
						   const char *only, Claim *claim);

/*
 * The backend a claim row names as its holder: this one, or the one a claim
 * committer writes the row for (claim_committer.hpp).
 */
struct ClaimHolder
{
	int32 pid;
	TimestampTz backend_start;
	Oid role;				/* its session user */
	const char *application_name;
};
static_assert(std::is_trivially_destructible_v<ClaimHolder>);

ClaimHolder this_backend();

/*
 * Marks worker active and held by holder (an upsert: a fresh row may have
 * rolled back).  Written as of now rather than of the transaction's
 * snapshot; the session locks keep other writers away.
 */
void write_claim(int64_t worker, const char *identity, const ClaimHolder &holder = this_backend());

/* Whether the database's sequence has a fresh worker id left under the layout. */
bool fresh_worker_left(const Layout &layout);

/* Whether worker's row, as committed by now, reads active and held by this backend. */
bool claim_is_committed(int64_t worker);

/*
 * Marks worker released by this backend, with last_time at least
 * last_delta; inserts the row if the claim never committed.
 */
void write_release(int64_t worker, const char *identity, int64_t last_delta,
				   const ClaimHolder &holder = this_backend());

/*
 * Locks worker's row if it can be done at once; true also when there is no
 * row.  False when a transaction in progress (a prepared one included)
 * locks, inserts or deletes it: writing it would wait.  For the exit
 * release, which must never wait; a race with a transaction that begins to
 * insert the row after the look remains (only someone writing the table by
 * hand does that).
 */
bool lock_row_nowait(Oid worker_table, int64_t worker);

/* The row's last_time; nullopt when it has none, or there is no row. */
std::optional<int64_t> worker_last_time(int64_t worker);

/*
 * Releases this database's active workers whose holders are gone, with
 * last_time at least until_delta and never below the time reservation;
 * returns how many.  Skips this backend's own workers.
 */
int release_dead_workers(Oid worker_table, const char *identity, int64_t until_delta);

} // namespace uidgen::pg
