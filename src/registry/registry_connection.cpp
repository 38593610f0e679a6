/*
 * registry_connection.cpp
 *	  The registry agent's libpq client, which never blocks.
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
#include "registry/registry_connection.hpp"

#include "pg/pg_clock.hpp"
#include "registry/agent_state.hpp"
#include "registry/registry_hosts.hpp"

extern "C" {
#include "lib/stringinfo.h"
#include "storage/latch.h"
#include "utils/elog.h"
}

#include <cerrno>
#include <cstdlib>

namespace uidgen::pg {

namespace {

/* How long each call may take (see connect_timeout_ms). */
constexpr int64_t call_timeout_ms = 10000;

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

} // namespace

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

bool
connect_to_registry(const char *conninfo, int64_t timeout_ms)
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

namespace {

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

} // namespace

/* As libpq-be-fe-helpers.h does from PostgreSQL 16 on, which 15 lacks. */
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

void
record_bad_reply(PGresult *result, const char *what, const char *problem)
{
	char message[error_text_size];

	snprintf(message, sizeof(message), "%s: %s", what, problem);
	if (result != nullptr)
		PQclear(result);
	set_status(AgentStatus::Failed, ERRCODE_PROTOCOL_VIOLATION, message);
}

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

bool
reply_int64(PGresult *result, const char *what, int row, int col, int64_t *value, bool *null)
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

} // namespace uidgen::pg
