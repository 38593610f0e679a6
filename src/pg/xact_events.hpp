/*
 * xact_events.hpp
 *	  Which transaction events end a top-level transaction.
 */
#pragma once

extern "C" {
#include "postgres.h"

#include "access/xact.h"
}

namespace uidgen::pg {

/*
 * Commit, abort or PREPARE TRANSACTION (parallel workers' too): whatever the
 * transaction held as its own is released, or handed to the prepared
 * transaction.
 */
inline bool
ends_transaction(XactEvent event)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			return true;
		default:
			return false;
	}
}

} // namespace uidgen::pg
