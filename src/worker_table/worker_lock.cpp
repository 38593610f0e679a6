/*
 * worker_lock.cpp
 *	  Session locks on worker ids, and the list of workers this backend holds.
 */
#include "worker_table/worker_lock.hpp"

#include "pg/compat.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/lock.h"
}

namespace uidgen::pg {

namespace {

constexpr uint16 advisory_key_kind = 3;
constexpr uint16 pool_mark_key_kind = 6;
constexpr LOCKMODE worker_lock_mode = ExclusiveLock;

/*
 * Every worker whose locks this backend took and has not released.  A
 * registration locks one candidate at a time, and a backend retires a
 * worker only when it loses a lock, so a few entries are the norm.
 */
constexpr int max_held_workers = 64;
HeldWorker held[max_held_workers];
int held_count = 0;

HeldWorker *
find_held(Oid worker_table, int64_t worker)
{
	for (int i = 0; i < held_count; i++)
		if (held[i].worker_table == worker_table && held[i].worker == worker)
			return &held[i];
	return nullptr;
}

void
forget(Oid worker_table, int64_t worker)
{
	HeldWorker *entry = find_held(worker_table, worker);

	if (entry != nullptr)
		*entry = held[--held_count];
}

void
set_use(Oid worker_table, int64_t worker, WorkerUse use, int64_t last_delta)
{
	HeldWorker *entry = find_held(worker_table, worker);

	Assert(entry != nullptr);
	if (entry != nullptr)
	{
		entry->use = use;
		entry->last_delta = last_delta;
	}
}

LOCKTAG
object_tag(Oid worker_table, int64_t worker)
{
	LOCKTAG tag;

	SET_LOCKTAG_OBJECT(tag, MyDatabaseId, worker_table, static_cast<uint32>(worker), 0);
	return tag;
}

LOCKTAG
advisory_tag(Oid worker_table, int64_t worker)
{
	LOCKTAG tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, worker_table, static_cast<uint32>(worker), advisory_key_kind);
	return tag;
}

LOCKTAG
pool_mark_tag(Oid worker_table, int64_t worker)
{
	LOCKTAG tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, worker_table, static_cast<uint32>(worker), pool_mark_key_kind);
	return tag;
}

/* Whether a lock that this backend does not hold is held by another process: taken and given back if free. */
bool
held_elsewhere(const LOCKTAG &tag)
{
	if (lock_held_by_me(tag, worker_lock_mode))
		return false;
	if (lock_acquire_nowait(tag, worker_lock_mode, true, true) == LOCKACQUIRE_NOT_AVAIL)
		return true;
	LockRelease(&tag, worker_lock_mode, true);
	return false;
}

/*
 * Without waiting.  A full shared lock table is an error for a claimant
 * (not a worker that looks busy), but not while a transaction aborts.
 */
bool
try_take(const LOCKTAG &tag, bool report_memory_error)
{
	return lock_acquire_nowait(tag, worker_lock_mode, true, report_memory_error) != LOCKACQUIRE_NOT_AVAIL;
}

bool
take_if_lost(const LOCKTAG &tag)
{
	return lock_held_by_me(tag, worker_lock_mode) || try_take(tag, false);
}

void
release_if_held(const LOCKTAG &tag)
{
	if (lock_held_by_me(tag, worker_lock_mode))
		LockRelease(&tag, worker_lock_mode, true);
}

} // namespace

bool
try_lock_worker(Oid worker_table, int64_t worker)
{
	Assert(worker >= 0 && worker <= max_lockable_worker);
	LOCKTAG object = object_tag(worker_table, worker);
	LOCKTAG advisory = advisory_tag(worker_table, worker);

	/*
	 * Held already means held by this backend: not a free worker.  So does
	 * an entry in the list without a lock: a worker this backend retired
	 * keeps its entry (and its last unit, for the release at exit) after an
	 * abort and DISCARD ALL took its locks, and a second entry for the same
	 * worker would let the bookkeeping below act on the wrong one, until
	 * the backend issued under a worker it held no lock on (the nemesis,
	 * seed 41; test 061).
	 */
	if (find_held(worker_table, worker) != nullptr || lock_held_by_me(object, worker_lock_mode) ||
		lock_held_by_me(advisory, worker_lock_mode))
		return false;
	if (held_count == max_held_workers)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("this session holds too many uidgen workers"),
				 errdetail("It holds %d, most of them workers it stopped using after losing their locks.",
						   held_count),
				 errhint("Start a new session.")));
	if (!try_take(object, true))
		return false;
	if (!try_take(advisory, true))
	{
		LockRelease(&object, worker_lock_mode, true);
		return false;
	}
	held[held_count++] = HeldWorker{worker_table, worker, WorkerUse::Candidate, 0};
	return true;
}

void
unlock_worker(Oid worker_table, int64_t worker)
{
	release_if_held(object_tag(worker_table, worker));
	release_if_held(advisory_tag(worker_table, worker));
	forget(worker_table, worker);
}

void
start_issuing(Oid worker_table, int64_t worker)
{
	set_use(worker_table, worker, WorkerUse::Issuing, 0);
}

void
retire_worker(Oid worker_table, int64_t worker, int64_t last_delta)
{
	set_use(worker_table, worker, WorkerUse::Retired, last_delta);
}

void
unlock_candidates()
{
	for (int i = held_count - 1; i >= 0; i--)
		if (held[i].use == WorkerUse::Candidate)
			unlock_worker(held[i].worker_table, held[i].worker);
}

void
unlock_all_workers()
{
	while (held_count > 0)
		unlock_worker(held[held_count - 1].worker_table, held[held_count - 1].worker);
}

bool
relock_worker(Oid worker_table, int64_t worker)
{
	bool object_held = take_if_lost(object_tag(worker_table, worker));
	bool advisory_held = take_if_lost(advisory_tag(worker_table, worker));

	return object_held && advisory_held;
}

bool
worker_locked_elsewhere(Oid worker_table, int64_t worker)
{
	/*
	 * The advisory lock alone: a claimant takes it second, so whoever holds it
	 * holds both, and a look at the object lock would make a claimant that has
	 * taken only that one fail on the advisory lock while we hold it.
	 */
	return held_elsewhere(advisory_tag(worker_table, worker));
}

bool
take_pool_mark(Oid worker_table, int64_t worker)
{
	return try_take(pool_mark_tag(worker_table, worker), true);
}

void
release_pool_mark(Oid worker_table, int64_t worker)
{
	release_if_held(pool_mark_tag(worker_table, worker));
}

bool
pool_mark_held_elsewhere(Oid worker_table, int64_t worker)
{
	LOCKTAG tag = pool_mark_tag(worker_table, worker);

	/* The pool's own marks are held, not free: it never takes its own workers for leaks. */
	return lock_held_by_me(tag, worker_lock_mode) || held_elsewhere(tag);
}

const HeldWorker *
issuing_entry(int64_t worker)
{
	for (int i = 0; i < held_count; i++)
		if (held[i].worker == worker && held[i].use == WorkerUse::Issuing)
			return &held[i];
	return nullptr;
}

int
held_worker_count()
{
	return held_count;
}

const HeldWorker &
held_worker(int index)
{
	Assert(index >= 0 && index < held_count);
	return held[index];
}

} // namespace uidgen::pg
