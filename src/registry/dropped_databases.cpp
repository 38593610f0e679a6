/*
 * dropped_databases.cpp
 *	  Marking the grants of a dropped database as the drop commits.
 */
#include "registry/dropped_databases.hpp"

#include "pg/xact_events.hpp"

extern "C" {
#include "storage/lwlock.h"
}

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
