/*
 * horizon_lock.hpp
 *	  The mark every transaction that issues IDs leaves for uid_safe_horizon():
 *	  a transaction-level advisory lock whose key is the clock reading taken
 *	  before its first ID (INV-22).
 *
 * The lock is shared, of key kind 5 (worker locks are 3, the sequence raise
 * lock 4; the SQL advisory functions use 1 and 2): field 1 is the database,
 * fields 2 and 3 the high and low halves of the reading in Unix milliseconds.
 * It belongs to the top-level transaction, so a subtransaction's abort keeps
 * it, PREPARE TRANSACTION carries it into the prepared transaction, and the
 * end of the transaction releases it after the commit is visible.
 */
#pragma once

extern "C" {
#include "postgres.h"

#include "access/xact.h"
}

#include <cstdint>
#include <optional>

namespace uidgen::pg {

/* Before every ID: the first of a transaction takes the lock; later ones compare one flag. */
inline bool horizon_marked = false;
void mark_transaction_for_horizon();

inline void
mark_before_issuing()
{
	if (__builtin_expect(!horizon_marked, 0))
		mark_transaction_for_horizon();
}

/* At the end of a top-level transaction (module.cpp's callback): the lock is gone or prepared. */
void horizon_at_xact_event(XactEvent event);

/*
 * The earliest clock reading of the marks in this database, of live and
 * prepared transactions alike; nullopt when there are none.
 */
std::optional<int64_t> oldest_open_mark_ms();

} // namespace uidgen::pg
