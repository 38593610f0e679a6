/*
 * ring_filler.hpp
 *	  The one filler of a RingBuffer: consecutive IDs of one worker.
 *
 * Its IDs come from a word like the shared cursor's, (delta << s) | sequence,
 * that only the filler moves, so it needs no atomic.  Each padding starts
 * at the later of that word and the caller's min_word (the clock), so the
 * IDs follow the clock when the rate is low and borrow time ahead of it when
 * it is high, as the cursor word does, and puts consecutive words until the
 * ring refuses one.  The refused word is kept for the next padding:
 * UidGenerator fills whole seconds and drops whatever part of one it cannot
 * put, and never looks at the clock again once started.
 */
#pragma once

#include "core/clock.hpp"
#include "core/layout.hpp"
#include "ring/ring_buffer.hpp"
#include "core/shared_cursor.hpp"

#include <atomic>
#include <cstdint>

namespace uidgen {

class RingFiller
{
public:
	RingFiller(RingBuffer &ring, const Layout &layout, int64_t worker);

	/*
	 * Puts consecutive IDs from the later of the next word and min_word until
	 * the ring is full or the layout's time runs out; returns how many.
	 */
	uint64_t pad(uint64_t min_word);

	/*
	 * The filler thread's loop: pads at the clock, then again whenever a
	 * taker asks, until stop is set (it notices within a millisecond).
	 */
	void run(Clock &clock, const std::atomic<bool> &stop);

	/* The word of the next ID to put. */
	uint64_t next_word() const { return word_; }
	const CursorWords &words() const { return words_; }

private:
	RingBuffer &ring_;
	CursorWords words_;
	int64_t worker_;
	uint64_t word_ = 0;
	/* The first word beyond the layout's last time unit. */
	uint64_t end_word_;
};

} // namespace uidgen
