/*
 * lease_policy.hpp
 *	  What a member decides about its leases, as arithmetic on numbers:
 *	  when it renews, which blocks still grant workers, when it wants
 *	  another block, how far a lease lets it issue, and which rules and
 *	  clock readings of the registry it accepts.
 *
 * The registry agent (src/registry) applies these under its lease table's
 * lock; they live here so that their edges are unit-tested
 * (test/unit/lease_policy_test.cpp).  Safety never rests on them alone:
 * the registry's ceiling caps every lease (INV-16, INV-17), and these
 * decide when a member asks for what.
 */
#pragma once

#include "core/layout.hpp"

#include <cstdint>
#include <optional>
#include <type_traits>

namespace uidgen {

/* The fleet's rules as the registry states them (uidgen.registry_rules()). */
struct RegistryRules
{
	int time_bits;
	int worker_bits;
	int seq_bits;
	int64_t epoch_ms;
	int unit_ms;
	int64_t max_borrow_ms;
	int64_t lease_ttl_ms;
	int block_size;
	int64_t max_clock_skew_ms;

	Layout layout() const;
};
static_assert(std::is_trivially_destructible_v<RegistryRules>);

/* The rules as a registry's reply carries them, before they are checked, with its clock reading. */
struct RulesReply
{
	int64_t time_bits;
	int64_t worker_bits;
	int64_t seq_bits;
	int64_t epoch_ms;
	int64_t unit_ms;
	int64_t max_borrow_ms;
	int64_t lease_ttl_ms;
	int64_t block_size;
	int64_t max_clock_skew_ms;
	int64_t clock_ms;
};
static_assert(std::is_trivially_destructible_v<RulesReply>);

/*
 * The rules of a reply that makes sense: a layout's bounds
 * (core/layout.hpp), a unit of 1 ms or 1 s, positive spans, a block size
 * that fits an int4, and a clock reading that leaves room to add to it.
 * Nothing for others: a registry that sends them is treated as one whose
 * reply is malformed, and nothing is cast before it is checked.
 */
std::optional<RegistryRules> checked_rules(const RulesReply &reply);

/*
 * The registry's clock against this server's, read between sent_ms and
 * received_ms: the offset from the middle of the round trip, and what the
 * round trip leaves uncertain.  The clocks disagree when the offset is
 * beyond max_clock_skew_ms by more than that uncertainty (so a slow round
 * trip never refuses a member whose clock is right).
 */
struct ClockOffset
{
	int64_t offset_ms;
	int64_t uncertainty_ms;

	bool beyond(int64_t max_clock_skew_ms) const;
};
static_assert(std::is_trivially_destructible_v<ClockOffset>);
ClockOffset clock_offset(int64_t sent_ms, int64_t received_ms, int64_t registry_clock_ms);

/*
 * A lease is renewed once a sixth of its length has passed, so that an
 * outage of five sixths of a lease changes nothing.  left_ms is what is
 * left of it on the member's monotonic clock.
 */
bool renewal_due(int64_t left_ms, int64_t lease_ms);

/*
 * A block's workers not granted yet count as spare only while more than a
 * third of its lease is left: the member asks for another block before
 * the reserve it counts on is near its end.
 */
bool counts_as_spare(int64_t left_ms, int64_t lease_ms);

/*
 * Whether the member wants another block: below its limit of blocks, and
 * either a registration waits with no worker spare, or fewer than half a
 * block of workers are spare.
 */
bool block_wanted(int blocks, int max_blocks, int waiting, int64_t spare, int block_size);

/*
 * Whether the member gives back a block whose workers serve no database any
 * more (each went to a database that was dropped since): only when the
 * blocks it keeps leave it no reason to want another (block_wanted() with
 * this one gone, spare_without being what the others have spare), so that
 * it never gives back what it would lease again at once; the last block is
 * kept for the next database.
 */
bool give_back_wanted(int blocks, int max_blocks, int waiting, int64_t spare_without, int block_size);

/*
 * The last unit a worker of a lease may issue: the registry's ceiling,
 * and below it what the rest of the lease plus max_borrow reaches on this
 * server's clock (so that a server never borrows further ahead than its
 * lease lasts).  Nothing once the lease has ended (left_ms <= 0).  The
 * ceiling decides for the next holder, whatever this clock says.
 */
std::optional<int64_t> lease_cap(const Layout &layout, int64_t ceiling_delta, int64_t left_ms, int64_t now_ms,
								 int64_t max_borrow_ms);

} // namespace uidgen
