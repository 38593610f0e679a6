/*
 * support.hpp
 *	  Instants, helpers and names shared by the unit tests.
 */
#pragma once

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/generator.hpp"
#include "core/layout.hpp"
#include "core/reservation.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

namespace uidgen::test {

/* 2026-11-01 00:00:00 UTC: a whole second, well inside the default layout. */
constexpr int64_t kNow = INT64_C(1793491200000);
/* UidGenerator's hard-coded epoch: 2016-05-20 00:00 UTC+8 (DefaultUidGenerator's epochSeconds * 1000). */
constexpr int64_t kBaiduEpoch = INT64_C(1463673600000);
/* The default layout's epoch, 2026-01-01 00:00:00 UTC. */
constexpr int64_t kEpoch = Layout::default_epoch_ms;

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

/* Generator limits, for the cached generator's tests: how far it may borrow first. */
inline GeneratorLimits
limits(int64_t max_borrow_ms, int64_t max_backwards_wait_ms = 1000)
{
	GeneratorLimits l;
	l.max_borrow_ms = max_borrow_ms;
	l.max_backwards_wait_ms = max_backwards_wait_ms;
	return l;
}

/* Generator limits, for the default generator's tests: how long it may wait first. */
inline GeneratorLimits
wait_limits(int64_t max_backwards_wait_ms, int64_t max_borrow_ms = 10000)
{
	return limits(max_borrow_ms, max_backwards_wait_ms);
}

/* Runs f, which returns an ID, and returns the uidgen::Error of the given kind it must throw. */
template <typename F>
std::optional<Error>
expect_error(F &&f, ErrorKind kind)
{
	try
	{
		int64_t uid = f();
		ADD_FAILURE() << "expected a uidgen::Error, got uid " << uid;
	}
	catch (const Error &e)
	{
		EXPECT_EQ(e.kind(), kind) << e.what();
		return e;
	}
	return std::nullopt;
}

} // namespace uidgen::test

/* The names the tests use, declared once for all of them. */
using uidgen::Error;
using uidgen::ErrorKind;
using uidgen::Generator;
using uidgen::GeneratorKind;
using uidgen::GeneratorLimits;
using uidgen::Layout;
using uidgen::ManualClock;
using uidgen::TimeUnit;
using uidgen::UidFields;

using uidgen::test::any_time;
using uidgen::test::contains;
using uidgen::test::expect_error;
using uidgen::test::kBaiduEpoch;
using uidgen::test::kEpoch;
using uidgen::test::kNow;
using uidgen::test::limits;
using uidgen::test::wait_limits;
