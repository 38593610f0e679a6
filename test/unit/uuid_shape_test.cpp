/*
 * uuid_shape_test.cpp
 *	  Unit tests of has_uuid_shape() (src/core/uuid_shape.hpp): the only
 *	  text the codec over uuid_in() lets through, so that a registry's reply
 *	  that is not a UUID never raises an error in the agent.
 */
#include "core/uuid_shape.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using uidgen::has_uuid_shape;
using uidgen::uuid_text_length;

const std::string canonical = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11";

TEST(UuidShape, TakesCanonicalTextInEitherCase)
{
	EXPECT_TRUE(has_uuid_shape(canonical.c_str()));
	EXPECT_TRUE(has_uuid_shape("A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"));
	EXPECT_TRUE(has_uuid_shape("00000000-0000-0000-0000-000000000000"));
	EXPECT_TRUE(has_uuid_shape("ffffffff-ffff-ffff-ffff-ffffffffffff"));
	EXPECT_EQ(static_cast<int>(canonical.size()), uuid_text_length);
}

TEST(UuidShape, RefusesOtherLengths)
{
	EXPECT_FALSE(has_uuid_shape(nullptr));
	EXPECT_FALSE(has_uuid_shape(""));
	EXPECT_FALSE(has_uuid_shape(canonical.substr(0, uuid_text_length - 1).c_str()));
	EXPECT_FALSE(has_uuid_shape((canonical + "0").c_str()));
	EXPECT_FALSE(has_uuid_shape((canonical + " ").c_str()));
	EXPECT_FALSE(has_uuid_shape((" " + canonical).c_str()));
}

/* Forms uuid_in() takes, which uuid_out() never writes. */
TEST(UuidShape, RefusesTheOtherFormsOfUuidIn)
{
	EXPECT_FALSE(has_uuid_shape(("{" + canonical + "}").c_str()));
	EXPECT_FALSE(has_uuid_shape("a0eebc999c0b4ef8bb6d6bb9bd380a11"));
	EXPECT_FALSE(has_uuid_shape("a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11"));
}

TEST(UuidShape, RefusesEveryCharacterOutOfPlace)
{
	for (int pos = 0; pos < uuid_text_length; pos++)
	{
		bool hyphen = canonical[pos] == '-';
		std::string text = canonical;

		text[pos] = hyphen ? '0' : '-';
		EXPECT_FALSE(has_uuid_shape(text.c_str())) << text;
		for (char c : std::string("gGzZ x{}/:@`\x7f"))
		{
			text[pos] = c;
			EXPECT_FALSE(has_uuid_shape(text.c_str())) << text;
		}
		/* Text that ends early at any position. */
		EXPECT_FALSE(has_uuid_shape(canonical.substr(0, pos).c_str()));
	}
}

} // namespace
