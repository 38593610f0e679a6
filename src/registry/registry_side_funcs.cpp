/*
 * registry_side_funcs.cpp
 *	  SQL-callable functions that the registry's own functions use, on the
 *	  registry's server (the member's side is registry_funcs.cpp).
 */
#include "pg/guard.hpp"

extern "C" {
#include "access/xact.h"
#include "utils/builtins.h"
}

using namespace uidgen::pg;

/*
 * registry_refuse_transaction_block(call text) returns void: refuses a
 * member's registry call inside a transaction block.  Whatever rows the
 * call locked would stay locked for as long as the block stays open, and
 * other members' calls would wait for them; the agent sends every call as
 * a statement of its own.
 */
UIDGEN_FUNCTION(registry_refuse_transaction_block)
{
	if (IsTransactionBlock())
	{
		char *call = text_to_cstring(PG_GETARG_TEXT_PP(0));

		ereport(ERROR, (errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
						errmsg("uidgen.%s() cannot run inside a transaction block", call),
						errdetail("A registry call holds locks that other members wait for until its transaction "
								  "ends."),
						errhint("Call it as a statement of its own, as the registry agent does.")));
	}
	PG_RETURN_VOID();
}
