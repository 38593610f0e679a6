/*
 * uuid_form.hpp
 *	  UIDs as UUIDv7-shaped UUIDs (RFC 9562), and back.
 *
 * From the first bit to the last (RFC 9562's field names):
 *
 *	unix_ts_ms	48	the start of the ID's time unit in Unix milliseconds:
 *					epoch + delta * unit (a whole second for second units)
 *	ver			 4	7
 *	rand_a		12	the tag (11 bits, uuid_tag) and the ID's bit 62
 *	var			 2	binary 10
 *	rand_b		62	the ID's bits 61 to 0
 *
 * The ID is carried whole, so the mapping round-trips; its time is also in
 * unix_ts_ms, where UUIDv7 readers (PostgreSQL 18's uuid_extract_timestamp())
 * find it.  UUIDs compare as bytes, so they sort by time field, tag, ID:
 * for the IDs of one layout, whose times rise with them, as the IDs do.
 *
 * Reading refuses a UUID that is not of this shape (version, variant, tag),
 * and one whose time field is not its ID's time under the layout: another
 * layout's, edited, or a random UUIDv7 that happens to carry the tag.
 */
#pragma once

#include "core/layout.hpp"

#include <array>
#include <cstdint>
#include <type_traits>

namespace uidgen {

/* The 16 bytes of a UUID, in network order (as PostgreSQL's pg_uuid_t holds them). */
struct UuidBytes
{
	std::array<uint8_t, 16> bytes;
};
static_assert(std::is_trivially_destructible_v<UuidBytes>);

/* The 11 spare bits of rand_a: binary 10110100101, "uid" in no alphabet, fixed forever. */
constexpr uint32_t uuid_tag = 0x5A5;

/* unix_ts_ms holds 0 to 2^48 - 1. */
constexpr int64_t uuid_max_unix_ms = (INT64_C(1) << 48) - 1;

/*
 * The UUID of uid under layout.  Throws Error(OutOfRange) for an ID the
 * layout refuses (negative, unused bits set) and for one whose time lies
 * outside unix_ts_ms (before 1970, or after the year 10889).
 */
UuidBytes uid_to_uuid(const Layout &layout, int64_t uid);

/*
 * The ID a UUID of uid_to_uuid() carries.  Throws Error(InvalidParameter),
 * naming what is wrong, for any other UUID.
 */
int64_t uuid_to_uid(const Layout &layout, const UuidBytes &uuid);

} // namespace uidgen
