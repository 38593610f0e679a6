/*
 * dropped_databases.hpp
 *	  Which of this server life's grants went to databases that were
 *	  dropped since: their workers may go to other databases (Grant), and a
 *	  block all of whose grants are such goes back to the registry
 *	  (lease_bookkeeping.hpp).
 *
 * A DROP DATABASE marks the grants of its database when it commits, in the
 * backend that ran it; a backend that takes a worker also looks up every
 * granted database in the catalog, for drops this server did not see (a
 * drop that failed after its commit, say).  Either way a grant is marked
 * only if it still went to the same database under the same stamp.
 */
#pragma once

#include "registry/lease_table.hpp"

extern "C" {
#include "postgres.h"

#include "access/xact.h"
}

namespace uidgen::pg {

/* Marks the grants of databases that pg_database no longer has; not under the table's lock. */
void mark_dropped_databases(LeaseTable *state);

/* From the object-access hook: a DROP DATABASE of database begins in this transaction. */
void database_drop_begins(Oid database);

/* At the end of a transaction: marks the grants of the database it dropped, if it committed. */
void dropped_databases_at_xact_event(XactEvent event);

} // namespace uidgen::pg
