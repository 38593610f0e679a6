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
 */
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace uidgen {

struct CounterWitness
{
	bool any;					/* a counter was seen, at identity */
	uint8_t identity[16];
	int64_t highest;

	/* The counter to send to the registry of identity id: false for none. */
	bool
	to_send(const uint8_t id[16], int64_t *counter) const
	{
		if (!any || memcmp(identity, id, sizeof(identity)) != 0)
			return false;
		*counter = highest;
		return true;
	}

	/*
	 * Notes the counter the registry of identity id replied to a call that
	 * sent sent (had_sent false: none); returns whether it went back (a
	 * reply at or below what was sent).  The highest is kept either way.
	 */
	bool
	note_reply(const uint8_t id[16], bool had_sent, int64_t sent, int64_t reply)
	{
		bool same = any && memcmp(identity, id, sizeof(identity)) == 0;

		if (!same)
		{
			any = true;
			memcpy(identity, id, sizeof(identity));
			highest = reply;
		}
		else if (reply > highest)
			highest = reply;
		return had_sent && same && reply <= sent;
	}
};
static_assert(std::is_trivially_destructible_v<CounterWitness>);
static_assert(std::is_trivially_copyable_v<CounterWitness>);

} // namespace uidgen
