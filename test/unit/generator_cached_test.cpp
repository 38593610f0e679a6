/*
 * generator_cached_test.cpp
 *	  Unit tests of Generator::next_cached, the borrowing generator
 *	  (INV-3 of docs/design.md).
 *
 * Time is always a ManualClock: it only moves when a test moves it or when
 * the generator sleeps on it, and it records every sleep.  So "borrows
 * without sleeping" is checked as "no sleep was recorded", and "never more
 * than max_borrow ahead" is checked against the clock after each call.
 */
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/generator.hpp"
#include "core/layout.hpp"

#include "support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

TEST(GeneratorCached, FirstIdIsTheWallClock)
{
	Layout l = Layout::default_layout();
	ManualClock clock(kNow);
	Generator g(l, 42, Generator::no_floor, any_time());

	int64_t uid = g.next_cached(clock, limits(10000));

	EXPECT_EQ(l.decompose(uid), (UidFields{kNow - kEpoch, 42, 0}));
	EXPECT_EQ(g.last_delta(), kNow - kEpoch);
	EXPECT_EQ(g.sequence(), 0);
	EXPECT_EQ(g.worker_id(), 42);
	EXPECT_EQ(g.layout(), l);
	EXPECT_TRUE(clock.sleeps().empty());
	/* next() with Cached is the same thing. */
	EXPECT_EQ(g.next(GeneratorKind::Cached, clock, limits(10000)), l.compose(kNow - kEpoch, 42, 1));
}

TEST(GeneratorCached, SequenceRunsThenBorrowsNextUnitWithoutSleeping)
{
	Layout l = Layout::default_layout();
	ManualClock clock(kNow);
	Generator g(l, 7, Generator::no_floor, any_time());
	int64_t L = kNow - kEpoch;

	for (int64_t s = 0; s <= l.max_sequence(); s++)
		ASSERT_EQ(l.decompose(g.next_cached(clock, limits(10000))), (UidFields{L, 7, s}));

	/* Unit L is used up, the clock has not moved: borrow L + 1. */
	EXPECT_EQ(l.decompose(g.next_cached(clock, limits(10000))), (UidFields{L + 1, 7, 0}));
	EXPECT_EQ(l.decompose(g.next_cached(clock, limits(10000))), (UidFields{L + 1, 7, 1}));
	EXPECT_TRUE(clock.sleeps().empty());
	EXPECT_EQ(clock.now_ms(), kNow);
}

TEST(GeneratorCached, ReturnsToWallClockOnceClockPassesL)
{
	Layout l = Layout::default_layout();
	ManualClock clock(kNow);
	Generator g(l, 7, Generator::no_floor, any_time());
	int64_t L0 = kNow - kEpoch;

	/* Borrow three units ahead. */
	for (int i = 0; i < 3 * 512 + 10; i++)
		g.next_cached(clock, limits(10000));
	ASSERT_EQ(g.last_delta(), L0 + 3);

	/* The clock reaching L (not passing it) continues the borrowed unit... */
	clock.set(kNow + 3);
	EXPECT_EQ(l.decompose(g.next_cached(clock, limits(10000))), (UidFields{L0 + 3, 7, 10}));
	/* ... and passing it resynchronises: delta == now, sequence 0. */
	clock.set(kNow + 4);
	EXPECT_EQ(l.decompose(g.next_cached(clock, limits(10000))), (UidFields{L0 + 4, 7, 0}));
	clock.set(kNow + 100);
	EXPECT_EQ(l.decompose(g.next_cached(clock, limits(10000))), (UidFields{L0 + 100, 7, 0}));
	EXPECT_TRUE(clock.sleeps().empty());
}

TEST(GeneratorCached, BorrowIsBoundedByMaxBorrow)
{
	Layout l = Layout::default_layout();
	ManualClock clock(kNow);
	Generator g(l, 1, Generator::no_floor, any_time());
	const int64_t max_borrow = 25;
	int64_t L0 = kNow - kEpoch;
	int64_t per_unit = l.max_sequence() + 1;

	/* With the clock frozen, unit L0 and max_borrow more units are issued without sleeping. */
	for (int64_t i = 0; i < (max_borrow + 1) * per_unit; i++)
		g.next_cached(clock, limits(max_borrow));
	EXPECT_EQ(g.last_delta(), L0 + max_borrow);
	EXPECT_EQ(g.sequence(), l.max_sequence());
	EXPECT_TRUE(clock.sleeps().empty());

	/* The next unit would be max_borrow + 1 ahead: the generator sleeps 1 ms first. */
	int64_t uid = g.next_cached(clock, limits(max_borrow));
	EXPECT_EQ(l.decompose(uid), (UidFields{L0 + max_borrow + 1, 1, 0}));
	EXPECT_EQ(clock.sleeps(), std::vector<int64_t>{1});
	EXPECT_EQ(clock.now_ms(), kNow + 1);

	/* From then on, each unit costs one millisecond of sleep; the lead never exceeds max_borrow. */
	for (int i = 0; i < 100 * per_unit; i++)
	{
		int64_t id = g.next_cached(clock, limits(max_borrow));
		ASSERT_LE(*l.start_of(l.decompose(id).delta), clock.now_ms() + max_borrow);
	}
	EXPECT_EQ(clock.slept_ms(), 101);
}

TEST(GeneratorCached, BorrowBoundInSecondsSleepsToTheMillisecond)
{
	/* 1000 ms of borrow with a second unit: one second ahead, no more. */
	Layout l(30, 20, 3, kEpoch, TimeUnit::Second);
	ManualClock clock(kNow + 300);
	Generator g(l, 1, Generator::no_floor, any_time());
	int64_t L0 = (kNow - kEpoch) / 1000;

	for (int i = 0; i < 16; i++)
		g.next_cached(clock, limits(1000));
	EXPECT_EQ(g.last_delta(), L0 + 1);
	EXPECT_TRUE(clock.sleeps().empty());

	/* L0 + 2 starts at kNow + 2000, which is 1700 ms ahead: sleep until kNow + 1000. */
	EXPECT_EQ(l.decompose(g.next_cached(clock, limits(1000))), (UidFields{L0 + 2, 1, 0}));
	EXPECT_EQ(clock.sleeps(), std::vector<int64_t>{700});
	EXPECT_EQ(*l.start_of(L0 + 2), clock.now_ms() + 1000);
}

TEST(GeneratorCached, ZeroBorrowBehavesLikeWaiting)
{
	Layout l(30, 20, 3, kEpoch, TimeUnit::Second);
	ManualClock clock(kNow + 250);
	Generator g(l, 3, Generator::no_floor, any_time());
	int64_t L0 = (kNow - kEpoch) / 1000;

	for (int64_t s = 0; s <= 7; s++)
		ASSERT_EQ(l.decompose(g.next_cached(clock, limits(0))), (UidFields{L0, 3, s}));
	EXPECT_TRUE(clock.sleeps().empty());

	/* Like the default generator: sleep until exactly the next unit starts. */
	EXPECT_EQ(l.decompose(g.next_cached(clock, limits(0))), (UidFields{L0 + 1, 3, 0}));
	EXPECT_EQ(clock.sleeps(), std::vector<int64_t>{750});
	EXPECT_EQ(clock.now_ms(), kNow + 1000);
	/* Never ahead of the clock. */
	for (int i = 0; i < 1000; i++)
	{
		int64_t id = g.next_cached(clock, limits(0));
		ASSERT_LE(*l.start_of(l.decompose(id).delta), clock.now_ms());
	}
}

TEST(GeneratorCached, ClockBackwardsLessThanBorrowNeitherThrowsNorSleeps)
{
	Layout l = Layout::default_layout();
	ManualClock clock(kNow);
	Generator g(l, 9, Generator::no_floor, any_time());
	int64_t L0 = kNow - kEpoch;

	int64_t prev = g.next_cached(clock, limits(10000));
	clock.set(kNow - 5000);
	/* Same unit continues, then borrows on: 2000 IDs is four units. */
	for (int i = 0; i < 2000; i++)
	{
		int64_t id = g.next_cached(clock, limits(10000));
		ASSERT_GT(id, prev);
		prev = id;
	}
	EXPECT_EQ(l.decompose(prev).delta, L0 + 3);
	EXPECT_TRUE(clock.sleeps().empty());
}

TEST(GeneratorCached, ClockBackwardsMoreThanBorrowSleepsInsteadOfThrowing)
{
	Layout l = Layout::default_layout();
	ManualClock clock(kNow);
	Generator g(l, 9, Generator::no_floor, any_time());
	int64_t L0 = kNow - kEpoch;

	int64_t prev = g.next_cached(clock, limits(10000));
	/* One hour back. */
	clock.set(kNow - 3600000);
	for (int64_t s = 1; s <= l.max_sequence(); s++)
	{
		int64_t id = g.next_cached(clock, limits(10000));
		ASSERT_EQ(l.decompose(id), (UidFields{L0, 9, s}));
		ASSERT_GT(id, prev);
		prev = id;
	}
	EXPECT_TRUE(clock.sleeps().empty());

	/* L0 + 1 is an hour ahead: wait until it is within max_borrow. */
	int64_t id = g.next_cached(clock, limits(10000));
	EXPECT_GT(id, prev);
	EXPECT_EQ(l.decompose(id), (UidFields{L0 + 1, 9, 0}));
	EXPECT_EQ(clock.sleeps(), std::vector<int64_t>{3600000 + 1 - 10000});
}

TEST(GeneratorCached, StrictlyIncreasesOverMillionsOfCallsWithAnErraticClock)
{
	/*
	 * 3,000,000 calls.  The clock mostly stands still or creeps forward
	 * (slower than 512 IDs per millisecond need, so the generator borrows
	 * and hits the bound), sometimes jumps, sometimes steps back a little
	 * or a lot.  Whatever it does, IDs strictly increase, decode into range,
	 * and a new unit is never taken more than max_borrow ahead of the
	 * latest time the clock has shown.  (After a step back the unit in use
	 * is ahead of the clock by the step; nothing can undo that.)
	 */
	Layout l = Layout::default_layout();
	ManualClock clock(kNow);
	Generator g(l, 8191, Generator::no_floor, any_time());
	const int64_t max_borrow = 50;
	std::mt19937_64 rng(3000000);
	int64_t prev = -1;
	int64_t high_water = clock.now_ms();
	int64_t borrowed = 0, backwards_steps = 0;

	for (int i = 0; i < 3000000; i++)
	{
		uint64_t r = rng() % 65536;

		if (r < 32)
			clock.advance(1);
		else if (r < 40)
		{
			clock.advance(-static_cast<int64_t>(1 + rng() % 40)); /* jitter back */
			backwards_steps++;
		}
		else if (r == 40)
		{
			clock.advance(-static_cast<int64_t>(1 + rng() % 200000)); /* far back */
			backwards_steps++;
		}
		else if (r == 41)
			clock.advance(static_cast<int64_t>(rng() % 100000)); /* jump ahead */

		int64_t id = g.next_cached(clock, limits(max_borrow));
		ASSERT_GT(id, prev) << "call " << i;
		high_water = std::max(high_water, clock.now_ms());

		UidFields f = l.decompose(id);
		ASSERT_EQ(f.worker, 8191);
		ASSERT_LE(f.sequence, l.max_sequence());
		ASSERT_EQ(f.delta, g.last_delta());
		ASSERT_EQ(f.sequence, g.sequence());
		ASSERT_LE(*l.start_of(f.delta), high_water + max_borrow) << "call " << i;
		if (f.delta > l.delta_at(clock.now_ms()))
			borrowed++;
		prev = id;
	}
	/* The run must actually have exercised borrowing, the bound and the clock going back. */
	EXPECT_GT(borrowed, 1000000);
	EXPECT_GT(clock.sleeps().size(), 1000u);
	EXPECT_GT(backwards_steps, 100);
}

TEST(GeneratorCached, FloorIsNeverIssued)
{
	Layout l = Layout::default_layout();
	const int64_t F = kNow - kEpoch;

	/* Clock exactly at the floor: the first ID is F + 1, borrowed. */
	{
		ManualClock clock(kNow);
		Generator g(l, 5, F, any_time());
		EXPECT_EQ(g.last_delta(), F);
		EXPECT_EQ(l.decompose(g.next_cached(clock, limits(10000))), (UidFields{F + 1, 5, 0}));
		EXPECT_TRUE(clock.sleeps().empty());
	}
	/* Clock below the floor, within max_borrow: still F + 1, no sleep. */
	{
		ManualClock clock(kNow - 3000);
		Generator g(l, 5, F, any_time());
		int64_t prev = -1;
		for (int i = 0; i < 5000; i++)
		{
			int64_t id = g.next_cached(clock, limits(10000));
			ASSERT_GT(l.decompose(id).delta, F);
			ASSERT_GT(id, prev);
			prev = id;
		}
		EXPECT_EQ(l.decompose(prev).delta, F + 10);
		EXPECT_TRUE(clock.sleeps().empty());
	}
	/* Clock far below the floor: sleep until F + 1 is within max_borrow. */
	{
		ManualClock clock(kNow - 60000);
		Generator g(l, 5, F, any_time());
		EXPECT_EQ(l.decompose(g.next_cached(clock, limits(10000))), (UidFields{F + 1, 5, 0}));
		EXPECT_EQ(clock.sleeps(), std::vector<int64_t>{60000 + 1 - 10000});
	}
	/* Clock past the floor: the floor does not matter. */
	{
		ManualClock clock(kNow + 77);
		Generator g(l, 5, F, any_time());
		EXPECT_EQ(l.decompose(g.next_cached(clock, limits(10000))), (UidFields{F + 77, 5, 0}));
	}
}

TEST(GeneratorCached, ConstructorRejectsOutOfRangeWorkerAndFloor)
{
	Layout l = Layout::default_layout();

	for (int64_t w : {INT64_C(-1), INT64_C(8192), INT64_MIN, INT64_MAX})
	{
		try
		{
			Generator g(l, w, Generator::no_floor, any_time());
			ADD_FAILURE() << "worker " << w << " was accepted";
		}
		catch (const Error &e)
		{
			EXPECT_EQ(e.kind(), ErrorKind::OutOfRange);
			EXPECT_NE(std::string(e.what()).find(std::to_string(w)), std::string::npos) << e.what();
		}
	}
	EXPECT_NO_THROW(Generator(l, 0, Generator::no_floor, any_time()));
	EXPECT_NO_THROW(Generator(l, 8191, Generator::no_floor, any_time()));

	EXPECT_THROW(Generator(l, 0, -2, any_time()), Error);
	EXPECT_THROW(Generator(l, 0, l.max_delta() + 1, any_time()), Error);
	EXPECT_NO_THROW(Generator(l, 0, l.max_delta(), any_time()));
}

TEST(GeneratorCached, ExhaustionWhenClockPassesMaxDelta)
{
	/* 3 time bits: deltas 0..7, 4 IDs each. */
	Layout l(3, 2, 2, 1000, TimeUnit::Millisecond);
	ManualClock clock(1006);
	Generator g(l, 2, Generator::no_floor, any_time());

	EXPECT_EQ(l.decompose(g.next_cached(clock, limits(10000))), (UidFields{6, 2, 0}));
	clock.set(1008); /* delta 8 > max_delta 7 */
	for (int i = 0; i < 3; i++)
	{
		auto e = expect_error([&] { return g.next_cached(clock, limits(10000)); }, ErrorKind::LimitExceeded);
		ASSERT_TRUE(e);
		EXPECT_NE(std::string(e->what()).find("exhausted"), std::string::npos) << e->what();
		/* The detail gives the date it ran out: epoch + 8 ms. */
		EXPECT_NE(e->detail().find("1970-01-01 00:00:01.008 UTC"), std::string::npos) << e->detail();
		EXPECT_FALSE(e->hint().empty());
		EXPECT_EQ(g.last_delta(), 6);
		EXPECT_EQ(g.sequence(), 0);
	}
}

TEST(GeneratorCached, ExhaustionWhenBorrowingWouldPassMaxDelta)
{
	Layout l(3, 2, 2, 1000, TimeUnit::Millisecond);
	ManualClock clock(1006);
	Generator g(l, 2, Generator::no_floor, any_time());
	int64_t prev = -1;

	/* Units 6 and 7 (borrowed), four IDs each. */
	for (int i = 0; i < 8; i++)
	{
		int64_t id = g.next_cached(clock, limits(10000));
		ASSERT_GT(id, prev);
		prev = id;
	}
	ASSERT_EQ(l.decompose(prev), (UidFields{7, 2, 3}));
	EXPECT_EQ(prev, l.max_uid_at(1007) - l.compose(0, 1, 0)); /* worker 2 of 0..3 */

	/* Borrowing unit 8 would pass the end: error, again and again, state unchanged. */
	for (int i = 0; i < 3; i++)
	{
		ASSERT_TRUE(expect_error([&] { return g.next_cached(clock, limits(10000)); }, ErrorKind::LimitExceeded));
		EXPECT_EQ(g.last_delta(), 7);
		EXPECT_EQ(g.sequence(), 3);
	}
	/* With the clock at the last unit, behind it, or past the end: still an error, never a wrapped ID. */
	for (int64_t t : {INT64_C(1007), INT64_C(1003), INT64_C(1008), INT64_C(5000)})
	{
		clock.set(t);
		ASSERT_TRUE(expect_error([&] { return g.next_cached(clock, limits(10000)); }, ErrorKind::LimitExceeded));
		EXPECT_EQ(g.last_delta(), 7);
		EXPECT_EQ(g.sequence(), 3);
	}
	EXPECT_TRUE(clock.sleeps().empty());
}

TEST(GeneratorCached, FloorAtTheLastUnitIsExhausted)
{
	Layout l(3, 2, 2, 1000, TimeUnit::Millisecond);
	ManualClock clock(1002);
	Generator g(l, 0, l.max_delta(), any_time());

	ASSERT_TRUE(expect_error([&] { return g.next_cached(clock, limits(10000)); }, ErrorKind::LimitExceeded));
	EXPECT_EQ(g.last_delta(), 7);
}

TEST(GeneratorCached, LayoutOutlastingInt64MillisecondsIsRefused)
{
	/*
	 * 61 time bits of seconds: the last units start after the end of int64
	 * milliseconds, where Layout::start_of() returns nullopt.  A generator
	 * at a floor near the end could never reach its next unit, and used to
	 * dereference the empty optional (a bogus sleep in cached, an endless
	 * spin without sleeping in default).  Such a layout must be refused
	 * up front, or at the latest the call must fail cleanly.  The clock
	 * refuses to sleep and stops a generator that keeps reading it, so that
	 * a regression shows up as a failure instead of a hang.
	 */
	struct GuardClock : uidgen::Clock
	{
		int reads = 0;
		int64_t now_ms() override
		{
			if (++reads > 10000)
				throw std::runtime_error("the generator read the clock 10000 times without returning");
			return kNow;
		}
		void sleep_ms(int64_t ms) override { throw std::runtime_error("asked to sleep " + std::to_string(ms) + " ms"); }
	};
	Layout l(61, 1, 1, 0, TimeUnit::Second);
	int64_t floor = l.max_delta() - 1;
	ASSERT_EQ(l.start_of(floor + 1), std::nullopt);

	for (int64_t f : {Generator::no_floor, floor})
	{
		try
		{
			Generator g(l, 0, f, any_time());
			ADD_FAILURE() << "layout " << l.describe() << " was accepted";
		}
		catch (const Error &e)
		{
			EXPECT_EQ(e.kind(), ErrorKind::InvalidParameter) << e.what();
		}
	}

	/* Even if it were accepted, the calls must fail cleanly, not spin or sleep forever. */
	for (GeneratorKind kind : {GeneratorKind::Cached, GeneratorKind::Default})
	{
		SCOPED_TRACE(kind == GeneratorKind::Cached ? "cached" : "default");
		GuardClock clock;
		std::optional<Generator> g;

		try
		{
			g.emplace(l, 0, floor, any_time());
		}
		catch (const Error &)
		{
			continue;
		}
		try
		{
			int64_t uid = g->next(kind, clock, limits(10000));
			ADD_FAILURE() << "returned uid " << uid << ", delta " << l.decompose(uid).delta;
		}
		catch (const Error &e)
		{
			EXPECT_NE(e.kind(), ErrorKind::InvalidParameter) << e.what();
		}
		catch (const std::exception &e)
		{
			ADD_FAILURE() << "unexpected exception: " << e.what();
		}
		EXPECT_EQ(g->last_delta(), floor);
	}
}

TEST(GeneratorCached, WidestSecondLayoutRunsToItsEnd)
{
	/*
	 * 53 bits of seconds is the widest time field whose every unit starts
	 * within int64 milliseconds.  From a floor just before the end, both
	 * generators reach the last unit and then report exhaustion.
	 */
	Layout l(53, 5, 5, kEpoch, TimeUnit::Second);
	const int64_t F = l.max_delta() - 1;
	ASSERT_TRUE(l.exhausted_at());

	{
		ManualClock clock(kNow);
		Generator g(l, 1, F, any_time());
		EXPECT_EQ(l.decompose(g.next_cached(clock, limits(10000))), (UidFields{F + 1, 1, 0}));
		/* It slept until the last unit was within max_borrow of the clock. */
		EXPECT_EQ(clock.now_ms(), *l.start_of(F + 1) - 10000);
		for (int i = 0; i < 31; i++)
			g.next_cached(clock, limits(10000));
		ASSERT_TRUE(expect_error([&] { return g.next_cached(clock, limits(10000)); }, ErrorKind::LimitExceeded));
		EXPECT_EQ(g.last_delta(), l.max_delta());
		EXPECT_EQ(g.sequence(), 31);
	}
	{
		ManualClock clock(*l.start_of(F) + 500);
		Generator g(l, 1, F, any_time());
		EXPECT_EQ(l.decompose(g.next_default(clock, limits(10000, 1000))), (UidFields{F + 1, 1, 0}));
		EXPECT_EQ(clock.sleeps(), std::vector<int64_t>{500});
		clock.set(*l.exhausted_at());
		ASSERT_TRUE(expect_error([&] { return g.next_default(clock, limits(10000, 1000)); },
								 ErrorKind::LimitExceeded));
	}
}
