/*
 * siphash.cpp
 *	  SipHash-2-4, after the reference implementation's definition.
 */
#include "core/siphash.hpp"

#include "core/cpp_only.hpp"

namespace uidgen {

namespace {

uint64_t
rotl(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

uint64_t
read_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

struct SipState
{
	uint64_t v0, v1, v2, v3;

	void round()
	{
		v0 += v1;
		v1 = rotl(v1, 13);
		v1 ^= v0;
		v0 = rotl(v0, 32);
		v2 += v3;
		v3 = rotl(v3, 16);
		v3 ^= v2;
		v0 += v3;
		v3 = rotl(v3, 21);
		v3 ^= v0;
		v2 += v1;
		v1 = rotl(v1, 17);
		v1 ^= v2;
		v2 = rotl(v2, 32);
	}

	void absorb(uint64_t m)
	{
		v3 ^= m;
		round();
		round();
		v0 ^= m;
	}
};

} // namespace

SipKey
sip_key_from_bytes(const uint8_t bytes[16])
{
	return SipKey{read_le64(bytes), read_le64(bytes + 8)};
}

uint64_t
siphash24(const SipKey &key, const uint8_t *data, size_t len)
{
	SipState s{key.k0 ^ UINT64_C(0x736f6d6570736575), key.k1 ^ UINT64_C(0x646f72616e646f6d),
			   key.k0 ^ UINT64_C(0x6c7967656e657261), key.k1 ^ UINT64_C(0x7465646279746573)};
	size_t whole = len - len % 8;

	for (size_t i = 0; i < whole; i += 8)
		s.absorb(read_le64(data + i));

	/* The last word: the remaining bytes, and the length's low byte on top. */
	uint64_t last = static_cast<uint64_t>(len & 0xFF) << 56;

	for (size_t i = 0; i < len % 8; i++)
		last |= static_cast<uint64_t>(data[whole + i]) << (8 * i);
	s.absorb(last);

	s.v2 ^= 0xFF;
	for (int i = 0; i < 4; i++)
		s.round();
	return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

} // namespace uidgen
