/*
 * uuid_form_test.cpp
 *	  Unit tests of UIDs as UUIDv7-shaped UUIDs (src/core/uuid_form.hpp):
 *	  the fields, the edges of every kind of layout, round trip, order, and
 *	  what reading refuses.
 */
#include "core/error.hpp"
#include "core/layout.hpp"
#include "core/uuid_form.hpp"
#include "support.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace {

using uidgen::uid_to_uuid;
using uidgen::uuid_to_uid;
using uidgen::UuidBytes;

/* The UUID's first (offset 0) or second (offset 8) eight bytes, as a number. */
uint64_t
word_at(const UuidBytes &u, int offset)
{
	uint64_t v = 0;
	for (int i = offset; i < offset + 8; i++)
		v = (v << 8) | u.bytes[i];
	return v;
}

uint64_t
high_of(const UuidBytes &u)
{
	return word_at(u, 0);
}

uint64_t
low_of(const UuidBytes &u)
{
	return word_at(u, 8);
}

/* The UUID field that UUIDv7 readers take for the time. */
int64_t
time_field(const UuidBytes &u)
{
	return static_cast<int64_t>(high_of(u) >> 16);
}

/* Every layout kind: the default, Baidu's seconds, a JavaScript-safe one, a full 63-bit one, small units. */
std::vector<Layout>
layouts()
{
	return {Layout::default_layout(),
			Layout(28, 22, 13, uidgen::test::kBaiduEpoch, TimeUnit::Second),
			Layout(41, 4, 8, Layout::default_epoch_ms, TimeUnit::Millisecond), /* 53 bits */
			Layout(31, 10, 12, Layout::default_epoch_ms, TimeUnit::Second),
			Layout(40, 10, 13, 0, TimeUnit::Millisecond)};
}

void
expect_round_trip(const Layout &l, int64_t uid)
{
	UuidBytes u = uid_to_uuid(l, uid);
	UidFields f = l.decompose(uid);

	EXPECT_EQ((high_of(u) >> 12) & 0xF, 7u) << uid;
	EXPECT_EQ(low_of(u) >> 62, 2u) << uid;
	EXPECT_EQ((high_of(u) >> 1) & 0x7FF, uidgen::uuid_tag) << uid;
	EXPECT_EQ(time_field(u), *l.start_of(f.delta)) << uid;
	EXPECT_EQ(uuid_to_uid(l, u), uid) << l.describe();
}

} // namespace

TEST(UuidForm, FieldsOfAKnownId)
{
	Layout l = Layout::default_layout();
	int64_t uid = l.compose(1000, 42, 7);
	UuidBytes u = uid_to_uuid(l, uid);

	/* 2026-01-01 00:00:01 UTC, version 7, tag 0x5A5 and bit 62 (0), variant 10, then the ID. */
	EXPECT_EQ(high_of(u), (static_cast<uint64_t>(Layout::default_epoch_ms + 1000) << 16) | 0x7000u | (0x5A5u << 1));
	EXPECT_EQ(low_of(u), (UINT64_C(2) << 62) | static_cast<uint64_t>(uid));
	EXPECT_EQ(uuid_to_uid(l, u), uid);
}

TEST(UuidForm, EdgesOfEveryLayout)
{
	for (const Layout &l : layouts())
	{
		SCOPED_TRACE(l.describe());
		/* Time 0, the last time the UUID's field holds, the largest worker and sequence. */
		expect_round_trip(l, l.compose(0, 0, 0));
		expect_round_trip(l, l.compose(0, l.max_worker(), l.max_sequence()));
		int64_t last = l.max_delta();
		while (!l.start_of(last) || *l.start_of(last) > uidgen::uuid_max_unix_ms)
			last = last / 2;
		expect_round_trip(l, l.compose(last, l.max_worker(), l.max_sequence()));
		expect_round_trip(l, l.compose(last, 0, 0));
	}
}

TEST(UuidForm, SecondUnitsGiveWholeSeconds)
{
	Layout l(28, 22, 13, uidgen::test::kBaiduEpoch, TimeUnit::Second);
	UuidBytes u = uid_to_uuid(l, l.compose(12345, 3, 4));

	EXPECT_EQ(time_field(u), uidgen::test::kBaiduEpoch + 12345 * 1000);
	EXPECT_EQ(time_field(u) % 1000, 0);
}

TEST(UuidForm, BitSixtyTwoIsCarried)
{
	/* A full 63-bit layout: IDs of the top half have bit 62 set, which goes in rand_a. */
	Layout l(41, 13, 9, 0, TimeUnit::Millisecond);
	int64_t uid = l.compose(l.max_delta() >> 8, 1, 1);
	while (uid >> 62 == 0)
		uid = l.compose((l.decompose(uid).delta << 1) | 1, 1, 1);
	UuidBytes u = uid_to_uuid(l, uid);

	EXPECT_EQ(high_of(u) & 1, 1u);
	EXPECT_EQ(uuid_to_uid(l, u), uid);
}

TEST(UuidForm, TimeOutsideTheFieldIsRefused)
{
	/* Seconds with 41 bits run far past 2^48 milliseconds; an epoch before 1970 starts below 0. */
	Layout seconds(41, 13, 9, Layout::default_epoch_ms, TimeUnit::Second);
	uidgen::test::expect_error([&] { return high_of(uid_to_uuid(seconds, seconds.max_uid())); },
							   ErrorKind::OutOfRange);
	Layout before(41, 13, 9, -86400000, TimeUnit::Millisecond);
	uidgen::test::expect_error([&] { return high_of(uid_to_uuid(before, before.compose(0, 0, 0))); },
							   ErrorKind::OutOfRange);
	expect_round_trip(before, before.compose(86400000, 0, 0));
	Layout l = Layout::default_layout();
	uidgen::test::expect_error([&] { return high_of(uid_to_uuid(l, -1)); }, ErrorKind::OutOfRange);
}

TEST(UuidForm, RoundTripAndOrderOfRandomIds)
{
	std::mt19937_64 rng(20261127);

	for (const Layout &l : layouts())
	{
		SCOPED_TRACE(l.describe());
		int64_t top = l.max_delta();
		while (!l.start_of(top) || *l.start_of(top) > uidgen::uuid_max_unix_ms)
			top = top / 2;
		std::uniform_int_distribution<int64_t> delta(0, top), worker(0, l.max_worker()), seq(0, l.max_sequence());
		UuidBytes previous{};
		int64_t previous_uid = -1;

		for (int i = 0; i < 200000; i++)
		{
			int64_t uid = l.compose(delta(rng), worker(rng), seq(rng));
			UuidBytes u = uid_to_uuid(l, uid);

			ASSERT_EQ(uuid_to_uid(l, u), uid);
			if (previous_uid >= 0)
			{
				ASSERT_EQ(uid < previous_uid, u.bytes < previous.bytes) << uid << " " << previous_uid;
			}
			previous = u;
			previous_uid = uid;
		}
	}
}

TEST(UuidForm, ForeignUuidsAreRefused)
{
	Layout l = Layout::default_layout();
	UuidBytes good = uid_to_uuid(l, l.compose(5000, 9, 9));

	auto refused = [&](UuidBytes u, const char *says) {
		auto e = uidgen::test::expect_error([&] { return uuid_to_uid(l, u); }, ErrorKind::InvalidParameter);
		ASSERT_TRUE(e);
		EXPECT_TRUE(uidgen::test::contains(e->what(), says)) << e->what();
	};

	UuidBytes v4 = good;
	v4.bytes[6] = static_cast<uint8_t>((v4.bytes[6] & 0x0F) | 0x40);
	refused(v4, "version is 4");

	UuidBytes variant = good;
	variant.bytes[8] = static_cast<uint8_t>(variant.bytes[8] & 0x3F);
	refused(variant, "variant");

	UuidBytes tag = good;
	tag.bytes[7] = static_cast<uint8_t>(tag.bytes[7] ^ 0x02);
	refused(tag, "tag");

	UuidBytes time = good;
	time.bytes[5] = static_cast<uint8_t>(time.bytes[5] ^ 0x01);
	refused(time, "time field does not match");

	/* The same UUID under another layout: its ID's time is elsewhere. */
	Layout other(41, 13, 9, Layout::default_epoch_ms + 1000, TimeUnit::Millisecond);
	auto e = uidgen::test::expect_error([&] { return uuid_to_uid(other, good); }, ErrorKind::InvalidParameter);
	ASSERT_TRUE(e);

	/* An ID with unused bits set under a narrower layout. */
	Layout narrow(41, 4, 8, Layout::default_epoch_ms, TimeUnit::Millisecond);
	UuidBytes wide = uid_to_uuid(l, l.compose(INT64_C(1) << 40, 9, 9));
	auto narrow_error = uidgen::test::expect_error([&] { return uuid_to_uid(narrow, wide); },
												   ErrorKind::InvalidParameter);
	ASSERT_TRUE(narrow_error);
	EXPECT_TRUE(contains(narrow_error->what(), "no ID of layout")) << narrow_error->what();
}
