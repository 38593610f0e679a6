/*
 * counter_witness.hpp
 *	  A member as the witness of a registry set back: the highest registry
 *	  counter it saw at one registry identity.
 *
 * Every reply of uidgen.registry_rules() carries the registry's counter, a
 * sequence that only rises unless the registry as a whole goes back to an
 * earlier state of itself: a file-level copy of the stopped server started
 * in its place, a revert to a memory snapshot, which PostgreSQL cannot tell
 * from the original (same system identifier, same database OID).  The
 * member keeps the highest counter it saw at the identity it works with and
 * sends it with its next rules call; a counter at or below it means the
 * registry went back, and the registry then quarantines (it sees the same
 * comparison).  A counter of another identity means nothing here: a move
 * to another registry starts afresh.  Plain data, kept in the lease table
 * for the server life; nothing throws.
 *
 * A counter goes with the registry's proof that the registry replied it: a
 * digest of the counter and the registry's secret, which only the registry
 * can make and check (uidgen.registry_counter_proof()).  The registry heeds
 * only a counter with its proof, so that a member role cannot quarantine it
 * with a made-up one; the member keeps the proof as opaque text.
 */
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace uidgen {

/* A registry counter and its proof: 64 hexadecimal digits (a SHA-256). */
constexpr size_t counter_proof_length = 64;

struct SignedCounter
{
	int64_t value;
	char proof[counter_proof_length + 1];

	/* Whether text has a proof's shape (the registry alone can tell a right one). */
	static bool
	proof_shaped(const char *text)
	{
		size_t n = 0;

		for (; text[n] != '\0'; n++)
		{
			char c = text[n];

			if (n == counter_proof_length || !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
				return false;
		}
		return n == counter_proof_length;
	}
};
static_assert(std::is_trivially_destructible_v<SignedCounter>);
static_assert(std::is_trivially_copyable_v<SignedCounter>);

struct CounterWitness
{
	bool any;					/* a counter was seen, at identity */
	uint8_t identity[16];
	SignedCounter highest;

	/* The counter to send to the registry of identity id: false for none. */
	bool
	to_send(const uint8_t id[16], SignedCounter *counter) const
	{
		if (!any || memcmp(identity, id, sizeof(identity)) != 0)
			return false;
		*counter = highest;
		return true;
	}

	/*
	 * Notes the counter the registry of identity id replied to a call that
	 * sent sent (had_sent false: none); returns whether it went back (a
	 * reply at or below what was sent).  The highest is kept either way,
	 * with its proof.
	 */
	bool
	note_reply(const uint8_t id[16], bool had_sent, int64_t sent, const SignedCounter &reply)
	{
		bool same = any && memcmp(identity, id, sizeof(identity)) == 0;

		if (!same)
		{
			any = true;
			memcpy(identity, id, sizeof(identity));
			highest = reply;
		}
		else if (reply.value > highest.value)
			highest = reply;
		return had_sent && same && reply.value <= sent;
	}
};
static_assert(std::is_trivially_destructible_v<CounterWitness>);
static_assert(std::is_trivially_copyable_v<CounterWitness>);

} // namespace uidgen
