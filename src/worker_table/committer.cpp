/*
 * committer.cpp
 *	  Starting a committer and waiting for it; a committer's session.
 */
#include "worker_table/committer.hpp"

#include "pg/database_worker.hpp"
#include "pg/pg_clock.hpp"
#include "registry/lease_table.hpp"

extern "C" {
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/wait_event.h"
}

namespace uidgen::pg {

namespace {

/* Waited for by a registration, so that nothing it holds can hold a committer for long. */
constexpr const char *committer_lock_timeout = "10s";

/*
 * How long a registration waits for a free background worker slot: a slot
 * stays taken for a moment after its worker exits, until the postmaster
 * has reaped it, so registrations that churn find them all taken now and
 * then.
 */
constexpr int64_t slot_wait_ms = 1000;
constexpr long slot_poll_ms = 10;

/* Registers bgw, waiting a little for a free slot; false when none came. */
bool
register_committer(BackgroundWorker *bgw, BackgroundWorkerHandle **handle)
{
	int64_t until = monotonic_ms() + slot_wait_ms;

	while (!RegisterDynamicBackgroundWorker(bgw, handle))
	{
		if (max_worker_processes == 0 || monotonic_ms() >= until)
			return false;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, slot_poll_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	return true;
}

} // namespace

bool
run_committer(const char *function, const char *type, const void *request, size_t size)
{
	BackgroundWorker bgw;
	BackgroundWorkerHandle *handle;

	Assert(size <= BGW_EXTRALEN);
	describe_database_worker(&bgw, function, type);
	snprintf(bgw.bgw_name, sizeof(bgw.bgw_name), "%s for PID %d", type, MyProcPid);
	memcpy(bgw.bgw_extra, request, size);
	bgw.bgw_notify_pid = MyProcPid;

	if (!register_committer(&bgw, &handle))
		return false;
	if (WaitForBackgroundWorkerShutdown(handle) != BGWH_STOPPED)
		return false;
	pfree(handle);
	return true;
}

void
begin_committer_session(Oid database, const char *application_name)
{
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	/*
	 * On disk before the backend issues under what it commits, as the time
	 * reservation's raises are (a local flush: a synchronous standby that
	 * does not answer must not hold a registration); never waiting long for
	 * a lock, from the start: connecting reads catalogs, whose locks the
	 * backend's transaction may hold (LOCK pg_class), and the backend waits
	 * for us (test 068).
	 */
	SetConfigOption("synchronous_commit", "local", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("default_transaction_read_only", "off", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("default_transaction_isolation", "read committed", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("lock_timeout", committer_lock_timeout, PGC_SUSET, PGC_S_OVERRIDE);

	BackgroundWorkerInitializeConnectionByOid(database, InvalidOid, 0);
	pgstat_report_appname(application_name);
}

} // namespace uidgen::pg
