/*
 * id_mask.cpp
 *	  FF1's Feistel structure with SipHash-2-4 rounds, and cycle-walking.
 */
#include "core/id_mask.hpp"

#include "core/cpp_only.hpp"
#include "core/error.hpp"

#include <string>

namespace uidgen {

namespace {

uint64_t
low_bits(uint64_t x, int n)
{
	return n >= 64 ? x : x & ((UINT64_C(1) << n) - 1);
}

} // namespace

IdMask::IdMask(const uint8_t key[key_bytes], int64_t max_id) : key_(sip_key_from_bytes(key)), max_id_(max_id)
{
	if (max_id < 1)
		throw Error(ErrorKind::InvalidParameter, "the largest ID to mask must be at least 1");
	bits_ = 64 - __builtin_clzll(static_cast<uint64_t>(max_id));
	if (bits_ < 2)
		bits_ = 2;
	left_bits_ = bits_ / 2;
	right_bits_ = bits_ - left_bits_;
}

void
IdMask::check(int64_t value, const char *what) const
{
	if (value < 0 || value > max_id_)
		throw Error(ErrorKind::OutOfRange, std::string(what) + " " + std::to_string(value) + " is out of range",
					"The layout's IDs run from 0 to " + std::to_string(max_id_) + ".");
}

/* The round's PRF: SipHash of the round, the width and the half, as 16 bytes. */
uint64_t
IdMask::round_function(int round, uint64_t half) const
{
	uint8_t input[16] = {static_cast<uint8_t>(round), static_cast<uint8_t>(bits_), 'u', 'i', 'd', 'm', 'a', 's'};

	for (int i = 0; i < 8; i++)
		input[8 + i] = static_cast<uint8_t>(half >> (8 * i));
	return siphash24(key_, input, sizeof(input));
}

/* FF1's rounds: A is u bits and B v bits before an even round; C = A + F(i, B); A, B = B, C. */
uint64_t
IdMask::encrypt(uint64_t x) const
{
	uint64_t a = x >> right_bits_;
	uint64_t b = low_bits(x, right_bits_);

	for (int i = 0; i < rounds; i++)
	{
		int m = i % 2 == 0 ? left_bits_ : right_bits_;
		uint64_t c = low_bits(a + round_function(i, b), m);

		a = b;
		b = c;
	}
	return (a << right_bits_) | b;
}

uint64_t
IdMask::decrypt(uint64_t x) const
{
	uint64_t a = x >> right_bits_;
	uint64_t b = low_bits(x, right_bits_);

	for (int i = rounds - 1; i >= 0; i--)
	{
		int m = i % 2 == 0 ? left_bits_ : right_bits_;
		uint64_t c = b;

		b = a;
		a = low_bits(c - round_function(i, b), m);
	}
	return (a << right_bits_) | b;
}

/* Cycle-walking: the walk from a value in the domain comes back into it, at worst at itself. */
int64_t
IdMask::walk(int64_t value, const char *what, uint64_t (IdMask::*step)(uint64_t) const) const
{
	check(value, what);

	uint64_t x = static_cast<uint64_t>(value);

	do
		x = (this->*step)(x);
	while (x > static_cast<uint64_t>(max_id_));
	return static_cast<int64_t>(x);
}

int64_t
IdMask::mask(int64_t uid) const
{
	return walk(uid, "ID", &IdMask::encrypt);
}

int64_t
IdMask::unmask(int64_t masked) const
{
	return walk(masked, "masked ID", &IdMask::decrypt);
}

} // namespace uidgen
