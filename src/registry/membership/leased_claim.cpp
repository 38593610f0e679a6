/*
 * leased_claim.cpp
 *	  A leased claim: claiming a worker when the server has a registry
 *	  (uidgen.registry).  Not the registry's uidgen.registry_claim(), which
 *	  leases a block to a server life; this takes a worker out of the blocks.
 *
 * The 1.0 protocol goes on inside the blocks this server life leased:
 * uidgen.worker_node stays the database's record, with the same session
 * locks, reuse of released workers and release of leaked ones.  What
 * changes is where fresh ids come from (the server's blocks, lease_table.hpp,
 * instead of the database's sequence) and which released workers may be
 * reused (only those this server life granted to this database: a worker
 * of an earlier life, or of the time before joining, may belong to another
 * server now).
 */
#include "registry/membership/leased_claim.hpp"

#include "core/generator.hpp"
#include "layout/catalog.hpp"
#include "layout/reservation.hpp"
#include "pg/pg_clock.hpp"
#include "pg/relation_lock.hpp"
#include "pg/settings.hpp"
#include "pg/spi.hpp"
#include "pg/time_convert.hpp"
#include "pg/uuid_codec.hpp"
#include "registry/lease_table.hpp"
#include "registry/membership/join_committer.hpp"
#include "registry/registry_pin.hpp"
#include "worker_table/worker_lock.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/builtins.h"
#include "utils/wait_event.h"
}

#include <algorithm>

namespace uidgen::pg {

namespace {

/* How long a registration waits for the registry agent. */
constexpr int agent_wait_ms = 10000;

/* How many of the server's workers one registration tries before it gives up. */
constexpr int grant_attempts = 64;

void
require_registry_support()
{
	if (lease_table() == nullptr)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("uidgen.registry is set, but uidgen is not in shared_preload_libraries"),
				 errdetail("The worker blocks a registry leases are held by a background worker of the server."),
				 errhint("Add uidgen to shared_preload_libraries and restart the server, or set uidgen.registry "
						 "to an empty string.")));
	if (!OidIsValid(membership_relid()))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("uidgen.registry needs uidgen 2.0.0 or later in database \"%s\"",
						get_database_name(MyDatabaseId)),
				 errhint("Run ALTER EXTENSION uidgen UPDATE in this database.")));
}

/* The registry's rules, waiting for the agent's first exchange with it. */
RegistryRules
await_registry_rules()
{
	int64_t until = monotonic_ms() + agent_wait_ms;
	uint64 since = agent_attempts();
	std::optional<RegistryRules> rules;

	while (!(rules = registry_rules()))
		wait_for_agent(until, since, "could not read the registry's layout");
	return *rules;
}

/* A text[] literal of ids, for "= ANY($n::bigint[])". */
char *
id_array(const int64_t *ids, int count)
{
	StringInfoData text;

	initStringInfo(&text);
	appendStringInfoChar(&text, '{');
	for (int i = 0; i < count; i++)
		appendStringInfo(&text, "%s%lld", i > 0 ? "," : "", static_cast<long long>(ids[i]));
	appendStringInfoChar(&text, '}');
	return text.data;
}

/*
 * 1.0's reuse among the workers this life granted to this database, above
 * what their last holder noted at its exit too: a holder whose claim never
 * committed, and whose release could not be written (its row was locked or
 * being inserted at its exit, claim/claim.cpp), left the row as it was before.
 * And above the floor of the lease it is reused under, as a worker taken
 * fresh from the lease is: the row's last unit may be from an earlier lease
 * of the same block, below another server's IDs under the same worker
 * since.  And above the join floor, joined: the join released every worker
 * of the time before at or above it, but a row written since by a holder
 * that issued nothing (a keeper that left before it published) may be
 * below it.
 */
bool
reuse_granted_worker(const Layout &layout, const char *identity, Oid worker_table, int64_t now_delta,
					 int64_t joined, Claim *claim, LeaseId *lease)
{
	int count;
	int64_t *granted = granted_workers(MyDatabaseId, &count);

	while (count > 0)
	{
		if (!claim_released_worker(layout, identity, worker_table, now_delta, id_array(granted, count), claim))
			return false;
		*lease = live_lease(claim->worker, MyDatabaseId).value_or(LeaseId{});
		claim->floor_delta = std::max({claim->floor_delta, joined, grant_issued_until(claim->worker),
									   lease_floor_delta(*lease).value_or(Generator::no_floor)});
		std::optional<int64_t> cap = lease_cap_delta(*lease, layout);
		if (cap && claim->floor_delta < *cap)
			return true;
		/*
		 * It could issue nothing, and its error would say that the lease ran
		 * out: its lease lapsed since granted_workers() looked, or its floor
		 * is not below what the lease covers now (a floor noted at exit, or a
		 * lease's floor, above a cap that fell since: this server's clock set
		 * back, or behind the registry's).  Skipped.
		 */
		unlock_worker(worker_table, claim->worker);
		count = static_cast<int>(std::remove(granted, granted + count, claim->worker) - granted);
	}
	return false;
}

/* The identity of the registry this server's agent pinned, and as text. */
void
agent_registry(pg_uuid_t *id, char text[uuid_text_size])
{
	if (!pinned_registry(id))
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("the uidgen registry agent has not read its registry's identity yet"),
				 errhint("See uidgen.registry_status, and run the command again.")));
	uuid_text(*id, text);
}

} // namespace

/*
 * The floor above every ID this database issued or may still issue under a
 * worker it holds: the latest unit any of its workers reached and its time
 * reservation once no raise is under way (for SQL older than the
 * reservation, now + max_borrow); no floor when it cannot have issued any.
 * First the count of joins: a worker claimed without a registry extends no
 * further than what is read here (lease_table.hpp, joins_so_far()), even
 * in a statement that runs across the reload.
 */
int64_t
floor_above_all_issued(int64_t now_delta, int64_t borrow_units)
{
	count_join();
	std::optional<int64_t> reserved = settled_reserved_until();
	spi_run("SELECT coalesce(max(last_time), -1) FROM uidgen.worker_node", 0, nullptr, nullptr, Visibility::Latest,
			SPI_OK_SELECT);
	int64_t last_time = spi_int64(0, 0);
	/*
	 * Not whether a row shows: a session may be issuing under a first claim
	 * not committed yet (test 067), of the database's own numbering (its
	 * fresh id came from the sequence) or from the blocks of a registry it
	 * joined before (that join's row committed first).  A database that did
	 * neither has nothing to stay above; its mark is no sign of IDs, since
	 * creating the extension sets it ahead.  (Not for the layout, which the
	 * claim's transaction adopts: a join committed apart whose claim then
	 * failed would fix a layout that was never issued under.)
	 */
	bool issued = worker_ever_claimed() || spi_run("SELECT FROM uidgen.membership", 0, nullptr, nullptr,
													 Visibility::Latest, SPI_OK_SELECT) > 0;

	if (!issued)
		return Generator::no_floor;
	/*
	 * Every ID is at or below the reservation its generator extended first;
	 * now + max_borrow stands in only for SQL older than the reservation.
	 * Not beside it: a clock far ahead for a moment would put the floor, and
	 * everything above it, out of the fleet's reach until the fleet's time
	 * passed the clock's mistake (test 069).
	 */
	if (!reserved)
		return std::max(last_time, now_delta + borrow_units);
	return std::max(last_time, *reserved);
}

std::optional<int64_t>
joined_floor(const char *registry, const char *pinned)
{
	Oid types[1] = {TEXTOID};
	Datum values[1] = {CStringGetTextDatum(registry)};

	if (spi_run("SELECT join_floor, registry_id::text, registry = $1 FROM uidgen.membership", 1, types, values,
				Visibility::Latest, SPI_OK_SELECT) == 0)
		return std::nullopt;

	int64_t joined = spi_int64(0, 0);
	char *joined_id = spi_text(0, 1);
	bool same_name = spi_bool(0, 2);

	/* The registry is known by its identity: under another spelling of uidgen.registry too. */
	if (strcmp(joined_id, pinned) == 0)
		return joined;
	/* Another registry under another name: the database joins it anew. */
	if (!same_name)
		return std::nullopt;
	/* Another registry behind the same name knows nothing of this database's workers. */
	ereport(ERROR,
			(errcode(ERRCODE_SQLSERVER_REJECTED_ESTABLISHMENT_OF_SQLCONNECTION),
			 errmsg("database \"%s\" joined uidgen registry %s, but \"%s\" is registry %s",
					get_database_name(MyDatabaseId), joined_id, registry, pinned),
			 errdetail("The registry was created again, rebuilt or replaced since this database joined it, "
					   "and knows nothing of the workers this database was leased; this database takes no "
					   "worker from it."),
			 errhint("To move this database to that registry on purpose, run SELECT uid_registry_move() "
					 "in it, as in every member database, once that registry imported the export of the one "
					 "it joined (or with old_registry_lost => true if that one is gone for good); otherwise "
					 "set uidgen.registry to the registry it joined.")));
	pg_unreachable();
}

int64_t
write_join(const char *registry, const char *pinned, const char *identity, Oid worker_table, int64_t now_delta,
		   int64_t borrow_units)
{
	int64_t floor = floor_above_all_issued(now_delta, borrow_units);
	Oid types[3] = {TEXTOID, INT8OID, TEXTOID};
	Datum values[3] = {CStringGetTextDatum(registry), Int64GetDatum(floor), CStringGetTextDatum(pinned)};

	/*
	 * Another session of this database may be joining at the same moment:
	 * then its floor holds (it covers every ID issued before either joined),
	 * and ours, computed after its count of the join, would only be higher
	 * than needed.  Joining another registry replaces the row.
	 */
	if (spi_run("INSERT INTO uidgen.membership AS m (registry, joined_at, join_floor, registry_id) "
				"VALUES ($1, now(), $2, $3::uuid) "
				"ON CONFLICT (singleton) DO UPDATE SET registry = excluded.registry, joined_at = excluded.joined_at, "
				"    join_floor = greatest(m.join_floor, excluded.join_floor), registry_id = excluded.registry_id "
				"    WHERE m.registry_id <> excluded.registry_id "
				"RETURNING join_floor",
				3, types, values, Visibility::Latest, SPI_OK_INSERT_RETURNING) == 0)
		return joined_floor(registry, pinned).value_or(floor);
	(void) release_dead_workers(worker_table, identity, floor);
	ereport(LOG,
			(errmsg("uidgen: database \"%s\" joined the registry \"%s\"", get_database_name(MyDatabaseId),
					registry),
			 errdetail("Its workers start above time unit %lld from now on.", static_cast<long long>(floor))));
	return floor;
}

void
refuse_membership_without_registry()
{
	if (!OidIsValid(membership_relid()) ||
		spi_run("SELECT registry FROM uidgen.membership", 0, nullptr, nullptr, Visibility::Latest, SPI_OK_SELECT) == 0)
		return;

	char *registry = spi_text(0, 0);

	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("database \"%s\" is a member of uidgen registry \"%s\", but uidgen.registry is not set",
					get_database_name(MyDatabaseId), registry),
			 errdetail("A worker of this database's own numbering may be one that the registry leased to another "
					   "member since; IDs issued under it could repeat that member's."),
			 errhint("Set uidgen.registry again, or leave the registry on purpose with SELECT uid_registry_leave(): "
					 "IDs issued after leaving may repeat the fleet's, and a later join starts above them.")));
}

namespace {

/*
 * Has the join committer join the database (and, with adopt_layout, adopt
 * the registry's layout first: adopt_layout_if_unclaimed()), unless this
 * transaction locked a table the committer writes: it would wait for us.
 * True once it ended.  (uidgen.config: only adopt_registry_layout() asks
 * for the layout, having looked that it holds no lock on it.)
 */
bool
join_apart(const char *registry, const pg_uuid_t &pinned_id, Oid worker_table, int64_t now_delta,
		   int64_t borrow_units, bool adopt_layout)
{
	return !relation_locked_here(worker_table, RowShareLock) && !relation_locked_here(membership_relid(), RowShareLock) &&
		   commit_join_apart(registry, pinned_id, now_delta, borrow_units, adopt_layout);
}

/*
 * The database's join floor, joining now if it has not joined this
 * registry yet: every ID it issued, or will issue, under a worker claimed
 * without a registry is at or below the floor (the time reservation covers
 * them, and such workers stop at it), and every worker it claims from the
 * registry's blocks starts above it.  Its old workers are retired.
 *
 * The join is committed in a transaction of its own, by the join committer,
 * unless this transaction locked a table the committer writes (it would
 * wait for us): the caller's transaction may hold locks that another
 * session's, joining at the same moment, wants, and a join written here
 * would make that session wait for ours, closing a lock cycle.
 */
int64_t
join_floor(const char *identity, Oid worker_table, int64_t now_delta, int64_t borrow_units)
{
	char registry[registry_text_size];
	describe_current_registry(registry);

	pg_uuid_t pinned_id;
	char pinned[uuid_text_size];
	agent_registry(&pinned_id, pinned);

	if (std::optional<int64_t> joined = joined_floor(registry, pinned))
		return *joined;
	if (join_apart(registry, pinned_id, worker_table, now_delta, borrow_units, false))
	{
		if (std::optional<int64_t> joined = joined_floor(registry, pinned))
			return *joined;
	}
	return write_join(registry, pinned, identity, worker_table, now_delta, borrow_units);
}

} // namespace

bool
adopt_layout_if_unclaimed()
{
	RegistryRules rules = await_registry_rules();
	Layout fleet = rules.layout();
	Layout current = read_layout(true);

	if (fleet == current)
		return false;
	if (worker_ever_claimed())
	{
		Layout::Text here = current.describe_text();
		Layout::Text there = fleet.describe_text();
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the layout of database \"%s\" differs from its uidgen registry's",
						get_database_name(MyDatabaseId)),
				 errdetail("This database issued IDs under layout %s; the registry's is %s.", here.text,
						   there.text),
				 errhint("A database joins a registry with the registry's layout: set uidgen.registry only for "
						 "databases that use it, or configure the registry with this layout.")));
	}
	/* Not when a committer set it meanwhile (change_layout() waited for its lock): nothing to roll back. */
	bool changed = false;
	(void) change_layout(fleet, unix_ms_to_timestamptz(rules.epoch_ms), &changed);
	return changed;
}

void
refuse_unless_registry_layout(const Layout &layout)
{
	Layout fleet = await_registry_rules().layout();

	if (fleet == layout)
		return;
	Layout::Text here = layout.describe_text();
	Layout::Text there = fleet.describe_text();
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("the layout of database \"%s\" changed while it took its registry's", get_database_name(MyDatabaseId)),
			 errdetail("It is %s; the registry's is %s.", here.text, there.text),
			 errhint("Run the command again; do not run uid_configure() in a member database.")));
}

bool
adopt_registry_layout(Oid worker_table)
{
	require_registry_support();

	RegistryRules rules = await_registry_rules();
	Layout fleet = rules.layout();

	if (fleet == read_layout(true))
		return false;
	/*
	 * Committed apart, with the join: a rollback of this transaction would
	 * undo an adoption written here, while the session goes on issuing
	 * under the registry's layout, and a release written at its exit would
	 * then fix the database at the layout before (every claim refused,
	 * 55000; test 070).
	 */
	if (!worker_ever_claimed() && !relation_locked_here(config_relid(), RowShareLock))
	{
		char registry[registry_text_size];
		describe_current_registry(registry);

		pg_uuid_t pinned_id;
		char pinned[uuid_text_size];
		agent_registry(&pinned_id, pinned);

		int64_t now_delta = fleet.delta_at(backend_clock().now_ms());
		int64_t borrow_units = fleet.units_covering(max_borrow_ms);
		if (join_apart(registry, pinned_id, worker_table, now_delta, borrow_units, true) && fleet == read_layout(true))
			return false;
	}
	/* In this transaction: the committer could not run, or failed (then this says why). */
	return adopt_layout_if_unclaimed();
}

Claim
claim_leased_worker(const Layout &layout, const Claimant &claimant, Oid worker_table, int64_t now_delta,
					int64_t borrow_units, bool reuse, LeaseId *lease)
{
	Claim claim{};
	int64_t joined = join_floor(claimant.identity, worker_table, now_delta, borrow_units);

	if (reuse)
	{
		if (reuse_granted_worker(layout, claimant.identity, worker_table, now_delta, joined, &claim, lease))
			return claim;
		/* Above the reservation (a leaked holder issued no more), not this server's clock: test 069. */
		if (release_dead_workers(worker_table, claimant.identity, Generator::no_floor) > 0 &&
			reuse_granted_worker(layout, claimant.identity, worker_table, now_delta, joined, &claim, lease))
			return claim;
	}

	const char *database = get_database_name(MyDatabaseId);
	/*
	 * A join floor above what the server's lease covers (the database's
	 * clock ran far ahead before it joined, and it issued there): a worker
	 * taken now could issue nothing, and every attempt (a keeper starts
	 * again at each uid_next()) would spend another of the server's grants,
	 * until its blocks ran out for every database.  Refused before taking
	 * one; it issues once the registry's time nears the floor.
	 */
	if (std::optional<LeaseId> room = lease_with_room())
	{
		std::optional<int64_t> cap = lease_cap_delta(*room, layout);

		if (cap && joined >= *cap)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("database \"%s\" issued IDs %lld ms beyond what this server's uidgen lease covers",
							database, static_cast<long long>((joined - *cap) * layout.unit_ms())),
					 errdetail("Its IDs start above time unit %lld, the highest it may have issued before it joined "
							   "the registry; the lease covers up to unit %lld.",
							   static_cast<long long>(joined), static_cast<long long>(*cap)),
					 errhint("It issues again once the registry's clock nears that unit, as its clock did then.")));
	}
	for (int attempt = 0; attempt < grant_attempts; attempt++)
	{
		GrantedWorker taken = take_granted_worker(MyDatabaseId, database, agent_wait_ms);

		if (taken.worker > std::min<int64_t>(layout.max_worker(), max_lockable_worker))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("the uidgen registry leased worker %lld, beyond this layout's %lld",
							static_cast<long long>(taken.worker), static_cast<long long>(layout.max_worker()))));
		/* A session that has not seen the reload still holds an old worker of this number. */
		if (!try_lock_worker(worker_table, taken.worker))
			continue;
		int64_t floor = std::max({taken.floor_delta, joined, worker_last_time(taken.worker).value_or(-1)});
		*lease = taken.lease_id;
		return Claim{taken.worker, floor, false};
	}
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("every uidgen worker this server was granted is held by a session of this database"),
			 errhint("Sessions that began before uidgen.registry was set keep their workers until they end.")));
	pg_unreachable();
}

} // namespace uidgen::pg
