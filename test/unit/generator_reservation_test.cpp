/*
 * generator_reservation_test.cpp
 *	  A generator issues a time unit only once its reservation covers it
 *	  (INV-9 of docs/design.md): the rule that keeps a worker
 *	  leaked by a crash from being reused below what it issued, whatever
 *	  the clock did.
 */
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/generator.hpp"
#include "core/layout.hpp"
#include "core/reservation.hpp"

#include "support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <stdexcept>

using uidgen::ManualReservation;
using uidgen::TimeReservation;

namespace {

/* Covers units up to a limit the test moves, and fails beyond it, like a database that cannot write its reservation. */
class BoundedReservation : public TimeReservation
{
public:
	explicit BoundedReservation(int64_t limit) : limit_(limit) {}

	int64_t extend(int64_t delta) override
	{
		calls_++;
		if (delta > limit_)
			throw std::runtime_error("cannot reserve");
		return limit_;
	}

	void set_limit(int64_t limit) { limit_ = limit; }
	int calls() const { return calls_; }

private:
	int64_t limit_;
	int calls_ = 0;
};

} // namespace

TEST(GeneratorReservation, FirstIdExtendsOnceThenTheWindowServes)
{
	Layout l = Layout::default_layout();
	ManualClock clock(kNow);
	ManualReservation reservation(1000);
	Generator g(l, 1, Generator::no_floor, reservation);

	int64_t first = g.next_cached(clock, limits(10000));
	ASSERT_EQ(reservation.requests().size(), 1u);
	EXPECT_EQ(reservation.requests()[0], l.decompose(first).delta);
	EXPECT_EQ(g.reserved_delta(), l.decompose(first).delta + 1000);

	/* The next 1000 milliseconds stay inside the window: no further extension. */
	for (int i = 0; i < 1000; i++)
	{
		clock.advance(1);
		g.next_cached(clock, limits(10000));
	}
	EXPECT_EQ(reservation.requests().size(), 1u);
	clock.advance(1);
	g.next_cached(clock, limits(10000));
	EXPECT_EQ(reservation.requests().size(), 2u);
}

TEST(GeneratorReservation, AReusedWorkerReservesAboveItsFloor)
{
	Layout l = Layout::default_layout();
	ManualClock clock(kNow);
	int64_t floor = l.delta_at(kNow) + 5000;	/* released "in the future" */
	ManualReservation reservation;
	Generator g(l, 3, floor, reservation);

	int64_t uid = g.next_cached(clock, limits(10000));
	EXPECT_GT(l.decompose(uid).delta, floor);
	ASSERT_EQ(reservation.requests().size(), 1u);
	EXPECT_EQ(reservation.requests()[0], floor + 1);
}

TEST(GeneratorReservation, NothingIsIssuedBeyondAFailedExtension)
{
	for (GeneratorKind kind : {GeneratorKind::Cached, GeneratorKind::Default})
	{
		Layout l(41, 13, 2, Layout::default_epoch_ms, TimeUnit::Millisecond);
		ManualClock clock(kNow);
		int64_t now = l.delta_at(kNow);
		BoundedReservation reservation(now + 2);
		Generator g(l, 7, Generator::no_floor, reservation);
		int64_t last = 0;
		int issued = 0;

		/* 4 IDs a unit: units now .. now+2 give 12 IDs, then the reservation refuses. */
		for (;;)
		{
			int64_t before_delta = g.last_delta();
			int64_t before_sequence = g.sequence();
			try
			{
				last = g.next(kind, clock, limits(10000));
				issued++;
				EXPECT_LE(l.decompose(last).delta, now + 2);
			}
			catch (const std::runtime_error &)
			{
				EXPECT_EQ(g.last_delta(), before_delta) << "state changed on a failed extension";
				EXPECT_EQ(g.sequence(), before_sequence);
				break;
			}
			if (kind == GeneratorKind::Default && g.sequence() == l.max_sequence())
				clock.advance(1);
		}
		EXPECT_EQ(issued, 12);

		/* Once it can be extended again, generation goes on above the last ID. */
		reservation.set_limit(now + 100);
		clock.set(kNow + 50);
		int64_t next = g.next(kind, clock, limits(10000));
		EXPECT_GT(next, last);
	}
}

TEST(GeneratorReservation, EveryIdIsCoveredWhateverTheClockDoes)
{
	Layout l(41, 13, 3, Layout::default_epoch_ms, TimeUnit::Millisecond);
	ManualClock clock(kNow);
	ManualReservation reservation(20);
	Generator g(l, 11, Generator::no_floor, reservation);
	std::mt19937_64 random(13);
	int64_t prev = -1;

	for (int i = 0; i < 200000; i++)
	{
		switch (random() % 1000)
		{
			case 0:
				clock.advance(-static_cast<int64_t>(random() % 60000));	/* stepped back */
				break;
			case 1:
				clock.advance(static_cast<int64_t>(random() % 3600000));	/* jumped forward */
				break;
			default:
				clock.advance(static_cast<int64_t>(random() % 2));
		}
		GeneratorKind kind = random() % 2 ? GeneratorKind::Cached : GeneratorKind::Default;
		int64_t uid;
		try
		{
			uid = g.next(kind, clock, limits(200, 100000000));
		}
		catch (const uidgen::Error &)
		{
			continue;	/* default: too far behind */
		}
		ASSERT_GT(uid, prev);
		ASSERT_FALSE(reservation.requests().empty());
		ASSERT_LE(l.decompose(uid).delta, reservation.requests().back() + 20)
			<< "issued a unit its reservation did not cover";
		ASSERT_LE(l.decompose(uid).delta, g.reserved_delta());
		prev = uid;
	}
	/* Requests only go up. */
	EXPECT_TRUE(std::is_sorted(reservation.requests().begin(), reservation.requests().end()));
}
