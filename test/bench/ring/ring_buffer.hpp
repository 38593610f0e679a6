/*
 * ring_buffer.hpp
 *	  UidGenerator's padded RingBuffer in plain C++17: the alternative to the
 *	  shared cursor word that the server-wide generator is measured against
 *	  (test/bench/cursor_bench.cpp).  It is not wired into PostgreSQL.
 *
 * A ring of size slots (a power of two) holds IDs made in advance by one
 * filler, and any number of takers claim them in order.  Two counters say
 * where: tail, how many IDs were ever put, and cursor, how many were ever
 * claimed; ID number i lives in slot i % size.  Each slot has a flag,
 * CanPut until the filler writes it and CanTake until the taker that
 * claimed it has read it.  The flag, not the counters, is what keeps the
 * filler off a slot that a taker has claimed but not read yet.
 *
 * Slots and counters each have a cache line of their own, so that takers
 * moving the cursor do not slow the filler moving the tail, nor a taker
 * reading one slot the filler writing the next.
 *
 * Taking is lock-free: a compare-and-swap moves the cursor on by one slot
 * and fails only when another taker moved it first.  A taker that leaves
 * fewer than the padding threshold of IDs (padding_percent of the ring) asks
 * the filler to fill the ring up again; only the first to ask touches the
 * filler's mutex, to wake it.  Unlike UidGenerator, an empty ring is no
 * error: take() returns false and the caller decides whether to retry.
 */
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>

namespace uidgen {

/*
 * x86-64 and most ARM cores; std::hardware_destructive_interference_size
 * would do, but GCC warns that it may differ between compilations.
 */
constexpr std::size_t cache_line_bytes = 64;

class RingBuffer
{
public:
	/*
	 * size: a power of two, at least 2; padding_percent: 1 to 99.  Throws
	 * Error(InvalidParameter) otherwise.
	 */
	RingBuffer(uint64_t size, int padding_percent);
	RingBuffer(const RingBuffer &) = delete;
	RingBuffer &operator=(const RingBuffer &) = delete;

	/*
	 * The filler's: puts uid in the next slot.  false when that slot is
	 * still to be read, i.e. the ring is full (or its taker is slow); the
	 * uid is then not in the ring, and the filler keeps it for later.
	 */
	bool put(int64_t uid);

	/*
	 * Any thread's: sets *uid to the oldest ID not yet taken, or returns
	 * false when the ring is empty.  Asks for padding when it leaves fewer
	 * than padding_threshold() IDs, and when it finds none.  (Not a
	 * std::optional: GCC 12 returns one through memory with a byte store that
	 * the caller reloads as a word, a store-forwarding stall that cost about
	 * 10 ns a take, as much as the rest of the take, in cursor_bench.)
	 */
	bool take(int64_t *uid);

	/*
	 * The filler's: waits until a taker asks for padding, or timeout.
	 * Returns whether one asked, and clears the request, so that a taker
	 * finding the ring low while the filler pads asks again.
	 */
	bool wait_for_padding_request(std::chrono::microseconds timeout);

	uint64_t size() const { return mask_ + 1; }
	uint64_t padding_threshold() const { return threshold_; }
	/* IDs put and not claimed; exact only while nobody puts or takes. */
	uint64_t available() const
	{
		return tail_.value.load(std::memory_order_acquire) - cursor_.value.load(std::memory_order_acquire);
	}

private:
	enum SlotFlag : uint32_t
	{
		CanPut,
		CanTake,
	};

	struct alignas(cache_line_bytes) Slot
	{
		int64_t uid = 0;
		std::atomic<uint32_t> flag{CanPut};
	};

	struct alignas(cache_line_bytes) Counter
	{
		std::atomic<uint64_t> value{0};
	};

	void request_padding();

	std::unique_ptr<Slot[]> slots_;
	uint64_t mask_;
	uint64_t threshold_;
	Counter tail_;
	Counter cursor_;
	/* Set by the first taker to find the ring low; cleared by the filler. */
	alignas(cache_line_bytes) std::atomic<bool> padding_requested_{false};
	std::mutex filler_mutex_;
	std::condition_variable filler_wakeup_;
};

} // namespace uidgen
