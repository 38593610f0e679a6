/*
 * horizon_funcs.cpp
 *	  uid_safe_horizon().
 */
#include "backend_scope/horizon_lock.hpp"
#include "core/horizon.hpp"
#include "layout/catalog.hpp"
#include "pg/guard.hpp"
#include "pg/pg_clock.hpp"

extern "C" {
#include "access/xlog.h"
}

using namespace uidgen;
using namespace uidgen::pg;

/*
 * uid_safe_horizon() returns bigint: the highest ID that no transaction now
 * open in this database can still commit.  Rows at or below it that ever
 * commit are visible to every snapshot taken after it returns.
 */
UIDGEN_FUNCTION(uid_safe_horizon)
{
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("uid_safe_horizon() cannot be computed during recovery"),
				 errdetail("A standby does not see the transactions open on its primary."),
				 errhint("Call it on the primary.")));

	const Layout &layout = database_layout();
	/* The clock first: a transaction the scan misses marks itself, and issues, after this reading. */
	int64_t now_ms = backend_clock().now_ms();
	std::optional<int64_t> oldest = oldest_open_mark_ms();

	return Int64GetDatum(safe_horizon(layout, now_ms, oldest));
}
