/*
 * backend.cpp
 *	  The per-backend generator and the life of its worker claim.
 *
 * A backend registers on its first uid_next() (registry.cpp) and keeps its
 * worker for life.  What can happen to the claim afterwards is followed
 * here, through PostgreSQL's transaction callbacks:
 *
 *	- the claim row is written in the transaction that issues the first ID,
 *	  and again in every later transaction that issues one, until one of
 *	  them commits; a rolled-back subtransaction that wrote it undoes it;
 *	- PREPARE TRANSACTION is refused while the claim is written but not yet
 *	  committed, because the prepared transaction would keep the claim row
 *	  locked and undecided while the backend goes on issuing IDs;
 *	- every top-level transaction end takes back the session locks that an
 *	  abort, DISCARD ALL or pg_advisory_unlock_all() released (worker_lock.hpp);
 *	- at exit, a transaction of its own marks the worker released with the
 *	  last time unit it issued.
 */
#include "pg/backend.hpp"

#include "pg/catalog.hpp"
#include "pg/guard.hpp"
#include "pg/pg_clock.hpp"
#include "pg/registry.hpp"
#include "pg/settings.hpp"
#include "pg/spi.hpp"
#include "pg/worker_lock.hpp"

extern "C" {
#include "access/xlog.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
}

#include <new>
#include <optional>

/* PostgreSQL calls these through pointers: C linkage (defined at the end). */
extern "C" {
static void uidgen_xact_callback(XactEvent event, void *arg);
static void uidgen_subxact_callback(SubXactEvent event, SubTransactionId subid, SubTransactionId parent_subid,
									void *arg);
static void uidgen_resource_release_callback(ResourceReleasePhase phase, bool is_commit, bool is_top_level,
											 void *arg);
static void uidgen_release_at_exit(int code, Datum arg);
static void uidgen_unlock_at_exit(int code, Datum arg);
static void uidgen_registry_relcache_callback(Datum arg, Oid relid);
}

namespace uidgen::pg {

namespace detail {
bool ready_to_issue = false;
Generator *generator = nullptr;
int64_t last_uid = 0;
bool have_last_uid = false;
} // namespace detail

namespace {

using detail::generator;

std::optional<Generator> generator_storage;
Oid registry_relid = InvalidOid;

/* The claim is in a committed row. */
bool claim_durable = false;
/* The subtransaction of the current transaction that wrote the claim, if any. */
SubTransactionId claim_written_in = InvalidSubTransactionId;
/* A session lock of the worker could not be taken back. */
bool locks_lost = false;

/*
 * Workers this backend had to give up because it could not take their locks
 * back.  It keeps what locks it still has on them and releases them at exit
 * with the last time unit it issued.
 */
struct RetiredWorker
{
	int64_t worker;
	int64_t last_delta;
};
constexpr int max_retired_workers = 16;
RetiredWorker retired[max_retired_workers];
int retired_count = 0;

bool exit_callback_registered = false;

/* A relcache invalidation of uidgen.worker_node: check it is still ours. */
bool registry_may_have_changed = false;

void
update_readiness()
{
	detail::ready_to_issue = generator != nullptr && !locks_lost && !registry_may_have_changed &&
							 (claim_durable || claim_written_in != InvalidSubTransactionId);
}

int64_t
borrow_units(const Layout &layout)
{
	return (int64_t{max_borrow_ms} + layout.unit_ms() - 1) / layout.unit_ms();
}

void
write_claim_as_owner(int64_t worker)
{
	OwnerContext owner;

	SPI_connect();
	begin_as_owner(&owner);
	write_claim(worker, database_identity());
	end_as_owner(&owner);
	SPI_finish();
	claim_written_in = GetCurrentSubTransactionId();
}

void
retire_current_worker()
{
	if (retired_count == max_retired_workers)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("this session lost the claims of too many uidgen workers"),
				 errhint("Start a new session.")));
	retired[retired_count++] = RetiredWorker{generator->worker_id(), generator->last_delta()};
	generator = nullptr;
	generator_storage.reset();
	locks_lost = false;
	claim_durable = false;
	claim_written_in = InvalidSubTransactionId;
}

void
register_worker()
{
	Oid relid = worker_node_relid();
	OwnerContext owner;

	SPI_connect();
	begin_as_owner(&owner);

	/* uid_configure takes an ExclusiveLock: the layout cannot change under a registration. */
	LockRelationOid(config_relid(), RowShareLock);
	char *config_origin;
	Layout layout = read_layout(true, &config_origin);
	int64_t now_delta = layout.delta_at(backend_clock().now_ms());

	if (now_delta > layout.max_delta())
		throw_time_exhausted(layout);

	RegistryOrigin origin = registry_origin(config_origin);
	Claim claim = claim_worker(layout, origin, relid, now_delta, borrow_units(layout), worker_reuse);
	write_claim(claim.worker, origin.identity);

	end_as_owner(&owner);
	SPI_finish();

	registry_relid = relid;
	registry_may_have_changed = false;
	generator_storage.emplace(layout, claim.worker, claim.floor_delta);
	generator = &*generator_storage;
	claim_durable = false;
	claim_written_in = GetCurrentSubTransactionId();

	if (!exit_callback_registered)
	{
		before_shmem_exit(uidgen_unlock_at_exit, 0);
		before_shmem_exit(uidgen_release_at_exit, 0);
		exit_callback_registered = true;
	}
}

/* Forgets every worker, and releases their locks: their registry was dropped. */
void
forget_registry()
{
	unlock_workers_except(nullptr, 0);
	generator = nullptr;
	generator_storage.reset();
	retired_count = 0;
	locks_lost = false;
	claim_durable = false;
	claim_written_in = InvalidSubTransactionId;
}

/*
 * Both locks were free for a moment, so another backend may have found the
 * worker leaked, or even used it: write the claim again, and go on above
 * whatever the row says was issued.
 */
void
resume_after_lost_locks()
{
	OwnerContext owner;
	int64_t row_last_time;

	SPI_connect();
	begin_as_owner(&owner);
	row_last_time = worker_last_time(generator->worker_id());
	end_as_owner(&owner);
	SPI_finish();

	if (row_last_time > generator->last_delta())
	{
		/* Copies: emplace() destroys the generator these come from before it builds the new one. */
		Layout layout = generator->layout();
		int64_t worker = generator->worker_id();

		generator_storage.emplace(layout, worker, row_last_time);
		generator = &*generator_storage;
	}
	locks_lost = false;
	claim_durable = false;
}

/* Releases the locks of workers this backend took but does not hold as its own or retired. */
void
unlock_workers_except_held()
{
	int64_t keep[max_retired_workers + 1];
	int nkeep = 0;

	if (generator != nullptr)
		keep[nkeep++] = generator->worker_id();
	for (int i = 0; i < retired_count; i++)
		keep[nkeep++] = retired[i].worker;
	unlock_workers_except(keep, nkeep);
}

/* Takes back lost session locks; runs at every top-level transaction end. */
void
check_locks()
{
	if (generator != nullptr && !relock_worker(registry_relid, generator->worker_id()))
		locks_lost = true;
	update_readiness();
}

} // namespace

void
xact_callback(XactEvent event)
{
	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			if (generator != nullptr && !claim_durable && claim_written_in != InvalidSubTransactionId)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot PREPARE a transaction that registered a uidgen worker"),
						 errdetail("The claim of worker %lld is not committed yet; a prepared transaction "
								   "would hold it undecided while this session goes on.",
								   static_cast<long long>(generator->worker_id())),
						 errhint("Commit one transaction that calls uid_next() in this session before using "
								 "two-phase commit.")));
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			if (claim_written_in != InvalidSubTransactionId)
				claim_durable = true;
			claim_written_in = InvalidSubTransactionId;
			update_readiness();
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			/*
			 * The abort is about to release the object lock; take back the
			 * advisory lock first (pg_advisory_unlock_all() in this
			 * transaction), so that the worker is never free of both.
			 */
			check_locks();
			claim_written_in = InvalidSubTransactionId;
			update_readiness();
			break;
		case XACT_EVENT_PREPARE:
			claim_written_in = InvalidSubTransactionId;
			update_readiness();
			break;
		default:
			break;
	}
}

void
subxact_callback(SubXactEvent event, SubTransactionId subid, SubTransactionId parent_subid)
{
	if (claim_written_in != subid)
		return;
	if (event == SUBXACT_EVENT_ABORT_SUB)
		claim_written_in = InvalidSubTransactionId;
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
		claim_written_in = parent_subid;
	update_readiness();
}

void
resource_release_callback(ResourceReleasePhase phase, bool is_top_level)
{
	if (phase != RESOURCE_RELEASE_AFTER_LOCKS || !is_top_level)
		return;
	/* A registration that failed (in a subtransaction, say) gives its worker back. */
	unlock_workers_except_held();
	check_locks();
}

/*
 * Releases worker at exit, unless another backend may hold it now (we could
 * not take its session locks back: its row is not ours to write) or its row
 * is locked (an exiting backend must not wait).
 */
void
release_if_still_held(int64_t worker, const char *identity, int64_t last_delta)
{
	if (relock_worker(registry_relid, worker) && lock_row_nowait(worker))
		write_release(worker, identity, last_delta);
}

void
release_at_exit()
{
	if (generator == nullptr && retired_count == 0)
		return;
	if (RecoveryInProgress())
		return;

	/* A FATAL error may leave a transaction open, or failed. */
	AbortOutOfAnyTransaction();
	StartTransactionCommand();
	if (!OidIsValid(get_extension_oid("uidgen", true)))
	{
		/* Dropped while we lived: nothing to release. */
		CommitTransactionCommand();
		return;
	}
	/*
	 * An exiting backend holds interrupts off, so lock_timeout cannot end a
	 * wait: take nothing that could wait.  A worker left unreleased is found
	 * leaked later, which is safe.
	 */
	(void) set_config_option("transaction_isolation", "read committed", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_LOCAL, true, 0, false);
	(void) set_config_option("transaction_read_only", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_LOCAL, true,
							 0, false);
	/* Nor wait for a WAL flush: a release lost in a crash leaves the row active, found leaked. */
	(void) set_config_option("synchronous_commit", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0,
							 false);
	/* Our workers belong to a registry that DROP and CREATE EXTENSION replaced: not this one's. */
	forget_catalog_cache();
	if (worker_node_relid() != registry_relid || !ConditionalLockRelationOid(registry_relid, RowExclusiveLock))
	{
		CommitTransactionCommand();
		return;
	}
	PushActiveSnapshot(GetTransactionSnapshot());
	SPI_connect();
	OwnerContext owner;
	begin_as_owner(&owner);
	char *identity = database_identity();
	if (generator != nullptr)
		release_if_still_held(generator->worker_id(), identity, generator->last_delta());
	for (int i = 0; i < retired_count; i++)
		release_if_still_held(retired[i].worker, identity, retired[i].last_delta);
	end_as_owner(&owner);
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
}

/*
 * Default-method session locks outlive the backend's last transaction:
 * nothing in PostgreSQL releases them at a clean exit, so a later backend
 * would inherit them with this PGPROC.  Registered before release_at_exit,
 * so it runs after it, even when releasing failed.
 */
void
unlock_at_exit()
{
	/*
	 * Forget the workers first, or the transaction end of a later exit
	 * callback (temporary relations are dropped in one) would take the locks
	 * back.
	 */
	generator = nullptr;
	retired_count = 0;
	update_readiness();
	unlock_workers_except(nullptr, 0);
}

namespace detail {

void
prepare_to_issue()
{
	if (XactReadOnly)
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot execute uid_next() in a read-only transaction")));

	if (generator != nullptr && registry_may_have_changed)
	{
		/* DROP and CREATE EXTENSION: the worker belonged to a registry that is gone. */
		if (worker_node_relid() != registry_relid)
			forget_registry();
		registry_may_have_changed = false;
	}
	if (generator != nullptr && locks_lost)
	{
		if (relock_worker(registry_relid, generator->worker_id()))
			resume_after_lost_locks();
		else
			retire_current_worker();
	}
	if (generator == nullptr)
		register_worker();
	else if (!claim_durable && claim_written_in == InvalidSubTransactionId)
		write_claim_as_owner(generator->worker_id());
	update_readiness();
}

} // namespace detail

int64_t
next_uid()
{
	if (unlikely(!detail::ready_to_issue || XactReadOnly))
		detail::prepare_to_issue();

	int64_t uid = detail::generator->next(current_generator_kind(), backend_clock(), current_limits());

	detail::last_uid = uid;
	detail::have_last_uid = true;
	return uid;
}

bool
last_issued_uid(int64_t *uid)
{
	*uid = detail::last_uid;
	return detail::have_last_uid;
}

bool
current_worker(int64_t *worker)
{
	if (generator == nullptr)
		return false;
	*worker = generator->worker_id();
	return true;
}

void
registry_relcache_callback(Oid relid)
{
	if (relid == InvalidOid || relid == registry_relid)
	{
		registry_may_have_changed = true;
		update_readiness();
	}
}

void
register_backend_callbacks()
{
	CacheRegisterRelcacheCallback(uidgen_registry_relcache_callback, 0);
	RegisterXactCallback(uidgen_xact_callback, nullptr);
	RegisterSubXactCallback(uidgen_subxact_callback, nullptr);
	RegisterResourceReleaseCallback(uidgen_resource_release_callback, nullptr);
	register_catalog_callbacks();
}

} // namespace uidgen::pg

/*
 * The callbacks run inside PostgreSQL's transaction machinery and call only
 * PostgreSQL code; nothing in them throws a C++ exception.
 */
static void
uidgen_xact_callback(XactEvent event, void *)
{
	uidgen::pg::xact_callback(event);
}

static void
uidgen_subxact_callback(SubXactEvent event, SubTransactionId subid, SubTransactionId parent_subid, void *)
{
	uidgen::pg::subxact_callback(event, subid, parent_subid);
}

static void
uidgen_resource_release_callback(ResourceReleasePhase phase, bool, bool is_top_level, void *)
{
	uidgen::pg::resource_release_callback(phase, is_top_level);
}

static void
uidgen_release_at_exit(int, Datum)
{
	uidgen::pg::release_at_exit();
}

static void
uidgen_unlock_at_exit(int, Datum)
{
	uidgen::pg::unlock_at_exit();
}

static void
uidgen_registry_relcache_callback(Datum, Oid relid)
{
	uidgen::pg::registry_relcache_callback(relid);
}
