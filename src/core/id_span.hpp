/*
 * id_span.hpp
 *	  How many UIDs a span of time covers: the width of a time partition.
 *
 * Under a layout, the UIDs of one time unit are (worker, sequence) pairs
 * below 1 << (worker_bits + seq_bits), so a span of n whole units covers
 * exactly n << (worker_bits + seq_bits) IDs, and uid_min() of any instant is
 * delta << (worker_bits + seq_bits): a multiple of the span whenever delta
 * is a multiple of n.  That is what lets ID ranges of equal width (pg_partman's
 * id partitions, which start at multiples of the width from 0) be equal
 * spans of time that start at the layout's epoch.
 */
#pragma once

#include "core/layout.hpp"

#include <cstdint>

namespace uidgen {

/*
 * The number of UIDs in a span of months, days (taken as 24 hours each) and
 * microseconds, as PostgreSQL's interval keeps them.  Throws
 * Error(InvalidParameter) for months (which have no fixed length), a span
 * that is not positive or not a whole number of the layout's units, and
 * Error(TimeOutOfRange) for one beyond the layout's time field.
 */
int64_t ids_in_span(const Layout &layout, int64_t months, int64_t days, int64_t microseconds);

} // namespace uidgen
