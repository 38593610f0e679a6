/*
 * keeper.cpp
 *	  The background worker that keeps a database's server-wide generator.
 */
#include "server_scope/keeper.hpp"

#include "claim/claim.hpp"
#include "core/raise_policy.hpp"
#include "core/shared_cursor.hpp"
#include "layout/catalog.hpp"
#include "layout/reservation.hpp"
#include "pg/database_worker.hpp"
#include "pg/guard.hpp"
#include "pg/pg_clock.hpp"
#include "pg/settings.hpp"
#include "pg/transaction.hpp"
#include "registry/lease_table.hpp"
#include "registry/leased_reservation.hpp"
#include "worker_table/worker_lock.hpp"

extern "C" {
#include "access/xact.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/wait_event.h"
}

#include <algorithm>
#include <cstring>
#include <optional>
#include <type_traits>

namespace uidgen::pg {

namespace {

/* How often the keeper looks at its generator when nobody asks it anything. */
constexpr long tick_ms = 1000;

/* This keeper's slot, for the exit callbacks. */
SharedGenerator *kept = nullptr;

/* The worker table and layout its workers were claimed under. */
std::optional<Registration> registration;

void
publish(SharedGenerator *g, const Registration &r, int64_t reserved)
{
	const Layout &layout = r.layout;
	CursorWords words(layout);
	int64_t now_ms = backend_clock().now_ms();
	int64_t first = std::max(layout.delta_at(now_ms), r.claim.floor_delta + 1);

	pg_call([g] {
		LWLockAcquire(&g->privates_lock, LW_EXCLUSIVE);
		g->private_count = 0;
		g->private_wanted = false;	/* asked of the keeper before: this one starts without */
		LWLockRelease(&g->privates_lock);
	});
	SpinLockAcquire(&g->mutex);
	g->layout = layout;
	g->worker = r.claim.worker;
	g->started_at_ms = now_ms;
	g->leased = r.leased;
	g->lease = r.lease;
	g->joins_seen = r.joins_seen;
	g->reserved_until.store(reserved);
	/* A backend that sees the new cursor must see the new generation too (server_generator.cpp). */
	g->generation.fetch_add(1);
	g->cursor.store(words.first_of(first), std::memory_order_release);
	g->stage = KeeperStage::Ready;
	SpinLockRelease(&g->mutex);
	pg_call([g] { ConditionVariableBroadcast(&g->changed); });
}

/*
 * The last unit one of the keeper's workers may issue: with a registry, what
 * its own lease covers as it stands (leased_reservation.hpp), whatever the
 * leases of its other workers cover; nullopt once that lease ended.
 */
std::optional<int64_t>
lease_cap(const LeaseId &lease, const Layout &layout)
{
	if (!registration->leased)
		return layout.max_delta();
	return lease_cap_delta(lease, layout);
}

/*
 * The cursor's cap.  A lease that ended ends the keeper: sessions start a
 * new one, which claims a worker from a block the server still holds.
 */
int64_t
cursor_cap(const Layout &layout)
{
	std::optional<int64_t> cap = lease_cap(registration->lease, layout);

	if (!cap)
		throw_lease_ended(registration->claim.worker);
	return *cap;
}

/* The private workers as the keeper last published them, each with its cap. */
struct PrivateCaps
{
	int count;
	PrivateWorker lent[max_private_workers];	/* copies */
	std::optional<int64_t> cap[max_private_workers];
};
static_assert(std::is_trivially_destructible_v<PrivateCaps>);

/*
 * Copies the private workers and finds each one's cap.  One whose lease
 * ended is withdrawn: lent no more, and its borrower gives it back at its
 * next look at the reservation and goes on with the cursor.  The others
 * and the cursor go on under their own leases.
 */
PrivateCaps
private_caps(SharedGenerator *g, const Layout &layout)
{
	PrivateCaps p{};

	pg_call([g, &p] {
		LWLockAcquire(&g->privates_lock, LW_SHARED);
		p.count = g->private_count;
		for (int i = 0; i < p.count; i++)
			p.lent[i] = g->privates[i];
		LWLockRelease(&g->privates_lock);
	});

	bool ended = false;
	for (int i = 0; i < p.count; i++)
	{
		p.cap[i] = p.lent[i].withdrawn ? std::nullopt : lease_cap(p.lent[i].lease, layout);
		ended = ended || (!p.lent[i].withdrawn && !p.cap[i]);
	}
	if (!ended)
		return p;

	bool withdrawn[max_private_workers] = {};
	pg_call([g, &p, &withdrawn] {
		LWLockAcquire(&g->privates_lock, LW_EXCLUSIVE);
		for (int i = 0; i < p.count && i < g->private_count; i++)
			if (!p.cap[i] && g->privates[i].worker == p.lent[i].worker && !g->privates[i].withdrawn)
				withdrawn[i] = g->privates[i].withdrawn = true;
		LWLockRelease(&g->privates_lock);
	});
	pg_call([g] { ConditionVariableBroadcast(&g->changed); });
	for (int i = 0; i < p.count; i++)
		if (withdrawn[i])
			pg_call([&p, i] {
				ereport(LOG, (errmsg("uidgen keeper: the lease of private worker %lld ended; it is lent no more",
									 static_cast<long long>(p.lent[i].worker))));
			});
	return p;
}

/*
 * A keeper whose workers came without a registry publishes nothing more
 * once a database of the server has joined one: their numbers may be
 * granted elsewhere, and the join's floor is above the reservation it read
 * (lease_table.hpp, joins_so_far()).
 */
bool
joined_since_claim()
{
	return !registration->leased && joins_so_far() != registration->joins_seen;
}

/*
 * Keeps the reservations ahead of the cursor and of the clock: the
 * cursor's and each private worker's, each capped by its own lease.  One
 * durable mark covers them all, raised no higher than the highest of
 * those caps.
 */
void
raise_reservations(SharedGenerator *g, const Layout &layout)
{
	if (joined_since_claim())
		return;

	/* A lease that ended stops its worker now, not at its next raise. */
	int64_t own_cap = cursor_cap(layout);
	PrivateCaps privates = private_caps(g, layout);

	CursorWords words(layout);
	uint64_t word = g->cursor.load() & ~cursor_closed_bit;
	int64_t now = layout.delta_at(backend_clock().now_ms());
	/*
	 * A backend whose clock was far ahead moved the cursor there before it
	 * waited for the reservation (refill()); the cursor never moves back, so
	 * the keeper could publish nothing more until the lease's cap passed it.
	 * Past the cap by more than a backend may borrow and a raise's reach,
	 * which chunks taken by backends waiting at the cap never are: refused,
	 * naming the offset; the next keeper starts from the clock (test 069).
	 * The margin in whole units, rounded down: a unit less refuses sooner,
	 * never later, and the cap holds either way.
	 */
	if (registration->leased)
		refuse_unless_covered(registration->claim.worker, layout, registration->lease,
							  words.delta_of(word) - layout.units_within(max_borrow_ms + raise_ahead_ms), own_cap);
	/*
	 * Nor with its own clock past the cap, as at its start: it would raise
	 * the database's reservation, and every join floor read from it, to the
	 * cap and a window beyond.
	 */
	if (registration->leased)
		refuse_unless_covered(registration->claim.worker, layout, registration->lease, now, own_cap);
	/*
	 * Private workers' generators ask with wanted_until: the cursor does not
	 * know how far they went (core/raise_policy.hpp).  Both spans in whole
	 * units, rounded down: a raise that falls a unit short makes a
	 * generator wait for the next one, never issue past the mark, which is
	 * durable before it is published.
	 */
	int64_t needed = raise_needed(now, words.delta_of(word), g->wanted_until.load(), layout.units_within(max_borrow_ms),
								  layout.units_within(raise_ahead_ms));
	CoveredWorker covered_privates[max_private_workers];
	for (int i = 0; i < privates.count; i++)
		covered_privates[i] = CoveredWorker{privates.lent[i].reserved_until, privates.cap[i]};
	int64_t target = raise_target(needed, CoveredWorker{g->reserved_until.load(), own_cap}, covered_privates,
								  privates.count);
	if (target == Generator::no_floor)
		return;

	DatabaseReservation reservation(layout);
	int64_t covered = reservation.extend(target);

	/* Looked at again after the read, as LeasedReservation does. */
	if (joined_since_claim())
		return;
	/*
	 * And the caps, after the raise, as LeasedReservation does: a lease
	 * that uid_registry_move() dropped since the first look must publish
	 * nothing above the reservation the move's floor started above.
	 */
	own_cap = cursor_cap(layout);
	privates = private_caps(g, layout);
	if (std::min(covered, own_cap) > g->reserved_until.load())
		g->reserved_until.store(std::min(covered, own_cap));
	pg_call([g, &privates, covered] {
		LWLockAcquire(&g->privates_lock, LW_EXCLUSIVE);
		for (int i = 0; i < privates.count && i < g->private_count; i++)
		{
			PrivateWorker &lent = g->privates[i];

			if (privates.cap[i] && lent.worker == privates.lent[i].worker && !lent.withdrawn)
				lent.reserved_until = std::max(lent.reserved_until, std::min(covered, *privates.cap[i]));
		}
		LWLockRelease(&g->privates_lock);
	});
	pg_call([g] { ConditionVariableBroadcast(&g->changed); });
}

/*
 * Claims one more worker for backends whose demand the shared cursor cannot
 * meet, in the caller's transaction; publish_private_worker() lends it once
 * that committed.
 */
std::optional<Registration>
claim_private_worker(SharedGenerator *g)
{
	int64_t now = registration->layout.delta_at(backend_clock().now_ms());
	bool wanted = pg_call([g, now] {
		LWLockAcquire(&g->privates_lock, LW_EXCLUSIVE);
		bool asked = g->private_wanted && g->private_count < max_private_workers;
		/* One is free, and its borrowed time has passed: no need for another. */
		for (int i = 0; i < g->private_count; i++)
			asked = asked && (g->privates[i].borrower_pid != 0 || g->privates[i].withdrawn ||
							  g->privates[i].floor_delta >= now);
		g->private_wanted = false;
		LWLockRelease(&g->privates_lock);
		return asked;
	});
	if (!wanted)
		return std::nullopt;
	return claim_new_worker(ClaimCommit::ByCaller);
}

/*
 * After its claim committed: a worker whose claim could still roll back
 * must not issue.  It starts with what both the durable mark (the cursor's
 * reservation is below it) and its own lease cover; the keeper's next raise
 * takes it further.
 */
void
publish_private_worker(SharedGenerator *g, const Registration &r)
{
	std::optional<int64_t> cap = lease_cap(r.lease, r.layout);

	if (!cap)
		return;	/* its lease ended already: released at the keeper's exit */
	int64_t reserved = std::min(g->reserved_until.load(), *cap);
	pg_call([g, &r, reserved] {
		LWLockAcquire(&g->privates_lock, LW_EXCLUSIVE);
		g->privates[g->private_count++] = PrivateWorker{r.claim.worker, r.claim.floor_delta, reserved, 0, false, r.lease};
		LWLockRelease(&g->privates_lock);
	});
	pg_call([g] { ConditionVariableBroadcast(&g->changed); });
}

bool
private_workers_lent(SharedGenerator *g)
{
	return pg_call([g] {
		bool lent = false;

		LWLockAcquire(&g->privates_lock, LW_SHARED);
		for (int i = 0; i < g->private_count; i++)
			lent = lent || g->privates[i].borrower_pid != 0;
		LWLockRelease(&g->privates_lock);
		return lent;
	});
}

/* Whether the worker still belongs to this database's worker table (not dropped or replaced). */
bool
worker_table_unchanged(Oid relid)
{
	return pg_call([] { return OidIsValid(get_extension_oid("uidgen", true)); }) &&
		   worker_table_relid() == relid && registration->leased == registry_configured();
}

void
wait_for_work()
{
	pg_call([] {
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, tick_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
	});
}

void
run_keeper(SharedGenerator *g)
{
	/* The claim and every raise must be on disk before a backend issues under them. */
	pg_call([] {
		SetConfigOption("synchronous_commit", "on", PGC_SUSET, PGC_S_OVERRIDE);
		SetConfigOption("default_transaction_read_only", "off", PGC_SUSET, PGC_S_OVERRIDE);
		SetConfigOption("default_transaction_isolation", "read committed", PGC_SUSET, PGC_S_OVERRIDE);
	});

	int64_t covered = 0;
	in_transaction([&covered] {
		if (!OidIsValid(pg_call([] { return get_extension_oid("uidgen", true); })))
			pg_call([] {
				ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
								errmsg("extension \"uidgen\" is not installed in database \"%s\"",
									   get_database_name(MyDatabaseId))));
			});
		if (!OidIsValid(reserved_until_relid()))
			pg_call([] {
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("uidgen.scope = server needs the time reservation of uidgen 1.1.0 or later"),
						 errhint("Run ALTER EXTENSION uidgen UPDATE in database \"%s\".",
								 get_database_name(MyDatabaseId))));
			});
		registration.emplace(claim_new_worker(ClaimCommit::ByCaller));
		/* Cover the first units before anything is issued in them. */
		DatabaseReservation reservation(registration->layout);
		int64_t now = registration->layout.delta_at(backend_clock().now_ms());
		int64_t first = std::max(now, registration->claim.floor_delta + 1);
		/*
		 * Neither the cursor nor the database's reservation may start above
		 * what the lease covers: a clock far ahead would set both there, and
		 * the database would issue nothing once the clock is right, until the
		 * fleet's time passed the clock's mistake (test 069).  Refused with
		 * the error naming the offset; the next keeper starts afresh.
		 */
		if (registration->leased)
			refuse_unless_covered(registration->claim.worker, registration->layout, registration->lease, first,
								  lease_cap_delta(registration->lease, registration->layout));
		int64_t raised = reservation.extend(std::min({first + registration->layout.units_within(raise_ahead_ms),
													  cursor_cap(registration->layout),
													  registration->layout.max_delta()}));
		/* The cap after the raise, in a statement of its own (raise_reservations() says why). */
		covered = std::min(raised, cursor_cap(registration->layout));
	});
	/* A join since the claim: the next keeper claims from the registry. */
	if (joined_since_claim())
		return;
	/* Committed above: the claim is durable before any ID is issued under it. */
	publish(g, *registration, covered);

	uint64_t ids_seen = g->ids.load();
	int64_t last_activity_ms = backend_clock().now_ms();

	for (;;)
	{
		wait_for_work();
		/* The database is being dropped, renamed or copied: leave rather than hold it open. */
		if (pg_call(database_wanted_elsewhere))
			return;

		bool unchanged = true;
		std::optional<Registration> claimed;
		in_transaction([g, &unchanged, &claimed] {
			unchanged = worker_table_unchanged(registration->relid);
			if (!unchanged)
				return;
			raise_reservations(g, registration->layout);
			claimed = claim_private_worker(g);
		});
		/* Not after a join or a dropped extension: the keeper lends nothing more, and releases it at exit. */
		if (claimed && unchanged && !joined_since_claim())
			publish_private_worker(g, *claimed);
		if (!unchanged || joined_since_claim())
		{
			ereport(LOG, (errmsg("uidgen keeper: the extension was dropped or replaced, or uidgen.registry changed; leaving")));
			return;
		}

		int64_t now_ms = backend_clock().now_ms();
		uint64_t ids = g->ids.load();

		if (ids != ids_seen || private_workers_lent(g))
		{
			ids_seen = ids;
			last_activity_ms = now_ms;
		}
		else if (keeper_idle_timeout_ms > 0 && now_ms - last_activity_ms >= keeper_idle_timeout_ms)
			return;
	}
}

/* C++ exceptions end here, as a PostgreSQL error; nothing with a destructor is live at the raise. */
void
run_keeper_guarded(SharedGenerator *g)
{
	try
	{
		run_keeper(g);
		return;
	}
	catch (...)
	{
		save_current_exception();
	}
	raise_saved_error();
}

/* Waiting backends raise the keeper's error as their own. */
void
record_failure(SharedGenerator *g)
{
	MemoryContext previous = MemoryContextSwitchTo(TopMemoryContext);
	ErrorData *error = CopyErrorData();

	SpinLockAcquire(&g->mutex);
	g->stage = KeeperStage::Failed;
	g->error_code = error->sqlerrcode;
	strlcpy(g->error_message, error->message ? error->message : "", sizeof(g->error_message));
	strlcpy(g->error_hint, error->hint ? error->hint : "", sizeof(g->error_hint));
	SpinLockRelease(&g->mutex);
	ConditionVariableBroadcast(&g->changed);
	FreeErrorData(error);
	MemoryContextSwitchTo(previous);
}

/*
 * What the borrowers of worker may have issued under it: its own
 * reservation once lent; one claimed but never lent issued nothing.  Read
 * without the privates' lock, which an error may have left held: only this
 * process, the keeper, writes the list, its workers and their reservations
 * (borrowers write only borrower_pid and floor_delta).
 */
int64_t
private_reserved_until(SharedGenerator *g, int64_t worker)
{
	for (int i = 0; i < g->private_count; i++)
		if (g->privates[i].worker == worker)
			return g->privates[i].reserved_until;
	return Generator::no_floor;
}

/*
 * Closes the cursor, then releases the workers: the shared one above every
 * word handed out, the private ones above everything their reservations let
 * their borrowers issue.  Nothing raises a reservation any more: this is
 * the keeper.  Runs before PostgreSQL's own exit callbacks.
 */
void
release_at_keeper_exit()
{
	SharedGenerator *g = kept;

	if (!registration)
		return;

	CursorWords words(registration->layout);
	std::optional<uint64_t> closed = close_cursor(g->cursor);
	int64_t reserved = g->reserved_until.load();
	/*
	 * Nothing above the cursor's reservation was issued (a backend waits for
	 * it before it fills its cache), whatever the cursor says: a backend
	 * whose clock was far ahead moved it there.
	 */
	int64_t last_shared = closed && *closed > 0 ? std::min(words.delta_of(*closed - 1), reserved) : reserved;
	/*
	 * A keeper that leaves before it published issued nothing, and the
	 * slot's reservation is another generation's: its worker is retired at
	 * least at the floor it was claimed above (a join floor, say), so that
	 * the next holder starts there too.
	 */
	last_shared = std::max(last_shared, registration->claim.floor_delta);

	for (int i = 0; i < held_worker_count(); i++)
	{
		const HeldWorker &held = held_worker(i);
		bool shared = held.worker == registration->claim.worker;

		if (held.use != WorkerUse::Candidate)
			retire_worker(held.worker_table, held.worker,
						  shared ? last_shared : private_reserved_until(g, held.worker));
	}
	release_at_exit();
	unlock_all_workers();
}

/* Last of all: the next backend that needs a keeper starts one. */
void
leave_slot()
{
	SharedGenerator *g = kept;

	(void) close_cursor(g->cursor);
	LWLockAcquire(&g->privates_lock, LW_EXCLUSIVE);
	g->private_count = 0;
	LWLockRelease(&g->privates_lock);
	SpinLockAcquire(&g->mutex);
	g->keeper_latch = nullptr;
	g->keeper_pid = 0;
	if (g->stage != KeeperStage::Failed)
		g->stage = KeeperStage::Idle;
	SpinLockRelease(&g->mutex);
	ConditionVariableBroadcast(&g->changed);
}

} // namespace

bool
launch_keeper(SharedState *state, SharedGenerator *generator)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;
	Oid database = generator->database;

	describe_database_worker(&worker, "uidgen_keeper_main", "uidgen keeper");
	snprintf(worker.bgw_name, sizeof(worker.bgw_name), "uidgen keeper for database %u", database);
	worker.bgw_main_arg = Int32GetDatum(generator_index(state, generator));
	memcpy(worker.bgw_extra, &database, sizeof(database));
	worker.bgw_notify_pid = 0;
	return RegisterDynamicBackgroundWorker(&worker, &handle);
}

} // namespace uidgen::pg

using namespace uidgen::pg;

extern "C" {
static void
keeper_leave_slot(int, Datum)
{
	leave_slot();
}

static void
keeper_release(int, Datum)
{
	release_at_keeper_exit();
	/* A session lock of the default method: PostgreSQL leaves it on the PGPROC at exit. */
	release_database_lock();
}
}

void
uidgen_keeper_main(Datum main_arg)
{
	int index = DatumGetInt32(main_arg);
	Oid database;
	SharedState *state;
	SharedGenerator *g;

	memcpy(&database, MyBgworkerEntry->bgw_extra, sizeof(database));
	pqsignal(SIGTERM, die);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();

	state = shared_state();
	if (state == nullptr || index < 0 || index >= state->generator_count)
		proc_exit(1);
	g = slot(state, index);

	/*
	 * One keeper a slot: one launched so late that a backend gave it up and
	 * launched another (server_generator.cpp) leaves if that one came first.
	 * Under the slots' lock: a slot whose database was dropped is freed, for
	 * another database, only while no keeper holds it (generator_of()).
	 */
	bool taken;
	LWLockAcquire(&state->slots_lock, LW_SHARED);
	SpinLockAcquire(&g->mutex);
	taken = g->database == database && g->stage == KeeperStage::Starting && g->keeper_pid == 0;
	if (taken)
	{
		g->keeper_pid = MyProcPid;
		g->keeper_latch = MyLatch;
	}
	SpinLockRelease(&g->mutex);
	LWLockRelease(&state->slots_lock);
	if (!taken)
		proc_exit(0);
	kept = g;
	/* Registered first, so it runs last: even when connecting fails. */
	before_shmem_exit(keeper_leave_slot, 0);

	BackgroundWorkerInitializeConnectionByOid(database, InvalidOid, 0);
	pgstat_report_appname("uidgen keeper");
	/* Runs before PostgreSQL's exit callbacks release the session locks. */
	before_shmem_exit(keeper_release, 0);
	/* What DROP DATABASE and its kin wait on while the keeper lives (database_worker.hpp). */
	hold_database_lock();

	PG_TRY();
	{
		run_keeper_guarded(g);
	}
	PG_CATCH();
	{
		record_failure(g);
		PG_RE_THROW();
	}
	PG_END_TRY();
	proc_exit(0);
}
