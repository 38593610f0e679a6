/*
 * client.cpp
 *	  nemesis_client: one load client of the nemesis (docs/nemesis.md).
 *
 * It issues IDs through uid_next(), uid_next_batch() and INSERT ...
 * DEFAULT uid_next() in transactions of one to three statements, commits
 * half of them and rolls back the other half, until SIGTERM.  Unlike
 * uidgen_load it never stops at an error: a fault is what it is there to
 * meet.  It reconnects, and it writes down every ID it received, with what
 * became of its transaction, and every error, with its SQLSTATE, for the
 * nemesis' checker.  Lines of its output file:
 *
 *   C|R|U <id> <unix ms>       an ID of a committed, rolled back (or
 *                              aborted) transaction, or one whose COMMIT
 *                              got no answer (U: it may have committed)
 *   E <unix ms> <sqlstate> <message>
 *                              an error; sqlstate is "conn" when libpq
 *                              could not connect, "lost" when the
 *                              connection broke without one, "timeout" when
 *                              a statement took longer than --timeout
 *
 * A transaction's lines are written when it ends, and flushed, so that the
 * file always ends with whole transactions but perhaps a partial line.
 */
#include <libpq-fe.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <sys/select.h>
#include <unistd.h>
#include <vector>

namespace {

volatile std::sig_atomic_t stop_requested = 0;

extern "C" void
on_stop(int)
{
	stop_requested = 1;
}

int64_t
now_ms()
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

void
sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, nullptr);
}

struct Options
{
	std::string dsn;
	std::string out;
	uint64_t seed = 1;
	int pace_ms = 5;
	int timeout_s = 60;
	std::string table = "nemesis_t";
};

/* What one statement came to. */
enum class Outcome
{
	Ok,
	Error,	 /* an error with the connection still usable */
	Broken,	 /* the connection is gone */
	Timeout, /* no answer in time: the connection is dropped */
};

class Client
{
public:
	Client(const Options &options, FILE *out) : options_(options), out_(out), random_(options.seed) {}

	int run();

private:
	bool connect();
	Outcome exec(const std::string &sql, std::vector<std::string> *ids);
	void error(const char *sqlstate, const std::string &message);
	void end_transaction(char outcome, const std::vector<std::string> &ids);
	void drop();
	std::string statement();
	int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(random_); }

	const Options &options_;
	FILE *out_;
	std::mt19937_64 random_;
	PGconn *conn_ = nullptr;
};

void
Client::error(const char *sqlstate, const std::string &message)
{
	std::string line = message;

	for (char &c : line)
		if (c == '\n' || c == '\r')
			c = ' ';
	while (!line.empty() && line.back() == ' ')
		line.pop_back();
	std::fprintf(out_, "E %lld %s %s\n", static_cast<long long>(now_ms()), sqlstate, line.c_str());
	std::fflush(out_);
}

void
Client::end_transaction(char outcome, const std::vector<std::string> &ids)
{
	int64_t ms = now_ms();

	for (const std::string &id : ids)
		std::fprintf(out_, "%c %s %lld\n", outcome, id.c_str(), static_cast<long long>(ms));
	std::fflush(out_);
}

void
Client::drop()
{
	if (conn_)
		PQfinish(conn_);
	conn_ = nullptr;
}

bool
Client::connect()
{
	conn_ = PQconnectdb(options_.dsn.c_str());
	if (PQstatus(conn_) == CONNECTION_OK)
		return true;
	error("conn", PQerrorMessage(conn_));
	drop();
	return false;
}

/*
 * Sends sql and waits for its results at most --timeout; the IDs of its
 * rows (one column) go to ids.
 */
Outcome
Client::exec(const std::string &sql, std::vector<std::string> *ids)
{
	int64_t deadline = now_ms() + options_.timeout_s * 1000LL;
	Outcome outcome = Outcome::Ok;

	if (!PQsendQuery(conn_, sql.c_str()))
	{
		error("lost", PQerrorMessage(conn_));
		return Outcome::Broken;
	}
	for (;;)
	{
		while (PQisBusy(conn_))
		{
			int64_t left = deadline - now_ms();
			if (left <= 0)
			{
				error("timeout", "no answer to \"" + sql + "\" in " + std::to_string(options_.timeout_s) + " s");
				return Outcome::Timeout;
			}
			fd_set fds;
			int sock = PQsocket(conn_);
			if (sock < 0)
			{
				error("lost", PQerrorMessage(conn_));
				return Outcome::Broken;
			}
			FD_ZERO(&fds);
			FD_SET(sock, &fds);
			struct timeval tv = {0, 200000};
			if (select(sock + 1, &fds, nullptr, nullptr, &tv) < 0 && errno != EINTR)
				return Outcome::Broken;
			if (!PQconsumeInput(conn_))
			{
				error("lost", PQerrorMessage(conn_));
				return Outcome::Broken;
			}
		}
		PGresult *res = PQgetResult(conn_);
		if (!res)
			break;
		ExecStatusType status = PQresultStatus(res);
		if (status == PGRES_TUPLES_OK && ids)
		{
			for (int row = 0; row < PQntuples(res); row++)
				if (!PQgetisnull(res, row, 0))
					ids->push_back(PQgetvalue(res, row, 0));
		}
		else if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK)
		{
			const char *sqlstate = PQresultErrorField(res, PG_DIAG_SQLSTATE);
			error(sqlstate ? sqlstate : "lost", PQresultErrorMessage(res));
			outcome = sqlstate ? Outcome::Error : Outcome::Broken;
		}
		PQclear(res);
	}
	if (PQstatus(conn_) != CONNECTION_OK)
		return Outcome::Broken;
	return outcome;
}

/* One statement that returns IDs, in one of the three ways. */
std::string
Client::statement()
{
	switch (pick(0, 2))
	{
		case 0:
			return "SELECT uid_next() FROM generate_series(1, " + std::to_string(pick(1, 20)) + ")";
		case 1:
			return "SELECT uid_next_batch(" + std::to_string(pick(1, 50)) + ")";
		default:
			return "INSERT INTO " + options_.table + " (at) SELECT now() FROM generate_series(1, " +
				   std::to_string(pick(1, 20)) + ") RETURNING id";
	}
}

int
Client::run()
{
	while (!stop_requested)
	{
		if (!conn_ && !connect())
		{
			sleep_ms(200);
			continue;
		}
		std::vector<std::string> ids;
		Outcome outcome = exec("BEGIN", nullptr);
		int statements = pick(1, 3);
		for (int i = 0; i < statements && outcome == Outcome::Ok; i++)
			outcome = exec(statement(), &ids);
		if (outcome == Outcome::Ok)
		{
			bool commit = pick(0, 1) == 0;
			Outcome end = exec(commit ? "COMMIT" : "ROLLBACK", nullptr);
			/* A COMMIT without an answer may have committed. */
			end_transaction(end == Outcome::Ok ? (commit ? 'C' : 'R') : (commit ? 'U' : 'R'), ids);
			if (end != Outcome::Ok && end != Outcome::Error)
				drop();
		}
		else
		{
			/* The transaction failed before COMMIT was sent: it did not commit. */
			end_transaction('R', ids);
			if (outcome != Outcome::Error || exec("ROLLBACK", nullptr) != Outcome::Ok)
				drop();
			sleep_ms(100);
		}
		if (options_.pace_ms > 0)
			sleep_ms(options_.pace_ms);
	}
	drop();
	return 0;
}

void
usage()
{
	std::fprintf(stderr, "usage: nemesis_client --dsn DSN --out FILE [--seed N] [--pace-ms MS] "
						 "[--timeout S] [--table NAME]\n");
}

} // namespace

int
main(int argc, char **argv)
{
	Options options;

	for (int i = 1; i < argc; i++)
	{
		std::string arg = argv[i];
		if (i + 1 >= argc)
		{
			usage();
			return 2;
		}
		const char *value = argv[++i];
		if (arg == "--dsn")
			options.dsn = value;
		else if (arg == "--out")
			options.out = value;
		else if (arg == "--seed")
			options.seed = std::strtoull(value, nullptr, 10);
		else if (arg == "--pace-ms")
			options.pace_ms = std::atoi(value);
		else if (arg == "--timeout")
			options.timeout_s = std::atoi(value);
		else if (arg == "--table")
			options.table = value;
		else
		{
			usage();
			return 2;
		}
	}
	if (options.dsn.empty() || options.out.empty())
	{
		usage();
		return 2;
	}
	FILE *out = std::fopen(options.out.c_str(), "a");
	if (!out)
	{
		std::perror(options.out.c_str());
		return 1;
	}
	struct sigaction action = {};
	action.sa_handler = on_stop;
	sigemptyset(&action.sa_mask);
	sigaction(SIGTERM, &action, nullptr);
	sigaction(SIGINT, &action, nullptr);
	std::signal(SIGPIPE, SIG_IGN);

	Client client(options, out);
	int status = client.run();
	std::fclose(out);
	return status;
}
