/*
 * registry_move.cpp
 *	  uid_registry_move(): moving a member database to the registry its
 *	  server's agent reaches now, when that is another registry than the
 *	  one it joined (INV-20).
 *
 * A registry created again, rebuilt or replaced has another identity, which
 * members refuse: it knows nothing of the leases they hold.  Moving to it is
 * an act of the member's owner, in every member database: the server's
 * agent pins the new identity (dropping the blocks of the old registry, so
 * that their workers issue nothing more), and the database joins anew with
 * a floor above everything it issued or may still issue.
 */
#include "layout/catalog.hpp"
#include "pg/guard.hpp"
#include "pg/identity.hpp"
#include "pg/pg_clock.hpp"
#include "pg/settings.hpp"
#include "pg/spi.hpp"
#include "registry/lease_table.hpp"
#include "registry/registry_pin.hpp"
#include "workers/leased_claim.hpp"
#include "workers/worker_table.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/uuid.h"
}

using namespace uidgen;
using namespace uidgen::pg;

namespace {

/* How long the move waits for the agent to read the registry's identity. */
constexpr int agent_wait_ms = 10000;

} // namespace

/*
 * uid_registry_move() returns uuid: the identity of the registry this
 * database belongs to from now on.
 */
UIDGEN_FUNCTION(uid_registry_move)
{
	if (lease_table() == nullptr || !registry_configured())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("uidgen.registry is not set on this server"),
				 errhint("uid_registry_move() moves a member database to the registry uidgen.registry names; "
						 "set it (with uidgen in shared_preload_libraries) first.")));
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot move a uidgen member database during recovery")));

	/* The identity the registry has now, read by the agent in an attempt begun after this call. */
	if (!read_identity_afresh(monotonic_ms() + agent_wait_ms))
		report_registry_failure("could not read the registry's identity", true);
	pg_uuid_t *adopted = static_cast<pg_uuid_t *>(palloc(sizeof(pg_uuid_t)));
	bool changed = false;
	if (!pin_seen_registry(adopted, &changed))
		report_registry_failure("could not read the registry's identity", true);

	char adopted_text[UUID_LEN * 2 + 5];
	uuid_text(*adopted, adopted_text);
	char registry[registry_text_size];
	describe_current_registry(registry);

	int64_t floor = with_spi(Rights::Owner, [&adopted_text, &registry] {
		Layout layout = read_layout(true);
		int64_t now_delta = layout.delta_at(backend_clock().now_ms());
		int64_t borrow_units = layout.units_covering(max_borrow_ms);
		int64_t above = floor_above_all_issued(now_delta, borrow_units);
		Oid types[3] = {TEXTOID, INT8OID, TEXTOID};
		Datum values[3] = {CStringGetTextDatum(registry), Int64GetDatum(above), CStringGetTextDatum(adopted_text)};

		/* Never lower than the floor of the join before: IDs at or below it are outside the guarantee. */
		spi_run("INSERT INTO uidgen.membership AS m (registry, joined_at, join_floor, registry_id) "
				"VALUES ($1, now(), $2, $3::uuid) "
				"ON CONFLICT (singleton) DO UPDATE SET registry = excluded.registry, joined_at = excluded.joined_at, "
				"    join_floor = greatest(m.join_floor, excluded.join_floor), registry_id = excluded.registry_id "
				"RETURNING join_floor",
				3, types, values, Visibility::Latest, SPI_OK_INSERT_RETURNING);
		int64_t joined = spi_int64(0, 0);
		(void) release_dead_workers(worker_table_relid(), database_identity(), joined);
		return joined;
	});

	ereport(LOG,
			(errmsg("uidgen: database \"%s\" moved to uidgen registry %s at \"%s\"", get_database_name(MyDatabaseId),
					adopted_text, registry),
			 errdetail("Its workers start above time unit %lld from now on.%s", static_cast<long long>(floor),
					   changed ? " The server dropped the worker blocks of the registry it had joined before." : "")));
	PG_RETURN_UUID_P(adopted);
}
