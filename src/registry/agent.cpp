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
 * libpq is used without blocking: host names are resolved apart
 * (registry_hosts.hpp), and every wait, for the registry or the resolver, is
 * a WaitLatchOrSocket() bounded by a timeout, in which SIGTERM (a fast
 * shutdown) and the postmaster's death are noticed, so that a registry or a
 * resolver that stops answering never holds up this server.  Every reply is checked (rows,
 * columns, NULLs, integers parsed strictly, values in range) before it is
 * used: anything else is a protocol violation (08P01), recorded like any
 * other failure.
 */
#include "registry/agent.hpp"

#include "core/protocol_version.hpp"
#include "core/retry_pacer.hpp"
#include "pg/identity.hpp"
#include "pg/pg_clock.hpp"
#include "pg/settings.hpp"
#include "pg/time_convert.hpp"
#include "registry/lease_bookkeeping.hpp"
#include "registry/lease_table.hpp"
#include "registry/protocol.hpp"
#include "registry/registry_hosts.hpp"
#include "registry/registry_pin.hpp"

extern "C" {
#include "access/xlog.h"
#include "common/hashfn.h"
#include "libpq-fe.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "postmaster/postmaster.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/uuid.h"
#include "utils/wait_event.h"
}

#include <algorithm>
#include <type_traits>

extern "C" {
PGDLLEXPORT void uidgen_registry_agent_main(Datum arg);
static void uidgen_agent_at_exit(int code, Datum arg);
}

namespace uidgen::pg {

namespace {

/*
 * How often the agent looks at its blocks.  After a failure it retries
 * after a second, doubling up to retry_max_ms while the registry fails
 * (sooner, but at most once a second, when a session waits for a worker),
 * and logs an error it logged already at most once per log_repeat_ms.
 */
constexpr long tick_ms = 1000;
constexpr int64_t retry_max_ms = 5000;
constexpr int64_t log_repeat_ms = 60000;
RetryPacer pacer(tick_ms, retry_max_ms);
RepeatFilter failure_log(log_repeat_ms);
RepeatFilter pending_log(log_repeat_ms);

/*
 * How long connecting, and each call, may take: the registry's own
 * statement_timeout (5 s, set at connection) ends a slow call first; these
 * bound a registry that does not answer at all.
 */
constexpr int64_t connect_timeout_ms = 5000;
constexpr int64_t call_timeout_ms = 10000;

/* The attempt this round is (LeaseTable::attempts), for the status it sets. */
uint64 current_attempt = 0;

PGconn *conn = nullptr;
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
/* While the agent tries the pending value: set_status() records its failures as pending_error. */
bool probing = false;

/*
 * A new agent process whose uidgen.registry differs from its predecessor's
 * (lease_table.hpp, registry): another identity there is another registry,
 * not a registry created again under the same name.
 */
bool text_changed_since_pin = false;

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
	 * a claim reads after the count (claim.cpp).
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

/*
 * R5: only another registry makes the server forget its blocks; a new
 * agent process resumes its predecessor's, which live in shared memory.
 */
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

/*
 * The connection string without the options libpq marks secret (dispchar
 * "*": password, sslpassword, and whatever a later libpq adds), for
 * messages, the views and uidgen.membership.
 */
void
describe_registry(const char *conninfo, char *out, size_t size)
{
	char *err = nullptr;
	PQconninfoOption *options = PQconninfoParse(conninfo, &err);
	StringInfoData text;

	if (options == nullptr)
	{
		strlcpy(out, "(invalid)", size);
		if (err != nullptr)
			PQfreemem(err);
		return;
	}
	initStringInfo(&text);
	for (PQconninfoOption *o = options; o->keyword != nullptr; o++)
	{
		if (o->val == nullptr || o->val[0] == '\0' || (o->dispchar != nullptr && o->dispchar[0] == '*'))
			continue;
		appendStringInfo(&text, "%s%s=%s", text.len > 0 ? " " : "", o->keyword, o->val);
	}
	PQconninfoFree(options);
	strlcpy(out, text.data, size);
	pfree(text.data);
}

void
disconnect()
{
	if (conn != nullptr)
		PQfinish(conn);
	conn = nullptr;
}

/*
 * Waits until conn's socket is ready for events (WL_SOCKET_*), or deadline
 * (monotonic) passes: false then.  Interrupts are served: SIGTERM ends the
 * agent here (die() and CHECK_FOR_INTERRUPTS), whatever the registry does.
 */
bool
wait_for_socket(int events, int64_t deadline)
{
	return wait_for_fd(PQsocket(conn), events, deadline);
}

void
connect_failed(const char *reason)
{
	char message[error_text_size];

	snprintf(message, sizeof(message), "could not connect: %s", reason);
	disconnect();
	set_status(AgentStatus::Failed, ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION, message);
}

/*
 * Connects to the registry of conninfo without blocking, within timeout_ms:
 * the host names resolved apart first (registry_hosts.hpp).
 */
bool
connect_to_registry(const char *conninfo, int64_t timeout_ms = connect_timeout_ms)
{
	int64_t deadline = monotonic_ms() + timeout_ms;
	RegistryHosts hosts;
	char reason[256];

	set_status(AgentStatus::Connecting, 0, nullptr);
	if (!resolve_registry_hosts(conninfo, deadline, &hosts, reason, sizeof(reason)))
	{
		connect_failed(reason);
		return false;
	}

	/*
	 * Earlier keywords give way to the connection string's, later ones win
	 * over it: the addresses resolved here, with their names.
	 * synchronous_commit is on whatever the registry's default: a lease must
	 * be durable (on a synchronous standby too, where the registry has one)
	 * before any ID is issued under it.
	 */
	const char *keywords[12];
	const char *values[12];
	int n = 0;
	auto add = [&keywords, &values, &n](const char *keyword, const char *value) {
		keywords[n] = keyword;
		values[n++] = value;
	};
	add("connect_timeout", "5");
	add("keepalives_idle", "10");
	add("keepalives_interval", "5");
	add("keepalives_count", "3");
	add("tcp_user_timeout", "15000");
	add("dbname", conninfo);
	if (hosts.host != nullptr)
	{
		add("host", hosts.host);
		add("hostaddr", hosts.hostaddr);
		if (hosts.port != nullptr)
			add("port", hosts.port);
	}
	/* The user's application_name, if uidgen.registry has one, wins. */
	add("fallback_application_name", "uidgen registry agent");
	add("options", "-c statement_timeout=5000 -c lock_timeout=2000 -c idle_in_transaction_session_timeout=10000 "
				   "-c search_path=pg_catalog -c synchronous_commit=on");
	add(nullptr, nullptr);

	conn = PQconnectStartParams(keywords, values, 1);
	if (conn == nullptr)
	{
		connect_failed("out of memory");
		return false;
	}
	if (PQstatus(conn) == CONNECTION_BAD)
	{
		connect_failed(PQerrorMessage(conn));
		return false;
	}
	/* As PQconnectPoll() asks: first wait until the socket is writable. */
	PostgresPollingStatusType polled = PGRES_POLLING_WRITING;
	for (;;)
	{
		if (polled == PGRES_POLLING_OK)
			break;
		if (polled == PGRES_POLLING_FAILED)
		{
			connect_failed(PQerrorMessage(conn));
			return false;
		}
		if (!wait_for_socket(polled == PGRES_POLLING_READING ? WL_SOCKET_READABLE : WL_SOCKET_WRITEABLE, deadline))
		{
			snprintf(reason, sizeof(reason), "no answer within %lld ms", static_cast<long long>(timeout_ms));
			connect_failed(reason);
			return false;
		}
		polled = PQconnectPoll(conn);
	}
	if (PQsetnonblocking(conn, 1) != 0)
	{
		connect_failed(PQerrorMessage(conn));
		return false;
	}
	return true;
}

/*
 * Records a failed call: a broken connection is closed, to be opened again;
 * what the registry refused keeps its reason.
 */
void
record_failure(PGresult *result, const char *what)
{
	char message[error_text_size];
	const char *sqlstate = result != nullptr ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
	const char *primary = result != nullptr ? PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
	int code = ERRCODE_SQLSERVER_REJECTED_ESTABLISHMENT_OF_SQLCONNECTION;

	if (PQstatus(conn) != CONNECTION_OK)
	{
		snprintf(message, sizeof(message), "%s: connection lost: %s", what, PQerrorMessage(conn));
		code = ERRCODE_CONNECTION_FAILURE;
		disconnect();
	}
	else if (sqlstate != nullptr && strcmp(sqlstate, "42883") == 0)
		snprintf(message, sizeof(message),
				 "%s: the registry database has no uidgen 2.0 registry (CREATE EXTENSION uidgen, or ALTER "
				 "EXTENSION uidgen UPDATE, there)",
				 what);
	else if (sqlstate != nullptr && strcmp(sqlstate, "3F000") == 0)
		snprintf(message, sizeof(message), "%s: the registry database has no uidgen extension", what);
	else if (sqlstate != nullptr && (strcmp(sqlstate, "08P01") == 0 || strcmp(sqlstate, "42703") == 0))
	{
		/* Refused for its protocol version, or a reply without a column this member names. */
		snprintf(message, sizeof(message), "%s: %s", what, primary != nullptr ? primary : PQerrorMessage(conn));
		code = ERRCODE_PROTOCOL_VIOLATION;
	}
	else if (result == nullptr || PQresultStatus(result) == PGRES_TUPLES_OK)
		snprintf(message, sizeof(message), "%s: %s", what, PQerrorMessage(conn));
	else
		snprintf(message, sizeof(message), "%s: %s", what,
				 primary != nullptr ? primary : PQerrorMessage(conn));
	if (result != nullptr)
		PQclear(result);
	set_status(AgentStatus::Failed, code, message);
}

/* A call that got no answer in time: the connection is dropped, its state unknown. */
void
record_timeout(const char *what)
{
	char message[error_text_size];

	snprintf(message, sizeof(message), "%s: no answer from the registry within %lld ms", what,
			 static_cast<long long>(call_timeout_ms));
	disconnect();
	set_status(AgentStatus::Failed, ERRCODE_CONNECTION_FAILURE, message);
}

/*
 * Runs a query of params without blocking, within call_timeout_ms; the
 * result, or nullptr after recording the failure.  As libpq-be-fe-helpers.h
 * does from PostgreSQL 16 on, which 15 lacks.
 */
PGresult *
call(const char *what, const char *sql, int nparams, const char *const *params)
{
	int64_t deadline = monotonic_ms() + call_timeout_ms;
	PGresult *result = nullptr;

	if (!PQsendQueryParams(conn, sql, nparams, nullptr, params, nullptr, nullptr, 0))
	{
		record_failure(nullptr, what);
		return nullptr;
	}
	/* Sent in full first; the registry's answer may arrive meanwhile. */
	for (;;)
	{
		int flushed = PQflush(conn);

		if (flushed == 0)
			break;
		if (flushed < 0)
		{
			record_failure(nullptr, what);
			return nullptr;
		}
		if (!wait_for_socket(WL_SOCKET_READABLE | WL_SOCKET_WRITEABLE, deadline))
		{
			record_timeout(what);
			return nullptr;
		}
		if (!PQconsumeInput(conn))
		{
			record_failure(nullptr, what);
			return nullptr;
		}
	}
	/* Every result of the query: the last one tells how it ended. */
	for (;;)
	{
		while (PQisBusy(conn))
		{
			if (!wait_for_socket(WL_SOCKET_READABLE, deadline))
			{
				if (result != nullptr)
					PQclear(result);
				record_timeout(what);
				return nullptr;
			}
			if (!PQconsumeInput(conn))
			{
				if (result != nullptr)
					PQclear(result);
				record_failure(nullptr, what);
				return nullptr;
			}
		}
		PGresult *next = PQgetResult(conn);

		if (next == nullptr)
			break;
		if (result != nullptr)
			PQclear(result);
		result = next;
	}
	if (PQresultStatus(result) != PGRES_TUPLES_OK)
	{
		record_failure(result, what);
		return nullptr;
	}
	return result;
}

/* Records a reply the agent cannot use; clears result. */
void
record_bad_reply(PGresult *result, const char *what, const char *problem)
{
	char message[error_text_size];

	snprintf(message, sizeof(message), "%s: %s", what, problem);
	if (result != nullptr)
		PQclear(result);
	set_status(AgentStatus::Failed, ERRCODE_PROTOCOL_VIOLATION, message);
}

/*
 * Whether result has rows rows (any number for -1) of columns columns;
 * otherwise records the reply as a protocol violation and clears it.
 */
bool
reply_has_shape(PGresult *result, const char *what, int rows, int columns)
{
	char problem[128];

	if (PQnfields(result) != columns)
		snprintf(problem, sizeof(problem), "the registry replied with %d columns, expected %d", PQnfields(result),
				 columns);
	else if (rows >= 0 && PQntuples(result) != rows)
		snprintf(problem, sizeof(problem), "the registry replied with %d rows, expected %d", PQntuples(result), rows);
	else
		return true;
	record_bad_reply(result, what, problem);
	return false;
}

/*
 * Column col of row as an integer, parsed strictly; otherwise records the
 * reply as a protocol violation, clears it and returns false.  A NULL is
 * refused unless null is given: then it is reported there.
 */
bool
reply_int64(PGresult *result, const char *what, int row, int col, int64_t *value, bool *null = nullptr)
{
	char problem[256];
	const char *text = PQgetvalue(result, row, col);

	if (null != nullptr)
		*null = false;
	if (PQgetisnull(result, row, col))
	{
		if (null != nullptr)
		{
			*null = true;
			*value = 0;
			return true;
		}
		snprintf(problem, sizeof(problem), "column \"%s\" of the reply is null", PQfname(result, col));
		record_bad_reply(result, what, problem);
		return false;
	}

	char *end = nullptr;
	errno = 0;
	long long parsed = text != nullptr ? strtoll(text, &end, 10) : 0;
	if (text == nullptr || end == text || *end != '\0' || errno != 0)
	{
		snprintf(problem, sizeof(problem), "column \"%s\" of the reply is not an integer: \"%.64s\"",
				 PQfname(result, col), text != nullptr ? text : "");
		record_bad_reply(result, what, problem);
		return false;
	}
	*value = parsed;
	return true;
}

/*
 * Column col of row as a lease ID, the text form of a UUID, parsed
 * strictly; otherwise records the reply as a protocol violation, clears it
 * and returns false.
 */
bool
reply_lease_id(PGresult *result, const char *what, int row, int col, LeaseId *id)
{
	char problem[256];

	if (!PQgetisnull(result, row, col) && parse_lease_id(PQgetvalue(result, row, col), id))
		return true;
	snprintf(problem, sizeof(problem), "column \"%s\" of the reply is not a lease ID: \"%.64s\"",
			 PQfname(result, col), PQgetisnull(result, row, col) ? "" : PQgetvalue(result, row, col));
	record_bad_reply(result, what, problem);
	return false;
}

/*
 * Notes the registry's quarantine from column col of row: its end in
 * microseconds since the Unix epoch, NULL for none (registry_status shows
 * it).  Otherwise records the reply as a protocol violation, clears it and
 * returns false.
 */
bool
note_quarantine(PGresult *result, const char *what, int row, int col)
{
	LeaseTable *state = lease_table();
	int64_t unix_us;
	bool none;

	if (!reply_int64(result, what, row, col, &unix_us, &none))
		return false;
	TimestampTz until = unix_us - unix_ms_at_pg_epoch * 1000;
	if (!none && (unix_us < PG_INT64_MIN / 2 || !IS_VALID_TIMESTAMP(until)))
	{
		char problem[128];

		snprintf(problem, sizeof(problem), "column \"%s\" of the reply is out of range: %lld", PQfname(result, col),
				 static_cast<long long>(unix_us));
		record_bad_reply(result, what, problem);
		return false;
	}
	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	state->quarantined = !none;
	state->quarantine_until = none ? 0 : until;
	LWLockRelease(&state->lock);
	return true;
}

/*
 * Notes the protocol version spoken with the registry from now on (the
 * lower of this build's and the registry's), and logs a change: a fleet in
 * the middle of an upgrade shows which member speaks what.
 */
void
note_protocol(int spoken)
{
	LeaseTable *state = lease_table();

	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	int before = state->protocol;
	state->protocol = spoken;
	LWLockRelease(&state->lock);
	if (before != spoken)
		ereport(LOG, (errmsg("uidgen registry agent: speaking registry protocol %d with the registry (this server "
							 "speaks up to %d)", spoken, member_protocol)));
}

/* The protocol version spoken with the registry, as this round's identity reply settled it. */
int
protocol_spoken()
{
	LeaseTable *state = lease_table();

	LWLockAcquire(&state->lock, LW_SHARED);
	int spoken = state->protocol;
	LWLockRelease(&state->lock);
	return spoken;
}

/*
 * Notes the registry's counter, replied to a call that sent what this
 * server saw at that identity (the one check_identity() read this round);
 * false, with the failure recorded, when the registry went back: it was
 * set back to an earlier state of itself, which it has noticed too and
 * quarantines for (registry_rules()).  The round ends there: the next one
 * sends a counter the registry has moved above, and re-asserts the leases
 * in the quarantine.
 */
bool
note_counter(const pg_uuid_t &identity, bool had_sent, int64_t sent, const SignedCounter &counter)
{
	LeaseTable *state = lease_table();

	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	bool went_back = state->counter_witness.note_reply(identity.data, had_sent, sent, counter);
	LWLockRelease(&state->lock);
	if (!went_back)
		return true;

	char message[error_text_size];
	char identity_text[UUID_LEN * 2 + 5];

	uuid_text(identity, identity_text);
	snprintf(message, sizeof(message),
			 "uidgen registry %s has gone back: its counter is %lld, not above the %lld this server saw there; it was "
			 "set back to an earlier state of itself (a file-level copy, a restore or a revert to a snapshot) and "
			 "holds new leases back while its members re-assert theirs",
			 identity_text, static_cast<long long>(counter.value), static_cast<long long>(sent));
	set_status(AgentStatus::Failed, ERRCODE_CONNECTION_FAILURE, message);
	return false;
}

/*
 * Fetches the registry's rules and checks the two clocks against each
 * other: the registry's, read between two readings of ours, may be off by
 * half the round trip.  Sends the highest registry counter seen at the
 * identity read this round, and notes the one replied (note_counter()).
 */
bool
fetch_rules()
{
	LeaseTable *state = lease_table();
	pg_uuid_t identity;
	Predecessors predecessors;
	SignedCounter counter_sent{};
	char version_text[16];
	char counter_text[24];
	const char *params[3] = {version_text, nullptr, nullptr};
	int spoken = protocol_spoken();

	bool identified = seen_registry(&identity, &predecessors);
	LWLockAcquire(&state->lock, LW_SHARED);
	bool had_sent = identified && state->counter_witness.to_send(identity.data, &counter_sent);
	LWLockRelease(&state->lock);
	snprintf(version_text, sizeof(version_text), "%d", spoken);
	if (had_sent)
	{
		snprintf(counter_text, sizeof(counter_text), "%lld", static_cast<long long>(counter_sent.value));
		params[1] = counter_text;
		params[2] = counter_sent.proof;
	}

	const char *what = "reading the registry's rules";
	bool added_column = spoken >= 2;	/* the test build's version 2 (protocol.hpp) */
	int64_t sent = backend_clock().now_ms();
	PGresult *r = call(what, added_column ? rules_call_2 : rules_call, 3, params);
	int64_t received = backend_clock().now_ms();

	if (r == nullptr)
		return false;
	if (!reply_has_shape(r, what, 1, rules_columns + (added_column ? 1 : 0)))
		return false;
	RulesReply reply{};
	SignedCounter counter{};
	int64_t *column[] = {&reply.time_bits,	  &reply.worker_bits,  &reply.seq_bits,	  &reply.epoch_ms,
						 &reply.unit_ms,	  &reply.max_borrow_ms, &reply.lease_ttl_ms, &reply.block_size,
						 &reply.max_clock_skew_ms, &reply.clock_ms, &counter.value};
	for (int col = 0; col < 11; col++)
	{
		if (!reply_int64(r, what, 0, col, column[col]))
			return false;
	}
	const char *proof = PQgetisnull(r, 0, 11) ? "" : PQgetvalue(r, 0, 11);
	if (!SignedCounter::proof_shaped(proof))
	{
		record_bad_reply(r, what, "column \"counter_proof\" of the reply is not a counter's proof");
		return false;
	}
	strlcpy(counter.proof, proof, sizeof(counter.proof));
	if (added_column && !PQgetisnull(r, 0, 12))
		ereport(LOG, (errmsg("uidgen registry agent: the registry's note: %.200s", PQgetvalue(r, 0, 12))));
	PQclear(r);
	if (identified && !note_counter(identity, had_sent, counter_sent.value, counter))
		return false;
	std::optional<RegistryRules> checked = checked_rules(reply);
	if (!checked)
	{
		char problem[384];

		snprintf(problem, sizeof(problem),
				 "the registry's rules are out of range: time_bits %lld, worker_bits %lld, seq_bits %lld, "
				 "unit_ms %lld, max_borrow_ms %lld, lease_ttl_ms %lld, block_size %lld, max_clock_skew_ms %lld, "
				 "clock_ms %lld",
				 static_cast<long long>(reply.time_bits), static_cast<long long>(reply.worker_bits),
				 static_cast<long long>(reply.seq_bits), static_cast<long long>(reply.unit_ms),
				 static_cast<long long>(reply.max_borrow_ms), static_cast<long long>(reply.lease_ttl_ms),
				 static_cast<long long>(reply.block_size), static_cast<long long>(reply.max_clock_skew_ms),
				 static_cast<long long>(reply.clock_ms));
		record_bad_reply(nullptr, what, problem);
		return false;
	}
	RegistryRules rules = *checked;

	/* R12: no call to the registry while the clocks disagree beyond the bound. */
	ClockOffset offset = clock_offset(sent, received, reply.clock_ms);
	if (offset.beyond(rules.max_clock_skew_ms))
	{
		char message[error_text_size];

		snprintf(message, sizeof(message),
				 "this server's clock and the registry's differ by %lld ms, more than its max_clock_skew of "
				 "%lld ms; synchronize the clocks",
				 static_cast<long long>(offset.offset_ms), static_cast<long long>(rules.max_clock_skew_ms));
		set_status(AgentStatus::Failed, ERRCODE_SQLSERVER_REJECTED_ESTABLISHMENT_OF_SQLCONNECTION, message);
		return false;
	}
	/*
	 * max_borrow bounds how far past its lease a holder's IDs may reach, and
	 * so when the registry may lease its block again: every member must
	 * agree with the registry on it.
	 */
	if (max_borrow_ms != rules.max_borrow_ms)
	{
		char message[error_text_size];

		snprintf(message, sizeof(message),
				 "uidgen.max_borrow is %d ms on this server and %lld ms at the registry; every member must use "
				 "the registry's",
				 max_borrow_ms, static_cast<long long>(rules.max_borrow_ms));
		set_status(AgentStatus::Failed, ERRCODE_SQLSERVER_REJECTED_ESTABLISHMENT_OF_SQLCONNECTION, message);
		return false;
	}

	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	state->rules = rules;
	state->have_rules = true;
	LWLockRelease(&state->lock);
	return true;
}

/*
 * Reads which registry this is (uidgen.registry_identity()) on conn.
 *
 * check_identity() refuses to go on at another than the one this server
 * life pinned: created again, rebuilt, or another database behind the same
 * connection string, it knows nothing of the leases this server holds.  The
 * first identity under a uidgen.registry setting is pinned
 * (registry_pin.hpp).
 */
bool
read_identity(pg_uuid_t *seen, Predecessors *predecessors, int *spoken)
{
	const char *what = "reading the registry's identity";
	char version_text[16];
	snprintf(version_text, sizeof(version_text), "%d", member_protocol);
	const char *params[] = {version_text};
	PGresult *r = call(what, identity_call, 1, params);

	if (r == nullptr)
		return false;
	if (!reply_has_shape(r, what, 1, 3))
		return false;
	int64_t registry_protocol;
	if (!reply_int64(r, what, 0, 2, &registry_protocol))
		return false;
	*spoken = spoken_protocol(member_protocol, static_cast<int>(std::clamp<int64_t>(registry_protocol, 0, 1000000)));
	if (*spoken == 0)
	{
		char message[error_text_size];

		PQclear(r);
		snprintf(message, sizeof(message),
				 "uidgen member protocol %d cannot work with registry protocol %lld: a member and a registry work "
				 "together only one protocol version apart or less; upgrade uidgen on the older side",
				 member_protocol, static_cast<long long>(registry_protocol));
		set_status(AgentStatus::Failed, ERRCODE_PROTOCOL_VIOLATION, message);
		return false;
	}
	if (PQgetisnull(r, 0, 0))
	{
		record_bad_reply(r, what, "column \"registry_id\" of the reply is null");
		return false;
	}

	const char *text = PQgetvalue(r, 0, 0);
	if (!parse_uuid_text(text, seen))
	{
		char problem[128];

		snprintf(problem, sizeof(problem), "column \"registry_id\" of the reply is not a UUID: \"%.40s\"", text);
		record_bad_reply(r, what, problem);
		return false;
	}

	/* "{uuid,uuid}": more than max_predecessors are not kept, so a move from them is refused. */
	const char *list = PQgetisnull(r, 0, 1) ? "{}" : PQgetvalue(r, 0, 1);
	size_t length = strlen(list);
	predecessors->count = 0;
	if (length < 2 || list[0] != '{' || list[length - 1] != '}')
	{
		record_bad_reply(r, what, "column \"predecessors\" of the reply is not an array");
		return false;
	}
	for (size_t pos = 1; pos + 1 < length && predecessors->count < max_predecessors;)
	{
		char one[UUID_LEN * 2 + 5];
		size_t end = pos;

		while (end + 1 < length && list[end] != ',')
			end++;
		if (end - pos >= sizeof(one) || (memcpy(one, list + pos, end - pos), one[end - pos] = '\0',
										 !parse_uuid_text(one, &predecessors->ids[predecessors->count])))
		{
			record_bad_reply(r, what, "column \"predecessors\" of the reply is not an array of UUIDs");
			return false;
		}
		predecessors->count++;
		pos = end + 1;
	}
	PQclear(r);
	return true;
}

/*
 * Whether this server may work with registry seen, which took over
 * predecessors: the one it pinned, none pinned yet, one that imported the
 * pinned one (which is sealed: INV-20), or any on purpose when the pinned
 * one is gone for good (lost_move_wanted()).  Otherwise the refusal is
 * written to message.
 */
bool
may_move_to(const pg_uuid_t &seen, const Predecessors &predecessors, char message[error_text_size])
{
	pg_uuid_t pinned;

	if (!pinned_registry(&pinned) || memcmp(pinned.data, seen.data, UUID_LEN) == 0 || imported(predecessors, pinned)
		|| lost_move_wanted())
		return true;

	char seen_text[UUID_LEN * 2 + 5];
	char pinned_text[UUID_LEN * 2 + 5];

	uuid_text(seen, seen_text);
	uuid_text(pinned, pinned_text);
	snprintf(message, error_text_size,
			 "uidgen registry %s has not imported uidgen registry %s, which this server joined: its leases could "
			 "overlap those the old registry's members still hold, so nothing is leased there (run SELECT "
			 "uid_registry_export(importer) at the old registry and SELECT uid_registry_import(...) with its result at "
			 "the new one; if the old registry is gone for good, run SELECT uid_registry_move(old_registry_lost "
			 "=> true) in every member database)",
			 seen_text, pinned_text);
	return false;
}

bool
check_identity()
{
	pg_uuid_t seen;
	pg_uuid_t pinned;
	Predecessors predecessors;
	int spoken;

	if (!read_identity(&seen, &predecessors, &spoken))
		return false;
	note_protocol(spoken);
	/* Another registry under another uidgen.registry: as in adopt_pending(). */
	if (text_changed_since_pin && pinned_registry(&pinned) && memcmp(pinned.data, seen.data, UUID_LEN) != 0)
	{
		char message[error_text_size];

		if (!may_move_to(seen, predecessors, message))
		{
			set_status(AgentStatus::Failed, ERRCODE_SQLSERVER_REJECTED_ESTABLISHMENT_OF_SQLCONNECTION, message);
			return false;
		}
		forget_blocks();
		unpin_registry();
	}
	text_changed_since_pin = false;
	if (!note_registry_identity(seen, predecessors, current_attempt, &pinned))
	{
		char message[error_text_size];
		char seen_text[UUID_LEN * 2 + 5];
		char pinned_text[UUID_LEN * 2 + 5];

		uuid_text(seen, seen_text);
		uuid_text(pinned, pinned_text);
		snprintf(message, sizeof(message),
				 "the registry database is uidgen registry %s, not %s, which this server joined: it was created "
				 "again, copied, rebuilt or replaced, and knows nothing of this server's leases; nothing is leased or "
				 "renewed there (to move to it on purpose, run SELECT uid_registry_export(importer) at the old registry "
				 "and SELECT uid_registry_import(...) with its result at this one, then SELECT uid_registry_move() "
				 "in every member database; if the old registry is gone for good, "
				 "uid_registry_move(old_registry_lost => true))",
				 seen_text, pinned_text);
		set_status(AgentStatus::Failed, ERRCODE_SQLSERVER_REJECTED_ESTABLISHMENT_OF_SQLCONNECTION, message);
		return false;
	}
	return true;
}

/* Appends name as a quoted element of a text[] literal. */
void
append_array_text(StringInfo array, const char *name)
{
	appendStringInfoChar(array, '"');
	for (const char *c = name; *c != '\0'; c++)
	{
		if (*c == '"' || *c == '\\')
			appendStringInfoChar(array, '\\');
		appendStringInfoChar(array, *c);
	}
	appendStringInfoChar(array, '"');
}

/* The text of this server life's identity, as the registry functions take it: 6 parameters. */
struct Identity
{
	char life[UUID_LEN * 2 + 5];
	char system_identifier[32];
	char timeline[16];
	char host[256];
	char port[16];
	char *databases;			/* a text[] literal, palloc'd */
};
static_assert(std::is_trivially_destructible_v<Identity>);

Identity
identity_of(LeaseTable *state)
{
	Identity id{};
	pg_uuid_t uuid;

	memcpy(uuid.data, state->life, UUID_LEN);
	strlcpy(id.life, DatumGetCString(DirectFunctionCall1(uuid_out, UUIDPGetDatum(&uuid))), sizeof(id.life));
	snprintf(id.system_identifier, sizeof(id.system_identifier), UINT64_FORMAT, GetSystemIdentifier());
	snprintf(id.timeline, sizeof(id.timeline), "%u", GetWALInsertionTimeLine());
	strlcpy(id.host, server_host_name(), sizeof(id.host));
	snprintf(id.port, sizeof(id.port), "%d", PostPortNumber);

	/* Copied out first: nothing may allocate under the table's lock. */
	Oid *databases = static_cast<Oid *>(palloc(sizeof(Oid) * max_grants));
	NameData *names_of = static_cast<NameData *>(palloc(sizeof(NameData) * max_grants));
	int count = 0;

	LWLockAcquire(&state->lock, LW_SHARED);
	for (int i = 0; i < state->ngrants; i++)
	{
		databases[count] = state->grants[i].database;
		names_of[count++] = state->grants[i].database_name;
	}
	LWLockRelease(&state->lock);

	StringInfoData names;
	initStringInfo(&names);
	appendStringInfoChar(&names, '{');
	for (int i = 0; i < count; i++)
	{
		bool seen = false;

		for (int j = 0; j < i && !seen; j++)
			seen = databases[j] == databases[i];
		if (seen)
			continue;
		if (names.len > 1)
			appendStringInfoChar(&names, ',');
		append_array_text(&names, NameStr(names_of[i]));
	}
	appendStringInfoChar(&names, '}');
	id.databases = names.data;
	return id;
}

/* Renews every lease this life holds; a block the registry no longer gives it is dropped. */
bool
renew(LeaseTable *state)
{
	StringInfoData blocks, floors, ceilings, lease_ids, workers, databases, grant_leases;
	char text[lease_id_text_size];
	LeasedBlock *held = static_cast<LeasedBlock *>(palloc(sizeof(LeasedBlock) * max_leased_blocks));
	Grant *grants = static_cast<Grant *>(palloc(sizeof(Grant) * max_grants));
	int nheld;
	int ngrants;

	/*
	 * Copied out first: nothing may allocate under the table's lock.  Only
	 * leases still running: one that lapsed here stays lapsed, even if the
	 * registry (a restored one) would still renew it.
	 */
	int64_t now_mono = monotonic_ms();
	LWLockAcquire(&state->lock, LW_SHARED);
	nheld = 0;
	for (int i = 0; i < state->nblocks; i++)
	{
		if (state->blocks[i].deadline_mono_ms > now_mono)
			held[nheld++] = state->blocks[i];
	}
	ngrants = state->ngrants;
	memcpy(grants, state->grants, sizeof(Grant) * ngrants);
	int nreleased = state->nreleased;
	LeaseId released[max_leased_blocks];
	memcpy(released, state->released, sizeof(LeaseId) * nreleased);
	LWLockRelease(&state->lock);

	initStringInfo(&blocks);
	initStringInfo(&floors);
	initStringInfo(&ceilings);
	initStringInfo(&lease_ids);
	initStringInfo(&workers);
	initStringInfo(&databases);
	initStringInfo(&grant_leases);
	for (int i = 0; i < nheld; i++)
	{
		lease_id_text(held[i].lease_id, text);
		appendStringInfo(&blocks, "%s%lld", i > 0 ? "," : "", static_cast<long long>(held[i].block));
		appendStringInfo(&floors, "%s%lld", i > 0 ? "," : "", static_cast<long long>(held[i].floor_delta));
		appendStringInfo(&ceilings, "%s%lld", i > 0 ? "," : "", static_cast<long long>(held[i].ceiling_delta));
		appendStringInfo(&lease_ids, "%s%s", i > 0 ? "," : "", text);
	}
	int nreported = 0;
	for (int i = 0; i < ngrants; i++)
	{
		if (grants[i].reported)
			continue;
		appendStringInfo(&workers, "%s%lld", nreported > 0 ? "," : "", static_cast<long long>(grants[i].worker));
		lease_id_text(grants[i].lease_id, text);
		appendStringInfo(&grant_leases, "%s%s", nreported > 0 ? "," : "", text);
		if (nreported > 0)
			appendStringInfoChar(&databases, ',');
		append_array_text(&databases, NameStr(grants[i].database_name));
		nreported++;
	}
	int reported_up_to = ngrants;
	StringInfoData released_leases;
	initStringInfo(&released_leases);
	for (int i = 0; i < nreleased; i++)
	{
		lease_id_text(released[i], text);
		appendStringInfo(&released_leases, "%s%s", i > 0 ? "," : "", text);
	}

	char *blocks_text = psprintf("{%s}", blocks.data);
	char *floors_text = psprintf("{%s}", floors.data);
	char *workers_text = psprintf("{%s}", workers.data);
	char *databases_text = psprintf("{%s}", databases.data);
	char *lease_ids_text = psprintf("{%s}", lease_ids.data);
	char *grant_leases_text = psprintf("{%s}", grant_leases.data);
	char *ceilings_text = psprintf("{%s}", ceilings.data);
	char *released_text = psprintf("{%s}", released_leases.data);
	Identity id = identity_of(state);
	int spoken = protocol_spoken();
	char version_text[16];
	snprintf(version_text, sizeof(version_text), "%d", spoken);
	/* The test build's version 2 adds an argument (protocol.hpp). */
	const char *member_note = "a member of protocol 2";
	const char *params[] = {version_text, id.life, id.system_identifier, id.timeline, id.host, id.port, id.databases,
							blocks_text, floors_text, workers_text, databases_text, lease_ids_text,
							grant_leases_text, ceilings_text, released_text, member_note};
	static_assert(sizeof(params) / sizeof(params[0]) == renew_params + 1);
	int64_t sent = monotonic_ms();
	PGresult *r = spoken >= 2 ? call("renewing the leases", renew_call_2, renew_params + 1, params)
							  : call("renewing the leases", renew_call, renew_params, params);

	if (r == nullptr)
		return false;

	/* Parsed first: the table's lock is held for a copy only. */
	const char *what = "renewing the leases";
	if (!reply_has_shape(r, what, -1, 5))
		return false;
	int nrenewed = PQntuples(r);
	/* Every row carries it; with none renewed, the claim that follows tells. */
	if (nrenewed > 0 && !note_quarantine(r, what, 0, 4))
		return false;
	int64_t *renewed = static_cast<int64_t *>(palloc(sizeof(int64_t) * (nrenewed + 1)));
	LeaseId *renewed_lease = static_cast<LeaseId *>(palloc(sizeof(LeaseId) * (nrenewed + 1)));
	int64_t *deadline = static_cast<int64_t *>(palloc(sizeof(int64_t) * (nrenewed + 1)));
	int64_t *ceiling = static_cast<int64_t *>(palloc(sizeof(int64_t) * (nrenewed + 1)));
	int64_t *length = static_cast<int64_t *>(palloc(sizeof(int64_t) * (nrenewed + 1)));
	for (int row = 0; row < nrenewed; row++)
	{
		if (!reply_int64(r, what, row, 0, &renewed[row]) || !reply_int64(r, what, row, 1, &length[row]) ||
			!reply_lease_id(r, what, row, 2, &renewed_lease[row]) || !reply_int64(r, what, row, 3, &ceiling[row]))
			return false;
		if (length[row] <= 0)
		{
			char problem[128];

			snprintf(problem, sizeof(problem), "the registry renewed block %lld for %lld ms",
					 static_cast<long long>(renewed[row]), static_cast<long long>(length[row]));
			record_bad_reply(r, what, problem);
			return false;
		}
		deadline[row] = sent + length[row];
	}
	PQclear(r);

	int kept = 0;
	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	for (int i = 0; i < state->nblocks; i++)
	{
		for (int row = 0; row < nrenewed; row++)
		{
			/* By its lease ID: the block alone may be this life's again under another lease. */
			if (renewed[row] == state->blocks[i].block && renewed_lease[row] == state->blocks[i].lease_id)
			{
				state->blocks[i].deadline_mono_ms = deadline[row];
				state->blocks[i].lease_ms = length[row];
				state->blocks[i].ceiling_delta = std::max(state->blocks[i].ceiling_delta, ceiling[row]);
				state->blocks[kept++] = state->blocks[i];
				break;
			}
		}
	}
	state->nblocks = kept;
	for (int i = 0; i < reported_up_to; i++)
		state->grants[i].reported = true;
	/* The releases sent are done; any given back since stay for the next renewal. */
	int left = 0;
	for (int i = 0; i < state->nreleased; i++)
	{
		if (std::find(released, released + nreleased, state->released[i]) == released + nreleased)
			state->released[left++] = state->released[i];
	}
	state->nreleased = left;
	LWLockRelease(&state->lock);
	ConditionVariableBroadcast(&state->changed);
	return true;
}

bool
claim_block(LeaseTable *state)
{
	Identity id = identity_of(state);
	char version_text[16];
	snprintf(version_text, sizeof(version_text), "%d", protocol_spoken());
	const char *params[] = {version_text, id.life, id.system_identifier, id.timeline, id.host, id.port, id.databases};
	static_assert(sizeof(params) / sizeof(params[0]) == claim_params);
	int64_t sent = monotonic_ms();
	PGresult *r = call("leasing a block of worker ids", claim_call, claim_params, params);

	if (r == nullptr)
		return false;
	const char *what = "leasing a block of worker ids";
	if (!reply_has_shape(r, what, 1, 9))
		return false;
	int64_t block;
	bool held_back;
	if (!reply_int64(r, what, 0, 0, &block, &held_back))
		return false;
	if (!note_quarantine(r, what, 0, 8))
		return false;
	if (held_back)
	{
		char message[error_text_size];

		if (PQgetisnull(r, 0, 5))
		{
			record_bad_reply(r, what, "column \"held_back_until\" of the reply is null");
			return false;
		}
		snprintf(message, sizeof(message),
				 "the uidgen registry hands out no worker block until %.64s: it may have lost leases (it was "
				 "restarted, restored or failed over), which their holders re-assert first, or it is new and may "
				 "replace a registry whose members still issue (uid_registry_start_fleet() or "
				 "uid_registry_import() there ends that wait)",
				 PQgetvalue(r, 0, 5));
		PQclear(r);
		set_status(AgentStatus::Failed, ERRCODE_SQLSERVER_REJECTED_ESTABLISHMENT_OF_SQLCONNECTION, message);
		return false;
	}

	LeasedBlock b{};
	b.block = block;
	if (!reply_int64(r, what, 0, 1, &b.first_worker) || !reply_int64(r, what, 0, 2, &b.last_worker) ||
		!reply_int64(r, what, 0, 3, &b.floor_delta) || !reply_int64(r, what, 0, 4, &b.lease_ms) ||
		!reply_lease_id(r, what, 0, 6, &b.lease_id) || !reply_int64(r, what, 0, 7, &b.ceiling_delta))
		return false;
	PQclear(r);
	if (b.block < 1 || b.first_worker < 1 || b.last_worker < b.first_worker || b.lease_ms <= 0 ||
		b.ceiling_delta <= b.floor_delta)
	{
		char problem[256];

		snprintf(problem, sizeof(problem),
				 "the registry leased block %lld of workers %lld to %lld for %lld ms, time units %lld to %lld",
				 static_cast<long long>(b.block), static_cast<long long>(b.first_worker),
				 static_cast<long long>(b.last_worker), static_cast<long long>(b.lease_ms),
				 static_cast<long long>(b.floor_delta + 1), static_cast<long long>(b.ceiling_delta));
		record_bad_reply(nullptr, what, problem);
		return false;
	}
	b.claimed_at_ms = backend_clock().now_ms();
	b.deadline_mono_ms = sent + b.lease_ms;
	b.next_worker = b.first_worker;

	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	if (state->nblocks < max_leased_blocks)
		state->blocks[state->nblocks++] = b;
	LWLockRelease(&state->lock);
	ConditionVariableBroadcast(&state->changed);
	return true;
}

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
	char seen_text[UUID_LEN * 2 + 5];

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
