/*
 * catalog.hpp
 *	  uidgen's tables: their OIDs and the database's layout (uidgen.config).
 */
#pragma once

#include "core/layout.hpp"

extern "C" {
#include "postgres.h"

#include "access/xact.h"
#include "datatype/timestamp.h"
}

namespace uidgen::pg {

/*
 * The largest worker id a database can use, whatever its layout: a worker
 * is held by session locks (worker_table/worker_lock.hpp), whose tags have a
 * 32-bit object id.
 */
constexpr int64_t max_lockable_worker = UINT32_MAX;

/*
 * The largest ID the layout can issue: its last unit's last sequence of the
 * highest worker a backend can claim (uid_layout().max_id).
 */
inline int64_t
max_issuable_uid(const Layout &layout)
{
	int64_t worker = layout.max_worker() < max_lockable_worker ? layout.max_worker() : max_lockable_worker;

	return layout.compose_unchecked(layout.max_delta(), worker, layout.max_sequence());
}

/* OIDs of uidgen.config and uidgen.worker_node; errors if the extension is missing. */
Oid config_relid();
Oid worker_table_relid();

/*
 * OID of the sequence uidgen.reserved_until, or InvalidOid when the
 * extension's SQL objects are older than it (1.0.0).  Not cached while it
 * is missing, so that ALTER EXTENSION UPDATE is noticed.
 */
Oid reserved_until_relid();

/*
 * OID of uidgen.install_floor, the reach of earlier installs that every
 * worker starts above, or InvalidOid when the extension's SQL objects are
 * older than it (2.0.0).  Not cached: only claims ask.
 */
Oid install_floor_relid();

/*
 * OID of uidgen.membership, or InvalidOid when the extension's SQL objects
 * are older than it (2.0.0).  Not cached: only registrations ask.
 */
Oid membership_relid();

/*
 * OID of uidgen.worker_block_lease (the history of a registry's leases), or
 * InvalidOid when the extension's SQL objects are older than it (2.0.0).
 * Not cached: only uid_configure asks.
 */
Oid block_lease_relid();

/*
 * The database's layout, cached for the backend; uid_configure invalidates
 * the cache of every backend through a relcache invalidation of
 * uidgen.config.
 */
const Layout &database_layout();

/*
 * database_layout() for the IMMUTABLE functions that read the layout
 * (uid_timestamp, uid_worker_id, uid_sequence, uid_min, uid_max,
 * uid_interval): also holds RowShareLock on uidgen.config until the end of
 * the transaction, taken on the first call of each (sub)transaction, so
 * that uid_configure cannot change the layout while values computed under
 * it may still be on their way into an index, a generated column or a
 * constraint (layout_funcs.cpp; INV-7).  After the first
 * call of a transaction this costs one comparison.
 */
const Layout &decoding_layout();

/*
 * Reads the layout with the given visibility inside an open SPI connection
 * (no cache).  Latest visibility is what registration uses; it also wants
 * the identity of the database that made the worker table
 * (uidgen.config.origin, palloc'd) when original_identity is not null.
 */
Layout read_layout(bool latest, char **original_identity = nullptr);

/*
 * Inside an SPI connection: whether a worker was ever claimed, committed or
 * not (then the layout is fixed for good); whether this database, as a registry, has ever
 * leased a block (then its members issue under its layout, fixed for good
 * too); and setting the layout (layout_funcs.cpp; returns whether it can
 * still change).
 */
bool worker_ever_claimed();
void record_worker_claimed();
bool registry_has_leased();
bool change_layout(const Layout &layout, TimestampTz epoch, bool *changed = nullptr);

/* Forgets cached OIDs and the layout; for uid_configure and invalidations. */
void forget_catalog_cache();
/*
 * What the cache does at PostgreSQL's events; called by the one set of
 * callbacks (module.cpp).
 */
void catalog_relcache_invalidated(Oid relid);
void catalog_at_xact_event(XactEvent event);
void catalog_at_subxact_event(SubXactEvent event);

} // namespace uidgen::pg
