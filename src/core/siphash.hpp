/*
 * siphash.hpp
 *	  SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast short-input
 *	  PRF", 2012): a keyed pseudorandom function of 128-bit key and 64-bit
 *	  output, the round function of the ID mask (id_mask.hpp).
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace uidgen {

/* The key as the reference takes it: k0 and k1 are bytes 0-7 and 8-15, little-endian. */
struct SipKey
{
	uint64_t k0;
	uint64_t k1;
};
static_assert(std::is_trivially_destructible_v<SipKey>);

SipKey sip_key_from_bytes(const uint8_t bytes[16]);

/* SipHash-2-4 of len bytes at data. */
uint64_t siphash24(const SipKey &key, const uint8_t *data, size_t len);

} // namespace uidgen
