/*
 * generator_cancel_test.cpp
 *	  A sleep that throws: what happens to the generator when the user
 *	  cancels the query while uid_next() waits.
 *
 * In the server, Clock::sleep_ms is interruptible: a query cancel or
 * backend termination arrives as an exception thrown out of sleep_ms (the
 * error guard of src/pg turns the longjmp into one).  The generator
 * promises that whatever sleep_ms throws passes through and leaves the
 * state as it was (generator.hpp), so that the next call neither repeats
 * an ID nor skips the half-finished one's bookkeeping.
 */
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/generator.hpp"
#include "core/layout.hpp"

#include "support.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace {

/* Not a uidgen::Error: the generator must not swallow or translate it. */
struct QueryCanceled
{
	int64_t asked_ms;
};

/*
 * A manual clock whose sleep is cancelled.  It lets the first
 * allowed_sleeps sleeps advance the clock by half of what was asked (an
 * early wake-up), then throws.
 */
class CancellingClock : public uidgen::Clock
{
public:
	explicit CancellingClock(int64_t now, int allowed_sleeps = 0) : now_(now), allowed_(allowed_sleeps) {}

	int64_t now_ms() override { return now_; }
	void sleep_ms(int64_t ms) override
	{
		asked_.push_back(ms);
		if (allowed_ <= 0)
			throw QueryCanceled{ms};
		allowed_--;
		now_ += (ms + 1) / 2;
	}

	void set(int64_t ms) { now_ = ms; }
	void allow(int sleeps) { allowed_ = sleeps; }
	const std::vector<int64_t> &asked() const { return asked_; }

private:
	int64_t now_;
	int allowed_;
	std::vector<int64_t> asked_;
};

/* Calls next() expecting the cancel; checks it carries the sleep asked for. */
void
expect_cancel(Generator &g, GeneratorKind kind, CancellingClock &clock, const GeneratorLimits &lim,
			  int64_t expected_sleep)
{
	try
	{
		int64_t uid = g.next(kind, clock, lim);
		ADD_FAILURE() << "expected the cancel to propagate, got uid " << uid;
	}
	catch (const QueryCanceled &c)
	{
		EXPECT_EQ(c.asked_ms, expected_sleep);
	}
}

} // namespace

TEST(GeneratorCancel, CachedAtTheBorrowBound)
{
	Layout l = Layout::default_layout();
	CancellingClock clock(kNow);
	Generator g(l, 4, Generator::no_floor, any_time());
	int64_t L0 = kNow - kEpoch;
	int64_t prev = -1;

	/* Units L0 .. L0 + 5 without sleeping, with max_borrow 5 ms. */
	for (int i = 0; i < 6 * 512; i++)
		prev = g.next_cached(clock, limits(5));
	ASSERT_EQ(l.decompose(prev), (UidFields{L0 + 5, 4, 511}));

	for (int i = 0; i < 3; i++)
	{
		expect_cancel(g, GeneratorKind::Cached, clock, limits(5), 1);
		EXPECT_EQ(g.last_delta(), L0 + 5);
		EXPECT_EQ(g.sequence(), 511);
	}

	/* After the cancel, the next call resumes exactly where the cancelled one would have. */
	clock.set(kNow + 1);
	int64_t id = g.next_cached(clock, limits(5));
	EXPECT_EQ(l.decompose(id), (UidFields{L0 + 6, 4, 0}));
	EXPECT_GT(id, prev);
}

TEST(GeneratorCancel, CachedCancelledAfterAnEarlyWakeUp)
{
	/* The first sleep returns early and the retry is cancelled: still no change. */
	Layout l = Layout::default_layout();
	CancellingClock clock(kNow, 1);
	Generator g(l, 4, Generator::no_floor, any_time());
	int64_t L0 = kNow - kEpoch;

	for (int i = 0; i < 512; i++)
		g.next_cached(clock, limits(10000));
	clock.set(kNow - 20000); /* 20 s back: L0 + 1 needs a 10001 ms wait */
	expect_cancel(g, GeneratorKind::Cached, clock, limits(10000), 5000);
	EXPECT_EQ(clock.asked(), (std::vector<int64_t>{10001, 5000}));
	EXPECT_EQ(g.last_delta(), L0);
	EXPECT_EQ(g.sequence(), 511);
}

TEST(GeneratorCancel, CachedFloorWait)
{
	Layout l = Layout::default_layout();
	const int64_t F = kNow - kEpoch;
	CancellingClock clock(kNow - 60000);
	Generator g(l, 4, F, any_time());

	expect_cancel(g, GeneratorKind::Cached, clock, limits(10000), 50001);
	EXPECT_EQ(g.last_delta(), F);
	EXPECT_EQ(g.sequence(), l.max_sequence());

	/* Cancelled or not, the floor still holds on the next call. */
	clock.set(kNow);
	EXPECT_EQ(l.decompose(g.next_cached(clock, limits(10000))), (UidFields{F + 1, 4, 0}));
}

TEST(GeneratorCancel, DefaultAtTheEndOfAUnit)
{
	Layout l(30, 20, 3, kEpoch, TimeUnit::Second);
	CancellingClock clock(kNow + 400);
	Generator g(l, 2, Generator::no_floor, any_time());
	int64_t L0 = (kNow - kEpoch) / 1000;
	int64_t prev = -1;

	for (int i = 0; i < 8; i++)
		prev = g.next_default(clock, limits(10000));
	for (int i = 0; i < 2; i++)
	{
		expect_cancel(g, GeneratorKind::Default, clock, limits(10000), 600);
		EXPECT_EQ(g.last_delta(), L0);
		EXPECT_EQ(g.sequence(), 7);
	}

	clock.set(kNow + 1000);
	int64_t id = g.next_default(clock, limits(10000));
	EXPECT_EQ(l.decompose(id), (UidFields{L0 + 1, 2, 0}));
	EXPECT_GT(id, prev);
}

TEST(GeneratorCancel, DefaultWaitingForABackwardsClock)
{
	Layout l = Layout::default_layout();
	CancellingClock clock(kNow);
	Generator g(l, 2, Generator::no_floor, any_time());
	int64_t L0 = kNow - kEpoch;

	int64_t first = g.next_default(clock, limits(10000));
	g.next_default(clock, limits(10000));
	clock.set(kNow - 800);
	expect_cancel(g, GeneratorKind::Default, clock, limits(10000, 1000), 800);
	EXPECT_EQ(g.last_delta(), L0);
	EXPECT_EQ(g.sequence(), 1);

	/* After an early wake-up and a cancelled retry, too. */
	clock.allow(1);
	expect_cancel(g, GeneratorKind::Default, clock, limits(10000, 1000), 400);
	EXPECT_EQ(g.last_delta(), L0);
	EXPECT_EQ(g.sequence(), 1);

	clock.set(kNow);
	EXPECT_EQ(g.next_default(clock, limits(10000)), first + 2);
}

TEST(GeneratorCancel, DefaultFloorWait)
{
	Layout l = Layout::default_layout();
	const int64_t F = kNow - kEpoch;
	CancellingClock clock(kNow);
	Generator g(l, 4, F, any_time());

	/* At the floor, the generator waits for F + 1 to start; cancel that. */
	expect_cancel(g, GeneratorKind::Default, clock, limits(10000), 1);
	EXPECT_EQ(g.last_delta(), F);
	EXPECT_EQ(g.sequence(), l.max_sequence());

	clock.set(kNow + 1);
	EXPECT_EQ(l.decompose(g.next_default(clock, limits(10000))), (UidFields{F + 1, 4, 0}));
}
