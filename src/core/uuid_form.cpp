/*
 * uuid_form.cpp
 *	  UIDs as UUIDv7-shaped UUIDs, and back.
 */
#include "core/uuid_form.hpp"

#include "core/cpp_only.hpp"
#include "core/error.hpp"

#include <string>

namespace uidgen {

namespace {

/* The Unix milliseconds of the start of delta, if unix_ts_ms can hold them. */
bool
unit_start_ms(const Layout &layout, int64_t delta, int64_t *unix_ms)
{
	std::optional<int64_t> start = layout.start_of(delta);

	if (!start || *start < 0 || *start > uuid_max_unix_ms)
		return false;
	*unix_ms = *start;
	return true;
}

std::string
hex16(const UuidBytes &uuid)
{
	static const char digits[] = "0123456789abcdef";
	std::string text;

	for (int i = 0; i < 16; i++)
	{
		if (i == 4 || i == 6 || i == 8 || i == 10)
			text += '-';
		text += digits[uuid.bytes[i] >> 4];
		text += digits[uuid.bytes[i] & 0xF];
	}
	return text;
}

} // namespace

UuidBytes
uid_to_uuid(const Layout &layout, int64_t uid)
{
	UidFields fields = layout.decompose(uid);
	int64_t unix_ms;

	if (!unit_start_ms(layout, fields.delta, &unix_ms))
		throw Error(ErrorKind::OutOfRange, "the time of ID " + std::to_string(uid) + " is out of range for a UUID",
					"A UUIDv7 holds Unix milliseconds from 1970-01-01 to 10889-08-02 UTC.");

	uint64_t id = static_cast<uint64_t>(uid);
	uint64_t high = (static_cast<uint64_t>(unix_ms) << 16) | (UINT64_C(7) << 12) | (uint64_t{uuid_tag} << 1) |
					(id >> 62);
	uint64_t low = (UINT64_C(2) << 62) | (id & ((UINT64_C(1) << 62) - 1));
	UuidBytes uuid{};

	for (int i = 0; i < 8; i++)
	{
		uuid.bytes[i] = static_cast<uint8_t>(high >> (56 - 8 * i));
		uuid.bytes[8 + i] = static_cast<uint8_t>(low >> (56 - 8 * i));
	}
	return uuid;
}

int64_t
uuid_to_uid(const Layout &layout, const UuidBytes &uuid)
{
	uint64_t high = 0;
	uint64_t low = 0;

	for (int i = 0; i < 8; i++)
	{
		high = (high << 8) | uuid.bytes[i];
		low = (low << 8) | uuid.bytes[8 + i];
	}

	const std::string hint = "uuid_to_uid() reads only the UUIDs that uid_to_uuid() makes.";

	if (((high >> 12) & 0xF) != 7)
		throw Error(ErrorKind::InvalidParameter,
					"UUID " + hex16(uuid) + " is not a uidgen UUID: its version is " +
						std::to_string((high >> 12) & 0xF) + ", not 7",
					{}, hint);
	if ((low >> 62) != 2)
		throw Error(ErrorKind::InvalidParameter,
					"UUID " + hex16(uuid) + " is not a uidgen UUID: its variant is not RFC 9562's", {}, hint);
	if (((high >> 1) & 0x7FF) != uuid_tag)
		throw Error(ErrorKind::InvalidParameter, "UUID " + hex16(uuid) + " is not a uidgen UUID: it lacks uidgen's tag",
					{}, hint);

	int64_t uid = static_cast<int64_t>(((high & 1) << 62) | (low & ((UINT64_C(1) << 62) - 1)));
	int64_t time_field = static_cast<int64_t>(high >> 16);
	int64_t unix_ms;
	UidFields fields{};

	try
	{
		fields = layout.decompose(uid);
	}
	catch (const Error &)
	{
		throw Error(ErrorKind::InvalidParameter,
					"UUID " + hex16(uuid) + " is not a uidgen UUID of this layout: it carries " + std::to_string(uid) +
						", which is no ID of layout " + layout.describe(),
					{}, hint);
	}
	if (!unit_start_ms(layout, fields.delta, &unix_ms) || unix_ms != time_field)
		throw Error(ErrorKind::InvalidParameter,
					"UUID " + hex16(uuid) + " is not a uidgen UUID of this layout: its time field does not match "
											"the time of the ID it carries",
					"The time field holds " + format_utc(time_field) + "; ID " + std::to_string(uid) +
						" is of a unit that starts at " +
						(layout.start_of(fields.delta) ? format_utc(*layout.start_of(fields.delta))
													   : std::string("a time out of range")) +
						" under layout " + layout.describe() + ".",
					hint);
	return uid;
}

} // namespace uidgen
