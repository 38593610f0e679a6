/*
 * pg_clock.hpp
 *	  The system clock, with waits that a backend can be interrupted in.
 */
#pragma once

#include "core/clock.hpp"

namespace uidgen::pg {

/*
 * Reads CLOCK_REALTIME like SystemClock, but sleeps on the process latch so
 * that a query cancel, statement_timeout or termination ends the wait (as a
 * PostgreSQL error, thrown through the generator as PgError).
 */
class PgClock : public SystemClock
{
public:
	void sleep_ms(int64_t ms) override;
};

PgClock &backend_clock();

} // namespace uidgen::pg
