/*
 * id_mask_test.cpp
 *	  Unit tests of SipHash-2-4 (src/core/siphash.hpp) against the reference's
 *	  published vectors, and of the ID mask built on it (src/core/id_mask.hpp):
 *	  frozen regression vectors, bijection, round trip, the range kept,
 *	  avalanche, consecutive IDs and different keys unrelated.
 */
#include "core/error.hpp"
#include "core/id_mask.hpp"
#include "core/siphash.hpp"
#include "support.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace {

using uidgen::IdMask;

/* The reference's test key: bytes 00 01 .. 0f. */
const uint8_t kReferenceKey[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
const uint8_t kOtherKey[16] = {0xA5, 0x5A, 0x3C, 0xC3, 0x0F, 0xF0, 0x96, 0x69,
							   0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};

constexpr int64_t kFull = INT64_MAX;					/* the default layout's max_id */
constexpr int64_t kJavaScript = (INT64_C(1) << 53) - 1;	/* a javascript_safe layout's */

double
correlation(const std::vector<double> &x, const std::vector<double> &y)
{
	double n = static_cast<double>(x.size()), sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;

	for (size_t i = 0; i < x.size(); i++)
	{
		sx += x[i];
		sy += y[i];
		sxx += x[i] * x[i];
		syy += y[i] * y[i];
		sxy += x[i] * y[i];
	}
	return (n * sxy - sx * sy) / std::sqrt((n * sxx - sx * sx) * (n * syy - sy * sy));
}

} // namespace

/*
 * vectors_sip64 of the reference implementation (SipHash's test.c): key
 * 00..0f, message 00 01 .. (n - 1).  n = 15 is the paper's worked example.
 */
TEST(SipHash, ReferenceVectors)
{
	const uint64_t expected[] = {
		0x726fdb47dd0e0e31, 0x74f839c593dc67fd, 0x0d6c8009d9a94f5a, 0x85676696d7fb7e2d, 0xcf2794e0277187b7,
		0x18765564cd99a68d, 0xcbc9466e58fee3ce, 0xab0200f58b01d137, 0x93f5f5799a932462, 0x9e0082df0ba9e4b0,
		0x7a5dbbc594ddb9f3, 0xf4b32f46226bada7, 0x751e8fbc860ee5fb, 0x14ea5627c0843d90, 0xf723ca908e7af2ee,
		0xa129ca6149be45e5, 0x3f2acc7f57c29bdb, 0x699ae9f52cbe4794, 0x4bc1b3f0968dd39c, 0xbb6dc91da77961bd,
		0xbed65cf21aa2ee98, 0xd0f2cbb02e3b67c7, 0x93536795e3a33e88, 0xa80c038ccd5ccec8, 0xb8ad50c6f649af94,
		0xbce192de8a85b8ea, 0x17d835b85bbb15f3, 0x2f2e6163076bcfad, 0xde4daaaca71dc9a5, 0xa6a2506687956571,
		0xad87a3535c49ef28, 0x32d892fad841c342, 0x7127512f72f27cce};
	uint8_t message[64];
	uidgen::SipKey key = uidgen::sip_key_from_bytes(kReferenceKey);

	for (int i = 0; i < 64; i++)
		message[i] = static_cast<uint8_t>(i);
	for (size_t n = 0; n < sizeof(expected) / sizeof(expected[0]); n++)
		EXPECT_EQ(uidgen::siphash24(key, message, n), expected[n]) << "length " << n;
}

/*
 * Regression vectors of the mask as built: computed by this implementation
 * when it was written and frozen, so that masks stored by users never change
 * meaning.  Not vectors of any standard.
 */
TEST(IdMask, FrozenRegressionVectors)
{
	IdMask full(kReferenceKey, kFull);
	IdMask js(kReferenceKey, kJavaScript);
	IdMask small(kReferenceKey, 999);
	struct
	{
		const IdMask &mask;
		int64_t uid;
		int64_t masked;
	} vectors[] = {
		{full, 0, INT64_C(8435143434914542559)},
		{full, 1, INT64_C(6696111132651338903)},
		{full, INT64_C(7396451594735157248), INT64_C(7588916234477156033)},
		{full, kFull, INT64_C(5916869123260526105)},
		{js, 0, INT64_C(6193610613062531)},
		{js, 123456789012345, INT64_C(3376043010925693)},
		{js, kJavaScript, INT64_C(3326605390291010)},
		{small, 0, 658},
		{small, 500, 424},
		{small, 999, 758},
	};

	for (const auto &v : vectors)
	{
		EXPECT_EQ(v.mask.mask(v.uid), v.masked) << v.uid;
		EXPECT_EQ(v.mask.unmask(v.masked), v.uid) << v.masked;
	}
}

/* Every value of a domain of 10^7 (not a power of two: cycle-walking) has one image, in the domain. */
TEST(IdMask, BijectiveOnTenMillion)
{
	constexpr int64_t max_id = 9999999;
	IdMask mask(kOtherKey, max_id);
	std::vector<bool> seen(max_id + 1, false);

	for (int64_t uid = 0; uid <= max_id; uid++)
	{
		int64_t masked = mask.mask(uid);

		ASSERT_GE(masked, 0);
		ASSERT_LE(masked, max_id);
		ASSERT_FALSE(seen[masked]) << uid << " maps where another did";
		seen[masked] = true;
	}
}

TEST(IdMask, RoundTripsAndStaysInRange)
{
	std::mt19937_64 rng(37);

	for (int64_t max_id : {kFull, kJavaScript, INT64_C(3), INT64_C(1000), (INT64_C(1) << 40) + 12345})
	{
		IdMask mask(kReferenceKey, max_id);
		std::uniform_int_distribution<int64_t> any(0, max_id);

		for (int i = 0; i < 200000; i++)
		{
			int64_t uid = any(rng);
			int64_t masked = mask.mask(uid);

			ASSERT_LE(masked, max_id);
			ASSERT_GE(masked, 0);
			ASSERT_EQ(mask.unmask(masked), uid);
		}
	}
}

TEST(IdMask, RefusesValuesOutsideTheDomain)
{
	IdMask mask(kReferenceKey, kJavaScript);

	expect_error([&] { return mask.mask(-1); }, ErrorKind::OutOfRange);
	expect_error([&] { return mask.mask(kJavaScript + 1); }, ErrorKind::OutOfRange);
	expect_error([&] { return mask.unmask(kJavaScript + 1); }, ErrorKind::OutOfRange);
}

/* A flipped input bit flips each output bit with probability 0.5 +- 0.01, for every pair of bits. */
TEST(IdMask, Avalanche)
{
	for (int64_t max_id : {kFull, kJavaScript})
	{
		IdMask mask(kReferenceKey, max_id);
		int bits = mask.bits();
		std::mt19937_64 rng(5);
		std::uniform_int_distribution<int64_t> any(0, max_id);
		constexpr int samples = 4000;
		std::vector<int64_t> flips(bits * bits, 0);
		int64_t total = 0;
		int64_t counted = 0;

		for (int s = 0; s < samples; s++)
		{
			int64_t uid = any(rng);
			int64_t masked = mask.mask(uid);

			for (int i = 0; i < bits; i++)
			{
				int64_t other = uid ^ (INT64_C(1) << i);
				if (other > max_id)
					continue;
				uint64_t diff = static_cast<uint64_t>(masked ^ mask.mask(other));
				for (int j = 0; j < bits; j++)
					flips[i * bits + j] += (diff >> j) & 1;
				total += __builtin_popcountll(diff);
				counted += bits;
			}
		}
		double p = static_cast<double>(total) / static_cast<double>(counted);
		EXPECT_NEAR(p, 0.5, 0.01) << "max_id " << max_id;
		/* Each pair on its own, with room for the noise of 4,000 samples (sd 0.008). */
		for (int i = 0; i < bits * bits; i++)
			EXPECT_NEAR(static_cast<double>(flips[i]) / samples, 0.5, 0.05) << "bits " << i / bits << "->" << i % bits;
	}
}

/* Masks of consecutive IDs: no correlation between neighbours, nor with the ID, and their bits balanced. */
TEST(IdMask, ConsecutiveIdsUncorrelated)
{
	IdMask mask(kReferenceKey, kJavaScript);
	constexpr int n = 200000;
	int64_t start = INT64_C(4503599627370496) / 3;
	std::vector<double> ids, masks, next;

	for (int i = 0; i < n; i++)
	{
		ids.push_back(static_cast<double>(start + i));
		masks.push_back(static_cast<double>(mask.mask(start + i)));
		next.push_back(static_cast<double>(mask.mask(start + i + 1)));
	}
	EXPECT_LT(std::fabs(correlation(masks, next)), 0.01);
	EXPECT_LT(std::fabs(correlation(ids, masks)), 0.01);

	/* The difference of neighbours' masks is spread, not a constant stride. */
	int64_t ones = 0;
	for (int i = 0; i < n; i++)
		ones += __builtin_popcountll(static_cast<uint64_t>(mask.mask(start + i)) ^
									 static_cast<uint64_t>(mask.mask(start + i + 1)));
	EXPECT_NEAR(static_cast<double>(ones) / (n * 53.0), 0.5, 0.01);
}

/* The same IDs under two keys: masks that differ in half their bits and do not correlate. */
TEST(IdMask, DifferentKeysUnrelated)
{
	IdMask a(kReferenceKey, kFull);
	IdMask b(kOtherKey, kFull);
	uint8_t near_key[16];
	for (int i = 0; i < 16; i++)
		near_key[i] = kReferenceKey[i];
	near_key[15] ^= 1;
	IdMask c(near_key, kFull);
	constexpr int n = 100000;
	int64_t differ_ab = 0, differ_ac = 0;
	std::vector<double> xa, xb;

	for (int64_t uid = 1; uid <= n; uid++)
	{
		differ_ab += __builtin_popcountll(static_cast<uint64_t>(a.mask(uid) ^ b.mask(uid)));
		differ_ac += __builtin_popcountll(static_cast<uint64_t>(a.mask(uid) ^ c.mask(uid)));
		xa.push_back(static_cast<double>(a.mask(uid)));
		xb.push_back(static_cast<double>(b.mask(uid)));
	}
	EXPECT_NEAR(static_cast<double>(differ_ab) / (n * 63.0), 0.5, 0.01);
	EXPECT_NEAR(static_cast<double>(differ_ac) / (n * 63.0), 0.5, 0.01);
	EXPECT_LT(std::fabs(correlation(xa, xb)), 0.01);
	/* And one key cannot undo another's mask. */
	EXPECT_NE(b.unmask(a.mask(12345)), 12345);
}
