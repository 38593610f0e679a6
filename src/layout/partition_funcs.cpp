/*
 * partition_funcs.cpp
 *	  uid_interval(): the number of IDs in a span of time, for partitioning
 *	  a table by ranges of its uid_next() key (src/core/id_span.hpp).
 */
#include "core/id_span.hpp"
#include "layout/catalog.hpp"
#include "pg/guard.hpp"

extern "C" {
#include "utils/timestamp.h"
}

using namespace uidgen;
using namespace uidgen::pg;

/*
 * uid_interval(span interval) returns bigint: span in the database's time
 * units, shifted above the worker and sequence fields.  Days are 24 hours;
 * months are refused.
 */
UIDGEN_FUNCTION(uid_interval)
{
	const Interval *span = PG_GETARG_INTERVAL_P(0);

	/* PostgreSQL 17's infinite intervals: every field at its limit. */
	if ((span->month == PG_INT32_MIN && span->day == PG_INT32_MIN && span->time == PG_INT64_MIN) ||
		(span->month == PG_INT32_MAX && span->day == PG_INT32_MAX && span->time == PG_INT64_MAX))
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("interval must be finite")));
	PG_RETURN_INT64(ids_in_span(decoding_layout(), span->month, span->day, span->time));
}
