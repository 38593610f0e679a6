/*
 * ring_filler.cpp
 *	  Filling a RingBuffer with consecutive IDs, on request.
 */
#include "ring/ring_filler.hpp"

#include <algorithm>
#include <chrono>

#include "core/cpp_only.hpp"

namespace uidgen {

RingFiller::RingFiller(RingBuffer &ring, const Layout &layout, int64_t worker)
	: ring_(ring), words_(layout), worker_(worker), end_word_(words_.first_of(layout.max_delta() + 1))
{
}

uint64_t
RingFiller::pad(uint64_t min_word)
{
	uint64_t first = std::max(word_, min_word);

	word_ = first;
	while (word_ < end_word_ && ring_.put(words_.uid_of(word_, worker_)))
		word_++;
	return word_ - first;
}

void
RingFiller::run(Clock &clock, const std::atomic<bool> &stop)
{
	const Layout &layout = words_.layout();

	pad(words_.first_of(layout.delta_at(clock.now_ms())));
	while (!stop.load(std::memory_order_relaxed))
	{
		if (ring_.wait_for_padding_request(std::chrono::milliseconds(1)))
			pad(words_.first_of(layout.delta_at(clock.now_ms())));
	}
}

} // namespace uidgen
