/*
 * keeper_link.cpp
 *	  A backend's link to its database's keeper: starting it, and waiting
 *	  for its time reservation (server_source.hpp).
 */
#include "server_scope/server_source.hpp"

#include "pg/guard.hpp"
#include "pg/pg_clock.hpp"
#include "registry/leased_reservation.hpp"
#include "server_scope/keeper.hpp"

extern "C" {
#include "access/xlog.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "utils/wait_event.h"
}

namespace uidgen::pg {

namespace {

/* Raises the error the keeper recorded; copied out first, since nothing may allocate under a spinlock. */
[[noreturn]] void
raise_keeper_failure(SharedGenerator *g)
{
	int code;
	char message[sizeof(g->error_message)];
	char hint[sizeof(g->error_hint)];

	SpinLockAcquire(&g->mutex);
	code = g->error_code;
	memcpy(message, g->error_message, sizeof(message));
	memcpy(hint, g->error_hint, sizeof(hint));
	SpinLockRelease(&g->mutex);
	pg_call([code, &message, &hint] {
		ereport(ERROR, (errcode(code), errmsg_internal("%s", message), hint[0] ? errhint("%s", hint) : 0,
						errcontext("uidgen keeper of database \"%s\"", get_database_name(MyDatabaseId))));
	});
	pg_unreachable();
}

[[noreturn]] void
raise_keeper_timeout(const char *what)
{
	pg_call([what] {
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						errmsg("the uidgen keeper of database \"%s\" did not %s within %lld ms",
							   get_database_name(MyDatabaseId), what, static_cast<long long>(keeper_wait_ms)),
						errhint("See the server log for the keeper's errors; max_worker_processes must leave "
								"room for one keeper per database that uses uidgen.scope = server.")));
	});
	pg_unreachable();
}

/* Sleeps on the generator's condition variable, interruptibly, for at most ms. */
void
sleep_on(SharedGenerator *g, int64_t ms)
{
	pg_call([g, ms] {
		ConditionVariablePrepareToSleep(&g->changed);
		(void) ConditionVariableTimedSleep(&g->changed, ms, PG_WAIT_EXTENSION);
		ConditionVariableCancelSleep();
	});
}

SharedGenerator *
attach_generator()
{
	if (pg_call([] { return RecoveryInProgress(); }))
		pg_call([] {
			ereport(ERROR, (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
							errmsg("cannot execute uid_next() during recovery"),
							errhint("IDs are issued by the primary server.")));
		});

	SharedState *state = shared_state();
	if (state == nullptr)
		pg_call([] {
			ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
							errmsg("uidgen.scope = server needs uidgen in shared_preload_libraries"),
							errhint("Add uidgen to shared_preload_libraries and restart the server, or set "
									"uidgen.scope to \"backend\".")));
		});

	SharedGenerator *g = generator_of(state, MyDatabaseId, true);
	if (g == nullptr)
		pg_call([state] {
			ereport(ERROR, (errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
							errmsg("too many databases use the server-wide generator"),
							errdetail("The server has room for %d databases, uidgen.max_server_databases; each "
									  "database that used it since the server started keeps its place until "
									  "it is dropped.",
									  state->generator_count),
							errhint("Raise uidgen.max_server_databases (it takes a restart, and each database "
									"in use needs a background worker of max_worker_processes too), or set "
									"uidgen.scope to \"backend\" for this server.")));
		});
	return g;
}

/*
 * A keeper launched long ago that never showed up (the postmaster could not
 * fork it, or it died before it could say so) would leave the slot Starting
 * for good: the next backend launches another.  One that showed up always
 * leaves the slot when it exits.
 */
void
forget_lost_launch(SharedGenerator *g)
{
	/* The clock is read before the spinlock: under it, nothing but copies. */
	int64_t now_ms = backend_clock().now_ms();

	SpinLockAcquire(&g->mutex);
	if (g->stage == KeeperStage::Starting && g->keeper_pid == 0 && now_ms - g->keeper_launched_at_ms >= keeper_wait_ms)
		g->stage = KeeperStage::Idle;
	SpinLockRelease(&g->mutex);
}

} // namespace

/*
 * Waits until the database's keeper is ready, starting one if there is
 * none, and takes its generation as this backend's source.
 */
void
start_source()
{
	SharedState *state = shared_state();
	SharedGenerator *g = attach_generator();
	int64_t deadline = backend_clock().now_ms() + keeper_wait_ms;
	bool waited_for_start = false;

	for (;;)
	{
		int64_t now_ms = backend_clock().now_ms();

		SpinLockAcquire(&g->mutex);
		KeeperStage stage = g->stage;
		bool launch = stage == KeeperStage::Idle || (stage == KeeperStage::Failed && !waited_for_start);
		bool leased = g->leased;
		uint64_t joins_seen = g->joins_seen;

		if (launch)
		{
			g->stage = KeeperStage::Starting;
			g->keeper_launched_at_ms = now_ms;
		}
		SpinLockRelease(&g->mutex);
		/* A keeper of workers claimed without a registry the server joined since is about to leave. */
		bool stale = stage == KeeperStage::Ready && !leased && joined_since(joins_seen);

		if (launch)
		{
			if (!pg_call([state, g] { return launch_keeper(state, g); }))
			{
				SpinLockAcquire(&g->mutex);
				g->stage = KeeperStage::Idle;
				SpinLockRelease(&g->mutex);
				pg_call([] {
					ereport(ERROR, (errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
									errmsg("could not start the uidgen keeper of database \"%s\"",
										   get_database_name(MyDatabaseId)),
									errhint("Raise max_worker_processes: the server-wide generator needs a "
											"background worker per database that uses it.")));
				});
			}
			waited_for_start = true;
			continue;
		}
		if (stale)
			wake_keeper(g);
		else if (stage == KeeperStage::Ready)
			break;
		if (stage == KeeperStage::Failed)
			raise_keeper_failure(g);
		waited_for_start = true;
		if (backend_clock().now_ms() >= deadline)
		{
			forget_lost_launch(g);
			raise_keeper_timeout("start");
		}
		sleep_on(g, std::min<int64_t>(deadline - backend_clock().now_ms(), 1000) + 1);
	}

	SpinLockAcquire(&g->mutex);
	uint32_t generation = g->generation.load();
	Layout layout = *g->layout;
	int64_t worker = g->worker;
	bool leased = g->leased;
	uint64_t joins_seen = g->joins_seen;
	SpinLockRelease(&g->mutex);

	server.source.emplace(g, generation, layout, worker, server.last_delta, leased, joins_seen);
}

namespace {

/*
 * The ceiling's error, when this backend's clock is past the ceiling of the
 * lease of the worker it issues under (the cursor's or a borrowed one), and
 * delta is too: the keeper never extends a reservation beyond its lease's
 * ceiling, so waiting would end in its timeout.
 * The ceiling is read from the lease table as it stands, so a renewal that
 * raised it counts at once.
 */
void
refuse_past_ceiling(const Layout &layout, int64_t worker, const LeaseId &lease, int64_t delta)
{
	std::optional<int64_t> ceiling = pg_call([&lease] { return lease_ceiling_delta(lease); });
	int64_t now = now_delta(layout);

	if (ceiling && now > *ceiling && delta > *ceiling)
		throw_past_ceiling(worker, layout, now, *ceiling);
}

} // namespace

/*
 * One round of a wait for a reservation that does not cover delta yet:
 * asks the keeper to raise it, raises the ceiling's error (under a lease)
 * or the keeper's timeout once deadline has passed, and sleeps until the
 * slot changes, at most 100 ms.  For the cursor's reservation and a
 * borrowed worker's alike.
 */
void
ask_keeper_and_wait(Source &source, int64_t delta, int64_t worker, const std::optional<LeaseId> &lease,
					int64_t deadline)
{
	SharedGenerator *g = source.shared;

	g->waits.fetch_add(1, std::memory_order_relaxed);
	int64_t wanted = g->wanted_until.load();
	while (wanted < delta && !g->wanted_until.compare_exchange_weak(wanted, delta))
	{
	}
	wake_keeper(g);
	if (lease)
		refuse_past_ceiling(source.cache.words().layout(), worker, *lease, delta);
	if (backend_clock().now_ms() >= deadline)
		raise_keeper_timeout("extend the time reservation");
	sleep_on(g, 100);
}

/*
 * Waits until the reservation covers delta and returns it; nullopt when the
 * source ended meanwhile.  The reservation is read together with the
 * generation and the stage, under the mutex that publish() writes them
 * under: a reservation of a later generation covers nothing of this one.
 * Its keeper released the workers it lent at its exit, above what its own
 * reservation allowed, and they may be someone else's since; a borrower
 * that took the new keeper's reservation for its own would issue under a
 * worker it no longer has (test 025).
 */
std::optional<int64_t>
wait_for_reservation(Source &source, int64_t delta)
{
	SharedGenerator *g = source.shared;

	if (delta <= source.reserved)
		return source.reserved;

	int64_t deadline = backend_clock().now_ms() + keeper_wait_ms;

	for (;;)
	{
		SpinLockAcquire(&g->mutex);
		bool current = g->generation.load() == source.generation && g->stage == KeeperStage::Ready;
		int64_t reserved = g->reserved_until.load();
		bool leased = g->leased;
		LeaseId lease = g->lease;
		int64_t worker = g->worker;
		SpinLockRelease(&g->mutex);

		if (!current)
			return std::nullopt;
		source.reserved = reserved;
		if (delta <= reserved)
			return reserved;
		ask_keeper_and_wait(source, delta, worker, leased ? std::optional<LeaseId>(lease) : std::nullopt, deadline);
	}
}

} // namespace uidgen::pg
