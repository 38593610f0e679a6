/*
 * reach_funcs.cpp
 *	  uid_reach() and uid_adopt_reach(): the reach carried from one database
 *	  to another that continues its IDs, as in a major-version upgrade by
 *	  logical replication (INV-13, INV-21).
 *
 * A subscriber's uidgen tables stay empty (INV-21), so its workers are
 * numbered from 1 as the publisher's were: it must start above every ID the
 * publisher issued.  The reach is the one a reinstall keeps (an ID, so that
 * it holds across servers), and adopting it raises uidgen.install_floor,
 * which every claim starts above, as after a reinstall.
 */
#include "layout/catalog.hpp"
#include "layout/reservation.hpp"
#include "pg/guard.hpp"
#include "pg/spi.hpp"
#include "worker_table/worker_lock.hpp"
#include "worker_table/worker_table.hpp"

extern "C" {
#include "access/xlog.h"
#include "storage/lmgr.h"
}

using namespace uidgen;
using namespace uidgen::pg;

namespace {

/*
 * A worker held now was claimed below the floor being raised, and its holder
 * (a session, a keeper, the claim pool) would go on issuing there.
 */
void
refuse_while_workers_held(Oid worker_table)
{
	if (held_worker_count() > 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("cannot adopt a reach in a session that holds a uidgen worker"),
				 errhint("Run it in a new session that has issued no ID.")));
	spi_run("SELECT id FROM uidgen.worker_node WHERE status = 'active'", 0, nullptr, nullptr, Visibility::Latest,
			SPI_OK_SELECT);
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		int64_t worker = spi_int64(row, 0);

		if (worker_locked_elsewhere(worker_table, worker) || pool_mark_held_elsewhere(worker_table, worker))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("cannot adopt a reach while uidgen worker %lld of this database is held",
							static_cast<long long>(worker)),
					 errdetail("Its holder claimed it below the reach and would go on issuing there."),
					 errhint("End the sessions that issued IDs in this database (a keeper or claim pool leaves "
							 "once idle), then run it again.")));
	}
}

} // namespace

/*
 * uid_reach() returns bigint: an ID at or above every ID this database's
 * installs may have issued; 0 when none can have issued.  Holds the lock
 * that serialises raises of the time reservation until the transaction
 * ends, so no ID above it is issued meanwhile.
 */
UIDGEN_FUNCTION(uid_reach)
{
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot take the uidgen reach during recovery"),
				 errhint("Take it on the primary, after its writes stopped.")));

	int64_t reach = with_spi(Rights::Owner, [] { return database_reach(); });

	PG_RETURN_INT64(reach);
}

/*
 * uid_adopt_reach(reach bigint) returns bigint: raises this database's
 * install floor to reach, the reach of the database whose IDs it continues;
 * returns the floor, which every worker claimed from then on starts above.
 */
UIDGEN_FUNCTION(uid_adopt_reach)
{
	int64_t reach = PG_GETARG_INT64(0);

	int64_t floor = with_spi(Rights::Owner, [reach] {
		/* As uid_configure: no registration starts until this commits, and then it reads the floor. */
		LockRelationOid(config_relid(), ExclusiveLock);
		Oid worker_table = worker_table_relid();
		refuse_while_workers_held(worker_table);
		return raise_install_floor(read_layout(true), reach);
	});

	PG_RETURN_INT64(floor);
}
