/*
 * generator_default_test.cpp
 *	  Unit tests of Generator::next_default, the wall-clock generator
 *	  (INV-3 of docs/design.md).
 *
 * The default generator never borrows: every ID it returns belongs to the
 * time unit the clock shows when it returns.  When a unit is used up it
 * sleeps until the next one starts, and a clock a little behind is waited
 * for.  A ManualClock records each sleep, so the tests can check that the
 * generator sleeps exactly as long as needed, not merely "at some point".
 */
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/generator.hpp"
#include "core/layout.hpp"

#include "support.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

std::optional<Error>
default_error(Generator &g, uidgen::Clock &clock, const GeneratorLimits &lim, ErrorKind kind)
{
	return expect_error([&] { return g.next_default(clock, lim); }, kind);
}

} // namespace

TEST(GeneratorDefault, SequenceThenSleepsUntilTheNextMillisecond)
{
	Layout l = Layout::default_layout();
	ManualClock clock(kNow);
	Generator g(l, 100, Generator::no_floor, any_time());
	int64_t L0 = kNow - kEpoch;

	for (int64_t s = 0; s <= l.max_sequence(); s++)
		ASSERT_EQ(l.decompose(g.next_default(clock, wait_limits(1000))), (UidFields{L0, 100, s}));
	EXPECT_TRUE(clock.sleeps().empty());

	EXPECT_EQ(l.decompose(g.next_default(clock, wait_limits(1000))), (UidFields{L0 + 1, 100, 0}));
	EXPECT_EQ(clock.sleeps(), std::vector<int64_t>{1});
	EXPECT_EQ(clock.now_ms(), kNow + 1);
	/* next() with Default is the same thing. */
	EXPECT_EQ(g.next(GeneratorKind::Default, clock, wait_limits(1000)), l.compose(L0 + 1, 100, 1));
}

TEST(GeneratorDefault, SequenceThenSleepsUntilTheNextSecond)
{
	Layout l(30, 20, 3, kEpoch, TimeUnit::Second);
	ManualClock clock(kNow + 250);
	Generator g(l, 1, Generator::no_floor, any_time());
	int64_t L0 = (kNow - kEpoch) / 1000;

	/* The clock creeps on within the second while the sequence runs. */
	for (int64_t s = 0; s <= 7; s++)
	{
		ASSERT_EQ(l.decompose(g.next_default(clock, wait_limits(1000))), (UidFields{L0, 1, s}));
		clock.advance(50);
	}
	ASSERT_EQ(clock.now_ms(), kNow + 650);

	/* Sleep exactly to the start of the next second, not a fixed amount and not beyond it. */
	EXPECT_EQ(l.decompose(g.next_default(clock, wait_limits(1000))), (UidFields{L0 + 1, 1, 0}));
	EXPECT_EQ(clock.sleeps(), std::vector<int64_t>{350});
	EXPECT_EQ(clock.now_ms(), kNow + 1000);
}

TEST(GeneratorDefault, ShortSleepIsRetried)
{
	/* Clock::sleep_ms may return early: the generator re-reads the clock and sleeps again. */
	struct EarlyClock : uidgen::Clock
	{
		int64_t now = kNow + 100;
		std::vector<int64_t> asked;
		int64_t now_ms() override { return now; }
		void sleep_ms(int64_t ms) override
		{
			asked.push_back(ms);
			now += (ms + 1) / 2;
		}
	} clock;
	Layout l(30, 20, 1, kEpoch, TimeUnit::Second);
	Generator g(l, 1, Generator::no_floor, any_time());
	int64_t L0 = (kNow - kEpoch) / 1000;

	g.next_default(clock, wait_limits(1000));
	g.next_default(clock, wait_limits(1000));
	EXPECT_EQ(l.decompose(g.next_default(clock, wait_limits(1000))), (UidFields{L0 + 1, 1, 0}));
	EXPECT_EQ(clock.asked, (std::vector<int64_t>{900, 450, 225, 112, 56, 28, 14, 7, 3, 1}));
	EXPECT_EQ(clock.now, kNow + 1000);
}

TEST(GeneratorDefault, ClockBehindWithinTheWaitIsWaitedFor)
{
	Layout l = Layout::default_layout();
	ManualClock clock(kNow);
	Generator g(l, 3, Generator::no_floor, any_time());
	int64_t L0 = kNow - kEpoch;

	g.next_default(clock, wait_limits(1000));
	clock.set(kNow - 300);
	/* Sleeps until L0 starts again, then continues its sequence. */
	EXPECT_EQ(l.decompose(g.next_default(clock, wait_limits(1000))), (UidFields{L0, 3, 1}));
	EXPECT_EQ(clock.sleeps(), std::vector<int64_t>{300});

	/* Exactly max_backwards_wait behind is still waited for. */
	clock.set(kNow - 1000);
	EXPECT_EQ(l.decompose(g.next_default(clock, wait_limits(1000))), (UidFields{L0, 3, 2}));
	EXPECT_EQ(clock.sleeps(), (std::vector<int64_t>{300, 1000}));
	EXPECT_EQ(clock.now_ms(), kNow);
}

TEST(GeneratorDefault, ClockBehindWithUsedUpUnitWaitsTwice)
{
	Layout l(41, 20, 1, kEpoch, TimeUnit::Millisecond);
	ManualClock clock(kNow);
	Generator g(l, 3, Generator::no_floor, any_time());
	int64_t L0 = kNow - kEpoch;

	g.next_default(clock, wait_limits(1000));
	g.next_default(clock, wait_limits(1000));
	clock.set(kNow - 40);
	/* Back to L0, which is used up, then on to L0 + 1. */
	EXPECT_EQ(l.decompose(g.next_default(clock, wait_limits(1000))), (UidFields{L0 + 1, 3, 0}));
	EXPECT_EQ(clock.sleeps(), (std::vector<int64_t>{40, 1}));
}

TEST(GeneratorDefault, ClockBehindInSeconds)
{
	Layout l(30, 20, 3, kEpoch, TimeUnit::Second);
	ManualClock clock(kNow + 500);
	Generator g(l, 3, Generator::no_floor, any_time());
	int64_t L0 = (kNow - kEpoch) / 1000;

	g.next_default(clock, wait_limits(1000));
	/* Back, but within the same second: not behind L at all. */
	clock.set(kNow + 10);
	EXPECT_EQ(l.decompose(g.next_default(clock, wait_limits(1000))), (UidFields{L0, 3, 1}));
	EXPECT_TRUE(clock.sleeps().empty());
	/* Back into the previous second, 700 ms before L0 starts: wait 700 ms. */
	clock.set(kNow - 700);
	EXPECT_EQ(l.decompose(g.next_default(clock, wait_limits(1000))), (UidFields{L0, 3, 2}));
	EXPECT_EQ(clock.sleeps(), std::vector<int64_t>{700});
}

TEST(GeneratorDefault, ClockBehindBeyondTheWaitThrows)
{
	Layout l = Layout::default_layout();
	ManualClock clock(kNow);
	Generator g(l, 3, Generator::no_floor, any_time());
	int64_t L0 = kNow - kEpoch;

	int64_t first = g.next_default(clock, wait_limits(1000));
	clock.set(kNow - 1001);
	for (int i = 0; i < 2; i++)
	{
		auto e = default_error(g, clock, wait_limits(1000), ErrorKind::NotInPrerequisiteState);
		ASSERT_TRUE(e);
		EXPECT_STREQ(e->what(), "clock moved backwards by 1001 milliseconds");
		EXPECT_TRUE(contains(e->detail(), "1000 ms")) << e->detail();
		EXPECT_TRUE(contains(e->hint(), "cached")) << e->hint();
		EXPECT_TRUE(contains(e->hint(), "uidgen.max_backwards_wait")) << e->hint();
		/* Refused without sleeping, state unchanged. */
		EXPECT_TRUE(clock.sleeps().empty());
		EXPECT_EQ(g.last_delta(), L0);
		EXPECT_EQ(g.sequence(), 0);
	}

	/* Once the clock is back, generation continues where it left off. */
	clock.set(kNow);
	int64_t next = g.next_default(clock, wait_limits(1000));
	EXPECT_EQ(next, first + 1);
}

TEST(GeneratorDefault, BackwardsMessageUnits)
{
	/* Plural and singular milliseconds. */
	{
		Layout l = Layout::default_layout();
		ManualClock clock(kNow);
		Generator g(l, 0, Generator::no_floor, any_time());
		g.next_default(clock, wait_limits(0));
		clock.set(kNow - 1);
		auto e = default_error(g, clock, wait_limits(0), ErrorKind::NotInPrerequisiteState);
		ASSERT_TRUE(e);
		EXPECT_STREQ(e->what(), "clock moved backwards by 1 millisecond");
		clock.set(kNow - 2);
		e = default_error(g, clock, wait_limits(0), ErrorKind::NotInPrerequisiteState);
		ASSERT_TRUE(e);
		EXPECT_STREQ(e->what(), "clock moved backwards by 2 milliseconds");
	}
	/* Seconds, counted in the layout's unit. */
	{
		Layout l(30, 20, 3, kEpoch, TimeUnit::Second);
		ManualClock clock(kNow + 500);
		Generator g(l, 0, Generator::no_floor, any_time());
		g.next_default(clock, wait_limits(1000));
		/* 1500 ms before the start of L0 is in second L0 - 2. */
		clock.set(kNow - 1500);
		auto e = default_error(g, clock, wait_limits(1000), ErrorKind::NotInPrerequisiteState);
		ASSERT_TRUE(e);
		EXPECT_STREQ(e->what(), "clock moved backwards by 2 seconds");
		EXPECT_TRUE(contains(e->hint(), "cached")) << e->hint();
		clock.set(kNow - 1);
		e = default_error(g, clock, wait_limits(0), ErrorKind::NotInPrerequisiteState);
		ASSERT_TRUE(e);
		EXPECT_STREQ(e->what(), "clock moved backwards by 1 second");
		clock.set(kNow - 3600000);
		e = default_error(g, clock, wait_limits(1000), ErrorKind::NotInPrerequisiteState);
		ASSERT_TRUE(e);
		EXPECT_STREQ(e->what(), "clock moved backwards by 3600 seconds");
		EXPECT_TRUE(clock.sleeps().empty());
	}
}

TEST(GeneratorDefault, ExhaustionWhenClockPassesMaxDelta)
{
	Layout l(3, 2, 2, 1000, TimeUnit::Millisecond);
	ManualClock clock(1006);
	Generator g(l, 1, Generator::no_floor, any_time());

	EXPECT_EQ(l.decompose(g.next_default(clock, wait_limits(1000))), (UidFields{6, 1, 0}));
	clock.set(1008);
	for (int i = 0; i < 3; i++)
	{
		auto e = default_error(g, clock, wait_limits(1000), ErrorKind::LimitExceeded);
		ASSERT_TRUE(e);
		EXPECT_TRUE(contains(e->what(), "exhausted")) << e->what();
		EXPECT_TRUE(contains(e->detail(), "1970-01-01 00:00:01.008 UTC")) << e->detail();
		EXPECT_EQ(g.last_delta(), 6);
		EXPECT_EQ(g.sequence(), 0);
	}
}

TEST(GeneratorDefault, ExhaustionWhenTheLastUnitIsUsedUp)
{
	Layout l(3, 2, 2, 1000, TimeUnit::Millisecond);
	ManualClock clock(1007);
	Generator g(l, 1, Generator::no_floor, any_time());
	int64_t prev = -1;

	for (int64_t s = 0; s <= 3; s++)
	{
		int64_t id = g.next_default(clock, wait_limits(1000));
		ASSERT_EQ(l.decompose(id), (UidFields{7, 1, s}));
		ASSERT_GT(id, prev);
		prev = id;
	}
	/* No waiting for a unit that can never be issued: fail at once, again and again. */
	for (int i = 0; i < 3; i++)
	{
		ASSERT_TRUE(default_error(g, clock, wait_limits(1000), ErrorKind::LimitExceeded));
		EXPECT_EQ(g.last_delta(), 7);
		EXPECT_EQ(g.sequence(), 3);
	}
	EXPECT_TRUE(clock.sleeps().empty());
	clock.set(1010);
	ASSERT_TRUE(default_error(g, clock, wait_limits(1000), ErrorKind::LimitExceeded));
	EXPECT_EQ(g.last_delta(), 7);
	EXPECT_EQ(g.sequence(), 3);
}

TEST(GeneratorDefault, FloorIsNeverIssued)
{
	Layout l = Layout::default_layout();
	const int64_t F = kNow - kEpoch;

	/* Clock at the floor: wait for F + 1. */
	{
		ManualClock clock(kNow);
		Generator g(l, 5, F, any_time());
		EXPECT_EQ(l.decompose(g.next_default(clock, wait_limits(1000))), (UidFields{F + 1, 5, 0}));
		EXPECT_EQ(clock.sleeps(), std::vector<int64_t>{1});
	}
	/* Clock a little below the floor: wait until F has passed. */
	{
		ManualClock clock(kNow - 300);
		Generator g(l, 5, F, any_time());
		EXPECT_EQ(l.decompose(g.next_default(clock, wait_limits(1000))), (UidFields{F + 1, 5, 0}));
		EXPECT_EQ(clock.slept_ms(), 301);
		EXPECT_EQ(clock.now_ms(), kNow + 1);
	}
	/* Clock past the floor. */
	{
		ManualClock clock(kNow + 2);
		Generator g(l, 5, F, any_time());
		EXPECT_EQ(l.decompose(g.next_default(clock, wait_limits(1000))), (UidFields{F + 2, 5, 0}));
		EXPECT_TRUE(clock.sleeps().empty());
	}
	/* Clock far below the floor: an error, and nothing at or below F is ever issued. */
	{
		ManualClock clock(kNow - 5000);
		Generator g(l, 5, F, any_time());
		ASSERT_TRUE(default_error(g, clock, wait_limits(1000), ErrorKind::NotInPrerequisiteState));
		EXPECT_EQ(g.last_delta(), F);
	}
}

TEST(GeneratorDefault, StrictlyIncreasesOverALongRun)
{
	/*
	 * 1,000,000 calls with a clock that creeps, jumps, and steps back both
	 * within and beyond max_backwards_wait.  Every returned ID is greater
	 * than the last, and belongs to the unit the clock shows on return:
	 * the default generator never borrows.
	 */
	Layout l(41, 13, 5, kEpoch, TimeUnit::Millisecond);
	ManualClock clock(kNow);
	Generator g(l, 17, Generator::no_floor, any_time());
	std::mt19937_64 rng(1000000);
	int64_t prev = -1;
	int refused = 0, waited_back = 0;

	for (int i = 0; i < 1000000; i++)
	{
		uint64_t r = rng() % 4096;

		if (r < 64)
			clock.advance(1);
		else if (r < 66)
			clock.advance(static_cast<int64_t>(rng() % 5000));
		else if (r == 66)
		{
			clock.advance(-static_cast<int64_t>(1 + rng() % 900));
			waited_back++;
		}
		else if (r == 67)
			clock.advance(-static_cast<int64_t>(1200 + rng() % 100000));

		int64_t before_delta = g.last_delta();
		int64_t before_seq = g.sequence();
		int64_t id;
		try
		{
			id = g.next_default(clock, wait_limits(1000));
		}
		catch (const Error &e)
		{
			ASSERT_EQ(e.kind(), ErrorKind::NotInPrerequisiteState) << e.what();
			ASSERT_EQ(g.last_delta(), before_delta);
			ASSERT_EQ(g.sequence(), before_seq);
			refused++;
			/* Let the clock recover, as an operator would. */
			clock.set(*l.start_of(g.last_delta()));
			continue;
		}
		ASSERT_GT(id, prev) << "call " << i;
		UidFields f = l.decompose(id);
		ASSERT_EQ(f.delta, l.delta_at(clock.now_ms())) << "call " << i;
		ASSERT_EQ(f.worker, 17);
		prev = id;
	}
	EXPECT_GT(refused, 50);
	EXPECT_GT(waited_back, 50);
	EXPECT_GT(clock.sleeps().size(), 1000u);
}
