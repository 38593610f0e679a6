/*
 * raise_policy.hpp
 *	  How far the keeper of scope server raises its database's time
 *	  reservation, and what caps the raise.
 *
 * One durable mark covers the shared cursor and every private worker
 * (INV-9, INV-14).  It is raised ahead of the clock, of the cursor and of
 * what private workers' generators asked for, but never past the highest
 * lease cap of a worker still short of it: a mark beyond what the leases
 * let the database issue would lift every join floor read from it, and
 * the next workers would wait for it (nemesis seed 91).  The keeper
 * applies these (src/server_scope/keeper.cpp); they are unit-tested in
 * test/unit/raise_policy_test.cpp.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <type_traits>

namespace uidgen {

/*
 * How far ahead of the clock, the cursor and what was asked the keeper
 * raises the mark, so that no generator waits for a raise while the
 * keeper's last one lasts; also how close they may come to it before the
 * keeper raises it again.
 */
constexpr int64_t raise_ahead_ms = 5000;

/* A worker the mark covers: how far its reservation reaches, and its lease's cap (nullopt: it ended). */
struct CoveredWorker
{
	int64_t reserved_until;
	std::optional<int64_t> cap;
};
static_assert(std::is_trivially_destructible_v<CoveredWorker>);

/*
 * The unit the mark should reach: ahead_units past the clock, the cursor
 * and what private workers asked for (wanted_until), the last no further
 * than borrow_units past the clock (what one asked while its clock was
 * far ahead stays there after the clock is right).  All in units.
 */
int64_t raise_needed(int64_t now, int64_t cursor, int64_t wanted_until, int64_t borrow_units, int64_t ahead_units);

/*
 * The unit to raise the mark to, or -1 (no raise): needed, each worker
 * capped at its own lease, for the workers whose reservation is still
 * short of that; the highest of those.
 */
int64_t raise_target(int64_t needed, const CoveredWorker &cursor, const CoveredWorker *privates, int count);

} // namespace uidgen
