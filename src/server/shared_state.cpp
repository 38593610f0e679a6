/*
 * shared_state.cpp
 *	  Where the server-wide generators' shared memory comes from.
 */
#include "server/shared_state.hpp"

#include "registry/lease_table.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#if PG_VERSION_NUM >= 170000
#include "storage/dsm_registry.h"
#endif
}

#include <new>

namespace uidgen::pg {

namespace {

constexpr const char *shared_state_name = "uidgen";

SharedState *attached = nullptr;

shmem_request_hook_type previous_request_hook = nullptr;
shmem_startup_hook_type previous_startup_hook = nullptr;

/* Preloaded: the main shared memory holds the state (set in every process at startup). */
bool in_main_shared_memory = false;

void
initialize(SharedState *state)
{
	new (state) SharedState();
	SpinLockInit(&state->mutex);
	for (SharedGenerator &generator : state->generators)
	{
		generator.database = InvalidOid;
		SpinLockInit(&generator.mutex);
		generator.stage = KeeperStage::Idle;
		ConditionVariableInit(&generator.changed);
	}
}

void
request_hook()
{
	if (previous_request_hook)
		previous_request_hook();
	RequestAddinShmemSpace(sizeof(SharedState));
	RequestAddinShmemSpace(sizeof(LeaseTable));
}

void
startup_hook()
{
	bool found;

	if (previous_startup_hook)
		previous_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	attached = static_cast<SharedState *>(ShmemInitStruct(shared_state_name, sizeof(SharedState), &found));
	if (!found)
		initialize(attached);
	/* The registry's blocks (lease_table.hpp) need the main shared memory too. */
	attach_lease_table();
	LWLockRelease(AddinShmemInitLock);
}

#if PG_VERSION_NUM >= 170000
/* C linkage: GetNamedDSMSegment() calls it through a pointer. */
extern "C" void
initialize_segment(void *ptr)
{
	initialize(static_cast<SharedState *>(ptr));
}
#endif

} // namespace

void
request_shared_state()
{
	in_main_shared_memory = true;
	previous_request_hook = shmem_request_hook;
	shmem_request_hook = request_hook;
	previous_startup_hook = shmem_startup_hook;
	shmem_startup_hook = startup_hook;
}

bool
shared_state_available()
{
	/* Named DSM segments arrived in PostgreSQL 17. */
	return in_main_shared_memory || PG_VERSION_NUM >= 170000;
}

SharedState *
shared_state()
{
	if (attached != nullptr || in_main_shared_memory)
		return attached;
#if PG_VERSION_NUM >= 170000
	bool found;

	/* Survives until the server restarts or crashes, like the main shared memory. */
	attached = static_cast<SharedState *>(
		GetNamedDSMSegment(shared_state_name, sizeof(SharedState), initialize_segment, &found));
#endif
	return attached;
}

SharedGenerator *
generator_of(SharedState *state, Oid database, bool take)
{
	SharedGenerator *free_slot = nullptr;
	SharedGenerator *found = nullptr;

	SpinLockAcquire(&state->mutex);
	for (SharedGenerator &generator : state->generators)
	{
		if (generator.database == database)
		{
			found = &generator;
			break;
		}
		if (free_slot == nullptr && generator.database == InvalidOid)
			free_slot = &generator;
	}
	if (take && found == nullptr && free_slot != nullptr)
	{
		free_slot->database = database;
		found = free_slot;
	}
	SpinLockRelease(&state->mutex);
	return found;
}

int
generator_index(const SharedState *state, const SharedGenerator *generator)
{
	return static_cast<int>(generator - state->generators);
}

void
wake_keeper(SharedGenerator *generator)
{
	Latch *latch;

	SpinLockAcquire(&generator->mutex);
	latch = generator->keeper_latch;
	SpinLockRelease(&generator->mutex);
	if (latch != nullptr)
		SetLatch(latch);
}

} // namespace uidgen::pg
