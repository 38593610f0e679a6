/*
 * lease_policy_test.cpp
 *	  Unit tests of a member's decisions about its leases
 *	  (core/lease_policy.hpp): when it renews, what counts as spare, when it
 *	  wants a block, what a lease caps, which rules and clock readings it
 *	  accepts.  Each test sits on an edge of one decision.
 */
#include "core/lease_policy.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace {

using namespace uidgen;

TEST(LeasePolicy, RenewsOnceASixthOfTheLeaseHasPassed)
{
	/* A lease of 60 s: due once less than 50 s are left. */
	EXPECT_FALSE(renewal_due(60000, 60000));
	EXPECT_FALSE(renewal_due(50000, 60000));
	EXPECT_TRUE(renewal_due(49999, 60000));
	EXPECT_TRUE(renewal_due(0, 60000));
	EXPECT_TRUE(renewal_due(-1, 60000));
	/* Five sixths rounded down: a lease of 5 ms is due below 4 ms left. */
	EXPECT_FALSE(renewal_due(4, 5));
	EXPECT_TRUE(renewal_due(3, 5));
}

TEST(LeasePolicy, SpareOnlyWhileMoreThanAThirdIsLeft)
{
	EXPECT_TRUE(counts_as_spare(20001, 60000));
	EXPECT_FALSE(counts_as_spare(20000, 60000));
	EXPECT_FALSE(counts_as_spare(0, 60000));
}

TEST(LeasePolicy, WantsABlockWhenTheReserveIsShort)
{
	/* Blocks of 4: fewer than 2 spare. */
	EXPECT_FALSE(block_wanted(1, 16, 0, 2, 4));
	EXPECT_TRUE(block_wanted(1, 16, 0, 1, 4));
	/* Blocks of 5: fewer than 3. */
	EXPECT_FALSE(block_wanted(1, 16, 0, 3, 5));
	EXPECT_TRUE(block_wanted(1, 16, 0, 2, 5));
	/* Blocks of 1: none spare. */
	EXPECT_FALSE(block_wanted(1, 16, 0, 1, 1));
	EXPECT_TRUE(block_wanted(0, 16, 0, 0, 1));
	/* A registration waiting with nothing spare, even for large blocks with enough "half". */
	EXPECT_TRUE(block_wanted(1, 16, 1, 0, 1));
	EXPECT_FALSE(block_wanted(1, 16, 1, 1, 1));
	/* Never past the limit, however short. */
	EXPECT_FALSE(block_wanted(16, 16, 3, 0, 4));
	/* No overflow at the largest block size a reply may carry. */
	EXPECT_TRUE(block_wanted(0, 16, 0, 0, std::numeric_limits<int32_t>::max()));
}

TEST(LeasePolicy, AnEmptiedBlockGoesBackOnlyWhenTheOthersSuffice)
{
	/* Blocks of 4: the others keep 2 spare, enough. */
	EXPECT_TRUE(give_back_wanted(3, 16, 0, 2, 4));
	/* One spare left would want a block at once: kept. */
	EXPECT_FALSE(give_back_wanted(3, 16, 0, 1, 4));
	/* The last block stays, whatever is spare. */
	EXPECT_FALSE(give_back_wanted(1, 16, 0, 100, 4));
	/* A registration waiting with nothing spare elsewhere: kept. */
	EXPECT_FALSE(give_back_wanted(2, 16, 1, 0, 1));
	EXPECT_TRUE(give_back_wanted(2, 16, 1, 1, 1));
	/* At the limit: one fewer is below it, and wanted if short. */
	EXPECT_FALSE(give_back_wanted(16, 16, 0, 0, 4));
	EXPECT_TRUE(give_back_wanted(16, 16, 0, 2, 4));
}

TEST(LeasePolicy, LeaseCapIsTheCeilingOrLessAndNothingOnceEnded)
{
	/* Whole seconds since the default epoch: units of 1000 ms. */
	Layout layout(31, 13, 19, Layout::default_epoch_ms, TimeUnit::Second);
	int64_t now = Layout::default_epoch_ms + 100000; /* unit 100 */

	/* The clock's reach (100 + 10 + 2 = 112) below the ceiling. */
	EXPECT_EQ(lease_cap(layout, 500, 10000, now, 2000), 112);
	/* The ceiling decides when it is lower, whatever this clock says. */
	EXPECT_EQ(lease_cap(layout, 105, 10000, now, 2000), 105);
	/* A lease that ended caps nothing: the worker issues nothing more. */
	EXPECT_FALSE(lease_cap(layout, 500, 0, now, 2000).has_value());
	EXPECT_FALSE(lease_cap(layout, 500, -5, now, 2000).has_value());
	/* One ms left still caps at the clock's unit plus the borrow. */
	EXPECT_EQ(lease_cap(layout, 500, 1, now, 0), 100);
}

RulesReply
good_reply()
{
	return RulesReply{41, 13, 9, Layout::default_epoch_ms, 1, 2000, 60000, 16, 1000, INT64_C(1800000000000)};
}

TEST(LeasePolicy, AcceptsTheDefaultRules)
{
	std::optional<RegistryRules> rules = checked_rules(good_reply());
	ASSERT_TRUE(rules.has_value());
	EXPECT_EQ(rules->block_size, 16);
	EXPECT_EQ(rules->layout().time_bits(), 41);
	EXPECT_EQ(rules->layout().unit_ms(), 1);
}

TEST(LeasePolicy, RefusesRulesOutOfRange)
{
	auto refused = [](auto change) {
		RulesReply r = good_reply();
		change(r);
		return !checked_rules(r).has_value();
	};
	EXPECT_TRUE(refused([](RulesReply &r) { r.time_bits = 0; }));
	EXPECT_TRUE(refused([](RulesReply &r) { r.worker_bits = 64; }));
	EXPECT_TRUE(refused([](RulesReply &r) { r.seq_bits = 42; })); /* 41 + 13 + 42 > 63 */
	EXPECT_TRUE(refused([](RulesReply &r) { r.unit_ms = 10; }));
	EXPECT_TRUE(refused([](RulesReply &r) { r.max_borrow_ms = -1; }));
	EXPECT_TRUE(refused([](RulesReply &r) { r.lease_ttl_ms = 0; }));
	EXPECT_TRUE(refused([](RulesReply &r) { r.block_size = 0; }));
	/* Not cast first: 2^32 + 16 would become 16. */
	EXPECT_TRUE(refused([](RulesReply &r) { r.block_size = (INT64_C(1) << 32) + 16; }));
	EXPECT_TRUE(refused([](RulesReply &r) { r.max_clock_skew_ms = -1; }));
	EXPECT_TRUE(refused([](RulesReply &r) { r.clock_ms = 0; }));
	EXPECT_TRUE(refused([](RulesReply &r) { r.clock_ms = std::numeric_limits<int64_t>::max() / 2 + 1; }));
	/* The edges that are accepted. */
	EXPECT_FALSE(refused([](RulesReply &r) { r.seq_bits = 9, r.time_bits = 41, r.worker_bits = 13; }));
	EXPECT_FALSE(refused([](RulesReply &r) { r.unit_ms = 1000; }));
	EXPECT_FALSE(refused([](RulesReply &r) { r.max_borrow_ms = 0; }));
	EXPECT_FALSE(refused([](RulesReply &r) { r.block_size = std::numeric_limits<int32_t>::max(); }));
}

TEST(LeasePolicy, ClockOffsetAllowsForTheRoundTrip)
{
	/* Sent at 1000, received at 1100: the registry read 1050 is no offset. */
	ClockOffset same = clock_offset(1000, 1100, 1050);
	EXPECT_EQ(same.offset_ms, 0);
	EXPECT_EQ(same.uncertainty_ms, 50);
	/* 1,070 ms off with 50 uncertain: beyond a bound of 1,000 only by 20. */
	ClockOffset ahead = clock_offset(1000, 1100, 2120);
	EXPECT_EQ(ahead.offset_ms, 1070);
	EXPECT_TRUE(ahead.beyond(1000));
	EXPECT_FALSE(ahead.beyond(1020));
	/* Behind counts the same. */
	EXPECT_TRUE(clock_offset(1000, 1100, 1050 - 1071).beyond(1020));
	/* A slow round trip never refuses a right clock. */
	EXPECT_FALSE(clock_offset(1000, 61000, 31000).beyond(0));
}

} // namespace
