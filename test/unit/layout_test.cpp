/*
 * layout_test.cpp
 *	  Unit tests of uidgen::Layout: validation, time units, composition,
 *	  decomposition and the time arithmetic behind uid_min/uid_max.
 *
 * The layout is where INV-2 of docs/design.md lives ("every ID is a
 * positive bigint whose fields decode exactly; an out-of-range field is an
 * error, never bits bleeding into a neighbour"), so most tests here try to
 * make a field bleed or a decode go wrong, over many layouts at once.
 */
#include "core/error.hpp"
#include "core/layout.hpp"

#include "support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <tuple>

namespace {

/* 2026-01-01 00:00:00 UTC, the default epoch. */
constexpr int64_t kDefaultEpoch = INT64_C(1767225600000);
/* 2020-01-01 00:00:00 UTC and 2024-11-21 00:00:00 UTC. */
constexpr int64_t k2020 = INT64_C(1577836800000);
constexpr int64_t k2024Nov21 = INT64_C(1732147200000);

/*
 * Runs f and returns the uidgen::Error it threw, failing the test when it
 * threw nothing.  Any other exception escapes and fails the test too, which
 * is what we want: the core promises to throw only uidgen::Error.
 */
std::optional<Error>
thrown_error(const std::function<void()> &f)
{
	try
	{
		f();
	}
	catch (const Error &e)
	{
		return e;
	}
	ADD_FAILURE() << "expected a uidgen::Error, but nothing was thrown";
	return std::nullopt;
}

/* A random valid shape: total bits in 3..63, split into three non-empty fields. */
Layout
random_layout(std::mt19937_64 &rng)
{
	int total = std::uniform_int_distribution<int>(3, Layout::usable_bits)(rng);
	int t = std::uniform_int_distribution<int>(1, total - 2)(rng);
	int w = std::uniform_int_distribution<int>(1, total - t - 1)(rng);
	int s = total - t - w;
	TimeUnit unit = (rng() & 1) ? TimeUnit::Millisecond : TimeUnit::Second;
	int64_t epoch = std::uniform_int_distribution<int64_t>(0, kDefaultEpoch)(rng);

	return Layout(t, w, s, epoch, unit);
}

/* A random field value in 0..max, with the edges (0, max) drawn often. */
int64_t
random_field(std::mt19937_64 &rng, int64_t max)
{
	switch (rng() % 8)
	{
		case 0:
			return 0;
		case 1:
			return max;
		default:
			return std::uniform_int_distribution<int64_t>(0, max)(rng);
	}
}

} // namespace

/* ---- validation of the shape ------------------------------------------- */

TEST(LayoutValidation, FieldWithoutBitsIsInvalidParameter)
{
	/* Each field in turn, with zero and a negative count. */
	struct Case
	{
		int t, w, s;
		const char *field;
		int bad;
	} cases[] = {
		{0, 13, 9, "time_bits", 0},		{41, 0, 9, "worker_bits", 0},	{41, 13, 0, "seq_bits", 0},
		{-1, 13, 9, "time_bits", -1},	{41, -5, 9, "worker_bits", -5}, {41, 13, -63, "seq_bits", -63},
		{INT_MIN, 1, 1, "time_bits", INT_MIN},
	};

	for (const Case &c : cases)
	{
		SCOPED_TRACE(std::to_string(c.t) + "/" + std::to_string(c.w) + "/" + std::to_string(c.s));
		auto e = thrown_error([&] { Layout(c.t, c.w, c.s, kDefaultEpoch, TimeUnit::Millisecond); });
		ASSERT_TRUE(e);
		EXPECT_EQ(e->kind(), ErrorKind::InvalidParameter);
		/* The message must name the offending field and the value given. */
		EXPECT_TRUE(contains(e->what(), c.field)) << e->what();
		EXPECT_TRUE(contains(e->what(), std::to_string(c.bad))) << e->what();
		EXPECT_TRUE(contains(e->what(), "at least 1")) << e->what();
	}
}

TEST(LayoutValidation, MoreThan63BitsIsInvalidParameter)
{
	struct Case
	{
		int t, w, s;
	} cases[] = {
		{41, 13, 10}, /* 64: one too many, the classic "forgot the sign bit" */
		{28, 22, 14}, /* UidGenerator's own default plus one */
		{61, 1, 2},	  {1, 61, 2}, {2, 1, 61}, {64, 1, 1}, {1, 64, 1}, {1, 1, 64},
		{INT_MAX, INT_MAX, INT_MAX}, /* must not overflow int while summing */
		{INT_MAX, 1, 1},
	};

	for (const Case &c : cases)
	{
		std::string shape = std::to_string(c.t) + "/" + std::to_string(c.w) + "/" + std::to_string(c.s);
		SCOPED_TRACE(shape);
		auto e = thrown_error([&] { Layout(c.t, c.w, c.s, kDefaultEpoch, TimeUnit::Second); });
		ASSERT_TRUE(e);
		EXPECT_EQ(e->kind(), ErrorKind::InvalidParameter);
		/* The user must see which layout was refused and why. */
		EXPECT_TRUE(contains(e->what(), shape)) << e->what();
		EXPECT_TRUE(contains(e->what(), "bigint")) << e->what();
		EXPECT_TRUE(contains(e->detail(), "63")) << e->detail();
		EXPECT_FALSE(e->hint().empty());
	}

	/* The sum is spelled out, so the user sees by how much it is over. */
	auto e = thrown_error([] { Layout(41, 13, 10, kDefaultEpoch, TimeUnit::Millisecond); });
	ASSERT_TRUE(e);
	EXPECT_TRUE(contains(e->detail(), "64")) << e->detail();
}

TEST(LayoutValidation, ExactlyFittingShapesAreAccepted)
{
	struct Case
	{
		int t, w, s;
	} cases[] = {{61, 1, 1}, {1, 61, 1}, {1, 1, 61}, {21, 21, 21}, {28, 22, 13}, {41, 10, 12}, {41, 13, 9},
				 {1, 1, 1},	 {31, 13, 9}};

	for (const Case &c : cases)
	{
		Layout l(c.t, c.w, c.s, kDefaultEpoch, TimeUnit::Millisecond);
		EXPECT_EQ(l.time_bits(), c.t);
		EXPECT_EQ(l.worker_bits(), c.w);
		EXPECT_EQ(l.seq_bits(), c.s);
		EXPECT_EQ(l.unused_bits(), 63 - c.t - c.w - c.s);
		EXPECT_EQ(l.max_delta(), (INT64_C(1) << c.t) - 1);
		EXPECT_EQ(l.max_worker(), (INT64_C(1) << c.w) - 1);
		EXPECT_EQ(l.max_sequence(), (INT64_C(1) << c.s) - 1);
		/* The largest UID is all used bits set, and never negative. */
		EXPECT_EQ(l.max_uid(), static_cast<int64_t>((UINT64_C(1) << (c.t + c.w + c.s)) - 1));
		EXPECT_GT(l.max_uid(), 0);
	}
}

/* ---- time units -------------------------------------------------------- */

TEST(LayoutTimeUnit, AcceptedNames)
{
	for (const char *name : {"millisecond", "milliseconds", "ms"})
		EXPECT_EQ(uidgen::parse_time_unit(name), TimeUnit::Millisecond) << name;
	for (const char *name : {"second", "seconds", "s"})
		EXPECT_EQ(uidgen::parse_time_unit(name), TimeUnit::Second) << name;

	EXPECT_STREQ(uidgen::time_unit_name(TimeUnit::Millisecond), "millisecond");
	EXPECT_STREQ(uidgen::time_unit_name(TimeUnit::Second), "second");
	EXPECT_EQ(uidgen::time_unit_ms(TimeUnit::Millisecond), 1);
	EXPECT_EQ(uidgen::time_unit_ms(TimeUnit::Second), 1000);

	/* The canonical name parses back to the same unit. */
	for (TimeUnit u : {TimeUnit::Millisecond, TimeUnit::Second})
		EXPECT_EQ(uidgen::parse_time_unit(uidgen::time_unit_name(u)), u);
}

/* A margin in milliseconds rounds up to whole units: a second-unit layout never cuts it short. */
TEST(LayoutTimeUnit, UnitsCoveringRoundUp)
{
	Layout ms(41, 13, 9, kDefaultEpoch, TimeUnit::Millisecond);
	Layout s(31, 22, 10, kDefaultEpoch, TimeUnit::Second);
	EXPECT_EQ(ms.units_covering(0), 0);
	EXPECT_EQ(ms.units_covering(2500), 2500);
	EXPECT_EQ(s.units_covering(0), 0);
	EXPECT_EQ(s.units_covering(1), 1);
	EXPECT_EQ(s.units_covering(1000), 1);
	EXPECT_EQ(s.units_covering(1001), 2);
	EXPECT_EQ(s.units_covering(2500), 3);
}

/* A margin that may be a unit short rounds down, but never to nothing: a raise always moves. */
TEST(LayoutTimeUnit, UnitsWithinRoundDown)
{
	Layout s(31, 22, 10, kDefaultEpoch, TimeUnit::Second);
	EXPECT_EQ(Layout::default_layout().units_within(5000), 5000);
	EXPECT_EQ(s.units_within(0), 1);
	EXPECT_EQ(s.units_within(999), 1);
	EXPECT_EQ(s.units_within(1999), 1);
	EXPECT_EQ(s.units_within(5500), 5);
}

TEST(LayoutTimeUnit, RejectedNames)
{
	for (const char *name : {"", "minute", "hour", "day", "microsecond", "us", "ns", "m", "x", "ms ", " s",
							 "millis", "secondss"})
	{
		SCOPED_TRACE(std::string("\"") + name + "\"");
		auto e = thrown_error([&] { uidgen::parse_time_unit(name); });
		ASSERT_TRUE(e);
		EXPECT_EQ(e->kind(), ErrorKind::InvalidParameter);
		/* Quote what was given, and list what would have worked. */
		EXPECT_TRUE(contains(e->what(), std::string("\"") + name + "\"")) << e->what();
		EXPECT_TRUE(contains(e->hint(), "millisecond")) << e->hint();
		EXPECT_TRUE(contains(e->hint(), "second")) << e->hint();
	}
}

/* ---- usability at configure time --------------------------------------- */

TEST(LayoutUsable, EpochInTheFutureIsRejected)
{
	Layout l = Layout::default_layout();

	auto e = thrown_error([&] { l.check_usable_at(kDefaultEpoch - 1); });
	ASSERT_TRUE(e);
	EXPECT_EQ(e->kind(), ErrorKind::InvalidParameter);
	EXPECT_TRUE(contains(e->what(), "future")) << e->what();
	EXPECT_TRUE(contains(e->what(), "2026-01-01 00:00:00 UTC")) << e->what();
	EXPECT_FALSE(e->hint().empty());

	/* The epoch itself is the first usable instant. */
	EXPECT_NO_THROW(l.check_usable_at(kDefaultEpoch));
	EXPECT_NO_THROW(l.check_usable_at(kDefaultEpoch + 1));
}

TEST(LayoutUsable, UidGeneratorDefaultRanOutIn2024)
{
	/* 28/22/13 seconds since 2016-05-20 00:00 UTC+8 (reference section 2). */
	Layout baidu(28, 22, 13, kBaiduEpoch, TimeUnit::Second);

	EXPECT_NO_THROW(baidu.check_usable_at(k2020));

	auto e = thrown_error([&] { baidu.check_usable_at(k2024Nov21); });
	ASSERT_TRUE(e);
	EXPECT_EQ(e->kind(), ErrorKind::InvalidParameter);
	EXPECT_TRUE(contains(e->what(), "exhausted")) << e->what();
	/* 2^28 s after the epoch: 2024-11-20 21:24:16 UTC+8. */
	EXPECT_TRUE(contains(e->detail(), "2024-11-20 13:24:16 UTC")) << e->detail();
	EXPECT_TRUE(contains(e->detail(), "28 bits")) << e->detail();
	EXPECT_FALSE(e->hint().empty());

	/* The boundary, to the millisecond: the last valid second is 2024-11-20 21:24:15 UTC+8. */
	int64_t end = kBaiduEpoch + (INT64_C(1) << 28) * 1000;
	ASSERT_EQ(baidu.exhausted_at(), std::optional<int64_t>(end));
	EXPECT_NO_THROW(baidu.check_usable_at(end - 1));
	EXPECT_THROW(baidu.check_usable_at(end), Error);
}

TEST(LayoutUsable, SingularBitInExhaustedDetail)
{
	/* 1 time bit: two units, so it is exhausted two milliseconds after its epoch. */
	Layout tiny(1, 1, 1, 1000, TimeUnit::Millisecond);

	EXPECT_NO_THROW(tiny.check_usable_at(1001));
	auto e = thrown_error([&] { tiny.check_usable_at(1002); });
	ASSERT_TRUE(e);
	EXPECT_TRUE(contains(e->detail(), "1 bit ")) << e->detail();
}

TEST(LayoutUsable, LayoutOutlastingInt64MillisecondsIsRefused)
{
	/*
	 * The generators need the start of every unit up to the one after the
	 * last, in int64 milliseconds; a layout whose time field outlasts that
	 * can be decoded (uid_parse) but not configured.
	 */
	Layout huge(61, 1, 1, 0, TimeUnit::Second);
	auto e = thrown_error([&] { huge.check_usable_at(INT64_C(253402300799000)); }); /* 9999-12-31 */
	ASSERT_TRUE(e);
	EXPECT_EQ(e->kind(), ErrorKind::InvalidParameter);
	EXPECT_TRUE(contains(e->what(), "61/1/1")) << e->what();
	EXPECT_FALSE(e->hint().empty());
	/* Decoding with it still works. */
	EXPECT_EQ(huge.decompose(INT64_MAX), (UidFields{huge.max_delta(), 1, 1}));

	/* The edge: 2^53 s * 1000 fits in int64, 2^54 s * 1000 does not. */
	EXPECT_NO_THROW(Layout(53, 5, 5, kDefaultEpoch, TimeUnit::Second).check_usable_at(k2024Nov21 + INT64_C(100000000000)));
	EXPECT_THROW(Layout(54, 4, 5, kDefaultEpoch, TimeUnit::Second).check_usable_at(k2024Nov21 + INT64_C(100000000000)),
				 Error);
	/* In milliseconds every valid time width fits. */
	EXPECT_NO_THROW(Layout(61, 1, 1, kDefaultEpoch, TimeUnit::Millisecond).check_usable_at(kDefaultEpoch));
}

/* ---- composition ------------------------------------------------------- */

TEST(LayoutCompose, RoundTripOverRandomLayouts)
{
	/*
	 * A property test: for thousands of random shapes (both units, every
	 * total up to 63 bits) and random in-range fields, compose() and
	 * decompose() are inverse, compose() agrees with compose_unchecked(), and
	 * the UID is within 0..max_uid().  The seed is fixed so that a failure
	 * reproduces.
	 */
	std::mt19937_64 rng(20260101);

	for (int i = 0; i < 5000; i++)
	{
		Layout l = random_layout(rng);
		SCOPED_TRACE(l.describe());

		for (int j = 0; j < 20; j++)
		{
			UidFields f{random_field(rng, l.max_delta()), random_field(rng, l.max_worker()),
						random_field(rng, l.max_sequence())};
			int64_t uid = l.compose(f.delta, f.worker, f.sequence);

			ASSERT_GE(uid, 0);
			ASSERT_LE(uid, l.max_uid());
			ASSERT_EQ(uid, l.compose_unchecked(f.delta, f.worker, f.sequence));
			ASSERT_EQ(l.decompose(uid), f) << "uid " << uid;
		}

		/* And the other way: any bigint the layout can hold decodes and re-encodes to itself. */
		for (int j = 0; j < 5; j++)
		{
			int64_t uid = std::uniform_int_distribution<int64_t>(0, l.max_uid())(rng);
			UidFields f = l.decompose(uid);
			ASSERT_EQ(l.compose(f.delta, f.worker, f.sequence), uid);
		}
	}
}

TEST(LayoutCompose, OrderOfUidsIsOrderOfFields)
{
	/*
	 * Per-backend strict increase (INV-3) relies on the UID order
	 * being the lexicographic order of (delta, worker, sequence).
	 */
	std::mt19937_64 rng(42);

	for (int i = 0; i < 2000; i++)
	{
		Layout l = random_layout(rng);
		UidFields a{random_field(rng, l.max_delta()), random_field(rng, l.max_worker()),
					random_field(rng, l.max_sequence())};
		UidFields b{random_field(rng, l.max_delta()), random_field(rng, l.max_worker()),
					random_field(rng, l.max_sequence())};
		bool fields_less = std::tie(a.delta, a.worker, a.sequence) < std::tie(b.delta, b.worker, b.sequence);
		int64_t ua = l.compose(a.delta, a.worker, a.sequence);
		int64_t ub = l.compose(b.delta, b.worker, b.sequence);

		ASSERT_EQ(fields_less, ua < ub) << l.describe();
	}
}

TEST(LayoutCompose, EachFieldAtItsMaximumStaysInItsField)
{
	std::mt19937_64 rng(7);

	for (int i = 0; i < 2000; i++)
	{
		Layout l = i == 0 ? Layout::default_layout() : random_layout(rng);
		SCOPED_TRACE(l.describe());

		UidFields d{l.max_delta(), 0, 0};
		UidFields w{0, l.max_worker(), 0};
		UidFields s{0, 0, l.max_sequence()};

		ASSERT_EQ(l.decompose(l.compose(d.delta, 0, 0)), d);
		ASSERT_EQ(l.decompose(l.compose(0, w.worker, 0)), w);
		ASSERT_EQ(l.decompose(l.compose(0, 0, s.sequence)), s);

		/* The three maxima occupy disjoint bits that together are max_uid(). */
		int64_t md = l.compose(d.delta, 0, 0), mw = l.compose(0, w.worker, 0), ms = l.compose(0, 0, s.sequence);
		ASSERT_EQ(md & mw, 0);
		ASSERT_EQ(md & ms, 0);
		ASSERT_EQ(mw & ms, 0);
		ASSERT_EQ(md | mw | ms, l.max_uid());
	}
}

TEST(LayoutCompose, OutOfRangeFieldsThrowInsteadOfBleeding)
{
	std::mt19937_64 rng(11);

	for (int i = 0; i < 2000; i++)
	{
		Layout l = i == 0 ? Layout(28, 22, 13, kBaiduEpoch, TimeUnit::Second) : random_layout(rng);
		SCOPED_TRACE(l.describe());

		struct Case
		{
			int64_t d, w, s;
		} cases[] = {
			{l.max_delta() + 1, 0, 0}, {0, l.max_worker() + 1, 0}, {0, 0, l.max_sequence() + 1},
			{-1, 0, 0},				   {0, -1, 0},				   {0, 0, -1},
			{INT64_MIN, 0, 0},		   {0, INT64_MAX, 0},		   {0, 0, INT64_MAX},
		};
		for (const Case &c : cases)
		{
			try
			{
				int64_t uid = l.compose(c.d, c.w, c.s);
				FAIL() << "compose(" << c.d << ", " << c.w << ", " << c.s << ") returned " << uid;
			}
			catch (const Error &e)
			{
				ASSERT_EQ(e.kind(), ErrorKind::OutOfRange);
			}
		}
	}

	/* The message names the field and value, the detail the allowed range. */
	Layout l = Layout::default_layout();
	auto e = thrown_error([&] { l.compose(0, 8192, 0); });
	ASSERT_TRUE(e);
	EXPECT_TRUE(contains(e->what(), "worker id 8192")) << e->what();
	EXPECT_TRUE(contains(e->detail(), "0 to 8191")) << e->detail();
	e = thrown_error([&] { l.compose(0, 0, 512); });
	ASSERT_TRUE(e);
	EXPECT_TRUE(contains(e->what(), "sequence 512")) << e->what();
	e = thrown_error([&] { l.compose(-1, 0, 0); });
	ASSERT_TRUE(e);
	EXPECT_TRUE(contains(e->what(), "-1")) << e->what();
}

/* ---- decomposition ----------------------------------------------------- */

TEST(LayoutDecompose, RejectsNegativeBigints)
{
	for (const Layout &l : {Layout::default_layout(), Layout(28, 22, 13, kBaiduEpoch, TimeUnit::Second),
							Layout(1, 1, 1, 0, TimeUnit::Millisecond)})
	{
		for (int64_t uid : {INT64_C(-1), INT64_MIN, INT64_C(-4096), INT64_MIN + 1})
		{
			auto e = thrown_error([&] { l.decompose(uid); });
			ASSERT_TRUE(e);
			EXPECT_EQ(e->kind(), ErrorKind::OutOfRange);
			EXPECT_TRUE(contains(e->what(), std::to_string(uid))) << e->what();
		}
	}
}

TEST(LayoutDecompose, RejectsUnusedBitsSet)
{
	std::mt19937_64 rng(99);
	int checked = 0;

	for (int i = 0; i < 800; i++)
	{
		Layout l = random_layout(rng);
		int used = l.time_bits() + l.worker_bits() + l.seq_bits();

		if (used == Layout::usable_bits)
			continue;
		checked++;
		SCOPED_TRACE(l.describe());

		/* Each unused bit alone, and each together with a valid UID. */
		for (int bit = used; bit < Layout::usable_bits; bit++)
		{
			int64_t stray = INT64_C(1) << bit;
			int64_t valid = std::uniform_int_distribution<int64_t>(0, l.max_uid())(rng);

			for (int64_t uid : {stray, stray | valid, l.max_uid() + 1, INT64_MAX})
			{
				try
				{
					UidFields f = l.decompose(uid);
					FAIL() << "decompose(" << uid << ") returned delta " << f.delta;
				}
				catch (const Error &e)
				{
					ASSERT_EQ(e.kind(), ErrorKind::OutOfRange);
				}
			}
		}
		/* The largest valid UID still decodes. */
		ASSERT_EQ(l.decompose(l.max_uid()), (UidFields{l.max_delta(), l.max_worker(), l.max_sequence()}));
	}
	EXPECT_GT(checked, 700);

	/* The message points at the layout; the hint at decoding with the right one. */
	Layout l(31, 13, 9, kDefaultEpoch, TimeUnit::Millisecond); /* 53 bits: safe for JavaScript */
	auto e = thrown_error([&] { l.decompose(INT64_C(1) << 53); });
	ASSERT_TRUE(e);
	EXPECT_TRUE(contains(e->what(), "31/13/9")) << e->what();
	EXPECT_TRUE(contains(e->detail(), "53")) << e->detail();
	EXPECT_FALSE(e->hint().empty());
}

TEST(LayoutDecompose, FullLayoutAcceptsEveryNonNegativeBigint)
{
	std::mt19937_64 rng(63);

	for (const Layout &l : {Layout(28, 22, 13, kBaiduEpoch, TimeUnit::Second), Layout(61, 1, 1, 0, TimeUnit::Second),
							Layout(1, 1, 61, 0, TimeUnit::Millisecond), Layout(21, 21, 21, 0, TimeUnit::Millisecond)})
	{
		SCOPED_TRACE(l.describe());
		EXPECT_EQ(l.max_uid(), INT64_MAX);
		for (int64_t uid : {INT64_C(0), INT64_C(1), INT64_MAX, INT64_MAX - 1, INT64_C(1) << 62})
		{
			UidFields f = l.decompose(uid);
			EXPECT_EQ(l.compose(f.delta, f.worker, f.sequence), uid);
		}
		for (int i = 0; i < 1000; i++)
		{
			int64_t uid = static_cast<int64_t>(rng() >> 1);
			UidFields f = l.decompose(uid);
			ASSERT_EQ(l.compose(f.delta, f.worker, f.sequence), uid);
		}
	}
}

/* ---- time arithmetic --------------------------------------------------- */

TEST(LayoutTime, DeltaAtRoundsDownInMilliseconds)
{
	Layout l = Layout::default_layout();

	EXPECT_EQ(l.delta_at(kDefaultEpoch), 0);
	EXPECT_EQ(l.delta_at(kDefaultEpoch + 1), 1);
	EXPECT_EQ(l.delta_at(kDefaultEpoch + 86400000), 86400000);
	EXPECT_EQ(l.delta_at(kDefaultEpoch - 1), -1);
	EXPECT_EQ(l.delta_at(kDefaultEpoch - 1000), -1000);
}

TEST(LayoutTime, DeltaAtRoundsDownInSeconds)
{
	Layout l(28, 22, 13, kBaiduEpoch, TimeUnit::Second);

	EXPECT_EQ(l.delta_at(kBaiduEpoch), 0);
	EXPECT_EQ(l.delta_at(kBaiduEpoch + 1), 0);
	EXPECT_EQ(l.delta_at(kBaiduEpoch + 999), 0);
	EXPECT_EQ(l.delta_at(kBaiduEpoch + 1000), 1);
	EXPECT_EQ(l.delta_at(kBaiduEpoch + 1999), 1);
	/* Before the epoch, rounding is towards minus infinity, not towards zero. */
	EXPECT_EQ(l.delta_at(kBaiduEpoch - 1), -1);
	EXPECT_EQ(l.delta_at(kBaiduEpoch - 999), -1);
	EXPECT_EQ(l.delta_at(kBaiduEpoch - 1000), -1);
	EXPECT_EQ(l.delta_at(kBaiduEpoch - 1001), -2);
	/* An epoch that is not on a whole second: units count from it, not from 1970. */
	Layout odd(30, 20, 13, 1500, TimeUnit::Second);
	EXPECT_EQ(odd.delta_at(2499), 0);
	EXPECT_EQ(odd.delta_at(2500), 1);
	EXPECT_EQ(odd.delta_at(499), -2);
	EXPECT_EQ(odd.delta_at(500), -1);
	EXPECT_EQ(odd.delta_at(0), -2);
}

TEST(LayoutTime, StartOfIsInverseOfDeltaAt)
{
	std::mt19937_64 rng(5);

	for (int i = 0; i < 5000; i++)
	{
		Layout l = random_layout(rng);
		int64_t d = std::uniform_int_distribution<int64_t>(-1000000, std::min<int64_t>(l.max_delta(), INT64_C(1) << 40))(rng);
		auto start = l.start_of(d);

		ASSERT_TRUE(start) << l.describe() << " delta " << d;
		ASSERT_EQ(*start, l.epoch_ms() + d * l.unit_ms());
		/* start is the first millisecond of d: the one before it belongs to d - 1. */
		ASSERT_EQ(l.delta_at(*start), d);
		ASSERT_EQ(l.delta_at(*start - 1), d - 1);
		ASSERT_EQ(l.delta_at(*start + l.unit_ms() - 1), d);
	}
}

TEST(LayoutTime, ExhaustedAtAndOverflow)
{
	/* Default layout: 2^41 ms after 2026-01-01, i.e. 2095-09-07 15:47:35.552 UTC. */
	Layout def = Layout::default_layout();
	ASSERT_TRUE(def.exhausted_at());
	EXPECT_EQ(*def.exhausted_at(), kDefaultEpoch + (INT64_C(1) << 41));
	EXPECT_EQ(*def.exhausted_at(), INT64_C(3966248855552));
	EXPECT_EQ(uidgen::format_utc(*def.exhausted_at()), "2095-09-07 15:47:35.552 UTC");

	/* Seconds multiply: 2^61 s does not fit in int64 milliseconds. */
	Layout huge(61, 1, 1, 0, TimeUnit::Second);
	EXPECT_EQ(huge.exhausted_at(), std::nullopt);
	EXPECT_EQ(huge.start_of(huge.max_delta()), std::nullopt);
	/* The last start that still fits: INT64_MAX / 1000 seconds. */
	EXPECT_EQ(huge.start_of(INT64_MAX / 1000), std::optional<int64_t>(INT64_MAX / 1000 * 1000));
	EXPECT_EQ(huge.start_of(INT64_MAX / 1000 + 1), std::nullopt);

	/* Overflow in the addition of the epoch, not just the multiplication. */
	Layout ms61(61, 1, 1, INT64_C(1) << 62, TimeUnit::Millisecond);
	EXPECT_EQ(ms61.start_of(INT64_C(1) << 61), std::optional<int64_t>((INT64_C(1) << 62) + (INT64_C(1) << 61)));
	Layout ms61b(61, 1, 1, INT64_MAX - 10, TimeUnit::Millisecond);
	EXPECT_EQ(ms61b.start_of(10), std::optional<int64_t>(INT64_MAX));
	EXPECT_EQ(ms61b.start_of(11), std::nullopt);
	EXPECT_EQ(ms61b.exhausted_at(), std::nullopt);

	/* A small seconds layout: 2^10 s after the epoch. */
	Layout small(10, 10, 10, 5000, TimeUnit::Second);
	EXPECT_EQ(small.exhausted_at(), std::optional<int64_t>(5000 + 1024 * 1000));
}

TEST(LayoutUidRange, MinAndMaxBoundExactlyOneUnit)
{
	std::mt19937_64 rng(17);

	for (int i = 0; i < 3000; i++)
	{
		Layout l = random_layout(rng);
		int64_t span_units = std::min<int64_t>(l.max_delta(), INT64_C(1) << 30);
		int64_t d = std::uniform_int_distribution<int64_t>(0, span_units)(rng);
		int64_t start = *l.start_of(d);
		int64_t within = start + std::uniform_int_distribution<int64_t>(0, l.unit_ms() - 1)(rng);
		SCOPED_TRACE(l.describe() + " delta " + std::to_string(d));

		int64_t lo = l.min_uid_at(within);
		int64_t hi = l.max_uid_at(within);

		/* Every millisecond of the unit gives the same bounds. */
		ASSERT_EQ(lo, l.min_uid_at(start));
		ASSERT_EQ(hi, l.max_uid_at(start + l.unit_ms() - 1));
		/* They are the first and last IDs of the unit... */
		ASSERT_EQ(lo, l.compose(d, 0, 0));
		ASSERT_EQ(hi, l.compose(d, l.max_worker(), l.max_sequence()));
		/* ... any ID of the unit is inside, and the neighbouring units' IDs are outside. */
		int64_t any = l.compose(d, random_field(rng, l.max_worker()), random_field(rng, l.max_sequence()));
		ASSERT_LE(lo, any);
		ASSERT_LE(any, hi);
		if (d > 0)
		{
			ASSERT_EQ(l.max_uid_at(start - 1), lo - 1);
		}
		if (d < l.max_delta())
		{
			ASSERT_EQ(l.min_uid_at(start + l.unit_ms()), hi + 1);
		}
	}
}

TEST(LayoutUidRange, OutsideTheLayoutThrows)
{
	Layout l = Layout::default_layout();

	for (int64_t t : {kDefaultEpoch - 1, INT64_C(0), *l.exhausted_at(), *l.exhausted_at() + 1000})
	{
		SCOPED_TRACE(t);
		auto e = thrown_error([&] { l.min_uid_at(t); });
		ASSERT_TRUE(e);
		EXPECT_EQ(e->kind(), ErrorKind::TimeOutOfRange);
		e = thrown_error([&] { l.max_uid_at(t); });
		ASSERT_TRUE(e);
		EXPECT_EQ(e->kind(), ErrorKind::TimeOutOfRange);
	}
	/* The messages say which side of the layout the time fell on. */
	auto e = thrown_error([&] { l.min_uid_at(kDefaultEpoch - 1); });
	ASSERT_TRUE(e);
	EXPECT_TRUE(contains(e->what(), "before")) << e->what();
	EXPECT_TRUE(contains(e->detail(), "2026-01-01 00:00:00 UTC")) << e->detail();
	e = thrown_error([&] { l.max_uid_at(*l.exhausted_at()); });
	ASSERT_TRUE(e);
	EXPECT_TRUE(contains(e->what(), "beyond")) << e->what();
	EXPECT_TRUE(contains(e->detail(), "2095-09-07")) << e->detail();

	/* The edges themselves are inside. */
	EXPECT_EQ(l.min_uid_at(kDefaultEpoch), 0);
	EXPECT_EQ(l.max_uid_at(*l.exhausted_at() - 1), l.max_uid());
}

/* ---- the default layout ------------------------------------------------ */

TEST(LayoutDefault, Figures)
{
	Layout l = Layout::default_layout();

	EXPECT_EQ(l.time_bits(), 41);
	EXPECT_EQ(l.worker_bits(), 13);
	EXPECT_EQ(l.seq_bits(), 9);
	EXPECT_EQ(l.unused_bits(), 0);
	EXPECT_EQ(l.epoch_ms(), kDefaultEpoch);
	EXPECT_EQ(l.unit(), TimeUnit::Millisecond);
	EXPECT_EQ(l.unit_ms(), 1);
	EXPECT_EQ(l.max_worker(), 8191);
	EXPECT_EQ(l.max_sequence() + 1, 512); /* IDs per millisecond per backend */
	EXPECT_EQ(l.max_delta(), (INT64_C(1) << 41) - 1);
	EXPECT_EQ(l, Layout(41, 13, 9, kDefaultEpoch, TimeUnit::Millisecond));

	/* "It lasts 69 years (to 2095)". */
	EXPECT_EQ(uidgen::format_utc(*l.exhausted_at()).substr(0, 4), "2095");
	double years = static_cast<double>(*l.exhausted_at() - kDefaultEpoch) / (365.25 * 86400000.0);
	EXPECT_GT(years, 69.0);
	EXPECT_LT(years, 70.0);
	EXPECT_NO_THROW(l.check_usable_at(INT64_C(3966248855551)));
	EXPECT_THROW(l.check_usable_at(INT64_C(3966248855552)), Error);

	EXPECT_EQ(l.describe().substr(0, 7), "41/13/9");
	EXPECT_TRUE(contains(l.describe(), "2026-01-01 00:00:00 UTC")) << l.describe();
}

TEST(LayoutDefault, EqualityComparesEveryPart)
{
	Layout l = Layout::default_layout();

	EXPECT_NE(l, Layout(40, 13, 9, kDefaultEpoch, TimeUnit::Millisecond));
	EXPECT_NE(l, Layout(41, 12, 9, kDefaultEpoch, TimeUnit::Millisecond));
	EXPECT_NE(l, Layout(41, 13, 8, kDefaultEpoch, TimeUnit::Millisecond));
	EXPECT_NE(l, Layout(41, 13, 9, kDefaultEpoch + 1, TimeUnit::Millisecond));
	EXPECT_NE(l, Layout(41, 13, 9, kDefaultEpoch, TimeUnit::Second));
}

TEST(LayoutFormat, FormatUtc)
{
	EXPECT_EQ(uidgen::format_utc(0), "1970-01-01 00:00:00 UTC");
	EXPECT_EQ(uidgen::format_utc(kDefaultEpoch), "2026-01-01 00:00:00 UTC");
	EXPECT_EQ(uidgen::format_utc(kDefaultEpoch + 7), "2026-01-01 00:00:00.007 UTC");
	/* Before 1970 the milliseconds must not come out negative. */
	EXPECT_EQ(uidgen::format_utc(-1), "1969-12-31 23:59:59.999 UTC");
	EXPECT_EQ(uidgen::format_utc(kBaiduEpoch), "2016-05-19 16:00:00 UTC");
}

/*
 * The reach of an install is an ID, and a later install (or a session's
 * next worker) starts above it under any layout: every ID of the unit after
 * unit_floor_above(x) is greater than x.
 */
TEST(LayoutReach, FloorAboveAnIdHoldsAcrossLayouts)
{
	const Layout layouts[] = {
		Layout::default_layout(),
		Layout(41, 13, 1, kDefaultEpoch, TimeUnit::Millisecond),
		Layout(31, 8, 14, kDefaultEpoch, TimeUnit::Second),
		Layout(40, 5, 8, kDefaultEpoch, TimeUnit::Millisecond),
		Layout(28, 22, 13, kBaiduEpoch, TimeUnit::Second),
	};
	std::mt19937_64 random(42);

	for (const Layout &from : layouts)
		for (const Layout &to : layouts)
			for (int i = 0; i < 2000; i++)
			{
				int64_t delta = static_cast<int64_t>(random() % static_cast<uint64_t>(from.max_delta() + 1));
				int64_t reach = from.max_uid_of_unit(delta);
				int64_t floor = to.unit_floor_above(reach);

				ASSERT_GE(reach, from.compose(delta, from.max_worker(), from.max_sequence()));
				if (floor + 1 > to.max_delta())
					continue; /* the later layout cannot issue above it: its time has run out */
				EXPECT_GT(to.compose(floor + 1, 0, 0), reach);
				/* And no lower than needed: the floor's own unit may hold IDs at or below it. */
				EXPECT_LE(to.compose(floor, 0, 0), reach);
			}
}

TEST(LayoutReach, EdgesOfTheReach)
{
	Layout l = Layout::default_layout();

	EXPECT_EQ(l.max_uid_of_unit(0), l.compose(0, l.max_worker(), l.max_sequence()));
	EXPECT_EQ(l.max_uid_of_unit(l.max_delta()), l.max_uid());
	EXPECT_EQ(l.unit_floor_above(-1), -1);
	EXPECT_EQ(l.unit_floor_above(0), 0);
	EXPECT_EQ(l.unit_floor_above(l.max_uid_of_unit(12345)), 12345);
	EXPECT_EQ(l.unit_floor_above(l.compose(12346, 0, 0)), 12346);
	EXPECT_EQ(l.unit_floor_above(l.max_uid()), l.max_delta());
}
