/*
 * membership_funcs.cpp
 *	  uid_registry_leave(): a member database leaving its registry on
 *	  purpose (INV-19).
 *
 * A member whose uidgen.registry was unset issues nothing: a worker of its
 * own numbering may be one the registry leased to another member since
 * (refuse_membership_without_registry()).  Leaving is the owner's act,
 * which says that IDs issued from then on are outside the fleet's
 * guarantee; the membership row goes, so that setting the registry again
 * joins anew, with a floor above everything the database issued.
 */
#include "pg/guard.hpp"
#include "pg/settings.hpp"
#include "pg/spi.hpp"
#include "registry/lease_table.hpp"

extern "C" {
#include "access/xlog.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
}

#include <cstring>

using namespace uidgen;
using namespace uidgen::pg;

/*
 * uid_registry_leave() returns boolean: whether this database was a member
 * of a registry, which it no longer is.
 */
UIDGEN_FUNCTION(uid_registry_leave)
{
	if (registry_configured())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot leave the uidgen registry while uidgen.registry is set"),
				 errhint("Set uidgen.registry to an empty string and reload the configuration first.")));
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot leave the uidgen registry during recovery")));

	char *registry = with_spi(Rights::Owner, []() -> char * {
		if (spi_run("DELETE FROM uidgen.membership RETURNING registry", 0, nullptr, nullptr, Visibility::Latest,
					SPI_OK_DELETE_RETURNING) == 0)
			return nullptr;
		/* In the caller's memory: SPI's goes at SPI_finish. */
		char *text = spi_text(0, 0);
		char *copy = static_cast<char *>(SPI_palloc(strlen(text) + 1));

		strcpy(copy, text);
		return copy;
	});

	if (registry != nullptr)
		ereport(LOG,
				(errmsg("uidgen: database \"%s\" left the registry \"%s\"", get_database_name(MyDatabaseId), registry),
				 errdetail("IDs it issues from now on are outside the fleet's guarantee; a later join starts "
						   "above them.")));
	PG_RETURN_BOOL(registry != nullptr);
}
