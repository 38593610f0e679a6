/*
 * uuid_funcs.cpp
 *	  uid_to_uuid() and uuid_to_uid(): IDs as UUIDv7-shaped UUIDs
 *	  (src/core/uuid_form.hpp).
 *
 * Both read the layout, yet are IMMUTABLE, as uid_timestamp() is and under
 * the same guard: decoding_layout() holds the lock that keeps uid_configure
 * from changing the layout under a computation, and uid_configure refuses
 * to change it while any object depends on them (INV-7;
 * layout_funcs.cpp).
 */
#include "core/uuid_form.hpp"
#include "layout/catalog.hpp"
#include "pg/guard.hpp"

extern "C" {
#include "utils/uuid.h"
}

#include <cstring>

using namespace uidgen;
using namespace uidgen::pg;

/* uid_to_uuid(uid bigint) returns uuid. */
UIDGEN_FUNCTION(uid_to_uuid)
{
	UuidBytes bytes = uid_to_uuid(decoding_layout(), PG_GETARG_INT64(0));
	pg_uuid_t *uuid = static_cast<pg_uuid_t *>(palloc(sizeof(pg_uuid_t)));

	memcpy(uuid->data, bytes.bytes.data(), UUID_LEN);
	PG_RETURN_UUID_P(uuid);
}

/* uuid_to_uid(uuid uuid) returns bigint: refuses a UUID that uid_to_uuid() did not make. */
UIDGEN_FUNCTION(uuid_to_uid)
{
	pg_uuid_t *uuid = PG_GETARG_UUID_P(0);
	UuidBytes bytes{};

	memcpy(bytes.bytes.data(), uuid->data, UUID_LEN);
	PG_RETURN_INT64(uuid_to_uid(decoding_layout(), bytes));
}
