/*
 * horizon_test.cpp
 *	  Unit tests of the safe horizon's arithmetic (core/horizon.hpp): it lies
 *	  below every ID a generator can issue at or after the clock readings it
 *	  is given, the server scope's one stale unit included.
 */
#include "core/horizon.hpp"
#include "core/layout.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace {

constexpr int64_t kEpoch = INT64_C(1767225600000);

TEST(Horizon, FloorIsTheUnitBeforeTheClock)
{
	uidgen::Layout ms(41, 10, 12, kEpoch, uidgen::TimeUnit::Millisecond);
	int64_t now = kEpoch + 5000;

	EXPECT_EQ(uidgen::issue_floor(ms, now), ms.compose(4999, 0, 0));
	/* The lowest ID the stale chunk of the server scope may still issue lies above the horizon. */
	EXPECT_LT(uidgen::safe_horizon(ms, now, std::nullopt), ms.compose(4999, 0, 0));
	EXPECT_EQ(uidgen::safe_horizon(ms, now, std::nullopt), ms.compose(4999, 0, 0) - 1);
}

TEST(Horizon, OldestOpenTransactionHoldsItBack)
{
	uidgen::Layout ms(41, 10, 12, kEpoch, uidgen::TimeUnit::Millisecond);
	int64_t now = kEpoch + 5000;

	EXPECT_EQ(uidgen::safe_horizon(ms, now, now - 300), ms.compose(4699, 0, 0) - 1);
	/* A transaction that read the clock after ours cannot move the horizon past our own clock. */
	EXPECT_EQ(uidgen::safe_horizon(ms, now, now + 300), ms.compose(4999, 0, 0) - 1);
}

TEST(Horizon, SecondUnits)
{
	uidgen::Layout s(31, 20, 12, kEpoch, uidgen::TimeUnit::Second);

	/* 10.5 s after the epoch is unit 10; the floor is the start of unit 9. */
	EXPECT_EQ(uidgen::issue_floor(s, kEpoch + 10500), s.compose(9, 0, 0));
}

TEST(Horizon, BeforeTheEpochNothingIsSafe)
{
	uidgen::Layout ms(41, 10, 12, kEpoch, uidgen::TimeUnit::Millisecond);

	EXPECT_EQ(uidgen::safe_horizon(ms, kEpoch, std::nullopt), -1);
	EXPECT_EQ(uidgen::safe_horizon(ms, kEpoch - 100000, std::nullopt), -1);
	EXPECT_EQ(uidgen::safe_horizon(ms, kEpoch + 100000, kEpoch - 1), -1);
}

} // namespace
