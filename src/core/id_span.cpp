/*
 * id_span.cpp
 *	  The number of UIDs in a span of time under a layout.
 */
#include "core/id_span.hpp"

#include "core/error.hpp"

#include <string>

#include "core/cpp_only.hpp"

namespace uidgen {

int64_t
ids_in_span(const Layout &layout, int64_t months, int64_t days, int64_t microseconds)
{
	constexpr int64_t us_per_day = INT64_C(86400000000);

	if (months != 0)
		throw Error(ErrorKind::InvalidParameter, "interval must not contain months or years",
					"Months and years have no fixed length; days are taken as 24 hours.",
					"Write the span in days, for example '30 days'.");

	int64_t day_us;
	int64_t total_us;

	if (__builtin_mul_overflow(days, us_per_day, &day_us) ||
		__builtin_add_overflow(day_us, microseconds, &total_us))
		throw Error(ErrorKind::TimeOutOfRange, "interval is out of range",
					"Its days and time add up to more than a bigint of microseconds.");
	if (total_us <= 0)
		throw Error(ErrorKind::InvalidParameter, "interval must be positive");

	int64_t unit_us = layout.unit_ms() * 1000;
	std::string unit = time_unit_name(layout.unit());

	if (total_us % unit_us != 0)
		throw Error(ErrorKind::InvalidParameter, "interval must be a whole number of " + unit + "s",
					"Layout " + layout.describe() + " counts time in whole " + unit + "s.");

	int64_t units = total_us / unit_us;

	if (units > layout.max_delta())
		throw Error(ErrorKind::TimeOutOfRange, "interval is longer than the layout's time field",
					"The " + std::to_string(layout.time_bits()) + " time bits of layout " + layout.describe() +
						" count at most " + std::to_string(layout.max_delta()) + " " + unit + "s.");
	/* units <= max_delta, so the shift stays within the layout's 63 bits. */
	return units << (layout.worker_bits() + layout.seq_bits());
}

} // namespace uidgen
