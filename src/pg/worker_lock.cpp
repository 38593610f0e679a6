/*
 * worker_lock.cpp
 *	  Session locks on worker ids.
 */
#include "pg/worker_lock.hpp"

#include "pg/compat.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/lock.h"
}

namespace uidgen::pg {

namespace {

constexpr uint16 advisory_key_kind = 3;
constexpr LOCKMODE worker_lock_mode = ExclusiveLock;

/* Workers locked by this backend.  A registration locks one at a time. */
struct LockedWorker
{
	Oid registry_relid;
	int64_t worker;
};
constexpr int max_locked_workers = 64;
LockedWorker locked[max_locked_workers];
int locked_count = 0;

void
remember(Oid registry_relid, int64_t worker)
{
	Assert(locked_count < max_locked_workers);
	locked[locked_count++] = LockedWorker{registry_relid, worker};
}

void
forget(Oid registry_relid, int64_t worker)
{
	for (int i = 0; i < locked_count; i++)
		if (locked[i].registry_relid == registry_relid && locked[i].worker == worker)
		{
			locked[i] = locked[--locked_count];
			return;
		}
}

LOCKTAG
object_tag(Oid registry_relid, int64_t worker)
{
	LOCKTAG tag;

	SET_LOCKTAG_OBJECT(tag, MyDatabaseId, registry_relid, static_cast<uint32>(worker), 0);
	return tag;
}

LOCKTAG
advisory_tag(Oid registry_relid, int64_t worker)
{
	LOCKTAG tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, registry_relid, static_cast<uint32>(worker), advisory_key_kind);
	return tag;
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
try_lock_worker(Oid registry_relid, int64_t worker)
{
	Assert(worker >= 0 && worker <= max_lockable_worker);
	LOCKTAG object = object_tag(registry_relid, worker);
	LOCKTAG advisory = advisory_tag(registry_relid, worker);

	/* Held already means held by this backend: not a free worker. */
	if (lock_held_by_me(object, worker_lock_mode) || lock_held_by_me(advisory, worker_lock_mode))
		return false;
	if (locked_count == max_locked_workers)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("this session holds too many uidgen worker locks")));
	if (!try_take(object, true))
		return false;
	if (!try_take(advisory, true))
	{
		LockRelease(&object, worker_lock_mode, true);
		return false;
	}
	remember(registry_relid, worker);
	return true;
}

void
unlock_worker(Oid registry_relid, int64_t worker)
{
	release_if_held(object_tag(registry_relid, worker));
	release_if_held(advisory_tag(registry_relid, worker));
	forget(registry_relid, worker);
}

void
unlock_workers_except(const int64_t *keep, int nkeep)
{
	for (int i = locked_count - 1; i >= 0; i--)
	{
		bool kept = false;

		for (int k = 0; k < nkeep && !kept; k++)
			kept = keep[k] == locked[i].worker;
		if (!kept)
			unlock_worker(locked[i].registry_relid, locked[i].worker);
	}
}

bool
relock_worker(Oid registry_relid, int64_t worker)
{
	bool object_held = take_if_lost(object_tag(registry_relid, worker));
	bool advisory_held = take_if_lost(advisory_tag(registry_relid, worker));

	return object_held && advisory_held;
}

} // namespace uidgen::pg
