/*
 * layout_funcs.cpp
 *	  uid_layout() and uid_configure().
 */
#include "layout/catalog.hpp"
#include "layout/reservation.hpp"
#include "pg/guard.hpp"
#include "pg/pg_clock.hpp"
#include "pg/spi.hpp"
#include "pg/time_convert.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/event_trigger.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
}

#include <algorithm>
#include <cmath>
#include <string>

using namespace uidgen;
using namespace uidgen::pg;

/*
 * Whether a worker was ever claimed in this database, committed or not (a
 * claim in progress took its fresh id from the sequence, which no rollback
 * undoes): then the layout is fixed for good.
 */
bool
uidgen::pg::worker_ever_claimed()
{
	spi_run("SELECT (SELECT is_called FROM uidgen.worker_node_id_seq) "
			"    OR EXISTS (SELECT FROM uidgen.worker_node)",
			0, nullptr, nullptr, Visibility::Latest, SPI_OK_SELECT);
	return spi_bool(0, 0);
}

/*
 * Makes worker_ever_claimed() true for good, whether the claim under way
 * commits or not: for a worker that takes no id from the sequence (one from
 * a registry's blocks).  The sequence is not transactional.
 */
void
uidgen::pg::record_worker_claimed()
{
	spi_run("SELECT pg_catalog.nextval('uidgen.worker_node_id_seq') FROM uidgen.worker_node_id_seq WHERE NOT is_called",
			0, nullptr, nullptr, Visibility::Latest, SPI_OK_SELECT);
}

bool
uidgen::pg::registry_has_leased()
{
	if (!OidIsValid(block_lease_relid()))
		return false;
	spi_run("SELECT EXISTS (SELECT FROM uidgen.worker_block)", 0, nullptr, nullptr, Visibility::Latest,
			SPI_OK_SELECT);
	return spi_bool(0, 0);
}

namespace {

/* Number.MAX_SAFE_INTEGER: JavaScript's numbers hold every integer up to 2^53 - 1 exactly. */
constexpr int64_t javascript_max_safe_integer = (INT64_C(1) << 53) - 1;

/* uidgen.layout_info for layout. */
Datum
layout_info_datum(FunctionCallInfo fcinfo, const Layout &layout, bool configurable)
{
	TupleDesc tupdesc;

	if (get_call_result_type(fcinfo, nullptr, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);

	/* 12 columns before 2.0.0's max_id and javascript_safe: the SQL may be older than this library. */
	Datum values[14];
	bool nulls[14] = {false};
	int64_t ids_per_unit = layout.max_sequence() + 1;
	int64_t ids_per_second;
	std::optional<int64_t> end = layout.exhausted_at();
	int64_t now_ms = backend_clock().now_ms();

	values[0] = Int32GetDatum(layout.time_bits());
	values[1] = Int32GetDatum(layout.worker_bits());
	values[2] = Int32GetDatum(layout.seq_bits());
	values[3] = TimestampTzGetDatum(unix_ms_to_timestamptz(layout.epoch_ms()));
	values[4] = CStringGetTextDatum(time_unit_name(layout.unit()));
	values[5] = Int32GetDatum(layout.unused_bits());
	values[6] = Int64GetDatum(std::min<int64_t>(layout.max_worker(), max_lockable_worker));
	values[7] = Int64GetDatum(ids_per_unit);
	nulls[8] = __builtin_mul_overflow(ids_per_unit, 1000 / layout.unit_ms(), &ids_per_second);
	values[8] = Int64GetDatum(ids_per_second);
	if (end && unix_ms_fits_timestamptz(*end))
	{
		values[9] = TimestampTzGetDatum(unix_ms_to_timestamptz(*end));
		values[10] = Float8GetDatum(static_cast<double>(*end - now_ms) / (365.25 * 86400 * 1000));
	}
	else
	{
		TimestampTz infinity;

		TIMESTAMP_NOEND(infinity);
		values[9] = TimestampTzGetDatum(infinity);
		values[10] = Float8GetDatum(get_float8_infinity());
	}
	values[11] = BoolGetDatum(configurable);
	if (tupdesc->natts >= 14)
	{
		int64_t max_id = max_issuable_uid(layout);

		values[12] = Int64GetDatum(max_id);
		values[13] = BoolGetDatum(max_id <= javascript_max_safe_integer);
	}
	return HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls));
}

/*
 * Refuses a change of layout while any object of this database depends on
 * the IMMUTABLE functions that read it: the field functions uid_timestamp(),
 * uid_worker_id() and uid_sequence(), uid_min(), uid_max() and uid_interval(),
 * uid_to_uuid() and uuid_to_uid(): an expression or partial index, a generated column, a
 * check constraint, a view or materialized view, or a function with an
 * SQL-standard body.  Their stored values were computed under the layout in
 * force and would silently disagree with a new one.  Function bodies kept
 * as strings (plpgsql, quoted SQL) leave no trace in pg_depend and cannot
 * be seen.
 *
 * Runs under uid_configure's ExclusiveLock on uidgen.config.  Every
 * evaluation of these functions holds RowShareLock on uidgen.config to the
 * end of its transaction (decoding_layout()), and the two conflict:
 *
 *	- a transaction that computed values under the current layout (a
 *	  CREATE INDEX building, say) has ended before our lock is granted, so
 *	  an object it made is in pg_depend now;
 *	- one that computes after this check waits for the change to commit (or
 *	  abort), and taking its lock processes the invalidation, so it computes
 *	  under the new layout (a parallel worker, which cannot take a newer
 *	  snapshot, errors instead: catalog.cpp).
 *
 * Parallel workers release their locks when they exit, before their leader
 * commits, so pg_depend is read with a dirty snapshot: a dependency row
 * that a transaction in progress has inserted (an index whose build ran in
 * workers only, or has not started) counts too.  A lock on the functions themselves would not
 * help: PostgreSQL records a dependency without locking what it refers to.
 */
void
refuse_if_decoders_have_dependents()
{
	uint64 nfunctions = spi_run(
		"SELECT p.oid FROM pg_catalog.pg_proc p "
		"  JOIN pg_catalog.pg_depend m ON m.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass "
		"   AND m.objid = p.oid AND m.deptype = 'e' "
		"   AND m.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass "
		"  JOIN pg_catalog.pg_extension x ON x.oid = m.refobjid AND x.extname = 'uidgen' "
		" WHERE p.prosrc IN ('uid_timestamp', 'uid_worker_id', 'uid_sequence', 'uid_min', 'uid_max', "
		"                    'uid_interval', 'uid_to_uuid', 'uuid_to_uid')",
		0, nullptr, nullptr, Visibility::Latest, SPI_OK_SELECT);
	constexpr int max_functions = 8;
	Oid functions[max_functions];
	int nfound = 0;
	bool isnull;

	for (uint64 i = 0; i < nfunctions && nfound < max_functions; i++)
		functions[nfound++] =
			DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));

	Relation depend = table_open(DependRelationId, AccessShareLock);
	SnapshotData dirty;
	ObjectAddress *dependents = nullptr;
	int ndependents = 0;
	int capacity = 0;

	InitDirtySnapshot(dirty);
	for (int f = 0; f < nfound; f++)
	{
		ScanKeyData keys[2];
		HeapTuple tuple;

		ScanKeyInit(&keys[0], Anum_pg_depend_refclassid, BTEqualStrategyNumber, F_OIDEQ,
					ObjectIdGetDatum(ProcedureRelationId));
		ScanKeyInit(&keys[1], Anum_pg_depend_refobjid, BTEqualStrategyNumber, F_OIDEQ,
					ObjectIdGetDatum(functions[f]));
		SysScanDesc scan = systable_beginscan(depend, DependReferenceIndexId, true, &dirty, 2, keys);

		while (HeapTupleIsValid(tuple = systable_getnext(scan)))
		{
			Form_pg_depend row = reinterpret_cast<Form_pg_depend>(GETSTRUCT(tuple));
			ObjectAddress object{row->classid, row->objid, row->objsubid};
			bool seen = false;

			for (int i = 0; i < ndependents && !seen; i++)
				seen = dependents[i].classId == object.classId && dependents[i].objectId == object.objectId &&
					   dependents[i].objectSubId == object.objectSubId;
			if (seen)
				continue;
			if (ndependents == capacity)
			{
				capacity = capacity == 0 ? 8 : capacity * 2;
				dependents = static_cast<ObjectAddress *>(
					dependents == nullptr ? palloc(sizeof(ObjectAddress) * capacity)
										  : repalloc(dependents, sizeof(ObjectAddress) * capacity));
			}
			dependents[ndependents++] = object;
		}
		systable_endscan(scan);
	}
	table_close(depend, AccessShareLock);

	if (ndependents == 0)
		return;

	/* Name the first by description, so that the message is stable. */
	const char *named = nullptr;

	for (int i = 0; i < ndependents; i++)
	{
		/* NULL for an object whose creating transaction is still in progress. */
		char *description = getObjectDescription(&dependents[i], true);

		if (description != nullptr && (named == nullptr || strcmp(description, named) < 0))
			named = description;
	}
	if (named == nullptr)
		named = "an object that a transaction in progress is creating";

	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("cannot change the layout while objects depend on the IMMUTABLE functions that read it"),
			 errdetail_plural("%d object depends on them: %s.", "%d objects depend on them, among them %s.",
							  static_cast<unsigned long>(ndependents), ndependents, named),
			 errhint("Their values were computed under the current layout. Drop them, change the layout, "
					 "and create them again.")));
}

} // namespace

/* uid_layout() returns uidgen.layout_info: the database's layout and what follows from it. */
UIDGEN_FUNCTION(uid_layout)
{
	/* A copy: the SPI below may process an invalidation that resets the cache. */
	Layout layout = database_layout();

	bool configurable = with_spi(Rights::Caller, [] { return !worker_ever_claimed() && !registry_has_leased(); });

	return layout_info_datum(fcinfo, layout, configurable);
}

/*
 * Sets layout (whose epoch is epoch) unless it is the one in force, inside
 * an SPI connection; returns whether the layout can still change, and sets
 * changed to whether it wrote.
 */
bool
uidgen::pg::change_layout(const Layout &layout, TimestampTz epoch, bool *changed)
{
	/*
	 * Registrations and the IMMUTABLE decoders take RowShareLock: none can
	 * start until we commit (see refuse_if_decoders_have_dependents).
	 */
	LockRelationOid(config_relid(), ExclusiveLock);
	Layout current = read_layout(true);

	if (layout != current)
	{
		Layout::Text current_text = current.describe_text();

		if (worker_ever_claimed())
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("cannot change the layout once workers have registered"),
					 errdetail("IDs issued in this database decode only under layout %s.",
							   current_text.text),
					 errhint("Choose the layout before the first uid_next(); a new layout needs a new database.")));
		/* Its members issue under it from their first lease on (INV-7, INV-17). */
		if (registry_has_leased())
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("cannot change the layout of a uidgen registry that has leased or imported worker blocks"),
					 errdetail("Its members issue IDs under layout %s.", current_text.text),
					 errhint("Choose a fleet's layout before its registry leases its first block; another "
							 "layout needs a new registry.")));
		refuse_if_decoders_have_dependents();
		refuse_below_install_floor(layout, install_floor_delta(layout));

		Oid types[5] = {INT4OID, INT4OID, INT4OID, TIMESTAMPTZOID, TEXTOID};
		Datum values[5] = {Int32GetDatum(layout.time_bits()), Int32GetDatum(layout.worker_bits()),
						   Int32GetDatum(layout.seq_bits()), TimestampTzGetDatum(epoch),
						   CStringGetTextDatum(time_unit_name(layout.unit()))};

		if (spi_run("UPDATE uidgen.config SET time_bits = $1, worker_bits = $2, seq_bits = $3, epoch = $4, "
					"    unit = $5, configured_at = now()",
					5, types, values, Visibility::Transaction, SPI_OK_UPDATE) != 1)
			elog(ERROR, "uidgen.config must have exactly one row");

		reset_reservation();
		/* Every backend's cached layout, and ours at once. */
		CacheInvalidateRelcacheByRelid(config_relid());
		forget_catalog_cache();
	}
	if (changed != nullptr)
		*changed = layout != current;
	return !worker_ever_claimed() && !registry_has_leased();
}

/*
 * uid_configure(time_bits, worker_bits, seq_bits, epoch, unit) returns
 * uidgen.layout_info.  Refused once a worker has registered, or while
 * objects depend on the IMMUTABLE field functions, unless the layout is the
 * one in force (so that set-up scripts can run again).
 */
UIDGEN_FUNCTION(uid_configure)
{
	char *unit_name = text_to_cstring(PG_GETARG_TEXT_PP(4));
	TimestampTz epoch = PG_GETARG_TIMESTAMPTZ(3);

	if (TIMESTAMP_NOT_FINITE(epoch))
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("epoch must be finite")));
	if (epoch % 1000 != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("epoch must be a whole number of milliseconds")));

	Layout layout(PG_GETARG_INT32(0), PG_GETARG_INT32(1), PG_GETARG_INT32(2), timestamptz_to_unix_ms(epoch),
				  parse_time_unit(unit_name));
	layout.check_usable_at(backend_clock().now_ms());

	bool configurable = with_spi(Rights::Caller, [&layout, epoch] { return change_layout(layout, epoch); });

	return layout_info_datum(fcinfo, layout, configurable);
}


/*
 * uidgen.keep_reach(), the event trigger uidgen_keep_reach at the start of
 * DROP EXTENSION, DROP SCHEMA and DROP OWNED: when the command drops this
 * extension, keeps its reach past the drop (INV-13, ASM-6).
 */
UIDGEN_FUNCTION(uid_keep_reach)
{
	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_EVENT_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("uidgen.keep_reach() must be called as an event trigger")));

	Node *parsetree = reinterpret_cast<EventTriggerData *>(fcinfo->context)->parsetree;
	Oid role = GetUserId();

	with_spi(Rights::Owner, [parsetree, role] {
		if (command_drops_extension(parsetree, role))
			keep_reach();
	});
	PG_RETURN_NULL();
}
