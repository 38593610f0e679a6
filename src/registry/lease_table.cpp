/*
 * lease_table.cpp
 *	  The leased worker blocks in shared memory, and taking workers out of
 *	  them.
 */
#include "registry/lease_table.hpp"

#include "pg/guard.hpp"
#include "pg/pg_clock.hpp"

extern "C" {
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/wait_event.h"
}

#include <algorithm>
#include <ctime>
#include <new>
#include <utility>

namespace uidgen::pg {

namespace {

LeaseTable *attached = nullptr;

/*
 * How much of a lease must be left for a block to hand out a worker: a
 * worker whose lease ends at once would only fail.
 */
constexpr int64_t least_lease_left_ms = 1000;

void
initialize(LeaseTable *state)
{
	new (state) LeaseTable();
	state->lock_tranche = LWLockNewTrancheId();
	LWLockInitialize(&state->lock, state->lock_tranche);
	ConditionVariableInit(&state->changed);
	state->status = AgentStatus::Off;
	/*
	 * The server life: drawn at every start of the shared memory, a crash
	 * restart included, and never written down, so that no copy of this
	 * server's files can ever share it.
	 */
	if (!pg_strong_random(state->life, sizeof(state->life)))
		ereport(FATAL, (errmsg("could not generate a random uidgen server life token")));
	/* An RFC 9562 version 4 UUID. */
	state->life[6] = (state->life[6] & 0x0f) | 0x40;
	state->life[8] = (state->life[8] & 0x3f) | 0x80;
}

/* A block that can grant a worker now; under the table's lock. */
LeasedBlock *
block_with_room(LeaseTable *state, int64_t now_mono)
{
	for (int i = 0; i < state->nblocks; i++)
	{
		LeasedBlock &b = state->blocks[i];

		if (b.next_worker <= b.last_worker && b.deadline_mono_ms - now_mono >= least_lease_left_ms)
			return &b;
	}
	return nullptr;
}

/* The block this server life holds under lease, or nullptr; under the table's lock. */
const LeasedBlock *
block_of_lease(const LeaseTable *state, const LeaseId &lease)
{
	for (int i = 0; i < state->nblocks; i++)
	{
		const LeasedBlock &b = state->blocks[i];

		if (b.lease_id == lease)
			return &b;
	}
	return nullptr;
}

} // namespace

void
lease_id_text(const LeaseId &id, char out[lease_id_text_size])
{
	pg_uuid_t uuid;

	memcpy(uuid.data, id.bytes, UUID_LEN);
	uuid_text(uuid, out);
}

bool
parse_lease_id(const char *text, LeaseId *id)
{
	pg_uuid_t uuid;

	if (!parse_uuid_text(text, &uuid))
		return false;
	memcpy(id->bytes, uuid.data, UUID_LEN);
	return true;
}

Size
lease_table_size()
{
	return sizeof(LeaseTable);
}

void
attach_lease_table()
{
	bool found;

	attached = static_cast<LeaseTable *>(ShmemInitStruct("uidgen lease table", sizeof(LeaseTable), &found));
	if (!found)
		initialize(attached);
	join_count = &attached->joins;
	/* Names the lock's waits in pg_stat_activity; each process registers it for itself. */
	LWLockRegisterTranche(attached->lock_tranche, "uidgen lease table");
}

LeaseTable *
lease_table()
{
	return attached;
}

const std::atomic<uint64_t> *join_count = nullptr;

uint64_t
joins_so_far()
{
	return attached != nullptr ? attached->joins.load() : 0;
}

void
count_join()
{
	if (attached != nullptr)
		attached->joins.fetch_add(1);
}

bool
server_has_registry()
{
	if (attached == nullptr)
		return false;
	LWLockAcquire(&attached->lock, LW_SHARED);
	bool has = attached->status != AgentStatus::Off;
	LWLockRelease(&attached->lock);
	return has;
}

void
wake_agent()
{
	LeaseTable *state = lease_table();
	Latch *latch;

	if (state == nullptr)
		return;
	LWLockAcquire(&state->lock, LW_SHARED);
	latch = state->agent_latch;
	LWLockRelease(&state->lock);
	if (latch != nullptr)
		SetLatch(latch);
}

void
report_registry_failure(const char *what, bool fresh)
{
	LeaseTable *state = lease_table();
	char registry[registry_text_size];
	char error[error_text_size];
	int sqlstate;
	AgentStatus status;

	LWLockAcquire(&state->lock, LW_SHARED);
	memcpy(registry, state->registry, sizeof(registry));
	memcpy(error, state->error, sizeof(error));
	sqlstate = state->error_sqlstate;
	status = state->status;
	LWLockRelease(&state->lock);
	registry[sizeof(registry) - 1] = '\0';
	error[sizeof(error) - 1] = '\0';

	if (fresh && status == AgentStatus::Failed && error[0] != '\0')
		ereport(ERROR,
				(errcode(sqlstate != 0 ? sqlstate : ERRCODE_CONNECTION_FAILURE),
				 errmsg("%s: the uidgen registry \"%s\" failed", what, registry),
				 errdetail_internal("%s", error),
				 errhint("The server's registry agent tries again within a second when asked; see uidgen.registry_status.")));
	ereport(ERROR,
			(errcode(ERRCODE_CONNECTION_FAILURE),
			 errmsg("%s: no answer from the uidgen registry \"%s\" in time", what, registry),
			 errhint("See uidgen.registry_status and the server log.")));
	pg_unreachable();
}

uint64
agent_attempts()
{
	LeaseTable *state = lease_table();
	uint64 attempts;

	LWLockAcquire(&state->lock, LW_SHARED);
	attempts = state->attempts;
	LWLockRelease(&state->lock);
	return attempts;
}

void
wait_for_agent(int64_t until_mono, uint64 since, const char *what)
{
	LeaseTable *state = lease_table();

	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	bool failed = state->status == AgentStatus::Failed;
	/* An attempt begun after the registration: its failure is the answer. */
	bool fresh = failed && state->status_attempt > since;
	/* An older failure is not: ask for another attempt. */
	if (failed && !fresh)
		state->attempt_wanted = std::max(state->attempt_wanted, since + 1);
	LWLockRelease(&state->lock);
	int64_t left = until_mono - monotonic_ms();
	/* The agent could not reach the registry, or was refused: waiting would not help. */
	if (fresh || left <= 0)
		report_registry_failure(what, fresh);

	wake_agent();
	/* Interruptible; an error leaves the sleep through ConditionVariableCancelSleep() at abort. */
	ConditionVariablePrepareToSleep(&state->changed);
	(void) ConditionVariableTimedSleep(&state->changed, std::min<int64_t>(left, 1000), PG_WAIT_EXTENSION);
	ConditionVariableCancelSleep();
}

namespace {

/*
 * A grant of a dropped database that may go to another now, or -1; under
 * the table's lock.  The worker starts above its lease's floor and above
 * the last unit every holder of it in this server life noted at exit
 * (grant_issued_until() reads the same notes): the dropped database's
 * sessions and keeper all exited before DROP DATABASE went on.
 */
int
reusable_grant(const LeaseTable *state, int64_t now_mono, int64_t *floor)
{
	for (int i = 0; i < state->ngrants; i++)
	{
		if (!grant_reusable(state, i, now_mono, least_lease_left_ms))
			continue;
		*floor = block_of_lease(state, state->grants[i].lease_id)->floor_delta;
		for (int j = 0; j < state->ngrants; j++)
			if (state->grants[j].worker == state->grants[i].worker)
				*floor = std::max(*floor, state->grants[j].issued_until);
		return i;
	}
	return -1;
}

/* A worker for database from a block with room, or nullopt; errors when the grants are full. */
std::optional<GrantedWorker>
try_take(LeaseTable *state, Oid database, const char *database_name)
{
	std::optional<GrantedWorker> taken;
	bool grants_full = false;
	int64_t now_mono = monotonic_ms();	/* no clock read under the lock */
	int64_t floor;
	int reused;

	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	LeasedBlock *b = block_with_room(state, now_mono);
	if (b != nullptr && state->ngrants >= max_grants)
		grants_full = true;
	else if (b != nullptr)
	{
		Grant &g = state->grants[state->ngrants++];

		g.lease_id = b->lease_id;
		g.worker = b->next_worker++;
		g.database = database;
		namestrcpy(&g.database_name, database_name);
		g.reported = false;
		g.dropped = false;
		g.stamp = ++state->grant_stamps;
		g.issued_until = -1;
		taken = GrantedWorker{g.worker, b->floor_delta, b->lease_id};
	}
	else if ((reused = reusable_grant(state, now_mono, &floor)) >= 0)
	{
		Grant &g = state->grants[reused];

		g.database = database;
		namestrcpy(&g.database_name, database_name);
		g.reported = false;
		g.dropped = false;
		g.stamp = ++state->grant_stamps;
		taken = GrantedWorker{g.worker, floor, g.lease_id};
	}
	LWLockRelease(&state->lock);

	if (grants_full)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("this server has granted %d uidgen workers since it started", max_grants),
				 errhint("Restart the server, or use uidgen.scope = 'server', which needs one worker a "
						 "database.")));
	return taken;
}

void
count_waiting(LeaseTable *state, int delta)
{
	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	state->waiting += delta;
	LWLockRelease(&state->lock);
}

} // namespace

namespace {

/* Waits for a block with room, counted among the registrations that wait. */
GrantedWorker
take_waiting(LeaseTable *state, Oid database, const char *database_name, int64_t until)
{
	std::optional<GrantedWorker> taken;
	uint64 since = agent_attempts();

	count_waiting(state, 1);
	PG_TRY();
	{
		while (!(taken = try_take(state, database, database_name)))
			wait_for_agent(until, since, "could not lease a block of worker ids");
	}
	PG_CATCH();
	{
		count_waiting(state, -1);
		PG_RE_THROW();
	}
	PG_END_TRY();
	count_waiting(state, -1);
	return *taken;
}

} // namespace

GrantedWorker
take_granted_worker(Oid database, const char *database_name, int timeout_ms)
{
	LeaseTable *state = lease_table();

	std::optional<GrantedWorker> taken = try_take(state, database, database_name);
	GrantedWorker worker = taken ? *taken : take_waiting(state, database, database_name, monotonic_ms() + timeout_ms);

	/* Keep a block in reserve: the agent leases the next one now if this one runs low. */
	wake_agent();
	return worker;
}

bool
grant_reusable(const LeaseTable *state, int i, int64_t now_mono, int64_t for_ms)
{
	const LeasedBlock *b = state->grants[i].dropped ? block_of_lease(state, state->grants[i].lease_id) : nullptr;

	return b != nullptr && b->deadline_mono_ms - now_mono >= for_ms;
}

void
note_grant_exit(int64_t worker, int64_t last_delta)
{
	LeaseTable *state = lease_table();

	if (state == nullptr)
		return;
	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	for (int i = 0; i < state->ngrants; i++)
	{
		if (state->grants[i].worker == worker)
			state->grants[i].issued_until = std::max(state->grants[i].issued_until, last_delta);
	}
	LWLockRelease(&state->lock);
}

int64_t
grant_issued_until(int64_t worker)
{
	LeaseTable *state = lease_table();
	int64_t issued = -1;

	if (state == nullptr)
		return issued;
	LWLockAcquire(&state->lock, LW_SHARED);
	for (int i = 0; i < state->ngrants; i++)
	{
		if (state->grants[i].worker == worker)
			issued = std::max(issued, state->grants[i].issued_until);
	}
	LWLockRelease(&state->lock);
	return issued;
}

int64_t *
granted_workers(Oid database, int *count)
{
	LeaseTable *state = lease_table();
	int64_t *workers = static_cast<int64_t *>(palloc(sizeof(int64_t) * max_grants));
	int n = 0;

	int64_t now_mono = monotonic_ms();

	LWLockAcquire(&state->lock, LW_SHARED);
	for (int i = 0; i < state->ngrants; i++)
	{
		const LeasedBlock *b = block_of_lease(state, state->grants[i].lease_id);

		/*
		 * A worker of a lease that lapsed may be another server's now, or
		 * another database's of this one, under a new lease of its block.
		 */
		if (state->grants[i].database == database && !state->grants[i].dropped && b != nullptr &&
			b->deadline_mono_ms - now_mono >= least_lease_left_ms)
			workers[n++] = state->grants[i].worker;
	}
	LWLockRelease(&state->lock);
	*count = n;
	return workers;
}

std::optional<LeaseId>
live_lease(int64_t worker, Oid database)
{
	LeaseTable *state = lease_table();
	std::optional<LeaseId> live;
	int64_t now_mono = monotonic_ms();

	LWLockAcquire(&state->lock, LW_SHARED);
	for (int i = 0; i < state->ngrants && !live; i++)
	{
		const Grant &g = state->grants[i];
		const LeasedBlock *b =
			g.worker == worker && g.database == database && !g.dropped ? block_of_lease(state, g.lease_id) : nullptr;

		if (b != nullptr && b->deadline_mono_ms - now_mono >= least_lease_left_ms)
			live = g.lease_id;
	}
	LWLockRelease(&state->lock);
	return live;
}

namespace {

/* A copy of the block this server life holds under lease, with max_borrow, or nullopt. */
std::optional<std::pair<LeasedBlock, int64_t>>
held_lease(const LeaseId &lease)
{
	LeaseTable *state = lease_table();
	std::optional<std::pair<LeasedBlock, int64_t>> held;

	if (state == nullptr)
		return std::nullopt;
	/* Called from generators' C++ frames: LWLockAcquire may raise an error. */
	pg_call([state, &lease, &held] {
		LWLockAcquire(&state->lock, LW_SHARED);
		const LeasedBlock *b = block_of_lease(state, lease);
		if (b != nullptr)
			held.emplace(*b, state->rules.max_borrow_ms);
		LWLockRelease(&state->lock);
	});
	return held;
}

} // namespace

std::optional<LeaseId>
lease_with_room()
{
	LeaseTable *state = lease_table();
	std::optional<LeaseId> lease;
	int64_t now_mono = monotonic_ms();	/* no clock read under the lock */

	LWLockAcquire(&state->lock, LW_SHARED);
	if (const LeasedBlock *b = block_with_room(state, now_mono))
		lease = b->lease_id;
	LWLockRelease(&state->lock);
	return lease;
}

/* R4: the cap of a lease found by its ID, the registry's ceiling deciding (lease_cap()). */
std::optional<int64_t>
lease_cap_delta(const LeaseId &lease, const Layout &layout)
{
	std::optional<std::pair<LeasedBlock, int64_t>> held = held_lease(lease);
	if (!held)
		return std::nullopt;
	const auto &[block, max_borrow] = *held;
	return lease_cap(layout, block.ceiling_delta, block.deadline_mono_ms - monotonic_ms(), backend_clock().now_ms(),
					 max_borrow);
}

std::optional<int64_t>
lease_ceiling_delta(const LeaseId &lease)
{
	std::optional<std::pair<LeasedBlock, int64_t>> held = held_lease(lease);
	return held ? std::optional<int64_t>(held->first.ceiling_delta) : std::nullopt;
}

std::optional<int64_t>
lease_floor_delta(const LeaseId &lease)
{
	std::optional<std::pair<LeasedBlock, int64_t>> held = held_lease(lease);
	return held ? std::optional<int64_t>(held->first.floor_delta) : std::nullopt;
}

std::optional<RegistryRules>
registry_rules()
{
	LeaseTable *state = lease_table();
	std::optional<RegistryRules> rules;

	if (state == nullptr)
		return rules;
	LWLockAcquire(&state->lock, LW_SHARED);
	if (state->have_rules)
		rules = state->rules;
	LWLockRelease(&state->lock);
	return rules;
}

void
describe_current_registry(char out[registry_text_size])
{
	LeaseTable *state = lease_table();

	LWLockAcquire(&state->lock, LW_SHARED);
	memcpy(out, state->registry, registry_text_size);
	LWLockRelease(&state->lock);
	out[registry_text_size - 1] = '\0';
}

} // namespace uidgen::pg
