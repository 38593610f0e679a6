/*
 * uuid_codec.hpp
 *	  A UUID as text and as a Datum, through PostgreSQL's uuid_in() and
 *	  uuid_out(): the one codec for the registry's identities, server lives
 *	  and lease IDs.
 *
 * Reading takes only the canonical text that uuid_out() writes (of the shape
 * has_uuid_shape() checks, src/core/uuid_shape.hpp) and refuses anything
 * else with false, before uuid_in() sees it: uuid_in() raises an error for
 * bad input, and the registry agent, a background worker, records a reply
 * that is not a UUID as a protocol violation instead (08P01).  So none of
 * these functions raises an error but out of memory; each allocates in the
 * current memory context, so its caller holds no LWLock.
 */
#pragma once

#include "core/uuid_shape.hpp"

extern "C" {
#include "postgres.h"

#include "utils/uuid.h"
}

namespace uidgen::pg {

/* A UUID's canonical text and its NUL. */
constexpr int uuid_text_size = uuid_text_length + 1;
static_assert(uuid_text_size == UUID_LEN * 2 + 5);

/* id as uuid_out() writes it: lower case, hyphenated. */
void uuid_text(const pg_uuid_t &id, char out[uuid_text_size]);

/* The UUID of canonical text (either case); false for anything else. */
bool parse_uuid_text(const char *text, pg_uuid_t *id);

/* The 16 bytes of a UUID as a uuid Datum, palloc'd. */
Datum uuid_datum(const uint8 bytes[UUID_LEN]);

} // namespace uidgen::pg
