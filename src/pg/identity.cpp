/*
 * identity.cpp
 *	  The host name and the database identity, and uidgen.database_identity().
 */
#include "pg/identity.hpp"

#include "pg/guard.hpp"

extern "C" {
#include "access/xlog.h"
#include "miscadmin.h"
#include "utils/builtins.h"
}

#include <unistd.h>

namespace uidgen::pg {

char *
database_identity()
{
	return psprintf(UINT64_FORMAT "/%u", GetSystemIdentifier(), MyDatabaseId);
}

char *
server_host_name()
{
	char host[256];

	if (gethostname(host, sizeof(host)) != 0)
		strlcpy(host, "localhost", sizeof(host));
	host[sizeof(host) - 1] = '\0';
	host[64] = '\0';		/* host_name is varchar(64), as in WORKER_NODE */
	return pstrdup(host);
}

} // namespace uidgen::pg

/* uidgen.database_identity() returns text: "system identifier/database OID". */
UIDGEN_FUNCTION(uid_database_identity)
{
	PG_RETURN_TEXT_P(cstring_to_text(uidgen::pg::database_identity()));
}
