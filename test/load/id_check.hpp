/*
 * id_check.hpp
 *	  The checks made on every ID received: positive, within the layout,
 *	  strictly increasing per session as it arrives, and unique over the
 *	  whole run at the end.
 */
#ifndef UIDGEN_LOAD_ID_CHECK_HPP
#define UIDGEN_LOAD_ID_CHECK_HPP

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace uidgen_load {

/* The database's layout, as uid_layout() reports it: enough to decode client-side. */
struct Layout
{
	int time_bits = 41;
	int worker_bits = 13;
	int seq_bits = 9;

	int64_t worker(int64_t id) const { return (id >> seq_bits) & ((INT64_C(1) << worker_bits) - 1); }
	int64_t sequence(int64_t id) const { return id & ((INT64_C(1) << seq_bits) - 1); }
	int64_t delta(int64_t id) const { return id >> (worker_bits + seq_bits); }

	/* Whether every bit above the time field (sign and unused bits) is zero. */
	bool fits(int64_t id) const;

	/* "delta D, worker W, sequence S" */
	std::string decode(int64_t id) const;
};

/* Where an ID came from: enough to find its backend in the server's log. */
struct Origin
{
	int thread;
	int64_t session; /* 1 for a thread's first connection, 2 for its next... */
	int backend_pid;
};

/* A per-session violation: an ID that is not positive, not in the layout, or not increasing. */
struct Violation
{
	std::string what;
	int64_t id;
	int64_t previous; /* the session's ID before it, if any */
	bool has_previous;
	Origin origin;
};

/* An ID received more than once, and from where (the first few copies). */
struct Duplicate
{
	int64_t id;
	uint64_t copies;
	std::vector<Origin> origins;
};

/* Everything one thread received, checked as it arrives. */
class IdLog
{
public:
	IdLog(int thread, const Layout &layout);

	void reserve(size_t count) { ids_.reserve(count); }

	/* Each connection is a new session: strict increase holds within one only. */
	void begin_session(int backend_pid);
	void add(int64_t id);

	const std::vector<int64_t> &ids() const { return ids_; }
	Origin origin_of(size_t index) const;

	uint64_t non_positive() const { return non_positive_; }
	uint64_t out_of_layout() const { return out_of_layout_; }
	uint64_t non_increasing() const { return non_increasing_; }
	uint64_t sessions_changing_worker() const { return sessions_changing_worker_; }

	/* The workers of each session, without repeats within a session. */
	const std::vector<int64_t> &workers() const { return workers_; }
	const std::vector<Violation> &violations() const { return violations_; }

private:
	struct SessionStart
	{
		size_t first_index;
		int backend_pid;
	};

	void violation(const char *what, int64_t id);

	int thread_;
	Layout layout_;
	std::vector<int64_t> ids_;
	std::vector<SessionStart> sessions_;
	bool session_has_id_ = false;
	int64_t previous_ = 0;
	int64_t session_worker_ = 0;
	bool session_changed_worker_ = false;
	uint64_t non_positive_ = 0;
	uint64_t out_of_layout_ = 0;
	uint64_t non_increasing_ = 0;
	uint64_t sessions_changing_worker_ = 0;
	std::vector<int64_t> workers_;
	std::vector<Violation> violations_;
};

struct UniquenessResult
{
	uint64_t ids = 0;
	uint64_t duplicates = 0; /* IDs received once more than the first time */
	int64_t distinct_workers = 0;
	std::vector<Duplicate> examples;
};

/* Sorts a copy of all IDs and compares neighbours: fast for millions. */
UniquenessResult check_uniqueness(const std::vector<const IdLog *> &logs);

} // namespace uidgen_load

#endif /* UIDGEN_LOAD_ID_CHECK_HPP */
