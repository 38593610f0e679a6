/*
 * id_mask.hpp
 *	  A keyed permutation of [0, max_id]: public IDs that reveal neither
 *	  time, worker nor volume, and the IDs behind them (docs/reference.md, "Public IDs").
 *
 * The construction is FF1's (NIST SP 800-38G) Feistel structure over binary
 * strings: the b bits of the smallest power of two above max_id are split
 * into u = floor(b / 2) and v = b - u bits, and 10 rounds each add, modulo
 * 2^u or 2^v in turn, a pseudorandom function of the round number and the
 * other half.  The function is SipHash-2-4 under the 128-bit key (in place
 * of FF1's AES-CBC-MAC), its input the round, b and the half, its output
 * truncated.  Luby and Rackoff show such a network a pseudorandom
 * permutation when its function is a PRF; 10 rounds is FF1's count, above
 * the 8 that Patarin's bounds ask for with small halves.  Cycle-walking
 * (Black and Rogaway, "Ciphers with arbitrary finite domains") applies the
 * permutation again while the result exceeds max_id, so that the result
 * stays in [0, max_id]: a javascript_safe layout's masks stay safe.
 */
#pragma once

#include "core/siphash.hpp"

#include <cstdint>
#include <type_traits>

namespace uidgen {

class IdMask
{
public:
	static constexpr int rounds = 10;
	static constexpr int key_bytes = 16;

	/* Throws Error(InvalidParameter) for max_id < 1. */
	IdMask(const uint8_t key[key_bytes], int64_t max_id);

	/* Throws Error(OutOfRange) for a uid outside [0, max_id]. */
	int64_t mask(int64_t uid) const;
	int64_t unmask(int64_t masked) const;

	int bits() const { return bits_; }

private:
	void check(int64_t value, const char *what) const;
	int64_t walk(int64_t value, const char *what, uint64_t (IdMask::*step)(uint64_t) const) const;
	uint64_t encrypt(uint64_t x) const;
	uint64_t decrypt(uint64_t x) const;
	uint64_t round_function(int round, uint64_t half) const;

	SipKey key_;
	int64_t max_id_;
	int bits_;
	int left_bits_;		/* u */
	int right_bits_;	/* v */
};
static_assert(std::is_trivially_destructible_v<IdMask>);

} // namespace uidgen
