/*
 * uuid_shape.cpp
 *	  The shape of a UUID's canonical text.
 */
#include "core/uuid_shape.hpp"

namespace uidgen {

namespace {

/* Where the canonical text has its hyphens. */
bool
hyphen_at(int pos)
{
	return pos == 8 || pos == 13 || pos == 18 || pos == 23;
}

bool
is_hex_digit(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

} // namespace

bool
has_uuid_shape(const char *text)
{
	if (text == nullptr)
		return false;
	for (int pos = 0; pos < uuid_text_length; pos++)
	{
		/* A NUL before the end fails here: it is neither a hyphen nor a digit. */
		if (hyphen_at(pos) ? text[pos] != '-' : !is_hex_digit(text[pos]))
			return false;
	}
	return text[uuid_text_length] == '\0';
}

} // namespace uidgen
