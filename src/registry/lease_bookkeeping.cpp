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

#include <type_traits>

namespace uidgen::pg {

namespace {

/* What one block holds for the next databases, and whether any live database holds its workers. */
struct BlockTally
{
	int64_t spare;		/* workers not granted yet, and those of dropped databases that may go to another */
	bool granted;		/* it granted a worker */
	bool live;			/* one of its workers went to a database not dropped */
};
static_assert(std::is_trivially_destructible_v<BlockTally>);

/* Each block's tally, into tally; returns the spare workers of them all.  Under the table's lock. */
int64_t
tally_blocks(const LeaseTable *state, int64_t now_mono, BlockTally tally[max_leased_blocks])
{
	int64_t total = 0;

	for (int b = 0; b < state->nblocks; b++)
	{
		const LeasedBlock &block = state->blocks[b];

		tally[b] = BlockTally{0, false, false};
		if (counts_as_spare(block.deadline_mono_ms - now_mono, block.lease_ms))
			tally[b].spare = block.last_worker - block.next_worker + 1;
	}
	for (int i = 0; i < state->ngrants; i++)
	{
		const Grant &g = state->grants[i];

		for (int b = 0; b < state->nblocks; b++)
		{
			if (g.lease_id != state->blocks[b].lease_id)
				continue;
			tally[b].granted = true;
			tally[b].live = tally[b].live || !g.dropped;
			if (grant_reusable(state, i, now_mono, 0))
				tally[b].spare++;
			break;
		}
	}
	for (int b = 0; b < state->nblocks; b++)
		total += tally[b].spare;
	return total;
}

/*
 * The blocks to give back now (their indexes, in order, into out; returns
 * how many): each block that granted workers, all of them to databases
 * dropped since (a block that granted none yet is the reserve), while the
 * blocks kept leave enough spare (give_back_wanted()).  Under the table's
 * lock.
 */
int
blocks_to_give_back(const LeaseTable *state, int64_t now_mono, int out[max_leased_blocks])
{
	BlockTally tally[max_leased_blocks];
	int64_t spare = tally_blocks(state, now_mono, tally);
	int blocks = state->nblocks;
	int n = 0;

	for (int b = 0; b < state->nblocks; b++)
	{
		if (!tally[b].granted || tally[b].live ||
			!give_back_wanted(blocks, max_leased_blocks, state->waiting, spare - tally[b].spare,
							  state->rules.block_size))
			continue;
		out[n++] = b;
		spare -= tally[b].spare;
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
	BlockTally tally[max_leased_blocks];

	return tally_blocks(state, now_mono, tally);
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
