/*
 * The resolver thread (core/resolver.hpp): it hands back numeric addresses,
 * or getaddrinfo()'s error, and its caller may let go of it before it ends.
 */
#include "core/resolver.hpp"

#include <gtest/gtest.h>

#include <netdb.h>
#include <poll.h>
#include <string>

using namespace uidgen;

namespace {

/* Waits (at most 30 s) until r has ended, as its caller does: on its descriptor. */
bool
wait_for(Resolution *r)
{
	struct pollfd p = {resolution_fd(r), POLLIN, 0};

	return poll(&p, 1, 30000) == 1 && resolution_done(r);
}

} // namespace

TEST(Resolver, NumericAddressIsItself)
{
	Resolution *r = resolution_start("127.0.0.1");
	ASSERT_NE(r, nullptr);
	ASSERT_TRUE(wait_for(r));
	EXPECT_EQ(resolution_error(r), 0);
	EXPECT_STREQ(resolution_addresses(r), "127.0.0.1");
	EXPECT_EQ(resolution_count(r), 1);
	EXPECT_STREQ(resolution_host(r), "127.0.0.1");
	resolution_release(r);
}

TEST(Resolver, LocalhostHasALoopbackAddressAndNoRepeats)
{
	Resolution *r = resolution_start("localhost");
	ASSERT_NE(r, nullptr);
	ASSERT_TRUE(wait_for(r));
	ASSERT_EQ(resolution_error(r), 0) << gai_strerror(resolution_error(r));
	std::string addresses = resolution_addresses(r);
	EXPECT_TRUE(addresses.find("127.0.0.1") != std::string::npos || addresses.find("::1") != std::string::npos)
		<< addresses;
	/* SOCK_STREAM only, each address once: as many commas as addresses less one. */
	int commas = 0;
	for (char c : addresses)
		commas += c == ',';
	EXPECT_EQ(commas + 1, resolution_count(r)) << addresses;
	resolution_release(r);
}

TEST(Resolver, EmptyNameFails)
{
	/* An empty name: refused before any resolver is asked. */
	Resolution *r = resolution_start("");
	ASSERT_NE(r, nullptr);
	ASSERT_TRUE(wait_for(r));
	EXPECT_NE(resolution_error(r), 0);
	EXPECT_STREQ(resolution_addresses(r), "");
	EXPECT_EQ(resolution_count(r), 0);
	resolution_release(r);
}

TEST(Resolver, CallerMayLetGoFirst)
{
	/* Released at once: the thread frees it when it ends (ASan or valgrind would see a leak or a use after free). */
	for (int i = 0; i < 50; i++)
	{
		Resolution *r = resolution_start("localhost");
		ASSERT_NE(r, nullptr);
		resolution_release(r);
	}
	/* One more, waited for, so that the threads above have had time to end before the process does. */
	Resolution *r = resolution_start("localhost");
	ASSERT_NE(r, nullptr);
	EXPECT_TRUE(wait_for(r));
	resolution_release(r);
}
