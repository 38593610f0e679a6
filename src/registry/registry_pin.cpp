/*
 * registry_pin.cpp
 *	  The identity of the registry this server life works with, in the
 *	  lease table (registry_pin.hpp).
 */
#include "registry/registry_pin.hpp"

#include "pg/pg_clock.hpp"
#include "pg/xact_events.hpp"
#include "registry/lease_table.hpp"

extern "C" {
#include "utils/builtins.h"
#include "utils/wait_event.h"
}

#include <algorithm>
#include <cstring>

namespace uidgen::pg {

static_assert(sizeof(Predecessors::ids) / sizeof(pg_uuid_t) == max_predecessors);

bool
imported(const Predecessors &predecessors, const pg_uuid_t &id)
{
	for (int i = 0; i < predecessors.count; i++)
	{
		if (memcmp(predecessors.ids[i].data, id.data, UUID_LEN) == 0)
			return true;
	}
	return false;
}

bool
note_registry_identity(const pg_uuid_t &seen, const Predecessors &predecessors, uint64 attempt, pg_uuid_t *pinned)
{
	LeaseTable *state = lease_table();
	bool same;

	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	memcpy(state->registry_seen_id, seen.data, UUID_LEN);
	state->registry_seen_npredecessors = predecessors.count;
	for (int i = 0; i < predecessors.count; i++)
		memcpy(state->registry_seen_predecessors[i], predecessors.ids[i].data, UUID_LEN);
	state->registry_seen = true;
	state->registry_seen_attempt = attempt;
	if (!state->registry_pinned)
	{
		memcpy(state->registry_id, seen.data, UUID_LEN);
		state->registry_pinned = true;
	}
	memcpy(pinned->data, state->registry_id, UUID_LEN);
	same = memcmp(state->registry_id, seen.data, UUID_LEN) == 0;
	LWLockRelease(&state->lock);
	ConditionVariableBroadcast(&state->changed);
	return same;
}

bool
seen_registry(pg_uuid_t *seen, Predecessors *predecessors)
{
	LeaseTable *state = lease_table();
	bool any;

	LWLockAcquire(&state->lock, LW_SHARED);
	any = state->registry_seen;
	memcpy(seen->data, state->registry_seen_id, UUID_LEN);
	predecessors->count = any ? state->registry_seen_npredecessors : 0;
	for (int i = 0; i < predecessors->count; i++)
		memcpy(predecessors->ids[i].data, state->registry_seen_predecessors[i], UUID_LEN);
	LWLockRelease(&state->lock);
	return any;
}

namespace {

/* Whether this backend's transaction began a lost move, which its end ends. */
bool lost_move_begun = false;

} // namespace

void
begin_lost_move()
{
	if (lost_move_begun)
		return;
	lost_move_begun = true;
	lease_table()->lost_moves.fetch_add(1);
	wake_agent();
}

void
lost_move_at_xact_event(XactEvent event)
{
	if (lost_move_begun && ends_transaction(event))
	{
		lost_move_begun = false;
		lease_table()->lost_moves.fetch_sub(1);
	}
}

bool
lost_move_wanted()
{
	return lease_table()->lost_moves.load() > 0;
}

bool
identity_read_wanted()
{
	LeaseTable *state = lease_table();
	bool wanted;

	LWLockAcquire(&state->lock, LW_SHARED);
	wanted = state->identity_wanted > state->registry_seen_attempt;
	LWLockRelease(&state->lock);
	return wanted;
}

bool
read_identity_afresh(int64_t until_mono)
{
	LeaseTable *state = lease_table();
	uint64 since;

	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	since = state->attempts;
	state->identity_wanted = std::max(state->identity_wanted, since + 1);
	LWLockRelease(&state->lock);

	for (;;)
	{
		LWLockAcquire(&state->lock, LW_SHARED);
		bool read = state->registry_seen && state->registry_seen_attempt > since;
		bool failed = state->status == AgentStatus::Failed && state->status_attempt > since;
		LWLockRelease(&state->lock);
		if (read)
			return true;
		int64_t left = until_mono - monotonic_ms();
		if (failed || left <= 0)
			return false;
		wake_agent();
		ConditionVariablePrepareToSleep(&state->changed);
		(void) ConditionVariableTimedSleep(&state->changed, std::min<int64_t>(left, 1000), PG_WAIT_EXTENSION);
		ConditionVariableCancelSleep();
	}
}

void
unpin_registry()
{
	LeaseTable *state = lease_table();

	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	state->registry_pinned = false;
	state->registry_seen = false;
	LWLockRelease(&state->lock);
}

bool
pinned_registry(pg_uuid_t *id)
{
	LeaseTable *state = lease_table();
	bool pinned;

	LWLockAcquire(&state->lock, LW_SHARED);
	pinned = state->registry_pinned;
	memcpy(id->data, state->registry_id, UUID_LEN);
	LWLockRelease(&state->lock);
	return pinned;
}

bool
pin_seen_registry(pg_uuid_t *adopted, bool *changed)
{
	LeaseTable *state = lease_table();
	bool seen;

	*changed = false;
	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	seen = state->registry_seen;
	if (seen)
	{
		*changed = !state->registry_pinned || memcmp(state->registry_id, state->registry_seen_id, UUID_LEN) != 0;
		if (*changed)
		{
			/* Leased by another registry, which can no longer be renewed: their workers stop at their caps. */
			memcpy(state->registry_id, state->registry_seen_id, UUID_LEN);
			state->registry_pinned = true;
			state->nblocks = 0;
			/* Registrations wait for the rules of the registry pinned now. */
			state->have_rules = false;
		}
		memcpy(adopted->data, state->registry_id, UUID_LEN);
	}
	LWLockRelease(&state->lock);
	if (*changed)
	{
		ConditionVariableBroadcast(&state->changed);
		wake_agent();
	}
	return seen;
}

} // namespace uidgen::pg
