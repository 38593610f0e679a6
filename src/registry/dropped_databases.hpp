/*
 * dropped_databases.hpp
 *	  Which of this server life's grants went to databases that were
 *	  dropped since: their workers may go to other databases (Grant), and a
 *	  block all of whose grants are such goes back to the registry
 *	  (lease_bookkeeping.hpp).
 *
 * A DROP DATABASE marks the grants of its database when it commits, in the
 * backend that ran it: the object-access hook notes the drop, the commit
 * callback marks.  Every backend of a server with a lease table has both
 * (uidgen is preloaded), and a server that crashes between the commit and
 * the mark starts a new life with a new table, so no drop goes unmarked.
 * Only grants given before the drop began are marked: a new database of the
 * same OID is never taken for the dropped one.  No catalog is read, so no
 * stale view of pg_database can take a live database for a dropped one.
 */
#pragma once

#include "registry/lease_table.hpp"

extern "C" {
#include "postgres.h"

#include "access/xact.h"
}

namespace uidgen::pg {

/* From the object-access hook: a DROP DATABASE of database begins in this transaction. */
void database_drop_begins(Oid database);

/* At the end of a transaction: marks the grants of the database it dropped, if it committed. */
void dropped_databases_at_xact_event(XactEvent event);

} // namespace uidgen::pg
