/*
 * counter_witness_test.cpp
 *	  Unit tests of CounterWitness (src/core/counter_witness.hpp): what a
 *	  member sends of the registry counters it saw, and when a reply says
 *	  that the registry went back.
 */
#include "core/counter_witness.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace {

using namespace uidgen;

const uint8_t registry_a[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
const uint8_t registry_b[16] = {16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1};

TEST(CounterWitness, SendsNothingBeforeTheFirstReply)
{
	CounterWitness witness{};
	int64_t counter = -1;

	EXPECT_FALSE(witness.to_send(registry_a, &counter));
	EXPECT_EQ(counter, -1);
}

TEST(CounterWitness, SendsTheHighestSeenAtTheSameIdentity)
{
	CounterWitness witness{};
	int64_t counter = 0;

	EXPECT_FALSE(witness.note_reply(registry_a, false, 0, 40));
	ASSERT_TRUE(witness.to_send(registry_a, &counter));
	EXPECT_EQ(counter, 40);
	EXPECT_FALSE(witness.note_reply(registry_a, true, 40, 41));
	ASSERT_TRUE(witness.to_send(registry_a, &counter));
	EXPECT_EQ(counter, 41);
	/* A crash may make the sequence jump ahead. */
	EXPECT_FALSE(witness.note_reply(registry_a, true, 41, 73));
	ASSERT_TRUE(witness.to_send(registry_a, &counter));
	EXPECT_EQ(counter, 73);
}

TEST(CounterWitness, AReplyAtOrBelowWhatWasSentWentBack)
{
	CounterWitness witness{};
	int64_t counter = 0;

	witness.note_reply(registry_a, false, 0, 500);
	EXPECT_TRUE(witness.note_reply(registry_a, true, 500, 120));
	/* Kept: the registry moves its counter above it, and the next reply says so. */
	ASSERT_TRUE(witness.to_send(registry_a, &counter));
	EXPECT_EQ(counter, 500);
	EXPECT_TRUE(witness.note_reply(registry_a, true, 500, 500));
	EXPECT_FALSE(witness.note_reply(registry_a, true, 500, 501));
}

TEST(CounterWitness, AnotherIdentityStartsAfresh)
{
	CounterWitness witness{};
	int64_t counter = 0;

	witness.note_reply(registry_a, false, 0, 900);
	EXPECT_FALSE(witness.to_send(registry_b, &counter));
	/* A registry moved to counts on its own: a low counter there is no revert. */
	EXPECT_FALSE(witness.note_reply(registry_b, false, 0, 3));
	ASSERT_TRUE(witness.to_send(registry_b, &counter));
	EXPECT_EQ(counter, 3);
	EXPECT_FALSE(witness.to_send(registry_a, &counter));
}

TEST(CounterWitness, NothingSentIsNoRevert)
{
	CounterWitness witness{};

	witness.note_reply(registry_a, false, 0, 900);
	EXPECT_FALSE(witness.note_reply(registry_a, false, 0, 5));
}

} // namespace
