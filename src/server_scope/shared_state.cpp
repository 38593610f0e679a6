/*
 * shared_state.cpp
 *	  Where the server-wide generators' shared memory comes from.
 */
#include "server_scope/shared_state.hpp"

#include "pg/guard.hpp"
#include "pg/settings.hpp"

extern "C" {
#include "miscadmin.h"
#include "utils/syscache.h"
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

/* Where the slots begin, after the header. */
constexpr Size slots_offset = TYPEALIGN(alignof(SharedGenerator), sizeof(SharedState));

/* Every field as a slot starts: no database, no keeper, nothing counted. */
void
initialize_slot(SharedState *state, SharedGenerator *generator)
{
	new (generator) SharedGenerator();
	generator->database = InvalidOid;
	SpinLockInit(&generator->mutex);
	LWLockInitialize(&generator->privates_lock, state->lwlock_tranche);
	generator->stage = KeeperStage::Idle;
	ConditionVariableInit(&generator->changed);
}

/* Preloaded: the main shared memory holds the state (set in every process at startup). */
bool in_main_shared_memory = false;

void
initialize(SharedState *state)
{
	new (state) SharedState();
	state->lwlock_tranche = LWLockNewTrancheId();
	LWLockInitialize(&state->slots_lock, state->lwlock_tranche);
	state->generator_count = max_server_databases;
	for (int i = 0; i < state->generator_count; i++)
		initialize_slot(state, slot(state, i));
}

/*
 * Frees the slots of databases that were dropped, for generator_of() when
 * every slot is taken; true when it freed one.  Which databases exist is
 * looked up without the slots' lock (a catalog lookup may raise an error),
 * then each slot is freed only if it still names that database and no
 * keeper of it is alive: DROP DATABASE waited for every process connected
 * to the database, so none of its backends uses the slot.  A keeper
 * launched for it that starts late finds the slot another database's and
 * leaves (keeper.cpp).
 */
bool
free_dropped_slots(SharedState *state)
{
	int count = state->generator_count;
	Oid *databases = static_cast<Oid *>(palloc(sizeof(Oid) * count));
	bool freed = false;

	LWLockAcquire(&state->slots_lock, LW_SHARED);
	for (int i = 0; i < count; i++)
		databases[i] = slot(state, i)->database;
	LWLockRelease(&state->slots_lock);

	for (int i = 0; i < count; i++)
		if (OidIsValid(databases[i]) && SearchSysCacheExists1(DATABASEOID, ObjectIdGetDatum(databases[i])))
			databases[i] = InvalidOid;

	LWLockAcquire(&state->slots_lock, LW_EXCLUSIVE);
	for (int i = 0; i < count; i++)
	{
		SharedGenerator *g = slot(state, i);
		bool keeper_alive;

		if (!OidIsValid(databases[i]) || g->database != databases[i])
			continue;
		SpinLockAcquire(&g->mutex);
		keeper_alive = g->keeper_pid != 0;
		SpinLockRelease(&g->mutex);
		if (keeper_alive)
			continue;
		initialize_slot(state, g);
		freed = true;
	}
	LWLockRelease(&state->slots_lock);
	pfree(databases);
	return freed;
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
	return add_size(slots_offset, mul_size(sizeof(SharedGenerator), max_server_databases));
}

SharedGenerator *
slot(SharedState *state, int index)
{
	return reinterpret_cast<SharedGenerator *>(reinterpret_cast<char *>(state) + slots_offset) + index;
}

void
attach_shared_state()
{
	bool found;

	attached = static_cast<SharedState *>(ShmemInitStruct(shared_state_name, shared_state_size(), &found));
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
		GetNamedDSMSegment(shared_state_name, shared_state_size(), initialize_segment, &found)));
#endif
	return attached;
}

SharedGenerator *
generator_of(SharedState *state, Oid database, bool take)
{
	/* PostgreSQL code: through pg_call, whatever it may raise (pg/guard.hpp). */
	return pg_call([state, database, take] {
		SharedGenerator *found = nullptr;

		for (int round = 0; round < 2; round++)
		{
			SharedGenerator *free_slot = nullptr;

			LWLockAcquire(&state->slots_lock, take ? LW_EXCLUSIVE : LW_SHARED);
			for (int i = 0; i < state->generator_count; i++)
			{
				SharedGenerator *g = slot(state, i);

				if (g->database == database)
				{
					found = g;
					break;
				}
				if (free_slot == nullptr && g->database == InvalidOid)
					free_slot = g;
			}
			if (take && found == nullptr && free_slot != nullptr)
			{
				free_slot->database = database;
				found = free_slot;
			}
			LWLockRelease(&state->slots_lock);
			/* Every slot taken: those of dropped databases come back, once. */
			if (found != nullptr || !take || round > 0 || !free_dropped_slots(state))
				break;
		}
		return found;
	});
}

int
generator_index(const SharedState *state, const SharedGenerator *generator)
{
	return static_cast<int>(generator - slot(const_cast<SharedState *>(state), 0));
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
