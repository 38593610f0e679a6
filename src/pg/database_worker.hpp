/*
 * database_worker.hpp
 *	  The one way uidgen describes a dynamic background worker that connects
 *	  to a database: a keeper, a claim committer.
 */
#pragma once

extern "C" {
#include "postgres.h"

#include "postmaster/bgworker.h"
}

#include <cstring>

namespace uidgen::pg {

/*
 * Fills bgw for a worker of this library's function, of type type, never
 * restarted; the caller adds its name, arguments and notify pid.
 */
inline void
describe_database_worker(BackgroundWorker *bgw, const char *function, const char *type)
{
	memset(bgw, 0, sizeof(*bgw));
	bgw->bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw->bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw->bgw_restart_time = BGW_NEVER_RESTART;
	strlcpy(bgw->bgw_library_name, "uidgen", sizeof(bgw->bgw_library_name));
	strlcpy(bgw->bgw_function_name, function, sizeof(bgw->bgw_function_name));
	strlcpy(bgw->bgw_type, type, sizeof(bgw->bgw_type));
}

/*
 * A background worker connected to a database must not hold it open: DROP
 * DATABASE, ALTER DATABASE ... RENAME and CREATE DATABASE ... TEMPLATE wait a
 * few seconds for other connections and then fail.  Each of them first takes
 * a lock on the database object that conflicts with the one a connecting
 * backend takes (RowExclusiveLock); a worker that holds that lock for its
 * session sees them wait for it (database_wanted_elsewhere()) and leaves.
 */
void hold_database_lock();
bool database_wanted_elsewhere();
/* At exit: nothing in PostgreSQL releases a session lock of the default lock method then. */
void release_database_lock();

} // namespace uidgen::pg
