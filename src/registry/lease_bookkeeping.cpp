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

/*
 * The blocks to give back now (their indexes, in order, into out; returns
 * how many): each block that granted workers, all of them to databases
 * dropped since (a block that granted none yet is the reserve), while the
 * blocks kept leave enough spare (give_back_wanted()).  One pass over the
 * grants; under the table's lock.
 */
int
blocks_to_give_back(const LeaseTable *state, int64_t now_mono, int out[max_leased_blocks])
{
	bool granted[max_leased_blocks] = {};
	bool live[max_leased_blocks] = {};
	int64_t spare[max_leased_blocks] = {};
	int64_t total = 0;
	int n = 0;

	for (int b = 0; b < state->nblocks; b++)
	{
		const LeasedBlock &block = state->blocks[b];

		if (counts_as_spare(block.deadline_mono_ms - now_mono, block.lease_ms))
			spare[b] = block.last_worker - block.next_worker + 1;
	}
	for (int i = 0; i < state->ngrants; i++)
	{
		const Grant &g = state->grants[i];

		for (int b = 0; b < state->nblocks; b++)
		{
			if (g.lease_id != state->blocks[b].lease_id)
				continue;
			granted[b] = true;
			live[b] = live[b] || !g.dropped;
			if (grant_reusable(state, i, now_mono, 0))
				spare[b]++;
			break;
		}
	}
	for (int b = 0; b < state->nblocks; b++)
		total += spare[b];
	int blocks = state->nblocks;
	for (int b = 0; b < state->nblocks; b++)
	{
		if (!granted[b] || live[b] ||
			!give_back_wanted(blocks, max_leased_blocks, state->waiting, total - spare[b], state->rules.block_size))
			continue;
		out[n++] = b;
		total -= spare[b];
		blocks--;
	}
	return n;
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
	return state->nreleased > 0;
}

int64_t
spare_workers(const LeaseTable *state, int64_t now_mono)
{
	int64_t spare = 0;

	for (int i = 0; i < state->nblocks; i++)
	{
		const LeasedBlock &b = state->blocks[i];

		if (counts_as_spare(b.deadline_mono_ms - now_mono, b.lease_ms))
			spare += b.last_worker - b.next_worker + 1;
	}
	for (int i = 0; i < state->ngrants; i++)
	{
		if (grant_reusable(state, i, now_mono, 0))
			spare++;
	}
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
	int chosen[max_leased_blocks];
	int64_t given_back[max_leased_blocks];
	int ngiven;

	/* Most rounds give back nothing: looked at under the shared lock first. */
	LWLockAcquire(&state->lock, LW_SHARED);
	ngiven = blocks_to_give_back(state, now_mono, chosen);
	LWLockRelease(&state->lock);
	if (ngiven == 0)
		return;

	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	ngiven = blocks_to_give_back(state, now_mono, chosen);
	/* From the last chosen down, so that the indexes still to go stay valid. */
	for (int k = ngiven - 1; k >= 0; k--)
	{
		int b = chosen[k];
		LeaseId lease = state->blocks[b].lease_id;
		int kept = 0;

		/* Its grants first (no holder is left: their databases are gone), then the block. */
		for (int i = 0; i < state->ngrants; i++)
		{
			if (state->grants[i].lease_id != lease)
				state->grants[kept++] = state->grants[i];
		}
		state->ngrants = kept;
		given_back[k] = state->blocks[b].block;
		/* To be released at the registry; a full list leaves the lease to lapse there. */
		if (state->nreleased < max_leased_blocks)
			state->released[state->nreleased++] = lease;
		for (int j = b + 1; j < state->nblocks; j++)
			state->blocks[j - 1] = state->blocks[j];
		state->nblocks--;
	}
	LWLockRelease(&state->lock);

	for (int k = 0; k < ngiven; k++)
		ereport(LOG, (errmsg("uidgen registry agent: gave back worker block %lld: each database its workers went "
							 "to was dropped",
							 static_cast<long long>(given_back[k]))));
	ConditionVariableBroadcast(&state->changed);
}

} // namespace uidgen::pg
