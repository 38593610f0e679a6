/*
 * generate_funcs.cpp
 *	  uid_next(), uid_next_batch(), uid_next_block(), uid_lastval() and
 *	  uid_current_worker().
 */
#include "backend_scope/backend_generator.hpp"
#include "layout/catalog.hpp"
#include "pg/guard.hpp"

extern "C" {
#include "funcapi.h"
}

using namespace uidgen::pg;

/* uid_next() returns bigint: the column default. */
UIDGEN_FUNCTION(uid_next)
{
	return Int64GetDatum(next_uid());
}

namespace {
/* Keeps a single call's result set to a size a client can take. */
constexpr int32 max_batch = 1000000;
} // namespace

/* uid_next_batch(n int) returns setof bigint: n IDs, in increasing order. */
UIDGEN_FUNCTION(uid_next_batch)
{
	FuncCallContext *funcctx;

	if (SRF_IS_FIRSTCALL())
	{
		int32 count = PG_GETARG_INT32(0);

		if (count < 0 || count > max_batch)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("batch size %d is out of range", count),
					 errhint("uid_next_batch() makes 0 to %d IDs per call.", max_batch)));
		funcctx = SRF_FIRSTCALL_INIT();
		funcctx->max_calls = static_cast<uint64>(count);
	}
	funcctx = SRF_PERCALL_SETUP();
	if (funcctx->call_cntr < funcctx->max_calls)
		SRF_RETURN_NEXT(funcctx, Int64GetDatum(next_uid()));
	SRF_RETURN_DONE(funcctx);
}

/*
 * uid_next_block(n int) returns bigint: the first of n consecutive IDs of one
 * time unit and one worker, all the caller's, for an ORM's pooled-lo
 * optimizer.  At most the IDs of one unit.
 */
UIDGEN_FUNCTION(uid_next_block)
{
	int32 count = PG_GETARG_INT32(0);
	int64_t per_unit = database_layout().max_sequence() + 1;

	if (count < 1 || count > per_unit)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("block size %d is out of range", count),
				 errdetail("A block is 1 to %lld IDs: those of one time unit of one worker under this "
						   "database's layout.",
						   static_cast<long long>(per_unit)),
				 errhint("Use a smaller increment, or uid_next_batch() for IDs across units.")));
	return Int64GetDatum(next_uid_block(count));
}

/* uid_lastval() returns bigint: like lastval(), for this session's IDs. */
UIDGEN_FUNCTION(uid_lastval)
{
	std::optional<int64_t> uid = last_issued_uid();

	if (!uid)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("uid_lastval is not yet defined in this session"),
				 errhint("Call uid_next() first.")));
	return Int64GetDatum(*uid);
}

/* uid_current_worker() returns bigint: NULL before this backend's first ID. */
UIDGEN_FUNCTION(uid_current_worker)
{
	std::optional<int64_t> worker = current_worker();

	if (!worker)
		PG_RETURN_NULL();
	return Int64GetDatum(*worker);
}
