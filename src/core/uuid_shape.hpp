/*
 * uuid_shape.hpp
 *	  Whether a text has the shape of a UUID's canonical text.
 *
 * PostgreSQL's uuid_in() reports bad input with an error, which must not
 * reach the registry agent (a background worker, where a registry's reply
 * that is not a UUID is a protocol violation to record, 08P01, not an error
 * to raise): the codec over it (src/pg/uuid_codec.hpp) passes it only text
 * of this shape, which uuid_in() always reads.  Stricter than uuid_in(): no
 * braces, no hyphens elsewhere or missing, nothing around it, since
 * uuid_out() writes no other form and uidgen reads only what it wrote.
 */
#pragma once

namespace uidgen {

/* Characters in a UUID's canonical text: 32 hexadecimal digits and 4 hyphens. */
constexpr int uuid_text_length = 36;

/*
 * Whether text is 36 characters: hexadecimal digits (either case) with
 * hyphens after the 8th, 12th, 16th and 20th digit; false for nullptr.
 */
bool has_uuid_shape(const char *text);

} // namespace uidgen
