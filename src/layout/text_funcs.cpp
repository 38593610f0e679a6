/*
 * text_funcs.cpp
 *	  uid_encode() and uid_decode(): UIDs as 13 digits of Crockford's base32
 *	  (src/core/text_form.hpp).  Both are layout-free, hence IMMUTABLE.
 */
#include "core/text_form.hpp"
#include "pg/compat.hpp"
#include "pg/guard.hpp"

extern "C" {
#include "utils/builtins.h"
}

#include <string_view>

using namespace uidgen;

/* uid_encode(uid bigint) returns text: 13 characters, ordered as the IDs are. */
UIDGEN_FUNCTION(uid_encode)
{
	UidText text = encode_uid_digits(PG_GETARG_INT64(0));

	PG_RETURN_TEXT_P(cstring_to_text_with_len(text.digits, uid_text_width));
}

/* uid_decode(text) returns bigint: either case, I and L read as 1, O as 0. */
UIDGEN_FUNCTION(uid_decode)
{
	text *input = PG_GETARG_TEXT_PP(0);

	PG_RETURN_INT64(decode_uid_text(std::string_view(VARDATA_ANY(input), VARSIZE_ANY_EXHDR(input))));
}
