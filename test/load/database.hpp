/*
 * database.hpp
 *	  What uidgen_load asks the database outside the load itself: where the
 *	  extension lives, its layout, the table of the insert method, and how
 *	  many workers the worker table holds.
 */
#ifndef UIDGEN_LOAD_DATABASE_HPP
#define UIDGEN_LOAD_DATABASE_HPP

#include <cstdint>
#include <string>

#include "connection.hpp"
#include "id_check.hpp"
#include "options.hpp"

namespace uidgen_load {

struct DatabaseInfo
{
	std::string schema; /* the extension's schema, quoted for SQL text */
	Layout layout;
};

/* Finds the extension and reads its layout; SqlError if it is not installed. */
DatabaseInfo inspect_database(Connection &conn);

/* Creates the table (--create-table) or checks it exists; UsageError if it does not. */
void prepare_table(Connection &conn, const Options &options, const DatabaseInfo &info);

struct WorkerSample
{
	int64_t active = 0; /* rows of uidgen.worker_node with status 'active' */
	int64_t live = 0;	/* ... whose pid is a running backend */
	int64_t total = 0;	/* all rows, released ones included */
};

WorkerSample sample_workers(Connection &conn);

/* SQL text of the three methods' statements; $1 is the number of IDs. */
std::string method_statement(Method method, const Options &options, const DatabaseInfo &info);

} // namespace uidgen_load

#endif /* UIDGEN_LOAD_DATABASE_HPP */
