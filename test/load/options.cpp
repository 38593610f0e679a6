/*
 * options.cpp
 *	  Parsing and documentation of uidgen_load's command line.
 *
 * Every limit below is there to keep a run bounded: the client holds every
 * ID it receives in memory (twice, for the final sort), and is meant for
 * throwaway clusters on loopback or a Unix socket.
 */
#include "options.hpp"

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <getopt.h>
#include <random>

namespace uidgen_load {

namespace {

constexpr int max_connections = 1000;
constexpr int64_t max_total_ids = 100000000; /* 1.6 GB of IDs at the final check */
constexpr int max_fetch = 1000000;			 /* uid_next_batch()'s own limit */
constexpr double max_duration = 86400;

enum OptionId
{
	opt_dsn = 1000,
	opt_connections,
	opt_ids,
	opt_method,
	opt_mode,
	opt_per_connection,
	opt_fetch,
	opt_rollback_ratio,
	opt_table,
	opt_create_table,
	opt_json,
	opt_seed,
	opt_duration_limit
};

const struct option long_options[] = {
	{"dsn", required_argument, nullptr, opt_dsn},
	{"connections", required_argument, nullptr, opt_connections},
	{"ids", required_argument, nullptr, opt_ids},
	{"method", required_argument, nullptr, opt_method},
	{"mode", required_argument, nullptr, opt_mode},
	{"per-connection", required_argument, nullptr, opt_per_connection},
	{"fetch", required_argument, nullptr, opt_fetch},
	{"rollback-ratio", required_argument, nullptr, opt_rollback_ratio},
	{"table", required_argument, nullptr, opt_table},
	{"create-table", no_argument, nullptr, opt_create_table},
	{"json", no_argument, nullptr, opt_json},
	{"seed", required_argument, nullptr, opt_seed},
	{"duration-limit", required_argument, nullptr, opt_duration_limit},
	{"help", no_argument, nullptr, 'h'},
	{nullptr, 0, nullptr, 0}};

/* A whole-string integer in [min, max]; "12abc" and "" are errors, not 12 and 0. */
int64_t
parse_integer(const char *option, const char *text, int64_t min, int64_t max)
{
	char *end;
	long long value;

	errno = 0;
	value = std::strtoll(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0')
		throw UsageError(std::string("invalid value \"") + text + "\" for --" + option + ": not an integer");
	if (value < min || value > max)
		throw UsageError(std::string("--") + option + " must be between " + std::to_string(min) + " and " +
						 std::to_string(max) + ", not " + text);
	return value;
}

double
parse_real(const char *option, const char *text, double min, double max)
{
	char *end;
	double value;

	errno = 0;
	value = std::strtod(text, &end);
	if (errno != 0 || end == text || *end != '\0' || !std::isfinite(value))
		throw UsageError(std::string("invalid value \"") + text + "\" for --" + option + ": not a number");
	if (value < min || value > max)
		throw UsageError(std::string("--") + option + " must be between " + std::to_string(min) + " and " +
						 std::to_string(max) + ", not " + text);
	return value;
}

uint64_t
parse_seed(const char *text)
{
	char *end;
	unsigned long long value;

	errno = 0;
	value = std::strtoull(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || text[0] == '-')
		throw UsageError(std::string("invalid value \"") + text + "\" for --seed: not an unsigned integer");
	return value;
}

Method
parse_method(const char *text)
{
	if (std::strcmp(text, "next") == 0)
		return Method::Next;
	if (std::strcmp(text, "batch") == 0)
		return Method::Batch;
	if (std::strcmp(text, "insert") == 0)
		return Method::Insert;
	if (std::strcmp(text, "mixed") == 0)
		return Method::Mixed;
	throw UsageError(std::string("unrecognized method \"") + text + "\": use next, batch, insert or mixed");
}

Mode
parse_mode(const char *text)
{
	if (std::strcmp(text, "steady") == 0)
		return Mode::Steady;
	if (std::strcmp(text, "churn") == 0)
		return Mode::Churn;
	if (std::strcmp(text, "rollback") == 0)
		return Mode::Rollback;
	throw UsageError(std::string("unrecognized mode \"") + text + "\": use steady, churn or rollback");
}

bool
is_identifier(const std::string &s, size_t begin, size_t end)
{
	if (begin >= end || !(std::isalpha(static_cast<unsigned char>(s[begin])) || s[begin] == '_'))
		return false;
	for (size_t i = begin + 1; i < end; i++)
		if (!(std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_' || s[i] == '$'))
			return false;
	return true;
}

/*
 * The table name goes into SQL text as it is, so it may only be a plain
 * identifier, optionally schema-qualified: nothing that needs quoting.
 */
void
check_table_name(const std::string &name)
{
	size_t dot = name.find('.');
	bool ok = dot == std::string::npos ? is_identifier(name, 0, name.size())
									   : is_identifier(name, 0, dot) && is_identifier(name, dot + 1, name.size());

	if (!ok || name.size() > 127)
		throw UsageError("invalid table name \"" + name + "\": use an unquoted identifier, optionally schema-qualified");
}

uint64_t
clock_seed()
{
	/* Different on every run; printed, so that a run can be repeated with --seed. */
	std::random_device device;
	uint64_t seed = (static_cast<uint64_t>(device()) << 32) ^ device();

	seed ^= static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
	return seed % 1000000000000ULL; /* short enough to retype */
}

} // namespace

Options
parse_options(int argc, char **argv)
{
	Options options;
	bool seed_given = false;
	int c;

	opterr = 0; /* our own messages, one style */
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", long_options, nullptr)) != -1)
	{
		switch (c)
		{
			case opt_dsn:
				options.dsn = optarg;
				break;
			case opt_connections:
				options.connections = static_cast<int>(parse_integer("connections", optarg, 1, max_connections));
				break;
			case opt_ids:
				options.ids = parse_integer("ids", optarg, 1, max_total_ids);
				break;
			case opt_method:
				options.method = parse_method(optarg);
				break;
			case opt_mode:
				options.mode = parse_mode(optarg);
				break;
			case opt_per_connection:
				options.per_connection = parse_integer("per-connection", optarg, 1, max_total_ids);
				break;
			case opt_fetch:
				options.fetch = static_cast<int>(parse_integer("fetch", optarg, 1, max_fetch));
				break;
			case opt_rollback_ratio:
				options.rollback_ratio = parse_real("rollback-ratio", optarg, 0, 1);
				break;
			case opt_table:
				options.table = optarg;
				check_table_name(options.table);
				break;
			case opt_create_table:
				options.create_table = true;
				break;
			case opt_json:
				options.json = true;
				break;
			case opt_seed:
				options.seed = parse_seed(optarg);
				seed_given = true;
				break;
			case opt_duration_limit:
				options.duration_limit = parse_real("duration-limit", optarg, 0.001, max_duration);
				break;
			case 'h':
				options.help = true;
				return options;
			case ':':
				throw UsageError(std::string("option ") + argv[optind - 1] + " requires a value");
			default:
				throw UsageError(std::string("unrecognized option \"") + argv[optind - 1] + "\"");
		}
	}
	if (optind < argc)
		throw UsageError(std::string("unexpected argument \"") + argv[optind] + "\"");

	if (static_cast<int64_t>(options.connections) * options.ids > max_total_ids)
		throw UsageError("--connections times --ids must be at most " + std::to_string(max_total_ids) +
						 ": every ID is kept in memory for the uniqueness check");
	if (!seed_given)
		options.seed = clock_seed();
	return options;
}

void
print_help(FILE *out)
{
	std::fputs(
		"uidgen_load: load and uniqueness client for the uidgen extension.\n"
		"\n"
		"Opens N connections in parallel, one thread each, makes M IDs on each, and\n"
		"checks every ID received, committed or rolled back: it must be positive, fit\n"
		"the database's layout, be unique among all IDs of the run, and be greater than\n"
		"the previous ID of its session (backend).\n"
		"\n"
		"Usage:\n"
		"  uidgen_load [OPTION]...\n"
		"\n"
		"Connection:\n"
		"  --dsn=CONNINFO         libpq connection string or URI (default: empty, so the\n"
		"                         PGHOST, PGPORT, PGDATABASE, PGUSER... variables apply);\n"
		"                         meant for loopback or a Unix socket\n"
		"\n"
		"Load:\n"
		"  --connections=N        parallel connections, one thread each (default 8, at most 1000;\n"
		"                         mind the server's max_connections, plus one for the monitor)\n"
		"  --ids=M                IDs each connection makes (default 10000); N times M is\n"
		"                         at most 100000000\n"
		"  --method=METHOD        how a round trip gets its k IDs (default next):\n"
		"                           next    SELECT uid_next() FROM generate_series(1, k)\n"
		"                           batch   SELECT * FROM uid_next_batch(k)\n"
		"                           insert  INSERT INTO TABLE SELECT FROM generate_series(1, k)\n"
		"                                   RETURNING id\n"
		"                           mixed   next, batch and insert in turn\n"
		"  --mode=MODE            how connections and transactions are used (default steady):\n"
		"                           steady    one long-lived connection per thread\n"
		"                           churn     disconnect and reconnect after every\n"
		"                                     --per-connection IDs, so that backends register,\n"
		"                                     release and reuse worker IDs all the time\n"
		"                           rollback  every round trip in an explicit transaction, rolled\n"
		"                                     back with probability --rollback-ratio; IDs of\n"
		"                                     rolled-back transactions are checked too\n"
		"  --fetch=k              IDs per round trip (default 1000, at most 1000000)\n"
		"  --per-connection=k     churn: IDs per connection before reconnecting (default 100)\n"
		"  --rollback-ratio=P     rollback: probability of ROLLBACK, 0 to 1 (default 0.5)\n"
		"  --table=NAME           table of the insert and mixed methods (default uidgen_load),\n"
		"                         an unquoted, optionally schema-qualified name; its id column\n"
		"                         must be bigint PRIMARY KEY DEFAULT uid_next() and every other\n"
		"                         column must have a default or allow NULL\n"
		"  --create-table         create TABLE (id bigint PRIMARY KEY DEFAULT uid_next(),\n"
		"                         payload int) if it does not exist; rows of earlier runs stay,\n"
		"                         so the primary key also checks IDs against them\n"
		"  --seed=S               seed of the random choices: rollbacks and where each thread\n"
		"                         starts in the mixed rotation (default: new each run, printed)\n"
		"  --duration-limit=SECS  safety stop: cancel everything and fail after SECS seconds,\n"
		"                         connecting included (default 600)\n"
		"\n"
		"Output:\n"
		"  --json                 print one JSON line on stdout, and the human summary on stderr;\n"
		"                         keys: ids, seconds, ids_per_second, duplicates, non_positive,\n"
		"                         non_increasing, distinct_workers, peak_active_workers,\n"
		"                         connections, errors, committed_ids, rolled_back_ids, and more\n"
		"  -h, --help             show this help and exit\n"
		"\n"
		"Figures:\n"
		"  distinct_workers       worker IDs decoded from the IDs received, under the layout\n"
		"                         that uid_layout() reports\n"
		"  peak_active_workers    most sessions holding a worker at once, counted exactly by\n"
		"                         the client: from a session's first ID until it disconnects\n"
		"  peak_active_rows       most rows of uidgen.worker_node with status 'active', sampled\n"
		"                         every 100 ms; peak_live_rows: those whose pid is a\n"
		"                         running backend; registered_workers: rows at the end\n"
		"  committed_ids, rolled_back_ids\n"
		"                         IDs whose transaction committed or rolled back; both checked\n"
		"  connections            connections the load threads made (the monitor not counted)\n"
		"\n"
		"Exit status:\n"
		"  0  every check passed\n"
		"  1  a duplicate, a non-positive or out-of-layout ID, an ID not greater than the one\n"
		"     before it in its session, an SQL or connection error, or the duration limit or a\n"
		"     signal stopped the run\n"
		"  2  bad usage, or --table missing without --create-table\n",
		out);
}

const char *
method_name(Method method)
{
	switch (method)
	{
		case Method::Next:
			return "next";
		case Method::Batch:
			return "batch";
		case Method::Insert:
			return "insert";
		case Method::Mixed:
			return "mixed";
	}
	return "?";
}

const char *
mode_name(Mode mode)
{
	switch (mode)
	{
		case Mode::Steady:
			return "steady";
		case Mode::Churn:
			return "churn";
		case Mode::Rollback:
			return "rollback";
	}
	return "?";
}

bool
method_uses_table(Method method)
{
	return method == Method::Insert || method == Method::Mixed;
}

} // namespace uidgen_load
