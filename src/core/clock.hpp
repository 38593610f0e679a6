/*
 * clock.hpp
 *	  Where the generators read the time and how they wait.
 *
 * The generators never read the system clock directly, so that unit tests
 * can drive them with a ManualClock and the server can make waiting
 * interruptible (src/pg/pg_clock.cpp).
 */
#pragma once


#include <cstdint>
#include <vector>
#include <type_traits>

namespace uidgen {

class Clock
{
public:
	/* Wall-clock time: Unix milliseconds. */
	virtual int64_t now_ms() = 0;

	/*
	 * Waits about ms milliseconds (ms > 0).  It may return early; callers
	 * read the time again and decide whether to wait more.
	 */
	virtual void sleep_ms(int64_t ms) = 0;

protected:
	/*
	 * Not virtual, and protected so that no clock is deleted through this
	 * type: a clock without members of its own is then trivially
	 * destructible, as everything a PostgreSQL error may longjmp over must be
	 * (INV-15).
	 */
	~Clock() = default;
};

/* Sleeps on clock until it reads target_ms or later; whatever sleep_ms throws passes through. */
void wait_until_ms(Clock &clock, int64_t target_ms);

/* CLOCK_REALTIME (a vDSO call on Linux) and nanosleep. */
class SystemClock : public Clock
{
public:
	int64_t now_ms() override;
	void sleep_ms(int64_t ms) override;
};
static_assert(std::is_trivially_destructible_v<SystemClock>);

/* A clock that moves only when told to, or when slept on; for tests. */
class ManualClock : public Clock
{
public:
	explicit ManualClock(int64_t start_ms) : now_(start_ms) {}

	int64_t now_ms() override { return now_; }
	void sleep_ms(int64_t ms) override
	{
		sleeps_.push_back(ms);
		now_ += ms;
	}

	void set(int64_t ms) { now_ = ms; }
	void advance(int64_t ms) { now_ += ms; }
	const std::vector<int64_t> &sleeps() const { return sleeps_; }
	int64_t slept_ms() const
	{
		int64_t total = 0;
		for (int64_t ms : sleeps_)
			total += ms;
		return total;
	}

private:
	int64_t now_;
	std::vector<int64_t> sleeps_;
};

} // namespace uidgen
