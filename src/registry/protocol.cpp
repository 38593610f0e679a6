/*
 * protocol.cpp
 *	  The version of the registry protocol the agent speaks with its
 *	  registry, kept in the lease table for registry_status (protocol.hpp).
 */
#include "registry/protocol.hpp"

#include "registry/lease_table.hpp"

extern "C" {
#include "storage/lwlock.h"
#include "utils/elog.h"
}

namespace uidgen::pg {

/*
 * Notes the protocol version spoken with the registry from now on (the
 * lower of this build's and the registry's), and logs a change: a fleet in
 * the middle of an upgrade shows which member speaks what.
 */
void
note_protocol(int spoken)
{
	LeaseTable *state = lease_table();

	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	int before = state->protocol;
	state->protocol = spoken;
	LWLockRelease(&state->lock);
	if (before != spoken)
		ereport(LOG, (errmsg("uidgen registry agent: speaking registry protocol %d with the registry (this server "
							 "speaks up to %d)", spoken, member_protocol)));
}

/* The protocol version spoken with the registry, as this round's identity reply settled it. */
int
protocol_spoken()
{
	LeaseTable *state = lease_table();

	LWLockAcquire(&state->lock, LW_SHARED);
	int spoken = state->protocol;
	LWLockRelease(&state->lock);
	return spoken;
}

} // namespace uidgen::pg
