/*
 * connection.hpp
 *	  A thin RAII wrapper around libpq: connections, results, errors that
 *	  carry the server's SQLSTATE, and cancelling every query at once.
 */
#ifndef UIDGEN_LOAD_CONNECTION_HPP
#define UIDGEN_LOAD_CONNECTION_HPP

#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include <libpq-fe.h>

namespace uidgen_load {

/* An error from the server or from libpq, with what the server said about it. */
class SqlError : public std::runtime_error
{
public:
	SqlError(const std::string &message, std::string sqlstate = {}, std::string severity = "ERROR",
			 std::string detail = {}, std::string hint = {});

	const std::string &sqlstate() const { return sqlstate_; }

	/* "ERROR 54000: message", then DETAIL and HINT lines when there are any. */
	std::string describe() const;

	/* Whether it is the cancellation our own duration limit asked for. */
	bool is_query_canceled() const { return sqlstate_ == "57014"; }

private:
	std::string sqlstate_;
	std::string severity_;
	std::string detail_;
	std::string hint_;
};

/* A PGresult, cleared when it goes out of scope. */
class Result
{
public:
	explicit Result(PGresult *res = nullptr) noexcept : res_(res) {}
	~Result() { PQclear(res_); }
	Result(Result &&other) noexcept : res_(other.res_) { other.res_ = nullptr; }
	Result &operator=(Result &&other) noexcept;
	Result(const Result &) = delete;
	Result &operator=(const Result &) = delete;

	int rows() const { return PQntuples(res_); }
	bool is_null(int row, int column) const { return PQgetisnull(res_, row, column) != 0; }
	std::string text(int row, int column) const { return PQgetvalue(res_, row, column); }

	/* A bigint of a result fetched in binary format; SqlError if it is not one. */
	int64_t int8(int row, int column) const;

private:
	PGresult *res_;
};

/*
 * The cancel handles of all open connections, so that the duration limit or
 * a signal can stop every query in flight from the main thread.
 */
class CancelGroup
{
public:
	CancelGroup() = default;
	CancelGroup(const CancelGroup &) = delete;
	CancelGroup &operator=(const CancelGroup &) = delete;
	~CancelGroup();

	void add(PGconn *conn);
	void remove(PGconn *conn);
	void cancel_all();

private:
	std::mutex mutex_;
	std::vector<std::pair<PGconn *, PGcancel *>> entries_;
};

class Connection
{
public:
	/* Connects, or throws SqlError; an empty dsn leaves everything to the PG* variables. */
	explicit Connection(const std::string &dsn, CancelGroup *group = nullptr);
	~Connection();
	Connection(const Connection &) = delete;
	Connection &operator=(const Connection &) = delete;

	/* Runs sql; results in text format.  SqlError unless it succeeded. */
	Result exec(const std::string &sql);

	void prepare(const std::string &name, const std::string &sql);

	/* Runs a prepared statement whose one parameter is an integer; binary results. */
	Result exec_prepared(const std::string &name, int64_t parameter);

	int backend_pid() const { return PQbackendPID(conn_); }
	std::string quote_identifier(const std::string &name) const;

private:
	Result check(PGresult *res) const;

	PGconn *conn_;
	CancelGroup *group_;
};

} // namespace uidgen_load

#endif /* UIDGEN_LOAD_CONNECTION_HPP */
