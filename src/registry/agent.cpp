/*
 * agent.cpp
 *	  The background worker that holds this server's link to its registry.
 *
 * One per server, started with the postmaster when uidgen is preloaded.
 * It alone talks to the registry (uidgen.registry, over libpq), each call a
 * transaction of the registry's own that commits before any ID is issued
 * under what it returns: it leases blocks of worker ids for this server
 * life, keeps a reserve of them, renews their leases and reports which
 * database each worker went to.  Backends see the result in shared memory
 * (lease_table.hpp).  Nothing here throws: the code is C-like, and a failure is
 * recorded for the backends that wait, then retried.
 *
 * This file holds the agent's loop and policy: when a round is due, which
 * uidgen.registry value it works with, and the start and exit of its
 * process.  The calls of a round are registry_calls.cpp, over the libpq
 * client of registry_connection.cpp; what the three share is
 * agent_state.hpp.
 */
#include "registry/agent.hpp"

#include "core/retry_pacer.hpp"
#include "pg/pg_clock.hpp"
#include "pg/settings.hpp"
#include "pg/uuid_codec.hpp"
#include "registry/agent_state.hpp"
#include "registry/lease_bookkeeping.hpp"
#include "registry/lease_table.hpp"
#include "registry/registry_calls.hpp"
#include "registry/registry_connection.hpp"
#include "registry/registry_pin.hpp"

extern "C" {
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/wait_event.h"
}

#include <algorithm>

extern "C" {
PGDLLEXPORT void uidgen_registry_agent_main(Datum arg);
static void uidgen_agent_at_exit(int code, Datum arg);
}

namespace uidgen::pg {

namespace {

/*
 * After a failure the agent retries after a second (tick_ms), doubling up
 * to retry_max_ms while the registry fails (sooner, but at most once a
 * second, when a session waits for a worker).
 */
constexpr int64_t retry_max_ms = 5000;
RetryPacer pacer(tick_ms, retry_max_ms);

/* The uidgen.registry value conn was opened with (or is opened with next). */
char *connected_to = nullptr;

/*
 * A new uidgen.registry value, while conn's reaches the registry this server
 * life pinned: the agent keeps conn, and its leases, until the new value has
 * reached a registry.  The same identity there is the same registry under
 * another spelling (new credentials, a passfile, options, a host alias): the
 * agent switches to it and keeps everything.  Another identity is another
 * registry.  A value that fails changes nothing but pending_error.
 */
char *pending = nullptr;
int64_t pending_due_mono = 0;	/* when to try it again */
constexpr int64_t pending_retry_ms = 5000;

/*
 * One round: when something is due (a renewal, a block for the reserve, or
 * a retry after a failure), connect if need be, read the rules and check
 * the clocks, renew, and lease what is missing.  Otherwise the registry
 * hears nothing.
 */
void
work(LeaseTable *state)
{
	int64_t now_mono = monotonic_ms();	/* no clock read under the lock */

	drop_expired_blocks(state, now_mono);
	give_back_emptied_blocks(state, now_mono);

	LWLockAcquire(&state->lock, LW_SHARED);
	bool idle = state->have_rules && state->status == AgentStatus::Ready && !renewal_due(state, now_mono) &&
				!block_wanted(state, now_mono);
	LWLockRelease(&state->lock);
	/* uid_registry_move() waits for the registry's identity read afresh. */
	bool identity_wanted = identity_read_wanted();
	idle = idle && !identity_wanted;
	if (idle)
		return;

	/* Numbered, so that a registration can tell a failure older than itself (lease_table.hpp). */
	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	current_attempt = ++state->attempts;
	LWLockRelease(&state->lock);

	/*
	 * For a move, over a new connection: after the registry's name was
	 * pointed at another server (DNS, a proxy, a pooler), an open
	 * connection still reaches the old one, and the move would pin the
	 * registry the member is leaving.
	 */
	if (conn != nullptr && (PQstatus(conn) != CONNECTION_OK || identity_wanted))
		disconnect();
	if (conn == nullptr && !connect_to_registry(connected_to))
		return;
	/* Before the rules: a registration that finds rules finds the registry pinned too. */
	if (!check_identity())
		return;
	if (!fetch_rules())
		return;

	now_mono = monotonic_ms();
	LWLockAcquire(&state->lock, LW_SHARED);
	bool due = renewal_due(state, now_mono);
	LWLockRelease(&state->lock);
	if (due && !renew(state))
		return;

	for (;;)
	{
		now_mono = monotonic_ms();
		LWLockAcquire(&state->lock, LW_SHARED);
		bool wanted = block_wanted(state, now_mono);
		LWLockRelease(&state->lock);
		if (!wanted)
			break;
		if (!claim_block(state))
			return;
	}
	set_status(AgentStatus::Ready, 0, nullptr);
}

/* Publishes the value the agent works with, and the pending one (empty for none), without secrets. */
void
publish_registry()
{
	LeaseTable *state = lease_table();
	char registry[registry_text_size];
	char waiting[registry_text_size];

	describe_registry(connected_to, registry, sizeof(registry));
	waiting[0] = '\0';
	if (pending != nullptr)
		describe_registry(pending, waiting, sizeof(waiting));
	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	strlcpy(state->registry, registry, sizeof(state->registry));
	strlcpy(state->pending_registry, waiting, sizeof(state->pending_registry));
	if (pending == nullptr)
		state->pending_error[0] = '\0';
	LWLockRelease(&state->lock);
}

void
set_pending(const char *value)
{
	if (pending != nullptr)
		pfree(pending);
	pending = value != nullptr ? MemoryContextStrdup(TopMemoryContext, value) : nullptr;
	pending_due_mono = monotonic_ms();
	if (value != nullptr)
	{
		LeaseTable *state = lease_table();

		LWLockAcquire(&state->lock, LW_EXCLUSIVE);
		state->pending_error[0] = '\0';
		LWLockRelease(&state->lock);
	}
	publish_registry();
}

/*
 * Whether conn may claim and renew under this server life: the registry
 * binds a life and its system identifier to the member role that first
 * called under them (registry_touch_life()), the role a session sets or
 * else its login role.  Read there, so that a binding moved by
 * uid_registry_rebind() counts; under another role the agent would renew
 * nothing, so the value is refused as the pending value's failure.
 */
bool
role_may_renew(const pg_uuid_t &seen)
{
	pg_uuid_t pinned;

	if (!pinned_registry(&pinned) || memcmp(pinned.data, seen.data, UUID_LEN) != 0)
		return true;			/* another registry: a new binding there */

	Identity id = identity_of(lease_table());
	const char *params[] = {id.life, id.system_identifier};
	const char *what = "reading the member role";
	PGresult *r = call(what,
					   "SELECT coalesce((SELECT l.member_role FROM uidgen.server_life l WHERE l.life = $1::uuid), "
					   "(SELECT m.member_role FROM uidgen.member_system m WHERE m.system_identifier = $2)), "
					   "CASE WHEN current_setting('role') = 'none' THEN session_user "
					   "ELSE current_setting('role') END",
					   2, params);
	if (r == nullptr)
		return false;
	if (!reply_has_shape(r, what, 1, 2))
		return false;
	if (PQgetisnull(r, 0, 0) || strcmp(PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1)) == 0)
	{
		PQclear(r);
		return true;
	}

	char message[error_text_size];
	snprintf(message, sizeof(message),
			 "the new uidgen.registry connects as role \"%s\", but this server's life and system identifier are "
			 "bound to member role \"%s\" at the registry, which refuses every call under another; keep that role, "
			 "connect as a login that sets it (options='-c role=%s'), or move the binding with "
			 "uid_registry_rebind() at the registry",
			 PQgetvalue(r, 0, 1), PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 0));
	PQclear(r);
	set_status(AgentStatus::Failed, ERRCODE_INSUFFICIENT_PRIVILEGE, message);
	return false;
}

/*
 * How long a probe of the pending value may take: the agent's loop renews
 * nothing meanwhile, so a third of what is left of the shortest lease held
 * (at least 200 ms), and never more than a connection's bound.  A name
 * that never resolves (a DNS change gone wrong) then costs the leases
 * nothing: the probe fails, shows in pending_error, and is tried again.
 */
int64_t
probe_timeout_ms()
{
	LeaseTable *state = lease_table();
	int64_t now_mono = monotonic_ms();	/* no clock read under the lock */
	int64_t timeout = connect_timeout_ms;

	LWLockAcquire(&state->lock, LW_SHARED);
	for (int i = 0; i < state->nblocks; i++)
		timeout = std::min(timeout, std::max<int64_t>(200, (state->blocks[i].deadline_mono_ms - now_mono) / 3));
	LWLockRelease(&state->lock);
	return timeout;
}

/*
 * Connects with the pending value and reads the registry's identity there:
 * the connection, or nullptr with the failure noted as pending_error.  conn
 * is left as it is.
 */
PGconn *
probe_pending(pg_uuid_t *seen)
{
	PGconn *kept = conn;
	Predecessors predecessors;
	char refusal[error_text_size];

	conn = nullptr;
	probing = true;
	int spoken;
	bool reached = connect_to_registry(pending, probe_timeout_ms()) && read_identity(seen, &predecessors, &spoken);
	/* Another registry only if it took over the one pinned (INV-20): else the value fails. */
	if (reached && !may_move_to(*seen, predecessors, refusal))
	{
		set_status(AgentStatus::Failed, ERRCODE_SQLSERVER_REJECTED_ESTABLISHMENT_OF_SQLCONNECTION, refusal);
		reached = false;
	}
	reached = reached && role_may_renew(*seen);
	PGconn *candidate = reached ? conn : nullptr;
	if (!reached)
		disconnect();
	conn = kept;
	probing = false;
	return candidate;
}

/*
 * Works with the pending value from now on, over candidate, a connection
 * that reached registry seen.  The registry pinned under another spelling:
 * every block, grant and rule stays.  Another registry: they mean nothing
 * there, and the next identity read pins it (as for a new value before an
 * identity was pinned).
 */
void
adopt_pending(PGconn *candidate, const pg_uuid_t &seen)
{
	pg_uuid_t pinned;
	bool same = pinned_registry(&pinned) && memcmp(pinned.data, seen.data, UUID_LEN) == 0;
	char seen_text[uuid_text_size];

	disconnect();
	conn = candidate;
	if (!same)
	{
		forget_blocks();
		unpin_registry();
	}
	pfree(connected_to);
	connected_to = pending;
	pending = nullptr;
	publish_registry();
	uuid_text(seen, seen_text);
	ereport(LOG,
			(errmsg("uidgen registry agent: works with the new uidgen.registry from now on, %s registry %s",
					same ? "the same" : "another", seen_text)));
}

/*
 * At a change of uidgen.registry.  None, or a first one, or one before any
 * identity was read: the blocks (if any) go, as before.  Otherwise the new
 * value is pending: tried at once, and every pending_retry_ms while it
 * fails (at every round while conn is down), the agent goes on meanwhile.
 */
void
follow_setting(LeaseTable *state)
{
	const char *setting = registry_setting != nullptr ? registry_setting : "";
	pg_uuid_t pinned;

	if (connected_to == nullptr)
	{
		/*
		 * A new agent process of the same server life resumes its
		 * predecessor's grants: they live in shared memory, and its
		 * predecessor's holders issue under them still (lease_table.hpp).
		 * Under another value than its predecessor's, another identity is
		 * another registry (check_identity()).
		 */
		char registry[registry_text_size];
		char worked_for[registry_text_size];

		describe_registry(setting, registry, sizeof(registry));
		LWLockAcquire(&state->lock, LW_SHARED);
		memcpy(worked_for, state->registry, sizeof(worked_for));
		LWLockRelease(&state->lock);
		if (registry_configured() && pinned_registry(&pinned))
			text_changed_since_pin = strcmp(worked_for, registry) != 0;
		else
		{
			forget_blocks();
			unpin_registry();
		}
		connected_to = MemoryContextStrdup(TopMemoryContext, setting);
		set_pending(nullptr);
		set_status(registry_configured() ? AgentStatus::Connecting : AgentStatus::Off, 0, nullptr);
		return;
	}
	if (strcmp(connected_to, setting) == 0)
	{
		if (pending != nullptr)
			set_pending(nullptr);	/* back to the value in use */
		return;
	}
	if (!registry_configured() || connected_to[0] == '\0' || !pinned_registry(&pinned))
	{
		disconnect();
		forget_blocks();
		unpin_registry();
		text_changed_since_pin = false;
		pfree(connected_to);
		connected_to = MemoryContextStrdup(TopMemoryContext, setting);
		set_pending(nullptr);
		set_status(registry_configured() ? AgentStatus::Connecting : AgentStatus::Off, 0, nullptr);
		return;
	}
	if (pending == nullptr || strcmp(pending, setting) != 0)
		set_pending(setting);

	/* While conn is down, once a round (a second): not at every wake-up of the agent. */
	bool conn_down = conn == nullptr || PQstatus(conn) != CONNECTION_OK;
	if (monotonic_ms() < pending_due_mono && !lost_move_wanted())
		return;
	pending_due_mono = monotonic_ms() + (conn_down ? tick_ms : pending_retry_ms);

	pg_uuid_t seen;
	PGconn *candidate = probe_pending(&seen);
	if (candidate != nullptr)
		adopt_pending(candidate, seen);
}

/* Runs step(state) in a memory context of its own, deleted after it. */
void
in_own_context(void (*step)(LeaseTable *), LeaseTable *state)
{
	MemoryContext own = AllocSetContextCreate(CurrentMemoryContext, "uidgen agent round", ALLOCSET_DEFAULT_SIZES);
	MemoryContext previous = MemoryContextSwitchTo(own);

	step(state);
	MemoryContextSwitchTo(previous);
	MemoryContextDelete(own);
}

void
agent_loop()
{
	LeaseTable *state = lease_table();

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		in_own_context(follow_setting, state);

		/*
		 * While the registry fails, the next attempt waits for the pacer:
		 * one a second when a registration that found only an older failure
		 * asks for it, else backing off.  Never while a lease is due for
		 * renewal: a failure of another call (no block left to lease) must
		 * not let the leases it holds lapse, and the attempts stay one a
		 * round (a second).
		 */
		int64_t now_mono = monotonic_ms();	/* no clock read under the lock */
		LWLockAcquire(&state->lock, LW_SHARED);
		bool failed = state->status == AgentStatus::Failed;
		bool attempt_wanted = failed && state->attempt_wanted > state->attempts;
		bool renewing = failed && renewal_due(state, now_mono);
		LWLockRelease(&state->lock);
		if (registry_configured() && (!failed || renewing || pacer.may_attempt(now_mono, attempt_wanted)))
		{
			in_own_context(work, state);
			LWLockAcquire(&state->lock, LW_SHARED);
			failed = state->status == AgentStatus::Failed;
			attempt_wanted = failed && state->attempt_wanted > state->attempts;
			LWLockRelease(&state->lock);
			now_mono = monotonic_ms();
			pacer.attempt_ended(failed, now_mono);
		}

		long wait_ms = tick_ms;
		if (failed && registry_configured())
			wait_ms = static_cast<long>(std::clamp<int64_t>(pacer.next_attempt_ms(attempt_wanted) - now_mono, 0, tick_ms));
		if (wait_ms > 0)
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, wait_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

} // namespace

void
register_registry_agent()
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS;
	/* A standby issues no ID: its agent starts when it is promoted. */
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 1;
	strlcpy(worker.bgw_library_name, "uidgen", sizeof(worker.bgw_library_name));
	strlcpy(worker.bgw_function_name, "uidgen_registry_agent_main", sizeof(worker.bgw_function_name));
	strlcpy(worker.bgw_name, "uidgen registry agent", sizeof(worker.bgw_name));
	strlcpy(worker.bgw_type, "uidgen registry agent", sizeof(worker.bgw_type));
	RegisterBackgroundWorker(&worker);
}

void
agent_at_exit()
{
	LeaseTable *state = lease_table();

	disconnect();
	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	state->agent_latch = nullptr;
	state->agent_pid = 0;
	LWLockRelease(&state->lock);
}

} // namespace uidgen::pg

void
uidgen_registry_agent_main(Datum)
{
	using namespace uidgen::pg;

	pqsignal(SIGTERM, die);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();

	LeaseTable *state = lease_table();
	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	state->agent_latch = MyLatch;
	state->agent_pid = MyProcPid;
	LWLockRelease(&state->lock);
	on_shmem_exit(uidgen_agent_at_exit, 0);

	agent_loop();
}

static void
uidgen_agent_at_exit(int, Datum)
{
	uidgen::pg::agent_at_exit();
}
