/*
 * horizon.hpp
 *	  uid_safe_horizon()'s arithmetic: from clock readings to the highest ID
 *	  no open transaction can still commit (INV-22).
 *
 * Every generator issues, at a clock reading in unit t, an ID of unit t or
 * later, except the server-wide generator's chunk cache, which still issues a
 * word of unit t - 1 (shared_cursor.hpp, ChunkCache::take).  So every ID
 * issued at or after a clock reading of unix_ms is at or above
 * issue_floor(unix_ms): the ID that starts the unit before it.
 */
#pragma once

#include "core/layout.hpp"

#include <cstdint>
#include <optional>

namespace uidgen {

/* The lowest ID any generator may issue at a clock reading of unix_ms or later; 0 before the epoch. */
int64_t issue_floor(const Layout &layout, int64_t unix_ms);

/*
 * The safe horizon, from the clock read before the scan of open
 * transactions (now_ms) and the earliest clock reading any of them took
 * before its first ID (nullopt when none issued one): one below the lowest
 * ID any of them, or any transaction that starts issuing later, can hold.
 * -1 when that is the first ID of the layout.
 */
int64_t safe_horizon(const Layout &layout, int64_t now_ms, std::optional<int64_t> oldest_open_ms);

} // namespace uidgen
