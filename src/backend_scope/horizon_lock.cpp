/*
 * horizon_lock.cpp
 *	  The horizon marks of transactions that issue IDs, and their scan.
 */
#include "backend_scope/horizon_lock.hpp"

#include "pg/compat.hpp"
#include "pg/guard.hpp"
#include "pg/pg_clock.hpp"
#include "pg/xact_events.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/resowner.h"
}

namespace uidgen::pg {

namespace {

constexpr uint16 horizon_key_kind = 5;
/* Shared: marks of the same millisecond never conflict, and nothing takes a stronger one. */
constexpr LOCKMODE horizon_lock_mode = ShareLock;

} // namespace

void
mark_transaction_for_horizon()
{
	/* Read before the lock is visible: every ID issued after it lies at or above issue_floor() of it. */
	int64_t now_ms = backend_clock().now_ms();
	LOCKTAG tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, static_cast<uint32>(static_cast<uint64_t>(now_ms) >> 32),
						 static_cast<uint32>(static_cast<uint64_t>(now_ms)), horizon_key_kind);
	/* The top-level transaction's, so that a subtransaction's abort keeps it. */
	ResourceOwner saved = CurrentResourceOwner;
	LockAcquireResult result;

	CurrentResourceOwner = TopTransactionResourceOwner;
	try
	{
		result = pg_call([&tag] { return lock_acquire_nowait(tag, horizon_lock_mode, false, true); });
	}
	catch (...)
	{
		CurrentResourceOwner = saved;
		throw;
	}
	CurrentResourceOwner = saved;
	if (result == LOCKACQUIRE_NOT_AVAIL)
		pg_call([] {
			ereport(ERROR,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("could not mark this transaction for uid_safe_horizon()"),
					 errdetail("Another session holds an exclusive advisory lock of uidgen's key kind %d.",
							   horizon_key_kind)));
		});
	horizon_marked = true;
}

void
horizon_at_xact_event(XactEvent event)
{
	if (ends_transaction(event))
		horizon_marked = false;
}

std::optional<int64_t>
oldest_open_mark_ms()
{
	/* Every lock of every backend and prepared transaction, taken under all partition locks at once. */
	const LockData *data = pg_call([] { return GetLockStatusData(); });
	std::optional<int64_t> oldest;

	for (int i = 0; i < data->nelements; i++)
	{
		const LOCKTAG &tag = data->locks[i].locktag;

		if (tag.locktag_type != LOCKTAG_ADVISORY || tag.locktag_field4 != horizon_key_kind ||
			tag.locktag_field1 != MyDatabaseId)
			continue;

		int64_t ms = static_cast<int64_t>((static_cast<uint64_t>(tag.locktag_field2) << 32) | tag.locktag_field3);

		if (!oldest || ms < *oldest)
			oldest = ms;
	}
	return oldest;
}

} // namespace uidgen::pg
