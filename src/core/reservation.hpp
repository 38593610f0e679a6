/*
 * reservation.hpp
 *	  How far ahead a generator may issue time units, made durable first.
 *
 * A worker whose holder died without releasing it is reused only above
 * every time unit the holder can have issued.  The clock cannot say which
 * those were (it may have been stepped back across the crash), so a
 * generator issues only units its reservation covers, and the reservation
 * is recorded durably before they are issued (INV-9, INV-10).
 * Extending it is the rare slow path: the hot path compares
 * one number.
 */
#pragma once

#include <cstdint>
#include <vector>

namespace uidgen {

class TimeReservation
{
public:
	/*
	 * Makes every unit up to at least delta durably reserved and returns the
	 * last unit now covered (>= delta).  May throw; then nothing is covered
	 * beyond what was before.
	 */
	virtual int64_t extend(int64_t delta) = 0;

protected:
	/* As Clock's: not virtual, so that a reservation without members of its own is trivially destructible. */
	~TimeReservation() = default;
};

/* Reserves what it is asked plus a fixed window, and records each request; for tests. */
class ManualReservation : public TimeReservation
{
public:
	explicit ManualReservation(int64_t window = 0) : window_(window) {}

	int64_t extend(int64_t delta) override
	{
		requests_.push_back(delta);
		return delta + window_;
	}

	const std::vector<int64_t> &requests() const { return requests_; }

private:
	int64_t window_;
	std::vector<int64_t> requests_;
};

} // namespace uidgen
