/*
 * relation_lock.cpp
 *	  Whether the current transaction locked a relation.
 */
#include "pg/relation_lock.hpp"

extern "C" {
#include "access/relation.h"
#include "storage/lmgr.h"
#include "utils/rel.h"
}

namespace uidgen::pg {

bool
relation_locked_here(Oid relid, LOCKMODE mode)
{
	/* A cached OID: DROP EXTENSION may have removed the relation since, which is no lock of ours. */
	Relation rel = try_relation_open(relid, AccessShareLock);

	if (rel == nullptr)
		return false;
	bool locked = CheckRelationLockedByMe(rel, mode, true);

	relation_close(rel, NoLock);
	return locked;
}

} // namespace uidgen::pg
