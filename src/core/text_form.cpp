/*
 * text_form.cpp
 *	  Crockford's base32 text form of UIDs.
 */
#include "core/text_form.hpp"

#include "core/error.hpp"

#include "core/cpp_only.hpp"

namespace uidgen {

namespace {

constexpr char digits[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/* The value of a base32 digit (either case, with the aliases), or -1. */
int
digit_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'z')
		c = static_cast<char>(c - 'a' + 'A');
	switch (c)
	{
		case 'O':
			return 0;
		case 'I':
		case 'L':
			return 1;
		default:
			break;
	}
	for (int value = 10; value < 32; value++)
		if (digits[value] == c)
			return value;
	return -1;
}

std::string
quoted(std::string_view text)
{
	return "\"" + std::string(text) + "\"";
}

/* The first character c of a text form that is no digit, for the detail. */
std::string
not_a_digit(char c, size_t position)
{
	std::string where = " at position " + std::to_string(position + 1);

	if (c == '-')
		return "A hyphen" + where + " is not accepted: write the 13 digits alone.";
	if (c == '*' || c == '~' || c == '$' || c == '=' || c == 'U' || c == 'u')
		return "\"" + std::string(1, c) + "\"" + where +
			   " is one of Crockford's check symbols, which a UID's text form has none of.";
	if (c > ' ' && c < 0x7f)
		return "\"" + std::string(1, c) + "\"" + where + " is not a digit of Crockford's base32.";
	return "The character" + where + " is not a digit of Crockford's base32.";
}

} // namespace

UidText
encode_uid_digits(int64_t uid)
{
	if (uid < 0)
		throw Error(ErrorKind::OutOfRange, std::to_string(uid) + " is not a UID",
					"A UID is never negative; the text form covers 0 to 9223372036854775807.");

	UidText text;
	uint64_t rest = static_cast<uint64_t>(uid);

	for (int i = uid_text_width - 1; i >= 0; i--)
	{
		text.digits[i] = digits[rest & 31];
		rest >>= 5;
	}
	return text;
}

std::string
encode_uid_text(int64_t uid)
{
	UidText text = encode_uid_digits(uid);

	return std::string(text.digits, uid_text_width);
}

int64_t
decode_uid_text(std::string_view text)
{
	const char *hint = "A UID's text form is 13 digits of Crockford's base32, as uid_encode() writes it.";
	uint64_t value = 0;

	for (size_t i = 0; i < text.size(); i++)
	{
		int digit = digit_value(text[i]);

		if (digit < 0)
			throw Error(ErrorKind::InvalidText, "invalid input syntax for a UID: " + quoted(text),
						not_a_digit(text[i], i), hint);
		/* Only the first 13 digits count; a longer text is refused below. */
		if (i < static_cast<size_t>(uid_text_width))
			value = (value << 5) | static_cast<uint64_t>(digit);
	}
	if (text.size() != static_cast<size_t>(uid_text_width))
		throw Error(ErrorKind::InvalidText, "invalid input syntax for a UID: " + quoted(text),
					"It has " + std::to_string(text.size()) + " digits, not 13.", hint);
	/* 13 digits hold 65 bits: the first one carries the top two. */
	if (digit_value(text[0]) > 7)
		throw Error(ErrorKind::OutOfRange, "value " + quoted(text) + " is out of range for a UID",
					"A UID's text form starts with a digit from 0 to 7.");
	return static_cast<int64_t>(value);
}

} // namespace uidgen
