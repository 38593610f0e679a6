/*
 * claim_pool.cpp
 *	  The claim pool: claims committed ahead of demand for backends that
 *	  reuse a worker, and their hand-over (claim_pool.hpp).
 */
#include "worker_table/claim_pool.hpp"

#include "core/generator.hpp"
#include "layout/catalog.hpp"
#include "pg/compat.hpp"
#include "pg/database_worker.hpp"
#include "pg/guard.hpp"
#include "pg/identity.hpp"
#include "pg/pg_clock.hpp"
#include "pg/settings.hpp"
#include "pg/spi.hpp"
#include "pg/transaction.hpp"
#include "registry/lease_table.hpp"
#include "worker_table/committer.hpp"
#include "worker_table/worker_lock.hpp"

extern "C" {
#include "access/xact.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"
#include "utils/wait_event.h"
}

#include <algorithm>

namespace uidgen::pg {

namespace {

/* The fourth key of the advisory lock that makes a pool the one of its database. */
constexpr uint16 pool_key_kind = 7;

/* How long a backend waits for the pool to hand a worker over before it claims one itself. */
constexpr int64_t hand_over_wait_ms = 200;

/*
 * Without a hand-over for this long, the pool gives its workers back and
 * leaves: it holds a max_worker_processes slot, which claim committers (a
 * copy's sessions have no other way to claim), keepers and parallel query
 * need too.
 */
constexpr int64_t claim_pool_idle_ms = 10 * 1000;

/* How often a full pool looks whether it is still wanted (the extension, a registry, worker_reuse). */
constexpr int64_t recheck_ms = 5 * 1000;

/* How often the pool looks for released workers while it has fewer than it keeps, and otherwise. */
constexpr long refill_retry_ms = 1000;
constexpr long pool_tick_ms = 1000;

/* How many pooled rows a backend looks at. */
constexpr int pooled_candidates = 16;

LOCKTAG
pool_tag(Oid database)
{
	LOCKTAG tag;

	SET_LOCKTAG_ADVISORY(tag, database, 0, 0, pool_key_kind);
	return tag;
}

/* Sets the latch of the pool whose pid a claim row names; a pid reused since gets a harmless wake-up. */
void
wake_pool(int32 pid)
{
	PGPROC *proc = BackendPidGetProc(pid);

	if (proc != nullptr)
		SetLatch(&proc->procLatch);
}

/*
 * With the worker's two locks held and its mark held by the pool: wakes the
 * pool and waits until the mark is free.  The pool lets it go only while
 * someone else (this backend) holds the worker, or when it exits; either
 * way nothing was issued under the worker since its claim committed.
 */
bool
wait_for_hand_over(Oid worker_table, int64_t worker, int32 pool_pid)
{
	int64_t until = monotonic_ms() + hand_over_wait_ms;

	wake_pool(pool_pid);
	for (int attempt = 1;; attempt++)
	{
		if (!pool_mark_held_elsewhere(worker_table, worker))
			return true;
		if (monotonic_ms() >= until)
			return false;
		/* The pool answers within microseconds when idle: poll briefly, then sleep a millisecond at a time. */
		if (attempt < 50)
			pg_usleep(20L);
		else
		{
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1L, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			/* It may have been inside a transaction of its own when woken. */
			if (attempt % 20 == 0)
				wake_pool(pool_pid);
		}
		CHECK_FOR_INTERRUPTS();
	}
}

/* The floor of the pool's committed claim of worker, held by pool_pid; nullopt when the row is not that. */
std::optional<int64_t>
pooled_claim_floor(int64_t worker, int32 pool_pid)
{
	Oid types[3] = {INT8OID, TEXTOID, INT4OID};
	Datum values[3] = {Int64GetDatum(worker), CStringGetTextDatum(claim_pool_name), Int32GetDatum(pool_pid)};

	if (spi_run("SELECT last_time FROM uidgen.worker_node "
				"WHERE id = $1 AND status = 'active' AND application_name = $2 AND pid = $3",
				3, types, values, Visibility::Latest, SPI_OK_SELECT) != 1)
		return std::nullopt;
	return spi_is_null(0, 0) ? Generator::no_floor : spi_int64(0, 0);
}

} // namespace

std::optional<Claim>
take_pooled_worker(Oid worker_table, const char *identity, int64_t now_delta)
{
	if (claim_pool_size == 0)
		return std::nullopt;

	/*
	 * As for any reuse, only a worker whose last unit has passed by this
	 * backend's clock: the pool's clock decided when it claimed, and a
	 * session would otherwise start borrowing ahead of its own.
	 */
	Oid types[4] = {TEXTOID, TEXTOID, INT4OID, INT8OID};
	Datum values[4] = {CStringGetTextDatum(identity), CStringGetTextDatum(claim_pool_name),
					   Int32GetDatum(pooled_candidates), Int64GetDatum(now_delta)};
	uint64 rows = spi_run("SELECT id, pid FROM uidgen.worker_node "
						  "WHERE status = 'active' AND origin = $1 AND application_name = $2 AND pid IS NOT NULL "
						  "  AND last_time < $4 "
						  "ORDER BY id LIMIT $3",
						  4, types, values, Visibility::Latest, SPI_OK_SELECT);
	int64_t ids[pooled_candidates];
	int32 pids[pooled_candidates];
	int count = static_cast<int>(std::min<uint64>(rows, pooled_candidates));

	for (int i = 0; i < count; i++)
	{
		ids[i] = spi_int64(i, 0);
		pids[i] = spi_int32(i, 1);
	}
	/* Backends that register together start at different rows. */
	for (int n = 0; n < count; n++)
	{
		int i = (n + MyProcPid) % count;

		if (ids[i] < 0 || ids[i] > max_lockable_worker || !try_lock_worker(worker_table, ids[i]))
			continue;
		/* A free mark: the row is a claim whose holder is gone, not the pool's to give. */
		if (!pool_mark_held_elsewhere(worker_table, ids[i]))
		{
			unlock_worker(worker_table, ids[i]);
			continue;
		}
		if (!wait_for_hand_over(worker_table, ids[i], pids[i]))
		{
			/* A pool that does not answer now will not answer for the next one either. */
			unlock_worker(worker_table, ids[i]);
			break;
		}
		/*
		 * Read again, with the locks held and the mark let go: the list was
		 * read before the locks, and the pool may have given the worker back
		 * (released, committed) or died in a refill since.  Only its claim,
		 * committed and unchanged, is ours; its last_time is the floor of
		 * the release the pool reused.
		 */
		std::optional<int64_t> last_time = pooled_claim_floor(ids[i], pids[i]);
		if (last_time)
			return Claim{ids[i], *last_time, true};
		unlock_worker(worker_table, ids[i]);
	}
	return std::nullopt;
}

void
wake_claim_pool()
{
	if (claim_pool_size == 0 || max_worker_processes == 0)
		return;

	/* One runs: it refills on its own. */
	LOCKTAG tag = pool_tag(MyDatabaseId);
	if (lock_acquire_nowait(tag, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		return;
	LockRelease(&tag, ExclusiveLock, false);

	BackgroundWorker bgw;
	BackgroundWorkerHandle *handle;

	describe_database_worker(&bgw, "uidgen_claim_pool_main", claim_pool_name);
	snprintf(bgw.bgw_name, sizeof(bgw.bgw_name), "%s for database %u", claim_pool_name, MyDatabaseId);
	memcpy(bgw.bgw_extra, &MyDatabaseId, sizeof(MyDatabaseId));
	bgw.bgw_notify_pid = 0;
	/* No free slot: the next registration tries again. */
	(void) RegisterDynamicBackgroundWorker(&bgw, &handle);
}

namespace {

/* The pool's own state: the workers whose marks it holds, each claimed and committed. */
struct Pool
{
	Oid worker_table;
	int ready_count;
	int64_t ready[max_claim_pool_size];
};
static_assert(std::is_trivially_destructible_v<Pool>);

Pool pool;

/* A transaction of the pool's own, work inside an SPI connection as the extension owner. */
template <typename Work>
void
in_spi_transaction(Work work)
{
	in_transaction([&work] { pg_call([&work] { with_spi(Rights::Owner, work); }); });
}

ClaimHolder
pool_holder()
{
	return ClaimHolder{MyProcPid, MyStartTimestamp, GetSessionUserId(), claim_pool_name};
}

/* Lets go of the mark of every worker a backend now holds; whether any. */
bool
hand_over()
{
	bool handed = false;

	for (int i = pool.ready_count - 1; i >= 0; i--)
	{
		if (!worker_locked_elsewhere(pool.worker_table, pool.ready[i]))
			continue;
		release_pool_mark(pool.worker_table, pool.ready[i]);
		pool.ready[i] = pool.ready[--pool.ready_count];
		handed = true;
	}
	return handed;
}

/*
 * Claims up to wanted released workers in one transaction, marks them and
 * commits; then lets their two locks go.  False when the pool must leave:
 * the extension was dropped or replaced, or the server works for a
 * registry, whose grants are claimed otherwise
 * (registry/membership/leased_claim.hpp).
 */
bool
refill(int wanted)
{
	int64_t claimed[max_claim_pool_size];
	int count = 0;
	bool stay = true;

	in_spi_transaction([&] {
		if (!worker_reuse || !OidIsValid(get_extension_oid("uidgen", true)) || registry_configured() ||
			server_has_registry())
		{
			stay = false;
			return;
		}
		Oid worker_table = worker_table_relid();
		if (pool.worker_table == InvalidOid)
			pool.worker_table = worker_table;
		if (worker_table != pool.worker_table)
		{
			stay = false;
			return;
		}
		/* As a registration: uid_configure cannot change the layout under the claims. */
		LockRelationOid(config_relid(), RowShareLock);
		Layout layout = read_layout(true);
		const char *identity = database_identity();
		int64_t now_delta = layout.delta_at(backend_clock().now_ms());
		bool reclaimed = false;

		for (int attempt = 0; count < wanted && attempt < 2 * wanted; attempt++)
		{
			Claim claim;

			if (!claim_released_worker(layout, identity, worker_table, now_delta, nullptr, &claim))
			{
				/* As claim_worker() does: workers of dead holders, released above the time reservation. */
				if (reclaimed ||
					release_dead_workers(worker_table, identity, now_delta + layout.units_covering(max_borrow_ms)) == 0)
					break;
				reclaimed = true;
				continue;
			}
			if (!take_pool_mark(worker_table, claim.worker))
			{
				unlock_worker(worker_table, claim.worker);
				continue;
			}
			write_claim(claim.worker, identity, pool_holder());
			claimed[count++] = claim.worker;
		}
	});
	/* Committed and flushed: a backend may issue under these claims once it holds a worker. */
	pg_call([&] {
		for (int i = 0; i < count; i++)
		{
			unlock_worker(pool.worker_table, claimed[i]);
			pool.ready[pool.ready_count++] = claimed[i];
		}
	});
	return stay;
}

/*
 * Gives every worker back as released at the floor it was claimed above:
 * nothing was issued under it.  A worker a backend holds now is handed over
 * instead.  Nothing is written when the worker table is no longer the one
 * the workers belong to (DROP and CREATE EXTENSION): its rows went with it.
 */
void
return_ready_workers()
{
	if (pool.ready_count == 0)
		return;
	in_spi_transaction([] {
		if (!OidIsValid(get_extension_oid("uidgen", true)) || worker_table_relid() != pool.worker_table)
			return;
		const char *identity = database_identity();

		for (int i = 0; i < pool.ready_count; i++)
		{
			if (!try_lock_worker(pool.worker_table, pool.ready[i]))
				continue;
			write_release(pool.ready[i], identity, worker_last_time(pool.ready[i]).value_or(0), pool_holder());
		}
	});
	/*
	 * The marks before the locks: a backend that takes a worker's locks
	 * once the row reads released finds its mark free, and never waits for
	 * a hand-over of a claim that is no more.
	 */
	pg_call([] {
		for (int i = 0; i < pool.ready_count; i++)
			release_pool_mark(pool.worker_table, pool.ready[i]);
		for (int i = 0; i < pool.ready_count; i++)
			unlock_worker(pool.worker_table, pool.ready[i]);
		pool.ready_count = 0;
	});
}

/* Waits for a backend's wake-up or the timeout; whether a backend woke it. */
bool
wait_for_wakeup(long timeout_ms)
{
	return pg_call([timeout_ms] {
		int rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, timeout_ms, PG_WAIT_EXTENSION);

		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		return (rc & WL_LATCH_SET) != 0;
	});
}

void
run_pool()
{
	int64_t last_hand_over = monotonic_ms();
	int64_t next_refill = 0;
	int64_t last_look = 0;

	for (;;)
	{
		int64_t now = monotonic_ms();

		if (pg_call(hand_over))
		{
			last_hand_over = now;
			next_refill = 0;
		}
		/* The database is being dropped, renamed or copied: never hold it open. */
		if (pg_call(database_wanted_elsewhere))
		{
			return_ready_workers();
			return;
		}
		if (claim_pool_size == 0 || now - last_hand_over >= claim_pool_idle_ms)
		{
			return_ready_workers();
			return;
		}
		/*
		 * Below its size, it claims more; full, it only looks now and then
		 * whether it is still wanted (refill(0)).  A reload that lowered the
		 * size leaves the surplus to go back with the rest.
		 */
		bool below = pool.ready_count < claim_pool_size;
		if ((below && now >= next_refill) || now - last_look >= recheck_ms)
		{
			int before = pool.ready_count;

			last_look = now;
			if (!refill(below ? std::min(claim_pool_size, max_claim_pool_size) - pool.ready_count : 0))
			{
				return_ready_workers();
				return;
			}
			if (below && pool.ready_count == before)
				next_refill = now + refill_retry_ms;
		}
		if (wait_for_wakeup(pool.ready_count < claim_pool_size ? refill_retry_ms : pool_tick_ms))
			next_refill = 0;
	}
}

/* C++ exceptions end here, as a PostgreSQL error; nothing with a destructor is live at the raise. */
void
run_pool_guarded()
{
	try
	{
		run_pool();
		return;
	}
	catch (...)
	{
		save_current_exception();
	}
	raise_saved_error();
}

} // namespace

} // namespace uidgen::pg

using namespace uidgen::pg;

extern "C" {
/*
 * Nothing in PostgreSQL releases session locks of the default lock method at
 * exit (the advisory ones it does): the workers' object locks of a refill
 * that failed, and the database lock, would stay with this PGPROC and fail
 * the next process that uses it.
 */
static void
pool_unlock_at_exit(int, Datum)
{
	/*
	 * The marks first, as return_ready_workers() does, a refill's included
	 * (its claims undecided): every advisory lock, which PostgreSQL would
	 * release only after the workers' object locks below.
	 */
	LockReleaseAll(USER_LOCKMETHOD, true);
	unlock_all_workers();
	release_database_lock();
}
}

void
uidgen_claim_pool_main(Datum)
{
	Oid database;

	memcpy(&database, MyBgworkerEntry->bgw_extra, sizeof(database));
	begin_committer_session(database, claim_pool_name);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	/* A refill that meets a lock gives up soon, so that hand-overs never wait behind it. */
	SetConfigOption("lock_timeout", "100ms", PGC_SUSET, PGC_S_OVERRIDE);

	/* One pool a database: a second one started in a race leaves. */
	LOCKTAG tag = pool_tag(database);
	if (lock_acquire_nowait(tag, ExclusiveLock, true, true) == LOCKACQUIRE_NOT_AVAIL)
		proc_exit(0);
	before_shmem_exit(pool_unlock_at_exit, 0);
	/* What DROP DATABASE and its kin wait on while the pool lives (database_worker.hpp). */
	hold_database_lock();

	pool.worker_table = InvalidOid;
	pool.ready_count = 0;
	run_pool_guarded();
	proc_exit(0);
}
