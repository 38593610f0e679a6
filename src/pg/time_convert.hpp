/*
 * time_convert.hpp
 *	  TimestampTz (microseconds since 2000-01-01) <-> Unix milliseconds.
 */
#pragma once

extern "C" {
#include "postgres.h"

#include "datatype/timestamp.h"
}

#include <cstdint>

namespace uidgen::pg {

constexpr int64_t unix_ms_at_pg_epoch = INT64_C(946684800000);

/* Rounds down to the millisecond. */
inline int64_t
timestamptz_to_unix_ms(TimestampTz ts)
{
	int64_t ms = ts / 1000;

	if (ts % 1000 < 0)
		ms -= 1;
	return ms + unix_ms_at_pg_epoch;
}

inline TimestampTz
unix_ms_to_timestamptz(int64_t unix_ms)
{
	return (unix_ms - unix_ms_at_pg_epoch) * 1000;
}

/* Whether unix_ms is a valid timestamptz (PostgreSQL's range ends in 294276 AD). */
inline bool
unix_ms_fits_timestamptz(int64_t unix_ms)
{
	int64_t since_pg_epoch;
	int64_t us;

	if (__builtin_sub_overflow(unix_ms, unix_ms_at_pg_epoch, &since_pg_epoch) ||
		__builtin_mul_overflow(since_pg_epoch, 1000, &us))
		return false;
	return IS_VALID_TIMESTAMP(us);
}

} // namespace uidgen::pg
