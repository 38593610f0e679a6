/*
 * id_span_test.cpp
 *	  Unit tests of ids_in_span() (src/core/id_span.hpp), the arithmetic of
 *	  uid_interval(): exact widths, their alignment with min_uid_at(), and
 *	  the spans it refuses.
 */
#include "core/error.hpp"
#include "core/id_span.hpp"
#include "core/layout.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace {

using namespace uidgen;

constexpr int64_t kDayUs = INT64_C(86400000000);
constexpr int64_t kDayMs = INT64_C(86400000);

std::optional<Error>
span_error(const Layout &layout, int64_t months, int64_t days, int64_t us)
{
	try
	{
		int64_t ids = ids_in_span(layout, months, days, us);

		ADD_FAILURE() << "the span was accepted as " << ids << " IDs";
	}
	catch (const Error &e)
	{
		return e;
	}
	return std::nullopt;
}

TEST(IdSpan, DefaultLayoutDay)
{
	Layout layout = Layout::default_layout();

	/* 86,400,000 milliseconds, each 2^22 IDs. */
	EXPECT_EQ(ids_in_span(layout, 0, 1, 0), kDayMs << 22);
	/* A day is 24 hours whichever way the interval holds it. */
	EXPECT_EQ(ids_in_span(layout, 0, 0, kDayUs), kDayMs << 22);
	EXPECT_EQ(ids_in_span(layout, 0, 2, -kDayUs), kDayMs << 22);
	EXPECT_EQ(ids_in_span(layout, 0, 0, 1000), INT64_C(1) << 22);
	EXPECT_EQ(ids_in_span(layout, 0, 7, 0), 7 * (kDayMs << 22));
}

TEST(IdSpan, SecondsLayout)
{
	Layout layout(30, 20, 13, Layout::default_epoch_ms, TimeUnit::Second);

	EXPECT_EQ(ids_in_span(layout, 0, 1, 0), INT64_C(86400) << 33);
	EXPECT_EQ(ids_in_span(layout, 0, 0, 1000000), INT64_C(1) << 33);
	std::optional<Error> e = span_error(layout, 0, 0, 1500000);
	ASSERT_TRUE(e);
	EXPECT_EQ(e->kind(), ErrorKind::InvalidParameter);
	EXPECT_EQ(std::string(e->what()), "interval must be a whole number of seconds");
}

/* Day partitions from 0 are the layout's days: uid_min of each midnight UTC is a multiple. */
TEST(IdSpan, DaysAlignWithMinUidWhenTheEpochIsMidnight)
{
	Layout layout = Layout::default_layout();
	int64_t day = ids_in_span(layout, 0, 1, 0);

	for (int64_t d = 0; d < 400; d++)
	{
		int64_t midnight = Layout::default_epoch_ms + d * kDayMs;

		EXPECT_EQ(layout.min_uid_at(midnight) % day, 0) << d;
		EXPECT_EQ(layout.min_uid_at(midnight), d * day);
		/* The day's last ID is just below the next partition. */
		EXPECT_EQ(layout.max_uid_at(midnight + kDayMs - 1), (d + 1) * day - 1);
	}

	/* An epoch at 06:00 UTC: partitions from 0 run from 06:00 to 06:00. */
	Layout six(41, 13, 9, Layout::default_epoch_ms + 6 * 3600 * 1000, TimeUnit::Millisecond);
	EXPECT_EQ(six.min_uid_at(Layout::default_epoch_ms + 30 * kDayMs) % day, (18 * INT64_C(3600000)) << 22);
	EXPECT_EQ(six.min_uid_at(Layout::default_epoch_ms + 30 * kDayMs + 6 * 3600 * 1000) % day, 0);
}

TEST(IdSpan, Refusals)
{
	Layout layout = Layout::default_layout();
	struct Case
	{
		int64_t months, days, us;
		ErrorKind kind;
		const char *message;
	} cases[] = {
		{1, 0, 0, ErrorKind::InvalidParameter, "interval must not contain months or years"},
		{12, 0, 0, ErrorKind::InvalidParameter, "interval must not contain months or years"},
		{-1, 31, 0, ErrorKind::InvalidParameter, "interval must not contain months or years"},
		{0, 0, 0, ErrorKind::InvalidParameter, "interval must be positive"},
		{0, -1, 0, ErrorKind::InvalidParameter, "interval must be positive"},
		{0, 1, -kDayUs, ErrorKind::InvalidParameter, "interval must be positive"},
		{0, 0, 1500, ErrorKind::InvalidParameter, "interval must be a whole number of milliseconds"},
		{0, 1, 1, ErrorKind::InvalidParameter, "interval must be a whole number of milliseconds"},
		{0, INT32_MAX, INT64_MAX, ErrorKind::TimeOutOfRange, "interval is out of range"},
		/* 2^41 milliseconds is about 25,451 days. */
		{0, 25452, 0, ErrorKind::TimeOutOfRange, "interval is longer than the layout's time field"},
	};

	for (const Case &c : cases)
	{
		std::optional<Error> e = span_error(layout, c.months, c.days, c.us);

		ASSERT_TRUE(e);
		EXPECT_EQ(e->kind(), c.kind) << c.message;
		EXPECT_EQ(std::string(e->what()), c.message);
	}
	/* The whole time field but its last unit still fits. */
	EXPECT_EQ(ids_in_span(layout, 0, 0, layout.max_delta() * 1000), layout.max_delta() << 22);
	/* And in a 63-bit layout too, without overflow. */
	Layout full(41, 13, 9, 0, TimeUnit::Millisecond);
	EXPECT_EQ(ids_in_span(full, 0, 0, full.max_delta() * 1000), full.max_uid() - ((INT64_C(1) << 22) - 1));
}

} // namespace
