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
#include "pg/uuid_codec.hpp"
#include "registry/lease_table.hpp"
#include "registry/membership/leased_claim.hpp"
#include "registry/registry_pin.hpp"
#include "worker_table/worker_table.hpp"

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

/*
 * Refuses (55000) a move from registry from, which what ("this server",
 * database "d") joined, to registry to, which did not import it: to's
 * leases could overlap those from's members still hold (INV-20).
 */
[[noreturn]] void
refuse_unimported(const pg_uuid_t &from, const pg_uuid_t &to, const char *what)
{
	char from_text[uuid_text_size];
	char to_text[uuid_text_size];

	uuid_text(from, from_text);
	uuid_text(to, to_text);
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("uidgen registry %s has not imported uidgen registry %s, which %s joined", to_text, from_text,
					what),
			 errdetail("Its leases could overlap those that members of the old registry still hold."),
			 errhint("Run SELECT uid_registry_export(importer) at the old registry and SELECT uid_registry_import(...) with "
					 "its result at the new one, then move again; if the old registry is gone for good, run SELECT "
					 "uid_registry_move(old_registry_lost => true).")));
}

} // namespace

/*
 * uid_registry_move(old_registry_lost boolean) returns uuid: the identity
 * of the registry this database belongs to from now on.
 */
UIDGEN_FUNCTION(uid_registry_move)
{
	bool old_registry_lost = PG_ARGISNULL(0) ? false : PG_GETARG_BOOL(0);

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

	/*
	 * The agent may take up a registry that imported nothing: the old one
	 * is gone for good (ASM-9).  Until this transaction ends, whether it
	 * commits, fails or is cancelled in the waits below.
	 */
	if (old_registry_lost)
		begin_lost_move();
	/*
	 * The identity the registry has now, read by the agent in an attempt
	 * begun after this call.  An attempt that finds the connection to the
	 * old registry lost (it stopped), or that the agent made before it took
	 * up a reload, fails without reading; the next one connects afresh, so
	 * attempts are made until one reads it or the wait is over.
	 */
	int64_t until = monotonic_ms() + agent_wait_ms;
	bool read = false;
	while (!read && monotonic_ms() < until)
		read = read_identity_afresh(until);
	if (!read)
		report_registry_failure("could not read the registry's identity", true);

	/* A new uidgen.registry the agent refused (or cannot reach yet): moving would stay where it is. */
	char pending[registry_text_size];
	char why[error_text_size];
	LWLockAcquire(&lease_table()->lock, LW_SHARED);
	strlcpy(pending, lease_table()->pending_registry, sizeof(pending));
	strlcpy(why, lease_table()->pending_error, sizeof(why));
	LWLockRelease(&lease_table()->lock);
	if (pending[0] != '\0')
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the uidgen registry agent has not switched to the new uidgen.registry \"%s\"", pending),
				 errdetail("%s", why[0] != '\0' ? why : "It has not tried it yet."),
				 errhint("See pending_error in uidgen.registry_status.")));

	/* A move only to a registry that took over the one left (INV-20), unless that one is lost. */
	pg_uuid_t seen;
	pg_uuid_t pinned;
	Predecessors predecessors;
	if (!seen_registry(&seen, &predecessors))
		report_registry_failure("could not read the registry's identity", true);
	if (!old_registry_lost)
	{
		if (pinned_registry(&pinned) && memcmp(pinned.data, seen.data, UUID_LEN) != 0 && !imported(predecessors, pinned))
			refuse_unimported(pinned, seen, "this server");
		pg_uuid_t joined;
		bool member = with_spi(Rights::Owner, [&joined] {
			if (spi_run("SELECT registry_id::text FROM uidgen.membership", 0, nullptr, nullptr, Visibility::Latest,
						SPI_OK_SELECT) == 0 || spi_is_null(0, 0))
				return false;
			return parse_uuid_text(spi_text(0, 0), &joined);
		});
		if (member && memcmp(joined.data, seen.data, UUID_LEN) != 0 && !imported(predecessors, joined))
		{
			char what[NAMEDATALEN + 16];

			snprintf(what, sizeof(what), "database \"%s\"", get_database_name(MyDatabaseId));
			refuse_unimported(joined, seen, what);
		}
	}

	pg_uuid_t *adopted = static_cast<pg_uuid_t *>(palloc(sizeof(pg_uuid_t)));
	bool changed = false;
	bool pinned_now = pin_seen_registry(adopted, &changed);
	if (!pinned_now)
		report_registry_failure("could not read the registry's identity", true);

	char adopted_text[uuid_text_size];
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
