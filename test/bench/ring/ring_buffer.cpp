/*
 * ring_buffer.cpp
 *	  Putting IDs into, and taking them out of, a RingBuffer.
 */
#include "ring/ring_buffer.hpp"

#include "core/error.hpp"

#include <string>

#include "core/cpp_only.hpp"

namespace uidgen {

RingBuffer::RingBuffer(uint64_t size, int padding_percent)
{
	if (size < 2 || (size & (size - 1)) != 0)
		throw Error(ErrorKind::InvalidParameter, "ring buffer size " + std::to_string(size) + " is not a power of two",
					{}, "Slots are found by masking a counter, which needs a power of two of at least 2.");
	if (padding_percent < 1 || padding_percent > 99)
		throw Error(ErrorKind::InvalidParameter,
					"padding percent " + std::to_string(padding_percent) + " is out of range",
					"It must be between 1 and 99.");
	slots_ = std::make_unique<Slot[]>(size);
	mask_ = size - 1;
	threshold_ = size * static_cast<uint64_t>(padding_percent) / 100;
}

bool
RingBuffer::put(int64_t uid)
{
	/* Only the filler moves the tail: its own last store is what it reads. */
	uint64_t tail = tail_.value.load(std::memory_order_relaxed);
	Slot &slot = slots_[tail & mask_];

	/*
	 * CanPut means the taker of ID tail - size has read this slot, so it also
	 * means the ring is not full: no need to read the takers' cursor.  The
	 * acquire pairs with that taker's release, so its read comes before our
	 * write.
	 */
	if (slot.flag.load(std::memory_order_acquire) != CanPut)
		return false;
	slot.uid = uid;
	slot.flag.store(CanTake, std::memory_order_relaxed);
	/* Publishes the slot: a taker that sees the new tail sees the uid. */
	tail_.value.store(tail + 1, std::memory_order_release);
	return true;
}

bool
RingBuffer::take(int64_t *uid)
{
	uint64_t claimed = cursor_.value.load(std::memory_order_relaxed);
	uint64_t tail;

	do
	{
		tail = tail_.value.load(std::memory_order_acquire);
		/*
		 * ">=": the cursor never passes the tail, but a relaxed read of it may
		 * be newer than our read of the tail; that is empty for us too.
		 */
		if (claimed >= tail)
		{
			request_padding();
			return false;
		}
	} while (!cursor_.value.compare_exchange_weak(claimed, claimed + 1, std::memory_order_relaxed,
												  std::memory_order_relaxed));

	if (tail - claimed - 1 < threshold_)
		request_padding();

	/*
	 * Ours alone: the filler cannot write this slot again before we set it
	 * CanPut, nor another taker claim it before the filler has.
	 */
	Slot &slot = slots_[claimed & mask_];

	*uid = slot.uid;
	slot.flag.store(CanPut, std::memory_order_release);
	return true;
}

void
RingBuffer::request_padding()
{
	/* Most takes below the threshold find the request made: a read, no write. */
	if (padding_requested_.load(std::memory_order_relaxed) ||
		padding_requested_.exchange(true, std::memory_order_relaxed))
		return;

	/*
	 * The filler tests the request under the mutex before it waits: taking
	 * the mutex here orders our request before that test or after the wait
	 * has begun, so the notification cannot fall between them.
	 */
	{
		std::lock_guard<std::mutex> lock(filler_mutex_);
	}
	filler_wakeup_.notify_one();
}

bool
RingBuffer::wait_for_padding_request(std::chrono::microseconds timeout)
{
	{
		std::unique_lock<std::mutex> lock(filler_mutex_);

		filler_wakeup_.wait_for(lock, timeout,
								[this] { return padding_requested_.load(std::memory_order_relaxed); });
	}
	return padding_requested_.exchange(false, std::memory_order_relaxed);
}

} // namespace uidgen
