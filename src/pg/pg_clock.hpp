/*
 * pg_clock.hpp
 *	  The system clock, with waits that a backend can be interrupted in.
 */
#pragma once

#include "core/clock.hpp"

#include <type_traits>

namespace uidgen::pg {

/*
 * Reads CLOCK_REALTIME like SystemClock, but sleeps on the process latch so
 * that a query cancel, statement_timeout or termination ends the wait (as a
 * PostgreSQL error, thrown through the generator as PgError).
 */
class PgClock final : public SystemClock
{
public:
	int64_t now_ms() override;
	void sleep_ms(int64_t ms) override;
};
static_assert(std::is_trivially_destructible_v<PgClock>);

/* The one clock of the backend; a plain object, no initialisation guard on the hot path. */
extern PgClock the_backend_clock;

inline PgClock &
backend_clock()
{
	return the_backend_clock;
}

/*
 * Milliseconds of CLOCK_MONOTONIC, the same in every process of the
 * machine and never stepped: what leases are timed by on a member.
 */
int64_t monotonic_ms();

} // namespace uidgen::pg
