/*
 * connection.cpp
 *	  libpq connections, results and errors for uidgen_load.
 */
#include "connection.hpp"

#include <algorithm>
#include <cstdlib>

namespace uidgen_load {

namespace {

std::string
field(const PGresult *res, int code)
{
	const char *value = PQresultErrorField(res, code);

	return value ? value : "";
}

/*
 * libpq's own messages end in a newline and go on over tab-indented lines;
 * make them look like the DETAIL and HINT lines we print under them.
 */
std::string
trim(std::string text)
{
	std::string result;
	bool line_start = false;

	while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
		text.pop_back();
	for (char c : text)
	{
		if (c == '\t' && line_start)
			continue;
		result += c;
		line_start = c == '\n';
		if (line_start)
			result += "  ";
	}
	return result;
}

} // namespace

SqlError::SqlError(const std::string &message, std::string sqlstate, std::string severity, std::string detail,
				   std::string hint)
	: std::runtime_error(message), sqlstate_(std::move(sqlstate)), severity_(std::move(severity)),
	  detail_(std::move(detail)), hint_(std::move(hint))
{
}

std::string
SqlError::describe() const
{
	std::string text = severity_;

	if (!sqlstate_.empty())
		text += " " + sqlstate_;
	text += ": ";
	text += what();
	if (!detail_.empty())
		text += "\n  DETAIL: " + detail_;
	if (!hint_.empty())
		text += "\n  HINT: " + hint_;
	return text;
}

Result &
Result::operator=(Result &&other) noexcept
{
	if (this != &other)
	{
		PQclear(res_);
		res_ = other.res_;
		other.res_ = nullptr;
	}
	return *this;
}

int64_t
Result::int8(int row, int column) const
{
	constexpr Oid int8_oid = 20;
	const unsigned char *bytes;
	uint64_t value = 0;

	if (PQfformat(res_, column) != 1 || PQftype(res_, column) != int8_oid)
		throw SqlError("result column is not a binary bigint");
	if (PQgetisnull(res_, row, column))
		throw SqlError("the server returned NULL instead of an ID");
	if (PQgetlength(res_, row, column) != 8)
		throw SqlError("a binary bigint of " + std::to_string(PQgetlength(res_, row, column)) + " bytes");

	/* Network byte order, whatever the host's. */
	bytes = reinterpret_cast<const unsigned char *>(PQgetvalue(res_, row, column));
	for (int i = 0; i < 8; i++)
		value = (value << 8) | bytes[i];
	return static_cast<int64_t>(value);
}

CancelGroup::~CancelGroup()
{
	for (auto &entry : entries_)
		PQfreeCancel(entry.second);
}

void
CancelGroup::add(PGconn *conn)
{
	PGcancel *cancel = PQgetCancel(conn);

	if (cancel == nullptr)
		return;
	std::lock_guard<std::mutex> lock(mutex_);
	entries_.emplace_back(conn, cancel);
}

void
CancelGroup::remove(PGconn *conn)
{
	std::lock_guard<std::mutex> lock(mutex_);
	auto it = std::find_if(entries_.begin(), entries_.end(), [conn](const auto &e) { return e.first == conn; });

	if (it != entries_.end())
	{
		PQfreeCancel(it->second);
		entries_.erase(it);
	}
}

void
CancelGroup::cancel_all()
{
	std::lock_guard<std::mutex> lock(mutex_);
	char message[256];

	/* Failures do not matter: a connection with nothing running has nothing to cancel. */
	for (auto &entry : entries_)
		PQcancel(entry.second, message, sizeof(message));
}

Connection::Connection(const std::string &dsn, CancelGroup *group) : conn_(nullptr), group_(group)
{
	/*
	 * Our defaults come first so that the DSN, expanded from "dbname",
	 * overrides them; a server that never answers must not hang a thread
	 * past the duration limit, which cannot cancel a connection attempt.
	 */
	std::vector<const char *> keywords = {"fallback_application_name"};
	std::vector<const char *> values = {"uidgen_load"};

	if (std::getenv("PGCONNECT_TIMEOUT") == nullptr)
	{
		keywords.push_back("connect_timeout");
		values.push_back("10");
	}
	if (!dsn.empty())
	{
		keywords.push_back("dbname");
		values.push_back(dsn.c_str());
	}
	keywords.push_back(nullptr);
	values.push_back(nullptr);

	conn_ = PQconnectdbParams(keywords.data(), values.data(), 1);
	if (conn_ == nullptr)
		throw SqlError("out of memory for a connection", {}, "FATAL");
	if (PQstatus(conn_) != CONNECTION_OK)
	{
		std::string message = trim(PQerrorMessage(conn_));

		PQfinish(conn_);
		conn_ = nullptr;
		throw SqlError("could not connect: " + message, {}, "FATAL");
	}
	if (group_)
		group_->add(conn_);
}

Connection::~Connection()
{
	if (group_)
		group_->remove(conn_);
	PQfinish(conn_);
}

Result
Connection::check(PGresult *res) const
{
	ExecStatusType status = PQresultStatus(res);

	if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK)
		return Result(res);
	if (res == nullptr)
		throw SqlError(trim(PQerrorMessage(conn_)));

	/* No SQLSTATE when libpq itself failed, e.g. when the backend died. */
	std::string message = field(res, PG_DIAG_MESSAGE_PRIMARY);
	std::string severity = field(res, PG_DIAG_SEVERITY);
	SqlError error(message.empty() ? trim(PQresultErrorMessage(res)) : message, field(res, PG_DIAG_SQLSTATE),
				   severity.empty() ? "ERROR" : severity, field(res, PG_DIAG_MESSAGE_DETAIL),
				   field(res, PG_DIAG_MESSAGE_HINT));

	PQclear(res);
	throw error;
}

Result
Connection::exec(const std::string &sql)
{
	return check(PQexec(conn_, sql.c_str()));
}

void
Connection::prepare(const std::string &name, const std::string &sql)
{
	check(PQprepare(conn_, name.c_str(), sql.c_str(), 1, nullptr));
}

Result
Connection::exec_prepared(const std::string &name, int64_t parameter)
{
	std::string text = std::to_string(parameter);
	const char *values[1] = {text.c_str()};

	/* Binary results: eight bytes per ID instead of up to twenty digits to parse. */
	return check(PQexecPrepared(conn_, name.c_str(), 1, values, nullptr, nullptr, 1));
}

std::string
Connection::quote_identifier(const std::string &name) const
{
	char *quoted = PQescapeIdentifier(conn_, name.c_str(), name.size());
	std::string result;

	if (quoted == nullptr)
		throw SqlError(trim(PQerrorMessage(conn_)));
	result = quoted;
	PQfreemem(quoted);
	return result;
}

} // namespace uidgen_load
