/*
 * clock.cpp
 *	  The system clock.
 */
#include "core/clock.hpp"

#include "core/cpp_only.hpp"

#include <cerrno>
#include <ctime>

namespace uidgen {

void
wait_until_ms(Clock &clock, int64_t target_ms)
{
	for (;;)
	{
		int64_t remaining = target_ms - clock.now_ms();

		if (remaining <= 0)
			return;
		clock.sleep_ms(remaining);
	}
}

int64_t
SystemClock::now_ms()
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

void
SystemClock::sleep_ms(int64_t ms)
{
	struct timespec ts;

	ts.tv_sec = static_cast<time_t>(ms / 1000);
	ts.tv_nsec = static_cast<long>(ms % 1000) * 1000000;
	/* An early return (EINTR) is allowed: callers re-read the clock. */
	nanosleep(&ts, nullptr);
}

} // namespace uidgen
