/*
 * uuid_codec.cpp
 *	  A UUID as text and as a Datum, through uuid_in() and uuid_out().
 */
#include "pg/uuid_codec.hpp"

extern "C" {
#include "fmgr.h"
#include "utils/builtins.h"
}

namespace uidgen::pg {

void
uuid_text(const pg_uuid_t &id, char out[uuid_text_size])
{
	char *text = DatumGetCString(DirectFunctionCall1(uuid_out, UUIDPGetDatum(&id)));

	strlcpy(out, text, uuid_text_size);
	pfree(text);
}

bool
parse_uuid_text(const char *text, pg_uuid_t *id)
{
	/* Checked first: uuid_in() raises an error for anything it cannot read. */
	if (!has_uuid_shape(text))
		return false;

	pg_uuid_t *read = DatumGetUUIDP(DirectFunctionCall1(uuid_in, CStringGetDatum(text)));

	*id = *read;
	pfree(read);
	return true;
}

Datum
uuid_datum(const uint8 bytes[UUID_LEN])
{
	pg_uuid_t *uuid = static_cast<pg_uuid_t *>(palloc(sizeof(pg_uuid_t)));

	memcpy(uuid->data, bytes, UUID_LEN);
	return UUIDPGetDatum(uuid);
}

} // namespace uidgen::pg
