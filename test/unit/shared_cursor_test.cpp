/*
 * shared_cursor_test.cpp
 *	  Unit tests of the server-wide generator's cursor word (take_chunk,
 *	  close_cursor) and of ChunkCache, one backend's chunk of it.
 *
 * The cursor's promise is that no word is handed out twice and that one
 * taker's words increase, whatever min_words the takers pass and whenever
 * the cursor is closed.  The concurrent tests check that promise on real
 * threads by recording every chunk handed out and looking for overlaps, so
 * a broken compare-and-swap or fetch-add shows up as a failure rather than
 * as a hang.
 */
#include "core/layout.hpp"
#include "core/shared_cursor.hpp"

#include "support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <thread>
#include <vector>

using uidgen::ChunkCache;
using uidgen::close_cursor;
using uidgen::cursor_closed_bit;
using uidgen::CursorChunk;
using uidgen::CursorWords;
using uidgen::take_chunk;

namespace {

/* One take of a concurrent test: what was asked, and what came back. */
struct Taken
{
	uint64_t min_word;
	uint64_t n;
	CursorChunk chunk;
};

/*
 * Checks that the chunks of all threads overlap nowhere (no word was handed
 * out twice), and returns the largest end.
 */
uint64_t
expect_disjoint(const std::vector<std::vector<Taken>> &per_thread)
{
	std::vector<CursorChunk> all;

	for (const auto &taken : per_thread)
		for (const Taken &t : taken)
			all.push_back(t.chunk);
	std::sort(all.begin(), all.end(),
			  [](const CursorChunk &a, const CursorChunk &b) { return a.first < b.first; });
	for (size_t i = 1; i < all.size(); i++)
	{
		if (all[i].first < all[i - 1].end)
		{
			ADD_FAILURE() << "words " << all[i].first << ".." << all[i - 1].end - 1 << " were handed out twice";
			break;
		}
	}
	return all.empty() ? 0 : all.back().end;
}

/*
 * Checks one thread's chunks: each is the size asked, at or after its
 * min_word, and after the thread's previous chunk (strict increase).
 */
void
expect_thread_increases(const std::vector<Taken> &taken, size_t thread)
{
	for (size_t i = 0; i < taken.size(); i++)
	{
		const Taken &t = taken[i];

		ASSERT_EQ(t.chunk.end - t.chunk.first, t.n) << "thread " << thread << " take " << i;
		ASSERT_GE(t.chunk.first, t.min_word) << "thread " << thread << " take " << i;
		if (i > 0)
		{
			ASSERT_GE(t.chunk.first, taken[i - 1].chunk.end) << "thread " << thread << " take " << i;
		}
	}
}

} // namespace

/* ---- take_chunk, one thread -------------------------------------------- */

TEST(SharedCursor, CatchesUpToMinWord)
{
	std::atomic<uint64_t> cursor{0};

	auto c = take_chunk(cursor, 1000, 5);
	ASSERT_TRUE(c);
	EXPECT_EQ(c->first, 1000u);
	EXPECT_EQ(c->end, 1005u);
	EXPECT_EQ(cursor.load(), 1005u);

	/* A min_word just at the word does not move it either way. */
	c = take_chunk(cursor, 1005, 1);
	ASSERT_TRUE(c);
	EXPECT_EQ(c->first, 1005u);
	EXPECT_EQ(cursor.load(), 1006u);
}

TEST(SharedCursor, NeverMovesDown)
{
	std::atomic<uint64_t> cursor{5000};

	/* A taker whose clock is behind gets the words at the cursor, not its min_word. */
	for (uint64_t min_word : {uint64_t{0}, uint64_t{1}, uint64_t{4999}})
	{
		uint64_t before = cursor.load();
		auto c = take_chunk(cursor, min_word, 3);

		ASSERT_TRUE(c);
		EXPECT_EQ(c->first, before);
		EXPECT_EQ(c->end, before + 3);
		EXPECT_EQ(cursor.load(), before + 3);
	}
}

TEST(SharedCursor, ChunksAreConsecutive)
{
	std::atomic<uint64_t> cursor{42};
	std::mt19937_64 rng(12);
	uint64_t expected = 42;

	for (int i = 0; i < 10000; i++)
	{
		uint64_t n = 1 + rng() % 100;
		auto c = take_chunk(cursor, 0, n);

		ASSERT_TRUE(c);
		ASSERT_EQ(c->first, expected);
		ASSERT_EQ(c->end, expected + n);
		expected = c->end;
	}
	EXPECT_EQ(cursor.load(), expected);
}

/* ---- close_cursor ------------------------------------------------------ */

TEST(SharedCursor, CloseReturnsTheFirstWordNeverHandedOut)
{
	std::atomic<uint64_t> cursor{0};

	ASSERT_TRUE(take_chunk(cursor, 700, 10));
	ASSERT_TRUE(take_chunk(cursor, 0, 24));
	EXPECT_EQ(close_cursor(cursor), std::optional<uint64_t>(734));
	/* Closing again says it was closed: nobody else learns a first word. */
	EXPECT_EQ(close_cursor(cursor), std::nullopt);

	/* A cursor closed before any take returns where it stood. */
	std::atomic<uint64_t> fresh{12345};
	EXPECT_EQ(close_cursor(fresh), std::optional<uint64_t>(12345));
}

TEST(SharedCursor, ClosedCursorHandsOutNothing)
{
	std::atomic<uint64_t> cursor{100};

	ASSERT_TRUE(close_cursor(cursor));
	/* Whatever the min_word: below, at and far above the closed word's own bits. */
	for (uint64_t min_word : {uint64_t{0}, uint64_t{100}, uint64_t{101}, cursor_closed_bit - 1})
		for (uint64_t n : {uint64_t{1}, uint64_t{64}})
		{
			EXPECT_EQ(take_chunk(cursor, min_word, n).has_value(), false) << min_word << " " << n;
			/* A catch-up never moves a closed word down out of the closed range. */
			EXPECT_GE(cursor.load(), cursor_closed_bit);
		}
	EXPECT_EQ(close_cursor(cursor), std::nullopt);
}

TEST(SharedCursor, MinWordWithTheClosedBitLeavesTheCursorAlone)
{
	std::atomic<uint64_t> cursor{5000};

	for (uint64_t min_word : {cursor_closed_bit, cursor_closed_bit + 5, ~uint64_t{0}})
	{
		EXPECT_FALSE(take_chunk(cursor, min_word, 1)) << min_word;
		EXPECT_EQ(cursor.load(), 5000u);
	}
	/* Still open, and close still learns where it stood. */
	auto c = take_chunk(cursor, 0, 2);
	ASSERT_TRUE(c);
	EXPECT_EQ(c->first, 5000u);
	EXPECT_EQ(close_cursor(cursor), std::optional<uint64_t>(5002));
}

TEST(SharedCursor, ClockBeforeTheEpochNeverRepeatsAWord)
{
	/*
	 * Backends have borrowed 10,000 words ahead of unit 1000 when one of
	 * them reads a clock set back before the epoch.  Its min_word must not
	 * close the cursor, nor (after the refused takes of the others wrap the
	 * word round 2^64) hand out those words again.
	 */
	Layout l = Layout::default_layout();
	CursorWords words(l);
	std::atomic<uint64_t> cursor{0};
	uint64_t high = 0;

	EXPECT_EQ(words.first_of(-1), 0u);
	EXPECT_EQ(words.first_of(INT64_MIN), 0u);
	for (int i = 0; i < 10000; i++)
		high = take_chunk(cursor, words.first_of(1000), 1).value().end;

	auto before_epoch = take_chunk(cursor, words.first_of(-1), 1);
	ASSERT_TRUE(before_epoch);
	EXPECT_EQ(before_epoch->first, high);
	for (int i = 0; i < 1000; i++)
	{
		auto c = take_chunk(cursor, words.first_of(1001), 1);

		ASSERT_TRUE(c) << "take " << i;
		ASSERT_GT(c->first, high) << "take " << i;
	}
	EXPECT_EQ(close_cursor(cursor), std::optional<uint64_t>(high + 1001));
}

/* ---- take_chunk and close_cursor under real concurrency ---------------- */

TEST(SharedCursorConcurrent, UniqueAndIncreasingPerThread)
{
	/*
	 * 4 threads x 200,000 takes of 1 to 16 words, each with a min_word that
	 * rises like a clock with jitter, so that the catch-up races with the
	 * fetch-adds of the other threads as often as not.
	 */
	constexpr int threads = 4;
	constexpr int takes = 200000;
	std::atomic<uint64_t> cursor{0};
	std::atomic<bool> go{false};
	std::vector<std::vector<Taken>> per_thread(threads);
	std::vector<std::thread> pool;
	uint64_t asked = 0;
	uint64_t caught_up = 0;

	for (int t = 0; t < threads; t++)
		pool.emplace_back(
			[&, t]
			{
				std::mt19937_64 rng(1000 + t);
				std::vector<Taken> &taken = per_thread[t];

				taken.reserve(takes);
				while (!go.load())
				{
				}
				for (int i = 0; i < takes; i++)
				{
					uint64_t n = 1 + rng() % 16;
					uint64_t min_word = static_cast<uint64_t>(i) * 40 + rng() % 400;
					auto c = take_chunk(cursor, min_word, n);

					if (!c)
					{
						ADD_FAILURE() << "an open cursor refused a take";
						return;
					}
					taken.push_back({min_word, n, *c});
				}
			});
	go.store(true);
	for (auto &th : pool)
		th.join();

	for (int t = 0; t < threads; t++)
	{
		ASSERT_EQ(per_thread[t].size(), static_cast<size_t>(takes));
		expect_thread_increases(per_thread[t], t);
		for (const Taken &x : per_thread[t])
		{
			asked += x.n;
			caught_up += x.chunk.first == x.min_word;
		}
	}
	uint64_t last = expect_disjoint(per_thread);

	/* Every word handed out is below the cursor, which ends at the last chunk. */
	EXPECT_EQ(cursor.load(), last);
	/* The catch-ups skipped words, so the cursor passed more words than were taken. */
	EXPECT_GT(last, asked);
	/* The min_words really were ahead of the cursor some of the time. */
	EXPECT_GT(caught_up, 0u);
}

namespace {

/*
 * Threads take until the cursor refuses them while the main thread closes
 * it; returns the chunks of each thread and what close returned.
 */
struct CloseRace
{
	std::vector<std::vector<Taken>> per_thread;
	uint64_t closed_at = 0;
	int refused_after_close = 0;
};

/* Waits up to 10 s for the cursor to show closed; returns whether it did. */
bool
wait_until_closed(const std::atomic<uint64_t> &cursor)
{
	auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);

	while (cursor.load() < cursor_closed_bit)
	{
		if (std::chrono::steady_clock::now() > deadline)
			return false;
		std::this_thread::yield();
	}
	return true;
}

CloseRace
race_close(bool rising_min_words, uint64_t seed)
{
	constexpr int threads = 3;
	constexpr uint64_t max_takes = 1000000;
	std::atomic<uint64_t> cursor{0};
	std::atomic<uint64_t> takes{0};
	std::vector<std::thread> pool;
	std::atomic<int> refused{0};
	std::atomic<int> finished{0};
	CloseRace race;

	race.per_thread.resize(threads);
	for (int t = 0; t < threads; t++)
		pool.emplace_back(
			[&, t]
			{
				std::mt19937_64 rng(seed + t);

				for (uint64_t i = 0;; i++)
				{
					/*
					 * A thread that could take max_takes without being
					 * closed waits for the close, so that a cursor that
					 * a broken close leaves open fails the test rather
					 * than filling the memory.
					 */
					if (i == max_takes && !wait_until_closed(cursor))
					{
						ADD_FAILURE() << "the cursor never showed closed";
						break;
					}

					uint64_t n = 1 + rng() % 8;
					uint64_t min_word = rising_min_words ? i * 20 + rng() % 100 : 0;
					auto c = take_chunk(cursor, min_word, n);

					if (!c)
						break;
					race.per_thread[t].push_back({min_word, n, *c});
					takes.fetch_add(1);
					if (i >= max_takes)
					{
						ADD_FAILURE() << "a closed cursor handed out words " << c->first << ".." << c->end - 1;
						break;
					}
				}
				/* Once refused, always refused. */
				for (int i = 0; i < 100; i++)
					if (!take_chunk(cursor, rng() % 1000000, 1 + rng() % 8))
						refused.fetch_add(1);
				finished.fetch_add(1);
			});

	/*
	 * Close in the middle of the takes, not before the first one (nor
	 * never, should a broken cursor refuse the takers before).
	 */
	while (takes.load() < 50000 && finished.load() == 0)
	{
	}
	auto closed = close_cursor(cursor);
	for (auto &th : pool)
		th.join();

	EXPECT_TRUE(closed);
	race.closed_at = closed.value_or(0);
	race.refused_after_close = refused.load();
	return race;
}

} // namespace

TEST(SharedCursorConcurrent, CloseDuringTakesWithoutCatchUp)
{
	CloseRace race = race_close(false, 77);
	uint64_t words = 0;

	for (size_t t = 0; t < race.per_thread.size(); t++)
	{
		expect_thread_increases(race.per_thread[t], t);
		for (const Taken &x : race.per_thread[t])
			words += x.n;
	}
	uint64_t last = expect_disjoint(race.per_thread);

	/*
	 * Without catch-ups the chunks tile [0, closed_at) exactly: every word
	 * below what close returned was handed out, none at or above it.
	 */
	EXPECT_EQ(last, race.closed_at);
	EXPECT_EQ(words, race.closed_at);
	EXPECT_GE(race.closed_at, 50000u);
	EXPECT_EQ(race.refused_after_close, 300);
}

TEST(SharedCursorConcurrent, CloseDuringTakesWithCatchUp)
{
	CloseRace race = race_close(true, 99);

	for (size_t t = 0; t < race.per_thread.size(); t++)
		expect_thread_increases(race.per_thread[t], t);
	uint64_t last = expect_disjoint(race.per_thread);

	/* A catch-up may have skipped words just before the close, never handed one out after it. */
	EXPECT_LE(last, race.closed_at);
	EXPECT_GT(last, 0u);
	EXPECT_EQ(race.refused_after_close, 300);
}

/* ---- ChunkCache ------------------------------------------------------ */

namespace {

/* One backend's cache over a cursor of the default layout, at unit D. */
class ChunkCacheTest : public ::testing::Test
{
protected:
	/* n words from the start of unit delta. */
	CursorChunk chunk_at(int64_t delta, uint64_t n) const
	{
		uint64_t first = words.first_of(delta);

		return CursorChunk{first, first + n};
	}

	/*
	 * What a backend does when its cache is used up or stale at now: takes
	 * the size the cache asks for from the cursor and fills it.  Returns what
	 * the fill dropped.
	 */
	uint64_t refill(ChunkCache &c, int64_t now)
	{
		auto chunk = take_chunk(cursor, words.first_of(now), c.next_size(now));

		EXPECT_TRUE(chunk);
		return chunk ? c.fill(*chunk, now) : 0;
	}

	Layout l = Layout::default_layout();
	CursorWords words{l};
	std::atomic<uint64_t> cursor{0};
	const int64_t D = kNow - kEpoch;
	ChunkCache cache{l, 1, 64};
	int64_t uid = -1;
};

} // namespace

TEST_F(ChunkCacheTest, EmptyCacheTakesNothing)
{
	ChunkCache other(l, 3, 64);

	EXPECT_FALSE(other.take(D, &uid));
	EXPECT_EQ(uid, -1);
	EXPECT_EQ(other.clear(), 0u);
	EXPECT_EQ(other.size(), 1u);
	EXPECT_EQ(other.worker(), 3);
}

TEST_F(ChunkCacheTest, TakesIdsInOrderComposedLikeTheLayout)
{
	/*
	 * A chunk across a unit boundary: the last two sequences of delta D and
	 * the first three of D + 1.  Every ID must be exactly Layout::compose()
	 * of its fields, with the carry into the next unit.
	 */
	ChunkCache other(l, 4242, 64);
	uint64_t first = words.first_of(D) + static_cast<uint64_t>(l.max_sequence()) - 1;
	const UidFields expected[] = {
		{D, 4242, l.max_sequence() - 1}, {D, 4242, l.max_sequence()}, {D + 1, 4242, 0},
		{D + 1, 4242, 1},				 {D + 1, 4242, 2},
	};

	EXPECT_EQ(other.fill(CursorChunk{first, first + 5}, D), 0u);
	EXPECT_EQ(other.size(), 5u);
	for (const UidFields &f : expected)
	{
		ASSERT_TRUE(other.take(D, &uid));
		EXPECT_EQ(uid, l.compose(f.delta, f.worker, f.sequence));
		EXPECT_EQ(l.decompose(uid), f);
	}
	EXPECT_FALSE(other.take(D, &uid));
}

TEST(ChunkCache, ComposesLikeTheLayoutOverRandomLayouts)
{
	std::mt19937_64 rng(31337);

	for (int i = 0; i < 2000; i++)
	{
		int t = 1 + static_cast<int>(rng() % 40);
		int s = 1 + static_cast<int>(rng() % 16);
		int w = 1 + static_cast<int>(rng() % (Layout::usable_bits - t - s));
		Layout l(t, w, s, kEpoch, TimeUnit::Millisecond);
		int64_t worker = static_cast<int64_t>(rng() % (static_cast<uint64_t>(l.max_worker()) + 1));
		int64_t delta = static_cast<int64_t>(rng() % static_cast<uint64_t>(l.max_delta()));
		CursorWords words(l);
		uint64_t first = words.first_of(delta) + rng() % (static_cast<uint64_t>(l.max_sequence()) + 1);
		ChunkCache cache(l, worker, 8);
		int64_t uid;

		SCOPED_TRACE(l.describe());
		cache.fill(CursorChunk{first, first + 8}, delta);
		for (uint64_t word = first; word < first + 8; word++)
		{
			int64_t d = static_cast<int64_t>(word >> s);
			int64_t seq = static_cast<int64_t>(word & static_cast<uint64_t>(l.max_sequence()));

			if (d > l.max_delta())
				break;
			ASSERT_TRUE(cache.take(delta, &uid));
			ASSERT_EQ(uid, l.compose(d, worker, seq));
		}
	}
}

TEST_F(ChunkCacheTest, DropsARemainderMoreThanAUnitOlderThanNow)
{
	cache.fill(chunk_at(D, 10), D);
	ASSERT_TRUE(cache.take(D, &uid));
	ASSERT_TRUE(cache.take(D, &uid));
	/* One unit later the chunk is still good: the clock may just have ticked. */
	ASSERT_TRUE(cache.take(D + 1, &uid));
	EXPECT_EQ(uid, l.compose(D, 1, 2));
	/* Two units later it is stale: nothing more is issued with time D... */
	EXPECT_FALSE(cache.take(D + 2, &uid));
	EXPECT_EQ(uid, l.compose(D, 1, 2));
	/* ... and the next fill reports the 7 words it drops. */
	EXPECT_EQ(cache.fill(chunk_at(D + 2, 1), D + 2), 7u);
	ASSERT_TRUE(cache.take(D + 2, &uid));
	EXPECT_EQ(uid, l.compose(D + 2, 1, 0));
	/* A used-up chunk drops nothing. */
	EXPECT_EQ(cache.fill(chunk_at(D + 3, 1), D + 2), 0u);
}

TEST(ChunkCache, StalenessFollowsTheWordNotTheTake)
{
	/*
	 * A chunk whose words carry into the next unit stays fresh for one unit
	 * longer from the word that carried: what counts is the time in the ID.
	 */
	Layout l(41, 13, 2, kEpoch, TimeUnit::Millisecond); /* 4 sequences a unit */
	ChunkCache cache(l, 9, 64);
	int64_t D = 1000;
	uint64_t first = CursorWords(l).first_of(D) + 3;
	int64_t uid;

	cache.fill(CursorChunk{first, first + 3}, D);
	ASSERT_TRUE(cache.take(D, &uid)); /* D, seq 3 */
	/* The next word is D + 1, seq 0: fresh at D + 2. */
	ASSERT_TRUE(cache.take(D + 2, &uid));
	EXPECT_EQ(l.decompose(uid), (UidFields{D + 1, 9, 0}));
	EXPECT_FALSE(cache.take(D + 3, &uid));
	EXPECT_EQ(cache.clear(), 1u);
	EXPECT_FALSE(cache.take(D + 1, &uid));
}

TEST_F(ChunkCacheTest, SizeDoublesUpToMax)
{
	ChunkCache other(l, 1, 48);
	std::vector<uint64_t> sizes;

	/* A backend that uses each chunk up within the unit it took it in. */
	for (int i = 0; i < 9; i++)
	{
		EXPECT_EQ(refill(other, D), 0u);
		sizes.push_back(other.size());
		while (other.take(D, &uid))
		{
		}
	}
	/* 48 is not a power of two: the doubling stops at it, not at 64. */
	EXPECT_EQ(sizes, (std::vector<uint64_t>{1, 2, 4, 8, 16, 32, 48, 48, 48}));
	EXPECT_EQ(cursor.load(), words.first_of(D) + 1 + 2 + 4 + 8 + 16 + 32 + 48 * 3);

	/* Used up one unit after the take still counts as fast. */
	EXPECT_EQ(other.next_size(D + 1), 48u);
}

TEST_F(ChunkCacheTest, SizeFallsBackToOneWhenSlow)
{
	cache.fill(chunk_at(D, 16), D);
	for (int i = 0; i < 16; i++)
		ASSERT_TRUE(cache.take(D + 1, &uid));
	/* Used up, but the next ID is asked for two units after the take: slow. */
	EXPECT_EQ(cache.next_size(D + 1), 32u);
	EXPECT_EQ(cache.next_size(D + 2), 1u);
}

TEST_F(ChunkCacheTest, SizeFallsBackToOneWhenStale)
{
	cache.fill(chunk_at(D, 32), D);
	ASSERT_TRUE(cache.take(D, &uid));
	ASSERT_FALSE(cache.take(D + 5, &uid));
	/* Words were left when it went stale: the rate is low, take one at a time. */
	EXPECT_EQ(cache.next_size(D + 5), 1u);
	EXPECT_EQ(refill(cache, D + 5), 31u);
	EXPECT_EQ(cache.size(), 1u);
}

TEST_F(ChunkCacheTest, MaxSizeBelowOneIsOne)
{
	ChunkCache other(l, 1, 0);

	/* However fast its chunks are used up, a cache of at most 0 takes one ID at a time. */
	for (int i = 0; i < 5; i++)
	{
		ASSERT_EQ(other.next_size(D), 1u);
		refill(other, D);
		ASSERT_TRUE(other.take(D, &uid));
		ASSERT_FALSE(other.take(D, &uid));
	}
}

TEST_F(ChunkCacheTest, BackendsSharingACursorNeverRepeat)
{
	/*
	 * Three caches of the same worker, as three backends of one database,
	 * take IDs in a random interleaving from one cursor under a clock that
	 * advances now and then: every ID is new and each cache's IDs increase.
	 */
	std::vector<ChunkCache> caches(3, ChunkCache(l, 77, 64));
	std::vector<int64_t> last(3, -1);
	std::vector<int64_t> all;
	std::mt19937_64 rng(5);
	int64_t now = D;
	uint64_t dropped = 0;

	for (int i = 0; i < 300000; i++)
	{
		size_t b = rng() % 3;

		if (rng() % 1000 == 0)
			now += 1 + static_cast<int64_t>(rng() % 3);
		if (!caches[b].take(now, &uid))
		{
			dropped += refill(caches[b], now);
			ASSERT_TRUE(caches[b].take(now, &uid));
		}
		ASSERT_GT(uid, last[b]) << "cache " << b << " call " << i;
		ASSERT_EQ(l.decompose(uid).worker, 77);
		ASSERT_GE(l.decompose(uid).delta + 1, now);
		last[b] = uid;
		all.push_back(uid);
	}
	std::sort(all.begin(), all.end());
	EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
	/* The clock's jumps made some remainders stale. */
	EXPECT_GT(dropped, 0u);
}
