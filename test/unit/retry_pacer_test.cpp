/*
 * retry_pacer_test.cpp
 *	  Unit tests of RetryPacer and RepeatFilter (src/core/retry_pacer.hpp):
 *	  the registry agent's back-off while the registry fails, and how often
 *	  it logs the same error.
 */
#include "core/retry_pacer.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace {

using namespace uidgen;

TEST(RetryPacer, AttemptsAtWillWhileNothingFails)
{
	RetryPacer pacer(1000, 5000);

	pacer.attempt_ended(false, 100);
	EXPECT_TRUE(pacer.may_attempt(100, false));
	EXPECT_TRUE(pacer.may_attempt(101, true));
	EXPECT_EQ(pacer.delay_ms(), 0);
}

TEST(RetryPacer, DoublesFromBaseToMax)
{
	RetryPacer pacer(1000, 5000);
	std::vector<int64_t> delays;

	for (int i = 0; i < 6; i++)
	{
		pacer.attempt_ended(true, 0);
		delays.push_back(pacer.delay_ms());
	}
	EXPECT_EQ(delays, (std::vector<int64_t>{1000, 2000, 4000, 5000, 5000, 5000}));
}

TEST(RetryPacer, WaitsTheDelayUnlessAskedThenTheBase)
{
	RetryPacer pacer(1000, 5000);

	for (int i = 0; i < 4; i++)
		pacer.attempt_ended(true, 10000);
	ASSERT_EQ(pacer.delay_ms(), 5000);
	EXPECT_FALSE(pacer.may_attempt(10999, true));
	EXPECT_TRUE(pacer.may_attempt(11000, true));
	EXPECT_FALSE(pacer.may_attempt(14999, false));
	EXPECT_TRUE(pacer.may_attempt(15000, false));
	EXPECT_EQ(pacer.next_attempt_ms(false), 15000);
	EXPECT_EQ(pacer.next_attempt_ms(true), 11000);
}

TEST(RetryPacer, ASuccessEndsTheBackOff)
{
	RetryPacer pacer(1000, 5000);

	pacer.attempt_ended(true, 0);
	pacer.attempt_ended(true, 1000);
	pacer.attempt_ended(false, 3000);
	EXPECT_TRUE(pacer.may_attempt(3000, false));
	pacer.attempt_ended(true, 3000);
	EXPECT_EQ(pacer.delay_ms(), 1000);
}

TEST(RepeatFilter, LogsTheSameErrorOncePerPeriodWithItsRepeats)
{
	RepeatFilter filter(60000);

	EXPECT_TRUE(filter.should_log(7, 0));
	EXPECT_EQ(filter.repeats(), 0);
	int logged = 0;
	for (int64_t t = 1000; t < 60000; t += 1000)
		logged += filter.should_log(7, t);
	EXPECT_EQ(logged, 0);
	EXPECT_TRUE(filter.should_log(7, 60000));
	EXPECT_EQ(filter.repeats(), 59);
}

TEST(RepeatFilter, LogsADifferentErrorAtOnce)
{
	RepeatFilter filter(60000);

	EXPECT_TRUE(filter.should_log(7, 0));
	EXPECT_FALSE(filter.should_log(7, 1));
	EXPECT_TRUE(filter.should_log(8, 2));
	EXPECT_EQ(filter.repeats(), 0);
	EXPECT_TRUE(filter.should_log(7, 3));
}

TEST(RepeatFilter, LogsAgainAfterAReset)
{
	RepeatFilter filter(60000);

	EXPECT_TRUE(filter.should_log(7, 0));
	filter.reset();
	EXPECT_TRUE(filter.should_log(7, 1));
	EXPECT_EQ(filter.repeats(), 0);
}

} // namespace
