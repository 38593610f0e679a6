/*
 * dropped_databases.cpp
 *	  Marking the grants of dropped databases.
 */
#include "registry/dropped_databases.hpp"

#include "pg/xact_events.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/lwlock.h"
#include "utils/inval.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
}

#include <algorithm>
#include <cstring>

namespace uidgen::pg {

namespace {

/*
 * The database a DROP DATABASE of this transaction removes, and the last
 * grant stamp given when it began: grants to it up to that stamp are the
 * dropped database's, and none can be given to it after (the drop waits
 * for every session connected to it), nor to a new database of the same
 * OID before the drop commits.
 */
Oid dropping = InvalidOid;
uint64 dropping_stamps = 0;

} // namespace

/*
 * Marks the grants of databases that were dropped.  Which databases exist
 * is looked up without the table's lock (a catalog lookup may raise an
 * error); a grant is marked only if it still went to the same database by
 * the same stamp, so that one given since to a database of the same OID
 * is not.
 */
void
mark_dropped_databases(LeaseTable *state)
{
	/* palloc'd, not std::vector: a catalog lookup may raise an error through this frame. */
	int *index = static_cast<int *>(palloc(sizeof(int) * max_grants));
	uint64 *stamp = static_cast<uint64 *>(palloc(sizeof(uint64) * max_grants));
	Oid *database = static_cast<Oid *>(palloc(sizeof(Oid) * max_grants));
	Oid *gone = static_cast<Oid *>(palloc(sizeof(Oid) * max_grants));
	int nseen = 0;
	int ngone = 0;

	LWLockAcquire(&state->lock, LW_SHARED);
	for (int i = 0; i < state->ngrants; i++)
	{
		const Grant &g = state->grants[i];

		if (g.dropped || g.database == MyDatabaseId)
			continue;
		index[nseen] = i;
		stamp[nseen] = g.stamp;
		database[nseen++] = g.database;
	}
	LWLockRelease(&state->lock);

	/*
	 * A database created since this backend last read the catalog must not
	 * look dropped: a cached miss, or a catalog snapshot of a transaction
	 * under REPEATABLE READ, would mark its live grants (test 083).
	 */
	AcceptInvalidationMessages();
	InvalidateCatalogSnapshot();
	memcpy(gone, database, sizeof(Oid) * nseen);
	std::sort(gone, gone + nseen);
	Oid *end = std::unique(gone, gone + nseen);
	for (Oid *d = gone; d < end; d++)
	{
		if (!SearchSysCacheExists1(DATABASEOID, ObjectIdGetDatum(*d)))
			gone[ngone++] = *d;
	}

	if (ngone > 0)
	{
		LWLockAcquire(&state->lock, LW_EXCLUSIVE);
		for (int k = 0; k < nseen; k++)
		{
			Grant &g = state->grants[index[k]];

			if (g.stamp == stamp[k] && g.database == database[k] && std::binary_search(gone, gone + ngone, database[k]))
				g.dropped = true;
		}
		LWLockRelease(&state->lock);
	}
	pfree(index);
	pfree(stamp);
	pfree(database);
	pfree(gone);
}

void
database_drop_begins(Oid database)
{
	LeaseTable *state = lease_table();

	if (state == nullptr)
		return;
	LWLockAcquire(&state->lock, LW_SHARED);
	dropping_stamps = state->grant_stamps;
	LWLockRelease(&state->lock);
	dropping = database;
}

void
dropped_databases_at_xact_event(XactEvent event)
{
	LeaseTable *state = lease_table();
	bool marked = false;

	if (dropping == InvalidOid || !ends_transaction(event))
		return;
	if (event == XACT_EVENT_COMMIT && state != nullptr)
	{
		LWLockAcquire(&state->lock, LW_EXCLUSIVE);
		for (int i = 0; i < state->ngrants; i++)
		{
			Grant &g = state->grants[i];

			if (g.database == dropping && g.stamp <= dropping_stamps && !g.dropped)
				g.dropped = marked = true;
		}
		LWLockRelease(&state->lock);
	}
	dropping = InvalidOid;
	/* The agent gives back a block this emptied (lease_bookkeeping.hpp). */
	if (marked)
		wake_agent();
}

} // namespace uidgen::pg
