/*
 * shared_cursor.hpp
 *	  The server-wide generator: one cursor word that every backend of a
 *	  database takes chunks of IDs from, and each backend's cache of its chunk.
 *
 * The word counts (delta << s) | sequence under one worker, so consecutive
 * words are consecutive IDs, and a sequence that runs out carries into the
 * next unit: time is borrowed just as the cached generator borrows it.  A
 * chunk is taken with one fetch-add, as Seata's IdWorker takes an ID; a word
 * behind the clock (or behind a backend's floor) is first moved up with a
 * compare-and-swap.  The word never decreases, so no word is handed out
 * twice whatever the clock does, and the chunks of one backend come in
 * increasing order (INV-14).
 *
 * Whether a chunk may be issued (its units reserved, not too far ahead of
 * the clock, inside the layout) is the caller's to check: the words are
 * taken either way and simply wait for the clock when borrowed too far.
 */
#pragma once

#include "core/layout.hpp"

#include <atomic>
#include <cstdint>
#include <optional>
#include <type_traits>

namespace uidgen {

/*
 * The top bit closes a cursor: a word at or above it is never a valid one,
 * a fetch-add on it stays above it, and a compare-and-swap never moves a
 * word down out of it.
 */
constexpr uint64_t cursor_closed_bit = uint64_t{1} << 63;

/* Words [first, end) of one cursor. */
struct CursorChunk
{
	uint64_t first;
	uint64_t end;
};
static_assert(std::is_trivially_destructible_v<CursorChunk>);

/* Converts between a layout's words, units and IDs. */
class CursorWords
{
public:
	explicit CursorWords(const Layout &layout) : layout_(layout) {}

	/*
	 * A unit before the epoch (a clock set back before it) asks for no word
	 * in particular: word 0, not a negative delta's top bits, which would
	 * read as a closed cursor.
	 */
	uint64_t first_of(int64_t delta) const
	{
		return delta < 0 ? 0 : static_cast<uint64_t>(delta) << layout_.seq_bits();
	}
	int64_t delta_of(uint64_t word) const { return static_cast<int64_t>(word >> layout_.seq_bits()); }
	int64_t uid_of(uint64_t word, int64_t worker) const
	{
		return layout_.compose_unchecked(delta_of(word), worker,
										 static_cast<int64_t>(word) & layout_.max_sequence());
	}
	const Layout &layout() const { return layout_; }

private:
	Layout layout_;
};
static_assert(std::is_trivially_destructible_v<CursorWords>);

/*
 * Takes n (>= 1) consecutive words at or after min_word; nullopt when the
 * cursor is closed, and when min_word is no word (at or above
 * cursor_closed_bit), which leaves the cursor alone.  Lock-free: one
 * fetch-add, plus a compare-and-swap when the word is behind min_word.
 */
std::optional<CursorChunk> take_chunk(std::atomic<uint64_t> &cursor, uint64_t min_word, uint64_t n);

/*
 * Takes n (1 to 2^s) consecutive words of one time unit at or after
 * min_word: where the cursor stands when its unit has room for n, else
 * from the start of the next unit (the rest of the unit is never handed
 * out).  nullopt as take_chunk().  Lock-free: a compare-and-swap loop.
 */
std::optional<CursorChunk> take_block(std::atomic<uint64_t> &cursor, uint64_t min_word, uint64_t n, int seq_bits);

/*
 * Closes the cursor and returns the first word never handed out (every word
 * below it may have been), or nullopt when it was already closed.
 */
std::optional<uint64_t> close_cursor(std::atomic<uint64_t> &cursor);

/*
 * One backend's chunk, and how big the next one should be: it doubles while
 * chunks run out within a unit of being taken, up to max_size, and falls
 * back to one ID as soon as a chunk goes stale, so a backend that issues
 * rarely takes one ID at a time and IDs of all backends come out in nearly
 * one global order.  A remainder more than a unit older than the clock is
 * dropped rather than issued with a stale time.
 */
class ChunkCache
{
public:
	ChunkCache(const Layout &layout, int64_t worker, uint64_t max_size)
		: words_(layout), worker_(worker), max_size_(max_size < 1 ? 1 : max_size)
	{
	}

	/* The hot path: the next ID of the chunk, when it is not stale at now_delta. */
	bool take(int64_t now_delta, int64_t *uid)
	{
		if (next_ < end_ && words_.delta_of(next_) + 1 >= now_delta)
		{
			*uid = words_.uid_of(next_++, worker_);
			return true;
		}
		return false;
	}

	/* The size to ask for next, given what became of the current chunk. */
	uint64_t next_size(int64_t now_delta) const
	{
		if (next_ < end_)
			return 1;			/* went stale: the rate is low */
		if (taken_at_ + 1 >= now_delta && size_ < max_size_)
			return size_ * 2 > max_size_ ? max_size_ : size_ * 2;
		if (taken_at_ + 1 >= now_delta)
			return size_;
		return 1;
	}

	/* Replaces the chunk; returns how many words of the old one were dropped. */
	uint64_t fill(CursorChunk chunk, int64_t now_delta)
	{
		uint64_t dropped = end_ - next_;

		next_ = chunk.first;
		end_ = chunk.end;
		size_ = chunk.end - chunk.first;
		taken_at_ = now_delta;
		return dropped;
	}

	/* Drops the rest of the chunk (its source is gone); returns how many words. */
	uint64_t clear()
	{
		uint64_t dropped = end_ - next_;

		next_ = end_;
		return dropped;
	}

	int64_t worker() const { return worker_; }
	uint64_t size() const { return size_; }
	uint64_t max_size() const { return max_size_; }
	const CursorWords &words() const { return words_; }

private:
	CursorWords words_;
	int64_t worker_;
	uint64_t max_size_;
	uint64_t next_ = 0;
	uint64_t end_ = 0;
	uint64_t size_ = 1;
	int64_t taken_at_ = 0;
};
static_assert(std::is_trivially_destructible_v<ChunkCache>);

} // namespace uidgen
