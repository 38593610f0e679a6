/*
 * server_funcs.cpp
 *	  uidgen.server_generator_status(): the view uidgen.server_generator.
 */
#include "core/shared_cursor.hpp"
#include "pg/guard.hpp"
#include "pg/pg_clock.hpp"
#include "pg/time_convert.hpp"
#include "server_scope/shared_state.hpp"

extern "C" {
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
}

#include <algorithm>
#include <type_traits>

using namespace uidgen;
using namespace uidgen::pg;

namespace {

/* One row's worth of a generator, copied under its mutex. */
struct GeneratorFigures
{
	int64_t worker;
	int keeper_pid;
	int64_t started_at_ms;
	uint64_t ids;
	uint64_t chunks;
	uint64_t dropped;
	uint64_t waits;
	uint64_t cursor;
	int64_t reserved_until;
	int private_workers;
	Layout layout;
};
static_assert(std::is_trivially_destructible_v<GeneratorFigures>);

std::optional<GeneratorFigures>
snapshot_of_this_database()
{
	SharedState *state = shared_state_available() ? shared_state() : nullptr;
	SharedGenerator *g = state ? generator_of(state, MyDatabaseId, false) : nullptr;

	if (g == nullptr)
		return std::nullopt;

	std::optional<GeneratorFigures> figures;
	int private_count = pg_call([g] {
		LWLockAcquire(&g->privates_lock, LW_SHARED);
		int count = g->private_count;
		LWLockRelease(&g->privates_lock);
		return count;
	});

	SpinLockAcquire(&g->mutex);
	if (g->stage == KeeperStage::Ready)
		figures = GeneratorFigures{g->worker, g->keeper_pid, g->started_at_ms, g->ids.load(), g->chunks.load(),
								   g->dropped.load(), g->waits.load(), g->cursor.load(), g->reserved_until.load(),
								   private_count, *g->layout};
	SpinLockRelease(&g->mutex);
	return figures;
}

/* How far the start of delta is ahead of now_ms, never below zero. */
int64_t
ahead_ms(const Layout &layout, int64_t delta, int64_t now_ms)
{
	std::optional<int64_t> start = layout.start_of(delta);

	return start ? std::max<int64_t>(0, *start - now_ms) : 0;
}

} // namespace

/*
 * server_generator_status() returns setof record: this database's
 * server-wide generator, or no row when it has none running.
 */
UIDGEN_FUNCTION(server_generator_status)
{
	ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);

	pg_call([fcinfo] { InitMaterializedSRF(fcinfo, 0); });

	std::optional<GeneratorFigures> s = snapshot_of_this_database();
	if (!s)
		return static_cast<Datum>(0);

	CursorWords words(s->layout);
	int64_t now_ms = backend_clock().now_ms();
	int64_t cursor_delta = words.delta_of(s->cursor & ~cursor_closed_bit);
	Datum values[10];
	bool nulls[10] = {};

	values[0] = Int64GetDatum(s->worker);
	values[1] = Int32GetDatum(s->keeper_pid);
	values[2] = TimestampTzGetDatum(unix_ms_to_timestamptz(s->started_at_ms));
	values[3] = Int64GetDatum(static_cast<int64_t>(s->ids));
	values[4] = Int64GetDatum(static_cast<int64_t>(s->chunks));
	values[5] = Int64GetDatum(static_cast<int64_t>(s->dropped));
	values[6] = Int64GetDatum(ahead_ms(s->layout, cursor_delta, now_ms));
	values[7] = Int64GetDatum(ahead_ms(s->layout, s->reserved_until + 1, now_ms));
	values[8] = Int64GetDatum(static_cast<int64_t>(s->waits));
	values[9] = Int32GetDatum(s->private_workers);
	pg_call([rsinfo, &values, &nulls] { tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls); });
	return static_cast<Datum>(0);
}
