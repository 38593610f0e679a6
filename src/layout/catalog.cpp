/*
 * catalog.cpp
 *	  The OIDs of uidgen's tables and the cached database layout.
 */
#include "layout/catalog.hpp"

#include "pg/spi.hpp"
#include "pg/time_convert.hpp"
#include "pg/xact_events.hpp"

extern "C" {
#include "catalog/namespace.h"
#include "access/transam.h"
#include "access/xact.h"
#include "storage/lmgr.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
}

#include <optional>

namespace uidgen::pg {

namespace {

Oid cached_config_relid = InvalidOid;
Oid cached_worker_node_relid = InvalidOid;
Oid cached_reserved_until_relid = InvalidOid;
std::optional<Layout> cached_layout;
/*
 * decoding_layout() took its lock in this transaction.  Reset at every
 * transaction end and subtransaction abort (which may have released the
 * lock); a needless re-lock is harmless.
 */
bool decoding_lock_held = false;

Oid
lookup_relid_if_exists(const char *relname)
{
	Oid namespace_oid = get_namespace_oid("uidgen", true);

	return OidIsValid(namespace_oid) ? get_relname_relid(relname, namespace_oid) : InvalidOid;
}

Oid
lookup_relid(const char *relname)
{
	Oid relid = lookup_relid_if_exists(relname);

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation \"uidgen.%s\" does not exist", relname),
				 errhint("Run CREATE EXTENSION uidgen in this database.")));
	return relid;
}

void
forget_cached(Oid relid)
{
	if (relid == InvalidOid || relid == cached_config_relid)
		cached_layout.reset();
	if (relid == InvalidOid || relid == cached_config_relid || relid == cached_worker_node_relid ||
		relid == cached_reserved_until_relid)
		cached_config_relid = cached_worker_node_relid = cached_reserved_until_relid = InvalidOid;
}

/*
 * In parallel mode the layout is read with the leader's snapshot, which may
 * predate a uid_configure that committed while this process waited for its
 * lock (decoding_layout()).  The row version that snapshot sees has then
 * been replaced by a committed update: error rather than decode under the
 * old layout.  (Nothing else updates uidgen.config's row, and only its
 * updater locks it.)
 */
void
refuse_stale_layout()
{
	spi_run("SELECT xmin, xmax FROM uidgen.config", 0, nullptr, nullptr, Visibility::ReadOnly, SPI_OK_SELECT);

	TransactionId xmin = spi_xid(0, 0);
	TransactionId xmax = spi_xid(0, 1);

	/*
	 * An xmax equal to xmin is the lock its own update left on the version
	 * it wrote (the BEFORE UPDATE trigger of 2.0.0 locks the row first, and
	 * heap_update carries that lock over): not an update.
	 */
	if (TransactionIdIsNormal(xmax) && !TransactionIdEquals(xmax, xmin) &&
		!TransactionIdIsCurrentTransactionId(xmax) && TransactionIdDidCommit(xmax))
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not decode with the uidgen layout because it changed during this statement"),
				 errhint("Run the statement again.")));
}

void
forget_decoding_lock()
{
	decoding_lock_held = false;
}

} // namespace

Oid
config_relid()
{
	if (!OidIsValid(cached_config_relid))
		cached_config_relid = lookup_relid("config");
	return cached_config_relid;
}

Oid
worker_table_relid()
{
	if (!OidIsValid(cached_worker_node_relid))
		cached_worker_node_relid = lookup_relid("worker_node");
	return cached_worker_node_relid;
}

Oid
reserved_until_relid()
{
	if (!OidIsValid(cached_reserved_until_relid))
		cached_reserved_until_relid = lookup_relid_if_exists("reserved_until");
	return cached_reserved_until_relid;
}

Oid
install_floor_relid()
{
	return lookup_relid_if_exists("install_floor");
}

Oid
membership_relid()
{
	return lookup_relid_if_exists("membership");
}

Oid
block_lease_relid()
{
	return lookup_relid_if_exists("worker_block_lease");
}

Layout
read_layout(bool latest, char **original_identity)
{
	uint64 rows = spi_run("SELECT time_bits, worker_bits, seq_bits, epoch, unit, origin FROM uidgen.config", 0, nullptr,
						  nullptr, latest ? Visibility::Latest : Visibility::ReadOnly, SPI_OK_SELECT);

	if (rows != 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("uidgen.config must have exactly one row, but it has %llu",
						static_cast<unsigned long long>(rows)),
				 errhint("Restore the row with uid_configure().")));

	char *unit_name = spi_text(0, 4);
	TimeUnit unit = parse_time_unit(unit_name);

	if (original_identity != nullptr)
		*original_identity = spi_text(0, 5);

	pfree(unit_name);
	return Layout(spi_int32(0, 0), spi_int32(0, 1), spi_int32(0, 2), timestamptz_to_unix_ms(spi_timestamptz(0, 3)),
				  unit);
}

const Layout &
database_layout()
{
	if (!cached_layout)
	{
		Oid relid = config_relid();	/* so that the relcache callback knows the table */

		/*
		 * Read what has committed, under the lock uid_configure conflicts
		 * with, so that a REPEATABLE READ snapshot from before a change
		 * cannot leave the old layout cached for the session.  A parallel
		 * worker cannot take a new snapshot; its leader's is recent enough.
		 */
		if (!IsInParallelMode())
			LockRelationOid(relid, RowShareLock);
		cached_layout = with_spi(Rights::Caller, [] {
			Layout layout = read_layout(!IsInParallelMode());

			if (IsInParallelMode())
				refuse_stale_layout();
			return layout;
		});
	}
	return *cached_layout;
}

const Layout &
decoding_layout()
{
	if (unlikely(!decoding_lock_held))
	{
		/*
		 * Conflicts with uid_configure's ExclusiveLock: a change in progress
		 * is waited for, and taking the lock processes its invalidation, so
		 * database_layout() reloads the new layout.
		 */
		LockRelationOid(config_relid(), RowShareLock);
		decoding_lock_held = true;
	}
	return database_layout();
}

void
forget_catalog_cache()
{
	forget_cached(InvalidOid);
}

void
catalog_relcache_invalidated(Oid relid)
{
	forget_cached(relid);
}

void
catalog_at_xact_event(XactEvent event)
{
	if (ends_transaction(event))
		forget_decoding_lock();
}

void
catalog_at_subxact_event(SubXactEvent event)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		forget_decoding_lock();
}

} // namespace uidgen::pg
