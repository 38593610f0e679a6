/*
 * text_form.hpp
 *	  UIDs as text: Crockford's base32, fixed width.
 *
 * A UID's text form is 13 digits of Crockford's base32 alphabet
 * (0123456789ABCDEFGHJKMNPQRSTVWXYZ), most significant first, zero-padded:
 * 13 * 5 = 65 bits cover a bigint, and since a UID is never negative its
 * first digit is at most 7.  Fixed width makes text order (in the "C"
 * collation, or any that orders digits before letters) numeric order.
 *
 * Decoding ignores case and reads Crockford's aliases I and L as 1 and O as
 * 0; anything else (hyphens, check symbols, whitespace, another length) is
 * an error.
 */
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace uidgen {

constexpr int uid_text_width = 13;

/* The text form of uid; throws Error(OutOfRange) for a negative one. */
std::string encode_uid_text(int64_t uid);

/* The same in a plain buffer (no terminating NUL), for code a PostgreSQL error may longjmp over. */
struct UidText
{
	char digits[uid_text_width];
};
static_assert(std::is_trivially_destructible_v<UidText>);
UidText encode_uid_digits(int64_t uid);

/*
 * The UID a text form names; throws Error(InvalidText) for text that is not
 * 13 base32 digits and Error(OutOfRange) for one beyond a bigint (first
 * digit above 7).
 */
int64_t decode_uid_text(std::string_view text);

} // namespace uidgen
