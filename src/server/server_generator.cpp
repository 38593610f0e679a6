/*
 * server_generator.cpp
 *	  Taking IDs from the database's server-wide generator.
 */
#include "server/server_generator.hpp"

#include "core/generator.hpp"
#include "core/shared_cursor.hpp"
#include "pg/guard.hpp"
#include "pg/pg_clock.hpp"
#include "pg/settings.hpp"
#include "registry/leased_reservation.hpp"
#include "server/keeper.hpp"
#include "server/shared_state.hpp"

extern "C" {
#include "access/xlog.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "utils/wait_event.h"
}

#include <algorithm>
#include <cstring>
#include <type_traits>

extern "C" {
static void uidgen_give_back_at_exit(int code, Datum arg);
}

namespace uidgen::pg {

namespace {

/*
 * The size a chunk may grow to: uidgen.max_chunk, and never more than an
 * eighth of what the cursor gives the whole database a unit.
 */
int64_t
max_chunk_size(int seq_bits)
{
	return std::max<int64_t>(1, std::min<int64_t>(max_chunk_setting, (int64_t{1} << seq_bits) / 8));
}

/* How long a backend waits for a keeper to start, or to raise the reservation. */
constexpr int64_t keeper_wait_ms = 10000;

/*
 * Chunks taken at the largest size that still ran ahead of the clock by more
 * than private_worker_lead_ms(), one after the other, before a backend asks
 * for a private worker: demand the shared cursor cannot meet.
 */
constexpr int pressure_for_private_worker = 4;

/*
 * How far ahead of the clock the cursor's chunks run before they count
 * towards a private worker: a second, and never more than half of
 * uidgen.max_borrow, so that the other half is left for short inserts while
 * a bulk session moves over.  A private worker's IDs of a unit sort apart
 * from the cursor's (the worker bits sit above the sequence), so concurrent
 * inserts meet the key in two places and split its pages in the middle; a
 * cursor that borrows time keeps one order, so it borrows first.  Eight
 * clients inserting 100 rows a transaction run the cursor tens of
 * milliseconds ahead on a fast machine (test 026).
 */
int64_t
private_worker_lead_ms()
{
	return std::min<int64_t>(1000, max_borrow_ms / 2);
}

struct Source;

/* Thrown through a private worker's Generator when its keeper left: the source ended. */
struct SourceEnded
{
};

/*
 * Thrown through a private worker's Generator when its lease ended before
 * its reservation covered the next unit: the backend gives it back and
 * goes on with the cursor, whose own lease may go on.
 */
struct BorrowWithdrawn
{
};

std::optional<int64_t> wait_for_private_reservation(Source &source, int64_t delta);

/* A private worker's units are covered by its own reservation, which the keeper raises. */
class SharedReservation final : public TimeReservation
{
public:
	explicit SharedReservation(Source &source) : source_(source) {}
	int64_t extend(int64_t delta) override;

private:
	Source &source_;
};
static_assert(std::is_trivially_destructible_v<SharedReservation>);

/* A worker the keeper lent this backend: a generator of its own, as in 1.0. */
struct BorrowedWorker
{
	BorrowedWorker(Source &source, const Layout &layout, int index, int64_t worker, int64_t floor_delta)
		: index(index), reservation(source), generator(layout, worker, floor_delta, reservation)
	{
	}
	BorrowedWorker(const BorrowedWorker &) = delete;
	BorrowedWorker &operator=(const BorrowedWorker &) = delete;

	int index;		/* in SharedGenerator::privates */
	SharedReservation reservation;
	Generator generator;
	/* Its reservation as this backend last read it: it only grows while the worker is lent. */
	int64_t reserved = Generator::no_floor;
};
static_assert(std::is_trivially_destructible_v<BorrowedWorker>);

/* The generator this backend issues from: one generation of one keeper. */
struct Source
{
	Source(SharedGenerator *shared, uint32_t generation, const Layout &layout, int64_t worker, int64_t floor_delta,
		   bool leased, uint64_t joins_seen)
		: shared(shared), generation(generation), floor_delta(floor_delta), leased(leased), joins_seen(joins_seen),
		  cache(layout, worker, max_chunk_size(layout.seq_bits()))
	{
	}
	Source(const Source &) = delete;
	Source &operator=(const Source &) = delete;

	SharedGenerator *shared;
	uint32_t generation;
	int64_t floor_delta;	/* this backend's IDs from the source start after it */
	/* Its keeper's workers came from a registry; if not, the join count its claim saw. */
	bool leased;
	uint64_t joins_seen;
	/*
	 * The reservation as this backend last read it for the generation:
	 * within one it only grows, and its keeper's exit releases the workers
	 * at or above it, so units up to it need no look at the slot.
	 */
	int64_t reserved = Generator::no_floor;
	ChunkCache cache;
	int pressure = 0;
	std::optional<BorrowedWorker> borrowed;
};
static_assert(std::is_trivially_destructible_v<Source>);

struct ServerState
{
	std::optional<Source> source;
	/* The last unit this backend may have issued: a new source starts after it, so IDs keep increasing. */
	int64_t last_delta = Generator::no_floor;
	bool give_back_at_exit_registered = false;
};
static_assert(std::is_trivially_destructible_v<ServerState>);

ServerState server;

int64_t
SharedReservation::extend(int64_t delta)
{
	std::optional<int64_t> reserved = wait_for_private_reservation(source_, delta);

	if (!reserved)
		throw SourceEnded();
	return *reserved;
}

int64_t
now_delta(const Layout &layout)
{
	return layout.delta_at(backend_clock().now_ms());
}

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

/*
 * Whether the source's keeper claimed its workers without a registry and
 * the server joined one since: the hot path's look, one atomic load for
 * such a source only.
 */
inline bool
joined_since_keeper_claimed(const Source &source)
{
	return !source.leased && joined_since(source.joins_seen);
}


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

/*
 * As wait_for_reservation(), for the private worker this backend borrowed:
 * its own reservation, capped by its own lease.  nullopt when the source
 * ended (the keeper left: the worker is no longer lent to this backend);
 * BorrowWithdrawn when its lease ended before the reservation covered
 * delta.
 */
std::optional<int64_t>
wait_for_private_reservation(Source &source, int64_t delta)
{
	SharedGenerator *g = source.shared;
	BorrowedWorker &borrowed = *source.borrowed;
	int64_t worker = borrowed.generator.worker_id();
	uint32_t generation = source.generation;
	int index = borrowed.index;

	if (delta <= borrowed.reserved)
		return borrowed.reserved;

	int64_t deadline = backend_clock().now_ms() + keeper_wait_ms;

	for (;;)
	{
		bool lent = false;
		PrivateWorker seen{};

		pg_call([g, generation, index, worker, &lent, &seen] {
			LWLockAcquire(&g->privates_lock, LW_SHARED);
			lent = g->generation.load() == generation && index < g->private_count &&
				   g->privates[index].worker == worker && g->privates[index].borrower_pid == MyProcPid;
			if (lent)
				seen = g->privates[index];
			LWLockRelease(&g->privates_lock);
		});

		if (!lent)
			return std::nullopt;
		borrowed.reserved = seen.reserved_until;
		if (delta <= seen.reserved_until)
			return seen.reserved_until;
		if (seen.withdrawn)
			throw BorrowWithdrawn();
		ask_keeper_and_wait(source, delta, worker,
							seen.lease != LeaseId{} ? std::optional<LeaseId>(seen.lease) : std::nullopt, deadline);
	}
}

/*
 * Takes a chunk from the source into the cache: a false return means the
 * source ended (its keeper left or was replaced) and the chunk is dropped.
 */
bool
refill(Source &source)
{
	SharedGenerator *g = source.shared;
	const CursorWords &words = source.cache.words();
	const Layout &layout = words.layout();
	int64_t now = now_delta(layout);
	uint64_t size = source.cache.next_size(now);
	uint64_t min_word = words.first_of(std::max(now, source.floor_delta + 1));
	std::optional<CursorChunk> chunk = take_chunk(g->cursor, min_word, size);

	/* A closed cursor, or one published for a later generation (shared_state.hpp). */
	if (!chunk || g->generation.load(std::memory_order_acquire) != source.generation)
		return false;
	g->chunks.fetch_add(1, std::memory_order_relaxed);
	g->ids.fetch_add(size, std::memory_order_relaxed);

	int64_t last = words.delta_of(chunk->end - 1);
	if (last > layout.max_delta())
		throw_time_exhausted(layout);
	if (!wait_for_reservation(source, last))
		return false;	/* the source ended */

	/* Borrowed further than max_borrow: wait for the clock, as the cached generator does. */
	std::optional<int64_t> start = layout.start_of(last);
	int64_t now_ms = backend_clock().now_ms();
	if (start && *start - max_borrow_ms > now_ms)
	{
		g->waits.fetch_add(1, std::memory_order_relaxed);
		wait_until_ms(backend_clock(), *start - max_borrow_ms);
	}

	bool outran = size == source.cache.max_size() && start && *start - now_ms > private_worker_lead_ms();
	source.pressure = outran ? source.pressure + 1 : 0;

	uint64_t dropped = source.cache.fill(*chunk, now_delta(layout));
	if (dropped > 0)
		g->dropped.fetch_add(dropped, std::memory_order_relaxed);
	/* An upper bound of what this backend issues from the chunk is enough for the next source's floor. */
	server.last_delta = std::max(server.last_delta, last);
	return true;
}

/*
 * Gives the borrowed worker back with the last unit issued under it, so the
 * next borrower starts above it; this backend's next chunk does too.
 */
void
give_back(Source &source)
{
	BorrowedWorker &borrowed = *source.borrowed;
	PrivateWorker &lent = source.shared->privates[borrowed.index];
	int64_t last = borrowed.generator.last_delta();

	int64_t worker = borrowed.generator.worker_id();
	SharedGenerator *g = source.shared;

	pg_call([g, &lent, worker, last] {
		LWLockAcquire(&g->privates_lock, LW_EXCLUSIVE);
		if (lent.borrower_pid == MyProcPid && lent.worker == worker)
		{
			lent.floor_delta = std::max(lent.floor_delta, last);
			lent.borrower_pid = 0;
		}
		LWLockRelease(&g->privates_lock);
	});
	server.last_delta = std::max(server.last_delta, last);
	source.floor_delta = server.last_delta;
	source.borrowed.reset();
}

} // namespace

void
give_back_at_exit_if_borrowed()
{
	if (server.source && server.source->borrowed)
		give_back(*server.source);
}

namespace {

/*
 * Gives the borrowed worker back and drops the cached IDs, which the next
 * chunk, block or source starts above (server.last_delta).
 */
void
empty_source(Source &source)
{
	if (source.borrowed)
		give_back(source);
	uint64_t dropped = source.cache.clear();
	if (dropped > 0)
		source.shared->dropped.fetch_add(dropped, std::memory_order_relaxed);
}

/*
 * Leaves a source whose keeper claimed without a registry once the server
 * joined one, at once rather than at its next reservation (INV-19): the
 * borrowed worker goes back above what it issued, the cached IDs are
 * dropped (the next source starts above them), and the keeper, woken, sees
 * the join and leaves; its successor claims from the registry, so the
 * session's statement goes on under a grant, above its last ID.
 */
void
leave_joined_source()
{
	SharedGenerator *g = server.source->shared;

	empty_source(*server.source);
	server.source.reset();
	wake_keeper(g);
}

/* Takes a free private worker, or asks the keeper for one and goes on with the cursor meanwhile. */
void
try_to_borrow(Source &source)
{
	SharedGenerator *g = source.shared;
	int index = -1;
	PrivateWorker lent{};

	/* As registration reuses a worker: only once the clock has passed its floor, or it would borrow at once. */
	int64_t now = now_delta(source.cache.words().layout());

	uint32_t generation = source.generation;

	/* Only from the keeper of this source: another's workers are covered by another reservation. */
	pg_call([g, now, generation, &index, &lent] {
		LWLockAcquire(&g->privates_lock, LW_EXCLUSIVE);
		for (int i = 0; g->generation.load() == generation && i < g->private_count && index < 0; i++)
			if (g->privates[i].borrower_pid == 0 && !g->privates[i].withdrawn && g->privates[i].floor_delta < now)
			{
				index = i;
				g->privates[i].borrower_pid = MyProcPid;
				lent = g->privates[i];
			}
		if (index < 0)
			g->private_wanted = true;
		LWLockRelease(&g->privates_lock);
	});

	if (index < 0)
	{
		wake_keeper(g);
		return;
	}

	if (!server.give_back_at_exit_registered)
	{
		pg_call([] { before_shmem_exit(uidgen_give_back_at_exit, 0); });
		server.give_back_at_exit_registered = true;
	}
	/* Above the cached chunk, which is dropped: this backend's IDs keep increasing. */
	uint64_t dropped = source.cache.clear();
	if (dropped > 0)
		g->dropped.fetch_add(dropped, std::memory_order_relaxed);
	source.pressure = 0;
	source.borrowed.emplace(source, source.cache.words().layout(), index, lent.worker,
							std::max(lent.floor_delta, server.last_delta));
}

/*
 * The next ID of a borrowed worker; nullopt when its keeper left (the
 * source ended) or its lease ended (it was given back: the cursor goes on).  An ID
 * that starts a unit after a pause longer than a unit shows that demand
 * fell: it is issued, and the worker goes back, so that the shared cursor
 * serves the next one.  One clock read, the generator's own.
 */
std::optional<int64_t>
next_from_borrowed(Source &source)
{
	Generator &generator = source.borrowed->generator;
	int64_t before = generator.last_delta();
	int64_t uid = 0;
	bool withdrawn = false;

	try
	{
		uid = generator.next_cached(backend_clock(), current_limits());
	}
	catch (const SourceEnded &)
	{
		/* The keeper released it above everything the reservation allowed. */
		server.last_delta = std::max(server.last_delta, generator.last_delta());
		server.source.reset();
		return std::nullopt;
	}
	catch (const BorrowWithdrawn &)
	{
		withdrawn = true;
	}
	/* Its lease ended: back to the cursor, above everything issued under it (outside the catch: it locks). */
	if (withdrawn)
	{
		int64_t worker = generator.worker_id();

		give_back(source);
		pg_call([worker] {
			ereport(LOG, (errmsg("uidgen: gave back private worker %lld, whose lease ended; going on with the "
								 "shared cursor",
								 static_cast<long long>(worker))));
		});
		return std::nullopt;
	}
	if (generator.last_delta() > before + 1)
		give_back(source);
	return uid;
}

/* The slow path: a borrowed worker, a new chunk, or a new source first when there is none. */
int64_t
next_from_new_chunk()
{
	for (;;)
	{
		if (!server.source)
			start_source();
		if (joined_since_keeper_claimed(*server.source))
		{
			leave_joined_source();
			continue;
		}

		Source &source = *server.source;
		int64_t uid;

		if (source.borrowed)
		{
			if (std::optional<int64_t> borrowed_uid = next_from_borrowed(source))
				return *borrowed_uid;
			continue;
		}
		if (!refill(source))
		{
			server.source.reset();
			continue;
		}
		if (source.pressure >= pressure_for_private_worker)
		{
			try_to_borrow(source);
			if (source.borrowed)
				continue;
		}
		if (source.cache.take(now_delta(source.cache.words().layout()), &uid))
			return uid;
		/* Otherwise the chunk went stale while this backend waited: take another. */
	}
}

} // namespace

int64_t
next_server_uid()
{
	if (__builtin_expect(server.source.has_value(), 1))
	{
		Source &source = *server.source;
		const Layout &layout = source.cache.words().layout();
		int64_t uid;

		if (unlikely(joined_since_keeper_claimed(source)))
			leave_joined_source();
		else if (source.borrowed)
		{
			if (std::optional<int64_t> borrowed_uid = next_from_borrowed(source))
				return *borrowed_uid;
		}
		else if (__builtin_expect(source.cache.take(now_delta(layout), &uid), 1))
			return uid;
	}
	return next_from_new_chunk();
}

int64_t
next_server_block(int64_t n)
{
	for (;;)
	{
		if (!server.source)
			start_source();
		if (joined_since_keeper_claimed(*server.source))
		{
			leave_joined_source();
			continue;
		}

		Source &source = *server.source;
		SharedGenerator *g = source.shared;

		/* The block comes from the cursor, above everything this backend issued so far. */
		empty_source(source);

		const CursorWords &words = source.cache.words();
		const Layout &layout = words.layout();
		int64_t now = now_delta(layout);
		uint64_t min_word = words.first_of(std::max(now, source.floor_delta + 1));
		std::optional<CursorChunk> block =
			take_block(g->cursor, min_word, static_cast<uint64_t>(n), layout.seq_bits());

		/* A closed cursor, or one published for a later generation: as refill(). */
		if (!block || g->generation.load(std::memory_order_acquire) != source.generation)
		{
			server.source.reset();
			continue;
		}
		g->chunks.fetch_add(1, std::memory_order_relaxed);
		g->ids.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);

		int64_t unit = words.delta_of(block->first);
		if (unit > layout.max_delta())
			throw_time_exhausted(layout);
		if (!wait_for_reservation(source, unit))
		{
			server.source.reset();
			continue;
		}
		std::optional<int64_t> start = layout.start_of(unit);
		if (start && *start - max_borrow_ms > backend_clock().now_ms())
		{
			g->waits.fetch_add(1, std::memory_order_relaxed);
			wait_until_ms(backend_clock(), *start - max_borrow_ms);
		}
		server.last_delta = std::max(server.last_delta, unit);
		return words.uid_of(block->first, source.cache.worker());
	}
}

std::optional<int64_t>
server_worker()
{
	if (!server.source)
		return std::nullopt;
	if (server.source->borrowed)
		return server.source->borrowed->generator.worker_id();
	return server.source->cache.worker();
}

} // namespace uidgen::pg

static void
uidgen_give_back_at_exit(int, Datum)
{
	uidgen::pg::give_back_at_exit_if_borrowed();
}
