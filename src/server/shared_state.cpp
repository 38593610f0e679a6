/*
 * shared_state.cpp
 *	  Where the server-wide generators' shared memory comes from.
 */
#include "server/shared_state.hpp"

#include "pg/guard.hpp"

extern "C" {
#include "miscadmin.h"
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

/* Preloaded: the main shared memory holds the state (set in every process at startup). */
bool in_main_shared_memory = false;

void
initialize(SharedState *state)
{
	new (state) SharedState();
	state->lwlock_tranche = LWLockNewTrancheId();
	LWLockInitialize(&state->slots_lock, state->lwlock_tranche);
	for (SharedGenerator &generator : state->generators)
	{
		generator.database = InvalidOid;
		SpinLockInit(&generator.mutex);
		LWLockInitialize(&generator.privates_lock, state->lwlock_tranche);
		generator.stage = KeeperStage::Idle;
		ConditionVariableInit(&generator.changed);
	}
}

/* The tranche's name, for wait events; once in each process that attaches. */
SharedState *
named(SharedState *state)
{
	if (state != nullptr)
		LWLockRegisterTranche(state->lwlock_tranche, "uidgen");
	return state;
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
use_main_shared_memory()
{
	in_main_shared_memory = true;
}

Size
shared_state_size()
{
	return sizeof(SharedState);
}

void
attach_shared_state()
{
	bool found;

	attached = static_cast<SharedState *>(ShmemInitStruct(shared_state_name, sizeof(SharedState), &found));
	if (!found)
		initialize(attached);
	(void) named(attached);
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
	attached = named(static_cast<SharedState *>(
		GetNamedDSMSegment(shared_state_name, sizeof(SharedState), initialize_segment, &found)));
#endif
	return attached;
}

SharedGenerator *
generator_of(SharedState *state, Oid database, bool take)
{
	/* PostgreSQL code: through pg_call, whatever it may raise (pg/guard.hpp). */
	return pg_call([state, database, take] {
		SharedGenerator *free_slot = nullptr;
		SharedGenerator *found = nullptr;

		LWLockAcquire(&state->slots_lock, take ? LW_EXCLUSIVE : LW_SHARED);
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
		LWLockRelease(&state->slots_lock);
		return found;
	});
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
