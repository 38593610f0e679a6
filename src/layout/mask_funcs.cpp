/*
 * mask_funcs.cpp
 *	  uid_mask() and uid_unmask(): a keyed permutation of the layout's IDs
 *	  (src/core/id_mask.hpp), under a key kept in uidgen.mask_key and named
 *	  in the call, so that no key is ever a literal in a statement, a log or
 *	  an error.  The key is read as the extension's owner: a role that may
 *	  call the functions need not (and should not) read the table.
 */
#include "core/id_mask.hpp"
#include "layout/catalog.hpp"
#include "pg/compat.hpp"
#include "pg/guard.hpp"
#include "pg/spi.hpp"

extern "C" {
#include "access/xact.h"
#include "catalog/pg_type_d.h"
#include "executor/spi.h"
#include "utils/builtins.h"
}

#include <cstring>
#include <type_traits>

using namespace uidgen;
using namespace uidgen::pg;

namespace {

struct MaskKey
{
	bool found;
	bool well_formed;
	uint8_t bytes[IdMask::key_bytes];
};
static_assert(std::is_trivially_destructible_v<MaskKey>);

MaskKey
read_stored_key(text *name)
{
	return with_spi(Rights::Owner, [name] {
		Oid types[1] = {TEXTOID};
		Datum values[1] = {PointerGetDatum(name)};
		MaskKey key{};

		if (spi_run("SELECT key FROM uidgen.mask_key WHERE name = $1", 1, types, values, Visibility::ReadOnly,
					SPI_OK_SELECT) == 0 || spi_is_null(0, 0))
			return key;
		key.found = true;

		bool isnull;
		bytea *stored = DatumGetByteaPP(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

		if (VARSIZE_ANY_EXHDR(stored) == IdMask::key_bytes)
		{
			key.well_formed = true;
			memcpy(key.bytes, VARDATA_ANY(stored), IdMask::key_bytes);
		}
		return key;
	});
}

/*
 * The key a call site read, for the rest of its query, in the call site's
 * fn_extra: every call of a query would read the same row (the functions
 * are STABLE), so a query that masks many IDs reads its key once, and the
 * next query reads it again (a key created or rolled back meanwhile).
 */
struct KeyCache
{
	char name[64];
	MaskKey key;
};
static_assert(std::is_trivially_destructible_v<KeyCache>);

MaskKey
read_mask_key(FunctionCallInfo fcinfo, text *name)
{
	size_t length = VARSIZE_ANY_EXHDR(name);
	KeyCache *cache = static_cast<KeyCache *>(fcinfo->flinfo->fn_extra);

	if (cache != nullptr && strlen(cache->name) == length && memcmp(cache->name, VARDATA_ANY(name), length) == 0)
		return cache->key;

	MaskKey key = read_stored_key(name);

	if (key.found && length < sizeof(cache->name))
	{
		if (cache == nullptr)
		{
			cache = static_cast<KeyCache *>(MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(KeyCache)));
			fcinfo->flinfo->fn_extra = cache;
		}
		memcpy(cache->name, VARDATA_ANY(name), length);
		cache->name[length] = '\0';
		cache->key = key;
	}
	return key;
}

IdMask
mask_of(FunctionCallInfo fcinfo)
{
	text *name = PG_GETARG_TEXT_PP(1);
	MaskKey key = read_mask_key(fcinfo, name);

	if (!key.found)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("uid mask key \"%s\" does not exist", text_to_cstring(name)),
				 errhint("Its owner creates it with uid_mask_key_create().")));
	if (!key.well_formed)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("uid mask key \"%s\" is not %d bytes long", text_to_cstring(name), IdMask::key_bytes)));
	return IdMask(key.bytes, max_issuable_uid(database_layout()));
}

} // namespace

/* uid_mask(uid bigint, key_name text) returns bigint: the public form of an ID. */
UIDGEN_FUNCTION(uid_mask)
{
	int64_t uid = PG_GETARG_INT64(0);

	return Int64GetDatum(mask_of(fcinfo).mask(uid));
}

/* uid_unmask(masked bigint, key_name text) returns bigint: the ID behind a public form. */
UIDGEN_FUNCTION(uid_unmask)
{
	int64_t masked = PG_GETARG_INT64(0);

	return Int64GetDatum(mask_of(fcinfo).unmask(masked));
}

/* uidgen.mask_key_random() returns bytea: a new key from the server's strong random source. */
UIDGEN_FUNCTION(uid_mask_key_random)
{
	bytea *key = static_cast<bytea *>(palloc(VARHDRSZ + IdMask::key_bytes));

	SET_VARSIZE(key, VARHDRSZ + IdMask::key_bytes);
	if (!pg_strong_random(VARDATA(key), IdMask::key_bytes))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not generate a random uid mask key")));
	PG_RETURN_BYTEA_P(key);
}
