/*
 * id_check.cpp
 *	  Per-session and whole-run checks of the IDs uidgen_load receives.
 */
#include "id_check.hpp"

#include <algorithm>

namespace uidgen_load {

namespace {

/* Enough examples to reproduce a problem; the counters say how many there were. */
constexpr size_t max_violations_kept = 10;
constexpr size_t max_duplicates_shown = 10;
constexpr size_t max_origins_shown = 10;

} // namespace

bool
Layout::fits(int64_t id) const
{
	int used = time_bits + worker_bits + seq_bits;

	if (id < 0)
		return false;
	return used >= 63 || (id >> used) == 0;
}

std::string
Layout::decode(int64_t id) const
{
	return "delta " + std::to_string(delta(id)) + ", worker " + std::to_string(worker(id)) + ", sequence " +
		   std::to_string(sequence(id));
}

IdLog::IdLog(int thread, const Layout &layout) : thread_(thread), layout_(layout)
{
}

void
IdLog::begin_session(int backend_pid)
{
	sessions_.push_back({ids_.size(), backend_pid});
	session_has_id_ = false;
	session_changed_worker_ = false;
}

void
IdLog::add(int64_t id)
{
	int64_t worker = layout_.worker(id);

	/* Every ID is kept, bad or not: a bad one may also be a duplicate. */
	ids_.push_back(id);

	if (id <= 0)
	{
		non_positive_++;
		violation("not positive", id);
	}
	else if (!layout_.fits(id))
	{
		out_of_layout_++;
		violation("bits set above the layout's time field", id);
	}

	if (session_has_id_ && id <= previous_)
	{
		non_increasing_++;
		violation("not greater than the session's previous ID", id);
	}

	/*
	 * A backend keeps its worker ID for life (INV-8), so a session
	 * normally adds one worker here; more is reported, not failed.
	 */
	if (!session_has_id_)
		workers_.push_back(worker);
	else if (worker != session_worker_)
	{
		workers_.push_back(worker);
		if (!session_changed_worker_)
			sessions_changing_worker_++;
		session_changed_worker_ = true;
	}
	session_worker_ = worker;
	previous_ = id;
	session_has_id_ = true;
}

void
IdLog::violation(const char *what, int64_t id)
{
	if (violations_.size() < max_violations_kept)
		violations_.push_back({what, id, previous_, session_has_id_, origin_of(ids_.size() - 1)});
}

Origin
IdLog::origin_of(size_t index) const
{
	/* The last session that started at or before index. */
	auto it = std::upper_bound(sessions_.begin(), sessions_.end(), index,
							   [](size_t i, const SessionStart &s) { return i < s.first_index; });

	if (it == sessions_.begin())
		return {thread_, 0, 0};
	--it;
	return {thread_, static_cast<int64_t>(it - sessions_.begin()) + 1, it->backend_pid};
}

UniquenessResult
check_uniqueness(const std::vector<const IdLog *> &logs)
{
	UniquenessResult result;
	std::vector<int64_t> all;
	std::vector<int64_t> workers;
	size_t total = 0;

	for (const IdLog *log : logs)
		total += log->ids().size();
	all.reserve(total);
	for (const IdLog *log : logs)
	{
		all.insert(all.end(), log->ids().begin(), log->ids().end());
		workers.insert(workers.end(), log->workers().begin(), log->workers().end());
	}
	result.ids = all.size();

	std::sort(all.begin(), all.end());
	for (size_t i = 1; i < all.size(); i++)
	{
		if (all[i] != all[i - 1])
			continue;
		result.duplicates++;
		/* Once per duplicated value, not once per extra copy. */
		if (result.examples.size() < max_duplicates_shown &&
			(result.examples.empty() || result.examples.back().id != all[i]))
			result.examples.push_back({all[i], 0, {}});
	}

	/* Only for the few examples: find where each copy came from. */
	for (Duplicate &dup : result.examples)
		for (const IdLog *log : logs)
			for (size_t i = 0; i < log->ids().size(); i++)
				if (log->ids()[i] == dup.id && dup.copies++ < max_origins_shown)
					dup.origins.push_back(log->origin_of(i));

	std::sort(workers.begin(), workers.end());
	result.distinct_workers = std::unique(workers.begin(), workers.end()) - workers.begin();
	return result;
}

} // namespace uidgen_load
