/*
 * agent_state.cpp
 *	  The registry agent's process-local state, and the status it publishes.
 */
#include "registry/agent_state.hpp"

#include "core/retry_pacer.hpp"
#include "pg/pg_clock.hpp"
#include "registry/lease_table.hpp"

extern "C" {
#include "common/hashfn.h"
#include "storage/condition_variable.h"
#include "storage/lwlock.h"
}

namespace uidgen::pg {

PGconn *conn = nullptr;
uint64 current_attempt = 0;
bool probing = false;
bool text_changed_since_pin = false;

namespace {

/* An error logged already is logged again at most once per log_repeat_ms. */
constexpr int64_t log_repeat_ms = 60000;
RepeatFilter failure_log(log_repeat_ms);
RepeatFilter pending_log(log_repeat_ms);

/* Logs message unless filter has logged the same within its period. */
void
log_unless_repeated(RepeatFilter &filter, const char *prefix, const char *message)
{
	const char *text = message != nullptr ? message : "";

	if (!filter.should_log(hash_bytes(reinterpret_cast<const unsigned char *>(text), static_cast<int>(strlen(text))),
						   monotonic_ms()))
		return;
	if (filter.repeats() > 0)
		ereport(LOG, (errmsg("uidgen registry agent: %s%s", prefix, text),
					  errdetail("The same error occurred %lld more times since it was last logged.",
								static_cast<long long>(filter.repeats()))));
	else
		ereport(LOG, (errmsg("uidgen registry agent: %s%s", prefix, text)));
}

} // namespace

void
set_status(AgentStatus status, int sqlstate, const char *error)
{
	LeaseTable *state = lease_table();

	/* The value in use is not concerned: only its failure is noted, as the pending value's. */
	if (probing)
	{
		if (status != AgentStatus::Failed)
			return;
		LWLockAcquire(&state->lock, LW_EXCLUSIVE);
		strlcpy(state->pending_error, error != nullptr ? error : "", sizeof(state->pending_error));
		LWLockRelease(&state->lock);
		log_unless_repeated(pending_log, "the new uidgen.registry is not used yet: ", error);
		return;
	}
	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	/*
	 * The server joins the registry as the agent starts to work for it,
	 * before it leases a block: from here no session issues under a worker
	 * claimed without it, in a statement that runs across the reload too
	 * (lease_table.hpp, joined_since(); INV-19).  Before the status, which
	 * a claim reads after the count (src/claim/claim.cpp).
	 */
	if (state->status == AgentStatus::Off && status != AgentStatus::Off)
		state->joins.fetch_add(1);
	state->status = status;
	state->status_attempt = current_attempt;
	state->error_sqlstate = sqlstate;
	strlcpy(state->error, error != nullptr ? error : "", sizeof(state->error));
	LWLockRelease(&state->lock);
	ConditionVariableBroadcast(&state->changed);
	if (status == AgentStatus::Failed)
		log_unless_repeated(failure_log, "", error);
	else if (status == AgentStatus::Ready)
		failure_log.reset();
}

void
forget_blocks()
{
	LeaseTable *state = lease_table();

	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	state->nblocks = 0;
	state->nreleased = 0;
	state->have_rules = false;
	state->quarantined = false;
	LWLockRelease(&state->lock);
	ConditionVariableBroadcast(&state->changed);
}

} // namespace uidgen::pg
