/*
 * generator_block_test.cpp
 *	  Unit tests of blocks of IDs (uid_next_block()): Generator::next_block
 *	  and take_block() on the shared cursor.  A block is n consecutive IDs of
 *	  one unit and one worker, never overlapping what the generator issues
 *	  before or after it.
 */
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/generator.hpp"
#include "core/layout.hpp"
#include "core/shared_cursor.hpp"
#include "support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <random>
#include <set>
#include <thread>
#include <vector>

namespace {

/* Issues IDs, blocks and single IDs in random turns; checks increase, disjointness and one unit per block. */
void
interleave(GeneratorKind kind, const Layout &l, ManualClock &clock, int turns, uint32_t seed)
{
	Generator g(l, 5, Generator::no_floor, any_time());
	std::mt19937 rng(seed);
	std::uniform_int_distribution<int64_t> size(1, l.max_sequence() + 1);
	int64_t last = -1;

	for (int t = 0; t < turns; t++)
	{
		if (rng() % 3 == 0)
		{
			int64_t uid = g.next(kind, clock, limits(100000));
			ASSERT_GT(uid, last);
			last = uid;
		}
		else
		{
			int64_t n = rng() % 4 == 0 ? size(rng) : 1 + rng() % 8;
			int64_t first = g.next_block(kind, clock, limits(100000), n);
			UidFields f = l.decompose(first);
			UidFields top = l.decompose(first + n - 1);

			ASSERT_GT(first, last);
			ASSERT_EQ(f.delta, top.delta) << "a block within one unit";
			ASSERT_EQ(f.worker, top.worker);
			ASSERT_EQ(top.sequence - f.sequence, n - 1);
			last = first + n - 1;
		}
		if (rng() % 16 == 0)
			clock.advance(l.unit_ms());
	}
}

} // namespace

TEST(GeneratorBlock, FirstBlockStartsTheUnit)
{
	Layout l = Layout::default_layout();
	ManualClock clock(kNow);
	Generator g(l, 3, Generator::no_floor, any_time());

	EXPECT_EQ(g.next_block(GeneratorKind::Cached, clock, limits(10000), 50), l.compose(kNow - kEpoch, 3, 0));
	/* The generator goes on after the block. */
	EXPECT_EQ(g.next_cached(clock, limits(10000)), l.compose(kNow - kEpoch, 3, 50));
}

TEST(GeneratorBlock, NoRoomMovesToTheNextUnit)
{
	Layout l = Layout::default_layout();
	ManualClock clock(kNow);
	Generator g(l, 3, Generator::no_floor, any_time());
	int64_t L = kNow - kEpoch;

	for (int i = 0; i < 500; i++)
		g.next_cached(clock, limits(10000));
	/* 12 left in L: a block of 13 borrows L + 1 (cached) ... */
	EXPECT_EQ(g.next_block(GeneratorKind::Cached, clock, limits(10000), 13), l.compose(L + 1, 3, 0));
	EXPECT_TRUE(clock.sleeps().empty());
	/* ... a block of all 512 the next one again. */
	EXPECT_EQ(g.next_block(GeneratorKind::Cached, clock, limits(10000), 512), l.compose(L + 2, 3, 0));
	EXPECT_EQ(g.next_cached(clock, limits(10000)), l.compose(L + 3, 3, 0));
}

TEST(GeneratorBlock, DefaultWaitsForTheNextUnit)
{
	Layout l = Layout::default_layout();
	ManualClock clock(kNow);
	Generator g(l, 3, Generator::no_floor, any_time());
	int64_t L = kNow - kEpoch;

	g.next_block(GeneratorKind::Default, clock, wait_limits(1000), 500);
	EXPECT_EQ(g.next_block(GeneratorKind::Default, clock, wait_limits(1000), 100), l.compose(L + 1, 3, 0));
	EXPECT_EQ(clock.now_ms(), kNow + 1);
}

TEST(GeneratorBlock, SizeOutOfRangeIsRefused)
{
	Layout l = Layout::default_layout();
	ManualClock clock(kNow);
	Generator g(l, 3, Generator::no_floor, any_time());

	auto e = expect_error([&] { return g.next_block(GeneratorKind::Cached, clock, limits(10000), 513); },
						  ErrorKind::InvalidParameter);
	ASSERT_TRUE(e);
	EXPECT_TRUE(contains(e->detail(), "512")) << e->detail();
	expect_error([&] { return g.next_block(GeneratorKind::Cached, clock, limits(10000), 0); },
				 ErrorKind::InvalidParameter);
	/* Nothing was issued: the next ID is the clock's first. */
	EXPECT_EQ(g.next_cached(clock, limits(10000)), l.compose(kNow - kEpoch, 3, 0));
}

TEST(GeneratorBlock, InterleavedWithSingleIds)
{
	ManualClock clock(kNow);
	interleave(GeneratorKind::Cached, Layout::default_layout(), clock, 20000, 1);
	ManualClock clock2(kNow);
	interleave(GeneratorKind::Default, Layout::default_layout(), clock2, 20000, 2);
	ManualClock clock3(kNow);
	interleave(GeneratorKind::Cached, Layout(28, 22, 13, kEpoch, TimeUnit::Second), clock3, 20000, 3);
	ManualClock clock4(kNow);
	interleave(GeneratorKind::Cached, Layout(41, 4, 8, kEpoch, TimeUnit::Millisecond), clock4, 20000, 4);
}

TEST(CursorBlock, TakesWhereTheCursorStandsWhenThereIsRoom)
{
	std::atomic<uint64_t> cursor{(uint64_t{7} << 9) + 100};

	auto block = uidgen::take_block(cursor, 0, 50, 9);
	ASSERT_TRUE(block);
	EXPECT_EQ(block->first, (uint64_t{7} << 9) + 100);
	EXPECT_EQ(cursor.load(), (uint64_t{7} << 9) + 150);
}

TEST(CursorBlock, SkipsToTheNextUnitWhenItLacksRoom)
{
	std::atomic<uint64_t> cursor{(uint64_t{7} << 9) + 500};

	auto block = uidgen::take_block(cursor, 0, 13, 9);
	ASSERT_TRUE(block);
	EXPECT_EQ(block->first, uint64_t{8} << 9);
	EXPECT_EQ(block->end, (uint64_t{8} << 9) + 13);
	/* Exactly the room left: stays in the unit. */
	auto whole = uidgen::take_block(cursor, 0, 512 - 13, 9);
	ASSERT_TRUE(whole);
	EXPECT_EQ(whole->first, (uint64_t{8} << 9) + 13);
	EXPECT_EQ(cursor.load(), uint64_t{9} << 9);
}

TEST(CursorBlock, CatchesUpToMinWordAndRefusesBadSizes)
{
	std::atomic<uint64_t> cursor{5};

	auto block = uidgen::take_block(cursor, uint64_t{3} << 9, 1, 9);
	ASSERT_TRUE(block);
	EXPECT_EQ(block->first, uint64_t{3} << 9);
	EXPECT_FALSE(uidgen::take_block(cursor, 0, 0, 9));
	EXPECT_FALSE(uidgen::take_block(cursor, 0, 513, 9));
	uidgen::close_cursor(cursor);
	EXPECT_FALSE(uidgen::take_block(cursor, 0, 1, 9));
}

/* Four threads take blocks and chunks at once: no word twice, every block in one unit. */
TEST(CursorBlock, ConcurrentBlocksAndChunksAreDisjoint)
{
	std::atomic<uint64_t> cursor{0};
	std::vector<std::vector<std::pair<uint64_t, uint64_t>>> taken(4);
	std::vector<std::thread> threads;

	for (int t = 0; t < 4; t++)
		threads.emplace_back([&, t] {
			std::mt19937 rng(t);
			for (int i = 0; i < 20000; i++)
			{
				uint64_t n = 1 + rng() % 64;
				auto c = t % 2 == 0 ? uidgen::take_block(cursor, 0, n, 6) : uidgen::take_chunk(cursor, 0, n);
				taken[t].emplace_back(c->first, c->end);
			}
		});
	for (auto &th : threads)
		th.join();

	std::vector<std::pair<uint64_t, uint64_t>> all;
	for (int t = 0; t < 4; t++)
		for (auto &c : taken[t])
		{
			if (t % 2 == 0)
			{
				ASSERT_EQ(c.first >> 6, (c.second - 1) >> 6) << "a block within one unit";
			}
			all.push_back(c);
		}
	std::sort(all.begin(), all.end());
	for (size_t i = 1; i < all.size(); i++)
		ASSERT_LE(all[i - 1].second, all[i].first) << "overlap";
}
