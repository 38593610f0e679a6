/*
 * raise_policy_test.cpp
 *	  Unit tests of how far the keeper raises its database's reservation
 *	  (core/raise_policy.hpp).
 */
#include "core/raise_policy.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>

namespace {

using namespace uidgen;

TEST(RaisePolicy, NeededIsAheadOfClockCursorAndWanted)
{
	/* The clock leads. */
	EXPECT_EQ(raise_needed(100, 90, 0, 2, 5), 105);
	/* The cursor leads (backends borrowed ahead). */
	EXPECT_EQ(raise_needed(100, 120, 0, 2, 5), 125);
	/* A private worker asked ahead, within what it may borrow. */
	EXPECT_EQ(raise_needed(100, 90, 101, 2, 5), 106);
	/* Asked far ahead (its clock was): no further than the borrow past the clock. */
	EXPECT_EQ(raise_needed(100, 90, 900, 2, 5), 107);
}

TEST(RaisePolicy, TargetIsCappedByEachLease)
{
	/* The cursor alone, short of what is needed, under a high cap. */
	EXPECT_EQ(raise_target(150, CoveredWorker{100, 1000}, nullptr, 0), 150);
	/* Its cap is lower: raised to the cap, never past it. */
	EXPECT_EQ(raise_target(150, CoveredWorker{100, 130}, nullptr, 0), 130);
	/* Already at its cap: no raise. */
	EXPECT_EQ(raise_target(150, CoveredWorker{130, 130}, nullptr, 0), -1);
	/* Already covered: no raise. */
	EXPECT_EQ(raise_target(150, CoveredWorker{150, 1000}, nullptr, 0), -1);
}

TEST(RaisePolicy, PrivateWorkersRaiseNoFurtherThanTheirOwnCaps)
{
	CoveredWorker privates[] = {
		{100, 140},			 /* short of its cap: up to 140 */
		{100, std::nullopt}, /* its lease ended: counts for nothing */
		{145, 145},			 /* at its cap */
	};
	/* The cursor is covered; the highest private that is short decides. */
	EXPECT_EQ(raise_target(150, CoveredWorker{150, 1000}, privates, 3), 140);
	/* An ended lease alone never raises. */
	EXPECT_EQ(raise_target(150, CoveredWorker{150, 1000}, privates + 1, 1), -1);
	/* The cursor short too: the highest of the capped targets. */
	EXPECT_EQ(raise_target(150, CoveredWorker{120, 135}, privates, 3), 140);
}

} // namespace
