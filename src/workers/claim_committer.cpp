/*
 * claim_committer.cpp
 *	  The claim committer: a background worker that writes one claim row for
 *	  a backend and commits it, in a transaction of its own.
 */
#include "workers/claim_committer.hpp"

#include "pg/database_worker.hpp"
#include "pg/identity.hpp"
#include "pg/spi.hpp"
#include "registry/lease_table.hpp"
#include "workers/worker_table.hpp"

extern "C" {
#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"
}

#include <type_traits>

namespace uidgen::pg {

namespace {

/* What the backend asks for, passed in bgw_extra. */
struct ClaimRequest
{
	Oid database;
	Oid role;
	int32 pid;
	int64_t worker;
	TimestampTz backend_start;
	char application_name[NAMEDATALEN];
};
static_assert(std::is_trivially_destructible_v<ClaimRequest> && std::is_trivially_copyable_v<ClaimRequest>);
static_assert(sizeof(ClaimRequest) <= BGW_EXTRALEN, "a claim request fits in bgw_extra");

/* Waited for by a registration, so that nothing it holds can hold the committer for long. */
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
commit_claim_apart(int64_t worker)
{
	ClaimHolder holder = this_backend();
	ClaimRequest request;
	BackgroundWorker bgw;
	BackgroundWorkerHandle *handle;

	memset(&request, 0, sizeof(request));
	request.database = MyDatabaseId;
	request.role = holder.role;
	request.pid = holder.pid;
	request.worker = worker;
	request.backend_start = holder.backend_start;
	strlcpy(request.application_name, holder.application_name, sizeof(request.application_name));

	describe_database_worker(&bgw, "uidgen_claim_committer_main", "uidgen claim committer");
	snprintf(bgw.bgw_name, sizeof(bgw.bgw_name), "uidgen claim committer for PID %d", MyProcPid);
	memcpy(bgw.bgw_extra, &request, sizeof(request));
	bgw.bgw_notify_pid = MyProcPid;

	if (!register_committer(&bgw, &handle))
		return false;
	if (WaitForBackgroundWorkerShutdown(handle) != BGWH_STOPPED)
		return false;
	pfree(handle);
	return claim_is_committed(worker);
}

} // namespace uidgen::pg

using namespace uidgen::pg;

void
uidgen_claim_committer_main(Datum)
{
	ClaimRequest request;

	memcpy(&request, MyBgworkerEntry->bgw_extra, sizeof(request));
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(request.database, InvalidOid, 0);
	pgstat_report_appname("uidgen claim committer");

	/*
	 * On disk before the backend issues under the claim, as the time
	 * reservation's raises are (a local flush: a synchronous standby that
	 * does not answer must not hold a registration); never waiting long for
	 * a lock.
	 */
	SetConfigOption("synchronous_commit", "local", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("default_transaction_read_only", "off", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("default_transaction_isolation", "read committed", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("lock_timeout", committer_lock_timeout, PGC_SUSET, PGC_S_OVERRIDE);

	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	ClaimHolder holder{request.pid, request.backend_start, request.role, request.application_name};
	int64_t worker = request.worker;
	with_spi(Rights::Owner, [worker, &holder] { write_claim(worker, database_identity(), holder); });
	PopActiveSnapshot();
	CommitTransactionCommand();
	proc_exit(0);
}
