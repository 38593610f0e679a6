/*
 * raise_policy.cpp
 *	  How far the keeper raises its database's reservation (raise_policy.hpp).
 */
#include "core/raise_policy.hpp"

#include "core/cpp_only.hpp"

#include <algorithm>

namespace uidgen {

int64_t
raise_needed(int64_t now, int64_t cursor, int64_t wanted_until, int64_t borrow_units, int64_t ahead_units)
{
	int64_t wanted = std::min(wanted_until, now + borrow_units);

	return std::max({now, cursor, wanted}) + ahead_units;
}

int64_t
raise_target(int64_t needed, const CoveredWorker &cursor, const CoveredWorker *privates, int count)
{
	int64_t target = -1;
	auto consider = [needed, &target](const CoveredWorker &w) {
		if (w.cap && w.reserved_until < std::min(needed, *w.cap))
			target = std::max(target, std::min(needed, *w.cap));
	};

	consider(cursor);
	for (int i = 0; i < count; i++)
		consider(privates[i]);
	return target;
}

} // namespace uidgen
