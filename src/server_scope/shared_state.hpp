/*
 * shared_state.hpp
 *	  The server-wide generators in shared memory: one slot per database.
 *
 * A slot belongs to a database from the first uid_next() with scope server
 * until the server stops or the database is dropped: a backend that finds
 * every slot taken frees those of databases that pg_database no longer has
 * (generator_of()).  There are uidgen.max_server_databases of them.  Its keeper (keeper.hpp), a background worker
 * connected to the database, claims a worker in uidgen.worker_node in a
 * transaction of its own, keeps the time reservation ahead of the cursor
 * and publishes both here; backends take chunks of the cursor
 * (shared_cursor.hpp) and never write anything themselves.
 *
 * The slot lives as long as the shared memory: a crash restart starts from
 * a new one, and a worker whose keeper died is reused only above its floor,
 * which the time reservation covers (INV-10, INV-14).
 *
 * Two places can hold it: the main shared memory, when uidgen is in
 * shared_preload_libraries, or on PostgreSQL 17 and later a named DSM
 * segment (GetNamedDSMSegment), made by the first backend that needs it.
 */
#pragma once

#include "core/layout.hpp"
#include "registry/lease_table.hpp"

#include <atomic>
#include <cstdint>
#include <optional>
#include <type_traits>

extern "C" {
#include "postgres.h"

#include "storage/condition_variable.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/spin.h"
}

namespace uidgen::pg {

/* Workers a database's keeper can lend to backends whose demand outruns the shared cursor. */
constexpr int max_private_workers = 8;

enum class KeeperStage : int
{
	Idle,		/* no keeper: the next backend that needs one starts it */
	Starting,	/* launched; waiting for it to claim a worker */
	Ready,		/* the cursor may be taken from */
	Failed,		/* the last keeper could not claim: error_message says why */
};

/*
 * A worker the keeper holds and lends to one backend at a time.  Each has a
 * reservation of its own: with a registry, its lease caps it, not the
 * leases of the keeper's other workers (INV-17; step F3 of the fleet argument).
 */
struct PrivateWorker
{
	int64_t worker;
	int64_t floor_delta;	/* the last unit issued under it; the next borrower starts after it */
	int64_t reserved_until;	/* its borrowers issue no unit after it; only rises */
	int borrower_pid;		/* 0: free */
	bool withdrawn;			/* its lease ended: lent no more, and its borrower gives it back */
	LeaseId lease;			/* with a registry, the lease it came from, which caps it */
};
static_assert(std::is_trivially_destructible_v<PrivateWorker>);

/*
 * Everything of one database.  The mutex guards every scalar that is not
 * atomic, and is held only to copy them; privates_lock guards the private
 * workers, which are searched.
 */
struct SharedGenerator
{
	Oid database;			/* InvalidOid: a free slot (guarded by the state's mutex) */
	slock_t mutex;
	KeeperStage stage;
	int keeper_pid;
	Latch *keeper_latch;	/* set while a keeper lives */
	ConditionVariable changed;	/* stage, generation or reserved_until moved */

	/* Published with stage Ready; Layout is trivially copyable, so it may live here. */
	std::optional<Layout> layout;
	int64_t worker;
	int64_t started_at_ms;
	int64_t keeper_launched_at_ms;	/* when a backend last set stage Starting */

	/* Failed: the keeper's error, to be raised in the backends that wait for it. */
	int error_code;
	char error_message[256];
	char error_hint[256];

	/*
	 * With a registry, the lease the cursor's worker came from: a backend
	 * that waits for the reservation to pass its ceiling raises the
	 * ceiling's error at once rather than the keeper's timeout, since the
	 * keeper never extends the reservation beyond it.
	 */
	bool leased;
	LeaseId lease;
	/*
	 * The server's join count the keeper's claim saw: a keeper whose workers
	 * came without a registry issues nothing once it moved (INV-19), and a
	 * backend looks before every ID (server_generator.cpp).
	 */
	uint64_t joins_seen;

	/* Requests to the keeper, and the private workers: under privates_lock, not the mutex. */
	LWLock privates_lock;
	bool private_wanted;
	PrivateWorker privates[max_private_workers];
	int private_count;

	/* The hot path's: lock-free. */
	std::atomic<uint32_t> generation;	/* bumped before the keeper publishes a new cursor */
	std::atomic<uint64_t> cursor;
	std::atomic<int64_t> reserved_until;	/* the cursor's: the last unit the durable mark and its lease cover */
	std::atomic<int64_t> wanted_until;		/* the furthest unit a backend waits to see covered */
	std::atomic<uint64_t> ids;
	std::atomic<uint64_t> chunks;
	std::atomic<uint64_t> dropped;
	std::atomic<uint64_t> waits;
};
static_assert(std::is_trivially_destructible_v<SharedGenerator>);

static_assert(std::is_trivially_copyable_v<Layout>, "a Layout is copied in and out of shared memory");

/*
 * The slots follow the header in the same memory: generator_count of them
 * (uidgen.max_server_databases when the memory was made), reached through
 * slot().
 */
struct SharedState
{
	int lwlock_tranche;		/* of slots_lock and every generator's privates_lock */
	LWLock slots_lock;		/* guards each slot's database */
	int generator_count;
};
static_assert(std::is_trivially_destructible_v<SharedState>);

/* Slot index of state (0 <= index < state->generator_count). */
SharedGenerator *slot(SharedState *state, int index);

/*
 * Preloaded (shared_preload_libraries), the state lives in the main shared
 * memory: _PG_init says so, the shared-memory hooks (module.cpp) reserve
 * shared_state_size() and call attach_shared_state() in every process at
 * startup, under AddinShmemInitLock.
 */
void use_main_shared_memory();
Size shared_state_size();
void attach_shared_state();

/*
 * The state, attached on first use; nullptr when there is none to be had
 * (PostgreSQL 15 or 16 without shared_preload_libraries).
 */
SharedState *shared_state();

/* Whether shared_state() can succeed in this server, without attaching. */
bool shared_state_available();

/*
 * This database's slot; with take, one is taken if it has none, freeing
 * first, when every slot is taken, the slots of databases that were dropped
 * (no keeper of theirs is left: DROP DATABASE waits for every process
 * connected to it).  nullptr when it has none (and every slot is taken by a
 * database that exists, with take).
 */
SharedGenerator *generator_of(SharedState *state, Oid database, bool take);

/* The index of generator in state, for the keeper's start. */
int generator_index(const SharedState *state, const SharedGenerator *generator);

/* Wakes the keeper of generator, if it has one. */
void wake_keeper(SharedGenerator *generator);

} // namespace uidgen::pg
