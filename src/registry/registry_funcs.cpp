/*
 * registry_funcs.cpp
 *	  The view uidgen.registry_status and uidgen.local_origin(): what this
 *	  server holds of its registry's ID space, from shared memory.
 */
#include "layout/catalog.hpp"
#include "pg/guard.hpp"
#include "pg/identity.hpp"
#include "pg/pg_clock.hpp"
#include "pg/time_convert.hpp"
#include "pg/uuid_codec.hpp"
#include "registry/lease_table.hpp"
#include "registry/protocol.hpp"

extern "C" {
#include "access/htup_details.h"
#include "access/xlog.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "postmaster/postmaster.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include <type_traits>
}

using namespace uidgen;
using namespace uidgen::pg;

namespace {

const char *
status_name(AgentStatus status)
{
	switch (status)
	{
		case AgentStatus::Off:
			return "off";
		case AgentStatus::Connecting:
			return "connecting";
		case AgentStatus::Ready:
			return "ready";
		case AgentStatus::Failed:
			return "failed";
	}
	return "unknown";
}

/* A copy of the lease table, taken under its lock (the grants are not needed). */
struct LeaseTableSnapshot
{
	uint8 life[16];
	AgentStatus status;
	char error[error_text_size];
	char registry[registry_text_size];
	char pending_registry[registry_text_size];
	char pending_error[error_text_size];
	bool quarantined;
	TimestampTz quarantine_until;
	int protocol;
	int nblocks;
	LeasedBlock blocks[max_leased_blocks];
	int granted[max_leased_blocks];
};
static_assert(std::is_trivially_destructible_v<LeaseTableSnapshot>);

void
take_snapshot(LeaseTable *state, LeaseTableSnapshot *s)
{
	LWLockAcquire(&state->lock, LW_SHARED);
	memcpy(s->life, state->life, sizeof(s->life));
	s->status = state->status;
	memcpy(s->error, state->error, sizeof(s->error));
	memcpy(s->registry, state->registry, sizeof(s->registry));
	memcpy(s->pending_registry, state->pending_registry, sizeof(s->pending_registry));
	memcpy(s->pending_error, state->pending_error, sizeof(s->pending_error));
	s->quarantined = state->quarantined;
	s->quarantine_until = state->quarantine_until;
	s->protocol = state->protocol;
	s->nblocks = state->nblocks;
	memcpy(s->blocks, state->blocks, sizeof(LeasedBlock) * state->nblocks);
	for (int i = 0; i < state->nblocks; i++)
		s->granted[i] = static_cast<int>(state->blocks[i].next_worker - state->blocks[i].first_worker);
	LWLockRelease(&state->lock);
	s->error[sizeof(s->error) - 1] = '\0';
	s->registry[sizeof(s->registry) - 1] = '\0';
	s->pending_registry[sizeof(s->pending_registry) - 1] = '\0';
	s->pending_error[sizeof(s->pending_error) - 1] = '\0';
}

} // namespace

/*
 * registry_status_rows() returns setof record: one row per block this
 * server life leases, or one row with NULL block columns when it has none
 * (or the library is not preloaded: life is NULL then).  pending_registry
 * and pending_error: a new uidgen.registry the agent has not switched to
 * yet, and why.  quarantine_until: the registry's quarantine as its last
 * reply told.  protocol: the version of the registry protocol spoken there
 * (NULL before the agent's first exchange).
 */
UIDGEN_FUNCTION(registry_status_rows)
{
	pg_call([fcinfo] {
		InitMaterializedSRF(fcinfo, 0);

		ReturnSetInfo *rs = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
		LeaseTable *state = lease_table();
		LeaseTableSnapshot *s = static_cast<LeaseTableSnapshot *>(palloc0(sizeof(LeaseTableSnapshot)));
		Datum values[14];
		bool nulls[14];

		if (state != nullptr)
			take_snapshot(state, s);
		int64_t now = monotonic_ms();

		for (int i = 0; i < std::max(1, s->nblocks); i++)
		{
			memset(nulls, 0, sizeof(nulls));
			values[0] = state != nullptr ? uuid_datum(s->life) : 0;
			nulls[0] = state == nullptr;
			values[1] = CStringGetTextDatum(s->registry);
			nulls[1] = state == nullptr;
			values[2] = CStringGetTextDatum(state != nullptr ? status_name(s->status) : "not preloaded");
			values[3] = CStringGetTextDatum(s->error);
			nulls[3] = s->error[0] == '\0';
			if (i < s->nblocks)
			{
				const LeasedBlock &b = s->blocks[i];

				values[4] = Int64GetDatum(b.block);
				values[5] = Int64GetDatum(b.first_worker);
				values[6] = Int64GetDatum(b.last_worker);
				values[7] = Int64GetDatum(b.floor_delta);
				values[8] = Int64GetDatum(std::max<int64_t>(0, b.deadline_mono_ms - now));
				values[9] = Int32GetDatum(s->granted[i]);
			}
			else
			{
				for (int c = 4; c < 10; c++)
					nulls[c] = true;
			}
			values[10] = CStringGetTextDatum(s->pending_registry);
			nulls[10] = s->pending_registry[0] == '\0';
			values[11] = CStringGetTextDatum(s->pending_error);
			nulls[11] = s->pending_error[0] == '\0';
			values[12] = TimestampTzGetDatum(s->quarantine_until);
			nulls[12] = !s->quarantined;
			values[13] = Int32GetDatum(s->protocol);
			nulls[13] = s->protocol == 0;
			tuplestore_putvalues(rs->setResult, rs->setDesc, values, nulls);
		}
	});
	return static_cast<Datum>(0);
}

/*
 * local_origin(uid bigint) returns (system_identifier, database, host,
 * port, claimed_at): the database of this server life whose worker issued
 * uid, when a block it leases holds that worker and the ID is above the
 * block's floor; all NULL otherwise.
 */
UIDGEN_FUNCTION(uid_local_origin)
{
	int64_t uid = PG_GETARG_INT64(0);
	Layout layout = database_layout();
	LeaseTable *state = lease_table();

	return pg_call([fcinfo, uid, &layout, state] {
		TupleDesc desc;
		Datum values[5] = {};
		bool nulls[5] = {true, true, true, true, true};

		if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
			elog(ERROR, "return type must be a row type");
		desc = BlessTupleDesc(desc);

		if (state != nullptr && uid >= 0)
		{
			UidFields fields = layout.decompose(uid);
			int64_t worker = fields.worker;
			int64_t delta = fields.delta;
			NameData database;
			int64_t claimed_at_ms = 0;
			bool found = false;

			LWLockAcquire(&state->lock, LW_SHARED);
			for (int i = 0; i < state->ngrants && !found; i++)
			{
				if (state->grants[i].worker != worker)
					continue;
				for (int j = 0; j < state->nblocks && !found; j++)
				{
					const LeasedBlock &b = state->blocks[j];

					/* By the grant's lease: the same block may have been this life's under another. */
					if (b.lease_id == state->grants[i].lease_id && delta > b.floor_delta)
					{
						database = state->grants[i].database_name;
						claimed_at_ms = b.claimed_at_ms;
						found = true;
					}
				}
			}
			LWLockRelease(&state->lock);

			if (found)
			{
				values[0] = CStringGetTextDatum(psprintf(UINT64_FORMAT, GetSystemIdentifier()));
				values[1] = CStringGetTextDatum(NameStr(database));
				values[2] = CStringGetTextDatum(server_host_name());
				values[3] = Int32GetDatum(PostPortNumber);
				values[4] = TimestampTzGetDatum(unix_ms_to_timestamptz(claimed_at_ms));
				memset(nulls, 0, sizeof(nulls));
			}
		}
		return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
	});
}

/*
 * uid_registry_protocol() returns int: the highest version of the registry
 * protocol this server's uidgen speaks (protocol.hpp).
 */
UIDGEN_FUNCTION(uid_registry_protocol)
{
	return Int32GetDatum(member_protocol);
}
