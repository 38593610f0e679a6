/*
 * relation_lock.hpp
 *	  Whether the current transaction locked a relation: a background worker
 *	  that writes it for this backend would wait for this transaction.
 */
#pragma once

extern "C" {
#include "postgres.h"

#include "storage/lockdefs.h"
}

namespace uidgen::pg {

/*
 * Whether the current transaction holds a lock of mode or stronger on
 * relid: it wrote or locked rows of it (INSERT, UPDATE, SELECT ... FOR
 * UPDATE, LOCK TABLE), or created it.  False when the relation is gone (a
 * cached OID after DROP EXTENSION).
 */
bool relation_locked_here(Oid relid, LOCKMODE mode);

} // namespace uidgen::pg
