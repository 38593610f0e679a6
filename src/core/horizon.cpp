/*
 * horizon.cpp
 *	  uid_safe_horizon()'s arithmetic.
 */
#include "core/horizon.hpp"

#include "core/cpp_only.hpp"

#include <algorithm>

namespace uidgen {

int64_t
issue_floor(const Layout &layout, int64_t unix_ms)
{
	int64_t delta = layout.delta_at(unix_ms) - 1;

	if (delta < 0)
		return 0;
	/* A clock beyond the layout's end issues nothing: every ID lies below it. */
	if (delta > layout.max_delta())
		return layout.max_uid();
	return layout.compose_unchecked(delta, 0, 0);
}

int64_t
safe_horizon(const Layout &layout, int64_t now_ms, std::optional<int64_t> oldest_open_ms)
{
	int64_t since = oldest_open_ms ? std::min(now_ms, *oldest_open_ms) : now_ms;

	return issue_floor(layout, since) - 1;
}

} // namespace uidgen
