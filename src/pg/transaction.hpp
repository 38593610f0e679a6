/*
 * transaction.hpp
 *	  A transaction of a background worker's own, around C++ work: the
 *	  keeper's and the claim pool's writes commit before anything is issued
 *	  under them.
 */
#pragma once

#include "pg/guard.hpp"

extern "C" {
#include "postgres.h"

#include "access/xact.h"
#include "utils/snapmgr.h"
}

namespace uidgen::pg {

/*
 * Starts a transaction, runs work (whose PostgreSQL errors it must turn
 * into exceptions itself, through pg_call or with_spi inside pg_call), and
 * commits; an exception leaves the transaction for the caller's error path.
 */
template <typename Work>
void
in_transaction(Work work)
{
	pg_call([] {
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
	});
	work();
	pg_call([] {
		PopActiveSnapshot();
		CommitTransactionCommand();
	});
}

} // namespace uidgen::pg
