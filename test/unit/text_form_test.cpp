/*
 * text_form_test.cpp
 *	  Unit tests of the text form of UIDs (src/core/text_form.hpp): 13 digits
 *	  of Crockford's base32 both ways, its order, and what decoding refuses.
 */
#include "core/error.hpp"
#include "core/text_form.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

using uidgen::decode_uid_text;
using uidgen::encode_uid_text;
using uidgen::Error;
using uidgen::ErrorKind;

constexpr char kAlphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/* The text form by repeated division: a second way to the same answer. */
std::string
by_division(int64_t uid)
{
	std::string text;

	for (int i = 0; i < 13; i++)
	{
		text.insert(text.begin(), kAlphabet[uid % 32]);
		uid /= 32;
	}
	return text;
}

std::optional<Error>
decode_error(const std::string &text)
{
	try
	{
		int64_t value = decode_uid_text(text);

		ADD_FAILURE() << "\"" << text << "\" decoded to " << value << " instead of failing";
	}
	catch (const Error &e)
	{
		return e;
	}
	return std::nullopt;
}

TEST(TextForm, EdgeValues)
{
	const std::pair<int64_t, const char *> cases[] = {
		{0, "0000000000000"},
		{1, "0000000000001"},
		{10, "000000000000A"},
		{31, "000000000000Z"},
		{32, "0000000000010"},
		{33, "0000000000011"},
		{1023, "00000000000ZZ"},
		{1024, "0000000000100"},
		{INT64_C(1) << 60, "1000000000000"},
		{(INT64_C(1) << 60) - 1, "0ZZZZZZZZZZZZ"},
		{INT64_MAX - 1, "7ZZZZZZZZZZZY"},
		{INT64_MAX, "7ZZZZZZZZZZZZ"},
	};

	for (const auto &[uid, text] : cases)
	{
		EXPECT_EQ(encode_uid_text(uid), text) << uid;
		EXPECT_EQ(decode_uid_text(text), uid) << text;
	}
}

TEST(TextForm, PowersOfTwoAndNeighbours)
{
	for (int bit = 0; bit < 63; bit++)
	{
		int64_t power = INT64_C(1) << bit;

		for (int64_t uid : {power - 1, power, power + 1})
		{
			std::string text = encode_uid_text(uid);

			EXPECT_EQ(text, by_division(uid)) << uid;
			EXPECT_EQ(decode_uid_text(text), uid) << text;
		}
		/* One digit set: the one that holds the bit, with the bit's value within it. */
		std::string expected(13, '0');
		expected[12 - bit / 5] = kAlphabet[1 << (bit % 5)];
		EXPECT_EQ(encode_uid_text(power), expected) << bit;
	}
}

TEST(TextForm, EveryDigitInEveryPlace)
{
	for (int place = 0; place < 13; place++)
		for (int digit = 0; digit < (place == 0 ? 8 : 32); digit++)
		{
			std::string text(13, '0');

			text[place] = kAlphabet[digit];
			int64_t uid = decode_uid_text(text);

			EXPECT_EQ(uid, static_cast<int64_t>(static_cast<uint64_t>(digit) << (5 * (12 - place)))) << text;
			EXPECT_EQ(encode_uid_text(uid), text);
		}
}

TEST(TextForm, CaseAndAliases)
{
	EXPECT_EQ(decode_uid_text("7zzzzzzzzzzzz"), INT64_MAX);
	EXPECT_EQ(decode_uid_text("00000000000aB"), decode_uid_text("00000000000AB"));
	/* I and L are 1, O is 0, in either case. */
	for (const char *one : {"000000000000I", "000000000000i", "000000000000L", "000000000000l"})
		EXPECT_EQ(decode_uid_text(one), 1) << one;
	EXPECT_EQ(decode_uid_text("OOOOOOOOOOOOo"), 0);
	EXPECT_EQ(decode_uid_text("1oooooooooooo"), INT64_C(1) << 60);
	EXPECT_EQ(decode_uid_text("0000000000IlO"), (1 << 10) | (1 << 5));
}

TEST(TextForm, NegativeIsOutOfRange)
{
	for (int64_t uid : {INT64_C(-1), INT64_C(-32), INT64_MIN})
	{
		try
		{
			encode_uid_text(uid);
			ADD_FAILURE() << uid << " was encoded";
		}
		catch (const Error &e)
		{
			EXPECT_EQ(e.kind(), ErrorKind::OutOfRange);
			EXPECT_EQ(std::string(e.what()), std::to_string(uid) + " is not a UID");
		}
	}
}

TEST(TextForm, BadSyntax)
{
	const std::pair<std::string, const char *> cases[] = {
		{"", "It has 0 digits, not 13."},
		{"000000000001", "It has 12 digits, not 13."},
		{"00000000000001", "It has 14 digits, not 13."},
		{"0000-0000-00001", "A hyphen at position 5 is not accepted: write the 13 digits alone."},
		{"000000000000U", "\"U\" at position 13 is one of Crockford's check symbols, which a UID's text form has none of."},
		{"000000000000u", "\"u\" at position 13 is one of Crockford's check symbols, which a UID's text form has none of."},
		{"00000000000001*", "\"*\" at position 15 is one of Crockford's check symbols, which a UID's text form has none of."},
		{" 0000000000001", "The character at position 1 is not a digit of Crockford's base32."},
		{"0000000000001\n", "The character at position 14 is not a digit of Crockford's base32."},
		{"000000000000#", "\"#\" at position 13 is not a digit of Crockford's base32."},
		{"00000000000\xc3\xa9", "The character at position 12 is not a digit of Crockford's base32."},
	};

	for (const auto &[text, detail] : cases)
	{
		std::optional<Error> e = decode_error(text);

		ASSERT_TRUE(e.has_value());
		EXPECT_EQ(e->kind(), ErrorKind::InvalidText) << text;
		EXPECT_EQ(std::string(e->what()), "invalid input syntax for a UID: \"" + text + "\"");
		EXPECT_EQ(e->detail(), detail) << text;
	}
}

TEST(TextForm, BeyondBigintIsOutOfRange)
{
	for (const char *text : {"8000000000000", "9000000000000", "Z000000000000", "zzzzzzzzzzzzz", "8ZZZZZZZZZZZZ"})
	{
		std::optional<Error> e = decode_error(text);

		ASSERT_TRUE(e.has_value());
		EXPECT_EQ(e->kind(), ErrorKind::OutOfRange) << text;
		EXPECT_EQ(std::string(e->what()), std::string("value \"") + text + "\" is out of range for a UID");
	}
}

/* A million random IDs of every magnitude: round trips, and text order is numeric order. */
TEST(TextForm, MillionRandomRoundTripsInOrder)
{
	std::mt19937_64 rng(20261122);
	std::vector<std::pair<int64_t, std::string>> ids;

	ids.reserve(1000000);
	for (int i = 0; i < 1000000; i++)
	{
		/* A random bit length first, so that short IDs are as common as long ones. */
		int bits = std::uniform_int_distribution<int>(0, 63)(rng);
		int64_t uid = bits == 0 ? 0 : static_cast<int64_t>(rng() >> (64 - bits));
		std::string text = encode_uid_text(uid);

		ASSERT_EQ(text.size(), 13u);
		ASSERT_LE(text[0], '7') << uid;
		ASSERT_EQ(decode_uid_text(text), uid) << text;
		ids.emplace_back(uid, std::move(text));
	}

	std::sort(ids.begin(), ids.end());
	for (size_t i = 1; i < ids.size(); i++)
	{
		const auto &[a, a_text] = ids[i - 1];
		const auto &[b, b_text] = ids[i];

		ASSERT_EQ(a < b, a_text < b_text) << a << " " << b;
		ASSERT_EQ(a == b, a_text == b_text) << a << " " << b;
	}
}

} // namespace
