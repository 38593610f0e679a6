/*
 * compat.hpp
 *	  The server API where it differs between the PostgreSQL versions uidgen
 *	  supports (15, 17 and 18; 16 is expected to work but is untested).
 *
 * Every difference is one small inline wrapper with the one PG_VERSION_NUM
 * guard it needs; call sites use the wrapper and never test the version.
 */
#pragma once

extern "C" {
#include "postgres.h"

#include "catalog/pg_extension.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/acl.h"
#if PG_VERSION_NUM >= 160000	/* 16 moved the varlena macros out of postgres.h */
#include "varatt.h"
#endif
}

namespace uidgen::pg {

/* Whether this backend holds exactly `mode` on `tag` (not a stronger mode). */
inline bool
lock_held_by_me(const LOCKTAG &tag, LOCKMODE mode)
{
#if PG_VERSION_NUM >= 170000	/* 17 added the "orstronger" argument */
	return LockHeldByMe(&tag, mode, false);
#else
	return LockHeldByMe(&tag, mode);
#endif
}

/*
 * Takes `mode` on `tag` without waiting.  report_memory_error: whether a full
 * shared lock table is an error (true) or just "not available" (false).  A
 * lock that is not available is not logged (it is a busy worker, not a
 * failure).
 */
inline LockAcquireResult
lock_acquire_nowait(const LOCKTAG &tag, LOCKMODE mode, bool session_lock, bool report_memory_error)
{
#if PG_VERSION_NUM >= 180000	/* 18 added the "logLockFailure" argument */
	return LockAcquireExtended(&tag, mode, session_lock, true, report_memory_error, nullptr, false);
#else
	return LockAcquireExtended(&tag, mode, session_lock, true, report_memory_error, nullptr);
#endif
}

/* This backend's local transaction id (17 moved it into PGPROC's vxid). */
inline LocalTransactionId
my_local_transaction_id()
{
#if PG_VERSION_NUM >= 170000
	return MyProc->vxid.lxid;
#else
	return MyProc->lxid;
#endif
}

/* Whether role owns (or is a member of the owner of) extension `extension`: 16 made the check generic. */
inline bool
extension_owned_by(Oid extension, Oid role)
{
#if PG_VERSION_NUM >= 160000
	return object_ownercheck(ExtensionRelationId, extension, role);
#else
	return pg_extension_ownercheck(extension, role);
#endif
}

} // namespace uidgen::pg
