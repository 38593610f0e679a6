/*
 * pg_clock.cpp
 *	  Interruptible waits for the generators.
 */
#include "pg/pg_clock.hpp"

#include "pg/guard.hpp"
#include "pg/settings.hpp"

extern "C" {
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
}

#include <algorithm>
#include <ctime>

namespace uidgen::pg {

int64_t
PgClock::now_ms()
{
	return SystemClock::now_ms() + debug_clock_offset_ms;
}

void
PgClock::sleep_ms(int64_t ms)
{
	/* WaitLatch takes a long; the generator re-reads the clock after any wake-up. */
	long timeout = static_cast<long>(std::min<int64_t>(ms, 1000));

	pg_call([timeout] {
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, timeout, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	});
}

PgClock the_backend_clock;

int64_t
monotonic_ms()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

} // namespace uidgen::pg
