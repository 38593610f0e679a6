/*
 * worker_table.cpp
 *	  The worker table protocol (INV-8, INV-10 to INV-12; src/worker_table/README.md),
 *	  over SPI.
 */
#include "worker_table/worker_table.hpp"

#include "core/generator.hpp"
#include "layout/reservation.hpp"
#include "pg/identity.hpp"
#include "pg/spi.hpp"
#include "worker_table/worker_lock.hpp"

extern "C" {
#include "access/genam.h"
#include "access/stratnum.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "postmaster/postmaster.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
}

#include <algorithm>
#include <optional>
#include <unistd.h>

namespace uidgen::pg {

namespace {

/* UidGenerator's WorkerNodeType. */
constexpr int32 worker_type_container = 1;
constexpr int32 worker_type_actual = 2;

/* How many released rows one registration looks at. */
constexpr int reuse_candidates = 64;

int32
server_worker_type()
{
	/* UidGenerator says CONTAINER when it runs in Docker; so do we, for the server. */
	if (access("/.dockerenv", F_OK) == 0 || access("/run/.containerenv", F_OK) == 0 ||
		getenv("container") != nullptr)
		return worker_type_container;
	return worker_type_actual;
}

int64_t
worker_limit(const Layout &layout)
{
	return std::min<int64_t>(layout.max_worker(), max_lockable_worker);
}

/*
 * Whether worker, now locked by us, is still as the candidate query saw it:
 * another backend may have claimed or released it in between.
 */
bool
worker_row_matches(int64_t worker, const char *condition, int64_t delta)
{
	Oid types[2] = {INT8OID, INT8OID};
	Datum values[2] = {Int64GetDatum(worker), Int64GetDatum(delta)};
	char *sql = psprintf("SELECT 1 FROM uidgen.worker_node WHERE id = $1 AND %s", condition);
	bool matches = spi_run(sql, 2, types, values, Visibility::Latest, SPI_OK_SELECT) == 1;

	pfree(sql);
	return matches;
}

bool
worker_row_exists(int64_t worker)
{
	return worker_row_matches(worker, "true", 0);
}

/* The last_time of worker if it is released and reusable before delta. */
std::optional<int64_t>
reusable_last_time(int64_t worker, int64_t delta)
{
	Oid types[2] = {INT8OID, INT8OID};
	Datum values[2] = {Int64GetDatum(worker), Int64GetDatum(delta)};

	if (spi_run("SELECT last_time FROM uidgen.worker_node WHERE id = $1 AND status = 'released' AND last_time < $2",
				2, types, values, Visibility::Latest, SPI_OK_SELECT) != 1)
		return std::nullopt;
	return spi_int64(0, 0);
}

bool
is_active(int64_t worker)
{
	return worker_row_matches(worker, "status = 'active'", 0);
}

/* Copies column 0 (and 1) of the current SPI result, before the next query replaces it. */
int64_t *
copy_int64_column(uint64 rows, int col)
{
	int64_t *copy = static_cast<int64_t *>(palloc(sizeof(int64_t) * std::max<uint64>(rows, 1)));

	for (uint64 i = 0; i < rows; i++)
		copy[i] = spi_int64(i, col);
	return copy;
}

} // namespace

bool
claim_released_worker(const Layout &layout, const char *identity, Oid worker_table, int64_t now_delta,
					  const char *only, Claim *claim)
{
	Oid types[5] = {INT8OID, INT8OID, TEXTOID, INT8OID, TEXTOID};
	Datum values[5] = {Int64GetDatum(now_delta), Int64GetDatum(worker_limit(layout)),
					   CStringGetTextDatum(identity), Int64GetDatum(reuse_candidates),
					   only != nullptr ? CStringGetTextDatum(only) : 0};
	char nulls[5] = {' ', ' ', ' ', ' ', only != nullptr ? ' ' : 'n'};
	uint64 rows = spi_run_nulls("SELECT id FROM uidgen.worker_node "
								"WHERE status = 'released' AND last_time < $1 AND id <= $2 AND origin = $3 "
								"  AND ($5 IS NULL OR id = ANY ($5::pg_catalog.int8[])) "
								"ORDER BY last_time, id LIMIT $4",
								5, types, values, nulls, Visibility::Latest, SPI_OK_SELECT);
	int64_t *ids = copy_int64_column(rows, 0);

	for (uint64 i = 0; i < rows; i++)
	{
		if (!try_lock_worker(worker_table, ids[i]))
			continue;
		/* Read again under the lock: it may have been claimed and released meanwhile. */
		std::optional<int64_t> last_time = reusable_last_time(ids[i], now_delta);
		if (last_time)
		{
			*claim = Claim{ids[i], *last_time, true};
			return true;
		}
		unlock_worker(worker_table, ids[i]);
	}
	return false;
}

namespace {

[[noreturn]] void
report_no_worker_left(const Layout &layout, const char *identity)
{
	Oid types[1] = {TEXTOID};
	Datum values[1] = {CStringGetTextDatum(identity)};

	spi_run("SELECT count(*) FILTER (WHERE status = 'active'), count(*) FILTER (WHERE status = 'released') "
			"FROM uidgen.worker_node WHERE origin = $1",
			1, types, values, Visibility::Latest, SPI_OK_SELECT);
	long long active = spi_int64(0, 0);
	long long released = spi_int64(0, 1);

	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("no uidgen worker id is left"),
			 errdetail("The layout's %d worker bits allow worker ids 1 to %lld; %lld are active and %lld "
					   "released ones are not reusable yet.",
					   layout.worker_bits(), static_cast<long long>(worker_limit(layout)), active, released),
			 errhint("Release the workers of backends that died with uid_reclaim_workers(), wait for released "
					 "workers to become reusable, or use a layout with more worker bits.")));
	pg_unreachable();
}

} // namespace

namespace {

/*
 * A copy takes fresh ids from the top of the range down, above every id the
 * original had handed out when the copy was made (the copy never advances
 * its inherited sequence, so its value marks that point).
 */
Claim
claim_copy_worker(const Layout &layout, const Claimant &claimant, Oid worker_table)
{
	Oid types[1] = {TEXTOID};
	Datum values[1] = {CStringGetTextDatum(claimant.identity)};

	spi_run("SELECT (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM uidgen.worker_node_id_seq), "
			"       (SELECT min(id) FROM uidgen.worker_node WHERE origin = $1)",
			1, types, values, Visibility::Latest, SPI_OK_SELECT);
	int64_t inherited = spi_int64(0, 0);
	int64_t candidate = spi_is_null(0, 1) ? worker_limit(layout) : spi_int64(0, 1) - 1;

	for (; candidate > inherited; candidate--)
	{
		if (worker_row_exists(candidate) || !try_lock_worker(worker_table, candidate))
			continue;
		/*
		 * Read again under the locks: another copy's session may have taken
		 * it, issued under it and left between the first look and the lock.
		 */
		if (!worker_row_exists(candidate))
			return Claim{candidate, Generator::no_floor, true};
		unlock_worker(worker_table, candidate);
	}
	report_no_worker_left(layout, claimant.identity);
}

} // namespace

Claimant
identify_claimant(const char *original_identity)
{
	char *identity = database_identity();

	return Claimant{identity, strcmp(original_identity, identity) != 0};
}

Claim
claim_worker(const Layout &layout, const Claimant &claimant, Oid worker_table, int64_t now_delta,
			 int64_t borrow_units, bool reuse)
{
	Claim claim{};

	if (reuse)
	{
		if (claim_released_worker(layout, claimant.identity, worker_table, now_delta, nullptr, &claim))
			return claim;
		/* Workers of dead backends become reusable after the borrow bound. */
		if (release_dead_workers(worker_table, claimant.identity, now_delta + borrow_units) > 0 &&
			claim_released_worker(layout, claimant.identity, worker_table, now_delta, nullptr, &claim))
			return claim;
	}

	if (claimant.is_copy)
		return claim_copy_worker(layout, claimant, worker_table);

	/*
	 * Nobody else gets a fresh id from the identity, so it has no row and its
	 * locks are free, unless someone set the sequence back or took the locks
	 * by hand: skip a few such ids, but do not spin on a broken worker table.
	 */
	for (int attempt = 0; attempt < 100; attempt++)
	{
		spi_run("SELECT nextval('uidgen.worker_node_id_seq')", 0, nullptr, nullptr, Visibility::Transaction,
				SPI_OK_SELECT);
		int64_t fresh = spi_int64(0, 0);

		if (fresh > worker_limit(layout))
			report_no_worker_left(layout, claimant.identity);
		if (fresh >= 1 && !worker_row_exists(fresh) && try_lock_worker(worker_table, fresh))
			return Claim{fresh, Generator::no_floor, false};
	}
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("the worker ids that uidgen.worker_node_id_seq hands out are all in use"),
			 errhint("The sequence must not be set back; set it past the largest id in uidgen.worker_node.")));
	pg_unreachable();
}

namespace {

/*
 * Writes worker's row as held or released by holder: an upsert, because a
 * claim that never committed left no row, though IDs may have been issued
 * under it.  last_time only grows; NULL leaves it as it is.
 */
void
upsert_row(int64_t worker, const char *identity, const char *status, std::optional<int64_t> last_delta,
		   const ClaimHolder &holder)
{
	Oid types[11] = {INT8OID, TEXTOID, TEXTOID, INT4OID, TIMESTAMPTZOID, TEXTOID,
					 TEXTOID, TEXTOID, TEXTOID, INT8OID, INT4OID};
	Datum values[11] = {Int64GetDatum(worker),
						CStringGetTextDatum(server_host_name()),
						CStringGetTextDatum(psprintf("%d", PostPortNumber)),
						Int32GetDatum(server_worker_type()),
						TimestampTzGetDatum(holder.backend_start),
						CStringGetTextDatum(GetUserNameFromId(holder.role, false)),
						CStringGetTextDatum(holder.application_name),
						CStringGetTextDatum(identity),
						CStringGetTextDatum(status),
						Int64GetDatum(last_delta.value_or(0)),
						Int32GetDatum(holder.pid)};
	char nulls[lengthof(values)];

	memset(nulls, ' ', sizeof(nulls));
	if (!last_delta)
		nulls[9] = 'n';
	/*
	 * The session locks already keep every other claimant away from the row:
	 * write it as of now, so that a REPEATABLE READ transaction does not fail
	 * on a row another backend released after its snapshot.
	 */
	spi_run_nulls("INSERT INTO uidgen.worker_node AS w (id, host_name, port, type, launch_date, modified, created, "
				  "    pid, backend_start, role, application_name, origin, status, last_time, released_at) "
				  "VALUES ($1, $2, $3, $4, current_date, now(), now(), $11, $5, $6, $7, $8, $9, $10, "
				  "    CASE WHEN $9 = 'released' THEN now() END) "
				  "ON CONFLICT (id) DO UPDATE SET host_name = excluded.host_name, port = excluded.port, "
				  "    type = excluded.type, launch_date = excluded.launch_date, modified = excluded.modified, "
				  "    pid = excluded.pid, backend_start = excluded.backend_start, role = excluded.role, "
				  "    application_name = excluded.application_name, origin = excluded.origin, "
				  "    status = excluded.status, last_time = greatest(w.last_time, excluded.last_time), "
				  "    released_at = excluded.released_at",
				  lengthof(values), types, values, nulls, Visibility::Latest, SPI_OK_INSERT);
}

} // namespace

ClaimHolder
this_backend()
{
	return ClaimHolder{MyProcPid, MyStartTimestamp, GetSessionUserId(), application_name ? application_name : ""};
}

void
write_claim(int64_t worker, const char *identity, const ClaimHolder &holder)
{
	upsert_row(worker, identity, "active", std::nullopt, holder);
}

bool
fresh_worker_left(const Layout &layout)
{
	spi_run("SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END FROM uidgen.worker_node_id_seq", 0,
			nullptr, nullptr, Visibility::Latest, SPI_OK_SELECT);
	return spi_int64(0, 0) <= worker_limit(layout);
}

bool
claim_is_committed(int64_t worker)
{
	Oid types[3] = {INT8OID, INT4OID, TIMESTAMPTZOID};
	Datum values[3] = {Int64GetDatum(worker), Int32GetDatum(MyProcPid), TimestampTzGetDatum(MyStartTimestamp)};

	return spi_run("SELECT 1 FROM uidgen.worker_node WHERE id = $1 AND status = 'active' AND pid = $2 "
				   "AND backend_start = $3",
				   3, types, values, Visibility::Latest, SPI_OK_SELECT) == 1;
}

void
write_release(int64_t worker, const char *identity, int64_t last_delta, const ClaimHolder &holder)
{
	upsert_row(worker, identity, "released", last_delta, holder);
}

void
write_leaked_release(int64_t worker, int64_t until_delta)
{
	Oid types[3] = {INT8OID, INT8OID, INT8OID};
	Datum values[3] = {Int64GetDatum(worker), Int64GetDatum(until_delta),
					   Int64GetDatum(reserved_until().value_or(-1))};

	/*
	 * The dead holder issued only units its reservation covered, and the
	 * mark is at least that reservation: the floor never rests on the clock
	 * alone, which may have been set back since.  (An extension whose SQL
	 * predates the mark falls back to the latest unit any worker reached.)
	 */
	spi_run("UPDATE uidgen.worker_node SET status = 'released', "
			"    last_time = greatest(last_time, $2, $3, (SELECT max(last_time) FROM uidgen.worker_node)), "
			"    released_at = now(), modified = now() "
			"WHERE id = $1",
			3, types, values, Visibility::Latest, SPI_OK_UPDATE);
}

namespace {

/*
 * Whether a transaction still in progress (a prepared one included) inserts
 * or deletes a version of worker's row: an upsert of the row would wait for
 * it.  Read with a dirty snapshot, which reports such a transaction; a scan
 * of the heap, as the table has a row per worker ever used and the exit
 * release is rare.
 */
bool
row_in_progress(Oid worker_table, int64_t worker)
{
	Relation rel = table_open(worker_table, RowExclusiveLock);
	AttrNumber id = get_attnum(worker_table, "id");
	SnapshotData dirty;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple tuple;
	bool in_progress = false;

	InitDirtySnapshot(dirty);
	ScanKeyInit(&key, id, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(worker));
	scan = systable_beginscan(rel, InvalidOid, false, &dirty, 1, &key);
	while (!in_progress && (tuple = systable_getnext(scan)) != nullptr)
		in_progress = TransactionIdIsValid(dirty.xmin) || TransactionIdIsValid(dirty.xmax);
	systable_endscan(scan);
	table_close(rel, NoLock);
	return in_progress;
}

} // namespace

bool
lock_row_nowait(Oid worker_table, int64_t worker)
{
	Oid types[1] = {INT8OID};
	Datum values[1] = {Int64GetDatum(worker)};

	if (row_in_progress(worker_table, worker))
		return false;
	if (spi_run("SELECT id FROM uidgen.worker_node WHERE id = $1 FOR UPDATE SKIP LOCKED", 1, types, values,
				Visibility::Transaction, SPI_OK_SELECT) == 1)
		return true;
	return !worker_row_exists(worker);
}

std::optional<int64_t>
worker_last_time(int64_t worker)
{
	Oid types[1] = {INT8OID};
	Datum values[1] = {Int64GetDatum(worker)};

	if (spi_run("SELECT last_time FROM uidgen.worker_node WHERE id = $1", 1, types, values, Visibility::Latest,
				SPI_OK_SELECT) != 1 ||
		spi_is_null(0, 0))
		return std::nullopt;
	return spi_int64(0, 0);
}

int
release_dead_workers(Oid worker_table, const char *identity, int64_t until_delta)
{
	Oid types[1] = {TEXTOID};
	Datum values[1] = {CStringGetTextDatum(identity)};
	uint64 rows = spi_run("SELECT id FROM uidgen.worker_node WHERE status = 'active' AND origin = $1 ORDER BY id",
						  1, types, values, Visibility::Latest, SPI_OK_SELECT);
	int64_t *ids = copy_int64_column(rows, 0);
	int released = 0;

	for (uint64 i = 0; i < rows; i++)
	{
		if (ids[i] < 0 || ids[i] > max_lockable_worker || !try_lock_worker(worker_table, ids[i]))
			continue;
		/*
		 * Locked by us now, so its holder is gone, unless the claim pool holds
		 * its mark (a claim committed ahead for a backend, claim_pool.hpp);
		 * unless it changed, release it.
		 */
		if (!pool_mark_held_elsewhere(worker_table, ids[i]) && is_active(ids[i]))
		{
			write_leaked_release(ids[i], until_delta);
			released++;
		}
		unlock_worker(worker_table, ids[i]);
	}
	pfree(ids);
	return released;
}

} // namespace uidgen::pg
