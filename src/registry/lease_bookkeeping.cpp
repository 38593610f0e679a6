/*
 * lease_bookkeeping.cpp
 *	  The agent's reading of its lease table, and the blocks it drops.
 */
#include "registry/lease_bookkeeping.hpp"

#include "core/lease_policy.hpp"

extern "C" {
#include "storage/condition_variable.h"
#include "storage/lwlock.h"
}

namespace uidgen::pg {

namespace {

/* What block b adds to spare_workers(); under the table's lock. */
int64_t
spare_of_block(const LeaseTable *state, int b, int64_t now_mono)
{
	const LeasedBlock &block = state->blocks[b];
	int64_t spare = 0;

	if (counts_as_spare(block.deadline_mono_ms - now_mono, block.lease_ms))
		spare += block.last_worker - block.next_worker + 1;
	for (int i = 0; i < state->ngrants; i++)
	{
		if (state->grants[i].lease_id == block.lease_id && grant_reusable(state, i, now_mono, 0))
			spare++;
	}
	return spare;
}

/*
 * Whether block b granted workers and every one of them went to a database
 * that was dropped since; under the table's lock.  A block that granted
 * none yet is the reserve, not emptied.
 */
bool
emptied(const LeaseTable *state, int b)
{
	const LeasedBlock &block = state->blocks[b];
	bool granted = false;

	for (int i = 0; i < state->ngrants; i++)
	{
		const Grant &g = state->grants[i];

		if (g.lease_id != block.lease_id)
			continue;
		if (!g.dropped)
			return false;
		granted = true;
	}
	return granted;
}

} // namespace

bool
renewal_due(const LeaseTable *state, int64_t now_mono)
{
	for (int i = 0; i < state->nblocks; i++)
	{
		const LeasedBlock &b = state->blocks[i];

		if (uidgen::renewal_due(b.deadline_mono_ms - now_mono, b.lease_ms))
			return true;
	}
	for (int i = 0; i < state->ngrants; i++)
	{
		if (!state->grants[i].reported)
			return true;
	}
	return false;
}

int64_t
spare_workers(const LeaseTable *state, int64_t now_mono)
{
	int64_t spare = 0;

	for (int i = 0; i < state->nblocks; i++)
		spare += spare_of_block(state, i, now_mono);
	return spare;
}

bool
block_wanted(const LeaseTable *state, int64_t now_mono)
{
	return uidgen::block_wanted(state->nblocks, max_leased_blocks, state->waiting, spare_workers(state, now_mono),
								state->rules.block_size);
}

void
drop_expired_blocks(LeaseTable *state, int64_t now_mono)
{
	int kept = 0;

	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	for (int i = 0; i < state->nblocks; i++)
	{
		if (state->blocks[i].deadline_mono_ms > now_mono)
			state->blocks[kept++] = state->blocks[i];
	}
	state->nblocks = kept;
	LWLockRelease(&state->lock);
}

void
give_back_emptied_blocks(LeaseTable *state, int64_t now_mono)
{
	int64_t given_back[max_leased_blocks];
	int ngiven = 0;

	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	for (int b = 0; b < state->nblocks;)
	{
		if (!emptied(state, b) ||
			!give_back_wanted(state->nblocks, max_leased_blocks, state->waiting,
							  spare_workers(state, now_mono) - spare_of_block(state, b, now_mono),
							  state->rules.block_size))
		{
			b++;
			continue;
		}
		/* Its grants first (no holder is left: their databases are gone), then the block. */
		LeaseId lease = state->blocks[b].lease_id;
		int kept = 0;

		for (int i = 0; i < state->ngrants; i++)
		{
			if (state->grants[i].lease_id != lease)
				state->grants[kept++] = state->grants[i];
		}
		state->ngrants = kept;
		given_back[ngiven++] = state->blocks[b].block;
		state->blocks[b] = state->blocks[--state->nblocks];
	}
	LWLockRelease(&state->lock);

	for (int i = 0; i < ngiven; i++)
		ereport(LOG, (errmsg("uidgen registry agent: gave back worker block %lld: each database its workers went "
							 "to was dropped",
							 static_cast<long long>(given_back[i]))));
	if (ngiven > 0)
		ConditionVariableBroadcast(&state->changed);
}

} // namespace uidgen::pg
