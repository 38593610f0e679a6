/*
 * options.hpp
 *	  Command-line options of uidgen_load, the load and uniqueness client.
 */
#ifndef UIDGEN_LOAD_OPTIONS_HPP
#define UIDGEN_LOAD_OPTIONS_HPP

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace uidgen_load {

/* How a round trip gets its IDs. */
enum class Method
{
	Next,	/* SELECT uid_next() FROM generate_series(1, k) */
	Batch,	/* SELECT * FROM uid_next_batch(k) */
	Insert, /* INSERT INTO table SELECT FROM generate_series(1, k) RETURNING id */
	Mixed	/* the three above in turn */
};

/* How connections and transactions are used. */
enum class Mode
{
	Steady,	 /* one long-lived connection per thread */
	Churn,	 /* reconnect after every per_connection IDs */
	Rollback /* every round trip in its own transaction, committed or rolled back */
};

struct Options
{
	std::string dsn;			/* empty: libpq takes PGHOST, PGPORT, ... */
	int connections = 8;
	int64_t ids = 10000;		/* per connection (thread) */
	Method method = Method::Next;
	Mode mode = Mode::Steady;
	int64_t per_connection = 100;
	int fetch = 1000;
	double rollback_ratio = 0.5;
	std::string table = "uidgen_load";
	bool create_table = false;
	bool json = false;
	uint64_t seed = 0;
	double duration_limit = 600;
	bool help = false;
};

/* Bad usage: main prints it and exits with status 2. */
class UsageError : public std::runtime_error
{
public:
	using std::runtime_error::runtime_error;
};

Options parse_options(int argc, char **argv);
void print_help(FILE *out);

const char *method_name(Method method);
const char *mode_name(Mode mode);

/* Whether the method writes to Options::table. */
bool method_uses_table(Method method);

} // namespace uidgen_load

#endif /* UIDGEN_LOAD_OPTIONS_HPP */
