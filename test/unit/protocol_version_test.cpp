/*
 * protocol_version_test.cpp
 *	  Unit tests of spoken_protocol() (src/core/protocol_version.hpp): the
 *	  compatibility rule between a member and a registry.
 */
#include "core/protocol_version.hpp"

#include <gtest/gtest.h>

namespace {

using uidgen::spoken_protocol;

TEST(ProtocolVersion, TheSameVersionIsSpoken)
{
	EXPECT_EQ(spoken_protocol(1, 1), 1);
	EXPECT_EQ(spoken_protocol(7, 7), 7);
}

TEST(ProtocolVersion, OneApartSpeaksTheLowerWhicheverSideIsNewer)
{
	EXPECT_EQ(spoken_protocol(1, 2), 1);	/* the registry upgraded first */
	EXPECT_EQ(spoken_protocol(2, 1), 1);	/* the member upgraded first */
	EXPECT_EQ(spoken_protocol(3, 2), 2);
}

TEST(ProtocolVersion, FurtherApartIsRefused)
{
	EXPECT_EQ(spoken_protocol(1, 3), 0);
	EXPECT_EQ(spoken_protocol(3, 1), 0);
	EXPECT_EQ(spoken_protocol(1, 100), 0);
}

TEST(ProtocolVersion, NoVersionBelowOne)
{
	EXPECT_EQ(spoken_protocol(0, 1), 0);
	EXPECT_EQ(spoken_protocol(1, 0), 0);
	EXPECT_EQ(spoken_protocol(-1, 0), 0);
}

} // namespace
