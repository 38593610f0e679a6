/*
 * counter_witness_test.cpp
 *	  Unit tests of CounterWitness (src/core/counter_witness.hpp): what a
 *	  member sends of the registry counters it saw, and when a reply says
 *	  that the registry went back.
 */
#include "core/counter_witness.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>

namespace {

using namespace uidgen;

const uint8_t registry_a[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
const uint8_t registry_b[16] = {16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1};

/* A counter with a proof that names it, so that a test sees which proof went with which counter. */
SignedCounter
signed_counter(int64_t value)
{
	SignedCounter c{};

	c.value = value;
	snprintf(c.proof, sizeof(c.proof), "%064llx", static_cast<unsigned long long>(value));
	return c;
}

TEST(CounterWitness, SendsNothingBeforeTheFirstReply)
{
	CounterWitness witness{};
	SignedCounter counter{};
	counter.value = -1;

	EXPECT_FALSE(witness.to_send(registry_a, &counter));
	EXPECT_EQ(counter.value, -1);
}

TEST(CounterWitness, SendsTheHighestSeenAtTheSameIdentity)
{
	CounterWitness witness{};
	SignedCounter counter{};

	EXPECT_FALSE(witness.note_reply(registry_a, false, 0, signed_counter(40)));
	ASSERT_TRUE(witness.to_send(registry_a, &counter));
	EXPECT_EQ(counter.value, 40);
	EXPECT_FALSE(witness.note_reply(registry_a, true, 40, signed_counter(41)));
	ASSERT_TRUE(witness.to_send(registry_a, &counter));
	EXPECT_EQ(counter.value, 41);
	/* A crash may make the sequence jump ahead. */
	EXPECT_FALSE(witness.note_reply(registry_a, true, 41, signed_counter(73)));
	ASSERT_TRUE(witness.to_send(registry_a, &counter));
	EXPECT_EQ(counter.value, 73);
}

TEST(CounterWitness, AReplyAtOrBelowWhatWasSentWentBack)
{
	CounterWitness witness{};
	SignedCounter counter{};

	witness.note_reply(registry_a, false, 0, signed_counter(500));
	EXPECT_TRUE(witness.note_reply(registry_a, true, 500, signed_counter(120)));
	/* Kept: the registry moves its counter above it, and the next reply says so. */
	ASSERT_TRUE(witness.to_send(registry_a, &counter));
	EXPECT_EQ(counter.value, 500);
	EXPECT_TRUE(witness.note_reply(registry_a, true, 500, signed_counter(500)));
	EXPECT_FALSE(witness.note_reply(registry_a, true, 500, signed_counter(501)));
}

TEST(CounterWitness, AnotherIdentityStartsAfresh)
{
	CounterWitness witness{};
	SignedCounter counter{};

	witness.note_reply(registry_a, false, 0, signed_counter(900));
	EXPECT_FALSE(witness.to_send(registry_b, &counter));
	/* A registry moved to counts on its own: a low counter there is no revert. */
	EXPECT_FALSE(witness.note_reply(registry_b, false, 0, signed_counter(3)));
	ASSERT_TRUE(witness.to_send(registry_b, &counter));
	EXPECT_EQ(counter.value, 3);
	EXPECT_FALSE(witness.to_send(registry_a, &counter));
}

TEST(CounterWitness, TheHighestKeepsItsOwnProof)
{
	CounterWitness witness{};
	SignedCounter counter{};

	witness.note_reply(registry_a, false, 0, signed_counter(700));
	witness.note_reply(registry_a, true, 700, signed_counter(650));
	ASSERT_TRUE(witness.to_send(registry_a, &counter));
	EXPECT_EQ(counter.value, 700);
	EXPECT_STREQ(counter.proof, signed_counter(700).proof);
	witness.note_reply(registry_a, true, 700, signed_counter(701));
	ASSERT_TRUE(witness.to_send(registry_a, &counter));
	EXPECT_STREQ(counter.proof, signed_counter(701).proof);
}

TEST(SignedCounter, AProofIsSixtyFourLowerCaseHexDigits)
{
	EXPECT_TRUE(SignedCounter::proof_shaped(signed_counter(5).proof));
	EXPECT_TRUE(SignedCounter::proof_shaped(
		"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"));
	EXPECT_FALSE(SignedCounter::proof_shaped(""));
	EXPECT_FALSE(SignedCounter::proof_shaped(
		"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a0"));
	EXPECT_FALSE(SignedCounter::proof_shaped(
		"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a088"));
	EXPECT_FALSE(SignedCounter::proof_shaped(
		"9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08"));
	EXPECT_FALSE(SignedCounter::proof_shaped(
		"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a0g"));
}

TEST(CounterWitness, NothingSentIsNoRevert)
{
	CounterWitness witness{};

	witness.note_reply(registry_a, false, 0, signed_counter(900));
	EXPECT_FALSE(witness.note_reply(registry_a, false, 0, signed_counter(5)));
}

} // namespace
