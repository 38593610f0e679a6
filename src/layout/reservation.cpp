/*
 * reservation.cpp
 *	  Raising uidgen.reserved_until ahead of the time units a backend issues.
 */
#include "layout/reservation.hpp"

#include "core/generator.hpp"
#include "layout/catalog.hpp"
#include "pg/compat.hpp"
#include "pg/guard.hpp"
#include "pg/pg_clock.hpp"
#include "pg/settings.hpp"
#include "pg/spi.hpp"
#include "pg/time_convert.hpp"

extern "C" {
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "commands/extension.h"
#include "nodes/parsenodes.h"
#include "storage/lock.h"
#include "executor/spi.h"
#include "utils/acl.h"
#include "utils/timestamp.h"
}

#include <algorithm>

namespace uidgen::pg {

namespace {

/*
 * How far ahead of what it needs a backend reserves.  Longer means fewer
 * WAL flushes (one per window for a whole busy database); shorter means a
 * worker leaked by a crash is reusable sooner.  Ten seconds is the default
 * uidgen.max_borrow: a leaked worker waits about as long as it did in 1.0.
 */
constexpr int64_t window_ms = 10000;

/* The fourth key of the advisory lock that serialises raises; SQL's advisory functions use 1 and 2. */
constexpr uint16 raise_lock_key_kind = 4;

int64_t
read_mark()
{
	spi_run("SELECT last_value FROM uidgen.reserved_until", 0, nullptr, nullptr, Visibility::Latest,
			SPI_OK_SELECT);
	return spi_int64(0, 0);
}

/*
 * The end of the WAL inserted so far.  At a page boundary the insert
 * pointer points past the header of a page nobody has begun, which
 * XLogFlush() refuses; the end is the page's start then.
 */
XLogRecPtr
inserted_wal_end()
{
	XLogRecPtr end = GetXLogInsertRecPtr();

	if (XLogSegmentOffset(end, wal_segment_size) == SizeOfXLogLongPHD)
		return end - SizeOfXLogLongPHD;
	if (end % XLOG_BLCKSZ == SizeOfXLogShortPHD)
		return end - SizeOfXLogShortPHD;
	return end;
}

/*
 * The mark, made durable: a value another backend raised is flushed by it
 * before it issues, but one set by hand (setval) in a transaction that did
 * not commit may not be.  Nearly always a no-op.
 */
int64_t
read_durable_mark()
{
	int64_t mark = read_mark();

	XLogFlush(inserted_wal_end());
	return mark;
}

int64_t
raise_to(Oid sequence_relid, int64_t target)
{
	Oid types[2] = {REGCLASSOID, INT8OID};
	Datum values[2] = {ObjectIdGetDatum(sequence_relid), Int64GetDatum(target)};

	spi_run("SELECT pg_catalog.setval($1, $2)", 2, types, values, Visibility::Transaction, SPI_OK_SELECT);
	/* Durable before any ID under it is issued, whether or not this transaction commits. */
	XLogFlush(XactLastRecEnd);
	return target;
}

/*
 * Runs step under the raise lock, a session lock held for this call only
 * and released here, also on error: the read and the raise of two backends
 * must not interleave.
 */
template <typename Step>
int64_t
under_raise_lock(Oid sequence_relid, Step step)
{
	LOCKTAG tag;
	volatile int64_t covered = 0; /* assigned inside PG_TRY */

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, sequence_relid, 0, raise_lock_key_kind);
	(void) LockAcquire(&tag, ExclusiveLock, true, false);
	PG_TRY();
	{
		covered = with_spi(Rights::Owner, step);
	}
	PG_FINALLY();
	{
		LockRelease(&tag, ExclusiveLock, true);
	}
	PG_END_TRY();
	return covered;
}

/*
 * Makes the mark cover delta; returns the last unit it covers.  Adopting a
 * mark raised by someone else needs no lock: setval changes the sequence's
 * page and inserts its WAL record under the page's exclusive lock, so a
 * value that can be read has its record inserted, and read_durable_mark()
 * flushes past it.
 */
int64_t
cover(Oid sequence_relid, int64_t delta, int64_t window_units)
{
	int64_t mark = with_spi(Rights::Owner, [] { return read_durable_mark(); });

	if (mark >= delta)
		return mark;
	return under_raise_lock(sequence_relid, [sequence_relid, delta, window_units] {
		int64_t current = read_durable_mark();

		return current >= delta ? current : raise_to(sequence_relid, delta + window_units);
	});
}

/*
 * The install this reservation was made for is gone: a statement that ran
 * across DROP EXTENSION and CREATE EXTENSION stops at the reservation it
 * held, which the new install's reach lies above.  Going on under the new
 * install's mark would issue its old worker's IDs in the new install's
 * time, where the new numbering hands the same worker out again.
 */
void
refuse_reinstalled(bool created_again)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 created_again ? errmsg("extension \"uidgen\" was dropped and created again while this session issued IDs")
						   : errmsg("extension \"uidgen\" was dropped while this session issued IDs"),
			 errdetail("The session's worker belonged to the dropped install, whose time reservation ends here; the "
					   "new install's workers start above every ID the dropped one issued."),
			 errhint("Run the command again: it claims a worker of the new install.")));
}

/*
 * Without uidgen.reserved_until the extension's SQL objects must be those of
 * 1.0.0, whose library reserved nothing; anything else is a damaged
 * installation, and issuing unreserved IDs in it would be silent.
 */
bool
sql_predates_reservation()
{
	int64_t rows = with_spi(Rights::Caller, [] {
		return static_cast<int64_t>(spi_run("SELECT FROM pg_catalog.pg_extension "
											"WHERE extname = 'uidgen' AND extversion = '1.0.0'",
											0, nullptr, nullptr, Visibility::Latest, SPI_OK_SELECT));
	});

	return rows == 1;
}

bool warned_old_sql = false;

void
warn_once_that_sql_is_old()
{
	if (warned_old_sql)
		return;
	warned_old_sql = true;
	ereport(WARNING,
			(errmsg("the SQL objects of extension \"uidgen\" are older than its library"),
			 errdetail("Without uidgen.reserved_until, a worker of a backend that crashes is reused by the "
					   "clock alone, as in version 1.0.0."),
			 errhint("Run ALTER EXTENSION uidgen UPDATE in this database.")));
}

} // namespace

DatabaseReservation::DatabaseReservation(const Layout &layout)
	: window_units_(layout.units_covering(window_ms)),
	  install_(pg_call([] { return reserved_until_relid(); }))
{
}

int64_t
DatabaseReservation::extend(int64_t delta)
{
	return pg_call([this, delta]() -> int64_t {
		/*
		 * Locked first, which also takes in the invalidations of a drop that
		 * committed meanwhile, and keeps one from committing until this
		 * transaction ends: what the name finds below is this install's.
		 */
		if (OidIsValid(install_))
			LockRelationOid(install_, AccessShareLock);

		Oid sequence_relid = reserved_until_relid();

		if (OidIsValid(install_) && sequence_relid != install_)
			refuse_reinstalled(OidIsValid(sequence_relid));
		if (OidIsValid(sequence_relid))
			return cover(sequence_relid, delta, window_units_);
		if (!sql_predates_reservation())
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("sequence \"uidgen.reserved_until\" is missing"),
					 errdetail("Extension \"uidgen\" needs it to issue IDs safely after a crash."),
					 errhint("Recreate the extension, or restore the sequence from a backup.")));
		warn_once_that_sql_is_old();
		/* Issue as 1.0.0 did, and look again a window later: ALTER EXTENSION UPDATE may have run. */
		return delta + window_units_;
	});
}

void
reset_reservation()
{
	Oid sequence_relid = reserved_until_relid();

	if (!OidIsValid(sequence_relid))
		return;
	with_spi(Rights::Owner, [sequence_relid] {
		Oid types[1] = {REGCLASSOID};
		Datum values[1] = {ObjectIdGetDatum(sequence_relid)};

		spi_run("SELECT pg_catalog.setval($1, -1, false)", 1, types, values, Visibility::Transaction,
				SPI_OK_SELECT);
	});
}

namespace {

/*
 * The largest ID any worker of this install may have issued: the largest
 * of the unit the time reservation covers, or 0 when no worker was ever
 * claimed (the mark is then only a guess at the clock).  Takes the lock that
 * serialises raises until the transaction ends, not for the call: a raise
 * after the read would go past it; once the drop commits, a raise finds its
 * install gone (DatabaseReservation::extend()).
 */
int64_t
install_reach()
{
	Oid sequence_relid = reserved_until_relid();

	if (!OidIsValid(sequence_relid) || !worker_ever_claimed())
		return 0;

	LOCKTAG tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, sequence_relid, 0, raise_lock_key_kind);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);

	int64_t mark = read_durable_mark();
	Layout layout = read_layout(true);

	return mark < 0 ? 0 : layout.max_uid_of_unit(std::min(mark, layout.max_delta()));
}

/*
 * uidgen_reach and its sequence are trusted only as a superuser made them:
 * a role that could create the schema first could otherwise hand the
 * extension's owner a view to run, or a sequence it sets back itself.
 */
void
refuse_untrusted_reach()
{
	spi_run("SELECT n.nspname IS NOT NULL AND NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.oid = n.nspowner)"
			"    OR c.oid IS NOT NULL AND (c.relkind <> 'S' OR NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles r "
			"                                                        WHERE r.oid = c.relowner))"
			"  FROM (SELECT 1) x"
			"  LEFT JOIN pg_catalog.pg_namespace n ON n.nspname = 'uidgen_reach'"
			"  LEFT JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = 'max_id'",
			0, nullptr, nullptr, Visibility::Latest, SPI_OK_SELECT);
	if (spi_bool(0, 0))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("schema \"uidgen_reach\" or its sequence \"max_id\" was not made by a superuser"),
				 errdetail("uidgen keeps how far a dropped install issued IDs there, and trusts only what a "
						   "superuser made."),
				 errhint("A superuser must drop schema uidgen_reach, or give it and a sequence max_id in it to "
						 "a superuser.")));
}

} // namespace

bool
command_drops_extension(Node *parsetree, Oid role)
{
	Oid extension = get_extension_oid("uidgen", true);

	/* Only who may drop the extension: another role's DROP takes no lock and writes nothing. */
	if (!OidIsValid(extension) || !extension_owned_by(extension, role))
		return false;

	Oid types[1] = {OIDOID};
	Datum values[1] = {ObjectIdGetDatum(extension)};

	spi_run("SELECT e.extowner, n.nspname FROM pg_catalog.pg_extension e "
			"  JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.oid = $1",
			1, types, values, Visibility::Latest, SPI_OK_SELECT);

	bool isnull;
	Oid owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	char *schema = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);

	if (IsA(parsetree, DropStmt))
	{
		const DropStmt *drop = castNode(DropStmt, parsetree);
		const char *target = drop->removeType == OBJECT_EXTENSION									 ? "uidgen"
							 : drop->removeType == OBJECT_SCHEMA && drop->behavior == DROP_CASCADE ? schema
																								 : nullptr;
		ListCell *cell;

		if (target == nullptr)
			return false;
		foreach (cell, drop->objects)
			if (strcmp(strVal(lfirst(cell)), target) == 0)
				return true;
		return false;
	}
	if (IsA(parsetree, DropOwnedStmt))
	{
		ListCell *cell;

		foreach (cell, castNode(DropOwnedStmt, parsetree)->roles)
			if (get_rolespec_oid(static_cast<RoleSpec *>(lfirst(cell)), true) == owner)
				return true;
	}
	return false;
}

void
keep_reach()
{
	int64_t reach = install_reach();

	if (reach == 0)
		return;
	refuse_untrusted_reach();
	spi_run("DO $$ BEGIN "
			"IF pg_catalog.to_regnamespace('uidgen_reach') IS NULL THEN "
			"  CREATE SCHEMA uidgen_reach; "
			"  COMMENT ON SCHEMA uidgen_reach IS 'Left behind by DROP EXTENSION uidgen: a later CREATE EXTENSION "
			"uidgen starts above uidgen_reach.max_id'; "
			"  GRANT USAGE ON SCHEMA uidgen_reach TO PUBLIC; "
			"END IF; "
			"IF pg_catalog.to_regclass('uidgen_reach.max_id') IS NULL THEN "
			"  CREATE SEQUENCE uidgen_reach.max_id AS bigint MINVALUE 0 START WITH 0 NO CYCLE; "
			"  COMMENT ON SEQUENCE uidgen_reach.max_id IS 'An ID at or above every ID that the dropped installs of "
			"uidgen may have issued in this database'; "
			"  REVOKE ALL ON uidgen_reach.max_id FROM PUBLIC; "
			"  GRANT SELECT ON uidgen_reach.max_id TO PUBLIC; "
			"END IF; END $$",
			0, nullptr, nullptr, Visibility::Transaction, SPI_OK_UTILITY);

	Oid types[1] = {INT8OID};
	Datum values[1] = {Int64GetDatum(reach)};

	spi_run("SELECT pg_catalog.setval('uidgen_reach.max_id', $1) FROM uidgen_reach.max_id WHERE last_value < $1", 1,
			types, values, Visibility::Transaction, SPI_OK_SELECT);
}

namespace {

int64_t
install_floor_id()
{
	Oid relid = install_floor_relid();

	if (!OidIsValid(relid))
		return 0;

	Oid types[1] = {REGCLASSOID};
	Datum values[1] = {ObjectIdGetDatum(relid)};

	spi_run("SELECT coalesce(pg_catalog.pg_sequence_last_value($1), 0)", 1, types, values, Visibility::Latest,
			SPI_OK_SELECT);
	return spi_int64(0, 0);
}

} // namespace

int64_t
database_reach()
{
	return std::max(install_reach(), install_floor_id());
}

int64_t
raise_install_floor(const Layout &layout, int64_t reach)
{
	Layout::Text text = layout.describe_text();

	if (reach < 0 || reach > layout.max_uid())
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("reach %lld is not an ID of layout %s", static_cast<long long>(reach), text.text)));

	std::optional<int64_t> start = layout.start_of(layout.unit_floor_above(reach) + 1);
	int64_t ahead_ms = start ? *start - backend_clock().now_ms() : INT64_MAX;

	/* No install issues further ahead than this: the reach of another layout. */
	if (ahead_ms > max_borrow_ms + window_ms)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("reach %lld lies %lld ms ahead of this server's clock under layout %s",
						static_cast<long long>(reach), static_cast<long long>(ahead_ms), text.text),
				 errdetail("No database issues IDs that far ahead: the reach was taken under another layout, "
						   "or on a server whose clock is ahead of this one's."),
				 errhint("Take the reach with uid_reach() in a database of the same layout, after its writes "
						 "stopped.")));

	Oid types[1] = {INT8OID};
	Datum values[1] = {Int64GetDatum(reach)};

	spi_run("SELECT pg_catalog.setval('uidgen.install_floor', $1) FROM uidgen.install_floor WHERE last_value < $1", 1,
			types, values, Visibility::Transaction, SPI_OK_SELECT);
	return install_floor_id();
}

int64_t
install_floor_delta(const Layout &layout)
{
	int64_t floor_id = install_floor_id();

	return floor_id > 0 ? layout.unit_floor_above(floor_id) : Generator::no_floor;
}

void
refuse_below_install_floor(const Layout &layout, int64_t floor)
{
	if (floor == Generator::no_floor)
		return;

	int64_t now_ms = backend_clock().now_ms();
	std::optional<int64_t> start = floor < layout.max_delta() ? layout.start_of(floor + 1) : std::nullopt;

	/* As far ahead as a session may borrow, and a window: what a reinstall right after the last ID needs. */
	if (start && *start - now_ms <= max_borrow_ms + window_ms)
		return;

	Layout::Text text = layout.describe_text();
	const char *until = start && unix_ms_fits_timestamptz(*start)
							? timestamptz_to_str(unix_ms_to_timestamptz(*start))
							: nullptr;

	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("cannot use layout %s: its IDs lie below those an earlier install of uidgen issued in this "
					"database",
					text.text),
			 until ? errdetail("Every ID of this layout up to %s lies at or below uidgen.install_floor.", until)
				   : errdetail("Every ID of this layout lies at or below uidgen.install_floor."),
			 errhint("Keep the layout of the earlier install, or choose one whose IDs are larger.")));
}

std::optional<int64_t>
reserved_until()
{
	if (!OidIsValid(reserved_until_relid()))
		return std::nullopt;
	return read_mark();
}

std::optional<int64_t>
settled_reserved_until()
{
	Oid sequence_relid = reserved_until_relid();

	if (!OidIsValid(sequence_relid))
		return std::nullopt;
	return under_raise_lock(sequence_relid, [] { return read_durable_mark(); });
}

} // namespace uidgen::pg
