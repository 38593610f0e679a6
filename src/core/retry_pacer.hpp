/*
 * retry_pacer.hpp
 *	  When a process that keeps failing at the same call tries it again, and
 *	  whether it logs the failure.
 *
 * The registry agent retries a registry that fails: at once the first
 * time, then after a delay that starts at base_ms and doubles up to max_ms
 * while it fails, so that a dead registry is not asked (and its error not
 * logged) many times a second.  Sessions that wait for a worker may ask for
 * an attempt sooner, but at most one per base_ms.  An error the same as the
 * last one logged is logged again only after log_period_ms, with how many
 * times it recurred meanwhile.  Times are a monotonic clock's milliseconds,
 * passed in.  Plain data: no allocation, nothing throws.
 */
#pragma once

#include <cstdint>
#include <type_traits>

namespace uidgen {

class RetryPacer
{
public:
	RetryPacer(int64_t base_ms, int64_t max_ms) : base_ms_(base_ms), max_ms_(max_ms) {}

	/* An attempt ended at now_ms, well or not. */
	void
	attempt_ended(bool failed, int64_t now_ms)
	{
		last_end_ms_ = now_ms;
		delay_ms_ = !failed ? 0 : delay_ms_ == 0 ? base_ms_ : (delay_ms_ > max_ms_ / 2 ? max_ms_ : delay_ms_ * 2);
	}

	/* Whether to attempt at now_ms: always while nothing fails; asked for (wanted), at most once per base_ms. */
	bool
	may_attempt(int64_t now_ms, bool wanted) const
	{
		return now_ms >= next_attempt_ms(wanted);
	}

	/* When the next attempt is due (now or earlier while nothing fails). */
	int64_t
	next_attempt_ms(bool wanted) const
	{
		if (delay_ms_ == 0)
			return last_end_ms_;
		return last_end_ms_ + (wanted && base_ms_ < delay_ms_ ? base_ms_ : delay_ms_);
	}

	/* The delay after the last failure: 0 while nothing fails. */
	int64_t delay_ms() const { return delay_ms_; }

private:
	int64_t base_ms_;
	int64_t max_ms_;
	int64_t delay_ms_ = 0;
	int64_t last_end_ms_ = 0;
};
static_assert(std::is_trivially_destructible_v<RetryPacer>);

/*
 * Whether to log an error now: a different one at once, the same one (by
 * its hash, which the caller computes) at most once per period_ms;
 * repeats() is how many were not logged since the last one that was.
 */
class RepeatFilter
{
public:
	explicit RepeatFilter(int64_t period_ms) : period_ms_(period_ms) {}

	bool
	should_log(uint64_t hash, int64_t now_ms)
	{
		if (logged_any_ && hash == hash_ && now_ms - logged_ms_ < period_ms_)
		{
			suppressed_++;
			return false;
		}
		repeats_ = hash == hash_ && logged_any_ ? suppressed_ : 0;
		suppressed_ = 0;
		hash_ = hash;
		logged_ms_ = now_ms;
		logged_any_ = true;
		return true;
	}

	/* How many of the error just logged went unlogged since it was last logged. */
	int64_t repeats() const { return repeats_; }

	/* Forgets the last error: the next is logged whatever it is (after a success). */
	void
	reset()
	{
		logged_any_ = false;
		suppressed_ = 0;
	}

private:
	int64_t period_ms_;
	uint64_t hash_ = 0;
	int64_t logged_ms_ = 0;
	int64_t suppressed_ = 0;
	int64_t repeats_ = 0;
	bool logged_any_ = false;
};
static_assert(std::is_trivially_destructible_v<RepeatFilter>);

} // namespace uidgen
