/*
 * private_borrowing.cpp
 *	  A private worker borrowed from the database's keeper, for a backend
 *	  whose demand the shared cursor cannot meet (server_source.hpp).
 */
#include "server_scope/server_source.hpp"

#include "pg/guard.hpp"
#include "pg/pg_clock.hpp"
#include "pg/settings.hpp"
#include "server_scope/keeper.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/ipc.h"
}

extern "C" {
static void uidgen_give_back_at_exit(int code, Datum arg);
}

namespace uidgen::pg {

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

namespace {

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

} // namespace

int64_t
SharedReservation::extend(int64_t delta)
{
	std::optional<int64_t> reserved = wait_for_private_reservation(source_, delta);

	if (!reserved)
		throw SourceEnded();
	return *reserved;
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

void
give_back_at_exit_if_borrowed()
{
	if (server.source && server.source->borrowed)
		give_back(*server.source);
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

} // namespace uidgen::pg

static void
uidgen_give_back_at_exit(int, Datum)
{
	uidgen::pg::give_back_at_exit_if_borrowed();
}

