/*
 * committer.hpp
 *	  What the committers share: a background worker started for one write
 *	  that a backend needs committed in a transaction of its own before it
 *	  issues (claim_committer.hpp: a reused worker's claim;
 *	  registry/membership/join_committer.hpp: a database's join of its
 *	  registry).  It stays with the worker table, below the join committer,
 *	  which includes it.
 */
#pragma once

#include "pg/guard.hpp"
#include "pg/spi.hpp"

extern "C" {
#include "postgres.h"

#include "access/xact.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "utils/snapmgr.h"
}

#include <cstddef>
#include <cstring>
#include <type_traits>

namespace uidgen::pg {

/*
 * Starts the committer whose entry point is this library's function, of
 * backend type type, with request (at most BGW_EXTRALEN bytes) in its
 * bgw_extra, waiting a little for a free background worker slot; then waits
 * for it to end.  True once it ended; false when no slot came
 * (max_worker_processes) or the postmaster died.  A cancel during the wait
 * is an error; the committer may still commit.
 */
bool run_committer(const char *function, const char *type, const void *request, size_t size);

/*
 * A committer's start: connects to database, and sets what every commit of a committer needs (flushed to
 * local disk, writable, never waiting long for a lock).
 */
void begin_committer_session(Oid database, const char *application_name);

/*
 * A committer's whole life: its Request (with a field database) out of
 * bgw_extra, its session, write(request) inside an SPI connection as the
 * extension owner in a transaction of its own, committed; then it exits.
 */
template <typename Request, typename Write>
void
committer_main(const char *application_name, Write write)
{
	static_assert(std::is_trivially_copyable_v<Request> && sizeof(Request) <= BGW_EXTRALEN);
	Request request;

	memcpy(&request, MyBgworkerEntry->bgw_extra, sizeof(request));
	begin_committer_session(request.database, application_name);
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	/* As cpp_entry() does: no C++ exception leaves, and the error is raised after the catch block. */
	bool failed = false;
	try
	{
		with_spi(Rights::Owner, [&request, &write] { write(request); });
	}
	catch (...)
	{
		save_current_exception();
		failed = true;
	}
	if (failed)
		raise_saved_error();
	PopActiveSnapshot();
	CommitTransactionCommand();
	proc_exit(0);
}

} // namespace uidgen::pg
