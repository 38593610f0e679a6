/*
 * worker_funcs.cpp
 *	  uid_reclaim_workers(): the worker table's SQL-callable function.
 */
#include "layout/catalog.hpp"
#include "pg/guard.hpp"
#include "pg/identity.hpp"
#include "pg/pg_clock.hpp"
#include "pg/spi.hpp"
#include "worker_table/worker_table.hpp"

extern "C" {
#include "utils/timestamp.h"
}

using namespace uidgen;
using namespace uidgen::pg;

namespace {

int64_t
interval_ms(const Interval *interval)
{
	/* As PostgreSQL's interval comparison does: a month is 30 days. */
	return interval->time / 1000 + (int64_t{interval->month} * 30 + interval->day) * 86400 * 1000;
}

} // namespace

/*
 * uid_reclaim_workers(margin interval) returns int: releases the workers of
 * backends that died without releasing them, reusable once margin has
 * passed.
 */
UIDGEN_FUNCTION(uid_reclaim_workers)
{
	int64_t margin_ms = interval_ms(PG_GETARG_INTERVAL_P(0));
	constexpr int64_t max_margin_ms = INT64_C(366) * 86400 * 1000;

	if (margin_ms < 0 || margin_ms > max_margin_ms)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("margin must be between 0 and 1 year"),
				 errhint("A released worker is reused only once its margin has passed, and never before the "
						 "time reservation uidgen.reserved_until.")));

	int released = with_spi(Rights::Caller, [margin_ms] {
		Layout layout = read_layout(true);
		int64_t until_delta = layout.delta_at(backend_clock().now_ms()) +
							  layout.units_covering(margin_ms);

		return release_dead_workers(worker_table_relid(), database_identity(), until_delta);
	});

	PG_RETURN_INT32(released);
}
