/*
 * database.cpp
 *	  Setup and monitoring queries of uidgen_load.
 */
#include "database.hpp"

#include <cstdio>
#include <cstdlib>

namespace uidgen_load {

namespace {

int64_t
to_int64(const Result &res, int row, int column)
{
	return res.is_null(row, column) ? 0 : std::strtoll(res.text(row, column).c_str(), nullptr, 10);
}

} // namespace

DatabaseInfo
inspect_database(Connection &conn)
{
	DatabaseInfo info;

	/* Functions live in the schema the extension was created in, which need not be on search_path. */
	Result ext = conn.exec("SELECT n.nspname FROM pg_catalog.pg_extension e "
						   "JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace "
						   "WHERE e.extname = 'uidgen'");
	if (ext.rows() != 1)
		throw SqlError("extension \"uidgen\" is not installed in this database", "42704", "ERROR", {},
					   "CREATE EXTENSION uidgen; first, or pass another database with --dsn.");
	info.schema = conn.quote_identifier(ext.text(0, 0));

	/* The client decodes worker IDs itself, so it needs the layout once. */
	Result layout;
	try
	{
		layout = conn.exec("SELECT time_bits, worker_bits, seq_bits FROM " + info.schema + ".uid_layout()");
	}
	catch (const SqlError &error)
	{
		/*
		 * uid_layout() is for everyone, but has failed for roles that may
		 * not read uidgen.worker_node_id_seq; the load is still worth
		 * running then, from the table the layout lives in.
		 */
		if (error.sqlstate() != "42501")
			throw;
		std::fprintf(stderr, "uidgen_load: warning: uid_layout() failed, reading uidgen.config instead: %s\n",
					 error.describe().c_str());
		layout = conn.exec("SELECT time_bits, worker_bits, seq_bits FROM uidgen.config");
	}
	if (layout.rows() != 1 || layout.is_null(0, 0) || layout.is_null(0, 1) || layout.is_null(0, 2))
		throw SqlError("uid_layout() returned " + std::to_string(layout.rows()) + " rows or NULL fields");
	info.layout.time_bits = static_cast<int>(to_int64(layout, 0, 0));
	info.layout.worker_bits = static_cast<int>(to_int64(layout, 0, 1));
	info.layout.seq_bits = static_cast<int>(to_int64(layout, 0, 2));
	if (info.layout.time_bits < 1 || info.layout.worker_bits < 1 || info.layout.seq_bits < 1 ||
		info.layout.time_bits + info.layout.worker_bits + info.layout.seq_bits > 63)
		throw SqlError("uid_layout() reports an impossible layout " + std::to_string(info.layout.time_bits) + "/" +
					   std::to_string(info.layout.worker_bits) + "/" + std::to_string(info.layout.seq_bits));
	return info;
}

void
prepare_table(Connection &conn, const Options &options, const DatabaseInfo &info)
{
	/* The name was checked to be a plain identifier: it can go into the text as it is. */
	if (options.create_table)
	{
		/* No NOTICE "relation already exists, skipping" in the output. */
		conn.exec("SET client_min_messages = warning");
		conn.exec("CREATE TABLE IF NOT EXISTS " + options.table + " (id bigint PRIMARY KEY DEFAULT " + info.schema +
				  ".uid_next(), payload int)");
		conn.exec("RESET client_min_messages");
	}

	Result column = conn.exec("SELECT c.oid IS NOT NULL, a.atttypid = 'pg_catalog.int8'::pg_catalog.regtype "
							  "FROM (SELECT pg_catalog.to_regclass('" +
							  options.table +
							  "') AS oid) c "
							  "LEFT JOIN pg_catalog.pg_attribute a "
							  "ON a.attrelid = c.oid AND a.attname = 'id' AND NOT a.attisdropped");
	if (column.text(0, 0) != "t")
		throw UsageError("table \"" + options.table + "\" does not exist: create it, or pass --create-table");
	if (column.text(0, 1) != "t")
		throw UsageError("table \"" + options.table + "\" has no bigint column \"id\"");
}

WorkerSample
sample_workers(Connection &conn)
{
	WorkerSample sample;
	Result res = conn.exec("SELECT count(*) FILTER (WHERE status = 'active'), "
						   "count(*) FILTER (WHERE status = 'active' AND pid IN "
						   "(SELECT pid FROM pg_catalog.pg_stat_activity)), "
						   "count(*) "
						   "FROM uidgen.worker_node");

	sample.active = to_int64(res, 0, 0);
	sample.live = to_int64(res, 0, 1);
	sample.total = to_int64(res, 0, 2);
	return sample;
}

std::string
method_statement(Method method, const Options &options, const DatabaseInfo &info)
{
	switch (method)
	{
		case Method::Next:
			/* Rows come out, and uid_next() is evaluated, in generate_series order. */
			return "SELECT " + info.schema + ".uid_next() FROM pg_catalog.generate_series(1, $1::int)";
		case Method::Batch:
			return "SELECT * FROM " + info.schema + ".uid_next_batch($1::int)";
		case Method::Insert:
			/* No target columns: every column takes its default, id its uid_next(). */
			return "INSERT INTO " + options.table + " SELECT FROM pg_catalog.generate_series(1, $1::int) RETURNING id";
		case Method::Mixed:
			break;
	}
	throw std::logic_error("no single statement for the mixed method");
}

} // namespace uidgen_load
