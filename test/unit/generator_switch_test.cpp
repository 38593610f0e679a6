/*
 * generator_switch_test.cpp
 *	  Switching between the cached and default generators on one Generator.
 *
 * uidgen.generator is a GUC, so a backend may change strategy between any
 * two calls; docs/design.md (INV-3) says this is safe because both keep L
 * monotonic.  These tests interleave the two on one state and check that
 * IDs still strictly increase.
 */
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/generator.hpp"
#include "core/layout.hpp"

#include "support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

TEST(GeneratorSwitch, StrictAlternationStrictlyIncreases)
{
	Layout l(41, 13, 4, kEpoch, TimeUnit::Millisecond);
	ManualClock clock(kNow);
	Generator g(l, 12, Generator::no_floor, any_time());
	/* Borrowing stays within what the default generator is willing to wait for. */
	const GeneratorLimits lim = limits(200, 1000);
	int64_t prev = -1;

	for (int i = 0; i < 200000; i++)
	{
		if (i % 97 == 0)
			clock.advance(1);
		int64_t id = (i % 2 == 0) ? g.next_cached(clock, lim) : g.next_default(clock, lim);
		ASSERT_GT(id, prev) << "call " << i;
		ASSERT_EQ(l.decompose(id).worker, 12);
		prev = id;
	}
	/* The cached calls borrowed, and the default calls then waited for the clock. */
	EXPECT_FALSE(clock.sleeps().empty());
}

TEST(GeneratorSwitch, DefaultAfterCachedBorrowWaitsForTheClock)
{
	Layout l = Layout::default_layout();
	ManualClock clock(kNow);
	Generator g(l, 1, Generator::no_floor, any_time());
	const GeneratorLimits lim = limits(10000, 1000);
	int64_t L0 = kNow - kEpoch;

	/* Cached borrows three units ahead of a frozen clock. */
	int64_t prev = -1;
	for (int i = 0; i < 3 * 512 + 1; i++)
		prev = g.next_cached(clock, lim);
	ASSERT_EQ(l.decompose(prev), (UidFields{L0 + 3, 1, 0}));

	/* Default continues in L0 + 3 after waiting for it to start: never goes back to L0. */
	int64_t id = g.next_default(clock, lim);
	EXPECT_EQ(l.decompose(id), (UidFields{L0 + 3, 1, 1}));
	EXPECT_EQ(clock.sleeps(), std::vector<int64_t>{3});
	EXPECT_GT(id, prev);
}

TEST(GeneratorSwitch, RandomSwitchingWithAnErraticClock)
{
	Layout l(41, 13, 3, kEpoch, TimeUnit::Millisecond);
	ManualClock clock(kNow);
	Generator g(l, 99, Generator::no_floor, any_time());
	std::mt19937_64 rng(55);
	int64_t prev = -1;
	int cached = 0, deflt = 0, refused = 0;

	for (int i = 0; i < 500000; i++)
	{
		uint64_t r = rng() % 1024;

		if (r < 40)
			clock.advance(1);
		else if (r == 40)
			clock.advance(-static_cast<int64_t>(rng() % 300));
		else if (r == 41)
			clock.advance(-static_cast<int64_t>(rng() % 30000));
		else if (r == 42)
			clock.advance(static_cast<int64_t>(rng() % 30000));

		/* Borrow limits vary too, as the GUCs might between calls. */
		const GeneratorLimits lim = limits(static_cast<int64_t>(rng() % 3000), 1000);
		GeneratorKind kind = (rng() & 1) ? GeneratorKind::Cached : GeneratorKind::Default;
		int64_t before_delta = g.last_delta(), before_seq = g.sequence();
		int64_t id;

		try
		{
			id = g.next(kind, clock, lim);
		}
		catch (const Error &e)
		{
			/*
			 * Only the default generator may refuse, on a clock far behind L
			 * (stepped back, or left behind by what cached borrowed); the
			 * state must be untouched.
			 */
			ASSERT_EQ(kind, GeneratorKind::Default);
			ASSERT_EQ(e.kind(), ErrorKind::NotInPrerequisiteState) << e.what();
			ASSERT_EQ(g.last_delta(), before_delta);
			ASSERT_EQ(g.sequence(), before_seq);
			refused++;
			continue;
		}
		ASSERT_GT(id, prev) << "call " << i;
		ASSERT_EQ(l.decompose(id), (UidFields{g.last_delta(), 99, g.sequence()}));
		(kind == GeneratorKind::Cached ? cached : deflt)++;
		prev = id;
	}
	EXPECT_GT(cached, 100000);
	EXPECT_GT(deflt, 100000);
	EXPECT_GT(refused, 0);
}

TEST(GeneratorSwitch, DefaultRefusingAfterALongBorrowLeavesStateForCached)
{
	/*
	 * With max_borrow above max_backwards_wait, cached can run L further
	 * ahead than default is willing to wait for.  Whatever default then
	 * does (wait or refuse), it must not disturb the state, and cached
	 * must carry on strictly above.
	 */
	Layout l = Layout::default_layout();
	ManualClock clock(kNow);
	Generator g(l, 1, Generator::no_floor, any_time());
	const GeneratorLimits lim = limits(10000, 1000);
	int64_t prev = -1;

	for (int i = 0; i < 5000 * 512; i++)
		prev = g.next_cached(clock, lim);
	ASSERT_EQ(g.last_delta(), kNow - kEpoch + 4999);
	ASSERT_TRUE(clock.sleeps().empty());

	int64_t before_delta = g.last_delta(), before_seq = g.sequence();
	try
	{
		int64_t id = g.next_default(clock, lim);
		EXPECT_GT(id, prev);
		prev = id;
	}
	catch (const Error &e)
	{
		EXPECT_EQ(e.kind(), ErrorKind::NotInPrerequisiteState);
		EXPECT_EQ(g.last_delta(), before_delta);
		EXPECT_EQ(g.sequence(), before_seq);
	}
	int64_t id = g.next_cached(clock, lim);
	EXPECT_GT(id, prev);
}
