/*
 * database_worker.cpp
 *	  The lock by which a background worker connected to a database notices
 *	  that a command waits to drop, rename or copy the database.
 */
#include "pg/database_worker.hpp"

#include "pg/compat.hpp"

extern "C" {
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
}

namespace uidgen::pg {

namespace {

/* The lock a connecting backend takes on its database, and DROP DATABASE and its kin too. */
LOCKTAG
database_tag()
{
	LOCKTAG tag;

	SET_LOCKTAG_OBJECT(tag, InvalidOid, DatabaseRelationId, MyDatabaseId, 0);
	return tag;
}

} // namespace

void
hold_database_lock()
{
	LockSharedObjectForSession(DatabaseRelationId, MyDatabaseId, 0, RowExclusiveLock);
}

void
release_database_lock()
{
	if (lock_held_by_me(database_tag(), RowExclusiveLock))
		UnlockSharedObjectForSession(DatabaseRelationId, MyDatabaseId, 0, RowExclusiveLock);
}

bool
database_wanted_elsewhere()
{
	LOCKTAG tag = database_tag();

	return LockHasWaiters(&tag, RowExclusiveLock, true);
}

} // namespace uidgen::pg
