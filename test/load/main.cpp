/*
 * main.cpp
 *	  uidgen_load: the load and uniqueness client of the uidgen extension.
 *
 * It drives uid_next(), uid_next_batch() and DEFAULT uid_next() from many
 * connections at once, long-lived, churning or rolling back, and checks
 * what INV-1 to INV-3 of docs/design.md promise of every ID received: unique across the
 * run, positive and within the layout, and strictly increasing per backend.
 * The TAP tests run it with --json and read its one line of figures.
 *
 * Exit status: 0 when every check passed, 1 when one failed or an error
 * stopped the run, 2 on bad usage.
 */
#include <chrono>
#include <csignal>
#include <cstdio>
#include <vector>

#include "connection.hpp"
#include "database.hpp"
#include "id_check.hpp"
#include "modes.hpp"
#include "options.hpp"
#include "report.hpp"

using namespace uidgen_load;

namespace {

constexpr int exit_ok = 0;
constexpr int exit_failed = 1;
constexpr int exit_usage = 2;

volatile std::sig_atomic_t interrupt_requested = 0;

extern "C" void
on_interrupt(int)
{
	interrupt_requested = 1;
}

/*
 * Ctrl-C and kill stop the run like the duration limit does: queries are
 * cancelled, connections closed (so that backends release their workers
 * cleanly) and what was received is still checked and reported.
 */
void
catch_interrupts()
{
	struct sigaction action = {};

	action.sa_handler = on_interrupt;
	sigemptyset(&action.sa_mask);
	sigaction(SIGINT, &action, nullptr);
	sigaction(SIGTERM, &action, nullptr);
}

int
run(const Options &options, Clock::time_point started)
{
	Clock::time_point deadline =
		started + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.duration_limit));

	/* The setup connection stays open as the monitor: one connection more than --connections. */
	Connection setup(options.dsn);
	DatabaseInfo database = inspect_database(setup);

	if (method_uses_table(options.method) || options.create_table)
		prepare_table(setup, options, database);

	LoadOutcome outcome = run_load(options, database, setup, deadline, &interrupt_requested);

	std::vector<const IdLog *> logs;
	for (const ThreadResult &t : outcome.threads)
		logs.push_back(&t.log);
	UniquenessResult uniqueness = check_uniqueness(logs);
	Summary summary = summarize(options, outcome, uniqueness);

	print_findings(stderr, outcome, uniqueness, database.layout);
	/* With --json, stdout carries the JSON line alone, so that a test can decode all of it. */
	print_summary(options.json ? stderr : stdout, summary, options);
	if (options.json)
		print_json(stdout, summary);
	return summary.ok() ? exit_ok : exit_failed;
}

} // namespace

int
main(int argc, char **argv)
{
	Clock::time_point started = Clock::now();
	Options options;

	try
	{
		options = parse_options(argc, argv);
	}
	catch (const UsageError &error)
	{
		std::fprintf(stderr, "uidgen_load: %s\nTry \"uidgen_load --help\" for more information.\n", error.what());
		return exit_usage;
	}
	if (options.help)
	{
		print_help(stdout);
		return exit_ok;
	}
	if (!PQisthreadsafe())
	{
		std::fprintf(stderr, "uidgen_load: this libpq is not thread-safe\n");
		return exit_failed;
	}
	catch_interrupts();

	try
	{
		return run(options, started);
	}
	catch (const UsageError &error)
	{
		std::fprintf(stderr, "uidgen_load: %s\n", error.what());
		return exit_usage;
	}
	catch (const SqlError &error)
	{
		std::fprintf(stderr, "uidgen_load: %s\n", error.describe().c_str());
		return exit_failed;
	}
	catch (const std::exception &error)
	{
		std::fprintf(stderr, "uidgen_load: %s\n", error.what());
		return exit_failed;
	}
}
