/*
 * shared_cursor.cpp
 *	  Taking chunks from, and closing, a shared cursor word.
 */
#include "core/shared_cursor.hpp"

#include "core/cpp_only.hpp"

namespace uidgen {

static_assert(std::atomic<uint64_t>::is_always_lock_free,
			  "the cursor lives in shared memory: its atomics must not need a lock");

std::optional<CursorChunk>
take_chunk(std::atomic<uint64_t> &cursor, uint64_t min_word, uint64_t n)
{
	/*
	 * Catching up to such a min_word would close the cursor for every taker
	 * without close_cursor learning where it stood, and leave the word so
	 * near 2^64 that the fetch-adds of a few refused takes would wrap it
	 * round to words already handed out.
	 */
	if (min_word >= cursor_closed_bit)
		return std::nullopt;

	uint64_t seen = cursor.load(std::memory_order_relaxed);

	/*
	 * Acquire: a taker that gets words of a cursor published since (with a
	 * release store) sees what was written before it, the new generation
	 * included, so that its check of the generation after the take cannot
	 * pass with another keeper's words (server_generator.cpp, refill()).
	 * A failed exchange reloads seen; a closed word is never below min_word.
	 */
	while (seen < min_word &&
		   !cursor.compare_exchange_weak(seen, min_word, std::memory_order_acquire, std::memory_order_relaxed))
	{
	}

	uint64_t first = cursor.fetch_add(n, std::memory_order_acquire);

	if (first >= cursor_closed_bit)
		return std::nullopt;
	return CursorChunk{first, first + n};
}

std::optional<CursorChunk>
take_block(std::atomic<uint64_t> &cursor, uint64_t min_word, uint64_t n, int seq_bits)
{
	uint64_t unit_words = uint64_t{1} << seq_bits;

	if (min_word >= cursor_closed_bit || n < 1 || n > unit_words)
		return std::nullopt;

	/* Acquire on success, as take_chunk()'s fetch-add: see there. */
	uint64_t seen = cursor.load(std::memory_order_acquire);

	for (;;)
	{
		if (seen >= cursor_closed_bit)
			return std::nullopt;

		uint64_t first = seen < min_word ? min_word : seen;

		if ((first & (unit_words - 1)) + n > unit_words)
			first = (first | (unit_words - 1)) + 1;
		if (first + n >= cursor_closed_bit)
			return std::nullopt;
		if (cursor.compare_exchange_weak(seen, first + n, std::memory_order_acquire, std::memory_order_acquire))
			return CursorChunk{first, first + n};
	}
}

std::optional<uint64_t>
close_cursor(std::atomic<uint64_t> &cursor)
{
	uint64_t before = cursor.fetch_or(cursor_closed_bit, std::memory_order_relaxed);

	if (before >= cursor_closed_bit)
		return std::nullopt;
	return before;
}

} // namespace uidgen
