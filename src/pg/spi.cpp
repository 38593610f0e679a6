/*
 * spi.cpp
 *	  SPI helpers, and running as the extension owner.
 */
#include "pg/spi.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
}

namespace uidgen::pg {

uint64
spi_run(const char *sql, int nargs, const Oid *types, const Datum *values, Visibility visibility, int expected)
{
	return spi_run_nulls(sql, nargs, types, values, nullptr, visibility, expected);
}

uint64
spi_run_nulls(const char *sql, int nargs, const Oid *types, const Datum *values, const char *nulls,
			  Visibility visibility, int expected)
{
	int rc;

	if (visibility == Visibility::Latest)
	{
		SPIPlanPtr plan = SPI_prepare(sql, nargs, const_cast<Oid *>(types));

		if (plan == nullptr)
			elog(ERROR, "SPI_prepare failed for \"%s\": %s", sql, SPI_result_code_string(SPI_result));
		/* A fresh snapshot: read what committed up to now, as nextval() sees its sequence. */
		rc = SPI_execute_snapshot(plan, const_cast<Datum *>(values), nulls, GetLatestSnapshot(),
								  InvalidSnapshot, false, false, 0);
		SPI_freeplan(plan);
	}
	else
		rc = SPI_execute_with_args(sql, nargs, const_cast<Oid *>(types), const_cast<Datum *>(values), nulls,
								   visibility == Visibility::ReadOnly, 0);

	if (rc != expected)
		elog(ERROR, "unexpected SPI result %s for \"%s\"", SPI_result_code_string(rc), sql);
	return SPI_processed;
}

namespace {

Datum
spi_datum(uint64 row, int col, bool *isnull)
{
	Assert(SPI_tuptable != nullptr && row < SPI_processed);
	return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col + 1, isnull);
}

Datum
spi_not_null(uint64 row, int col)
{
	bool isnull;
	Datum value = spi_datum(row, col, &isnull);

	if (isnull)
		elog(ERROR, "unexpected null in column %d of an SPI result", col + 1);
	return value;
}

} // namespace

bool
spi_is_null(uint64 row, int col)
{
	bool isnull;

	(void) spi_datum(row, col, &isnull);
	return isnull;
}

int64_t
spi_int64(uint64 row, int col)
{
	return DatumGetInt64(spi_not_null(row, col));
}

int32
spi_int32(uint64 row, int col)
{
	return DatumGetInt32(spi_not_null(row, col));
}

bool
spi_bool(uint64 row, int col)
{
	return DatumGetBool(spi_not_null(row, col));
}

TimestampTz
spi_timestamptz(uint64 row, int col)
{
	return DatumGetTimestampTz(spi_not_null(row, col));
}

TransactionId
spi_xid(uint64 row, int col)
{
	return DatumGetTransactionId(spi_not_null(row, col));
}

char *
spi_text(uint64 row, int col)
{
	return TextDatumGetCString(spi_not_null(row, col));
}

int
begin_pinned_search_path()
{
	int nest_level = NewGUCNestLevel();

	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	return nest_level;
}

void
end_pinned_search_path(int guc_nest_level)
{
	AtEOXact_GUC(true, guc_nest_level);
}

void
begin_as_owner(OwnerContext *context)
{
	Oid extension_oid = get_extension_oid("uidgen", false);
	Oid owner = InvalidOid;
	HeapTuple tuple = SearchSysCache1(EXTENSIONOID, ObjectIdGetDatum(extension_oid));

	if (HeapTupleIsValid(tuple))
	{
		owner = reinterpret_cast<Form_pg_extension>(GETSTRUCT(tuple))->extowner;
		ReleaseSysCache(tuple);
	}
	if (!OidIsValid(owner))
		elog(ERROR, "cache lookup failed for extension %u", extension_oid);

	GetUserIdAndSecContext(&context->saved_user, &context->saved_security_context);
	SetUserIdAndSecContext(owner, context->saved_security_context | SECURITY_LOCAL_USERID_CHANGE);
	context->guc_nest_level = begin_pinned_search_path();
	/*
	 * uidgen's tables skip rows written in replica mode, which are a
	 * publication's (sql/uidgen--1.2.0--2.0.0.sql); this session's own
	 * claims and releases must not be skipped with them, when it is an
	 * apply worker filling a DEFAULT uid_next() or a load in replica mode.
	 * Restored with the search path.  Setting it resets the plan cache, so
	 * only when it is needed.
	 */
	if (SessionReplicationRole == SESSION_REPLICATION_ROLE_REPLICA)
		(void) set_config_option("session_replication_role", "origin", PGC_SUSET, PGC_S_SESSION, GUC_ACTION_SAVE,
								 true, 0, false);
}

void
end_as_owner(const OwnerContext *context)
{
	end_pinned_search_path(context->guc_nest_level);
	SetUserIdAndSecContext(context->saved_user, context->saved_security_context);
}

} // namespace uidgen::pg
