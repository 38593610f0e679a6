/*
 * ring_buffer_test.cpp
 *	  Unit tests of RingBuffer and RingFiller, UidGenerator's ring as the
 *	  benchmark's alternative to the shared cursor word.
 *
 * One thread first: order, capacity, wrap-around against a model queue, and
 * when takers ask for padding.  Then a real filler thread with real takers:
 * every ID is taken exactly once and each taker's IDs increase, also on a
 * ring so small that the filler and the takers chase each other round it.
 */
#include "core/clock.hpp"
#include "core/layout.hpp"
#include "ring/ring_buffer.hpp"
#include "ring/ring_filler.hpp"

#include "support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <random>
#include <thread>
#include <vector>

using uidgen::CursorWords;
using uidgen::RingBuffer;
using uidgen::RingFiller;

namespace {

constexpr std::chrono::microseconds no_wait{0};

/* take(), as an optional to compare. */
std::optional<int64_t>
take_one(RingBuffer &ring)
{
	int64_t uid;

	return ring.take(&uid) ? std::optional<int64_t>(uid) : std::nullopt;
}

/* Takes until the ring gives an ID, however long the filler takes. */
int64_t
take_retrying(RingBuffer &ring)
{
	int64_t uid;

	while (!ring.take(&uid))
		std::this_thread::yield();
	return uid;
}

} // namespace

/* ---- the ring, one thread ---------------------------------------------- */

TEST(RingBuffer, RejectsSizesThatAreNotPowersOfTwo)
{
	for (uint64_t size : {0, 1, 3, 6, 100, 65535})
	{
		auto e = expect_error(
			[&]
			{
				RingBuffer ring(size, 50);
				return int64_t{0};
			},
			ErrorKind::InvalidParameter);
		ASSERT_TRUE(e) << size;
		EXPECT_TRUE(contains(e->what(), std::to_string(size))) << e->what();
	}
	for (int percent : {0, -1, 100, 250})
		EXPECT_TRUE(expect_error(
			[&]
			{
				RingBuffer ring(8, percent);
				return int64_t{0};
			},
			ErrorKind::InvalidParameter))
			<< percent;
	EXPECT_EQ(RingBuffer(2, 50).size(), 2u);
	EXPECT_EQ(RingBuffer(4096, 50).padding_threshold(), 2048u);
	EXPECT_EQ(RingBuffer(64, 10).padding_threshold(), 6u);
}

TEST(RingBuffer, TakesInTheOrderPutAndHoldsExactlyItsSize)
{
	RingBuffer ring(8, 50);

	for (int64_t i = 0; i < 8; i++)
		ASSERT_TRUE(ring.put(100 + i)) << i;
	/* Full: the ninth is refused and not stored. */
	EXPECT_FALSE(ring.put(999));
	EXPECT_EQ(ring.available(), 8u);

	for (int64_t i = 0; i < 8; i++)
		EXPECT_EQ(take_one(ring), std::optional<int64_t>(100 + i));
	EXPECT_EQ(take_one(ring), std::nullopt);
	EXPECT_EQ(ring.available(), 0u);

	/* Taking one from a full ring makes room for exactly one. */
	for (int64_t i = 0; i < 8; i++)
		ASSERT_TRUE(ring.put(200 + i));
	EXPECT_EQ(take_one(ring), std::optional<int64_t>(200));
	EXPECT_TRUE(ring.put(208));
	EXPECT_FALSE(ring.put(209));
	for (int64_t i = 1; i <= 8; i++)
		EXPECT_EQ(take_one(ring), std::optional<int64_t>(200 + i));
}

TEST(RingBuffer, WrapsAroundLikeAQueue)
{
	/* Random puts and takes over many laps, against a model. */
	RingBuffer ring(16, 25);
	std::deque<int64_t> model;
	std::mt19937_64 rng(16);
	int64_t next = 0;

	for (int i = 0; i < 200000; i++)
	{
		if (rng() % 2 == 0)
		{
			bool room = model.size() < 16;

			ASSERT_EQ(ring.put(next), room) << "step " << i;
			if (room)
				model.push_back(next++);
		}
		else
		{
			std::optional<int64_t> expected;

			if (!model.empty())
			{
				expected = model.front();
				model.pop_front();
			}
			ASSERT_EQ(take_one(ring), expected) << "step " << i;
		}
		ASSERT_EQ(ring.available(), model.size());
	}
	EXPECT_GT(next, 16 * 1000);
}

TEST(RingBuffer, EmptyRingGivesNothingAndAsksForPadding)
{
	RingBuffer ring(8, 50);

	int64_t uid = -5;

	EXPECT_FALSE(ring.wait_for_padding_request(no_wait));
	EXPECT_FALSE(ring.take(&uid));
	EXPECT_EQ(uid, -5);
	EXPECT_TRUE(ring.wait_for_padding_request(no_wait));
	/* The request is cleared by the filler that saw it. */
	EXPECT_FALSE(ring.wait_for_padding_request(no_wait));
	/* A failed take claims nothing: the next ID put is the next taken. */
	ASSERT_TRUE(ring.put(7));
	EXPECT_EQ(take_one(ring), std::optional<int64_t>(7));
}

TEST(RingBuffer, AsksForPaddingBelowTheThreshold)
{
	RingBuffer ring(8, 50); /* threshold 4 */

	for (int64_t i = 0; i < 8; i++)
		ASSERT_TRUE(ring.put(i));
	/* Leaving 7, 6, 5 and 4 IDs is not low. */
	for (int i = 0; i < 4; i++)
	{
		ASSERT_TRUE(take_one(ring));
		EXPECT_FALSE(ring.wait_for_padding_request(no_wait)) << "after take " << i;
	}
	/* Leaving 3 is. */
	ASSERT_TRUE(take_one(ring));
	EXPECT_TRUE(ring.wait_for_padding_request(no_wait));
	/* Every take below the threshold asks again once the filler has cleared the request. */
	ASSERT_TRUE(take_one(ring));
	EXPECT_TRUE(ring.wait_for_padding_request(no_wait));
}

TEST(RingBuffer, WaitForPaddingTimesOutWithoutARequest)
{
	RingBuffer ring(8, 50);
	auto start = std::chrono::steady_clock::now();

	EXPECT_FALSE(ring.wait_for_padding_request(std::chrono::milliseconds(20)));
	EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(20));
}

/* ---- the filler, one thread -------------------------------------------- */

TEST(RingFiller, PadsConsecutiveIdsOfItsWorkerAndBurnsNone)
{
	Layout l = Layout::default_layout();
	CursorWords words(l);
	RingBuffer ring(1024, 50);
	RingFiller filler(ring, l, 321);
	int64_t D = kNow - kEpoch;

	/* From the min_word: 1024 IDs, across the units they carry into. */
	EXPECT_EQ(filler.pad(words.first_of(D)), 1024u);
	for (int64_t i = 0; i < 3; i++)
		EXPECT_EQ(take_one(ring), std::optional<int64_t>(l.compose(D, 321, i)));

	/* Full but for three slots: only three more, and the refused word is kept. */
	EXPECT_EQ(filler.pad(words.first_of(D)), 3u);
	EXPECT_EQ(filler.pad(0), 0u);
	EXPECT_EQ(filler.next_word(), words.first_of(D) + 1027);
	for (int64_t i = 3; i < 1027; i++)
	{
		auto uid = take_one(ring);

		ASSERT_TRUE(uid);
		ASSERT_EQ(l.decompose(*uid), (UidFields{D + i / 512, 321, i % 512})) << i;
	}
	EXPECT_EQ(take_one(ring), std::nullopt);

	/* A min_word ahead of the filler (the clock moved on) is where it resumes. */
	EXPECT_EQ(filler.pad(words.first_of(D + 100)), 1024u);
	EXPECT_EQ(take_one(ring), std::optional<int64_t>(l.compose(D + 100, 321, 0)));
}

TEST(RingFiller, StopsAtTheEndOfTheLayoutsTime)
{
	/* 3 time bits: units 0 to 7, 4 IDs each. */
	Layout l(3, 4, 2, kEpoch, TimeUnit::Millisecond);
	RingBuffer ring(64, 50);
	RingFiller filler(ring, l, 5);

	EXPECT_EQ(filler.pad(CursorWords(l).first_of(6)), 8u);
	for (int64_t i = 0; i < 8; i++)
		EXPECT_EQ(take_one(ring), std::optional<int64_t>(l.compose(6 + i / 4, 5, i % 4)));
	EXPECT_EQ(filler.pad(0), 0u);
	EXPECT_EQ(take_one(ring), std::nullopt);
}

/* ---- filler thread and takers ------------------------------------------ */

namespace {

/*
 * takers threads take per_taker IDs each from a ring of size slots that a
 * RingFiller thread keeps filling; checks uniqueness, per-taker increase and
 * that every ID is the filler's worker's.
 */
void
take_concurrently(uint64_t size, int takers, int per_taker)
{
	Layout l = Layout::default_layout();
	/* A clock that stands still: the filler never skips words to catch up with it. */
	ManualClock clock(kNow);
	RingBuffer ring(size, 50);
	RingFiller filler(ring, l, 99);
	std::atomic<bool> stop{false};
	std::vector<std::vector<int64_t>> taken(takers);
	std::vector<std::thread> pool;

	std::thread filling([&] { filler.run(clock, stop); });
	for (int t = 0; t < takers; t++)
		pool.emplace_back(
			[&, t]
			{
				taken[t].reserve(per_taker);
				for (int i = 0; i < per_taker; i++)
					taken[t].push_back(take_retrying(ring));
			});
	for (auto &th : pool)
		th.join();
	stop.store(true);
	filling.join();

	std::vector<int64_t> all;
	for (int t = 0; t < takers; t++)
	{
		for (size_t i = 0; i < taken[t].size(); i++)
		{
			UidFields f = l.decompose(taken[t][i]);

			ASSERT_EQ(f.worker, 99);
			ASSERT_GE(f.delta, kNow - kEpoch);
			if (i > 0)
			{
				ASSERT_GT(taken[t][i], taken[t][i - 1]) << "taker " << t << " ID " << i;
			}
		}
		all.insert(all.end(), taken[t].begin(), taken[t].end());
	}
	std::sort(all.begin(), all.end());
	EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "an ID was taken twice";
	EXPECT_EQ(all.size(), static_cast<size_t>(takers) * per_taker);
	/*
	 * The filler put consecutive words from the clock's: those taken, then
	 * those left in the ring, and no other.
	 */
	CursorWords words(l);
	EXPECT_EQ(all.front(), words.uid_of(words.first_of(kNow - kEpoch), 99));
	EXPECT_EQ(all.back(), words.uid_of(words.first_of(kNow - kEpoch) + all.size() - 1, 99));
	EXPECT_EQ(words.first_of(kNow - kEpoch) + all.size() + ring.available(), filler.next_word());
}

} // namespace

TEST(RingBufferConcurrent, UniqueAndIncreasingWithAFillerThread)
{
	take_concurrently(4096, 4, 200000);
}

TEST(RingBufferConcurrent, TinyRingChasedRound)
{
	/* Four slots: the filler is refused by unread slots all the time. */
	take_concurrently(4, 3, 30000);
}

TEST(RingBufferConcurrent, TakerWaitsUntilTheFillerStarts)
{
	/*
	 * take() never blocks: a taker that retries on an empty ring gets the
	 * first ID once a filler exists, and its request was waiting for it.
	 */
	Layout l = Layout::default_layout();
	ManualClock clock(kNow);
	RingBuffer ring(64, 50);
	RingFiller filler(ring, l, 3);
	std::atomic<bool> stop{false};
	std::atomic<bool> tried{false};
	int64_t first = -1;

	std::thread taker(
		[&]
		{
			EXPECT_EQ(take_one(ring), std::nullopt);
			tried.store(true);
			first = take_retrying(ring);
		});
	while (!tried.load())
		std::this_thread::yield();
	std::thread filling([&] { filler.run(clock, stop); });
	taker.join();
	stop.store(true);
	filling.join();

	EXPECT_EQ(first, l.compose(kNow - kEpoch, 3, 0));
}
