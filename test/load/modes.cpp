/*
 * modes.cpp
 *	  Load threads for the steady, churn and rollback modes, and the main
 *	  thread's loop that starts them together, samples the worker table
 *	  and enforces the duration limit.
 *
 * Each thread owns one connection at a time and one IdLog, so the hot loop
 * shares nothing with other threads but the stop flag; the checks that need
 * all IDs run after every thread has ended.
 */
#include "modes.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>

namespace uidgen_load {

namespace {

/* How often the main thread samples the worker table and looks at the clock. */
constexpr auto tick = std::chrono::milliseconds(100);

/* Errors printed in full; later ones are only counted. */
constexpr uint64_t max_errors_printed = 20;

/* Counts unexpected errors from every thread and prints the first few. */
class ErrorLog
{
public:
	void report(const std::string &where, const SqlError &error)
	{
		std::lock_guard<std::mutex> lock(mutex_);

		count_++;
		if (count_ <= max_errors_printed)
			std::fprintf(stderr, "uidgen_load: %s: %s\n", where.c_str(), error.describe().c_str());
		else if (count_ == max_errors_printed + 1)
			std::fprintf(stderr, "uidgen_load: further errors are counted, not shown\n");
	}

	uint64_t count()
	{
		std::lock_guard<std::mutex> lock(mutex_);
		return count_;
	}

private:
	std::mutex mutex_;
	uint64_t count_ = 0;
};

/*
 * Lets the threads start together once they are ready (connected, in the
 * modes with long-lived connections), so that connecting is not timed
 * there; and wakes the main thread when the last one ends, so that the
 * time measured ends with the work.
 */
class StartGate
{
public:
	void arrive_and_wait()
	{
		std::unique_lock<std::mutex> lock(mutex_);

		ready_++;
		changed_.notify_all();
		changed_.wait(lock, [this] { return open_; });
	}

	void finish()
	{
		std::lock_guard<std::mutex> lock(mutex_);

		finished_++;
		changed_.notify_all();
	}

	void open()
	{
		std::lock_guard<std::mutex> lock(mutex_);

		open_ = true;
		changed_.notify_all();
	}

	/* Waits at most one tick; whether all n threads are ready. */
	bool wait_ready(int n)
	{
		std::unique_lock<std::mutex> lock(mutex_);
		return changed_.wait_for(lock, tick, [this, n] { return ready_ >= n; });
	}

	/* Waits at most one tick; whether all n threads have finished. */
	bool wait_finished(int n)
	{
		std::unique_lock<std::mutex> lock(mutex_);
		return changed_.wait_for(lock, tick, [this, n] { return finished_ >= n; });
	}

private:
	std::mutex mutex_;
	std::condition_variable changed_;
	int ready_ = 0;
	int finished_ = 0;
	bool open_ = false;
};

/* What the threads share. */
struct LoadContext
{
	LoadContext(const Options &o, const DatabaseInfo &d) : options(o), database(d) {}

	const Options &options;
	const DatabaseInfo &database;
	std::atomic<bool> stop{false};
	CancelGroup cancel;
	StartGate gate;
	ErrorLog errors;
	/* Sessions that hold a worker: from their first ID until they disconnect. */
	std::atomic<int> live_workers{0};
	std::atomic<int> peak_workers{0};
};

const Method rotation[] = {Method::Next, Method::Batch, Method::Insert};
constexpr int rotation_length = sizeof(rotation) / sizeof(rotation[0]);

class LoadThread
{
public:
	LoadThread(LoadContext &ctx, ThreadResult &result, int thread)
		: ctx_(ctx), options_(ctx.options), result_(result), thread_(thread),
		  /* Distinct streams per thread from one seed, so that a run can be repeated. */
		  rng_(ctx.options.seed ^ (0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(thread + 1))),
		  next_in_rotation_(static_cast<int>(rng_() % rotation_length))
	{
	}

	void run();

private:
	bool connect();
	void disconnect();
	int64_t round_trip(int64_t count);
	void got_worker();
	Method choose_method();
	const std::string &statement(Method method);
	void report(const SqlError &error);

	LoadContext &ctx_;
	const Options &options_;
	ThreadResult &result_;
	int thread_;
	std::mt19937_64 rng_;
	int next_in_rotation_;
	std::unique_ptr<Connection> conn_;
	int64_t session_number_ = 0;
	int session_pid_ = 0; /* kept: libpq forgets it when the backend dies */
	int64_t session_ids_ = 0;
	bool holds_worker_ = false;
	bool prepared_[rotation_length] = {};
	std::string statement_names_[rotation_length] = {"uidgen_load_next", "uidgen_load_batch", "uidgen_load_insert"};
};

void
LoadThread::run()
{
	bool ok = true;
	int64_t made = 0;
	int64_t quota = options_.mode == Mode::Churn ? options_.per_connection : options_.ids;

	/* Churn connects inside the timed loop: its connections are the load. */
	if (options_.mode != Mode::Churn)
		ok = connect();
	ctx_.gate.arrive_and_wait();
	result_.log.reserve(static_cast<size_t>(options_.ids));

	while (ok && made < options_.ids && !ctx_.stop.load(std::memory_order_relaxed))
	{
		int64_t count;

		if (!conn_ && !(ok = connect()))
			break;
		count = std::min<int64_t>({options_.fetch, options_.ids - made, quota - session_ids_});
		try
		{
			made += round_trip(count);
		}
		catch (const SqlError &error)
		{
			report(error);
			ok = false; /* a session in an unknown state is not worth going on with */
		}
		if (options_.mode == Mode::Churn && session_ids_ >= quota)
			disconnect();
	}
	disconnect();
}

bool
LoadThread::connect()
{
	if (ctx_.stop.load())
		return false;
	try
	{
		conn_ = std::make_unique<Connection>(options_.dsn, &ctx_.cancel);
	}
	catch (const SqlError &error)
	{
		session_number_++; /* so that the message names the attempt */
		report(error);
		return false;
	}
	session_number_++;
	session_pid_ = conn_->backend_pid();
	session_ids_ = 0;
	std::fill(std::begin(prepared_), std::end(prepared_), false);
	result_.connections++;
	result_.log.begin_session(session_pid_);
	return true;
}

void
LoadThread::disconnect()
{
	if (!conn_)
		return;
	if (holds_worker_)
		ctx_.live_workers--;
	holds_worker_ = false;
	conn_.reset();
}

/*
 * A backend registers a worker with its first ID and keeps it until it
 * exits; counting here is exact where sampling the worker table is not.
 */
void
LoadThread::got_worker()
{
	int live = ++ctx_.live_workers;
	int peak = ctx_.peak_workers.load();

	holds_worker_ = true;
	while (live > peak && !ctx_.peak_workers.compare_exchange_weak(peak, live))
		;
}

Method
LoadThread::choose_method()
{
	Method method;

	if (options_.method != Method::Mixed)
		return options_.method;
	method = rotation[next_in_rotation_];
	next_in_rotation_ = (next_in_rotation_ + 1) % rotation_length;
	return method;
}

/* The method's prepared statement in this session, prepared on first use. */
const std::string &
LoadThread::statement(Method method)
{
	int i = static_cast<int>(std::find(std::begin(rotation), std::end(rotation), method) - std::begin(rotation));

	if (!prepared_[i])
	{
		conn_->prepare(statement_names_[i], method_statement(method, options_, ctx_.database));
		prepared_[i] = true;
	}
	return statement_names_[i];
}

/*
 * One round trip's worth of IDs (three round trips in rollback mode:
 * BEGIN, the statement, COMMIT or ROLLBACK).  Every ID received goes into
 * the log, whatever happens to its transaction.
 */
int64_t
LoadThread::round_trip(int64_t count)
{
	Method method = choose_method();
	bool explicit_transaction = options_.mode == Mode::Rollback;
	bool roll_back = false;
	int64_t received = 0;

	if (explicit_transaction)
		roll_back = std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < options_.rollback_ratio;
	try
	{
		if (explicit_transaction)
			conn_->exec("BEGIN");

		const std::string &name = statement(method);
		Result res = conn_->exec_prepared(name, count);

		if (res.rows() > 0 && !holds_worker_)
			got_worker();
		for (int row = 0; row < res.rows(); row++)
		{
			result_.log.add(res.int8(row, 0));
			received++;
			session_ids_++;
		}
		if (received != count)
			throw SqlError(std::string("asked ") + method_name(method) + " for " + std::to_string(count) +
						   " IDs and received " + std::to_string(received));

		if (explicit_transaction)
			conn_->exec(roll_back ? "ROLLBACK" : "COMMIT");
	}
	catch (...)
	{
		/* Outside an explicit transaction, rows that arrived were committed. */
		(explicit_transaction ? result_.rolled_back : result_.committed) += received;
		throw;
	}
	(roll_back ? result_.rolled_back : result_.committed) += received;
	return received;
}

void
LoadThread::report(const SqlError &error)
{
	/* Our own cancellation at the duration limit or a signal is not an error of the extension. */
	if (ctx_.stop.load() && error.is_query_canceled())
		return;

	std::string where = "thread " + std::to_string(thread_) + ", session " + std::to_string(session_number_);
	if (conn_)
		where += " (backend pid " + std::to_string(session_pid_) + ")";
	ctx_.errors.report(where, error);
}

/* The main thread's part: worker table samples, and the stop conditions. */
class Watcher
{
public:
	Watcher(LoadContext &ctx, LoadOutcome &outcome, Connection &monitor, Clock::time_point deadline,
			const volatile std::sig_atomic_t *interrupted)
		: ctx_(ctx), outcome_(outcome), monitor_(monitor), deadline_(deadline), interrupted_(interrupted)
	{
	}

	void tick()
	{
		sample();
		if (ctx_.stop.load())
			return;
		if (*interrupted_)
			outcome_.interrupted = true;
		else if (Clock::now() >= deadline_)
			outcome_.timed_out = true;
		else
			return;
		ctx_.stop = true;
		ctx_.cancel.cancel_all();
	}

	void sample()
	{
		if (monitor_failed_)
			return;
		try
		{
			WorkerSample s = sample_workers(monitor_);

			outcome_.peak_active_rows = std::max(outcome_.peak_active_rows, s.active);
			outcome_.peak_live_rows = std::max(outcome_.peak_live_rows, s.live);
			outcome_.registered_workers = s.total;
		}
		catch (const SqlError &error)
		{
			/* One error is enough to know the figures are incomplete. */
			ctx_.errors.report("monitor", error);
			monitor_failed_ = true;
		}
	}

private:
	LoadContext &ctx_;
	LoadOutcome &outcome_;
	Connection &monitor_;
	Clock::time_point deadline_;
	const volatile std::sig_atomic_t *interrupted_;
	bool monitor_failed_ = false;
};

} // namespace

LoadOutcome
run_load(const Options &options, const DatabaseInfo &database, Connection &monitor, Clock::time_point deadline,
		 const volatile std::sig_atomic_t *interrupted)
{
	LoadOutcome outcome;
	LoadContext ctx(options, database);
	Watcher watcher(ctx, outcome, monitor, deadline, interrupted);
	std::vector<std::thread> threads;
	Clock::time_point start;
	int n = options.connections;

	/* All results exist before any thread starts: the vector must not move under them. */
	outcome.threads.reserve(static_cast<size_t>(n));
	for (int i = 0; i < n; i++)
		outcome.threads.emplace_back(i, database.layout);

	try
	{
		for (int i = 0; i < n; i++)
			threads.emplace_back([&ctx, &outcome, i] {
				try
				{
					LoadThread(ctx, outcome.threads[static_cast<size_t>(i)], i).run();
				}
				catch (const std::exception &e)
				{
					/* Out of memory and the like: a failed run, not a crash without a report. */
					ctx.errors.report("thread " + std::to_string(i), SqlError(e.what(), {}, "FATAL"));
				}
				ctx.gate.finish();
			});
	}
	catch (...)
	{
		/* Could not start every thread: let those that did end, then give up. */
		ctx.stop = true;
		ctx.gate.open();
		for (std::thread &t : threads)
			t.join();
		throw;
	}

	while (!ctx.gate.wait_ready(n) && !ctx.stop.load())
		watcher.tick();
	start = Clock::now();
	ctx.gate.open();

	while (!ctx.gate.wait_finished(n))
		watcher.tick();
	outcome.seconds = std::chrono::duration<double>(Clock::now() - start).count();
	for (std::thread &t : threads)
		t.join();

	watcher.sample();
	outcome.errors = ctx.errors.count();
	outcome.peak_active_workers = ctx.peak_workers.load();
	return outcome;
}

} // namespace uidgen_load
