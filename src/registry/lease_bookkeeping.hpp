/*
 * lease_bookkeeping.hpp
 *	  What the registry agent reads off its lease table before each round,
 *	  and the blocks it drops from it: lapsed ones, and those it gives back.
 *
 * Each function takes the table's lock itself, or says that its caller
 * holds it; the decisions are lease_policy.hpp's arithmetic (src/core).
 */
#pragma once

#include "registry/lease_table.hpp"

#include <cstdint>

namespace uidgen::pg {

/* Whether a lease is due for renewal, or a grant or a release not yet reported; under the table's lock. */
bool renewal_due(const LeaseTable *state, int64_t now_mono);

/*
 * Workers not granted yet in blocks that can still grant them, and those
 * of dropped databases that can go to another (Grant); under the table's lock.
 */
int64_t spare_workers(const LeaseTable *state, int64_t now_mono);

/* Whether the agent should lease another block now (block_wanted()); under the table's lock. */
bool block_wanted(const LeaseTable *state, int64_t now_mono);

/* Forgets the leases past their end: the registry may hand their blocks out again. */
void drop_expired_blocks(LeaseTable *state, int64_t now_mono);

/*
 * Gives back the blocks whose workers all went to databases that were
 * dropped since, while the others suffice (give_back_wanted()): each is
 * forgotten here with its grants, so that nothing of this server issues
 * under it again, and the agent renews it no more; its next renewal marks
 * it released at the registry (LeaseTable::released), where it then counts
 * against max_system_blocks no more.  The registry leases it again once its
 * lease has run out plus max_borrow and the clock bound, above its recorded
 * ceiling (F2).  Logs each block given back.
 */
void give_back_emptied_blocks(LeaseTable *state, int64_t now_mono);

} // namespace uidgen::pg
