/*
 * registry.cpp
 *	  The worker registry protocol (DESIGN.md section 4), over SPI.
 */
#include "pg/registry.hpp"

#include "pg/spi.hpp"
#include "pg/worker_lock.hpp"

extern "C" {
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "postmaster/postmaster.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
}

#include <algorithm>
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

char *
server_host_name()
{
	char host[256];

	if (gethostname(host, sizeof(host)) != 0)
		strlcpy(host, "localhost", sizeof(host));
	host[sizeof(host) - 1] = '\0';
	host[64] = '\0';		/* host_name is varchar(64), as in WORKER_NODE */
	return pstrdup(host);
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

bool
is_released_before(int64_t worker, int64_t delta)
{
	return worker_row_matches(worker, "status = 'released' AND last_time < $2", delta);
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

bool
claim_released_worker(const Layout &layout, const char *identity, Oid registry_relid, int64_t now_delta,
					  Claim *claim)
{
	Oid types[3] = {INT8OID, INT8OID, TEXTOID};
	Datum values[3] = {Int64GetDatum(now_delta), Int64GetDatum(worker_limit(layout)),
					   CStringGetTextDatum(identity)};
	uint64 rows = spi_run("SELECT id, last_time FROM uidgen.worker_node "
						  "WHERE status = 'released' AND last_time < $1 AND id <= $2 AND origin = $3 "
						  "ORDER BY last_time, id LIMIT " CppAsString2(64),
						  3, types, values, Visibility::Latest, SPI_OK_SELECT);
	static_assert(reuse_candidates == 64, "keep the LIMIT above in step");
	int64_t *ids = copy_int64_column(rows, 0);
	int64_t *last_times = copy_int64_column(rows, 1);

	for (uint64 i = 0; i < rows; i++)
	{
		if (!try_lock_worker(registry_relid, ids[i]))
			continue;
		if (is_released_before(ids[i], now_delta))
		{
			claim->worker = ids[i];
			claim->floor_delta = last_times[i];
			return true;
		}
		unlock_worker(registry_relid, ids[i]);
	}
	return false;
}

[[noreturn]] void
report_no_worker_left(const Layout &layout)
{
	spi_run("SELECT count(*) FILTER (WHERE status = 'active'), count(*) FILTER (WHERE status = 'released') "
			"FROM uidgen.worker_node",
			0, nullptr, nullptr, Visibility::Latest, SPI_OK_SELECT);
	int64_t active = spi_int64(0, 0);
	int64_t released = spi_int64(0, 1);

	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("no uidgen worker id is left"),
			 errdetail("The layout's %d worker bits allow worker ids 1 to " INT64_FORMAT "; " INT64_FORMAT
					   " are active and " INT64_FORMAT " released ones are not reusable yet.",
					   layout.worker_bits(), worker_limit(layout), active, released),
			 errhint("Release the workers of backends that died with uid_reclaim_workers(), wait for released "
					 "workers to become reusable, or use a layout with more worker bits.")));
	pg_unreachable();
}

} // namespace

char *
database_identity()
{
	return psprintf(UINT64_FORMAT "/%u", GetSystemIdentifier(), MyDatabaseId);
}

RegistryOrigin
registry_origin(const char *config_origin)
{
	char *identity = database_identity();

	return RegistryOrigin{identity, strcmp(config_origin, identity) != 0};
}

Claim
claim_worker(const Layout &layout, const RegistryOrigin &origin, Oid registry_relid, int64_t now_delta,
			 int64_t borrow_units, bool reuse)
{
	Claim claim{};

	if (reuse)
	{
		if (claim_released_worker(layout, origin.identity, registry_relid, now_delta, &claim))
			return claim;
		/* Workers of dead backends become reusable after the borrow bound. */
		if (release_dead_workers(registry_relid, origin.identity, now_delta + borrow_units) > 0 &&
			claim_released_worker(layout, origin.identity, registry_relid, now_delta, &claim))
			return claim;
	}

	/*
	 * Nobody else gets a fresh id from the identity, so its locks are free
	 * unless someone took them by hand (or reset the sequence): skip a few
	 * such ids, but do not spin on a broken registry.
	 */
	for (int attempt = 0; attempt < 100; attempt++)
	{
		spi_run("SELECT nextval('uidgen.worker_node_id_seq')", 0, nullptr, nullptr, Visibility::Transaction,
				SPI_OK_SELECT);
		int64_t count = spi_int64(0, 0);
		int64_t fresh = origin.is_copy ? worker_limit(layout) + 1 - count : count;

		if (fresh > worker_limit(layout) || fresh < 1 || (origin.is_copy && worker_row_exists(fresh)))
			report_no_worker_left(layout);
		if (try_lock_worker(registry_relid, fresh))
			return Claim{fresh, -1};
	}
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("the worker ids that uidgen.worker_node_id_seq hands out are all in use"),
			 errhint("The sequence must not be set back; set it past the largest id in uidgen.worker_node.")));
	pg_unreachable();
}

void
write_claim(int64_t worker, const char *identity)
{
	const char *application = application_name ? application_name : "";
	Oid types[8] = {INT8OID, TEXTOID, TEXTOID, INT4OID, TIMESTAMPTZOID, TEXTOID, TEXTOID, TEXTOID};
	Datum values[8] = {
		Int64GetDatum(worker),
		CStringGetTextDatum(server_host_name()),
		CStringGetTextDatum(psprintf("%d", PostPortNumber)),
		Int32GetDatum(server_worker_type()),
		TimestampTzGetDatum(MyStartTimestamp),
		CStringGetTextDatum(GetUserNameFromId(GetSessionUserId(), false)),
		CStringGetTextDatum(application),
		CStringGetTextDatum(identity),
	};

	spi_run("INSERT INTO uidgen.worker_node AS w (id, host_name, port, type, launch_date, modified, created, "
			"    pid, backend_start, role, application_name, status, origin) "
			"VALUES ($1, $2, $3, $4, current_date, now(), now(), pg_backend_pid(), $5, $6, $7, 'active', $8) "
			"ON CONFLICT (id) DO UPDATE SET host_name = excluded.host_name, port = excluded.port, "
			"    type = excluded.type, launch_date = excluded.launch_date, modified = excluded.modified, "
			"    pid = excluded.pid, backend_start = excluded.backend_start, role = excluded.role, "
			"    application_name = excluded.application_name, status = 'active', released_at = NULL, "
			"    origin = excluded.origin",
			8, types, values, Visibility::Transaction, SPI_OK_INSERT);
}

void
write_release(int64_t worker, int64_t last_delta)
{
	Oid types[2] = {INT8OID, INT8OID};
	Datum values[2] = {Int64GetDatum(worker), Int64GetDatum(last_delta)};

	spi_run("UPDATE uidgen.worker_node SET status = 'released', "
			"    last_time = greatest(last_time, $2), released_at = now(), modified = now() "
			"WHERE id = $1",
			2, types, values, Visibility::Transaction, SPI_OK_UPDATE);
}

int
release_dead_workers(Oid registry_relid, const char *identity, int64_t until_delta)
{
	Oid types[1] = {TEXTOID};
	Datum values[1] = {CStringGetTextDatum(identity)};
	uint64 rows = spi_run("SELECT id FROM uidgen.worker_node WHERE status = 'active' AND origin = $1 ORDER BY id",
						  1, types, values, Visibility::Latest, SPI_OK_SELECT);
	int64_t *ids = copy_int64_column(rows, 0);
	int released = 0;

	for (uint64 i = 0; i < rows; i++)
	{
		if (ids[i] < 0 || ids[i] > max_lockable_worker || !try_lock_worker(registry_relid, ids[i]))
			continue;
		/* Locked by us now, so its holder is gone; unless it changed, release it. */
		if (is_active(ids[i]))
		{
			write_release(ids[i], until_delta);
			released++;
		}
		unlock_worker(registry_relid, ids[i]);
	}
	pfree(ids);
	return released;
}

} // namespace uidgen::pg
