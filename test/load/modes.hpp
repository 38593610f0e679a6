/*
 * modes.hpp
 *	  The load itself: one thread per connection, getting IDs by the chosen
 *	  method in the chosen mode, while the main thread watches the worker
 *	  table, the duration limit and signals.
 */
#ifndef UIDGEN_LOAD_MODES_HPP
#define UIDGEN_LOAD_MODES_HPP

#include <csignal>
#include <chrono>
#include <cstdint>
#include <vector>

#include "connection.hpp"
#include "database.hpp"
#include "id_check.hpp"
#include "options.hpp"

namespace uidgen_load {

using Clock = std::chrono::steady_clock;

/* What one thread did. */
struct ThreadResult
{
	ThreadResult(int thread, const Layout &layout) : log(thread, layout) {}

	IdLog log;
	int64_t connections = 0;
	int64_t committed = 0;
	int64_t rolled_back = 0;
};

struct LoadOutcome
{
	std::vector<ThreadResult> threads;
	double seconds = 0;			/* from the start signal to the last thread's end */
	bool timed_out = false;		/* the duration limit stopped the run */
	bool interrupted = false;	/* a signal stopped it */
	uint64_t errors = 0;		/* unexpected SQL and connection errors */
	int64_t peak_active_workers = 0;  /* sessions holding a worker at once, counted exactly */
	int64_t peak_active_rows = 0;	  /* sampled: rows of uidgen.worker_node with status 'active' */
	int64_t peak_live_rows = 0;		  /* sampled: ... whose pid is a running backend */
	int64_t registered_workers = 0;	  /* rows of uidgen.worker_node at the end */
};

/*
 * Runs the load; monitor is a connection of its own for sampling the
 * worker table.  Stops early at deadline or once *interrupted is set (by a
 * signal handler).
 */
LoadOutcome run_load(const Options &options, const DatabaseInfo &database, Connection &monitor, Clock::time_point deadline,
					 const volatile std::sig_atomic_t *interrupted);

} // namespace uidgen_load

#endif /* UIDGEN_LOAD_MODES_HPP */
