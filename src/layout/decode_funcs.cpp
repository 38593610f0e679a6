/*
 * decode_funcs.cpp
 *	  Decoding IDs: uid_parse(), uid_parse_json(), the field extractors, and
 *	  uid_min() / uid_max() for range scans by time.
 */
#include "layout/catalog.hpp"
#include "pg/guard.hpp"
#include "pg/time_convert.hpp"

extern "C" {
#include "access/htup_details.h"
#include "funcapi.h"
#include "pgtime.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"
}

using namespace uidgen;
using namespace uidgen::pg;

namespace {

TimestampTz
timestamp_of_delta(const Layout &layout, int64_t delta)
{
	std::optional<int64_t> unix_ms = layout.start_of(delta);

	if (!unix_ms || !unix_ms_fits_timestamptz(*unix_ms))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp of time delta %lld is out of range", static_cast<long long>(delta))));
	return unix_ms_to_timestamptz(*unix_ms);
}

Datum
parsed_uid_datum(FunctionCallInfo fcinfo, const Layout &layout, int64_t uid)
{
	UidFields fields = layout.decompose(uid);
	TupleDesc tupdesc;

	if (get_call_result_type(fcinfo, nullptr, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);

	Datum values[4] = {Int64GetDatum(uid), TimestampTzGetDatum(timestamp_of_delta(layout, fields.delta)),
					   Int64GetDatum(fields.worker), Int64GetDatum(fields.sequence)};
	bool nulls[4] = {false, false, false, false};

	return HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls));
}

int64_t
unix_ms_arg(FunctionCallInfo fcinfo, int argno)
{
	TimestampTz ts = PG_GETARG_TIMESTAMPTZ(argno);

	if (TIMESTAMP_NOT_FINITE(ts))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("timestamp must be finite")));
	return timestamptz_to_unix_ms(ts);
}

} // namespace

/* uid_parse(uid bigint) returns uidgen.parsed_uid, under the database's layout. */
UIDGEN_FUNCTION(uid_parse)
{
	return parsed_uid_datum(fcinfo, database_layout(), PG_GETARG_INT64(0));
}

/*
 * uid_parse(uid, time_bits, worker_bits, seq_bits, epoch, unit): under any
 * layout, e.g. IDs made by the Java library.
 */
UIDGEN_FUNCTION(uid_parse_layout)
{
	char *unit_name = text_to_cstring(PG_GETARG_TEXT_PP(5));
	TimeUnit unit = parse_time_unit(unit_name);
	Layout layout(PG_GETARG_INT32(1), PG_GETARG_INT32(2), PG_GETARG_INT32(3), unix_ms_arg(fcinfo, 4), unit);

	return parsed_uid_datum(fcinfo, layout, PG_GETARG_INT64(0));
}

/*
 * uid_parse_json(uid bigint) returns jsonb in the shape of UidGenerator's
 * parseUID(): every value a string, the time as yyyy-MM-dd HH:mm:ss in the
 * session's time zone.
 */
UIDGEN_FUNCTION(uid_parse_json)
{
	const Layout &layout = database_layout();
	int64_t uid = PG_GETARG_INT64(0);
	UidFields fields = layout.decompose(uid);
	TimestampTz ts = timestamp_of_delta(layout, fields.delta);
	struct pg_tm tm;
	fsec_t fsec;
	int tz;

	if (timestamp2tm(ts, &tz, &tm, &fsec, nullptr, nullptr) != 0)
		ereport(ERROR, (errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE), errmsg("timestamp out of range")));

	char *json = psprintf("{\"UID\":\"" INT64_FORMAT "\",\"timestamp\":\"%04d-%02d-%02d %02d:%02d:%02d\","
						  "\"workerId\":\"" INT64_FORMAT "\",\"sequence\":\"" INT64_FORMAT "\"}",
						  uid, tm.tm_year, tm.tm_mon, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
						  fields.worker, fields.sequence);

	return DirectFunctionCall1(jsonb_in, CStringGetDatum(json));
}

/*
 * The three field functions are IMMUTABLE so that they can be indexed, yet
 * read the layout from uidgen.config: decoding_layout() holds the lock that
 * keeps uid_configure from changing it under a computation, and
 * uid_configure refuses to change it while any object depends on them
 * (INV-7).
 */

/* uid_timestamp(uid bigint) returns timestamptz: the start of the ID's time unit. */
UIDGEN_FUNCTION(uid_timestamp)
{
	const Layout &layout = decoding_layout();

	return TimestampTzGetDatum(timestamp_of_delta(layout, layout.decompose(PG_GETARG_INT64(0)).delta));
}

/* uid_worker_id(uid bigint) returns bigint. */
UIDGEN_FUNCTION(uid_worker_id)
{
	return Int64GetDatum(decoding_layout().decompose(PG_GETARG_INT64(0)).worker);
}

/* uid_sequence(uid bigint) returns bigint. */
UIDGEN_FUNCTION(uid_sequence)
{
	return Int64GetDatum(decoding_layout().decompose(PG_GETARG_INT64(0)).sequence);
}

/* uid_min(ts timestamptz) returns bigint: the smallest ID of ts's time unit. */
UIDGEN_FUNCTION(uid_min)
{
	return Int64GetDatum(decoding_layout().min_uid_at(unix_ms_arg(fcinfo, 0)));
}

/* uid_max(ts timestamptz) returns bigint: the largest ID of ts's time unit. */
UIDGEN_FUNCTION(uid_max)
{
	return Int64GetDatum(decoding_layout().max_uid_at(unix_ms_arg(fcinfo, 0)));
}
