/*
 * support.hpp
 *	  Instants and helpers shared by the unit tests.
 */
#pragma once

#include "core/layout.hpp"
#include "core/reservation.hpp"

#include <cstdint>
#include <string>

namespace uidgen::test {

/* 2026-11-01 00:00:00 UTC: a whole second, well inside the default layout. */
constexpr int64_t kNow = INT64_C(1793491200000);
/* UidGenerator's hard-coded epoch: 2016-05-20 00:00 UTC+8 (DefaultUidGenerator's epochSeconds * 1000). */
constexpr int64_t kBaiduEpoch = INT64_C(1463673600000);

/* A reservation that covers whatever it is asked: for tests not about reservations. */
inline ManualReservation &
any_time()
{
	static ManualReservation reservation;
	return reservation;
}

inline bool
contains(const std::string &haystack, const std::string &needle)
{
	return haystack.find(needle) != std::string::npos;
}

} // namespace uidgen::test
