/*
 * bits_allocator_compat_test.cpp
 *	  Compatibility of uidgen::Layout with UidGenerator's BitsAllocator and
 *	  DefaultUidGenerator.parseUID, as in the Java sources.
 *
 * docs/design.md (the layout, INV-2) promises that IDs made by the Java library decode
 * here and vice versa when the same layout and epoch are given.  The Java
 * formulas are transcribed below in unsigned arithmetic (Java's << on long
 * wraps, and >>> is a logical shift), and compared with compose() and
 * decompose() on hand-computed values and on random in-range fields.
 */
#include "core/error.hpp"
#include "core/layout.hpp"

#include "support.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>

namespace {

/* Twitter Snowflake's epoch, 2010-11-04 01:42:54.657 UTC. */
constexpr int64_t kTwitterEpoch = INT64_C(1288834974657);

/* BitsAllocator, as in the Java source: TOTAL_BITS = 64, one sign bit. */
struct JavaBitsAllocator
{
	int timestampBits, workerIdBits, sequenceBits;

	int64_t maxDeltaSeconds() const { return static_cast<int64_t>(~(UINT64_MAX << timestampBits)); }
	int64_t maxWorkerId() const { return static_cast<int64_t>(~(UINT64_MAX << workerIdBits)); }
	int64_t maxSequence() const { return static_cast<int64_t>(~(UINT64_MAX << sequenceBits)); }
	int timestampShift() const { return workerIdBits + sequenceBits; }
	int workerIdShift() const { return sequenceBits; }

	/* allocate(): unmasked, exactly as Java computes it. */
	int64_t allocate(int64_t deltaSeconds, int64_t workerId, int64_t sequence) const
	{
		return static_cast<int64_t>((static_cast<uint64_t>(deltaSeconds) << timestampShift()) |
									(static_cast<uint64_t>(workerId) << workerIdShift()) |
									static_cast<uint64_t>(sequence));
	}

	/* DefaultUidGenerator.parseUID()'s three decoding lines. */
	UidFields parse(int64_t uid) const
	{
		const int totalBits = 64, signBits = 1;
		uint64_t u = static_cast<uint64_t>(uid);
		uint64_t sequence = (u << (totalBits - sequenceBits)) >> (totalBits - sequenceBits);
		uint64_t workerId = (u << (timestampBits + signBits)) >> (totalBits - workerIdBits);
		uint64_t deltaSeconds = u >> (workerIdBits + sequenceBits);

		return UidFields{static_cast<int64_t>(deltaSeconds), static_cast<int64_t>(workerId),
						 static_cast<int64_t>(sequence)};
	}
};

void
check_same_as_java(const Layout &l, const JavaBitsAllocator &java, uint64_t seed)
{
	std::mt19937_64 rng(seed);

	ASSERT_EQ(l.max_delta(), java.maxDeltaSeconds());
	ASSERT_EQ(l.max_worker(), java.maxWorkerId());
	ASSERT_EQ(l.max_sequence(), java.maxSequence());

	for (int i = 0; i < 100000; i++)
	{
		int64_t d = std::uniform_int_distribution<int64_t>(0, l.max_delta())(rng);
		int64_t w = std::uniform_int_distribution<int64_t>(0, l.max_worker())(rng);
		int64_t s = std::uniform_int_distribution<int64_t>(0, l.max_sequence())(rng);
		int64_t uid = l.compose(d, w, s);

		ASSERT_EQ(uid, java.allocate(d, w, s));
		/* A Java ID decodes the same both ways. */
		ASSERT_EQ(l.decompose(uid), java.parse(uid));
		ASSERT_EQ(l.decompose(uid), (UidFields{d, w, s}));
	}
}

} // namespace

TEST(BitsAllocatorCompat, UidGeneratorDefaultShiftsAndMaxima)
{
	Layout l(28, 22, 13, kBaiduEpoch, TimeUnit::Second);

	/* timestampShift = w + s = 35, workerIdShift = s = 13. */
	EXPECT_EQ(l.compose(1, 0, 0), INT64_C(1) << 35);
	EXPECT_EQ(l.compose(0, 1, 0), INT64_C(1) << 13);
	EXPECT_EQ(l.compose(0, 0, 1), 1);
	EXPECT_EQ(l.max_delta(), 268435455);
	EXPECT_EQ(l.max_worker(), 4194303);
	EXPECT_EQ(l.max_sequence(), 8191);
	EXPECT_EQ(l.unused_bits(), 0);
}

TEST(BitsAllocatorCompat, UidGeneratorDefaultHandComputedExamples)
{
	Layout l(28, 22, 13, kBaiduEpoch, TimeUnit::Second);

	/*
	 * The README's parseUID sample fields: 2017-01-19 12:15:46 (UTC+8),
	 * worker 4, sequence 9.  The delta is 2017-01-19 04:15:46 UTC minus
	 * 2016-05-19 16:00:00 UTC = 244 days 12:15:46 = 21125746 s, and
	 * 21125746 * 2^35 + 4 * 2^13 + 9 = 725875105388855305.
	 */
	EXPECT_EQ(l.compose(21125746, 4, 9), INT64_C(725875105388855305));
	EXPECT_EQ(l.decompose(INT64_C(725875105388855305)), (UidFields{21125746, 4, 9}));
	EXPECT_EQ(*l.start_of(21125746), INT64_C(1484799346000));
	EXPECT_EQ(uidgen::format_utc(*l.start_of(21125746)), "2017-01-19 04:15:46 UTC");

	/* 100000000 * 2^35 + 4 * 2^13 + 9, worked out by hand. */
	EXPECT_EQ(l.compose(100000000, 4, 9), INT64_C(3435973836800032777));

	/* The largest ID: every bit below the sign bit. */
	EXPECT_EQ(l.compose(268435455, 4194303, 8191), INT64_MAX);
}

TEST(BitsAllocatorCompat, UidGeneratorDefaultAgreesWithJavaFormulas)
{
	check_same_as_java(Layout(28, 22, 13, kBaiduEpoch, TimeUnit::Second), JavaBitsAllocator{28, 22, 13}, 1);
	/* The layouts of UidGenerator's tests and README. */
	check_same_as_java(Layout(29, 21, 13, kBaiduEpoch, TimeUnit::Second), JavaBitsAllocator{29, 21, 13}, 2);
	check_same_as_java(Layout(31, 23, 9, kBaiduEpoch, TimeUnit::Second), JavaBitsAllocator{31, 23, 9}, 3);
	check_same_as_java(Layout(30, 27, 6, kBaiduEpoch, TimeUnit::Second), JavaBitsAllocator{30, 27, 6}, 4);
}

TEST(BitsAllocatorCompat, TwitterSnowflake)
{
	Layout l(41, 10, 12, kTwitterEpoch, TimeUnit::Millisecond);

	EXPECT_EQ(l.compose(1, 0, 0), INT64_C(1) << 22);
	EXPECT_EQ(l.compose(0, 1, 0), INT64_C(1) << 12);
	EXPECT_EQ(l.max_worker(), 1023);
	EXPECT_EQ(l.max_sequence(), 4095);
	/* 1000000 * 2^22 + 5 * 2^12 + 7 = 4194304000000 + 20480 + 7. */
	EXPECT_EQ(l.compose(1000000, 5, 7), INT64_C(4194304020487));
	EXPECT_EQ(l.decompose(INT64_C(4194304020487)), (UidFields{1000000, 5, 7}));

	check_same_as_java(l, JavaBitsAllocator{41, 10, 12}, 5);
}

TEST(BitsAllocatorCompat, JavaBleedsWhereComposeRefuses)
{
	/*
	 * The reason compose() is strict (PR #52 upstream): in Java an
	 * oversized worker ID carries into the time bits and collides with
	 * another worker's ID of a later second.  compose() refuses instead.
	 */
	Layout l(28, 22, 13, kBaiduEpoch, TimeUnit::Second);
	JavaBitsAllocator java{28, 22, 13};

	EXPECT_EQ(java.allocate(1000, 4194304, 0), java.allocate(1001, 0, 0));
	EXPECT_THROW(l.compose(1000, 4194304, 0), Error);
	/* And an oversized sequence is ORed into the worker bits: worker 6 makes worker 7's ID. */
	EXPECT_EQ(java.allocate(1000, 6, 8192), java.allocate(1000, 7, 0));
	EXPECT_THROW(l.compose(1000, 6, 8192), Error);
	/* And an oversized delta sets the sign bit: Java's negative IDs (#29, #100). */
	EXPECT_LT(java.allocate(268435456, 0, 0), 0);
	try
	{
		l.compose(268435456, 0, 0);
		FAIL() << "compose accepted an exhausted delta";
	}
	catch (const Error &e)
	{
		EXPECT_EQ(e.kind(), ErrorKind::OutOfRange);
	}
}
